#!/usr/bin/env python3
"""Named neighbour loads that run beside an engine while it is measured (``--contention``).

A benchmark on a quiet machine says little about a busy one: pyvt once held a 1.1× lead over
llama.cpp when quiet and fell to 0.66× while builds and test suites ran beside it. A
contention mode starts its neighbours, lets them settle, runs the measurement, then stops
them — the same mode for every engine of a run, so each row's ratio compares like with like.

Modes (``MODES``):

* ``none``     nothing beside the engine;
* ``spin``     one process in a tight Python loop (takes one core's time slices);
* ``spin2``    two of those;
* ``stream``   one process streaming memory (numpy copies over 2 × 256 MiB: takes bandwidth);
* ``compile``  one process compiling a generated C file with ``cc -O2`` in a loop (mixed
               integer work, page faults, short-lived processes: what a build looks like);
* ``busy``     ``spin`` + ``stream`` + ``compile`` together: a machine running builds and test
               suites (load average ≈ 3 beside the engine on a 2-core machine).

Neighbours run at the same priority as the engine, each in its own process group, and are
killed (group-wide) when the measurement ends, also when it fails.

    python bench/contention.py busy 10      # run the `busy` neighbours for 10 s (try it with top)
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: mode -> the neighbour kinds it starts
MODES: dict[str, tuple[str, ...]] = {
    "none": (),
    "spin": ("spin",),
    "spin2": ("spin", "spin"),
    "stream": ("stream",),
    "compile": ("compile",),
    "busy": ("spin", "stream", "compile"),
}

_SPIN = "x = 0\nwhile True:\n    x = (x * 1103515245 + 12345) & 0xFFFFFFFF\n"

_STREAM = (
    "import numpy as np\n"
    "a = np.ones(32 << 20)\n"  # 256 MiB of float64
    "b = np.empty_like(a)\n"
    "while True:\n"
    "    np.copyto(b, a)\n"
    "    np.copyto(a, b)\n"
)

# A C file with enough code for cc -O2 to work ~0.5-2 s on it: many small functions with
# loops the optimizer unrolls and vectorizes.
_C_FUNCS = 400


def _c_source() -> str:
    parts = ["#include <stddef.h>\n"]
    for i in range(_C_FUNCS):
        parts.append(
            f"double f{i}(const double* a, const double* b, size_t n) {{\n"
            f"  double s = {i}.0;\n"
            f"  for (size_t k = 0; k < n; ++k) s += a[k] * b[(k * {i % 7 + 1}) % n] - (double)(k ^ {i});\n"
            f"  for (size_t k = 1; k < n; k += 2) s *= (a[k] > b[k - 1]) ? 1.0001 : 0.9999;\n"
            f"  return s;\n}}\n")
    return "".join(parts)


def _compile_loop_cmd(workdir: Path) -> list[str] | None:
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        return None
    src = workdir / "neighbour.c"
    src.write_text(_c_source())
    obj = workdir / "neighbour.o"
    return ["/bin/sh", "-c", f'while :; do "{cc}" -O2 -c "{src}" -o "{obj}" || exit 1; done']


class Neighbours:
    """Context manager: the neighbours of `mode` run inside the ``with`` block.

    ``settle_s``: seconds to wait after starting them before the block runs (they reach their
    steady state: numpy allocated, the first compile started).
    """

    def __init__(self, mode: str, settle_s: float = 1.0):
        if mode not in MODES:
            raise ValueError(f"unknown contention mode {mode!r}; known: {', '.join(MODES)}")
        self.mode = mode
        self.settle_s = settle_s
        self.procs: list[subprocess.Popen] = []
        self._tmp: tempfile.TemporaryDirectory | None = None

    def _start(self, kind: str) -> subprocess.Popen:
        if kind == "spin":
            cmd = [sys.executable, "-c", _SPIN]
        elif kind == "stream":
            cmd = [sys.executable, "-c", _STREAM]
        elif kind == "compile":
            if self._tmp is None:
                self._tmp = tempfile.TemporaryDirectory(prefix="pyvt-contention-")
            cmd = _compile_loop_cmd(Path(self._tmp.name))
            if cmd is None:
                raise RuntimeError("contention mode 'compile' needs a C compiler (cc, gcc or clang) on the PATH")
        else:  # pragma: no cover - MODES holds only the kinds above
            raise ValueError(kind)
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)

    def __enter__(self) -> "Neighbours":
        try:
            for kind in MODES[self.mode]:
                self.procs.append(self._start(kind))
            if self.procs:
                time.sleep(self.settle_s)
            dead = [p for p in self.procs if p.poll() is not None]
            if dead:
                raise RuntimeError(f"contention mode {self.mode!r}: a neighbour exited at once "
                                   f"(exit {dead[0].returncode}: {dead[0].args[:2]})")
        except BaseException:
            self.stop()
            raise
        return self

    def alive(self) -> int:
        return sum(p.poll() is None for p in self.procs)

    def stop(self) -> None:
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover
                pass
        self.procs = []
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __exit__(self, *exc) -> None:
        self.stop()


def parse_modes(spec: str) -> list[str]:
    """``"none,busy"`` -> ``["none", "busy"]``; ``"all"`` -> every mode. Unknown names raise
    ValueError naming them."""
    names = [x.strip() for x in spec.split(",") if x.strip()]
    if names == ["all"]:
        return list(MODES)
    bad = [x for x in names if x not in MODES]
    if bad or not names:
        raise ValueError(f"unknown contention mode(s) {bad or [spec]}; known: {', '.join(MODES)} (or all)")
    return list(dict.fromkeys(names))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] not in MODES:
        print(f"usage: contention.py MODE SECONDS   (MODE: {', '.join(MODES)})", file=sys.stderr)
        return 2
    with Neighbours(argv[0]) as n:
        print(f"{n.alive()} neighbour(s) of mode {argv[0]!r} running for {argv[1]} s", file=sys.stderr)
        time.sleep(float(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

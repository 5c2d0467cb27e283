"""Which GGUF reader should pyvt use: its own (``pyvt.gguf``) or ggml's ``gguf`` package?

Both readers get the same damaged files, each read in its own subprocess (memory capped at
2 GiB, 30 s): the project's fuzz corpus and crashers, every file truncated at 40 points, and
seeded mutations (1-8 random bytes, or a random 4- or 8-byte little-endian integer set to an
extreme value, inside its first 2 KiB: the header and the start of the data) of a small valid GGUF written by ``tests/gguf_writer.py``.
Reading means: open the file, list the tensors, read (and dequantize where the reader can)
every tensor. Then one case neither corpus can hold: the file truncated by another process
after it was opened and before its tensors are read.

Outcomes per reader: ``ok`` (read without error), ``error`` (``ValueError`` or ``OSError``
naming the problem: what pyvt promises), ``other exception`` (any other Python exception: a
reader bug the caller cannot tell from its own), ``crash`` (killed by a signal, e.g. SIGBUS
or SIGSEGV), ``hang`` (past 30 s), ``memory`` (MemoryError or past the 2 GiB cap).

    python fuzz/compare_readers.py [--mutations N] [--seed S] [--out FILE]

Results: bench/results/gguf_readers.txt (docs/guide.md, "GGUF files").
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import resource
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_S = 30
MEM_BYTES = 2 << 30

# Run in the child: read one file with one reader; print the outcome on the last line.
CHILD = r"""
import os, sys
reader, path, truncate = sys.argv[1], sys.argv[2], int(sys.argv[3])
def outcome(tag, detail=""):
    print("OUTCOME", tag, type(detail).__name__ if isinstance(detail, BaseException) else "", flush=True)
    sys.exit(0)
try:
    if reader == "pyvt":
        import importlib
        g = importlib.import_module("pyvt.gguf")
        with g.GGUFFile(path) as f:
            names = list(f.tensors)
            if truncate:
                os.truncate(path, os.path.getsize(path) // 2)
            for n in names:
                t = f.tensors[n]
                if t.n_elements <= (1 << 22):
                    f.dequantize(n)
    else:
        import numpy as np
        import gguf
        from gguf import quants
        r = gguf.GGUFReader(path)
        if truncate:
            os.truncate(path, os.path.getsize(path) // 2)
        for t in r.tensors:
            a = np.asarray(t.data)
            if int(t.n_elements) <= (1 << 22):
                quants.dequantize(a, t.tensor_type)
except (ValueError, OSError) as e:
    outcome("error", e)
except MemoryError as e:
    outcome("memory", e)
except Exception as e:
    outcome("other exception", e)
outcome("ok")
"""


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEM_BYTES, MEM_BYTES))


def run_one(reader: str, data: bytes, truncate_after_open: bool = False) -> tuple[str, str]:
    with tempfile.TemporaryDirectory(prefix="gguf_cmp_") as d:
        path = os.path.join(d, "in.gguf")
        with open(path, "wb") as f:
            f.write(data)
        try:
            p = subprocess.run([sys.executable, "-c", CHILD, reader, path, str(int(truncate_after_open))],
                               capture_output=True, text=True, timeout=TIMEOUT_S, preexec_fn=_limit,
                               cwd=d)
        except subprocess.TimeoutExpired:
            return "hang", ""
    if p.returncode < 0:
        return "crash", f"signal {-p.returncode}"
    last = [ln for ln in p.stdout.splitlines() if ln.startswith("OUTCOME")]
    if not last:
        if "MemoryError" in p.stderr or "Cannot allocate" in p.stderr:
            return "memory", ""
        return "crash", f"exit {p.returncode}: {p.stderr.strip().splitlines()[-1:]}"
    parts = last[-1].split(" ", 1)[1].rsplit(" ", 1)
    return parts[0], parts[1] if len(parts) > 1 else ""


def valid_file() -> bytes:
    """A small valid llama GGUF (F32, F16, Q8_0, Q4_0 and Q4_1 tensors) from tests/gguf_writer.py."""
    sys.path.insert(0, str(ROOT / "tests"))
    import numpy as np

    import gguf_writer as gw

    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "v.gguf")
        tensors = []
        for name, t in (("a", gw.F32), ("b", gw.F16), ("c", gw.Q8_0), ("d", gw.Q4_0), ("e", gw.Q4_1)):
            x = rng.standard_normal((8, 64)).astype(np.float32)
            tensors.append((f"{name}.weight", t, x.shape, gw.QUANTIZERS[t](x)))
        gw.write_gguf(path, {"general.architecture": "llama", "llama.block_count": 1}, tensors)
        return Path(path).read_bytes()


def header_end(data: bytes) -> int:
    """Where tensor data starts (good enough for the valid file: its last 64-aligned header byte)."""
    return min(len(data), 2048)


def mutations(base: bytes, n: int, seed: int):
    rng = random.Random(seed)
    hdr = header_end(base)
    for i in range(n):
        b = bytearray(base)
        if i % 2 == 0:
            for _ in range(rng.randint(1, 8)):
                b[rng.randrange(hdr)] = rng.randrange(256)
        else:
            size = rng.choice((4, 8))
            pos = rng.randrange(max(1, hdr - size))
            val = rng.choice((0, 1, 2**31 - 1, 2**31, 2**32 - 1, 2**62, 2**64 - 1))
            b[pos:pos + size] = (val % (1 << (8 * size))).to_bytes(size, "little")
        yield f"mutation {i}", bytes(b)


def cases(n_mut: int, seed: int):
    for d in ("corpus/gguf", "crashers/gguf"):
        for p in sorted((ROOT / "fuzz" / d).glob("*")):
            if p.is_file():
                yield f"{d}/{p.name}", p.read_bytes()
    base = valid_file()
    yield "valid", base
    for k in range(1, 41):
        cut = len(base) * k // 41
        yield f"truncated at {cut} of {len(base)}", base[:cut]
    yield from mutations(base, n_mut, seed)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mutations", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "gguf_readers.txt"))
    a = ap.parse_args(argv)
    import gguf  # noqa: F401  (fail early: the comparison needs the package)
    from importlib.metadata import version

    counts = {r: collections.Counter() for r in ("pyvt", "gguf")}
    details = {r: collections.Counter() for r in ("pyvt", "gguf")}
    t0 = time.time()
    n = 0
    for name, data in cases(a.mutations, a.seed):
        n += 1
        for r in counts:
            tag, det = run_one(r, data)
            counts[r][tag] += 1
            if tag not in ("ok", "error"):
                details[r][f"{tag}: {det}"] += 1
    base = valid_file()
    live = {r: run_one(r, base, truncate_after_open=True) for r in counts}
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    lines = [f"GGUF readers on {n} damaged or valid files (fuzz/compare_readers.py, seed {a.seed}, "
             f"{a.mutations} mutations), {time.strftime('%Y-%m-%d')}, commit {commit}, "
             f"gguf package {version('gguf')}, Python {sys.version.split()[0]}, {time.time() - t0:.0f} s",
             "", "| reader | " + " | ".join(("ok", "error", "other exception", "crash", "hang", "memory")) + " |",
             "|---|" + "---|" * 6]
    for r, c in counts.items():
        lines.append(f"| {r} | " + " | ".join(str(c[k]) for k in ("ok", "error", "other exception", "crash",
                                                                     "hang", "memory")) + " |")
    lines.append("")
    for r, c in details.items():
        for k, v in sorted(c.items()):
            lines.append(f"{r}: {v} x {k}")
    lines.append("")
    for r, (tag, det) in live.items():
        lines.append(f"{r}: file truncated to half after opening, before reading tensors: {tag} {det}")
    text = "\n".join(lines) + "\n"
    print(text)
    Path(a.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

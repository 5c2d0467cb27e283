"""Build, run and check the native self-test programs of tests/ops/ that pytest compiles from
source (with one or two libvt sources each; tests/ops/selftest.h is their tally): the program
passes when it exits 0, prints "N passed, 0 failed", and has an "ok" line for every check the
caller names — so a check that silently stopped running fails the test too."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Iterable

ROOT = Path(__file__).resolve().parent.parent
CXX = shutil.which(os.environ.get("CXX", "c++")) or shutil.which("g++")


def build(tmp: Path, name: str, sources: Iterable[Path], flags: list[str]) -> subprocess.CompletedProcess:
    cmd = [CXX, "-std=c++17", "-Wall", "-Wextra", "-Werror", *flags, f"-I{ROOT / 'libvt' / 'src'}",
           "-o", str(tmp / name), *map(str, sources), "-pthread"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)


def run(exe: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "VT_NUM_THREADS"}
    return subprocess.run([str(exe)], capture_output=True, text=True, timeout=300, check=False, env=env)


def check(result: subprocess.CompletedProcess, label: str, checks: Iterable[str]) -> None:
    assert result.returncode == 0, (f"{label}: exit {result.returncode}\n{result.stdout[-4000:]}\n"
                                    f"{result.stderr[-6000:]}")
    assert " passed, 0 failed" in result.stdout
    lines = result.stdout.splitlines()
    for what in checks:
        assert any(line.startswith("ok   " + what) for line in lines), f"{label}: no passing check {what!r}"


def build_run_check(tmp: Path, name: str, sources: Iterable[Path], checks: Iterable[str]) -> None:
    """The program built with -O2, run, and checked."""
    b = build(tmp, name, sources, ["-O2"])
    assert b.returncode == 0, b.stderr
    check(run(tmp / name), name, checks)


def build_run_check_sanitized(tmp: Path, name: str, sources: Iterable[Path], checks: Iterable[str],
                              sanitizer: str) -> None:
    """The same under -fsanitize=SANITIZER ("thread", "address,undefined"): skipped where the
    compiler lacks it or it cannot run here, failed on any report it prints."""
    import pytest

    b = build(tmp, name, sources, ["-O1", "-g", f"-fsanitize={sanitizer}"])
    if b.returncode != 0:
        pytest.skip(f"no -fsanitize={sanitizer}: {b.stderr.strip().splitlines()[-1:]}")
    r = run(tmp / name)
    # e.g. an address-space layout the sanitizer cannot map
    if "FATAL: ThreadSanitizer" in r.stderr or "Shadow memory range" in r.stderr:
        pytest.skip(f"-fsanitize={sanitizer} cannot run here: {r.stderr.strip().splitlines()[:1]}")
    assert "WARNING: ThreadSanitizer" not in r.stderr, r.stderr[-6000:]
    assert "ERROR: AddressSanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr[-6000:]
    check(r, f"{name} under -fsanitize={sanitizer}", checks)

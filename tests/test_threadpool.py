"""libvt's thread pool (libvt/src/threadpool.cpp): tests/ops/test_threadpool.cpp, compiled here with
the pool's one source file and run, then again under ThreadSanitizer where the compiler has it
(the work-stealing claims of parallel_for_balanced are lock-free). meson builds the same program
as vt_test_threadpool (`meson test threadpool`)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CXX = shutil.which(os.environ.get("CXX", "c++")) or shutil.which("g++")
SOURCES = [ROOT / "tests" / "ops" / "test_threadpool.cpp", ROOT / "libvt" / "src" / "threadpool.cpp"]


def _build(tmp: Path, name: str, flags: list[str]) -> subprocess.CompletedProcess:
    cmd = [CXX, "-std=c++17", "-Wall", "-Wextra", "-Werror", *flags, f"-I{ROOT / 'libvt' / 'src'}",
           "-o", str(tmp / name), *map(str, SOURCES), "-pthread"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)


def _run(exe: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "VT_NUM_THREADS"}
    return subprocess.run([str(exe)], capture_output=True, text=True, timeout=300, check=False, env=env)


def _check(run: subprocess.CompletedProcess, label: str) -> None:
    assert run.returncode == 0, f"{label}: exit {run.returncode}\n{run.stdout[-4000:]}\n{run.stderr[-6000:]}"
    assert " passed, 0 failed" in run.stdout
    lines = run.stdout.splitlines()
    for what in ("balanced threads=8 n=4099 grain=16: every item exactly once",
                 "parallel_for threads=3 n=7 grain=3: every item exactly once",
                 "balanced: another thread ran items of a share whose owner was held up",
                 "balanced: an exception in a range reaches the caller",
                 "nested balanced regions run every item",
                 "regions from 3 threads while the thread count changes"):
        assert any(line.startswith("ok   " + what) for line in lines), f"{label}: no passing check {what!r}"


@pytest.mark.skipif(CXX is None, reason="no C++ compiler")
def test_threadpool(tmp_path):
    build = _build(tmp_path, "test_threadpool", ["-O2"])
    assert build.returncode == 0, build.stderr
    _check(_run(tmp_path / "test_threadpool"), "test_threadpool")


@pytest.mark.skipif(CXX is None, reason="no C++ compiler")
def test_threadpool_under_thread_sanitizer(tmp_path):
    build = _build(tmp_path, "test_threadpool_tsan", ["-O1", "-g", "-fsanitize=thread"])
    if build.returncode != 0:
        pytest.skip(f"no -fsanitize=thread: {build.stderr.strip().splitlines()[-1:]}")
    run = _run(tmp_path / "test_threadpool_tsan")
    if "FATAL: ThreadSanitizer" in run.stderr:  # e.g. an address-space layout TSan cannot map
        pytest.skip(f"ThreadSanitizer cannot run here: {run.stderr.strip().splitlines()[:1]}")
    assert "WARNING: ThreadSanitizer" not in run.stderr, run.stderr[-6000:]
    _check(run, "test_threadpool under ThreadSanitizer")

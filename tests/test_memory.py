"""libvt's weight memory (libvt/src/memory.cpp: the huge-page arena of packed weights):
tests/ops/test_memory.cpp, compiled here with that one source file and run, then again under
AddressSanitizer and ThreadSanitizer where the compiler has them (the arena is shared by every
model, and packing threads allocate from it at once). meson builds the same program as
vt_test_memory (`meson test memory`)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CXX = shutil.which(os.environ.get("CXX", "c++")) or shutil.which("g++")
SOURCES = [ROOT / "tests" / "ops" / "test_memory.cpp", ROOT / "libvt" / "src" / "memory.cpp"]
CHECKS = ("the arena starts empty",
          "every buffer is 64-byte aligned",
          "the arena handed out exactly their 64-byte rounded sizes",
          "each small buffer follows the one before it",
          "no two buffers overlap",
          "freeing buffers leaves the others intact",
          "every chunk is given back once its last buffer is freed",
          "4 threads allocating and freeing at once: no buffer overlaps another",
          "after the threads, every chunk is given back",
          "alloc_huge_pages is 2 MB aligned",
          "alloc_weights that cannot be met throws std::bad_alloc")


def _build(tmp: Path, name: str, flags: list[str]) -> subprocess.CompletedProcess:
    cmd = [CXX, "-std=c++17", "-Wall", "-Wextra", "-Werror", *flags, f"-I{ROOT / 'libvt' / 'src'}",
           "-o", str(tmp / name), *map(str, SOURCES), "-pthread"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)


def _run(exe: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(exe)], capture_output=True, text=True, timeout=300, check=False)


def _check(run: subprocess.CompletedProcess, label: str) -> None:
    assert run.returncode == 0, f"{label}: exit {run.returncode}\n{run.stdout[-4000:]}\n{run.stderr[-6000:]}"
    assert " passed, 0 failed" in run.stdout
    lines = run.stdout.splitlines()
    for what in CHECKS:
        assert any(line.startswith("ok   " + what) for line in lines), f"{label}: no passing check {what!r}"


@pytest.mark.skipif(CXX is None, reason="no C++ compiler")
def test_memory(tmp_path):
    build = _build(tmp_path, "test_memory", ["-O2"])
    assert build.returncode == 0, build.stderr
    _check(_run(tmp_path / "test_memory"), "test_memory")


@pytest.mark.skipif(CXX is None, reason="no C++ compiler")
@pytest.mark.parametrize("sanitizer", ["address,undefined", "thread"])
def test_memory_under_sanitizer(tmp_path, sanitizer):
    name = "test_memory_" + sanitizer.split(",")[0]
    build = _build(tmp_path, name, ["-O1", "-g", f"-fsanitize={sanitizer}"])
    if build.returncode != 0:
        pytest.skip(f"no -fsanitize={sanitizer}: {build.stderr.strip().splitlines()[-1:]}")
    run = _run(tmp_path / name)
    if "FATAL: ThreadSanitizer" in run.stderr or "Shadow memory range" in run.stderr:
        pytest.skip(f"the sanitizer cannot run here: {run.stderr.strip().splitlines()[:1]}")
    assert "WARNING: ThreadSanitizer" not in run.stderr, run.stderr[-6000:]
    assert "ERROR: AddressSanitizer" not in run.stderr and "runtime error" not in run.stderr, run.stderr[-6000:]
    _check(run, f"test_memory under -fsanitize={sanitizer}")

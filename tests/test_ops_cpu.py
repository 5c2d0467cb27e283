"""The CPU ops of libvt/src/ops/ (RMSNorm, RoPE, attention, SwiGLU) against float64 math:
tests/ops/test_ops.cpp, compiled here with the ops' own sources (they need nothing else of
libvt) and run. meson builds the same program as vt_test_ops (`meson test cpu_ops`)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CXX = shutil.which(os.environ.get("CXX", "c++")) or shutil.which("g++")


@pytest.mark.skipif(CXX is None, reason="no C++ compiler")
def test_cpu_ops_against_float64(tmp_path):
    exe = tmp_path / "test_ops"
    sources = [ROOT / "tests" / "ops" / "test_ops.cpp", *sorted((ROOT / "libvt" / "src" / "ops").glob("*.cpp"))]
    assert len(sources) == 5, sources  # the program and the four ops
    cmd = [CXX, "-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", f"-I{ROOT / 'libvt' / 'src'}",
           f"-I{ROOT / 'libvt' / 'include'}", "-o", str(exe), *map(str, sources), "-lm"]
    build = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    assert build.returncode == 0, f"compile failed: {' '.join(cmd)}\n{build.stderr}"
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, f"op tests failed:\n{run.stdout}\n{run.stderr}"
    assert " passed, 0 failed" in run.stdout
    for op in ("rmsnorm", "rope inv_freq llama3", "rope hd=128", "attention", "attend partial", "swiglu"):
        assert any(line.startswith("ok   " + op) for line in run.stdout.splitlines()), f"no {op} check ran"

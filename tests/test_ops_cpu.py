"""The CPU ops of libvt/src/ops/ (RMSNorm, RoPE, attention, SwiGLU) against float64 math:
tests/ops/test_ops.cpp, compiled here with the ops' own sources (they need nothing else of
libvt) and run. meson builds the same program as vt_test_ops (`meson test cpu_ops`)."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CXX = shutil.which(os.environ.get("CXX", "c++")) or shutil.which("g++")


@pytest.mark.skipif(CXX is None, reason="no C++ compiler")
def test_cpu_ops_against_float64(tmp_path):
    exe = tmp_path / "test_ops"
    sources = [ROOT / "tests" / "ops" / "test_ops.cpp", *sorted((ROOT / "libvt" / "src" / "ops").glob("*.cpp")),
               ROOT / "libvt" / "src" / "cpu_features.cpp"]  # attention picks its body by cpu_level()
    assert len(sources) == 6, sources  # the program, the four ops and cpu_features
    x86 = platform.machine().lower() in ("x86_64", "amd64")
    cmd = [CXX, "-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", f"-I{ROOT / 'libvt' / 'src'}",
           f"-I{ROOT / 'libvt' / 'include'}", *(["-DVT_HAVE_X86_KERNELS=1"] if x86 else []),
           "-o", str(exe), *map(str, sources), "-lm"]
    build = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    assert build.returncode == 0, f"compile failed: {' '.join(cmd)}\n{build.stderr}"
    # Each instruction-set level the CPU has (VT_ISA only lowers it): attention's wide
    # (AVX-512) and narrow (AVX2, generic) bodies are all checked where they can run.
    for isa in ("generic", "avx2", "avx512") if x86 else ("generic",):
        run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300, check=False,
                             env={**os.environ, "VT_ISA": isa})
        assert run.returncode == 0, f"op tests failed (VT_ISA={isa}):\n{run.stdout}\n{run.stderr}"
        assert " passed, 0 failed" in run.stdout
        for op in ("rmsnorm", "rope inv_freq llama3", "rope hd=128", "attention", "attend partial", "store_f16",
                   "store_i8", "swiglu", "geglu_tanh", "softcap"):
            assert any(line.startswith("ok   " + op) for line in run.stdout.splitlines()), f"no {op} check ran"
        for cache in ("f32 cache", "f16 cache", "int8 cache"):  # attention over each cache type
            assert any(line.startswith("ok   att") and cache in line for line in run.stdout.splitlines()), cache

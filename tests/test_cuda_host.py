"""What of the CUDA backend can be checked without a GPU (runs everywhere, in CI too).

* The bit-level work of the kernels, in libvt/src/cuda/host_check.cpp, compiled here against
  the installed libvt: the kernels' decoding of INT8 / E4M3 / BF16 codes and f16 scales, the
  device weight layout (bit-identical to vt_packed_unpack for every dense format and block
  size), the QKV / gate-up row orders, an emulation of the GEMV's arithmetic, the argmax keys.
* How the backend reports itself: a "cuda:" line in pyvt.backends() with a reason when it
  cannot be used, and the ops.cuda_available() flag agreeing with it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

import pyvt

ROOT = Path(__file__).resolve().parent.parent
CXX = shutil.which(os.environ.get("CXX", "c++")) or shutil.which("g++") or shutil.which("clang++")


def _cuda_line() -> str:
    lines = [ln for ln in pyvt.backends().splitlines() if ln.startswith("cuda:")]
    assert len(lines) == 1, pyvt.backends()
    return lines[0]


@pytest.mark.skipif(CXX is None, reason="no C++ compiler")
def test_host_checks_of_the_cuda_kernels(tmp_path):
    src = ROOT / "libvt" / "src"
    exe = tmp_path / "host_check"
    lib = pyvt.get_library_dir()
    cmd = [CXX, "-std=c++17", "-O2", "-Wall", "-Wextra", f"-I{ROOT / 'libvt' / 'include'}", f"-I{src}",
           "-o", str(exe), str(src / "cuda" / "host_check.cpp"), str(src / "cuda" / "layout.cpp"),
           f"-L{lib}", f"-Wl,-rpath,{lib}", "-lvt"]
    build = subprocess.run(cmd, capture_output=True, text=True)
    assert build.returncode == 0, f"compile failed: {' '.join(cmd)}\n{build.stderr}"
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"host checks failed:\n{run.stdout}\n{run.stderr}"
    assert " passed, 0 failed" in run.stdout


def _cutlass_include() -> Path | None:
    """CUTLASS headers for the host checks: $VT_CUTLASS_INCLUDE, the nvidia-cutlass package of
    this Python, or a wheel under .cache/wheels (what bench/gpu_check.sh uses too)."""
    env = os.environ.get("VT_CUTLASS_INCLUDE")
    if env:
        return Path(env)
    import importlib.util

    spec = importlib.util.find_spec("cutlass_library")
    if spec and spec.submodule_search_locations:
        inc = Path(list(spec.submodule_search_locations)[0]) / "source" / "include"
        if inc.is_dir():
            return inc
    return None


NVCC = shutil.which("nvcc")


@pytest.mark.skipif(CXX is None or NVCC is None, reason="needs nvcc (CUTLASS's headers only compile with it)")
def test_sparse_metadata_order_matches_cutlass_reorder_meta(tmp_path):
    """layout.cpp's sparse_meta_index is compared with cutlass::reorder_meta itself (the order
    SparseGemm reads its metadata in): host code, compiled by nvcc because CUTLASS's headers
    need it. Skips when the headers are not at hand (CI builds them in pip's isolated build
    environment, which is gone by test time)."""
    inc = _cutlass_include()
    if inc is None or not (inc / "cutlass" / "cutlass.h").is_file():
        pytest.skip("CUTLASS headers not found (set VT_CUTLASS_INCLUDE or pip install nvidia-cutlass)")
    util = inc.parent / "tools" / "util" / "include"
    if not (util / "cutlass" / "util" / "host_reorder.h").is_file():
        pytest.skip(f"no cutlass/util/host_reorder.h under {util}")
    src = ROOT / "libvt" / "src"
    lib = pyvt.get_library_dir()
    layout_o, check_o, exe = tmp_path / "layout.o", tmp_path / "host_check.o", tmp_path / "host_check_cutlass"
    steps = [
        [CXX, "-std=c++17", "-O2", f"-I{ROOT / 'libvt' / 'include'}", f"-I{src}", "-c",
         str(src / "cuda" / "layout.cpp"), "-o", str(layout_o)],
        [NVCC, "-std=c++17", "-O2", "-DVT_CHECK_CUTLASS_REORDER", "-isystem", str(inc), "-isystem", str(util),
         f"-I{ROOT / 'libvt' / 'include'}", f"-I{src}", "-c", "-x", "cu", str(src / "cuda" / "host_check.cpp"),
         "-o", str(check_o)],
        [NVCC, "-o", str(exe), str(check_o), str(layout_o), f"-L{lib}", f"-Xlinker=-rpath,{lib}", "-lvt"],
    ]
    for cmd in steps:
        build = subprocess.run(cmd, capture_output=True, text=True)
        assert build.returncode == 0, f"compile failed: {' '.join(cmd)}\n{build.stderr}"
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"host checks failed:\n{run.stdout}\n{run.stderr}"
    assert "CUTLASS headers not given" not in run.stdout
    assert " passed, 0 failed" in run.stdout


def _run_sm90_check(tmp_path, name: str) -> str:
    """Builds tests/cuda/NAME.cu (a host-only check that includes one of the sm_90a CUTLASS
    launchers) with nvcc and CUTLASS's headers, runs it, and returns its output; skips where
    the headers are not at hand (CI: they live in pip's isolated build environment)."""
    inc = _cutlass_include()
    if inc is None or not (inc / "cutlass" / "cutlass.h").is_file():
        pytest.skip("CUTLASS headers not found (set VT_CUTLASS_INCLUDE or pip install nvidia-cutlass)")
    src = ROOT / "libvt" / "src"
    exe = tmp_path / name
    cmd = [NVCC, "-std=c++17", "-O1", "-gencode=arch=compute_90a,code=sm_90a", "--expt-relaxed-constexpr",
           "-DCUTLASS_ENABLE_TENSOR_CORE_MMA=1", "-DNDEBUG", "-isystem", str(inc), f"-I{ROOT / 'libvt' / 'include'}",
           f"-I{src}", "-o", str(exe), str(ROOT / "tests" / "cuda" / f"{name}.cu")]
    build = subprocess.run(cmd, capture_output=True, text=True)
    assert build.returncode == 0, f"compile failed: {' '.join(cmd)}\n{build.stderr[-4000:]}"
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, f"checks failed:\n{run.stdout}\n{run.stderr}"
    return run.stdout


@pytest.mark.slow
@pytest.mark.skipif(NVCC is None, reason="needs nvcc (CUTLASS 3.x's headers only compile with it)")
def test_fp8_sm90_problems_are_implementable(tmp_path):
    """The sm_90a FP8 GEMM (cutlass_fp8_sm90.cu) on the problems fp8_linear plans: CUTLASS's
    own can_implement accepts each and asks for no workspace, checked on the host (nvcc builds
    the kernel for sm_90a; nothing runs on a GPU). About a minute of nvcc."""
    out = _run_sm90_check(tmp_path, "fp8_sm90_check")
    assert " passed, 0 failed" in out and "8 passed" in out, out


@pytest.mark.slow
@pytest.mark.skipif(NVCC is None, reason="needs nvcc (CUTLASS 3.x's headers only compile with it)")
def test_w8a16_sm90_problems_are_ones_cutlass_takes(tmp_path):
    """The sm_90a mixed-input prefill GEMM (VT_CUDA_PREFILL_GEMM=wgmma): every pass of the
    prefill's problems (INT8, FP8, 4-bit) passes w8a16_plan.h's check and CUTLASS's
    can_implement with no workspace; broken ones are refused by the plan naming the fault.
    Host-only (no GPU); a few minutes of nvcc."""
    out = _run_sm90_check(tmp_path, "w8a16_sm90_check")
    assert "27 passed, 0 failed" in out, out


def test_backend_line_names_cuda_and_a_reason():
    line = _cuda_line()
    assert line.startswith("cuda: available (") or line.startswith("cuda: unavailable ("), line
    assert line.endswith(")"), line
    assert bool(pyvt.ops.cuda_available()) == line.startswith("cuda: available"), line
    # A CUDA build adds a "cutlass:" line: the CUTLASS GEMMs it has, or why it has none.
    cl = [ln for ln in pyvt.backends().splitlines() if ln.startswith("cutlass:")]
    assert len(cl) <= 1, pyvt.backends()
    if "built without CUDA" in line:
        assert not cl, pyvt.backends()
    for ln in cl:
        assert ln.startswith(("cutlass: built (", "cutlass: unavailable (")) and ln.endswith(")"), ln


def test_auto_device_falls_back_to_cpu_without_cuda(tmp_path):
    if pyvt.ops.cuda_available():
        pytest.skip("a CUDA device is present: auto picks it (tests/test_cuda.py)")
    import llama_ref as R
    from pyvt import _model

    R.write_checkpoint(tmp_path, R.TinyConfig(), seed=3)
    with _model.Model(str(tmp_path), device="auto") as m:
        assert m.info["device"] == "cpu"
        assert m.logits([1, 2, 3]).shape == (3, 96)
    with pytest.raises(RuntimeError, match="(?i)cuda"):
        _model.Model(str(tmp_path), device="cuda")

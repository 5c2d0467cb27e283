#!/usr/bin/env bash
# On a bare GPU machine: build libvt + pyvt with CUDA, run the CUDA tests (op level and through
# the Python API), the CPU suite and the GPU decode benchmark, in one go. Logs and results go to
# OUTDIR (at most 11 files, flat, so the device tool brings all of them back).
#
#   bench/gpu_check.sh OUTDIR
#
# The GPU machine has Python, nvcc, meson, ninja, Cython, numpy, pytest and torch, but no
# meson-python and no network, so this builds with plain meson into $VT_GPU_BUILD, stages
# `meson install --destdir $VT_GPU_STAGE` and puts the staged site-packages on PYTHONPATH.
#
# Environment (all optional):
#   VT_GPU_PHASES      phases to run, in order (default "build test bench gemm"); a later call on
#                      the same (warm) machine can skip the build: VT_GPU_PHASES="test", "gemm"
#   VT_GPU_ARCHS       meson -Dgpu_archs, e.g. "90" to compile for the machine's GPU only (faster)
#   VT_GPU_JOBS        ninja -j (default: ninja's own, all cores)
#   VT_GPU_BUILD       build folder (default /tmp/vt-gpu-build), VT_GPU_STAGE (/tmp/vt-gpu-stage)
#   VT_GPU_BENCH_ARGS  arguments of bench/decode.py (default below)
#   VT_GEMM_BENCH_ARGS arguments of bench/gemm.py (default: all shapes and formats)
#   VT_CUTLASS_INCLUDE CUTLASS include directory (holding cutlass/cutlass.h). Without it, the
#                      first .cache/wheels/nvidia_cutlass-*.whl of the repository (git-ignored;
#                      carry it with the device tool) is unpacked and used. Neither: the CUDA
#                      build has no CUTLASS GEMMs (the machine has no network), summary.txt says so
#                      and the 2:4 sparse / W8A8 FP8 CUDA tests check the refusal instead.
#   PYVT_CACHE / PYVT_PULL_SOURCE   where the default model (SmolLM2) is, for the tests that use
#                      it (the machine cannot download it; see docs/cuda.md)
#
# Files in OUTDIR: summary.txt (verdicts, environment), build.log, cuda_ops.log (vt_cuda_test,
# with and without programmatic dependent launch), pytest_cuda.log, pytest_cpu.log, bench.log,
# and the benchmarks' decode-*.json / decode-*.md, gemm-*.json / gemm-*.md (bench_gemm.log).
set -uo pipefail

OUT=${1:?usage: bench/gpu_check.sh OUTDIR}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${VT_GPU_BUILD:-/tmp/vt-gpu-build}
STAGE=${VT_GPU_STAGE:-/tmp/vt-gpu-stage}
MODELS=${VT_GPU_MODELS:-/tmp/vt-gpu-models}
PHASES=${VT_GPU_PHASES:-build test bench gemm}
BENCH_ARGS=${VT_GPU_BENCH_ARGS:---device cuda --models tinyllama-1.1b,llama-3.2-1b,llama-2-7b --formats int8,fp8,bf16 --no-llamacpp --prompt random --prompt-len 128 --gen-len 128 --repeat 3}
SUMMARY="$OUT/summary.txt"

PY=$(command -v python3)
PYBIN=$(dirname "$("$PY" -c 'import sys; print(sys.executable)')")
export PATH="$PYBIN:$PATH"  # meson, ninja, cython, pytest of that Python
export PYTHONUNBUFFERED=1
MESON="meson"
command -v meson >/dev/null || MESON="$PY -m mesonbuild.mesonmain"

note() { echo "$*" | tee -a "$SUMMARY"; }
verdict() {  # name status
    if [ "$2" -eq 0 ]; then note "PASS  $1"; elif [ "$2" -eq 77 ]; then note "SKIP  $1"; else note "FAIL  $1 (exit $2)"; fi
}

: > "$SUMMARY"
note "gpu_check $(date -u +%Y-%m-%dT%H:%M:%SZ)  commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet 2>/dev/null || echo '+dirty')"
{
    (nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1 || echo "no nvidia-smi") | sed 's/^/gpu: /'
    nvcc --version 2>&1 | tail -1 | sed 's/^/nvcc: /'
    echo "python: $("$PY" --version 2>&1), meson $($MESON --version 2>&1), ninja $(ninja --version 2>&1)"
    "$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -1
    echo "cpus: $(nproc)"
} | tee -a "$SUMMARY"

pytest_line() { grep -E '[0-9]+ (passed|failed|skipped|deselected|errors?)' "$1" | tail -1; }
site_dir() { dirname "$(find "$STAGE" -path '*/pyvt/__init__.py' 2>/dev/null | head -1)" 2>/dev/null; }

# ---- CUTLASS headers ------------------------------------------------------------------------------
CUTLASS_INC=${VT_CUTLASS_INCLUDE:-}
if [ -z "$CUTLASS_INC" ]; then
    whl=$(ls "$ROOT"/.cache/wheels/nvidia_cutlass-*.whl 2>/dev/null | head -1)
    if [ -n "$whl" ]; then
        dest=/tmp/vt-gpu-cutlass
        if [ ! -f "$dest/cutlass_library/source/include/cutlass/cutlass.h" ]; then
            rm -rf "$dest" && mkdir -p "$dest" && "$PY" -m zipfile -e "$whl" "$dest" >/dev/null 2>&1
        fi
        CUTLASS_INC="$dest/cutlass_library/source/include"
    fi
fi
if [ -n "$CUTLASS_INC" ] && [ -f "$CUTLASS_INC/cutlass/cutlass.h" ]; then
    export VT_CUTLASS_INCLUDE="$CUTLASS_INC"  # also for tests/test_cuda_host.py's reorder check
    note "CUTLASS: $CUTLASS_INC"
else
    CUTLASS_INC=""
    note "CUTLASS: none (no VT_CUTLASS_INCLUDE, no .cache/wheels/nvidia_cutlass-*.whl): built without the CUTLASS GEMMs"
fi

# ---- build ----------------------------------------------------------------------------------------
if [[ " $PHASES " == *" build "* ]]; then
    t0=$(date +%s)
    {
        setup_args=(-Dcuda=enabled --buildtype=release)
        [ -n "${VT_GPU_ARCHS:-}" ] && setup_args+=("-Dgpu_archs=$VT_GPU_ARCHS")
        if [ -n "$CUTLASS_INC" ]; then
            setup_args+=(-Dcutlass=enabled "-Dcutlass_include=$CUTLASS_INC")
        else
            setup_args+=(-Dcutlass=disabled)
        fi
        if [ -f "$BUILD/build.ninja" ]; then
            $MESON configure "$BUILD" "${setup_args[@]}"
        else
            $MESON setup "$BUILD" "$ROOT" "${setup_args[@]}"
        fi && ninja -C "$BUILD" ${VT_GPU_JOBS:+-j "$VT_GPU_JOBS"} && rm -rf "$STAGE" && $MESON install -C "$BUILD" --destdir "$STAGE" --quiet
    } > "$OUT/build.log" 2>&1
    st=$?
    verdict "build with CUDA ($(( $(date +%s) - t0 )) s; log build.log)" $st
    [ $st -ne 0 ] && { tail -30 "$OUT/build.log"; exit 1; }
fi

SITE=$(site_dir)
if [ -z "$SITE" ]; then note "FAIL  no staged pyvt under $STAGE (run the build phase)"; exit 1; fi
SITE=$(dirname "$SITE")
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
# The staged layout imports pyvt (from the stage, not the source tree) and sees the GPU.
(cd /tmp && "$PY" -c 'import pyvt; print("pyvt from", pyvt.__file__); print(pyvt.backends())') 2>&1 | tee -a "$SUMMARY"

# ---- tests ----------------------------------------------------------------------------------------
if [[ " $PHASES " == *" test "* ]]; then
    # Tiny random checkpoints for the model-level op tests (head_dim 64 GQA with a 4096
    # context, head_dim 128), and the default model when it can be had offline.
    (cd "$ROOT" && "$PY" - "$MODELS") <<'EOF' > "$OUT/cuda_ops.log" 2>&1
import sys
from pathlib import Path
sys.path.insert(0, "tests")
import llama_ref as R
out = Path(sys.argv[1])
for name, cfg in {
    "gqa-hd64": R.TinyConfig(hidden=256, intermediate=320, heads=4, kv_heads=2, vocab=300, max_pos=4096),
    "gqa-hd128": R.TinyConfig(hidden=256, intermediate=256, heads=8, kv_heads=1, head_dim=128, vocab=260),
}.items():
    if not (out / name / "model.safetensors").exists():
        R.write_checkpoint(out / name, cfg, seed=5)
    print("model", out / name)
EOF
    model_dirs=("$MODELS/gqa-hd64" "$MODELS/gqa-hd128")
    smol=$(cd /tmp && timeout 300 "$PY" -c 'from pyvt import hub; print(hub.pull(quiet=True))' 2>/dev/null | tail -1)
    if [ -n "$smol" ] && [ -d "$smol" ]; then model_dirs+=("$smol"); note "default model: $smol"; else note "default model: unavailable offline (SmolLM2 tests skip)"; fi

    (cd "$ROOT" && timeout 600 "$BUILD/libvt/vt_cuda_test" "${model_dirs[@]}") >> "$OUT/cuda_ops.log" 2>&1
    st=$?
    verdict "vt_cuda_test: $(grep -E '^[0-9]+ passed' "$OUT/cuda_ops.log" | tail -1) (cuda_ops.log)" $st
    echo "==== VT_CUDA_PDL=0 ====" >> "$OUT/cuda_ops.log"
    (cd "$ROOT" && VT_CUDA_PDL=0 timeout 300 "$BUILD/libvt/vt_cuda_test" "${model_dirs[0]}") >> "$OUT/cuda_ops.log" 2>&1
    st=$?
    verdict "vt_cuda_test without PDL: $(grep -E '^[0-9]+ passed' "$OUT/cuda_ops.log" | tail -1)" $st

    (cd "$ROOT" && timeout 600 "$PY" -P -m pytest -m cuda -v -rs -p no:cacheprovider tests/test_cuda.py tests/test_cuda_gemm.py tests/test_cuda_host.py tests/test_device_api.py) \
        > "$OUT/pytest_cuda.log" 2>&1
    st=$?
    verdict "pytest -m cuda: $(pytest_line "$OUT/pytest_cuda.log") (pytest_cuda.log)" $st
    echo "==== VT_CUDA_PDL=0 ====" >> "$OUT/pytest_cuda.log"
    (cd "$ROOT" && VT_CUDA_PDL=0 timeout 300 "$PY" -P -m pytest -m cuda -q -p no:cacheprovider tests/test_cuda.py tests/test_device_api.py) \
        >> "$OUT/pytest_cuda.log" 2>&1
    st=$?
    verdict "pytest -m cuda without PDL: $(pytest_line "$OUT/pytest_cuda.log")" $st

    (cd "$ROOT" && timeout 900 "$PY" -P -m pytest -m "not cuda" -q -rs -p no:cacheprovider) > "$OUT/pytest_cpu.log" 2>&1
    st=$?
    verdict "pytest CPU suite: $(pytest_line "$OUT/pytest_cpu.log") (pytest_cpu.log; default-model tests need it offline)" $st
fi

# ---- benchmark ------------------------------------------------------------------------------------
if [[ " $PHASES " == *" bench "* ]]; then
    if [ -f "$ROOT/bench/decode.py" ]; then
        # shellcheck disable=SC2086
        (cd /tmp && timeout 1500 "$PY" "$ROOT/bench/decode.py" $BENCH_ARGS --results-dir "$OUT") > "$OUT/bench.log" 2>&1
        st=$?
        verdict "bench/decode.py $BENCH_ARGS (bench.log, decode-*.md)" $st
        tail -40 "$OUT/bench.log"
    else
        note "SKIP  bench/decode.py is not in this tree"
    fi
fi

# ---- GEMM benchmark (CUTLASS formats vs torch) ----------------------------------------------------
if [[ " $PHASES " == *" gemm "* ]]; then
    # shellcheck disable=SC2086
    (cd /tmp && timeout 540 "$PY" "$ROOT/bench/gemm.py" ${VT_GEMM_BENCH_ARGS:-} --results-dir "$OUT") > "$OUT/bench_gemm.log" 2>&1
    st=$?
    verdict "bench/gemm.py ${VT_GEMM_BENCH_ARGS:-} (bench_gemm.log, gemm-*.md)" $st
    tail -60 "$OUT/bench_gemm.log"
fi

echo
cat "$SUMMARY"
grep -q '^FAIL' "$SUMMARY" && exit 1
exit 0

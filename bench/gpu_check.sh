#!/usr/bin/env bash
# The GPU check, one phase per call of the device tool (docs/cuda.md "Running on a GPU machine"):
#
#   bench/gpu_check.sh PHASE [MODEL] OUTDIR     run one phase; summary.json + summary.md + logs in OUTDIR
#   bench/gpu_check.sh --plan [PHASE|all]       print each phase's commands and time budgets
#
#   first          the first call when a GPU is lent (360 s): build, vt_cuda_test on every op and
#                  on tiny models, pytest of the families / KV cache types / logits on the GPU
#   kernels        environment report, build, vt_cuda_test (op level), TinyLlama-shape decode bench
#   models         vt_cuda_test on tiny model folders (PDL on and off), pytest -m cuda,
#                  compute-sanitizer memcheck of a tiny-model decode
#   gemm           bench/gemm.py
#   decode MODEL   decode bench of tinyllama-1.1b, llama-3.2-1b or llama-2-7b (random weights)
#   cpu            the CPU suite with the GPU hidden from it
#   profile, prefill, kvcache, switches, batch   timing phases (bench/gpu/runner.py --help; switches:
#                  the A/Bs of the opt-in decode switches VT_CUDA_INT4_FOUR_ROWS, _FEEDBACK,
#                  _L2_EVICT_FIRST)
#
# Every phase rebuilds (the machine is bare at every call), needs no network, and ends within
# 540 s; the wheels it needs travel in .gpu-wheels (tools/gpu_wheels.sh; carry: [".gpu-wheels"]).
# The work is bench/gpu/runner.py's (its --help lists the environment variables); this wrapper
# picks the Python (VT_GPU_PYTHON, else the GPU image's /opt/torch/.venv, else python3) and, if
# no Python can run the runner, still writes a summary saying so.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${VT_GPU_PYTHON:-}
if [ -z "$PY" ]; then
    for c in /opt/torch/.venv/bin/python3 python3; do
        if command -v "$c" >/dev/null 2>&1; then PY=$(command -v "$c"); break; fi
    done
fi
if [ -n "$PY" ] && "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
    exec "$PY" "$ROOT/bench/gpu/runner.py" "$@"
fi
# No usable Python: the summary says so (the last argument is OUTDIR).
case "${1:-}" in --plan|-h|--help|"") echo "bench/gpu_check.sh: no Python >= 3.10 found (set VT_GPU_PYTHON)" >&2; exit 2 ;; esac
OUT=${!#}
mkdir -p "$OUT"
why="no Python >= 3.10 found (VT_GPU_PYTHON='${VT_GPU_PYTHON:-}', /opt/torch/.venv/bin/python3, python3)"
printf '{"schema": 1, "phase": "%s", "status": "fail", "steps": [], "notes": ["%s"]}\n' "$1" "$why" > "$OUT/summary.json"
# shellcheck disable=SC2016  # the backquotes are markdown
printf '# GPU check, phase `%s`: **FAIL**\n\n* %s\n' "$1" "$why" > "$OUT/summary.md"
echo "bench/gpu_check.sh: $why" >&2
exit 1

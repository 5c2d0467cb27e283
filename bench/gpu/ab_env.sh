#!/usr/bin/env bash
# A/B of one environment switch on the GPU machine, after a phase has built libvt there:
# vt_generate (the C API, no Python) on one model folder, the two settings alternating, so a
# drift of the machine falls on both. Prints one line per run and the medians.
#
#   bench/gpu/ab_env.sh VAR A B [MODEL_DIR] [TOKENS] [PAIRS] [FORMAT]
#
# VAR=A and VAR=B in turn, PAIRS times (default 4); MODEL_DIR default /tmp/vt-gpu/models/
# tinyllama-1.1b (the kernels / profile phases make it), TOKENS default 128, FORMAT the weight
# format (vt_generate --format; default auto: int8 for a float checkpoint); VT_GPU_WORK as for
# the runner. Examples: bench/gpu/ab_env.sh VT_CUDA_PDL 0 1
#   bench/gpu/ab_env.sh VT_CUDA_INT4_FOUR_ROWS 0 1 /tmp/vt-gpu/models/tinyllama-1.1b 128 4 int4
set -euo pipefail
[ $# -ge 3 ] || { sed -n '2,12p' "$0" >&2; exit 2; }
var=$1 a=$2 b=$3
work=${VT_GPU_WORK:-/tmp/vt-gpu}
model=${4:-$work/models/tinyllama-1.1b}
tokens=${5:-128}
pairs=${6:-4}
format=${7:-auto}
gen=$work/build/examples/vt_generate
[ -x "$gen" ] || { echo "ab_env.sh: no $gen (run a phase first)" >&2; exit 2; }
[ -d "$model" ] || { echo "ab_env.sh: no model folder $model" >&2; exit 2; }
declare -A runs=([$a]="" [$b]="")
for i in $(seq "$pairs"); do
    for v in "$a" "$b"; do
        out=$(env "$var=$v" "$gen" --format "$format" "$model" "$tokens" 2>&1) ||
            { echo "$var=$v run $i failed: $out" >&2; exit 1; }
        ms=$(printf '%s\n' "$out" | sed -n 's/.*decode \([0-9.]*\) ms\/token.*/\1/p' | tail -1)
        [ -n "$ms" ] || { echo "$var=$v run $i: no 'decode X ms/token' in: $out" >&2; exit 1; }
        echo "run $i $var=$v decode $ms ms/token"
        runs[$v]+="$ms "
    done
done
for v in "$a" "$b"; do
    # shellcheck disable=SC2086  # the list is one number per word
    med=$(printf '%s\n' ${runs[$v]} | sort -g | awk '{x[NR]=$1} END {print (NR % 2) ? x[(NR + 1) / 2] : (x[NR / 2] + x[NR / 2 + 1]) / 2}')
    echo "$var=$v median $med ms/token over $pairs runs (${runs[$v]% })"
done

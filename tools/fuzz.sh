#!/usr/bin/env bash
# Coverage-guided fuzzing of libvt and pyvt's parsers, each target for a bounded time.
#
#   tools/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     (default 180 s; all four targets)
#
# Targets (docs/reliability.md):
#   safetensors  fuzz/fuzz_safetensors.cpp  libFuzzer + ASan + UBSan: SafeTensors header /
#                                           data checks and the model loader (vt_model_load)
#   config       fuzz/fuzz_config.cpp       libFuzzer + ASan + UBSan: config.json and
#                                           generation_config.json (strict JSON + fields)
#   gguf         fuzz/fuzz_gguf.py          atheris: pyvt.gguf reader + pyvt.convert
#   text         fuzz/fuzz_text.py          atheris: tokenizer, stream pipeline, chat templates
#
# Needs clang with libFuzzer (apt-get install clang libclang-rt-14-dev) for the C++ targets
# and `pip install atheris` for the Python ones; a target whose tool is missing is skipped.
# The seed corpus fuzz/corpus/<target>/ is read-only here: new inputs go to
# build/fuzz/corpus/<target>/, crashes to build/fuzz/artifacts/<target>/ and are copied to
# fuzz/crashers/<target>/ (replayed by tests/test_fuzz_corpus.py: keep them once fixed, renamed
# after the bug). Only give the seed folder as the *first* corpus folder to a target run by
# hand if you mean to add to it: libFuzzer writes new inputs there.
# The results table (executions, libFuzzer coverage, then line coverage of the code under
# test over the inputs kept: llvm-cov for C++, coverage.py for Python when installed) is
# appended to bench/results/fuzz-<date>.txt. Runs niced, one target at a time.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SECS=${1:-180}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=(safetensors config gguf text)
OUT=${FUZZ_BUILD:-$ROOT/build/fuzz}
CXX_FUZZ=${CXX_FUZZ:-clang++}
mkdir -p "$OUT/obj" "$ROOT/bench/results"
RESULTS=${FUZZ_RESULTS:-$ROOT/bench/results/fuzz-$(date +%Y-%m-%d).txt}
NICE="nice -n 10"

# ---- build the C++ targets: libvt's sources (generic kernels) instrumented, linked in -------
build_cpp() {
    local flags=(-std=c++17 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined
                 -fno-sanitize-recover=undefined -I"$ROOT/libvt/include" -I"$ROOT/libvt/src"
                 -DVT_BUILDING_LIBRARY -DVT_VERSION='"fuzz"' -DVT_VERSION_MAJOR=0 -DVT_VERSION_MINOR=0
                 -DVT_VERSION_PATCH=0 -fno-math-errno -pthread)
    local srcs=(api api_model common threadpool cpu_features convert pack linear cpu/kernels_generic sampling
                json safetensors config model forward cuda/backend_none)
    local objs=()
    for s in "${srcs[@]}"; do
        local o="$OUT/obj/${s//\//_}.o"
        if [ ! -f "$o" ] || [ "$ROOT/libvt/src/$s.cpp" -nt "$o" ] || [ -n "$(find "$ROOT/libvt/src" -name '*.h' -newer "$o" -print -quit)" ]; then
            $NICE "$CXX_FUZZ" "${flags[@]}" -fsanitize=fuzzer-no-link -c "$ROOT/libvt/src/$s.cpp" -o "$o"
        fi
        objs+=("$o")
    done
    for t in safetensors config; do
        $NICE "$CXX_FUZZ" "${flags[@]}" -fsanitize=fuzzer -DVT_FUZZ_DATA_DIR="\"$ROOT/fuzz/data\"" \
            "$ROOT/fuzz/fuzz_$t.cpp" "${objs[@]}" -o "$OUT/fuzz_$t"
    done
}

HAVE_CPP=0
if command -v "$CXX_FUZZ" >/dev/null && echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long){return 0;}' \
        | "$CXX_FUZZ" -x c++ -fsanitize=fuzzer - -o "$OUT/probe" 2>/dev/null; then
    echo "building the C++ fuzz targets with $CXX_FUZZ ..."
    build_cpp && HAVE_CPP=1
else
    echo "no clang with libFuzzer: skipping the C++ targets"
fi
HAVE_ATHERIS=0
python -c "import atheris" 2>/dev/null && HAVE_ATHERIS=1 || echo "atheris is not installed: skipping the Python targets"

# ---- run ----------------------------------------------------------------------------------
{
    echo "# pyvt fuzzing run — $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "# commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet 2>/dev/null || echo ' (+ uncommitted changes)')"
    echo "# machine: $(uname -m), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
    echo "# tools: $("$CXX_FUZZ" --version 2>/dev/null | head -1 || echo 'no clang'); python $(python -c 'import sys; print(sys.version.split()[0])'); atheris $(python -c 'import importlib.metadata as m; print(m.version("atheris"))' 2>/dev/null || echo '-')"
    echo "# cov = coverage points reached (libFuzzer edges: C++ code for the C++ targets, Python"
    echo "# bytecode edges of the instrumented modules for atheris), ft = features, corpus = inputs kept"
    printf "%-12s %-8s %8s %12s %9s %8s %8s %8s %s\n" target engine seconds executions exec/s cov ft corpus crashes
} > "$RESULTS.tmp"

run_target() {  # name engine cmd...
    local name=$1 engine=$2
    shift 2
    local work="$OUT/corpus/$name" art="$OUT/artifacts/$name/" log="$OUT/$name.log"
    rm -rf "$art"
    mkdir -p "$work" "$art"
    echo "fuzzing $name for $SECS s ..."
    local t0=$(date +%s)
    # One process; libFuzzer stops at the first crash, which is copied to fuzz/crashers/.
    $NICE "$@" -max_total_time="$SECS" -timeout=20 -rss_limit_mb=3072 -max_len=65536 -print_final_stats=1 \
        -artifact_prefix="$art" "$work" "$ROOT/fuzz/corpus/$name" > "$log" 2>&1 || true
    local t1=$(date +%s)
    local runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{print $2}' | tail -1 || true)
    [ -z "$runs" ] && runs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#' || true)
    local last=$(grep -E '^#[0-9]+.*(cov|ft):' "$log" | tail -1 || true)
    local cov=$(echo "$last" | grep -oE 'cov: [0-9]+' | awk '{print $2}' || true)
    local ft=$(echo "$last" | grep -oE 'ft: [0-9]+' | awk '{print $2}' || true)
    local corp=$(echo "$last" | grep -oE 'corp: [0-9]+' | awk '{print $2}' || true)
    local crashes=$(find "$art" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l || true)
    if [ "$crashes" -gt 0 ]; then
        mkdir -p "$ROOT/fuzz/crashers/$name"
        cp "$art"/crash-* "$art"/leak-* "$art"/timeout-* "$art"/oom-* "$ROOT/fuzz/crashers/$name/" 2>/dev/null || true
    fi
    local dt=$((t1 - t0))
    local eps=$(( ${runs:-0} / (dt > 0 ? dt : 1) ))
    printf "%-12s %-8s %8s %12s %9s %8s %8s %8s %s\n" "$name" "$engine" "$dt" "${runs:-?}" "$eps" "${cov:-?}" "${ft:-?}" \
        "${corp:-?}" "$crashes" >> "$RESULTS.tmp"
    echo "  $name: $dt s, ${runs:-?} executions, cov ${cov:-?}, ft ${ft:-?}, $crashes crash(es) (log: $log)"
}

export VT_FUZZ_DATA="$ROOT/fuzz/data"
for t in "${TARGETS[@]}"; do
    case $t in
        safetensors|config)
            [ $HAVE_CPP = 1 ] && run_target "$t" libFuzzer "$OUT/fuzz_$t" -dict="$ROOT/fuzz/json.dict" ;;
        gguf|text)
            [ $HAVE_ATHERIS = 1 ] && (cd "$ROOT/fuzz" && run_target "$t" atheris python "$ROOT/fuzz/fuzz_$t.py") ;;
        *) echo "unknown target $t"; exit 2 ;;
    esac
done
# ---- line coverage of the code under test, over seeds + everything the run kept -----------
# C++: the targets rebuilt with clang's source-based coverage (no sanitizers) and replayed
# with fuzz/replay_main.cpp, then llvm-cov per file. Python: coverage.py over the replay of
# the same inputs through the targets' check() (needs `pip install coverage`).
cov_cpp() {  # target
    local t=$1 c="$OUT/cov"
    mkdir -p "$c"
    local flags=(-std=c++17 -O0 -fprofile-instr-generate -fcoverage-mapping -I"$ROOT/libvt/include"
                 -I"$ROOT/libvt/src" -DVT_BUILDING_LIBRARY -DVT_VERSION='"cov"' -DVT_VERSION_MAJOR=0
                 -DVT_VERSION_MINOR=0 -DVT_VERSION_PATCH=0 -pthread)
    local srcs=()
    for s in api api_model common threadpool cpu_features convert pack linear cpu/kernels_generic sampling json \
             safetensors config model forward cuda/backend_none; do srcs+=("$ROOT/libvt/src/$s.cpp"); done
    $NICE "$CXX_FUZZ" "${flags[@]}" -DVT_FUZZ_DATA_DIR="\"$ROOT/fuzz/data\"" "$ROOT/fuzz/fuzz_$t.cpp" \
        "$ROOT/fuzz/replay_main.cpp" "${srcs[@]}" -o "$c/cov_$t" 2>/dev/null || return 0
    LLVM_PROFILE_FILE="$c/$t.profraw" $NICE "$c/cov_$t" "$OUT/corpus/$t" "$ROOT/fuzz/corpus/$t" \
        "$ROOT/fuzz/crashers/$t" > /dev/null 2>&1 || true
    llvm-profdata merge -sparse "$c/$t.profraw" -o "$c/$t.profdata" 2>/dev/null || return 0
    llvm-cov report "$c/cov_$t" -instr-profile="$c/$t.profdata" "$ROOT"/libvt/src/{json,safetensors,config,model}.cpp \
        2>/dev/null | awk -v t="$t" '$1 ~ /\.cpp$/ {n=split($1, a, "/"); printf "#   %-12s %-16s lines %s of %s covered (%s)\n", t, a[n], $8-$9, $8, $10}' || true
}
cov_py() {  # target modules...
    local t=$1 inc=""
    shift
    for m in "$@"; do inc+="$ROOT/pyvt/$m.py,"; done
    $NICE python -m coverage run --data-file="$OUT/cov-$t.coverage" --include="${inc%,}" "$ROOT/fuzz/replay.py" "$t" \
        "$OUT/corpus/$t" "$ROOT/fuzz/corpus/$t" "$ROOT/fuzz/crashers/$t" > "$OUT/cov-$t.log" 2>&1 || true
    python -m coverage report --data-file="$OUT/cov-$t.coverage" 2>/dev/null \
        | awk -v t="$t" '$1 ~ /\.py$/ {n=split($1, a, "/"); printf "#   %-12s %-16s statements %s of %s covered (%s)\n", t, a[n], $2-$3, $2, $4}' || true
}
{
    echo "# line coverage over the seeds + the inputs the run kept (+ crashers):"
    if [ $HAVE_CPP = 1 ] && command -v llvm-cov >/dev/null && command -v llvm-profdata >/dev/null; then
        for t in "${TARGETS[@]}"; do case $t in safetensors|config) cov_cpp "$t" ;; esac; done
    fi
    if python -c "import coverage" 2>/dev/null; then
        export VT_OUT="$OUT"
        for t in "${TARGETS[@]}"; do
            case $t in
                gguf) cov_py gguf gguf convert ;;
                text) cov_py text stream chat tokenizer ;;
            esac
        done
    fi
} >> "$RESULTS.tmp"

cat "$RESULTS.tmp" >> "$RESULTS"
rm -f "$RESULTS.tmp"
echo "results: $RESULTS"
cat "$RESULTS"

#!/usr/bin/env bash
# Python tests against a libvt built with AddressSanitizer + UndefinedBehaviorSanitizer
# (Python >= 3.11: -P keeps the source pyvt/ off sys.path).
#
#   tools/asan_pytest.sh [PYTEST ARGS...]     (default: the hostile-input tests)
#
# Builds libvt and pyvt's extension modules (-Dsanitize_vt=address_undefined, -O1, no CUDA)
# in build/asan-py, assembles a pyvt package from the sources and those modules in
# build/asan-py/pkg, and runs pytest with libasan preloaded (Python itself is not
# instrumented: leak detection is off, everything else halts on the first report).
# tests/test_sanitizers.py covers the C programs the same way in the default test run.
# Expected failure under ASan, not libvt's: a test that limits the address space
# (test_allocation_failure_is_an_error_not_a_crash: ASan cannot map its shadow memory).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build/asan-py
PY=${PYTHON:-python3}
if [ ! -f "$BUILD/build.ninja" ]; then
    meson setup "$BUILD" "$ROOT" -Dcuda=disabled -Dsanitize_vt=address_undefined -Doptimization=1 >/dev/null
fi
ninja -C "$BUILD" >/dev/null
PKG=$BUILD/pkg/pyvt
rm -rf "$BUILD/pkg"
mkdir -p "$PKG"
ln -s "$ROOT"/pyvt/*.py "$ROOT"/pyvt/py.typed "$PKG"/
ln -s "$BUILD"/pyvt/*.so "$PKG"/
[ $# -gt 0 ] || set -- tests/test_file_changes_during_load.py tests/test_hostile_inputs.py \
    tests/test_hostile_files_and_chat.py tests/test_fuzz_corpus.py tests/test_model_errors.py \
    tests/test_eos_list.py tests/test_model.py tests/test_convert.py
cd "$ROOT"
LD_LIBRARY_PATH=$BUILD/libvt \
LD_PRELOAD="$(${CC:-gcc} -print-file-name=libasan.so):$(${CC:-gcc} -print-file-name=libubsan.so)" \
ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:abort_on_error=1 \
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
PYTHONPATH=$BUILD/pkg \
    "$PY" -P -c 'import sys, pytest; sys.exit(pytest.main(["-q", "-p", "no:cacheprovider"] + sys.argv[1:]))' "$@"

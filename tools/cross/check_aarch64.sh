#!/usr/bin/env bash
# libvt and pyvt on 64-bit ARM (aarch64 Linux), checked from an x86-64 machine. zig (the
# `ziglang` PyPI package: clang for the target aarch64-linux-gnu, glibc 2.17 symbols, a static
# libc++) cross-compiles; qemu-user runs the results against Debian's arm64 glibc.
#
#   tools/cross/check_aarch64.sh                  # libvt + its C/C++ test programs (tests/c, tests/ops)
#   tools/cross/check_aarch64.sh --python [PYTEST ARGS]
#                                                 # also pyvt's extensions, installed into a staging
#                                                 # tree, and pytest (default: tests/test_linear.py)
#                                                 # under Debian's arm64 Python 3.11
#   tools/cross/check_aarch64.sh --wheel WHEEL [PYTEST ARGS]
#                                                 # pytest on an aarch64 wheel instead
#                                                 # (ARCH=aarch64 tools/wheels/build_manylinux.sh),
#                                                 # installed for that Python; libvt not rebuilt
#
# On aarch64 libvt runs its NEON int8, int4-min and int4 linears (kernels_neon.cpp: the x86 integer kernels' bits)
# and the generic C++ kernels for the rest (kernels_generic.cpp; the compiler vectorizes them
# with NEON), whose speed is not measured here — qemu emulates, it does not time.
# docs/packaging.md, "64-bit ARM".
#
# Needs: python3 with `pip install ziglang meson ninja cython`; qemu-user (apt-get install
# qemu-user); Debian's arm64 packages (dpkg --add-architecture arm64 && apt-get update): glibc
# (and, with --python / --wheel, Python 3.11) are unpacked into SYSROOT (default
# /opt/a64-sysroot) when it has none, and pyvt's dependencies' aarch64 wheels (numpy,
# tokenizers, ...) into SITE (default SYSROOT/site) by pip's --platform (tools/cross/aarch64_env.sh).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PY:-python3}
BUILD=${BUILD:-$ROOT/build/aarch64}
TARGET=aarch64-linux-gnu.2.17
MODE=libvt
WHEEL=
case "${1:-}" in
    --python) MODE=python; shift ;;
    --wheel)
        MODE=wheel
        [ $# -ge 2 ] || { echo "check_aarch64: --wheel needs the wheel's path" >&2; exit 2; }
        WHEEL=$(realpath -m "$2")
        shift 2 ;;
esac

A64_WHO=check_aarch64
. "$ROOT/tools/cross/aarch64_env.sh"
die() { a64_die "$@"; }
if [ "$MODE" = wheel ]; then  # the arguments first, before any tool is looked for
    [ -f "$WHEEL" ] || die "$WHEEL: no such wheel"
    case "$(basename "$WHEEL")" in
        pyvt*-cp${A64_PY_VERSION/./}-*aarch64*.whl) ;;
        *) die "$WHEEL: not a cp${A64_PY_VERSION/./} aarch64 wheel of pyvt (the sysroot's Python is $A64_PY_VERSION)" ;;
    esac
fi
"$PY" -m ziglang version >/dev/null 2>&1 || die "$PY -m ziglang failed (pip install ziglang)"
a64_glibc
[ "$MODE" = libvt ] || a64_python
a64_machine_files "$BUILD" "$PY" "$TARGET" "$([ "$MODE" = libvt ] || echo python)"

setup() {  # build dir, extra meson args
    local dir=$1 log=$1.setup.log
    shift
    if [ -e "$dir/build.ninja" ]; then
        set -- --reconfigure "$@"
    else
        set -- "$@" -Dcuda=disabled -Dbuildtype=release
    fi
    meson setup "$dir" "$ROOT" "$@" > "$log" 2>&1 || { tail -30 "$log" >&2; die "meson setup failed ($log)"; }
}
build() {  # ninja in a build dir, its log kept (zig notes every -Wl,-O1: "deprecated linker optimization")
    ninja -C "$1" > "$1/ninja.log" 2>&1 || { tail -30 "$1/ninja.log" >&2; die "the build failed ($1/ninja.log)"; }
}

if [ "$MODE" != wheel ]; then
    echo "== libvt and its test programs ($TARGET via zig $("$PY" -m ziglang version))"
    setup "$BUILD/meson" --cross-file "$BUILD/aarch64.ini" -Dpython=false
    build "$BUILD/meson"
    file "$BUILD/meson/libvt/libvt.so" 2>/dev/null || true
    echo "== their tests under qemu-aarch64"
    if [ "$MODE" = libvt ]; then
        exec meson test -C "$BUILD/meson" --print-errorlogs --timeout-multiplier 10 "$@"
    fi
    meson test -C "$BUILD/meson" --print-errorlogs --timeout-multiplier 10
fi

# ---- pyvt for the arm64 Python: the Cython extensions cross-built against it (--python) or
# an aarch64 wheel installed for it (--wheel); then pytest under it
a64_site "$PY"
if [ "$MODE" = python ]; then
    echo "== pyvt for the arm64 Python"
    setup "$BUILD/python" --cross-file "$BUILD/aarch64-python.ini" -Dpython=true
    build "$BUILD/python"
    rm -rf "$BUILD/stage"
    meson install -C "$BUILD/python" --destdir "$BUILD/stage" --tags runtime,python-runtime >/dev/null
    pkg=$(dirname "$(find "$BUILD/stage" -path '*/pyvt/__init__.py' | head -1)")
    [ -n "$pkg" ] && [ -d "$pkg" ] || die "meson install put no pyvt package under $BUILD/stage"
else
    echo "== $(basename "$WHEEL") installed for the arm64 Python"
    rm -rf "$BUILD/wheel-site"
    "$PY" -m pip install --quiet --no-deps --platform manylinux2014_aarch64 --platform manylinux_2_17_aarch64 \
        --platform manylinux_2_28_aarch64 --python-version "$A64_PY_VERSION" --implementation cp \
        --only-binary=:all: --target "$BUILD/wheel-site" "$WHEEL" || die "pip could not install $WHEEL"
    pkg=$BUILD/wheel-site/pyvt
    [ -f "$pkg/__init__.py" ] || die "$WHEEL installed no pyvt package"
fi
# The tests run from a directory holding tests/, tools/, fuzz/, bench/ and pyproject.toml but not
# the source pyvt/, so that the installed (arm64) package is the one imported.
RUN="$BUILD/run"
mkdir -p "$RUN"
for d in tests tools fuzz bench examples pyproject.toml; do ln -sfn "$ROOT/$d" "$RUN/$d"; done
cd "$RUN"
echo "== pytest under the arm64 Python ($(PYTHONPATH="$(dirname "$pkg"):$SITE" "$BUILD/python3" -c \
    'import platform, pyvt, pyvt.ops as o; print(platform.machine(), "libvt", o.cpu_isa(), "from", pyvt.__file__)'))"
[ $# -gt 0 ] || set -- tests/test_linear.py
PYTHONPATH="$(dirname "$pkg"):$SITE" exec "$BUILD/python3" -m pytest -q -p no:cacheprovider "$@"

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
#
# There are no ARM kernels of libvt's own yet: on aarch64 it runs the generic C++ kernels
# (kernels_generic.cpp; the compiler vectorizes them with NEON), whose speed is not measured
# here — qemu emulates, it does not time. docs/packaging.md, "64-bit ARM".
#
# Needs: python3 with `pip install ziglang meson ninja cython`; qemu-user (apt-get install
# qemu-user); Debian's arm64 packages (dpkg --add-architecture arm64 && apt-get update): glibc
# (and, with --python, Python 3.11) are unpacked into SYSROOT (default /opt/a64-sysroot) when it
# has none, and pyvt's dependencies' aarch64 wheels (numpy, tokenizers, ...) into SITE (default
# SYSROOT/site) by pip's --platform.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PY:-python3}
BUILD=${BUILD:-$ROOT/build/aarch64}
SYSROOT=${SYSROOT:-/opt/a64-sysroot}
SITE=${SITE:-$SYSROOT/site}
TARGET=aarch64-linux-gnu.2.17
WITH_PYTHON=0
if [ "${1:-}" = "--python" ]; then
    WITH_PYTHON=1
    shift
fi

die() { echo "check_aarch64: $*" >&2; exit 2; }
command -v qemu-aarch64 >/dev/null || die "qemu-aarch64 not found (apt-get install qemu-user)"
"$PY" -m ziglang version >/dev/null 2>&1 || die "$PY -m ziglang failed (pip install ziglang)"

# Debian arm64 packages into the sysroot (dpkg -x: nothing is installed on this machine).
unpack() {
    local tmp
    tmp=$(mktemp -d)
    (cd "$tmp" && apt-get download "$@" >/dev/null) ||
        die "apt-get download $* failed (dpkg --add-architecture arm64 && apt-get update)"
    mkdir -p "$SYSROOT"
    for d in "$tmp"/*.deb; do dpkg -x "$d" "$SYSROOT"; done
    rm -rf "$tmp"
}
if [ ! -e "$SYSROOT/lib/ld-linux-aarch64.so.1" ]; then
    echo "== arm64 glibc into $SYSROOT"
    unpack libc6:arm64 libgcc-s1:arm64
fi

. "$ROOT/tools/zig_tools.sh"
zig_tools "$BUILD" "$PY" "$TARGET"
{ cat "$BUILD/zig.ini"; cat <<INI; } > "$BUILD/aarch64.ini"
exe_wrapper = ['qemu-aarch64', '-L', '$SYSROOT']

[host_machine]
system = 'linux'
cpu_family = 'aarch64'
cpu = 'armv8-a'
endian = 'little'
INI

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

echo "== libvt and its test programs ($TARGET via zig $("$PY" -m ziglang version))"
setup "$BUILD/meson" --cross-file "$BUILD/aarch64.ini" -Dpython=false
build() {  # ninja in a build dir, its log kept (zig notes every -Wl,-O1: "deprecated linker optimization")
    ninja -C "$1" > "$1/ninja.log" 2>&1 || { tail -30 "$1/ninja.log" >&2; die "the build failed ($1/ninja.log)"; }
}
build "$BUILD/meson"
file "$BUILD/meson/libvt/libvt.so" 2>/dev/null || true
echo "== their tests under qemu-aarch64"
if [ "$WITH_PYTHON" = 0 ]; then
    exec meson test -C "$BUILD/meson" --print-errorlogs --timeout-multiplier 10 "$@"
fi
meson test -C "$BUILD/meson" --print-errorlogs --timeout-multiplier 10

# ---- pyvt: the Cython extensions cross-built against the arm64 Python, then pytest under it
if [ ! -x "$SYSROOT/usr/bin/python3.11" ] || [ ! -e "$SYSROOT/usr/include/aarch64-linux-gnu/python3.11/pyconfig.h" ]; then
    echo "== arm64 Python 3.11 into $SYSROOT"
    unpack python3.11-minimal:arm64 libpython3.11-minimal:arm64 libpython3.11-stdlib:arm64 \
        libpython3.11:arm64 libpython3.11-dev:arm64 libbz2-1.0:arm64 libcrypt1:arm64 libdb5.3:arm64 \
        libexpat1:arm64 libffi8:arm64 liblzma5:arm64 libncursesw6:arm64 libnsl2:arm64 libreadline8:arm64 \
        libsqlite3-0:arm64 libssl3:arm64 libtinfo6:arm64 libtirpc3:arm64 libuuid1:arm64 zlib1g:arm64 \
        libgssapi-krb5-2:arm64 libkrb5-3:arm64 libk5crypto3:arm64 libkrb5support0:arm64 libcom-err2:arm64 \
        libkeyutils1:arm64
fi
if [ ! -d "$SITE/numpy" ]; then
    echo "== pyvt's dependencies (aarch64 wheels) into $SITE"
    "$PY" -m pip install --quiet --platform manylinux2014_aarch64 --platform manylinux_2_17_aarch64 \
        --platform manylinux_2_28_aarch64 --python-version 3.11 --implementation cp --only-binary=:all: \
        --target "$SITE" numpy "tokenizers>=0.19.1" jinja2 huggingface_hub pytest ml_dtypes safetensors gguf
fi
# The arm64 Python as a program of this machine: qemu with argv[0] set to this script, so that
# sys.executable is a path the tests' subprocesses can run (no binfmt_misc registration needed).
cat > "$BUILD/python3" <<SH
#!/bin/sh
exec qemu-aarch64 -L '$SYSROOT' -0 '$BUILD/python3' '$SYSROOT/usr/bin/python3.11' "\$@"
SH
chmod +x "$BUILD/python3"
sed -e "s|^exe_wrapper.*|&\npython = '$BUILD/python3'\ncython = '$(command -v cython)'\npkg-config = 'pkg-config'|" \
    "$BUILD/aarch64.ini" > "$BUILD/aarch64-python.ini"
cat >> "$BUILD/aarch64-python.ini" <<INI

[properties]
sys_root = '$SYSROOT'
pkg_config_libdir = '$SYSROOT/usr/lib/aarch64-linux-gnu/pkgconfig'

[built-in options]
# Debian's pyconfig.h includes <aarch64-linux-gnu/python3.11/pyconfig.h>
cpp_args = ['-idirafter', '$SYSROOT/usr/include']
INI
command -v cython >/dev/null || die "cython not found (pip install cython)"
echo "== pyvt for the arm64 Python"
setup "$BUILD/python" --cross-file "$BUILD/aarch64-python.ini" -Dpython=true
build "$BUILD/python"
rm -rf "$BUILD/stage"
meson install -C "$BUILD/python" --destdir "$BUILD/stage" --tags runtime,python-runtime >/dev/null
pkg=$(dirname "$(find "$BUILD/stage" -path '*/pyvt/__init__.py' | head -1)")
[ -n "$pkg" ] && [ -d "$pkg" ] || die "meson install put no pyvt package under $BUILD/stage"
# The tests run from a directory holding tests/, tools/, fuzz/, bench/ and pyproject.toml but not
# the source pyvt/, so that the installed (arm64) package is the one imported.
RUN="$BUILD/run"
mkdir -p "$RUN"
for d in tests tools fuzz bench examples pyproject.toml; do ln -sfn "$ROOT/$d" "$RUN/$d"; done
cd "$RUN"
echo "== pytest under the arm64 Python ($(PYTHONPATH="$(dirname "$pkg"):$SITE" "$BUILD/python3" -c \
    'import platform, pyvt.ops as o; print(platform.machine(), "libvt", o.cpu_isa())'))"
[ $# -gt 0 ] || set -- tests/test_linear.py
PYTHONPATH="$(dirname "$pkg"):$SITE" exec "$BUILD/python3" -m pytest -q -p no:cacheprovider "$@"

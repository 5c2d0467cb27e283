#!/usr/bin/env bash
# Run the C self-tests against a manylinux wheel's libvt.so on an older glibc than this
# machine's, without Docker: Debian 11's libc6 (glibc 2.31) and libgcc-s1 are fetched with
# apt-get into a private folder (no change to the system's apt state) and the programs are
# started through that glibc's loader. glibc 2.31 predates every symbol
# tools/wheels/glibc_compat.c stands in for (2.32, 2.33, 2.36), so a wrong binding fails here.
#
#   tools/wheels/check_old_glibc.sh WHEEL MESON_BUILD_DIR
#
# MESON_BUILD_DIR: the build folder the wheel came from (build/manylinux-cuda-2.28/build), whose
# test programs were linked by the same old-glibc link (tools/wheels/oldglibc_cc.py); they load
# the wheel's libvt.so here, not the build folder's. Python itself is not run on the old glibc
# (this machine's CPython needs glibc 2.34), so the Cython modules are checked by
# build_manylinux_cuda.sh's symbol check and auditwheel only. Ends with a control: a program
# linked the ordinary way on this machine must fail to load.
set -euo pipefail
cd "$(dirname "$0")/../.."
WHEEL=$(realpath "$1")
BD=$(realpath "$2")
ROOT=$PWD
D=$ROOT/build/old-glibc
SUITE=${SUITE:-bullseye}
mkdir -p "$D/lists/partial" "$D/cache/archives/partial" "$D/deb"
echo "deb http://deb.debian.org/debian $SUITE main" > "$D/sources.list"
APT=(-o Dir::Etc::SourceList="$D/sources.list" -o Dir::Etc::SourceParts=/dev/null
     -o Dir::State::Lists="$D/lists" -o Dir::Cache="$D/cache" -o APT::Architecture=amd64
     -o Debug::NoDropPrivs=1 -o APT::Sandbox::User=root)
if ! ls "$D"/deb/libc6_*.deb >/dev/null 2>&1; then
    apt-get "${APT[@]}" update >/dev/null
    for pkg in libc6 libgcc-s1; do
        ver=$(apt-cache "${APT[@]}" madison "$pkg" | awk -v s="$SUITE" '$0 ~ s {print $3; exit}')
        (cd "$D/deb" && apt-get "${APT[@]}" download "$pkg=$ver")
    done
fi
rm -rf "$D/root" "$D/wheel"
mkdir -p "$D/root" "$D/wheel"
for deb in "$D"/deb/*.deb; do dpkg-deb -x "$deb" "$D/root"; done
LIB=$D/root/lib/x86_64-linux-gnu
LD=$(ls "$LIB"/ld-2.*.so)
"$(command -v python3)" -c "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])" "$WHEEL" "$D/wheel"
echo "glibc: $(basename "$LD"); libvt.so: $(basename "$WHEEL")"

fails=0
run() {
    local rc=0
    "$LD" --library-path "$D/wheel/pyvt:$LIB" "$@" > "$D/out.txt" 2>&1 || rc=$?
    printf '%-32s rc=%-3s %s\n' "$(basename "$1")" "$rc" "$(tail -1 "$D/out.txt")"
    return $rc
}
F=$ROOT/fuzz/data
run "$BD/examples/vt_generate" --self-test || fails=$((fails + 1))
run "$BD/tests/c/test_abi" || fails=$((fails + 1))
run "$BD/tests/c/test_device_api" || fails=$((fails + 1))
run "$BD/tests/c/test_hostile" "$F" || fails=$((fails + 1))
run "$BD/tests/c/test_files" "$F" || fails=$((fails + 1))
for t in safetensors config; do
    run "$BD/tests/c/fuzz_replay_$t" "$ROOT/fuzz/corpus/$t" "$ROOT/fuzz/crashers/$t" || fails=$((fails + 1))
done
# vt_cuda_test links libvt's objects itself: no GPU here, so it must say why and exit 77.
rc=0; run "$BD/libvt/vt_cuda_test" || rc=$?
[ "$rc" = 77 ] || fails=$((fails + 1))
"$LD" --library-path "$D/wheel/pyvt:$LIB" --list "$BD/tests/c/test_abi" | grep -E "libvt|libc\.so|libgcc_s"

# Control: the same loader must refuse a program linked the ordinary way here (stat binds to
# GLIBC_2.33), or the checks above prove nothing.
printf '#include <sys/stat.h>\nint main(int c, char **v) { struct stat s; (void)c; return stat(v[0], &s); }\n' > "$D/control.c"
cc -O2 "$D/control.c" -o "$D/control"
if run "$D/control"; then echo "control loaded: the old-glibc check is not working" >&2; exit 1; fi
echo "control refused, as it should be"
[ "$fails" = 0 ] || { echo "$fails program(s) failed on $(basename "$LD")" >&2; exit 1; }
echo "all passed on $(basename "$LD")"

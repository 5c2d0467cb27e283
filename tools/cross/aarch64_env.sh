# Sourced by tools/cross/check_aarch64.sh and tools/wheels/build_manylinux.sh (ARCH=aarch64):
# Debian's arm64 glibc and Python 3.11 unpacked into a sysroot, pyvt's dependencies as aarch64
# wheels, and the meson machine files that cross-compile for aarch64 with zig. The caller sets
# ROOT (the repository) and may set SYSROOT (default /opt/a64-sysroot) and SITE (default
# SYSROOT/site). Needs qemu-user (apt-get install qemu-user) and, for a sysroot not yet filled,
# Debian's arm64 packages (dpkg --add-architecture arm64 && apt-get update).
SYSROOT=${SYSROOT:-/opt/a64-sysroot}
SITE=${SITE:-$SYSROOT/site}
A64_PY_VERSION=3.11   # Debian 12's Python: the one version this sysroot has

a64_die() { echo "${A64_WHO:-aarch64}: $*" >&2; exit 2; }

# Debian arm64 packages into the sysroot (dpkg -x: nothing is installed on this machine).
a64_unpack() {
    local tmp
    tmp=$(mktemp -d)
    (cd "$tmp" && apt-get download "$@" >/dev/null) ||
        a64_die "apt-get download $* failed (dpkg --add-architecture arm64 && apt-get update)"
    mkdir -p "$SYSROOT"
    for d in "$tmp"/*.deb; do dpkg -x "$d" "$SYSROOT"; done
    rm -rf "$tmp"
}

a64_glibc() {
    command -v qemu-aarch64 >/dev/null || a64_die "qemu-aarch64 not found (apt-get install qemu-user)"
    if [ ! -e "$SYSROOT/lib/ld-linux-aarch64.so.1" ]; then
        echo "== arm64 glibc into $SYSROOT"
        a64_unpack libc6:arm64 libgcc-s1:arm64
    fi
}

a64_python() {
    a64_glibc
    if [ ! -x "$SYSROOT/usr/bin/python$A64_PY_VERSION" ] ||
        [ ! -e "$SYSROOT/usr/include/aarch64-linux-gnu/python$A64_PY_VERSION/pyconfig.h" ]; then
        echo "== arm64 Python $A64_PY_VERSION into $SYSROOT"
        a64_unpack python3.11-minimal:arm64 libpython3.11-minimal:arm64 libpython3.11-stdlib:arm64 \
            libpython3.11:arm64 libpython3.11-dev:arm64 libbz2-1.0:arm64 libcrypt1:arm64 libdb5.3:arm64 \
            libexpat1:arm64 libffi8:arm64 liblzma5:arm64 libncursesw6:arm64 libnsl2:arm64 libreadline8:arm64 \
            libsqlite3-0:arm64 libssl3:arm64 libtinfo6:arm64 libtirpc3:arm64 libuuid1:arm64 zlib1g:arm64 \
            libgssapi-krb5-2:arm64 libkrb5-3:arm64 libk5crypto3:arm64 libkrb5support0:arm64 libcom-err2:arm64 \
            libkeyutils1:arm64
    fi
}

# pyvt's dependencies and pytest (their aarch64 wheels) into SITE, for running pyvt there.
a64_site() {  # PY
    if [ ! -d "$SITE/numpy" ]; then
        echo "== pyvt's dependencies (aarch64 wheels) into $SITE"
        "$1" -m pip install --quiet --platform manylinux2014_aarch64 --platform manylinux_2_17_aarch64 \
            --platform manylinux_2_28_aarch64 --python-version "$A64_PY_VERSION" --implementation cp \
            --only-binary=:all: --target "$SITE" numpy "tokenizers>=0.19.1" jinja2 huggingface_hub pytest \
            ml_dtypes safetensors gguf
    fi
}

# DIR/zig-* and DIR/zig.ini (tools/zig_tools.sh) for TARGET; DIR/aarch64.ini, the cross file of
# libvt alone (programs run under qemu); with the Python (a64_python first): DIR/python3, the
# arm64 Python as a program of this machine (qemu with argv[0] set to DIR/python3, so that
# sys.executable is a path subprocesses can start without binfmt_misc), and
# DIR/aarch64-python.ini, the cross file of pyvt's extensions built against it.
a64_machine_files() {  # DIR PY TARGET [python]
    local dir=$1 py=$2 target=$3
    . "$ROOT/tools/zig_tools.sh"
    zig_tools "$dir" "$py" "$target"
    { cat "$dir/zig.ini"; cat <<INI; } > "$dir/aarch64.ini"
exe_wrapper = ['qemu-aarch64', '-L', '$SYSROOT']

[host_machine]
system = 'linux'
cpu_family = 'aarch64'
cpu = 'armv8-a'
endian = 'little'
INI
    [ "${4:-}" = python ] || return 0
    local cython
    cython=$(dirname "$("$py" -c 'import sys; print(sys.executable)')")/cython
    [ -x "$cython" ] || cython=$(command -v cython) || a64_die "cython not found (pip install cython)"
    cat > "$dir/python3" <<SH
#!/bin/sh
exec qemu-aarch64 -L '$SYSROOT' -0 '$dir/python3' '$SYSROOT/usr/bin/python$A64_PY_VERSION' "\$@"
SH
    chmod +x "$dir/python3"
    sed -e "s|^exe_wrapper.*|&\npython = '$dir/python3'\ncython = '$cython'\npkg-config = 'pkg-config'|" \
        "$dir/aarch64.ini" > "$dir/aarch64-python.ini"
    cat >> "$dir/aarch64-python.ini" <<INI

[properties]
sys_root = '$SYSROOT'
pkg_config_libdir = '$SYSROOT/usr/lib/aarch64-linux-gnu/pkgconfig'

[built-in options]
# Debian's pyconfig.h includes <aarch64-linux-gnu/python3.11/pyconfig.h>
cpp_args = ['-idirafter', '$SYSROOT/usr/include']
INI
}

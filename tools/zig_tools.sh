# Sourced by the build scripts that compile with zig (the `ziglang` PyPI package):
# zig_tools DIR PY TARGET writes DIR/zig-{cc,c++,ar,ranlib} (zig's compilers for TARGET, e.g.
# x86_64-linux-gnu.2.17 or aarch64-linux-gnu.2.17, run by the Python PY) and DIR/zig.ini, a meson
# machine file whose [binaries] name them; a script appends what else its build needs.
zig_tools() {
    local dir=$1 py=$2 target=$3 tool
    mkdir -p "$dir"
    for tool in cc c++ ar ranlib; do
        case $tool in
            cc|c++) printf '#!/bin/sh\nexec %s -m ziglang %s -target %s "$@"\n' "$py" "$tool" "$target" ;;
            *) printf '#!/bin/sh\nexec %s -m ziglang %s "$@"\n' "$py" "$tool" ;;
        esac > "$dir/zig-$tool"
        chmod +x "$dir/zig-$tool"
    done
    cat > "$dir/zig.ini" <<INI
[binaries]
c = '$dir/zig-cc'
cpp = '$dir/zig-c++'
ar = '$dir/zig-ar'
ranlib = '$dir/zig-ranlib'
INI
}

#!/usr/bin/env python3
"""A gcc / g++ that compiles with the system GCC and links against an old glibc (zig's stubs).

Used by tools/wheels/build_manylinux_cuda.sh as meson's C and C++ compiler (and, through them,
nvcc's host compiler), so that every object of the CUDA wheel -- C, C++, the host side of the
.cu files, Cython's output -- is compiled by one GCC with one C++ library, libstdc++:

  oldglibc_cc.py cc|c++ ARGS...

* Compiling (-c, -E, -S, -M), or a query without input files (--version, -dumpversion,
  -print-*, -Wl,--version ...): the system gcc / g++ with ARGS, unchanged.
* Linking: `zig cc -target $OLDGLIBC_TARGET` (e.g. x86_64-linux-gnu.2.28) with ARGS. zig links
  against its own stub libc.so.6 / libpthread.so.0 / libdl.so.2 ... of that glibc version, so
  every glibc symbol is bound to a version the target has, and a symbol the target lacks is an
  error (or, where undefined symbols are allowed, an unversioned reference that
  build_manylinux_cuda.sh rejects). For c++ it adds GCC's libstdc++.a (linked statically;
  a shared library exports only $OLDGLIBC_EXPORTS, so its copy stays private), libgcc.a, the compat archive ($OLDGLIBC_COMPAT, see
  glibc_compat.c) and the system's libgcc_s.so.1 for the unwinder (GCC_3.x symbols, on the
  manylinux allow-list; the static libgcc_eh.a of GCC 12 on Debian 12 needs _dl_find_object,
  GLIBC_2.35). Source files given to a link (meson's sanity and feature checks) are first
  compiled by gcc / g++ into a temporary folder.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile

SOURCE_EXT = {".c": "c", ".cc": "c++", ".cpp": "c++", ".cxx": "c++", ".C": "c++", ".c++": "c++"}
COMPILE_ONLY = {"-c", "-E", "-S", "-M", "-MM", "-fsyntax-only"}
LINK_ONLY_FLAGS = {"-shared", "-static", "-rdynamic", "-pie", "-no-pie", "-static-libstdc++",
                   "-static-libgcc", "-shared-libgcc"}


def gcc_file(cxx: str, name: str) -> str:
    out = subprocess.run([cxx, f"-print-file-name={name}"], check=True, capture_output=True,
                         text=True).stdout.strip()
    if not os.path.isabs(out):
        sys.exit(f"oldglibc_cc: {cxx} does not know {name}")
    return out


def main() -> int:
    mode, args = sys.argv[1], []
    for a in sys.argv[2:]:
        # A response file (meson uses them for long command lines): its arguments, so a link
        # given through one is still recognised as a link.
        if a.startswith("@") and os.path.isfile(a[1:]):
            with open(a[1:]) as f:
                args += shlex.split(f.read())
        else:
            args.append(a)
    gcc = os.environ.get("OLDGLIBC_CC", "gcc") if mode == "cc" else os.environ.get("OLDGLIBC_CXX", "g++")
    inputs = [a for a in args if not a.startswith("-") and os.path.splitext(a)[1] in
              (*SOURCE_EXT, ".o", ".a", ".so", ".lo") or ".so." in os.path.basename(a)]
    if COMPILE_ONLY.intersection(args) or not inputs:
        os.execvp(gcc, [gcc, *args])

    target = os.environ["OLDGLIBC_TARGET"]
    zig = [sys.executable, "-m", "ziglang", "cc", "-target", target]
    with tempfile.TemporaryDirectory(prefix="oldglibc-") as tmp:
        # Sources in a link: compile them with gcc first (drop the link-only arguments).
        compile_flags, skip = [], False
        for a in args:
            if skip:
                skip = False
                continue
            if a == "-o":
                skip = True
                continue
            if a in inputs or a.startswith(("-l", "-L", "-Wl,")) or a in LINK_ONLY_FLAGS:
                continue
            compile_flags.append(a)
        link_args = []
        for i, a in enumerate(args):
            ext = os.path.splitext(a)[1]
            if a in inputs and ext in SOURCE_EXT:
                obj = os.path.join(tmp, f"{i}.o")
                subprocess.run([gcc, *compile_flags, "-c", a, "-o", obj], check=True)
                link_args.append(obj)
            else:
                link_args.append(a)
        extra = ["-Wl,--allow-shlib-undefined"]
        if "-shared" in args:
            # Export only the binary's own API ($OLDGLIBC_EXPORTS: libvt's vt_*, the Cython
            # modules' PyInit_*), so the static libstdc++ inside stays private to each binary
            # (zig's linker has no --exclude-libs; a version script does the same here).
            exports = os.environ.get("OLDGLIBC_EXPORTS", "vt_*;PyInit_*")
            script = os.path.join(tmp, "exports.map")
            with open(script, "w") as f:
                f.write("{ global: %s; local: *; };\n" % exports)
            extra.append(f"-Wl,--version-script,{script}")
        if mode == "c++":
            extra.append(gcc_file(gcc, "libstdc++.a"))
        extra += [os.environ["OLDGLIBC_COMPAT"], gcc_file(gcc, "libgcc.a"),
                  gcc_file(gcc, "libgcc_s.so.1")]
        return subprocess.run([*zig, *link_args, *extra]).returncode


if __name__ == "__main__":
    sys.exit(main())

"""tools/wheels/glibc_compat.c, the glibc stand-ins of the CUDA wheel (docs/packaging.md, "The
CUDA wheel"): what it defines, that nothing of it is exported, and that its stat / fstat /
lstat / arc4random behave like glibc's. Linked into a small program here with the system
compiler (about a second); the wheel build itself is not run (minutes, needs nvcc and zig)."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
COMPAT = ROOT / "tools" / "wheels" / "glibc_compat.c"
CC = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
NM = shutil.which("nm")

pytestmark = [
    pytest.mark.skipif(platform.system() != "Linux" or platform.machine() != "x86_64",
                       reason="glibc_compat.c is for x86-64 Linux"),
    pytest.mark.skipif(CC is None or NM is None, reason="no C compiler or nm"),
]

DEFINED = {"__libc_single_threaded", "stat", "fstat", "lstat", "arc4random"}

PROGRAM = r"""
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
unsigned int arc4random(void);
extern char __libc_single_threaded;
int main(int argc, char **argv) {
    struct stat a, b, c;
    if (argc != 3) return 2;
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0 || stat(argv[1], &a) != 0 || fstat(fd, &b) != 0 || lstat(argv[2], &c) != 0) return 3;
    if (stat("/nonexistent/vt", &a) == 0) return 4;
    if (stat(argv[1], &a) != 0) return 5;
    unsigned int r1 = arc4random(), r2 = arc4random(), r3 = arc4random();
    printf("%lld %lld %lld %lld %o %d %d\n", (long long)a.st_size, (long long)a.st_ino,
           (long long)b.st_size, (long long)b.st_ino, (unsigned)c.st_mode, (int)__libc_single_threaded,
           !(r1 == r2 && r2 == r3));
    close(fd);
    return 0;
}
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("compat")
    obj, exe, src = d / "glibc_compat.o", d / "prog", d / "prog.c"
    src.write_text(PROGRAM)
    subprocess.run([CC, "-O2", "-fPIC", "-Wall", "-Wextra", "-Werror", "-c", str(COMPAT), "-o", str(obj)],
                   check=True)
    subprocess.run([CC, "-O2", str(src), str(obj), "-o", str(exe)], check=True)
    return obj, exe


def _nm(path: Path, *flags: str) -> list[list[str]]:
    out = subprocess.run([NM, *flags, str(path)], check=True, capture_output=True, text=True).stdout
    return [ln.split() for ln in out.splitlines() if ln.strip()]


def test_defines_the_stand_ins_and_refers_only_to_old_glibc(built):
    obj, _ = built
    rows = _nm(obj)
    defined = {r[-1] for r in rows if len(r) == 3 and r[1].isupper()}  # global (not arc4random.cold)
    undefined = {r[-1] for r in rows if len(r) == 2 and r[0] == "U"}
    assert defined == DEFINED
    # GLIBC_2.2.5 (__xstat family), 2.25 (getentropy), abort: all in glibc 2.28.
    assert undefined == {"__xstat", "__fxstat", "__lxstat", "getentropy", "abort"}


def test_nothing_is_exported(built, tmp_path):
    obj, _ = built
    so = tmp_path / "libcompat.so"
    subprocess.run([CC, "-shared", str(obj), "-o", str(so)], check=True)
    exported = {r[-1] for r in _nm(so, "-D", "--defined-only")}
    assert not exported & DEFINED, exported & DEFINED


def test_the_program_uses_them_and_they_agree_with_the_kernel(built, tmp_path):
    _, exe = built
    local = {r[-1] for r in _nm(exe, "--defined-only")}
    assert {"stat", "fstat", "lstat", "arc4random"} <= local  # bound to glibc_compat.c, not libc
    f = tmp_path / "data.bin"
    f.write_bytes(b"x" * 12345)
    link = tmp_path / "link"
    link.symlink_to(f)
    out = subprocess.run([str(exe), str(f), str(link)], check=True, capture_output=True, text=True).stdout.split()
    st = os.stat(f)
    assert [int(out[0]), int(out[1]), int(out[2]), int(out[3])] == [12345, st.st_ino, 12345, st.st_ino]
    assert int(out[4], 8) == os.lstat(link).st_mode  # lstat: the link itself, not its target
    assert out[5] == "0" and out[6] == "1"

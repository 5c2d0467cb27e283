"""The C product without Python, as a C user installs it: `meson setup -Dpython=false`, then
`meson install --destdir` into a default (`lib`) and a Debian/Ubuntu multiarch
(`lib/x86_64-linux-gnu`) libdir; examples/generate.c is compiled through the installed vt.pc
and runs its self-test. The installed tree is then moved elsewhere and used again (vt.pc is
relocatable). One libvt build serves both layouts: changing libdir recompiles nothing, it
only rewrites vt.pc. ~40-90 s on 2 cores; skipped without meson, ninja or a C compiler. Uses
pkg-config / pkgconf when installed, else reads vt.pc with the small evaluator below.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CC = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
MESON, NINJA = shutil.which("meson"), shutil.which("ninja")
PKG_CONFIG = shutil.which("pkg-config") or shutil.which("pkgconf")
PREFIX = "/usr/local"


def _pc_flags_by_hand(pc: Path) -> list[str]:
    """`pkg-config --cflags --libs` for a plain .pc file: variables, ${pcfiledir}, Cflags, Libs."""
    vars_ = {"pcfiledir": str(pc.parent)}
    fields: dict[str, str] = {}

    def expand(v: str) -> str:
        return re.sub(r"\$\{(\w+)\}", lambda m: vars_[m.group(1)], v)

    for line in pc.read_text().splitlines():
        if m := re.match(r"^(\w+)=(.*)$", line):
            vars_[m.group(1)] = expand(m.group(2).strip())
        elif m := re.match(r"^(\w+):\s*(.*)$", line):
            fields[m.group(1)] = expand(m.group(2).strip())
    return fields.get("Cflags", "").split() + fields.get("Libs", "").split()


def _flags(pc: Path) -> list[str]:
    if PKG_CONFIG is None:
        return _pc_flags_by_hand(pc)
    env = dict(os.environ, PKG_CONFIG_PATH=str(pc.parent), PKG_CONFIG_LIBDIR=str(pc.parent))
    env.pop("PKG_CONFIG_SYSROOT_DIR", None)
    out = subprocess.run([PKG_CONFIG, "--cflags", "--libs", "vt"], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def _compile_and_run(pc: Path, tmp: Path) -> None:
    exe = tmp / "vt_generate"
    flags = _flags(pc)
    cmd = [CC, "-std=c99", "-Wall", "-Wextra", "-Werror", "-o", str(exe), str(ROOT / "examples" / "generate.c"),
           *flags, "-lm"]
    build = subprocess.run(cmd, capture_output=True, text=True)
    assert build.returncode == 0, f"compile failed: {' '.join(cmd)}\n{build.stderr}"
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}  # the rpath of vt.pc finds libvt
    run = subprocess.run([str(exe), "--self-test"], capture_output=True, text=True, timeout=300, cwd=tmp, env=env)
    assert run.returncode == 0, f"{exe} --self-test failed:\n{run.stdout}\n{run.stderr}"
    assert " passed, 0 failed" in run.stdout


def _install(build: Path, destdir: Path) -> None:
    r = subprocess.run([MESON, "install", "-C", str(build), "--no-rebuild", "--destdir", str(destdir)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


def _check_layout(root: Path, libdir: str) -> Path:
    """The installed files under root/PREFIX; returns vt.pc."""
    prefix = root / PREFIX.lstrip("/")
    assert (prefix / "include" / "vt" / "vt.h").is_file()
    assert any(p.name.startswith("libvt.so") for p in (prefix / libdir).iterdir())
    pc = prefix / libdir / "pkgconfig" / "vt.pc"
    assert pc.is_file()
    text = pc.read_text()
    assert "Version: " in text and "${pcfiledir}" in text, text
    assert not any((prefix / d).exists() for d in ("lib/python3", "share")), "Python files in a C install"
    return pc


@pytest.mark.slow
@pytest.mark.skipif(None in (MESON, NINJA, CC), reason="needs meson, ninja and a C compiler")
def test_destdir_install_compiles_and_runs_through_pkg_config(tmp_path):
    build = tmp_path / "build"
    nice = ["nice", "-n", "10"] if shutil.which("nice") else []
    setup = subprocess.run([MESON, "setup", str(build), str(ROOT), "-Dpython=false", "-Dcuda=disabled",
                            "-Doptimization=1", f"--prefix={PREFIX}", "--libdir=lib"],
                           capture_output=True, text=True, timeout=300)
    assert setup.returncode == 0, setup.stdout + setup.stderr
    # Only the installed library: the C tests and the example are compiled by the test itself.
    comp = subprocess.run(nice + [NINJA, "-C", str(build), "libvt/libvt.so"], capture_output=True, text=True,
                          timeout=1200)
    assert comp.returncode == 0, comp.stdout[-4000:] + comp.stderr[-4000:]

    for libdir in ("lib", "lib/x86_64-linux-gnu"):
        r = subprocess.run([MESON, "configure", str(build), f"--libdir={libdir}"], capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr
        r = subprocess.run(nice + [NINJA, "-C", str(build), "libvt/libvt.so"], capture_output=True, text=True,
                           timeout=600)
        assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
        dest = tmp_path / ("dest-" + libdir.replace("/", "-"))
        _install(build, dest)
        pc = _check_layout(dest, libdir)
        _compile_and_run(pc, tmp_path)
        # Relocated: the whole tree moved somewhere else still compiles and runs.
        moved = tmp_path / ("moved-" + libdir.replace("/", "-"))
        dest.rename(moved)
        _compile_and_run(_check_layout(moved, libdir), tmp_path)


def test_pc_evaluator_matches_pkg_config(tmp_path):
    """The fallback evaluator above reads a relocatable .pc the way pkg-config does."""
    pc = tmp_path / "lib" / "x86_64-linux-gnu" / "pkgconfig" / "vt.pc"
    pc.parent.mkdir(parents=True)
    pc.write_text("prefix=${pcfiledir}/../../..\nincludedir=${prefix}/include\n"
                  "libdir=${prefix}/lib/x86_64-linux-gnu\n\nName: vt\nDescription: d\nVersion: 1\n"
                  "Libs: -L${libdir} -lvt -Wl,-rpath,${libdir}\nCflags: -I${includedir}\n")
    mine = _pc_flags_by_hand(pc)
    base = str(pc.parent) + "/../../.."
    assert mine == [f"-I{base}/include", f"-L{base}/lib/x86_64-linux-gnu", "-lvt",
                    f"-Wl,-rpath,{base}/lib/x86_64-linux-gnu"]
    if PKG_CONFIG is not None:
        real = _flags(pc)
        norm = lambda xs: sorted(re.sub(r"^(-I|-L|-Wl,-rpath,)(.*)$",  # noqa: E731
                                        lambda m: m.group(1) + os.path.normpath(m.group(2)), x) for x in xs)
        assert norm(real) == norm(mine)

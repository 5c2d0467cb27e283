"""The wheel and cross-build scripts' argument errors (tools/wheels/build_manylinux.sh,
tools/cross/check_aarch64.sh): each bad argument stops the script with exit code 2 and one
line naming it, before any build tool, download or emulator is used. The builds themselves are
not run here (minutes; zig, qemu and Debian's arm64 packages: docs/packaging.md, "64-bit ARM")."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BASH = shutil.which("bash")

pytestmark = pytest.mark.skipif(BASH is None, reason="no bash")


def _run(script: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([BASH, str(ROOT / script), *args], capture_output=True, text=True, timeout=60,
                          env=env)


def test_check_aarch64_wheel_needs_a_path():
    r = _run("tools/cross/check_aarch64.sh", "--wheel")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == ["check_aarch64: --wheel needs the wheel's path"]


def test_check_aarch64_names_a_missing_wheel(tmp_path):
    missing = tmp_path / "pyvt-0.1.0-cp311-cp311-manylinux2014_aarch64.whl"
    r = _run("tools/cross/check_aarch64.sh", "--wheel", str(missing))
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [f"check_aarch64: {missing}: no such wheel"]


@pytest.mark.parametrize("name", ["pyvt-0.1.0.tar.gz", "pyvt-0.1.0-cp311-cp311-manylinux2014_x86_64.whl",
                                  "pyvt-0.1.0-cp312-cp312-manylinux2014_aarch64.whl"])
def test_check_aarch64_refuses_what_is_not_a_cp311_aarch64_wheel(tmp_path, name):
    f = tmp_path / name
    f.write_bytes(b"")
    r = _run("tools/cross/check_aarch64.sh", "--wheel", str(f))
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"check_aarch64: {f}: not a cp311 aarch64 wheel of pyvt (the sysroot's Python is 3.11)"]


def test_build_manylinux_names_an_unknown_arch(tmp_path):
    r = _run("tools/wheels/build_manylinux.sh", str(tmp_path / "dist"), env=dict(os.environ, ARCH="riscv64"))
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == ["build_manylinux: ARCH=riscv64: x86_64 or aarch64"]
    assert not (tmp_path / "dist").exists()  # stopped before making anything

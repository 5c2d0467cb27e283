"""libvt under AddressSanitizer + UndefinedBehaviorSanitizer (and LeakSanitizer), and under
valgrind's memcheck: zero reports (docs/reliability.md).

* test_asan_ubsan: a fresh meson build of libvt with -Dsanitize_vt=address_undefined (no
  Python), then `meson test`: the C ABI test, the C example (its self-test, plus the default
  model through VT_TEST_MODEL), the hostile-argument C test and the replay of the fuzz corpus
  and crashers through the C fuzz targets. Any sanitizer report aborts the program.
  ~30-60 s on 2 cores; skipped without meson, ninja or a compiler with -fsanitize=address.
* test_valgrind_memcheck: the C example (self-test, then loading and generating from a model
  folder) and the hostile-argument C test, built against the installed libvt, under
  `valgrind --error-exitcode`; skipped without valgrind (CI does not have it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

import pyvt

import llama_ref as R

ROOT = Path(__file__).resolve().parent.parent
CC = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
REPORTS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:", "SUMMARY: UndefinedBehaviorSanitizer")


def _sanitizers_work(tmp: Path) -> bool:
    if CC is None:
        return False
    src = tmp / "probe.c"
    src.write_text("int main(void) { return 0; }\n")
    r = subprocess.run([CC, "-fsanitize=address,undefined", str(src), "-o", str(tmp / "probe")],
                       capture_output=True)
    return r.returncode == 0 and subprocess.run([str(tmp / "probe")], capture_output=True).returncode == 0


@pytest.mark.slow
def test_asan_ubsan(tmp_path, default_model_dir):
    meson, ninja = shutil.which("meson"), shutil.which("ninja")
    if meson is None or ninja is None:
        pytest.skip("meson / ninja not installed")
    if not _sanitizers_work(tmp_path):
        pytest.skip("no compiler with -fsanitize=address,undefined")
    build = tmp_path / "build"
    nice = ["nice", "-n", "10"] if shutil.which("nice") else []
    setup = subprocess.run([meson, "setup", str(build), str(ROOT), "-Dpython=false", "-Dcuda=disabled",
                            "-Dsanitize_vt=address_undefined", "-Doptimization=1"],
                           capture_output=True, text=True, timeout=300)
    assert setup.returncode == 0, setup.stdout + setup.stderr
    comp = subprocess.run(nice + [meson, "compile", "-C", str(build)], capture_output=True, text=True, timeout=900)
    assert comp.returncode == 0, comp.stdout[-4000:] + comp.stderr[-4000:]
    env = dict(os.environ,
               ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=1:detect_stack_use_after_return=1",
               UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1",
               VT_TEST_MODEL=str(default_model_dir))
    run = subprocess.run([meson, "test", "-C", str(build), "--print-errorlogs", "--timeout-multiplier", "4"],
                         capture_output=True, text=True, timeout=900, env=env)
    log = (build / "meson-logs" / "testlog.txt").read_text(errors="replace")
    assert run.returncode == 0, run.stdout[-6000:] + log[-6000:]
    for name in ("c_abi", "c_example_generate", "c_hostile", "c_files", "cpu_ops", "threadpool",
                 "fuzz_replay_safetensors", "fuzz_replay_config"):
        assert f"pyvt:{name}" in run.stdout, f"meson test did not run {name}:\n{run.stdout}"
    found = [r for r in REPORTS if r in log]
    assert not found, f"sanitizer reports: {found}\n{log[-6000:]}"
    assert " 0 failed" in log


def _build_c(tmp: Path, source: str) -> Path:
    inc, lib = pyvt.get_include(), pyvt.get_library_dir()
    exe = tmp / Path(source).stem
    r = subprocess.run([CC, "-std=c99", "-g", "-O1", "-o", str(exe), str(ROOT / source), f"-I{inc}", f"-L{lib}",
                        f"-Wl,-rpath,{lib}", "-lvt", "-lm"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return exe


@pytest.mark.slow
def test_valgrind_memcheck(tmp_path):
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        pytest.skip("valgrind not installed")
    if CC is None:
        pytest.skip("no C compiler")
    gen = _build_c(tmp_path, "examples/generate.c")
    hostile = _build_c(tmp_path, "tests/c/test_hostile.c")
    model = tmp_path / "tiny"  # loads and generates in milliseconds natively
    R.write_checkpoint(model, R.TinyConfig(), dtype="BF16")
    vg = [valgrind, "--error-exitcode=99", "--leak-check=full", "--errors-for-leak-kinds=definite,indirect",
          "--show-leak-kinds=definite,indirect", "--track-origins=yes", "-q"]
    env = dict(os.environ, TMPDIR=str(tmp_path), VT_NUM_THREADS="2")
    for cmd in ([str(gen), "--self-test"], [str(gen), str(model), "8", "1", "5", "3"], [str(hostile), str(ROOT / "fuzz" / "data")]):
        r = subprocess.run(vg + cmd, capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
        assert r.returncode == 0, f"valgrind {' '.join(cmd)}: exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-6000:]}"
        assert "ERROR SUMMARY" not in r.stderr or "ERROR SUMMARY: 0 errors" in r.stderr, r.stderr[-6000:]

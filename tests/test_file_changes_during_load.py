"""A model file truncated or rewritten by another process while it is being loaded or converted
(issue 20, docs/reliability.md "Files that change while read"): the process survives with an
error naming the file. Before, libvt's and the GGUF reader's memory maps turned the truncation
into SIGBUS, which killed the process.

Each case runs in a subprocess (a regression would kill the process); they take seconds."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import gguf_writer as gw
import textgen_models as TM
from test_convert import make_tiny_llama

TESTS = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory, default_model_dir):
    folder = tmp_path_factory.mktemp("tiny")
    TM.write_random_model(folder, Path(default_model_dir), layers=2)
    return folder


def run_py(code: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    # Outside the repository root (its pyvt/ would shadow the installed package), with the
    # tests folder importable; faulthandler off, so a SIGBUS kills the child plainly.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")])))
    env.pop("PYTHONFAULTHANDLER", None)
    return subprocess.run([sys.executable, "-u", "-c", textwrap.dedent(code)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def check(r: subprocess.CompletedProcess, expect: str) -> None:
    assert r.returncode == 0, f"rc {r.returncode} (signal {-r.returncode} is SIGBUS: {signal.SIGBUS})\n{r.stderr}"
    assert expect in r.stdout, r.stdout + r.stderr


LOAD = """
    import os, shutil, sys, threading
    from pathlib import Path
    import pyvt
    d = Path(shutil.copytree({src!r}, "m"))
    st = d / "model.safetensors"
    os.utime(st, (1, 1))  # an mtime a rewrite is sure to change
    size = st.stat().st_size
    calls = []

    def change():
        {change}

    def progress(done, total):
        if not calls:
            t = threading.Thread(target=change)  # another thread (the process is the same)
            t.start()
            t.join()
        calls.append(done)

    try:
        with pyvt.load_model(d, progress=progress, threads={threads}) as m:
            print("LOADED", pyvt.generate(m, "Hi", max_new_tokens=2, temperature=0).tokens)
    except OSError as e:
        print("ERROR", e)
    # The guard is gone with the load: libvt still works, and loads an intact copy.
    d2 = Path(shutil.copytree({src!r}, "m2"))
    with pyvt.load_model(d2, progress=False) as m:
        print("AGAIN", len(pyvt.generate(m, "Hi", max_new_tokens=2, temperature=0).tokens) == 2)
"""

CHANGES = {
    "truncated to half": "os.truncate(st, size // 2)",
    "truncated to its header": "os.truncate(st, 8 + int.from_bytes(st.read_bytes()[:8], 'little'))",
    "truncated to nothing": "os.truncate(st, 0)",
    "truncated and grown back": "os.truncate(st, 100); os.truncate(st, size)",
    "rewritten in place": (
        "f = open(st, 'r+b'); f.seek(size - 4096); f.write(bytes(4096)); f.close()"
    ),
}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("how", list(CHANGES))
def test_safetensors_changed_during_load(tiny_dir, tmp_path, how, threads):
    r = run_py(LOAD.format(src=str(tiny_dir), change=CHANGES[how], threads=threads), tmp_path)
    check(r, "ERROR ")
    assert "model.safetensors changed or was truncated while it was being loaded" in r.stdout
    assert "AGAIN True" in r.stdout


def test_a_foreign_sigbus_still_kills_after_a_load(tiny_dir, tmp_path):
    """libvt handles SIGBUS only in its own mappings and only while it loads: afterwards a
    truncated mapping of the program's own kills it as it would have without libvt."""
    code = """
        import mmap, os
        import pyvt
        with pyvt.load_model({src!r}, progress=False):
            pass
        with open("f", "wb") as f:
            f.write(bytes(1 << 16))
        with open("f", "rb") as f:
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        os.truncate("f", 0)
        print("READ", mm[1 << 15])
    """.format(src=str(tiny_dir))
    r = run_py(code, tmp_path)
    # Under tools/asan_pytest.sh the handler before libvt's is AddressSanitizer's: it reports.
    asan = "ERROR: AddressSanitizer: BUS" in r.stderr
    assert r.returncode == -signal.SIGBUS or asan, (r.returncode, r.stdout, r.stderr)
    assert "READ" not in r.stdout


@pytest.mark.parametrize("how", ["os.truncate(g, size // 2)", "os.truncate(g, 0)",
                                 "f = open(g, 'r+b'); f.seek(size - 64); f.write(bytes(64)); f.close()"])
def test_gguf_changed_during_conversion(tmp_path, how):
    g = tmp_path / "m.gguf"
    make_tiny_llama(g, qtype=gw.Q8_0)
    os.utime(g, (1, 1))
    code = """
        import os
        from pyvt.convert import convert_gguf
        g = {g!r}
        size = os.path.getsize(g)
        def say(msg):
            if msg.startswith("converting"):
                {how}
        try:
            convert_gguf(g, "out", progress=say)
            print("CONVERTED")
        except ValueError as e:
            print("ERROR", e)
    """.format(g=str(g), how=how)
    r = run_py(code, tmp_path)
    check(r, "ERROR ")
    assert "m.gguf: the GGUF file changed or was truncated while it was being read" in r.stdout


def test_gguf_header_longer_than_the_first_read(tmp_path, monkeypatch):
    """The GGUF header is read in growing pieces (no memory map): one longer than the first
    read parses to the same metadata and tensors."""
    from pyvt import gguf

    g = tmp_path / "m.gguf"
    make_tiny_llama(g, qtype=gw.Q4_0)
    with gguf.GGUFFile(g) as ref:
        meta, tensors = ref.metadata, ref.tensors
        raw = {n: ref.raw(n).tobytes() for n in tensors}
    for first in (24, 100, 4096):
        monkeypatch.setattr(gguf, "_HEADER_READ", first)
        with gguf.GGUFFile(g) as f:
            assert f.tensors == tensors
            assert f.metadata.keys() == meta.keys()
            assert all(str(f.metadata[k]) == str(meta[k]) for k in meta)
            assert {n: f.raw(n).tobytes() for n in tensors} == raw
    with gguf.GGUFFile(g) as f:
        assert not f.raw("token_embd.weight").flags.writeable
        whole = f.raw("token_embd.weight").tobytes()
        assert f.raw("token_embd.weight", 18, 54).tobytes() == whole[18:54]
        with pytest.raises(ValueError, match=r"bytes \[0, \d+\) are outside its"):
            f.raw("token_embd.weight", 0, len(whole) + 1)
    f.close()
    with pytest.raises(ValueError, match="GGUF file is closed"):
        f.raw("token_embd.weight")


def test_truncated_by_a_racing_thread_during_a_real_load(default_model_dir, tmp_path):
    """The default model (SmolLM2-135M, 270 MB of BF16) truncated by a thread that does not
    wait for the loader: once 30% is loaded the thread is told to cut the file, and the load
    goes on meanwhile (the thread pool's copies and prepacks fault wherever they are)."""
    code = """
        import os, shutil, threading
        from pathlib import Path
        import pyvt
        d = Path(shutil.copytree({src!r}, "m"))
        st = d / "model.safetensors"
        half = threading.Event()
        def cut():
            half.wait()
            os.truncate(st, st.stat().st_size // 3)
        t = threading.Thread(target=cut)
        t.start()
        def progress(done, total):
            if done >= 0.3 * total:
                half.set()
        try:
            with pyvt.load_model(d, progress=progress, threads=2):
                print("LOADED")
        except OSError as e:
            print("ERROR", e)
        half.set()
        t.join()
    """.format(src=str(default_model_dir))
    r = run_py(code, tmp_path, timeout=300)
    check(r, "ERROR ")
    assert "model.safetensors changed or was truncated while it was being loaded" in r.stdout

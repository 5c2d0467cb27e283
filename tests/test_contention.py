"""bench/contention.py: the neighbour loads of `bench/decode.py --contention` start, run and
are gone afterwards (no stray busy processes left on a benchmark machine)."""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


@pytest.fixture(scope="module")
def contention():
    spec = importlib.util.spec_from_file_location("contention", BENCH / "contention.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is gone for our purposes
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def test_parse_modes(contention):
    assert contention.parse_modes("none") == ["none"]
    assert contention.parse_modes(" none, busy ,none") == ["none", "busy"]
    assert contention.parse_modes("all") == list(contention.MODES)
    with pytest.raises(ValueError, match=r"unknown contention mode\(s\) \['spinn'\]; known: none, spin"):
        contention.parse_modes("none,spinn")
    with pytest.raises(ValueError, match="unknown contention mode"):
        contention.parse_modes(",")


@pytest.mark.parametrize("mode", ["none", "spin2", "busy"])
def test_neighbours_run_inside_and_are_gone_after(contention, mode):
    if "compile" in contention.MODES[mode] and not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler")
    with contention.Neighbours(mode, settle_s=0.3) as n:
        pids = [p.pid for p in n.procs]
        assert len(pids) == len(contention.MODES[mode])
        assert n.alive() == len(pids)
    assert not any(_alive(p) for p in pids)


def test_neighbours_stop_when_the_block_fails(contention):
    with pytest.raises(KeyError):
        with contention.Neighbours("spin", settle_s=0.1) as n:
            pids = [p.pid for p in n.procs]
            raise KeyError("measurement failed")
    assert not any(_alive(p) for p in pids)


def test_a_neighbour_that_dies_at_once_is_an_error(contention, monkeypatch):
    monkeypatch.setattr(contention, "_SPIN", "raise SystemExit(3)")
    with pytest.raises(RuntimeError, match="a neighbour exited at once"):
        with contention.Neighbours("spin", settle_s=0.5):
            pass


def test_unknown_mode(contention):
    with pytest.raises(ValueError, match="unknown contention mode 'loud'"):
        contention.Neighbours("loud")

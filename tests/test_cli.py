"""The command line, driven end to end by subprocess (`python -m pyvt ...`): streaming
generate, the chat REPL through stdin, info, bench, pull, convert — exit codes, one-line
errors, --help for every command."""

from __future__ import annotations

import json
import os
import shutil
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

    # speculative decoding: the same text, the draft counts in the stats line
    p = run("generate", "-m", model_dir, "--weight-format", "bf16", "--prompt-lookup", "4", PROMPT, cwd=cwd)
    assert p.returncode == 0 and p.stdout == PROMPT + TEXT + "\n", p.stderr
    assert "finish: eos" in p.stderr
    one_line_error(run("generate", "-m", model_dir, "--prompt-lookup", "64", "x", cwd=cwd), 2,
                   "prompt_lookup_num_tokens", "64")
    # serve: refused before the model loads (without the serve extra, that is named first)
    p = run("serve", "-m", model_dir, "--prompt-lookup", "64", cwd=cwd)
    if "pip install" not in p.stderr:
        one_line_error(p, 2, "--prompt-lookup", "64")


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
    assert info["kv_cache"] == "f16"  # the default
    for kv in ("f32", "int8"):
        p = run("info", model_dir, "--json", "--kv-cache", kv, cwd=cwd)
        assert p.returncode == 0 and json.loads(p.stdout)["kv_cache"] == kv, p.stderr


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


def test_pull_prints_the_cached_default_model(cwd, native_model_dir):
    p = run("pull", cwd=cwd)
    assert p.returncode == 0 and p.stdout.strip() == str(native_model_dir)


def test_backends_and_version(cwd):
    p = run("backends", cwd=cwd)
    assert p.returncode == 0 and p.stdout.startswith("cpu:")
    p = run("--version", cwd=cwd)
    assert p.returncode == 0 and p.stdout.strip() == f"pyvt {pyvt.__version__}"


# ---- option values, typos, hints (docs/cli.md "Exit codes and errors") ---------------------------------

@pytest.mark.parametrize("args, words", [
    (["generate", "--device", "tpu", "x"], ["--device", "'tpu'"]),
    (["generate", "--threads", "0", "x"], ["--threads", "'0'"]),
    (["generate", "--block-size", "7", "x"], ["--block-size", "16, 32, 64, 128", "'7'"]),
    (["info", "--num-layers", "-2"], ["--num-layers", "'-2'"]),
    (["bench", "--max-seq-len", "many"], ["--max-seq-len", "'many'"]),
    (["chat", "--device", "cuda:x"], ["--device", "'cuda:x'"]),
    (["generate", "--weight-format", "fp9", "x"], ["--weight-format", "'fp9'", "did you mean fp8?"]),
    (["generate", "--kv-cache", "bf16", "x"], ["--kv-cache", "'bf16'", "f16", "f32"]),
])
def test_invalid_option_values_exit_2(cwd, args, words):
    one_line_error(run(*args, cwd=cwd), 2, f"pyvt {args[0]}: error", *words)


def test_typo_suggests_the_nearest_option_and_does_not_blame_the_prompt(cwd, model_dir):
    for typo in (["--temprature", "0.5"], ["--temprature=0.5"]):
        p = run("generate", "-m", model_dir, *typo, "the prompt", cwd=cwd)
        one_line_error(p, 2, "unrecognized option --temprature", "did you mean --temperature?")
        assert "the prompt" not in p.stderr and "0.5" not in p.stderr
    one_line_error(run("chat", "--sytem", "x", cwd=cwd), 2, "--sytem", "did you mean --system?")
    one_line_error(run("genrate", "x", cwd=cwd), 2, "invalid choice", "did you mean generate?")
    p = run("generate", "-m", model_dir, "--zzzzqqq", "x", cwd=cwd)
    one_line_error(p, 2, "unrecognized option --zzzzqqq")
    assert "did you mean" not in p.stderr
    one_line_error(run("backends", "extra", cwd=cwd), 2, "unrecognized arguments: extra")


CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def test_hints_name_cli_flags_and_the_flags_work(cwd, tmp_path, model_dir, default_model_dir):
    # Context overflow: the hint names --max-new-tokens and --truncate-prompt, which then works.
    long_prompt = " ".join(["word"] * 40)
    p = run("generate", "-m", model_dir, "--max-seq-len", "32", "-n", "8", long_prompt, cwd=cwd)
    one_line_error(p, 1, "--max-new-tokens", "--truncate-prompt")
    assert "truncate_prompt=" not in p.stderr
    p = run("generate", "-m", model_dir, "--max-seq-len", "32", "-n", "8", "--truncate-prompt", "--json",
            long_prompt, cwd=cwd)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["truncated_prompt_tokens"] > 0 and out["prompt_tokens"] + 8 <= 32

    # No tokenizer beside the weights: the hint names --tokenizer, which then works.
    bare = tmp_path / "bare"
    bare.mkdir()
    for f in ("config.json", "model.safetensors"):
        (bare / f).symlink_to(model_dir / f)
    one_line_error(run("info", bare, cwd=cwd), 1, "--tokenizer FILE")
    p = run("info", bare, "--tokenizer", model_dir / "tokenizer.json", "--json", cwd=cwd)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["tokenizer"] == str(model_dir / "tokenizer.json")

    # No chat template: the hint names --chat-template, which then works (a file or the text).
    plain = tmp_path / "notemplate"
    T.write_scripted_model(plain, default_model_dir, T.script_successors(
        [pyvt.Tokenizer(model_dir / "tokenizer.json").encode(REPLY, add_special_tokens=False)]),
        chat_template=False)
    shutil.copy(model_dir / "model.safetensors", plain / "model.safetensors")  # the CLI model's script
    p = run("generate", "-m", plain, "--chat", "hi", cwd=cwd)
    one_line_error(p, 1, "--chat-template FILE")
    assert "chat_template=" not in p.stderr
    tpl = tmp_path / "chatml.jinja"
    tpl.write_text(CHATML)
    for value in (tpl, CHATML):
        p = run("generate", "-m", plain, "--chat", "--chat-template", value, "hi", cwd=cwd)
        assert p.returncode == 0 and p.stdout == REPLY + "\n", p.stderr
    p = run("chat", "-m", plain, "--chat-template", tpl, stdin="hi\n", cwd=cwd)
    assert p.returncode == 0 and p.stdout == REPLY + "\n", p.stderr
    one_line_error(run("chat", "-m", plain, stdin="hi\n", cwd=cwd), 1, "no chat template", "--chat-template")
    one_line_error(run("generate", "-m", plain, "--chat-template", tpl, "hi", cwd=cwd), 2, "--chat")
    one_line_error(run("generate", "-m", plain, "--chat", "--chat-template", tmp_path / "none.jinja", "hi",
                       cwd=cwd), 1, "--chat-template", "none.jinja")


def test_convert_refuses_a_non_empty_folder_without_force(cwd, tmp_path):
    from test_convert import make_tiny_llama

    gguf = tmp_path / "tiny.gguf"
    make_tiny_llama(gguf)
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    one_line_error(run("convert", gguf, out, cwd=cwd), 1, str(out), "not empty", "--force")
    assert sorted(f.name for f in out.iterdir()) == ["notes.txt"]
    p = run("convert", gguf, out, "--force", cwd=cwd)
    assert p.returncode == 0, p.stderr
    assert (out / "model.safetensors").is_file() and (out / "notes.txt").read_text() == "mine"
    one_line_error(run("convert", gguf, out / "notes.txt", cwd=cwd), 1, "not a folder")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run("convert", gguf, empty, cwd=cwd).returncode == 0


# ---- chat: multi-line input, /save and /load, readline ---------------------------------------------

def test_chat_multi_line_messages_and_save_load(cwd, tmp_path, model_dir):
    saved, resaved = tmp_path / "conv.json", tmp_path / "conv2.json"
    script = "\n".join([
        "first line \\",
        "second line",
        '"""',
        "in a block",
        "/not a command",
        '"""',
        '"""one-line block"""',
        f"/save {saved}",
    ]) + "\n"
    p = run("chat", "-m", model_dir, "--system", "Be nice.", stdin=script, cwd=cwd)
    assert p.returncode == 0, p.stderr
    assert p.stdout == (REPLY + "\n") * 3 and "unknown command" not in p.stderr
    msgs = json.loads(saved.read_text(encoding="utf-8"))
    assert [m["role"] for m in msgs] == ["system", "user", "assistant"] * 1 + ["user", "assistant"] * 2
    assert [m["content"] for m in msgs if m["role"] == "user"] == [
        "first line \nsecond line", "in a block\n/not a command", "one-line block"]
    assert msgs[0]["content"] == "Be nice." and msgs[2]["content"] == REPLY

    # /load restores the conversation and its system message; the next turn continues it.
    p = run("chat", "-m", model_dir, stdin=f"/load {saved}\n/stats\nmore\n/save {resaved}\n", cwd=cwd)
    assert p.returncode == 0, p.stderr
    assert "(loaded 6 messages and a system message)" in p.stderr
    again = json.loads(resaved.read_text(encoding="utf-8"))
    assert again[:8] == msgs + [{"role": "user", "content": "more"}] and len(again) == 9

    # Clear one-line errors; the REPL goes on.
    bad_json, bad_roles = tmp_path / "bad.json", tmp_path / "roles.json"
    bad_json.write_text("[{")
    bad_roles.write_text(json.dumps([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]))
    script = "\n".join([f"/load {tmp_path / 'missing.json'}", f"/load {bad_json}", f"/load {bad_roles}",
                        "/load", "/save", f"/save {tmp_path / 'no' / 'dir.json'}", "hi"]) + "\n"
    p = run("chat", "-m", model_dir, stdin=script, cwd=cwd)
    assert p.returncode == 0 and p.stdout == REPLY + "\n", p.stderr
    for words in (["missing.json", "no such file"], ["bad.json", "not JSON"],
                  ["roles.json", "message 1 is a user message where a assistant message belongs"],
                  ["/load needs a FILE"], ["/save needs a FILE"], ["dir.json", "No such file"]):
        assert any(all(w in ln for w in words) and ln.startswith("error: ") for ln in p.stderr.splitlines()), \
            (words, p.stderr)


def test_chat_unterminated_block_is_not_sent(cwd, model_dir):
    p = run("chat", "-m", model_dir, stdin='hi\n"""\nnever\nsent\n', cwd=cwd)
    assert p.returncode == 0 and p.stdout == REPLY + "\n"
    assert 'ended inside a """ message' in p.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pty test written for Linux")
def test_chat_on_a_terminal_has_line_editing_and_history(tmp_path, model_dir):
    """Up arrow recalls the previous message (readline), instead of sending `^[[A`."""
    import pty
    import select
    import time

    pytest.importorskip("readline")
    master, slave = pty.openpty()
    env = dict(os.environ, PYTHONIOENCODING="utf-8", PYVT_CACHE=str(tmp_path / "cache"), TERM="xterm")
    proc = subprocess.Popen([sys.executable, "-m", "pyvt", "chat", "-m", str(model_dir)], stdin=slave,
                            stdout=slave, stderr=slave, env=env, cwd=tmp_path, close_fds=True)
    os.close(slave)
    seen = b""

    def wait_for(count: int, what: bytes = b">>> ", timeout: float = 120) -> None:
        nonlocal seen
        end = time.monotonic() + timeout
        while seen.count(what) < count:
            assert time.monotonic() < end, f"timed out waiting for {what!r}; got {seen!r}"
            if select.select([master], [], [], 0.5)[0]:
                try:
                    seen += os.read(master, 65536)
                except OSError:
                    break

    try:
        wait_for(1)
        os.write(master, b"hello\r")
        wait_for(2)
        os.write(master, b"\x1b[A\r")        # Up arrow, Enter: "hello" again
        wait_for(3)
        os.write(master, b"/exit\r")
        proc.wait(timeout=60)
        wait_for(1, b"")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    text = seen.decode("utf-8", "replace")
    assert proc.returncode == 0, text
    assert text.count(REPLY.strip()) == 2 and "^[[A" not in text, text
    assert "hello" in (tmp_path / "cache" / "chat_history").read_text()


# ---- generate: stdout's reader going away ----------------------------------------------------------

def test_generate_into_a_closed_pipe_exits_0(cwd, model_dir):
    r, w = os.pipe()
    os.close(r)  # the reader is gone before anything is written
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    p = subprocess.run([sys.executable, "-m", "pyvt", "generate", "-m", str(model_dir), PROMPT], stdout=w,
                       stderr=subprocess.PIPE, text=True, env=env, cwd=cwd, timeout=180)
    os.close(w)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr


# ---- the remaining promises of docs/cli.md -------------------------------------------------------------

def test_generation_and_loading_options_reach_the_run(cwd, model_dir):
    p = run("generate", "-m", model_dir, "--json", "--seed", "random", "-t", "0.7", "--top-k", "5", "--top-p", "0.9",
            "--min-p", "0.01", "--repetition-penalty", "1.1", "--frequency-penalty", "0.1", "--presence-penalty",
            "0.1", "-n", "4", PROMPT, cwd=cwd)
    assert p.returncode == 0, p.stderr
    assert isinstance(json.loads(p.stdout)["seed"], int)                  # the seed used is reported
    p = run("generate", "-m", model_dir, "--ignore-eos", "-n", "30", "--no-prompt", PROMPT, cwd=cwd)
    assert p.returncode == 0 and "finish: length" in p.stderr and "generated 30 tokens" in p.stderr
    p = run("info", model_dir, "--json", "--block-size", "64", "--num-layers", "1", "--device", "cpu",
            "--threads", "1", "--max-seq-len", "100", cwd=cwd)
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout)
    assert (info["block_size"], info["num_layers"], info["device"], info["max_seq_len"]) == (64, 1, "cpu", 100)
    p = run("-v", "info", model_dir, cwd=cwd)
    assert p.returncode == 0 and "pyvt: INFO: loaded" in p.stderr


def test_chat_help_leaving_and_context_overflow(cwd, model_dir):
    for leave in ("/quit", "/bye", "/EXIT"):
        p = run("chat", "-m", model_dir, stdin=f"/help\n{leave}\nhello\n", cwd=cwd)
        assert p.returncode == 0 and "/save FILE" in p.stdout and REPLY not in p.stdout, (leave, p.stderr)
    # Replies are capped at 256 tokens by default; a history beyond the context is an error line.
    p = run("chat", "-m", model_dir, "--max-seq-len", "260", stdin="hello\n", cwd=cwd)
    assert p.returncode == 0 and p.stdout == "", p.stderr
    assert "/set max_new_tokens N" in p.stderr and "/set truncate_prompt on" in p.stderr and "/clear" in p.stderr
    p = run("chat", "-m", model_dir, "--max-seq-len", "100", "-n", "20", stdin="hello\n" * 6 + "/clear\nhello\n",
            cwd=cwd)
    assert p.returncode == 0, p.stderr
    errors = [ln for ln in p.stderr.splitlines() if ln.startswith("error: ")]
    assert errors and all("context" in ln and "(/clear to start over)" in ln for ln in errors), p.stderr
    assert p.stdout.count(REPLY) == 6 - len(errors) + 1  # the replies that fitted, and one after /clear


def _wait_for_line(proc: subprocess.Popen, text: str, timeout: float = 120) -> str:
    import select
    import time

    seen = ""
    end = time.monotonic() + timeout
    while text not in seen:
        assert time.monotonic() < end and proc.poll() is None, seen
        if select.select([proc.stderr], [], [], 0.5)[0]:
            seen += os.read(proc.stderr.fileno(), 65536).decode("utf-8", "replace")
    return seen


def _sigint_default() -> None:
    """In the child before exec: Ctrl-C as a terminal delivers it. A test run started in the
    background of a non-interactive shell (`pytest &`) inherits SIGINT ignored, and Python
    then installs no KeyboardInterrupt handler: the child would never see the Ctrl-C."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_exits_130_and_reminds_at_the_chat_prompt(cwd, model_dir):
    import signal
    import time

    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    # bench decoding many runs: Ctrl-C stops it with 130 and one line.
    proc = subprocess.Popen([sys.executable, "-m", "pyvt", "-v", "bench", str(model_dir), "-p", "8", "-n", "200",
                             "-r", "100000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                            env=dict(env, PYTHONFAULTHANDLER="1"), preexec_fn=_sigint_default)
    try:
        _wait_for_line(proc, "INFO: loaded")
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            # Where it is stuck: faulthandler prints every thread's Python stack on SIGABRT.
            proc.send_signal(signal.SIGABRT)
            _, err = proc.communicate(timeout=60)
            pytest.fail("pyvt bench ignored Ctrl-C for 120 s; its stacks:\n" + err.decode(errors="replace")[-6000:])
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for f in (proc.stdout, proc.stderr):
            f.close()
    assert proc.returncode == 130 and "pyvt: interrupted" in err.decode() and "Traceback" not in err.decode()

    # chat waiting for a line: Ctrl-C reminds how to leave, and the REPL goes on.
    proc = subprocess.Popen([sys.executable, "-m", "pyvt", "-v", "chat", "-m", str(model_dir)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=env,
                            preexec_fn=_sigint_default)
    try:
        _wait_for_line(proc, "INFO: loaded")
        time.sleep(1)  # into input()
        proc.send_signal(signal.SIGINT)
        _wait_for_line(proc, "(/exit or Ctrl-D to leave)")
        out, _ = proc.communicate(b"hello\n", timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0 and out.decode() == REPLY + "\n"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_swallowed_ctrl_c_still_stops_the_bench_loop():
    """The latch around `pyvt bench`'s runs: a SIGINT raises KeyboardInterrupt as usual, and
    when something on the way drops that exception the next check() raises it again."""
    import signal

    from pyvt.cli import _SigintLatch

    # Python's own handler, as in an interactive run: a background `pytest &` inherits SIGINT
    # ignored, and the latch (rightly) leaves a handler that is not Python's alone.
    outer = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with _SigintLatch() as latch:
            latch.check()  # nothing yet
            try:
                os.kill(os.getpid(), signal.SIGINT)
                for _ in range(1000):  # the handler runs at the next bytecode boundary
                    pass
            except KeyboardInterrupt:
                pass  # a library that loses the exception
            with pytest.raises(KeyboardInterrupt):
                latch.check()
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, outer)

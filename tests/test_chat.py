"""Chat (SPEC §10): templates rendered exactly as transformers renders them (golden data from
tools/make_chat_golden.py), dialog validation, chat / chat_stream / chat_completion on a
scripted tiny model and on the real default model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import pyvt
from pyvt import GenerateOpts, chat, chat_completion, chat_stream
from pyvt.chat import apply_chat_template, render_chat_template, validate_dialog

import textgen_models as T

GOLDEN = json.loads((Path(__file__).parent / "data" / "chat_golden.json").read_text(encoding="utf-8"))
REPLY = " Sure thing: Paris is lovely."


@pytest.fixture(scope="module")
def tok(default_model_dir):
    return pyvt.Tokenizer(default_model_dir / "tokenizer.json")


@pytest.fixture(scope="module")
def scripted(tmp_path_factory, default_model_dir, tok):
    """Answers REPLY then <|im_end|> after any ChatML generation prompt ("assistant\\n")."""
    folder = tmp_path_factory.mktemp("chatmodel")
    reply = tok.encode(REPLY, add_special_tokens=False)
    T.write_scripted_model(folder, default_model_dir, T.script_successors([[198] + reply]))
    with pyvt.load_model(folder, weight_format="bf16") as m:
        yield m


@pytest.fixture(scope="module")
def real(default_model_dir):
    with pyvt.load_model(default_model_dir) as m:
        yield m


# ---- rendering: golden strings from transformers --------------------------------------------

@pytest.mark.parametrize("case", GOLDEN["cases"], ids=lambda c: f"{c['template']}-{c['dialog']}-"
                         f"{'gen' if c['add_generation_prompt'] else 'nogen'}")
def test_rendering_matches_transformers(case, tok):
    msgs = GOLDEN["dialogs"][case["dialog"]]
    if case["template"] == "default_model":
        # The model's own template, found in tokenizer_config.json, with its special tokens.
        text = apply_chat_template(tok, msgs, add_generation_prompt=case["add_generation_prompt"])
        assert text == case["text"]
        ids = apply_chat_template(tok, msgs, add_generation_prompt=case["add_generation_prompt"], tokenize=True)
        assert ids == case["ids"]
    else:
        text = render_chat_template(GOLDEN["templates"][case["template"]], msgs,
                                    add_generation_prompt=case["add_generation_prompt"], **case["variables"])
        assert text == case["text"]


def test_default_model_template_is_in_golden(tok):
    assert tok.chat_template == GOLDEN["templates"]["default_model"]


def test_template_from_chat_template_jinja(tmp_path, default_model_dir, tok):
    folder = tmp_path / "m"
    T.copy_tokenizer(default_model_dir, folder, chat_template=False)
    t = pyvt.Tokenizer(folder / "tokenizer.json")
    msgs = GOLDEN["dialogs"]["multi_turn"]
    with pytest.raises(ValueError, match="no chat template"):
        apply_chat_template(t, msgs)
    (folder / "chat_template.jinja").write_text(GOLDEN["templates"]["llama3"], encoding="utf-8")
    t = pyvt.Tokenizer(folder / "tokenizer.json")
    want = render_chat_template(GOLDEN["templates"]["llama3"], msgs, bos_token="<|im_start|>",
                                eos_token="<|im_end|>", unk_token="<|endoftext|>", pad_token="<|im_end|>")
    assert apply_chat_template(t, msgs) == want


def test_named_template_list_and_override(tmp_path, default_model_dir):
    folder = tmp_path / "m"
    T.copy_tokenizer(default_model_dir, folder)
    cfg = json.loads((folder / "tokenizer_config.json").read_text())
    cfg["chat_template"] = [{"name": "tool_use", "template": "TOOLS"},
                            {"name": "default", "template": "{{ messages[0]['content'] }}!"}]
    (folder / "tokenizer_config.json").write_text(json.dumps(cfg))
    t = pyvt.Tokenizer(folder / "tokenizer.json")
    msgs = [{"role": "user", "content": "hey"}]
    assert apply_chat_template(t, msgs) == "hey!"
    assert apply_chat_template(t, msgs, chat_template="<{{ bos_token }}>") == "<<|im_start|>>"


def test_template_errors_are_value_errors():
    msgs = [{"role": "user", "content": "x"}]
    with pytest.raises(ValueError, match="chat template error: nope"):
        render_chat_template("{{ raise_exception('nope') }}", msgs)
    with pytest.raises(ValueError, match="syntax error"):
        render_chat_template("{% for %}", msgs)
    # The sandbox refuses attribute tricks.
    with pytest.raises(ValueError, match="chat template error"):
        render_chat_template("{{ messages.__class__.__mro__ }}{{ ''.__class__.__subclasses__() }}", msgs)


def test_template_globals():
    msgs = [{"role": "user", "content": "ü"}]
    out = render_chat_template("{{ messages | tojson }}|{{ strftime_now('%Y') | length }}"
                               "{% for m in messages %}{% break %}{% endfor %}", msgs)
    assert out == '[{"role": "user", "content": "ü"}]|4'


# ---- validation -------------------------------------------------------------------------------

@pytest.mark.parametrize("messages, match", [
    ([], "messages is empty"),
    ("hello", "must be a list"),
    ([{"role": "user", "content": "a"}, "b"], r"messages\[1\] must be a dict"),
    ([{"role": "robot", "content": "a"}], r"messages\[0\] has role 'robot'"),
    ([{"role": "user"}], r"messages\[0\] \(user\) content must be a str"),
    ([{"role": "user", "content": 3}], r"messages\[0\] \(user\) content must be a str, got int"),
    ([{"role": "user", "content": "a"}, {"role": "system", "content": "s"}, {"role": "user", "content": "b"}],
     r"messages\[1\] is a system message; only the first"),
    ([{"role": "assistant", "content": "a"}, {"role": "user", "content": "b"}],
     r"messages\[0\] has role 'assistant' but a 'user' message must come at the start"),
    ([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
     r"messages\[1\] has role 'user' but a 'assistant' message must come after the user message messages\[0\]"),
    ([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}],
     r"messages\[1\] is a assistant message; the dialog must end with a user message"),
    ([{"role": "system", "content": "s"}], r"messages\[0\] is a system message; the dialog must end"),
])
def test_invalid_dialogs_name_the_message(messages, match):
    with pytest.raises(ValueError, match=match):
        validate_dialog(messages)


def test_valid_dialog_drops_none_values():
    out = validate_dialog([{"role": "system", "content": "s", "name": None}, {"role": "user", "content": "u"}])
    assert out == [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]


# ---- chat generation ----------------------------------------------------------------------------

def test_chat_on_scripted_model(scripted):
    msgs = [{"role": "user", "content": "Tell me about Paris"}]
    r = chat(scripted, msgs, max_new_tokens=40)
    assert r.text == REPLY and r.finish_reason == "eos" and r.tokens[-1] == T.EOS
    assert r.message == {"role": "assistant", "content": REPLY}
    assert r.prompt_tokens == len(apply_chat_template(scripted, msgs, tokenize=True))
    s = chat_stream(scripted, msgs, GenerateOpts(max_new_tokens=40))
    assert "".join(p.text for p in s) == REPLY and s.result is not None and s.result.tokens == r.tokens
    # A stop string inside the reply, and the conversation continued with the reply.
    r2 = chat(scripted, msgs, max_new_tokens=40, stop=["is lovely"])
    assert r2.text == " Sure thing: Paris " and r2.finish_reason == "stop"
    r3 = chat(scripted, msgs + [r.message, {"role": "user", "content": "More?"}], max_new_tokens=40)
    assert r3.text == REPLY


def test_chat_completion_batch_equals_serial(scripted):
    dialogs = [[{"role": "user", "content": "a"}],
               [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "b"}],
               [{"role": "user", "content": "c"}, {"role": "assistant", "content": "d"},
                {"role": "user", "content": "e"}]]
    batch = chat_completion(scripted, dialogs, max_new_tokens=12, max_batch_size=2)
    serial = [chat(scripted, d, max_new_tokens=12) for d in dialogs]
    assert [(r.tokens, r.text, r.finish_reason) for r in batch] == \
        [(r.tokens, r.text, r.finish_reason) for r in serial]
    assert chat_completion(scripted, []) == []


def test_chat_completion_errors_name_the_dialog(scripted):
    good = [{"role": "user", "content": "a"}]
    with pytest.raises(ValueError, match=r"dialogs\[1\]: messages\[0\] has role 'bot'"):
        chat_completion(scripted, [good, [{"role": "bot", "content": "x"}]])
    with pytest.raises(TypeError, match="single dialog"):
        chat_completion(scripted, good)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_batch_size"):
        chat_completion(scripted, [good], max_batch_size=0)


def test_model_without_template(tmp_path, default_model_dir, tok):
    folder = tmp_path / "m"
    T.write_scripted_model(folder, default_model_dir, {1: 2}, chat_template=False)
    with pyvt.load_model(folder, weight_format="bf16") as m:
        assert m.chat_template is None
        with pytest.raises(ValueError, match="has no chat template.*chat_template="):
            chat(m, [{"role": "user", "content": "hi"}])
        # An explicit template works.
        r = chat(m, [{"role": "user", "content": "hi"}], chat_template="{{ messages[0].content }}",
                 max_new_tokens=2)
        assert r.prompt_tokens == len(tok.encode("hi", add_special_tokens=False))


def test_chat_on_the_default_model(real):
    r = chat(real, [{"role": "user", "content": "What is the capital of France?"}], max_new_tokens=24)
    assert "Paris" in r.text and r.finish_reason in ("eos", "length")

"""The public LLM API on the real default model (SmolLM2-135M-Instruct): options and their
validation, results, EOS, determinism, threads, errors — SPEC §3, §4, §9."""

from __future__ import annotations

import dataclasses
import threading

import numpy as np
import pytest

import pyvt
from pyvt import GenerateOpts, default_generate_opts, generate, load_model


@pytest.fixture(scope="module")
def model(default_model_dir):
    with load_model(default_model_dir) as m:
        yield m


# ---- options ---------------------------------------------------------------------------

def test_default_opts_match_spec():
    o = default_generate_opts()
    assert (o.max_new_tokens, o.temperature, o.top_k, o.top_p, o.seed, o.stop_on_eos) == \
        (50, 0.0, None, 1.0, 42, True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.temperature = 1.0  # type: ignore[misc]


@pytest.mark.parametrize("field, value", [
    ("temperature", -0.1), ("temperature", float("nan")), ("top_p", 0.0), ("top_p", 1.5),
    ("top_k", 0), ("top_k", -3), ("max_new_tokens", -1), ("max_new_tokens", 2.5),
    ("seed", -1), ("stop_on_eos", "yes"),
])
def test_invalid_opts_name_field_and_value(field, value):
    with pytest.raises(ValueError) as e:
        GenerateOpts(**{field: value})
    assert field in str(e.value) and repr(value) in str(e.value)


def test_unknown_override_is_an_error(model):
    with pytest.raises(ValueError, match="unknown generate option"):
        generate(model, "Hi", max_tokens=3)


# ---- results ---------------------------------------------------------------------------

def test_generate_result_fields(model):
    r = generate(model, "The capital of France is", max_new_tokens=8, stop_on_eos=False)
    assert isinstance(r, pyvt.GenerateResult)
    assert len(r.tokens) == 8 and r.finish_reason == "length"
    assert r.prompt_tokens == len(model.encode("The capital of France is"))
    assert r.total_tokens == r.prompt_tokens + 8
    assert r.text == model.decode(r.tokens)
    assert r.prefill_ms > 0 and r.ms_per_token > 0
    assert r.time_to_first_token_ms >= r.prefill_ms
    assert "Paris" in r.text


def test_greedy_is_deterministic_and_matches_ids_prompt(model):
    a = generate(model, "Once upon a time", max_new_tokens=12)
    b = generate(model, "Once upon a time", max_new_tokens=12)
    c = generate(model, model.encode("Once upon a time"), max_new_tokens=12)
    assert a.tokens == b.tokens == c.tokens


def test_sampling_seeded(model):
    o = GenerateOpts(max_new_tokens=16, temperature=0.9, top_p=0.95, seed=7, stop_on_eos=False)
    a, b = generate(model, "My favourite food is", o), generate(model, "My favourite food is", o)
    assert a.tokens == b.tokens
    others = {generate(model, "My favourite food is", o.replace(seed=s)).tokens for s in range(8, 12)}
    assert len(others | {a.tokens}) > 1


def test_zero_new_tokens(model):
    r = generate(model, "Hello", max_new_tokens=0)
    assert r.tokens == () and r.text == "" and r.finish_reason == "length"


def test_eos_stops(model):
    # A chat turn ends with <|im_end|>; greedy decoding of a short answer reaches it.
    prompt = "<|im_start|>user\nSay hi.<|im_end|>\n<|im_start|>assistant\n"
    r = generate(model, prompt, max_new_tokens=64)
    assert r.finish_reason == "eos"
    assert r.tokens[-1] in model.eos_token_ids
    assert len(r.tokens) < 64
    r2 = generate(model, prompt, max_new_tokens=len(r.tokens) + 5, stop_on_eos=False)
    assert len(r2.tokens) == len(r.tokens) + 5 and r2.finish_reason == "length"


def test_threads_share_one_handle(model):
    prompts = ["The sky is", "def fib(n):", "Water boils at", "Hello, my name is"]
    serial = [generate(model, p, max_new_tokens=10).tokens for p in prompts]
    results: dict[int, tuple] = {}

    def work(i):
        results[i] = generate(model, prompts[i], max_new_tokens=10).tokens

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert [results[i] for i in range(4)] == serial


def test_logits_match_generation(model):
    ids = model.encode("The quick brown fox")
    r = generate(model, ids, max_new_tokens=4, stop_on_eos=False)
    lg = model.logits(ids + list(r.tokens[:-1]))
    assert lg.shape == (len(ids) + 3, model.info["vocab_size"]) and lg.dtype == np.float32
    assert [int(i) for i in lg[len(ids) - 1:].argmax(axis=1)] == list(r.tokens)


# ---- errors ----------------------------------------------------------------------------

def test_prompt_too_long(model):
    ids = [1] * (model.max_seq_len - 3)
    with pytest.raises(ValueError, match=r"max_new_tokens \(50\).*max_seq_len"):
        generate(model, ids)


@pytest.mark.parametrize("prompt, match", [
    ([], "prompt is empty"), ([1, -5], r"prompt\[1\] = -5"), ([10**9], "outside the vocabulary"),
])
def test_bad_prompt_ids(model, prompt, match):
    with pytest.raises(ValueError, match=match):
        generate(model, prompt)


def test_load_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope"):
        load_model(tmp_path / "nope")
    with pytest.raises(ValueError, match="weight_format"):
        load_model(tmp_path, weight_format="int3")
    with pytest.raises(ValueError, match="device"):
        load_model(tmp_path, device="tpu")


def test_closed_handle(default_model_dir):
    m = load_model(default_model_dir, num_layers=2)
    m.close()
    assert m.closed
    with pytest.raises(RuntimeError, match="closed"):
        generate(m, "Hi", max_new_tokens=2)
    m.close()  # idempotent

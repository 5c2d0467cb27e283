"""Generation features (SPEC §10): streaming (UTF-8-safe, stops work when the consumer stops),
stop strings, penalties, min-p, seeds, logprobs / echo against the float64 reference,
context overflow, batches — on tiny models with the real tokenizer and on the default model."""

from __future__ import annotations

import gc
import json
import logging
import math

import numpy as np
import pytest

import pyvt
from pyvt import GenerateOpts, generate, stream, text_completion
from pyvt.stream import IncrementalDecoder, StopMatcher

import llama_ref as R
import textgen_models as T

UTF8_PROMPT, UTF8_TEXT = "Say hi!", " Hi 😀 你好 🎉 ok"
STOP_PROMPT, STOP_TEXT = "Question:", " The answer is x42. Done"


@pytest.fixture(scope="module")
def tok(default_model_dir):
    return pyvt.Tokenizer(default_model_dir / "tokenizer.json")


@pytest.fixture(scope="module")
def scripted(tmp_path_factory, default_model_dir, tok):
    """Greedy generation recites UTF8_TEXT after UTF8_PROMPT, STOP_TEXT after STOP_PROMPT."""
    def ids(s):
        return tok.encode(s, add_special_tokens=False)

    seqs = [ids(UTF8_PROMPT)[-1:] + ids(UTF8_TEXT), ids(STOP_PROMPT)[-1:] + ids(STOP_TEXT)]
    folder = tmp_path_factory.mktemp("scripted")
    T.write_scripted_model(folder, default_model_dir, T.script_successors(seqs), max_pos=512)
    with pyvt.load_model(folder, weight_format="bf16") as m:
        yield m


@pytest.fixture(scope="module")
def rand(tmp_path_factory, default_model_dir):
    """(model, config, weights as computed) of a random tiny Llama, bf16 mode, f32 KV cache
    (logprobs are checked against exact float64 math)."""
    folder = tmp_path_factory.mktemp("random")
    cfg, w = T.write_random_model(folder, default_model_dir)
    with pyvt.load_model(folder, weight_format="bf16", kv_cache="f32") as m:
        yield m, cfg, w


@pytest.fixture(scope="module")
def real(default_model_dir):
    with pyvt.load_model(default_model_dir) as m:
        yield m


def log_softmax(z):
    z = np.asarray(z, np.float64)
    m = z.max(axis=-1, keepdims=True)
    return z - (m + np.log(np.exp(z - m).sum(axis=-1, keepdims=True)))


# ---- the text pipeline alone ----------------------------------------------------------------------

@pytest.mark.parametrize("text", ["Hi 😀 你好 🎉 ok", "naïve café — ünïcödé", "日本語のテキストです。",
                                  "👨‍👩‍👧 family 🇫🇷", "plain ascii"])
def test_incremental_decoder_never_splits_a_character(tok, text):
    ids = tok.encode(text, add_special_tokens=False)
    dec = IncrementalDecoder(tok, tok.encode("Prompt:", add_special_tokens=False))
    deltas = [dec.push(i) for i in ids] + [dec.flush()]
    assert "".join(deltas) == tok.decode(ids) == text
    assert not any("\ufffd" in d for d in deltas)
    if any(ord(c) > 0x7FF for c in text):
        assert "" in deltas[:-1]  # something was held back until its character completed


def test_incremental_decoder_flushes_an_incomplete_tail(tok):
    ids = tok.encode("😀", add_special_tokens=False)
    assert len(ids) > 1
    dec = IncrementalDecoder(tok)
    assert [dec.push(i) for i in ids[:-1]] == [""] * (len(ids) - 1)
    assert dec.flush() == "\ufffd" * len(tok.decode(ids[:-1]))


def test_stop_matcher_holds_back_partial_matches():
    m = StopMatcher(["o w", "###"])
    assert m.feed("Hel") == ("Hel", None)
    assert m.feed("lo") == ("l", None)          # "o" could start "o w"
    assert m.feed(" wor") == ("", "o w")        # "Hello w": cut before "o w"
    assert m.feed("more") == ("", "o w") and m.flush() == ""
    m = StopMatcher(["###"])
    assert m.feed("a#") == ("a", None) and m.feed("#") == ("", None) and m.feed("b") == ("##b", None)
    assert m.feed("##") == ("", None) and m.flush() == "##"
    m = StopMatcher(["bc", "abcd", "x"])  # earliest occurrence wins
    assert m.feed("zabcdx") == ("z", "abcd")
    assert StopMatcher().feed("anything") == ("anything", None)


# ---- stream == generate -----------------------------------------------------------------------------

def test_stream_equals_generate_on_the_default_model(real):
    for opts in (GenerateOpts(max_new_tokens=10),
                 GenerateOpts(max_new_tokens=10, temperature=0.8, top_p=0.9, seed=3, stop_on_eos=False)):
        r = generate(real, "The capital of France is", opts)
        pieces = list(stream(real, "The capital of France is", opts))
        res = pieces[-1].result
        assert res is not None and pieces[-1].token is None
        assert [p.token for p in pieces[:-1]] == list(r.tokens) == list(res.tokens)
        assert "".join(p.text for p in pieces) == r.text == res.text == real.decode(r.tokens)
        assert all(p.result is None for p in pieces[:-1]) and res.finish_reason == r.finish_reason


def test_utf8_streaming(scripted):
    s = stream(scripted, UTF8_PROMPT, max_new_tokens=30)
    pieces = list(s)
    assert "".join(p.text for p in pieces) == UTF8_TEXT == s.text
    assert not any("\ufffd" in p.text for p in pieces)
    assert any(p.text == "" for p in pieces[:-2])  # held back while an emoji / CJK char was split
    assert s.result is not None and s.result.finish_reason == "eos" and s.result.text == UTF8_TEXT


@pytest.mark.parametrize("stops, text, matched", [
    (["42."], " The answer is x", "42."),             # across "4", "2", "."
    (["is x4"], " The answer ", "is x4"),
    (["answer", "The"], " ", "The"),                  # the earliest occurrence wins
    ("swer is x42. D", " The an", "swer is x42. D"),  # a single str, many tokens
    (["Done!", "zzz"], STOP_TEXT, None),              # a prefix of a stop string at the end is released
])
def test_stop_strings(scripted, stops, text, matched):
    r = generate(scripted, STOP_PROMPT, max_new_tokens=30, stop=stops)
    pieces = list(stream(scripted, STOP_PROMPT, max_new_tokens=30, stop=stops))
    assert r.text == text == "".join(p.text for p in pieces)
    assert r.finish_reason == ("stop" if matched else "eos") and r.stop_sequence == matched
    if matched:
        # Nothing of the stop string was ever shown, and generation ended where it completed.
        assert all(matched not in p.text for p in pieces)
        assert scripted.decode(r.tokens).startswith(text + matched)
        assert not scripted.decode(r.tokens[:-1]).startswith(text + matched)


def test_stop_string_and_length(scripted):
    r = generate(scripted, STOP_PROMPT, max_new_tokens=4, stop=["Done"])
    assert r.finish_reason == "length" and r.text == scripted.decode(r.tokens)


def test_breaking_out_frees_the_session_at_once(scripted):
    s = stream(scripted, UTF8_PROMPT, max_new_tokens=30)
    assert s._run.sessions[0] is None  # nothing allocated before the first piece
    first = next(s)
    sess = s._run.sessions[0]
    assert first.token is not None and not sess.closed
    s.close()
    assert sess.closed and s.result is None
    with pytest.raises(StopIteration):
        next(s)
    sess = None
    for _ in (st := stream(scripted, UTF8_PROMPT, max_new_tokens=30)):
        sess = st._run.sessions[0]
        break
    del st
    assert sess is not None and sess.closed
    with stream(scripted, UTF8_PROMPT, max_new_tokens=30) as s2:
        next(s2)
        sess = s2._run.sessions[0]
    assert sess.closed


def test_errors_raise_when_stream_is_called(scripted):
    with pytest.raises(ValueError, match="temperature"):
        stream(scripted, "x", temperature=-1)
    with pytest.raises(ValueError, match="prompt is empty"):
        stream(scripted, [])
    with pytest.raises(TypeError, match="ModelHandle"):
        stream("model", "x")  # type: ignore[arg-type]


# ---- options -------------------------------------------------------------------------------------------

def test_new_defaults_are_off():
    o = pyvt.default_generate_opts()
    assert (o.stop, o.repetition_penalty, o.frequency_penalty, o.presence_penalty, o.min_p) == ((), 1.0, 0.0, 0.0, 0.0)
    assert (o.logprobs, o.top_logprobs, o.echo, o.truncate_prompt) == (False, 0, False, False)
    assert GenerateOpts(stop="a").stop == ("a",) and GenerateOpts(stop=["a", "b"]).stop == ("a", "b")
    hash(GenerateOpts(stop=["a"]))  # still a frozen, hashable value


@pytest.mark.parametrize("field, value", [
    ("stop", [""]), ("stop", 5), ("stop", ["ok", 3]),
    ("repetition_penalty", 0.0), ("repetition_penalty", -1.0), ("repetition_penalty", float("nan")),
    ("frequency_penalty", float("inf")), ("presence_penalty", "1"), ("min_p", 1.5), ("min_p", -0.1),
    ("top_logprobs", -1), ("top_logprobs", 21), ("top_logprobs", 1.5), ("logprobs", "yes"), ("echo", 1),
    ("truncate_prompt", "no"), ("seed", -1), ("seed", 2**64), ("seed", 1.0),
])
def test_invalid_new_options(field, value):
    with pytest.raises(ValueError) as e:
        GenerateOpts(**{field: value})
    assert field in str(e.value) and repr(value) in str(e.value)


def test_seed_none_is_random_and_reported(rand):
    m, _, _ = rand
    o = GenerateOpts(max_new_tokens=12, temperature=1.0, seed=None, stop_on_eos=False)
    a, b = generate(m, [1, 5, 9], o), generate(m, [1, 5, 9], o)
    assert isinstance(a.seed, int) and a.seed != b.seed
    again = generate(m, [1, 5, 9], o.replace(seed=a.seed))
    assert again.tokens == a.tokens and again.seed == a.seed
    assert generate(m, [1, 5, 9], max_new_tokens=2).seed == 42


def test_context_overflow(scripted):
    ids = [1] + [7] * 499
    with pytest.raises(ValueError, match=r"prompt \(500 tokens\) \+ max_new_tokens \(50\) exceeds the model's "
                                         r"context \(max_seq_len=512\).*truncate_prompt=True"):
        generate(scripted, ids)
    r = generate(scripted, ids, max_new_tokens=50, truncate_prompt=True, echo=True)
    assert r.prompt_tokens == 462 and r.truncated_prompt_tokens == 38 and r.total_tokens <= 512
    assert r.prompt_logprobs is not None and r.prompt_logprobs[0].token == 1  # BOS kept
    with pytest.raises(ValueError, match="max_new_tokens \\(512\\)"):
        generate(scripted, [1, 2], max_new_tokens=512, truncate_prompt=True)


# ---- logprobs, penalties, min-p against the float64 reference ----------------------------------------

PROMPT = [1, 17, 42, 5, 9, 33, 60, 2, 71, 8]


def reference_processed(w, cfg, prompt, gen, opts):
    """float64 processed logits for each generated position, by the documented definitions."""
    ref = R.reference_logits(w, cfg, list(prompt) + list(gen[:-1]))[len(prompt) - 1:]
    out = []
    for k, z in enumerate(ref):
        z = z.copy()
        seen = set(prompt) | set(gen[:k])
        if opts.repetition_penalty != 1.0:
            for t in seen:
                z[t] = z[t] / opts.repetition_penalty if z[t] > 0 else z[t] * opts.repetition_penalty
        for t in set(gen[:k]):
            z[t] -= opts.frequency_penalty * gen[:k].count(t) + opts.presence_penalty
        if opts.temperature > 0:
            z = z / opts.temperature
        out.append(z)
    return np.array(out)


@pytest.mark.parametrize("opts", [
    GenerateOpts(max_new_tokens=8, logprobs=True, top_logprobs=5, stop_on_eos=False),
    GenerateOpts(max_new_tokens=8, top_logprobs=3, temperature=0.8, seed=5, repetition_penalty=1.3,
                 frequency_penalty=0.4, presence_penalty=0.25, stop_on_eos=False),
    GenerateOpts(max_new_tokens=8, logprobs=True, temperature=1.2, seed=9, repetition_penalty=0.7,
                 frequency_penalty=-0.5, min_p=0.05, top_k=40, top_p=0.9, stop_on_eos=False),
], ids=["greedy", "penalties", "negative-penalties-min-p"])
def test_logprobs_match_float64_reference(rand, opts):
    m, cfg, w = rand
    r = generate(m, PROMPT, opts)
    gen = list(r.tokens)
    assert r.logprobs is not None and len(r.logprobs) == len(gen) == 8
    want = log_softmax(reference_processed(w, cfg, PROMPT, gen, opts))
    got = np.array([e.logprob for e in r.logprobs])
    np.testing.assert_allclose(got, want[np.arange(8), gen], atol=2e-3)
    for e, row in zip(r.logprobs, want):
        assert e.text == m.tokenizer.decode([e.token], skip_special_tokens=False)
        assert len(e.top) == opts.top_logprobs
        if e.top:
            ids = [t for t, _ in e.top]
            order = np.argsort(-row, kind="stable")
            assert ids[0] == int(order[0])
            np.testing.assert_allclose([lp for _, lp in e.top], row[ids], atol=2e-3)
            assert all(a[1] >= b[1] for a, b in zip(e.top, e.top[1:]))
    if opts.temperature == 0:
        assert gen == R.reference_greedy(w, cfg, PROMPT, 8)
        assert all(e.top[0][0] == e.token for e in r.logprobs)
    if opts.min_p > 0:  # every sampled token passed the min-p cut
        assert all(row[e.token] >= row.max() + math.log(opts.min_p) - 1e-6 for e, row in zip(r.logprobs, want))


def test_penalties_change_greedy_choices(rand):
    m, _, _ = rand
    plain = generate(m, PROMPT, max_new_tokens=20, stop_on_eos=False)
    rep = generate(m, PROMPT, max_new_tokens=20, stop_on_eos=False, repetition_penalty=1e4)
    # Every seen token is pushed to ~0 or far below: the (positive) best unseen logit wins.
    assert not set(rep.tokens) & set(PROMPT) and len(set(rep.tokens)) == 20
    pres = generate(m, PROMPT, max_new_tokens=20, stop_on_eos=False, presence_penalty=1e3)
    assert len(set(pres.tokens)) == 20
    assert rep.tokens != plain.tokens or len(set(plain.tokens)) == 20


def test_python_side_choice_equals_native_choice(rand):
    """echo forces the Python-side choice (vt_sample with an explicit step); the tokens must
    be those libvt chooses itself."""
    m, _, _ = rand
    for o in (GenerateOpts(max_new_tokens=12, stop_on_eos=False),
              GenerateOpts(max_new_tokens=12, temperature=0.9, top_p=0.9, top_k=50, seed=3, stop_on_eos=False)):
        assert generate(m, PROMPT, o).tokens == generate(m, PROMPT, o.replace(echo=True)).tokens


def test_echo_prompt_logprobs(rand):
    m, cfg, w = rand
    r = generate(m, PROMPT, max_new_tokens=2, echo=True, top_logprobs=2)
    pl = r.prompt_logprobs
    assert pl is not None and [e.token for e in pl] == PROMPT
    assert pl[0].logprob is None and pl[0].top == ()
    want = log_softmax(R.reference_logits(w, cfg, PROMPT))
    np.testing.assert_allclose([e.logprob for e in pl[1:]], want[np.arange(len(PROMPT) - 1), PROMPT[1:]], atol=2e-3)
    assert all(len(e.top) == 2 for e in pl[1:])
    assert generate(m, PROMPT, max_new_tokens=2).prompt_logprobs is None
    assert generate(m, PROMPT, max_new_tokens=2).logprobs is None


def test_long_echo_uses_chunks(rand):
    m, cfg, w = rand
    prompt = list(np.random.default_rng(1).integers(3, 1000, size=150))
    r = generate(m, prompt, max_new_tokens=1, echo=True)
    want = log_softmax(R.reference_logits(w, cfg, prompt))
    np.testing.assert_allclose([e.logprob for e in r.prompt_logprobs[1:]],
                               want[np.arange(149), prompt[1:]], atol=2e-3)


# ---- batches ---------------------------------------------------------------------------------------------

def test_text_completion_equals_serial(real):
    prompts = ["The capital of France is", "def fib(n):", [1, 504, 2988, 314]]
    batch = text_completion(real, prompts, max_new_tokens=8, max_batch_size=2)
    serial = [generate(real, p, max_new_tokens=8) for p in prompts]
    assert [(r.tokens, r.text, r.finish_reason, r.prompt_tokens) for r in batch] == \
        [(r.tokens, r.text, r.finish_reason, r.prompt_tokens) for r in serial]


def test_text_completion_sampling_and_stops_equal_serial(rand, scripted):
    m, _, _ = rand
    o = GenerateOpts(max_new_tokens=10, temperature=0.9, seed=11, stop_on_eos=False, logprobs=True)
    prompts = [PROMPT, PROMPT[:4], [3, 4, 5, 6, 7, 8, 9]]
    batch = text_completion(m, prompts, o, max_batch_size=3)
    serial = [generate(m, p, o) for p in prompts]
    assert [r.tokens for r in batch] == [r.tokens for r in serial]
    for a, b in zip(batch, serial):
        np.testing.assert_allclose([e.logprob for e in a.logprobs], [e.logprob for e in b.logprobs], atol=1e-5)
    res = text_completion(scripted, [STOP_PROMPT, UTF8_PROMPT, STOP_PROMPT], max_new_tokens=30, stop=["42"])
    assert [r.text for r in res] == [" The answer is x", UTF8_TEXT, " The answer is x"]
    assert [r.finish_reason for r in res] == ["stop", "eos", "stop"]


def test_text_completion_errors(scripted):
    with pytest.raises(TypeError, match="list of prompts"):
        text_completion(scripted, "one prompt")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"prompts\[1\] is empty"):
        text_completion(scripted, ["ok", []])
    with pytest.raises(ValueError, match=r"prompts\[0\]\[1\] = -3"):
        text_completion(scripted, [[1, -3]])
    with pytest.raises(ValueError, match="max_batch_size must be an integer >= 1, got 0"):
        text_completion(scripted, ["a"], max_batch_size=0)
    assert text_completion(scripted, []) == []


# ---- logging ----------------------------------------------------------------------------------------------

def test_logging_is_quiet_by_default_and_available(scripted, caplog, capsys):
    generate(scripted, UTF8_PROMPT, max_new_tokens=3)
    assert capsys.readouterr().err == ""
    with caplog.at_level(logging.DEBUG, logger="pyvt"):
        generate(scripted, UTF8_PROMPT, max_new_tokens=3)
    assert any(r.name == "pyvt" and "generated 3 tokens" in r.getMessage() for r in caplog.records)
    gc.collect()


def test_python_and_native_generation_stop_on_the_one_eos_list(tmp_path, default_model_dir, tok):
    # The EOS list is decided once, by libvt at load: config.json, generation_config.json and
    # the tokenizer's eos_token. pyvt.generate (a native call per token) and vt_generate (one
    # native call) stop on the same ids.
    script = tok.encode(STOP_PROMPT, add_special_tokens=False)[-1:] + tok.encode(STOP_TEXT, add_special_tokens=False)
    T.write_scripted_model(tmp_path, default_model_dir, T.script_successors([script]), max_pos=512)
    prompt = tok.encode(STOP_PROMPT)
    by_tokenizer, by_generation_config = script[5], script[3]
    cfg = json.loads((tmp_path / "tokenizer_config.json").read_text())
    cfg["eos_token"] = tok.id_to_token(by_tokenizer)
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(cfg))
    for extra in ([], [by_generation_config]):
        (tmp_path / "generation_config.json").write_text(json.dumps({"eos_token_id": [T.EOS, *extra]}))
        with pyvt.load_model(tmp_path, weight_format="bf16") as m:
            assert m.eos_token_ids == frozenset(m.info["eos_token_ids"]) == {T.EOS, by_tokenizer, *extra}
            r = generate(m, prompt, max_new_tokens=20)
            native, stats = m._native.generate(prompt, max_new_tokens=20)
            assert r.finish_reason == "eos" == stats["finish_reason"]
            stop = script.index(by_generation_config if extra else by_tokenizer)
            assert list(r.tokens) == list(native) == script[1:stop + 1]
            assert r.text == tok.decode(script[1:stop])  # the EOS token itself adds no text

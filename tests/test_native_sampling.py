"""Penalties and min-p applied natively (vt_sample_options), and the batched decode step
(vt_session_decode_batch) — checked against the Python-side definitions and against
running each sequence alone."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pyvt
from pyvt import GenerateOpts, generate, text_completion
from pyvt import _model

import textgen_models as T


@pytest.fixture(scope="module")
def real(default_model_dir):
    with pyvt.load_model(default_model_dir) as m:
        yield m


@pytest.fixture(scope="module")
def rand(tmp_path_factory, default_model_dir):
    folder = tmp_path_factory.mktemp("random")
    T.write_random_model(folder, default_model_dir)
    with pyvt.load_model(folder, weight_format="bf16") as m:
        yield m


def ids(model, text):
    return model.encode(text)


# ---- penalties and min-p: native == the Python definition ---------------------------------------

OPTS = [
    GenerateOpts(max_new_tokens=24, stop_on_eos=False, repetition_penalty=1.3),
    GenerateOpts(max_new_tokens=24, stop_on_eos=False, frequency_penalty=0.7, presence_penalty=0.4),
    GenerateOpts(max_new_tokens=24, stop_on_eos=False, temperature=0.9, seed=11, repetition_penalty=1.2,
                 frequency_penalty=0.3, presence_penalty=0.2, top_k=60, top_p=0.95),
    GenerateOpts(max_new_tokens=24, stop_on_eos=False, temperature=1.1, seed=4, min_p=0.08),
    GenerateOpts(max_new_tokens=24, stop_on_eos=False, temperature=0.8, seed=8, min_p=0.2, top_p=0.9,
                 repetition_penalty=0.8, frequency_penalty=-0.3),
]


@pytest.mark.parametrize("opts", OPTS, ids=["rep", "freq-pres", "all-sampled", "min-p", "min-p-negative"])
def test_native_choice_equals_python_definition(real, opts):
    # echo makes pyvt choose from the logits row (the session's step would be off after the
    # chunked prefill): vt_logits_process + vt_argmax / vt_sample at the sequence's own step,
    # which must be the token the session chooses inside its decode call.
    prompt = "The quick brown fox jumps over the lazy dog. The quick brown"
    native = generate(real, prompt, opts)
    python = generate(real, prompt, opts, echo=True)
    assert native.tokens == python.tokens


def test_penalties_do_not_touch_returned_logits(real):
    """The chooser penalises a copy: the logits a caller asks for stay raw."""
    p = ids(real, "one two three one two three one two")
    with real._native.new_session(64) as a, real._native.new_session(64) as b:
        _, raw_a = a.prefill(p, logits="last")
        _, raw_b = b.prefill(p, logits="last", repetition_penalty=3.0, frequency_penalty=1.0)
        np.testing.assert_array_equal(raw_a, raw_b)
        t_a, la = a.decode(int(raw_a.argmax()), want_logits=True)
        t_b, lb = b.decode(int(raw_a.argmax()), want_logits=True, repetition_penalty=3.0)
        np.testing.assert_array_equal(la, lb)


def test_repetition_penalty_sees_prompt_and_resets(real):
    p = ids(real, "Paris Paris Paris Paris Paris")
    with real._native.new_session(64) as s:
        greedy, raw = s.prefill(p, logits="last")
        s.reset()
        pen, _ = s.prefill(p, repetition_penalty=1e6)
        assert pen not in set(p)          # every prompt token is pushed down
        s.reset()                          # the history goes with the cache
        again, _ = s.prefill(p)
        assert again == greedy == int(raw.argmax())


@pytest.mark.parametrize("field, value", [
    ("min_p", 1.5), ("min_p", -0.1), ("min_p", float("nan")),
    ("repetition_penalty", 0.0), ("repetition_penalty", -2.0), ("repetition_penalty", float("inf")),
    ("frequency_penalty", float("nan")), ("presence_penalty", float("inf")),
])
def test_native_validation_names_the_field(real, field, value):
    with real._native.new_session(16) as s:
        with pytest.raises(ValueError, match=field):
            s.prefill([1, 2, 3], temperature=0.5, **{field: value})
        assert s.length == 0               # nothing appended by the failed call
        s.prefill([1, 2, 3])


def test_unknown_sampling_option(real):
    with real._native.new_session(16) as s, pytest.raises(TypeError, match="min_q"):
        s.prefill([1, 2], min_q=0.1)


def test_min_p_one_keeps_only_the_top_token(real):
    """min_p = 1 leaves the most likely token alone: sampling at any temperature is argmax."""
    p = ids(real, "Once upon a time")
    with real._native.new_session(32) as s:
        want, raw = s.prefill(p, logits="last")
        for seed in range(5):
            s.reset()
            got, _ = s.prefill(p, temperature=2.0, seed=seed, min_p=1.0)
            assert got == want


# ---- the batched decode step ----------------------------------------------------------------------

PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):",
    "Once upon a time, in a land far away, there lived a",
    "1, 2, 3, 4,",
    "Water boils at",
]


def test_text_completion_equals_serial_greedy(real):
    prompts = PROMPTS + [" ".join(["word"] * 300)]  # one long row: split-K attention
    opts = GenerateOpts(max_new_tokens=12, stop_on_eos=False)
    batch = text_completion(real, prompts, opts, max_batch_size=4)
    for p, r in zip(prompts, batch):
        assert r.tokens == generate(real, p, opts).tokens


def test_text_completion_equals_serial_sampled_with_penalties(real):
    opts = GenerateOpts(max_new_tokens=16, temperature=0.9, top_p=0.95, seed=21, repetition_penalty=1.2,
                        presence_penalty=0.3, min_p=0.05)
    batch = text_completion(real, PROMPTS, opts, max_batch_size=8)
    for p, r in zip(PROMPTS, batch):
        assert r.tokens == generate(real, p, opts).tokens


def test_decode_batch_logits_equal_single_decode(real):
    """Rows at different lengths: the batch gives each row's logits as its own decode does
    (up to the GEMM vs GEMV summation order) and the same greedy choices."""
    prompts = [ids(real, p) for p in PROMPTS[:4]]
    n = len(prompts)
    solo = [real._native.new_session(128) for _ in range(n)]
    bat = [real._native.new_session(128) for _ in range(n)]
    try:
        toks = []
        for p, a, b in zip(prompts, solo, bat):
            t, _ = a.prefill(p)
            assert b.prefill(p)[0] == t
            toks.append(t)
        for _ in range(6):
            want = [a.decode(t, want_logits=True) for a, t in zip(solo, toks)]
            got, logits = _model.decode_batch(bat, toks, [{}] * n, want_logits=True)
            for i in range(n):
                ref = want[i][1]
                err = np.abs(logits[i] - ref).max() / np.abs(ref).max()
                assert err < 2e-3, (i, err)
            assert got == [w[0] for w in want]
            assert [s.length for s in bat] == [s.length for s in solo]
            toks = got
    finally:
        for s in solo + bat:
            s.close()


def test_decode_batch_errors_change_nothing(real, rand):
    a, b = real._native.new_session(16), real._native.new_session(16)
    other = rand._native.new_session(16)
    full = real._native.new_session(3)
    try:
        a.prefill([1, 2]); b.prefill([3]); other.prefill([1]); full.prefill([1, 2, 3])
        V = real.info.vocab_size if hasattr(real.info, "vocab_size") else real.info["vocab_size"]
        cases = [
            (([a, a], [1, 2], [{}, {}]), ValueError, "more than once"),
            (([a, other], [1, 2], [{}, {}]), ValueError, "different model"),
            (([a, b], [1, V], [{}, {}]), ValueError, "outside the vocabulary"),
            (([a, b], [1, 2], [{}, {"min_p": 3.0}]), ValueError, "min_p"),
            (([a, full], [1, 2], [{}, {}]), ValueError, "KV cache full"),
            (([a, b], [1], [{}, {}]), ValueError, "same length"),
            (([], [], []), ValueError, "1 to 64"),
            (([a, "b"], [1, 2], [{}, {}]), TypeError, r"sessions\[1\]"),
        ]
        for args, exc, msg in cases:
            with pytest.raises(exc, match=msg):
                _model.decode_batch(*args)
            assert (a.length, b.length, other.length, full.length) == (2, 1, 1, 3)
        many = [real._native.new_session(4) for _ in range(65)]
        try:
            with pytest.raises(ValueError, match="1 to 64"):
                _model.decode_batch(many, [1] * 65, [{}] * 65)
        finally:
            for s in many:
                s.close()
        closed = real._native.new_session(4)
        closed.close()
        with pytest.raises(RuntimeError, match="closed"):
            _model.decode_batch([a, closed], [1, 2], [{}, {}])
        assert a.length == 2
        # Still usable after all that.
        nxt, _ = _model.decode_batch([a, b], [5, 6], [{}, {}])
        assert len(nxt) == 2 and (a.length, b.length) == (3, 2)
    finally:
        for s in (a, b, other, full):
            s.close()


# ---- vt_logits_process: the processed row, the same as pyvt's numpy definitions ----------

def _python_processed(raw, opts, prompt, chosen):
    """The numpy definition libvt documents for vt_sample_options (float32, in this order):
    repetition (÷ / × on every token seen in prompt or output), then frequency (− count·f)
    and presence (− p) over the generated tokens; then the min-p mask: -inf where
    (x - max) / T < ln(min_p), in float64."""
    x = np.array(raw, dtype=np.float32, copy=True)
    if opts.repetition_penalty != 1.0:
        idx = np.unique(np.concatenate([np.asarray(prompt, np.int64), np.asarray(chosen, np.int64)]))
        v = x[idx]
        rep = np.float32(opts.repetition_penalty)
        x[idx] = np.where(v > 0, v / rep, v * rep)
    if opts.frequency_penalty != 0.0 or opts.presence_penalty != 0.0:
        idx, counts = np.unique(np.asarray(chosen, np.int64), return_counts=True)
        x[idx] = (x[idx] - np.float32(opts.frequency_penalty) * counts.astype(np.float32)) \
            - np.float32(opts.presence_penalty)
    if opts.min_p > 0 and opts.temperature > 0:
        cut = (x.astype(np.float64) - float(np.max(x))) / opts.temperature < math.log(opts.min_p)
        x[cut] = -np.inf
    return x


@pytest.mark.parametrize("seed", range(6))
def test_logits_process_equals_python_processor_and_min_p_mask(seed):
    rng = np.random.default_rng(seed)
    V = 500
    raw = (rng.standard_normal(V) * 3).astype(np.float32)
    raw[rng.integers(0, V, 20)] = 0.0
    if seed == 4:
        raw[7] = np.nan   # numpy's max is NaN: min-p cuts nothing
    if seed == 5:
        raw[9] = -np.inf
    prompt = rng.integers(0, V, 30).tolist()
    chosen = rng.integers(0, V, 25).tolist() + [3, 3, 3]
    opts = GenerateOpts(temperature=[0.0, 0.7, 1.3, 0.25, 0.9, 2.0][seed], min_p=[0.0, 0.05, 0.2, 0.5, 0.1, 0.01][seed],
                        repetition_penalty=[1.0, 1.3, 0.8, 1.1, 1.2, 1.0][seed],
                        frequency_penalty=[0.0, 0.4, -0.3, 0.0, 0.25, 1.5][seed],
                        presence_penalty=[0.0, 0.2, 0.0, -0.5, 0.5, 0.0][seed])
    want = _python_processed(raw, opts, prompt, chosen)
    from pyvt import _ops
    got = _ops.logits_process(raw, prompt, chosen, temperature=opts.temperature, min_p=opts.min_p,
                              repetition_penalty=opts.repetition_penalty, frequency_penalty=opts.frequency_penalty,
                              presence_penalty=opts.presence_penalty)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.float32 and not np.shares_memory(got, raw)


def test_logits_process_then_sample_is_the_sessions_choice(real):
    # The session's own choice (penalties over its history, then vt_sample at its step) equals
    # vt_sample of vt_logits_process's row over the same history.
    from pyvt import _ops
    opts = dict(temperature=0.8, top_k=40, top_p=0.9, min_p=0.05, seed=11, repetition_penalty=1.3,
                frequency_penalty=0.5, presence_penalty=0.3)
    prompt = [1, 504, 3458, 282, 4649, 314, 504, 3458]
    with real._native.new_session() as s:
        t, lg = s.prefill(prompt, logits="last", **opts)
        inputs, chosen = list(prompt), []
        for step in range(10):
            z = _ops.logits_process(lg, inputs, chosen, temperature=0.8, min_p=0.05, repetition_penalty=1.3,
                                    frequency_penalty=0.5, presence_penalty=0.3)
            assert t == pyvt.ops.sample(z, temperature=0.8, top_k=40, top_p=0.9, seed=11, step=step)
            chosen.append(t)
            inputs.append(t)
            t, lg = s.decode(t, want_logits=True, **opts)


def test_logits_process_candidates_and_errors():
    from pyvt import _ops
    x = np.arange(10, dtype=np.float32)
    c = _ops.logits_process(x, temperature=1.0, top_k=3, candidates=True)
    assert np.isfinite(c).sum() == 3 and np.array_equal(np.flatnonzero(np.isfinite(c)), [7, 8, 9])
    g = _ops.logits_process(x, temperature=0.0, top_k=3, candidates=True)  # greedy: nothing masked
    np.testing.assert_array_equal(g, x)
    with pytest.raises(ValueError, match=r"chosen\[1\] = 10 is outside \[0, 10\)"):
        _ops.logits_process(x, [], [2, 10], repetition_penalty=1.2)
    with pytest.raises(ValueError, match="min_p"):
        _ops.logits_process(x, min_p=2.0)

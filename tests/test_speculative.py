"""Speculative decoding by prompt lookup: vt_session_verify / vt_session_truncate
(Session.verify / truncate), pyvt.speculative's drafter and draft length, and
GenerateOpts.prompt_lookup_num_tokens -- whose tokens must be plain decoding's."""

from __future__ import annotations

import numpy as np
import pytest

import pyvt
from pyvt.speculative import DraftPolicy, PromptLookup

from int16_ref import exact_batch_kv_cache

TEXT = ("def area(width, height):\n    return width * height\n\n"
        "def perimeter(width, height):\n    return 2 * (width + height)\n")
DIALOG = [{"role": "user", "content": "Repeat this code exactly, then stop:\n\n" + TEXT}]


@pytest.fixture(scope="module")
def model(default_model_dir):
    m = pyvt.load_model(default_model_dir, threads=2, kv_cache=exact_batch_kv_cache())
    yield m
    m.close()


# ---- the drafter ---------------------------------------------------------------------------

def test_lookup_drafts_what_followed_the_latest_match_of_the_longest_ngram():
    # ... 1 2 3 -> 10 11, later 2 3 -> 20 21, later 9 3 -> 30: the sequence ends in "1 2 3"
    seq = [1, 2, 3, 10, 11, 5, 2, 3, 20, 21, 9, 3, 30, 31, 7, 1, 2, 3]
    lk = PromptLookup(seq, max_ngram=3, min_ngram=1)
    assert lk.draft(2) == [10, 11]          # the 3-gram (1, 2, 3) wins over later 2- and 1-grams
    assert lk.draft(0) == []
    lk2 = PromptLookup(seq, max_ngram=2, min_ngram=1)
    assert lk2.draft(3) == [20, 21, 9]      # the latest (2, 3)
    lk1 = PromptLookup(seq, max_ngram=1, min_ngram=1)
    assert lk1.draft(1) == [30]             # the latest (3,) followed by a token
    assert PromptLookup([4, 5, 6], max_ngram=2, min_ngram=1).draft(4) == []   # no earlier match
    assert PromptLookup([], max_ngram=2).draft(4) == []
    # the draft stops at the end of the sequence
    assert PromptLookup([7, 8, 7], max_ngram=2, min_ngram=1).draft(5) == [8, 7]


def test_lookup_index_grows_token_by_token_as_if_built_at_once():
    rng = np.random.default_rng(3)
    seq = rng.integers(0, 6, 300).tolist()
    grown = PromptLookup(seq[:5])
    for t in seq[5:]:
        grown.push([t])
        whole = PromptLookup(grown.seq)
        assert grown.draft(4) == whole.draft(4)
    with pytest.raises(ValueError, match="min_ngram"):
        PromptLookup([1], max_ngram=1, min_ngram=2)


def test_draft_policy_weighs_expected_tokens_against_the_cost_of_rows():
    p = DraftPolicy(8)
    assert p.accept_rate(3) == 0.5 and p.beta == DraftPolicy.BETA0
    assert p.choose(3) == 1                 # a = 0.5, beta = 0.3: one row pays, two do not
    for _ in range(6):
        p.update(3, 4, 4)                   # 3-token matches: every draft confirmed
    assert p.accept_rate(3) > 0.9
    k3 = p.choose(3)
    assert 4 <= k3 <= 8
    for _ in range(6):
        p.update(1, 2, 0)                   # 1-token matches: nothing confirmed
    assert p.accept_rate(1) < 0.1
    # no draft after a 1-token match, but a one-token probe every PROBE-th time
    picks = [p.choose(1) for _ in range(2 * DraftPolicy.PROBE)]
    assert picks.count(1) == 2 and picks.count(0) == 2 * DraftPolicy.PROBE - 2
    assert p.choose(3) == k3                # the other match length keeps its own estimate
    # cheap rows (a GPU): longer drafts; costly rows: shorter or none
    p.timed(1, 0.010)
    for _ in range(20):
        p.timed(5, 0.0102)
    assert p.beta < 0.02 and p.choose(3) == 8
    for _ in range(20):
        p.timed(5, 0.060)
    assert p.beta > 1.0 and p.choose(3) < k3
    q = DraftPolicy(4)
    q.timed(3, 1.0)                         # a verify before any plain step: no estimate yet
    assert q.beta == DraftPolicy.BETA0


# ---- Session.verify / truncate --------------------------------------------------------------

def _plain(nat, ids, n, **sampling):
    with nat.new_session(len(ids) + n + 8) as s:
        tok, _ = s.prefill(ids, **sampling)
        out = [tok]
        for _ in range(n - 1):
            tok, _ = s.decode(tok, **sampling)
            out.append(tok)
    return out


@pytest.mark.parametrize("sampling", [{}, {"temperature": 0.9, "seed": 5},
                                      {"repetition_penalty": 1.3, "frequency_penalty": 0.4}])
def test_verify_chooses_what_decode_chooses(model, sampling):
    ids = np.asarray(model.encode(TEXT), dtype=np.int32)
    nat = model._native
    ref = _plain(nat, ids, 24, **sampling)
    rng = np.random.default_rng(1)
    # drafts: the true continuation (accepted whole), a wrong one, and a half-right one
    for mode in ("true", "wrong", "half"):
        with nat.new_session(len(ids) + 40) as s:
            tok, _ = s.prefill(ids, **sampling)
            out = [tok]
            while len(out) < len(ref):
                g = len(out)
                draft = list(ref[g:g + 4])
                if mode == "wrong":
                    draft = [int(t) for t in rng.integers(0, 1000, 3)]
                elif mode == "half" and len(draft) > 2:
                    draft[2] = (draft[2] + 1) % model.info["vocab_size"]
                chosen = s.verify([out[-1]] + draft, **sampling)
                assert 1 <= len(chosen) <= len(draft) + 1
                assert chosen[:-1] == draft[:len(chosen) - 1]   # the accepted ones are the draft's
                if mode == "true" and len(draft) == 4:
                    assert len(chosen) == 5
                out += chosen
                # the session holds the prompt and every token chosen but the last
                assert s.length == len(ids) + len(out) - 1
            assert out[:len(ref)] == ref, mode


def test_verify_refuses_bad_input_and_changes_nothing(model):
    nat = model._native
    V = model.info["vocab_size"]
    with nat.new_session(8) as s:
        s.prefill([1, 2, 3])
        for bad, msg in (([], "1 to 64"), (list(range(1, 66)), "1 to 64"), ([1, V], r"tokens\[1\]"),
                         ([1, -1], "outside"), ([1] * 6, "KV cache full")):
            with pytest.raises(ValueError, match=msg):
                s.verify(bad)
            assert s.length == 3
        with pytest.raises(ValueError, match="temperature"):
            s.verify([1, 2], temperature=-1.0)
        for n in (-1, 4, 2.0, True):
            with pytest.raises(ValueError):
                s.truncate(n)
        assert s.length == 3
    s.close()
    with pytest.raises(RuntimeError, match="closed"):
        s.verify([1])


def test_truncate_is_a_prefill_of_the_kept_tokens(model):
    ids = np.asarray(model.encode(TEXT), dtype=np.int32)
    nat = model._native
    with nat.new_session(64) as a, nat.new_session(64) as b:
        a.prefill(ids)
        a.decode(7)
        a.decode(8)
        a.truncate(len(ids) - 3)
        assert a.length == len(ids) - 3
        t1, la = a.prefill(ids[-3:], logits="last")
        t2, lb = b.prefill(ids, logits="last")
        assert t1 == t2
        np.testing.assert_allclose(la, lb, rtol=0, atol=1e-4 * np.abs(lb).max())
        a.truncate(0)
        assert a.length == 0


# ---- generate ---------------------------------------------------------------------------

@pytest.mark.parametrize("opts", [dict(), dict(temperature=0.8, seed=11), dict(stop=["perimeter"]),
                                  dict(max_new_tokens=7), dict(repetition_penalty=1.2)])
def test_generate_with_prompt_lookup_gives_plain_decodings_tokens(model, opts):
    kw = dict(max_new_tokens=60, **opts) if "max_new_tokens" not in opts else opts
    plain = pyvt.chat(model, DIALOG, **kw)
    fast = pyvt.chat(model, DIALOG, prompt_lookup_num_tokens=5, **kw)
    assert fast.tokens == plain.tokens and fast.text == plain.text
    assert fast.finish_reason == plain.finish_reason
    assert plain.draft_tokens == plain.accepted_draft_tokens == 0
    assert 0 <= fast.accepted_draft_tokens <= fast.draft_tokens
    if not opts:
        # greedy, copying code: drafts are made and confirmed (how many depends on what a
        # verify row costs on this CPU: with the generic kernels a row costs about a step)
        assert fast.accepted_draft_tokens > 0, fast


def test_streamed_pieces_are_the_same_with_prompt_lookup(model):
    plain = [p.text for p in pyvt.stream(model, TEXT + "\n" + TEXT, max_new_tokens=40)]
    fast = [p.text for p in pyvt.stream(model, TEXT + "\n" + TEXT, max_new_tokens=40, prompt_lookup_num_tokens=4)]
    assert fast == plain


def test_a_stream_left_inside_a_verify_calls_tokens_stops_cleanly(model):
    """Leaving the loop between two pieces of one verify call's tokens frees the session; the
    model goes on serving."""
    with pyvt.stream(model, TEXT + "\n" + TEXT, max_new_tokens=40, prompt_lookup_num_tokens=6) as st:
        got = [p.token for _, p in zip(range(5), st)]
    assert len(got) == 5 and st.result is None
    assert pyvt.generate(model, TEXT, max_new_tokens=5).tokens == pyvt.generate(
        model, TEXT, max_new_tokens=5, prompt_lookup_num_tokens=6).tokens

def test_prompt_lookup_is_ignored_where_logits_are_wanted(model):
    r = pyvt.chat(model, DIALOG, max_new_tokens=12, logprobs=True, prompt_lookup_num_tokens=5)
    assert r.draft_tokens == 0 and len(r.logprobs) == len(r.tokens)


@pytest.mark.parametrize("bad", [-1, 64, 2.5, True, "3"])
def test_prompt_lookup_num_tokens_is_checked(bad):
    with pytest.raises(ValueError, match="prompt_lookup_num_tokens"):
        pyvt.GenerateOpts(prompt_lookup_num_tokens=bad)


def test_prefix_cache_gets_the_positions_of_the_tokens_used(model):
    """A sequence that ends inside a verify call's choices gives the prefix cache a session
    truncated to the tokens it kept (not the verify pass's extra positions)."""
    from pyvt.engine import PrefixCache
    from pyvt.generation import _Run, prepare

    cache = PrefixCache(1 << 30, 1)
    prep = prepare(model, TEXT + "\n" + TEXT,
                   pyvt.GenerateOpts(max_new_tokens=9, prompt_lookup_num_tokens=6))
    pieces = list(_Run(model, [prep], cache=cache).pieces())
    result = pieces[-1][1].result
    assert result is not None and len(result.tokens) == 9 and result.accepted_draft_tokens > 0
    ids = np.concatenate([prep.ids, np.asarray(result.tokens[:-1], dtype=np.int32)])
    src, n = cache.lookup(np.concatenate([ids, [1]]).astype(np.int32))
    assert src is not None and n == len(ids) and src.length == len(ids)

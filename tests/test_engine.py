"""The serving engine (pyvt.engine): continuous batching, chunked prefill, the prefix cache
(vt_session_copy_prefix), cancellation, the bounded queue and shutdown -- each request's
output must equal what pyvt.generate / pyvt.chat give for it alone."""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np
import pytest

import pyvt
from pyvt.chat import _chat_prompt
from pyvt.engine import AsyncEngine, Engine, EngineClosed, PrefixCache, QueueFull

from int16_ref import exact_batch_kv_cache


@pytest.fixture(scope="module")
def model(default_model_dir):
    m = pyvt.load_model(default_model_dir, threads=2, kv_cache=exact_batch_kv_cache())
    yield m
    m.close()


DIALOGS = [[{"role": "user", "content": f"Name {k} fruits and say one thing about each."}] for k in range(2, 8)]


def _run(coro):
    return asyncio.run(coro)


def test_copy_prefix_gives_the_logits_of_a_full_prefill(model):
    ids = model.encode("The quick brown fox jumps over the lazy dog. " * 4)
    nat = model._native
    with nat.new_session(128) as a, nat.new_session(128) as b, nat.new_session(16) as small:
        tok, full = a.prefill(ids, logits="last")
        b.copy_prefix(a, 19)
        assert b.length == 19
        tok2, part = b.prefill(ids[19:], logits="last")
        assert tok2 == tok
        np.testing.assert_array_equal(part, full)
        # Bad arguments change nothing and name the value.
        with pytest.raises(ValueError, match=r"n = 999 is outside \[0, src length"):
            b.copy_prefix(a, 999)
        assert b.length == len(ids)
        with pytest.raises(ValueError, match="exceeds dst's max_tokens 16"):
            small.copy_prefix(a, 17)
        with pytest.raises(ValueError, match="src is this session"):
            a.copy_prefix(a, 3)
        small.copy_prefix(a, 0)
        assert small.length == 0


def test_prefill_in_chunks_without_choosing_equals_one_prefill(model):
    ids = model.encode("Once upon a time, in a land far away, there lived a")
    nat = model._native
    with nat.new_session(64) as a, nat.new_session(64) as b:
        ref, ref_logits = a.prefill(ids, logits="last", temperature=0.8, seed=5)
        t0, _ = b.prefill(ids[:5], choose=False, temperature=0.8, seed=5)
        assert t0 == -1
        t1, lg = b.prefill(ids[5:], logits="last", temperature=0.8, seed=5)
        assert t1 == ref  # the first sampled choice: step 0 in both
        # Rows run through the GEMMs in other groupings: equal up to float rounding.
        np.testing.assert_allclose(lg, ref_logits, rtol=1e-4, atol=1e-4)


def test_concurrent_requests_equal_their_single_runs(model):
    refs = [pyvt.chat(model, d, max_new_tokens=24) for d in DIALOGS]
    sampled = [pyvt.chat(model, d, max_new_tokens=16, temperature=0.9, seed=11 + k) for k, d in enumerate(DIALOGS)]

    async def main():
        eng = AsyncEngine(model, max_batch=4, prefill_chunk=16)  # chunked prefills, a queue
        try:
            greedy = [eng.chat(d, max_new_tokens=24) for d in DIALOGS]
            samp = [eng.chat(d, max_new_tokens=16, temperature=0.9, seed=11 + k) for k, d in enumerate(DIALOGS)]
            out = await asyncio.gather(*greedy, *samp)
            return out, eng.stats()
        finally:
            await eng.aclose()

    out, stats = _run(main())
    assert [r.text for r in out[:len(DIALOGS)]] == [r.text for r in refs]
    assert [r.tokens for r in out[len(DIALOGS):]] == [r.tokens for r in sampled]
    assert all(r.finish_reason == x.finish_reason for r, x in zip(out, refs + sampled))
    assert stats.requests_finished == 2 * len(DIALOGS)
    assert max(stats.batch_sizes) == 4  # requests did run together, never more than max_batch
    assert stats.running == 0 and stats.waiting == 0


def test_prefix_cache_reuses_earlier_turns_and_matches_a_fresh_run(model):
    system = {"role": "system", "content": "You are a terse assistant. Answer in one short sentence. " * 3}
    turn1 = [system, {"role": "user", "content": "What is the capital of France?"}]

    async def main():
        eng = AsyncEngine(model, max_batch=4)
        try:
            r1 = await eng.chat(turn1, max_new_tokens=12)
            turn2 = turn1 + [r1.message, {"role": "user", "content": "And of Italy?"}]
            r2 = await eng.chat(turn2, max_new_tokens=12)
            return r1, r2, turn2, eng.stats()
        finally:
            await eng.aclose()

    r1, r2, turn2, stats = _run(main())
    assert r1.text == pyvt.chat(model, turn1, max_new_tokens=12).text
    assert r2.text == pyvt.chat(model, turn2, max_new_tokens=12).text
    assert stats.prefix_cache_hits == 1
    # The whole first prompt (system + first question) came from the cache.
    assert stats.prefix_cache_tokens_reused >= len(_chat_prompt(model, turn1, None))
    assert stats.prefix_cache_entries >= 1 and stats.prefix_cache_bytes > 0


def test_requests_arriving_together_share_their_prompt_prefix(model):
    """A prompt goes to the prefix cache as soon as it is prefilled, not when its request
    ends: requests submitted at the same moment with the same system prompt reuse the first
    one's keys and values, and each still answers as it would alone."""
    system = {"role": "system", "content": "You are a terse assistant. Answer in one short sentence. " * 3}
    dialogs = [[system, {"role": "user", "content": f"What is {k} plus {k}?"}] for k in (2, 3, 4)]

    async def main():
        eng = AsyncEngine(model, max_batch=4)
        try:
            rs = await asyncio.gather(*(eng.chat(d, max_new_tokens=8) for d in dialogs))
            return rs, eng.stats()
        finally:
            await eng.aclose()

    rs, stats = _run(main())
    for d, r in zip(dialogs, rs):
        assert r.text == pyvt.chat(model, d, max_new_tokens=8).text
    assert stats.prefix_cache_hits >= 2
    # Each later request reused at least the system prompt's share of its own prompt.
    first = _chat_prompt(model, dialogs[0], None)
    common = next(i for i, (a, b) in enumerate(zip(first, _chat_prompt(model, dialogs[1], None))) if a != b)
    assert common > 20 and stats.prefix_cache_tokens_reused >= 2 * common


def test_a_failed_prompt_copy_leaves_the_request_alone(model):
    """No memory for the prefix cache's copy of a prompt: the request still answers as it
    would alone, and nothing is cached for it until it ends."""
    dialog = [{"role": "system", "content": "You are a terse assistant. Answer in one short sentence. " * 3},
              {"role": "user", "content": "What is 2 plus 2?"}]
    n_prompt = len(_chat_prompt(model, dialog, None))

    class Native:  # the model's native handle, except that the prompt-sized copy fails
        refused = 0

        def __getattr__(self, name):
            return getattr(model._native, name)

        def new_session(self, max_tokens=0):
            if max_tokens == n_prompt:
                Native.refused += 1
                raise MemoryError("no memory for the copy")
            return model._native.new_session(max_tokens)

    class Handle:
        _native = Native()

        def __getattr__(self, name):
            return getattr(model, name)

    async def main():
        eng = AsyncEngine(model, max_batch=4)
        eng.engine.model = Handle()
        try:
            r = await eng.chat(dialog, max_new_tokens=8)
            return r, eng.stats()
        finally:
            await eng.aclose()

    r, stats = _run(main())
    assert r.text == pyvt.chat(model, dialog, max_new_tokens=8).text
    assert Native.refused == 1  # the copy was tried, failed, and cost the request nothing
    assert stats.requests_failed == 0 and stats.requests_finished == 1


def test_prefix_cache_lookup_insert_and_budget(model):
    nat = model._native
    per = 1000
    cache = PrefixCache(budget_bytes=50 * per, bytes_per_token=per, min_tokens=4)

    def sess(ids):
        s = nat.new_session(64)
        s.prefill(ids, choose=False)
        return s

    a = np.arange(1, 21, dtype=np.int32)           # 20 tokens
    cache.insert(a, sess(a))
    s, n = cache.lookup(np.concatenate([a[:10], [99, 98]]).astype(np.int32))
    assert s is not None and n == 10
    s, n = cache.lookup(a)                          # all but the last token (it must run)
    assert n == 19
    s, n = cache.lookup(np.array([1, 2, 3, 77], dtype=np.int32))
    assert s is None and n == 0                     # 3 common tokens < min_tokens
    longer = np.arange(1, 31, dtype=np.int32)       # a covers nothing a longer entry does not
    cache.insert(longer, sess(longer))
    assert len(cache) == 1 and cache.bytes == 30 * per
    other = np.arange(100, 130, dtype=np.int32)
    cache.insert(other, sess(other))               # 60 tokens > budget 50: the oldest goes
    assert len(cache) == 1 and cache.evictions == 1
    assert cache.lookup(longer)[1] == 0 and cache.lookup(other)[1] == 29
    cache.clear()
    assert len(cache) == 0 and cache.bytes == 0


def test_cancel_frees_the_slot_within_a_step(model):
    eng = Engine(model, max_batch=2)
    try:
        got = []
        ev = threading.Event()

        def sink(item):
            got.append(item)
            if len(got) >= 3:
                ev.set()

        prep = pyvt.generation.prepare(model, model.encode("Tell me a long story about a dragon."),
                                       pyvt.GenerateOpts(max_new_tokens=400, stop_on_eos=False))
        req = eng.submit(prep, sink)
        assert ev.wait(30)
        req.cancel()
        deadline = time.monotonic() + 5
        while eng.stats().running and time.monotonic() < deadline:
            time.sleep(0.01)
        st = eng.stats()
        assert st.running == 0 and st.requests_cancelled == 1
        n = len(got)
        time.sleep(0.2)
        assert len(got) == n and all(p.result is None for p in got)  # nothing after the cancel
    finally:
        eng.close()


def test_queue_bound_refuses_then_recovers(model):
    eng = Engine(model, max_batch=1, max_queue=1)
    try:
        done = threading.Event()
        results = []

        def sink(item):
            if getattr(item, "result", None) is not None:
                results.append(item.result)
                if len(results) == 2:
                    done.set()

        opts = pyvt.GenerateOpts(max_new_tokens=30, stop_on_eos=False)
        prep = pyvt.generation.prepare(model, model.encode("Hello"), opts)
        eng.submit(prep, sink)
        eng.submit(prep, sink)  # one running (or about to), one waiting
        with pytest.raises(QueueFull, match="queue is full") as ei:
            for _ in range(3):
                eng.submit(prep, sink)
        assert ei.value.retry_after >= 1
        assert done.wait(60)
        eng.submit(prep, lambda item: None)  # room again
        assert eng.stats().requests_rejected >= 1
    finally:
        eng.close()


def test_close_drains_or_aborts(model):
    opts = pyvt.GenerateOpts(max_new_tokens=20, stop_on_eos=False)
    prep = pyvt.generation.prepare(model, model.encode("Hi"), opts)
    eng = Engine(model, max_batch=2)
    got = []
    eng.submit(prep, got.append)
    eng.close(drain=True)
    assert got[-1].result is not None and got[-1].result.generated_tokens == 20
    with pytest.raises(EngineClosed):
        eng.submit(prep, got.append)

    eng = Engine(model, max_batch=1)
    long = pyvt.generation.prepare(model, model.encode("Hi"), opts.replace(max_new_tokens=2000))
    errs = []
    first = threading.Event()

    def sink(item):
        first.set()
        if isinstance(item, BaseException):
            errs.append(item)

    eng.submit(long, sink)
    eng.submit(long, sink)  # waits: never starts
    assert first.wait(30)
    eng.close(drain=False)
    assert len(errs) == 2 and all(isinstance(e, EngineClosed) for e in errs)


def test_async_stream_leaving_early_cancels(model):
    async def main():
        eng = AsyncEngine(model, max_batch=2)
        try:
            pieces = []
            async for p in eng.stream("Count from one to one hundred:", max_new_tokens=300, stop_on_eos=False):
                pieces.append(p)
                if len(pieces) == 3:
                    break
            for _ in range(200):
                if eng.stats().running == 0:
                    break
                await asyncio.sleep(0.01)
            return eng.stats()
        finally:
            await eng.aclose()

    st = _run(main())
    assert st.running == 0 and st.requests_cancelled == 1


def test_engine_options_are_checked(model):
    for kw, msg in (({"max_batch": 0}, "max_batch"), ({"max_batch": 65}, "max_batch"),
                    ({"max_queue": -1}, "max_queue"), ({"prefill_chunk": 0}, "prefill_chunk"),
                    ({"prefix_cache_bytes": True}, "prefix_cache_bytes")):
        with pytest.raises(ValueError, match=msg):
            Engine(model, **kw)


def test_kv_bytes_per_token_per_cache_type():
    from pyvt.engine import kv_bytes_per_token

    info = {"num_layers": 30, "num_kv_heads": 3, "head_dim": 64}  # (an info without libvt's count)
    # K and V per layer and KV head: 64 elements each (int8: plus one f32 scale each)
    assert kv_bytes_per_token({**info, "kv_cache": "f32"}) == 30 * 3 * 2 * 64 * 4
    assert kv_bytes_per_token({**info, "kv_cache": "f16"}) == 30 * 3 * 2 * 64 * 2
    assert kv_bytes_per_token({**info, "kv_cache": "int8"}) == 30 * 3 * 2 * (64 + 4)


def test_single_streams_share_a_prefix_cache_like_the_chat_repl(model):
    from pyvt.engine import kv_bytes_per_token
    from pyvt.generation import finish, open_stream, prepare

    cache = PrefixCache(64 << 20, kv_bytes_per_token(model.info))
    try:
        d = [{"role": "user", "content": "Hi, what is your name?"}]
        opts = pyvt.GenerateOpts(max_new_tokens=12)
        r1 = finish(open_stream(model, prepare(model, _chat_prompt(model, d, None), opts), cache=cache))
        d += [r1.message, {"role": "user", "content": "And what can you do?"}]
        ids = _chat_prompt(model, d, None)
        r2 = finish(open_stream(model, prepare(model, ids, opts), cache=cache))
        assert cache.hits == 1 and cache.tokens_reused >= len(_chat_prompt(model, d[:1], None))
        assert r2.tokens == pyvt.chat(model, d, opts).tokens
        # A stream left early leaves its KV cache there too (the REPL's interrupted reply).
        with open_stream(model, prepare(model, ids, opts.replace(max_new_tokens=50)), cache=cache) as s:
            next(s)
        assert cache.hits == 2 and len(cache) >= 1
    finally:
        cache.clear()


def test_prompt_lookup_in_the_engine_keeps_the_tokens_and_the_prefix_cache(model):
    """Engine(prompt_lookup=N): a request decoding alone checks prompt-lookup drafts
    (pyvt.speculative) and gives plain decoding's tokens; its session goes to the prefix cache
    holding exactly its prompt and tokens (a verify pass may have run past its last token),
    so the next turn reuses it and still answers as a fresh run; requests running together
    decode as one batch, as without it."""
    code = "def area(w, h):\n    return w * h\n\ndef perimeter(w, h):\n    return 2 * (w + h)\n"
    turn1 = [{"role": "user", "content": "Repeat this code exactly:\n\n" + code}]

    async def main():
        eng = AsyncEngine(model, max_batch=4, prompt_lookup=5)
        try:
            r1 = await eng.chat(turn1, max_new_tokens=30)
            turn2 = turn1 + [r1.message, {"role": "user", "content": "Now repeat it once more."}]
            r2 = await eng.chat(turn2, max_new_tokens=30)
            together = await asyncio.gather(*(eng.chat(d, max_new_tokens=12) for d in DIALOGS[:3]))
            return r1, r2, turn2, together, eng.stats()
        finally:
            await eng.aclose()

    r1, r2, turn2, together, stats = _run(main())
    assert r1.tokens == pyvt.chat(model, turn1, max_new_tokens=30).tokens
    assert r1.accepted_draft_tokens > 0 and r1.finish_reason == "length"
    assert r2.tokens == pyvt.chat(model, turn2, max_new_tokens=30).tokens
    assert stats.prefix_cache_hits >= 1
    assert stats.prefix_cache_tokens_reused >= len(_chat_prompt(model, turn1, None)) + len(r1.tokens) - 1
    assert stats.draft_tokens >= r1.draft_tokens + r2.draft_tokens
    assert stats.accepted_draft_tokens >= r1.accepted_draft_tokens + r2.accepted_draft_tokens > 0
    for d, r in zip(DIALOGS[:3], together):
        assert r.tokens == pyvt.chat(model, d, max_new_tokens=12).tokens
    with pytest.raises(ValueError, match="prompt_lookup"):
        Engine(model, prompt_lookup=64)

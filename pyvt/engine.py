"""The serving engine: continuous batching over one model, a prefix cache, and an asyncio API.

:class:`Engine` owns a model and one scheduler thread. Requests (prepared prompts, see
:func:`pyvt.generation.prepare`) wait in a bounded queue; the scheduler admits them into the
running batch between decode steps and each step it

1. drops cancelled requests (a client that went away frees its slot within one step);
2. prefills waiting prompts, at most ``prefill_chunk`` prompt tokens per step, so a long
   prompt is prefilled in chunks interleaved with the decode steps of the running streams;
   a prompt whose beginning is in the prefix cache starts from a copy of those keys and
   values instead of recomputing them;
3. runs one decode step for every running request together (``vt_session_decode_batch``:
   the linears see one row per request) and hands each request its new piece.

Every request's tokens are those :func:`pyvt.generate` gives for it alone (the same
:class:`~pyvt.generation._Sequence` chooses, detokenizes and stops; greedy results agree,
sampled ones draw from the request's own seed at its own step).

:class:`PrefixCache` keeps finished requests' KV caches (prompt and generated tokens), least
recently used first out, within a byte budget; a new request copies the longest cached
prefix of its prompt (``vt_session_copy_prefix``), so a multi-turn chat prefills only its new
turn and requests sharing a system prompt prefill it once.

:class:`AsyncEngine` is the asyncio face the server (:mod:`pyvt.server`) uses, and what an
application embedding pyvt uses: ``await engine.generate(...)``, ``async for piece in
engine.stream(...)``, and their chat forms.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable, Mapping, Sequence

import numpy as np

from . import _model
from .generation import Prepared, _make_result, _Sequence, check_model, prepare, resolve_opts
from .model import ModelHandle
from .options import GenerateOpts, GenerateResult, StreamPiece
from .speculative import MAX_DRAFT

__all__ = ["AsyncEngine", "Engine", "EngineClosed", "EngineStats", "PrefixCache", "QueueFull", "Run"]

_log = logging.getLogger("pyvt")

#: Most sequences one native decode step takes (VT_MAX_BATCH).
MAX_BATCH = int(_model.MAX_BATCH)


class QueueFull(RuntimeError):
    """The engine's queue holds ``max_queue`` requests already: try again later."""

    def __init__(self, message: str, retry_after: float):
        super().__init__(message)
        self.retry_after = retry_after


class EngineClosed(RuntimeError):
    """The engine is shutting down or closed: it takes no new requests."""


class Cancelled(RuntimeError):
    """The request was cancelled before it finished."""


# ==========================================================================================
# Prefix cache
# ==========================================================================================


@dataclass
class _Entry:
    ids: np.ndarray           # int32 [n]: the tokens whose keys and values the session holds
    session: "_model.Session"
    nbytes: int


class PrefixCache:
    """KV caches of finished requests, keyed by their token ids, within ``budget_bytes``.

    ``lookup(ids)`` gives the entry sharing the longest prefix with ``ids`` (at least
    ``min_tokens`` long, at most ``len(ids) - 1``: the last prompt token must run to give
    the first logits). ``insert`` takes ownership of a session; entries whose tokens are a
    prefix of the new one's are dropped (it covers them), and the least recently used go
    first when the budget is exceeded. Used by the scheduler thread only (not thread-safe);
    the counters are read by other threads for metrics.
    """

    def __init__(self, budget_bytes: int, bytes_per_token: int, min_tokens: int = 16):
        if budget_bytes < 0:
            raise ValueError(f"prefix cache budget must be >= 0 bytes, got {budget_bytes}")
        self.budget = int(budget_bytes)
        self.per_token = max(1, int(bytes_per_token))
        self.min_tokens = max(1, int(min_tokens))
        self._entries: collections.OrderedDict[int, _Entry] = collections.OrderedDict()
        self._keys = itertools.count()
        self.bytes = 0
        self.lookups = 0
        self.hits = 0
        self.tokens_reused = 0
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._entries)

    @staticmethod
    def _common(a: np.ndarray, b: np.ndarray) -> int:
        m = min(len(a), len(b))
        if m == 0:
            return 0
        eq = a[:m] == b[:m]
        return m if bool(eq.all()) else int(np.argmin(eq))

    def lookup(self, ids: np.ndarray) -> tuple["_model.Session | None", int]:
        """(session, n): a cached session whose first n positions hold ids[:n], or (None, 0)."""
        self.lookups += 1
        best_key, best_n = None, 0
        for key, e in self._entries.items():
            n = min(self._common(e.ids, ids), len(ids) - 1)
            if n > best_n:
                best_key, best_n = key, n
        if best_key is None or best_n < self.min_tokens:
            return None, 0
        self._entries.move_to_end(best_key)
        self.hits += 1
        self.tokens_reused += best_n
        return self._entries[best_key].session, best_n

    def insert(self, ids: np.ndarray, session: "_model.Session") -> None:
        """Keep session (holding the keys and values of ids); closes what it does not keep."""
        n = len(ids)
        nbytes = n * self.per_token
        if n < self.min_tokens or nbytes > self.budget:
            session.close()
            return
        for key, e in list(self._entries.items()):
            c = self._common(e.ids, ids)
            if c == len(e.ids):              # the old entry is a prefix of the new one
                self._drop(key)
            elif c == n:                     # the new one is a prefix of a cached entry
                self._entries.move_to_end(key)
                session.close()
                return
        self._entries[next(self._keys)] = _Entry(np.array(ids, dtype=np.int32), session, nbytes)
        self.bytes += nbytes
        while self.bytes > self.budget and self._entries:
            self._drop(next(iter(self._entries)))
            self.evictions += 1

    def _drop(self, key: int) -> None:
        e = self._entries.pop(key)
        self.bytes -= e.nbytes
        e.session.close()

    def clear(self) -> None:
        for key in list(self._entries):
            self._drop(key)


def kv_bytes_per_token(info: Mapping[str, Any]) -> int:
    """Bytes one cached position takes: libvt's count (``cache_bytes_per_token``: the attending
    layers' keys and values, LFM2's convolution rows) when the info has it, else K and V per layer
    and KV head (f16 or f32 elements, or int8 ones plus an f32 scale each)."""
    if "cache_bytes_per_token" in info:
        return int(info["cache_bytes_per_token"])
    hd = int(info["head_dim"])
    per_vector = {"f32": 4 * hd, "f16": 2 * hd, "int8": hd + 4}[info["kv_cache"]]
    return int(info["num_layers"]) * int(info["num_kv_heads"]) * 2 * per_vector


# ==========================================================================================
# Requests and the scheduler
# ==========================================================================================

#: What a request's sink receives: a piece (the last one carries the result), or the
#: exception that ended the request.
Sink = Callable[["StreamPiece | BaseException"], None]

_ids = itertools.count(1)


class Request:
    """One prompt in the engine. ``cancel()`` it to stop it (the engine frees its slot at the
    next step). ``on_piece`` (the sink) is called from the scheduler thread."""

    def __init__(self, engine: "Engine", prep: Prepared, sink: Sink):
        self.id = next(_ids)
        self.engine = engine
        self.prep = prep
        self.sink = sink
        self.seq = _Sequence(engine.model, prep)
        self.session: _model.Session | None = None
        self.done_tokens = 0          # prompt positions in the session
        self.cancelled = False        # by its caller: nobody waits for more pieces
        self.abort: BaseException | None = None  # by the engine (shutdown): sent to the sink
        self.finished = False
        self.tok = 0
        self.raw: np.ndarray | None = None
        self.t_submit = time.perf_counter()
        self.t_start = 0.0
        self.prefill_s = 0.0
        self.decode_s = 0.0
        self.n_decode = 0
        self.ttft_s = 0.0
        self.cached_tokens = 0       # prompt tokens taken from the prefix cache

    def cancel(self) -> None:
        self.engine.cancel(self)

    @property
    def stopped(self) -> bool:
        return self.cancelled or self.abort is not None


@dataclass
class EngineStats:
    """A snapshot of the engine's counters (all since it started)."""

    waiting: int = 0
    running: int = 0
    requests_submitted: int = 0
    requests_finished: int = 0
    requests_cancelled: int = 0
    requests_failed: int = 0
    requests_rejected: int = 0
    prompt_tokens: int = 0
    generated_tokens: int = 0
    decode_steps: int = 0
    prefix_cache_lookups: int = 0
    prefix_cache_hits: int = 0
    prefix_cache_tokens_reused: int = 0
    prefix_cache_entries: int = 0
    prefix_cache_bytes: int = 0
    prefix_cache_evictions: int = 0
    draft_tokens: int = 0            # prompt lookup: drafted tokens checked
    accepted_draft_tokens: int = 0   # ... and those the model confirmed
    batch_sizes: dict[int, int] = field(default_factory=dict)


class Engine:
    """Continuous batching over one model (see the module docstring).

    * ``max_batch`` — most requests running (prefilled and decoding) at once (1..64).
    * ``max_queue`` — most requests waiting to start; :meth:`submit` beyond it raises
      :class:`QueueFull` (the server answers 429 with ``Retry-After``).
    * ``prefill_chunk`` — most prompt tokens prefilled between two decode steps.
    * ``prefix_cache_bytes`` — the prefix cache's budget (0: no prefix cache).
    * ``prompt_lookup`` — speculative decoding by prompt lookup for a request that decodes
      alone (no other running): up to this many drafted tokens per step, as
      ``GenerateOpts.prompt_lookup_num_tokens`` (which a request may also set itself); 0 = off.
      Several running requests decode as one batch instead.

    The engine does not own the model: close the engine before the model.
    """

    def __init__(self, model: ModelHandle, *, max_batch: int = 32, max_queue: int = 256,
                 prefill_chunk: int = 256, prefix_cache_bytes: int = 256 << 20, prefix_min_tokens: int = 16,
                 prompt_lookup: int = 0):
        self.model = check_model(model)
        for name, v, lo, hi in (("max_batch", max_batch, 1, MAX_BATCH), ("max_queue", max_queue, 0, 1 << 20),
                                ("prefill_chunk", prefill_chunk, 1, 1 << 20),
                                ("prefix_cache_bytes", prefix_cache_bytes, 0, 1 << 50),
                                ("prefix_min_tokens", prefix_min_tokens, 1, 1 << 20),
                                ("prompt_lookup", prompt_lookup, 0, MAX_DRAFT)):
            if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
                raise ValueError(f"{name} must be an integer in [{lo}, {hi}], got {v!r}")
        self.max_batch = max_batch
        self.max_queue = max_queue
        self.prefill_chunk = prefill_chunk
        self.prompt_lookup = prompt_lookup
        self.cache = PrefixCache(prefix_cache_bytes, kv_bytes_per_token(self.model.info), prefix_min_tokens) \
            if prefix_cache_bytes > 0 else None
        self._cond = threading.Condition()
        self._waiting: collections.deque[Request] = collections.deque()
        self._active: list[Request] = []     # admitted: prefilling (done_tokens < n) or decoding
        self._closing = False
        self._closed = False
        self._stats = EngineStats()
        self._step_s = 0.05                  # a running estimate of one step, for Retry-After
        self._thread = threading.Thread(target=self._loop, name="pyvt-engine", daemon=True)
        self._thread.start()

    # ---- the caller's side (any thread) ------------------------------------------------

    def submit(self, prep: Prepared, sink: Sink) -> Request:
        """Queue one prepared prompt; ``sink`` receives its pieces (see :data:`Sink`)."""
        return self.submit_many([prep], [sink])[0]

    def submit_many(self, preps: Sequence[Prepared], sinks: Sequence[Sink]) -> list[Request]:
        """Queue several prompts at once: all of them, or none (QueueFull / EngineClosed)."""
        reqs = [Request(self, p, s) for p, s in zip(preps, sinks)]
        with self._cond:
            if self._closing:
                raise EngineClosed("the engine is shutting down")
            free = self.max_batch - len(self._active)
            if len(self._waiting) + len(reqs) > self.max_queue + max(0, free):
                self._stats.requests_rejected += len(reqs)
                # Roughly when a slot frees: the queue ahead drains a batch per ~max_new steps.
                retry = max(1.0, min(60.0, self._step_s * 32 * (1 + len(self._waiting) / self.max_batch)))
                raise QueueFull(f"the request queue is full ({len(self._waiting)} waiting, max_queue="
                                f"{self.max_queue}, {len(self._active)} running)", retry)
            self._waiting.extend(reqs)
            self._stats.requests_submitted += len(reqs)
            self._cond.notify()
        return reqs

    def cancel(self, req: Request) -> None:
        """Stop a request: it gets no more pieces; its slot is freed at the next step."""
        with self._cond:
            req.cancelled = True
            self._cond.notify()

    def stats(self) -> EngineStats:
        with self._cond:
            s = EngineStats(**{k: v for k, v in vars(self._stats).items() if k != "batch_sizes"})
            s.batch_sizes = dict(self._stats.batch_sizes)
            s.waiting = len(self._waiting)
            s.running = len(self._active)
            c = self.cache
            if c is not None:
                s.prefix_cache_lookups, s.prefix_cache_hits = c.lookups, c.hits
                s.prefix_cache_tokens_reused, s.prefix_cache_entries = c.tokens_reused, len(c)
                s.prefix_cache_bytes, s.prefix_cache_evictions = c.bytes, c.evictions
        return s

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self, drain: bool = True, timeout: float | None = 30.0) -> None:
        """Stop taking requests; with ``drain``, let queued and running ones finish (up to
        ``timeout`` seconds), then cancel what is left (its sink gets :class:`EngineClosed`)
        and stop the scheduler. Idempotent."""
        with self._cond:
            self._closing = True
            if not drain:
                self._abort_all()
            self._cond.notify()
        deadline = None if timeout is None else time.monotonic() + timeout
        if drain:
            with self._cond:
                while self._waiting or self._active:
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        self._abort_all()
                        self._cond.notify()
                        break
                    self._cond.wait(timeout=min(0.1, left) if left is not None else 0.1)
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join()

    def _abort_all(self) -> None:  # with self._cond held
        for r in list(self._waiting) + self._active:
            if r.abort is None:
                r.abort = EngineClosed("the engine shut down before the request finished")

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---- the scheduler thread -------------------------------------------------------------

    def _loop(self) -> None:
        try:
            while True:
                with self._cond:
                    while not (self._waiting or self._active or self._closed):
                        self._cond.wait()
                    if self._closed and not self._waiting and not self._active:
                        break
                    if self._closed:
                        self._abort_all()
                    dropped = [r for r in self._waiting if r.cancelled or r.abort is not None]
                    if dropped:
                        self._waiting = collections.deque(
                            r for r in self._waiting if not (r.cancelled or r.abort is not None))
                    while self._waiting and len(self._active) < self.max_batch:
                        self._active.append(self._waiting.popleft())
                for r in dropped:
                    self._end(r, r.abort or Cancelled("cancelled"))
                t0 = time.perf_counter()
                self._drop_cancelled()
                self._prefill_some()
                self._decode_step()
                dt = time.perf_counter() - t0
                self._step_s = 0.9 * self._step_s + 0.1 * dt
                with self._cond:
                    self._cond.notify_all()   # close() waits on the queues emptying
        except BaseException as e:  # pragma: no cover - a bug in the scheduler itself
            _log.exception("pyvt engine: the scheduler stopped")
            with self._cond:
                reqs = list(self._waiting) + self._active
                self._waiting.clear()
                self._active = []
                self._closing = self._closed = True
                self._cond.notify_all()
            for r in reqs:
                self._end(r, RuntimeError(f"the engine's scheduler stopped: {e}"))
        finally:
            if self.cache is not None:
                self.cache.clear()

    def _emit(self, r: Request, item: "StreamPiece | BaseException") -> None:
        try:
            r.sink(item)
        except Exception:  # a sink's failure ends its request only
            _log.exception("pyvt engine: request %d's sink failed", r.id)
            r.cancelled = True

    def _end(self, r: Request, error: BaseException | None) -> None:
        """Take r out of the engine; its session goes to the prefix cache (or is closed)."""
        r.finished = True
        sess, r.session = r.session, None
        if sess is not None:
            r.seq.drop_unused_positions(sess, r.done_tokens)
            n = sess.length
            if self.cache is not None and n > 0 and not sess.closed:
                ids = np.concatenate([r.prep.ids[:r.done_tokens], np.asarray(r.seq.tokens, dtype=np.int32)])[:n]
                if len(ids) == n:
                    self.cache.insert(ids, sess)
                else:
                    sess.close()
            else:
                sess.close()
        with self._cond:
            if r in self._active:
                self._active.remove(r)
            if error is None:
                self._stats.requests_finished += 1
            elif isinstance(error, Cancelled):
                self._stats.requests_cancelled += 1
            else:
                self._stats.requests_failed += 1
        if error is not None and not isinstance(error, Cancelled):
            self._emit(r, error)

    def _drop_cancelled(self) -> None:
        for r in [r for r in self._active if r.stopped]:
            self._end(r, r.abort or Cancelled("cancelled"))

    def _accept(self, r: Request) -> None:
        piece = r.seq.accept(r.tok, r.raw)
        with self._cond:
            self._stats.generated_tokens += 1
        self._emit(r, piece)
        if r.seq.finish is not None:
            result = _make_result(r.prep, r.seq, r.prefill_s, r.decode_s, r.n_decode, r.ttft_s)
            self._end(r, None)  # the KV cache is released before the consumer sees the result
            self._emit(r, StreamPiece(text="", token=None, result=result))

    def _prefill_some(self) -> None:
        budget = self.prefill_chunk
        for r in list(self._active):
            if budget <= 0:
                break
            ids = r.prep.ids
            if r.stopped or r.finished or r.done_tokens >= len(ids):
                continue
            try:
                if r.session is None:
                    r.t_start = time.perf_counter()
                    if r.prep.opts.max_new_tokens == 0:
                        result = _make_result(r.prep, r.seq, 0.0, 0.0, 0, 0.0)
                        r.done_tokens = len(ids)
                        self._end(r, None)
                        self._emit(r, StreamPiece(text="", token=None, result=result))
                        continue
                    r.session = self.model._native.new_session(len(ids) + r.prep.opts.max_new_tokens)
                    with self._cond:
                        self._stats.prompt_tokens += len(ids)
                    if self.cache is not None and not r.prep.opts.echo:
                        src, n = self.cache.lookup(ids)
                        if src is not None:
                            r.session.copy_prefix(src, n)
                            r.done_tokens = r.cached_tokens = n
                t = time.perf_counter()
                rest = len(ids) - r.done_tokens
                if r.prep.opts.echo or rest <= budget:
                    # The last chunk: the sequence's own prefill chooses the first token.
                    r.tok, r.raw = r.seq.prefill(r.session, r.done_tokens)
                    budget -= rest
                    r.done_tokens = len(ids)
                    self._cache_prompt(r)
                    now = time.perf_counter()
                    r.prefill_s += now - t
                    r.ttft_s = r.prep.tokenize_s + (now - r.t_start)
                    self._accept(r)
                else:
                    r.session.prefill(ids[r.done_tokens:r.done_tokens + budget], choose=False)
                    r.done_tokens += budget
                    r.prefill_s += time.perf_counter() - t
                    budget = 0
            except Exception as e:  # this request's error (out of memory, a bad token...)
                self._end(r, e)

    def _cache_prompt(self, r: Request) -> None:
        """Offer a copy of r's freshly prefilled prompt to the prefix cache at once, so that
        requests arriving together with it (the same system prompt, say) reuse it instead of
        each prefilling it; the request's own session goes to the cache when it ends, and that
        entry then covers this one."""
        ids = r.prep.ids
        if self.cache is None or r.prep.opts.echo or len(ids) < self.cache.min_tokens:
            return
        if len(ids) * self.cache.per_token > self.cache.budget:
            return
        try:
            snap = self.model._native.new_session(len(ids))
        except Exception:  # no memory for the copy: the request itself is unaffected
            _log.debug("pyvt engine: no prefix-cache copy of request %d's prompt", r.id, exc_info=True)
            return
        try:
            snap.copy_prefix(r.session, len(ids))
        except Exception:
            snap.close()
            _log.debug("pyvt engine: no prefix-cache copy of request %d's prompt", r.id, exc_info=True)
            return
        self.cache.insert(ids, snap)

    def _decode_step(self) -> None:
        rows = [r for r in self._active
                if not r.stopped and not r.finished and r.session is not None and r.done_tokens >= len(r.prep.ids)]
        if not rows:
            return
        with self._cond:
            self._stats.decode_steps += 1
            self._stats.batch_sizes[len(rows)] = self._stats.batch_sizes.get(len(rows), 0) + 1
        for g0 in range(0, len(rows), MAX_BATCH):
            group = rows[g0:g0 + MAX_BATCH]
            td = time.perf_counter()
            if len(group) == 1 and self._speculate(group[0], td):
                continue
            try:
                if len(group) == 1:
                    r = group[0]
                    r.tok, r.raw = r.seq.decode(r.session, r.tok)
                else:
                    nxt, logits = _model.decode_batch([r.session for r in group], [r.tok for r in group],
                                                      [r.seq.batch_options() for r in group],
                                                      want_logits=any(r.seq.need_logits for r in group))
                    for j, r in enumerate(group):
                        r.tok, r.raw = r.seq.batch_pick(nxt[j], logits[j] if logits is not None else None)
            except Exception as e:
                for r in group:
                    self._end(r, e)
                continue
            dt = time.perf_counter() - td
            for r in group:
                r.decode_s += dt
                r.n_decode += 1
                if not r.stopped:
                    self._accept(r)

    def _speculate(self, r: Request, td: float) -> bool:
        """A lone request's step with a prompt-lookup draft (pyvt.speculative): False when it
        does not use one (no lookup asked for, or its steps need their logits rows)."""
        seq = r.seq
        if seq.lookup is None and self.prompt_lookup > 0:
            seq.start_lookup(self.prompt_lookup)
        if seq.lookup is None:
            return False
        drafted0, confirmed0 = seq.drafted, seq.confirmed
        try:
            chosen = seq.speculate(r.session, r.tok)
        except Exception as e:
            self._end(r, e)
            return True
        r.decode_s += time.perf_counter() - td
        with self._cond:
            self._stats.draft_tokens += seq.drafted - drafted0
            self._stats.accepted_draft_tokens += seq.confirmed - confirmed0
        for tok in chosen:
            if r.stopped or r.finished:
                break
            r.tok, r.raw = tok, None
            r.n_decode += 1
            self._accept(r)
        return True


# ==========================================================================================
# asyncio
# ==========================================================================================


class Run:
    """Prompts submitted together to an :class:`AsyncEngine` (see :meth:`AsyncEngine.open`):
    ``async for index, piece in run`` gives each prompt's pieces as they come, its last one
    carrying its result; a request's failure is raised. ``cancel()`` stops those still
    running (also what leaving an ``async with`` block does)."""

    def __init__(self, engine: "AsyncEngine", preps: Sequence[Prepared]):
        loop = asyncio.get_running_loop()
        self._q: asyncio.Queue[tuple[int, Any]] = asyncio.Queue()
        q = self._q

        def sink_for(i: int) -> Sink:
            return lambda item: loop.call_soon_threadsafe(q.put_nowait, (i, item))

        self.requests = engine.engine.submit_many(list(preps), [sink_for(i) for i in range(len(preps))])
        self._left = len(self.requests)

    def __aiter__(self) -> "Run":
        return self

    async def __anext__(self) -> tuple[int, StreamPiece]:
        if self._left == 0:
            raise StopAsyncIteration
        try:
            i, item = await self._q.get()
        except BaseException:  # cancelled while waiting: nobody will read the rest
            self.cancel()
            raise
        if isinstance(item, BaseException):
            self.cancel()
            raise item
        if item.result is not None:
            self._left -= 1
        return i, item

    def cancel(self) -> None:
        """Cancel every request of this run that has not finished (idempotent)."""
        self._left = 0
        for r in self.requests:
            if not r.finished:
                r.cancel()

    async def __aenter__(self) -> "Run":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.cancel()


class AsyncEngine:
    """The engine for asyncio applications (and :mod:`pyvt.server`)::

        engine = pyvt.AsyncEngine(pyvt.load_model(path), max_batch=16)
        result = await engine.generate("Once upon a time", max_new_tokens=40)
        async for piece in engine.stream("Hello", max_new_tokens=20):
            print(piece.text, end="")
        reply = await engine.chat([{"role": "user", "content": "Hi"}])
        await engine.aclose()

    Options are those of :func:`pyvt.generate` (a :class:`~pyvt.GenerateOpts` and/or keyword
    overrides). Requests from many tasks run together in one batch; leaving an ``async
    for`` early, or cancelling the task awaiting ``generate``, cancels the request.
    Prompts are tokenized (and chat templates rendered) in a worker thread.
    """

    def __init__(self, model: ModelHandle, **engine_options: Any):
        self.model = check_model(model)
        self.engine = Engine(self.model, **engine_options)

    # ---- preparing ---------------------------------------------------------------------------

    def prepare(self, prompt: Any, opts: GenerateOpts | None = None, **overrides: Any) -> Prepared:
        """Validate options and tokenize (blocking; :meth:`aprepare` runs it in a thread)."""
        return prepare(self.model, prompt, resolve_opts(opts, overrides))

    async def aprepare(self, prompt: Any, opts: GenerateOpts | None = None, **overrides: Any) -> Prepared:
        return await asyncio.to_thread(self.prepare, prompt, opts, **overrides)

    async def chat_prompt(self, messages: Any, chat_template: str | None = None) -> list[int]:
        """The token ids of a dialog with the model's chat template (in a worker thread)."""
        from .chat import _chat_prompt

        return await asyncio.to_thread(_chat_prompt, self.model, messages, chat_template)

    # ---- running -------------------------------------------------------------------------------

    def open(self, preps: Sequence[Prepared]) -> "Run":
        """Submit prepared prompts now (raises QueueFull / EngineClosed at once, before anything
        runs) and return their :class:`Run`: an async iterator of ``(index, piece)``."""
        return Run(self, preps)

    async def stream_prepared(self, preps: Sequence[Prepared]) -> AsyncIterator[tuple[int, StreamPiece]]:
        """Run prepared prompts; yields ``(index, piece)`` as pieces come (each prompt's last
        piece carries its result). Leaving the loop cancels what is still running."""
        run = self.open(preps)
        try:
            async for item in run:
                yield item
        finally:
            run.cancel()

    async def stream(self, prompt: Any, opts: GenerateOpts | None = None,
                     **overrides: Any) -> AsyncIterator[StreamPiece]:
        """:func:`pyvt.stream`, asynchronously: pieces as they are generated."""
        prep = await self.aprepare(prompt, opts, **overrides)
        async for _, piece in self.stream_prepared([prep]):
            yield piece

    async def generate(self, prompt: Any, opts: GenerateOpts | None = None, **overrides: Any) -> GenerateResult:
        """:func:`pyvt.generate`, asynchronously."""
        prep = await self.aprepare(prompt, opts, **overrides)
        return await self.run_prepared(prep)

    async def run_prepared(self, prep: Prepared) -> GenerateResult:
        async with self.open([prep]) as run:
            async for _, piece in run:
                if piece.result is not None:
                    return piece.result
        raise RuntimeError("the engine ended a request without a result")  # pragma: no cover

    async def chat(self, messages: Any, opts: GenerateOpts | None = None, *, chat_template: str | None = None,
                   **overrides: Any) -> GenerateResult:
        """:func:`pyvt.chat`, asynchronously: the reply to a dialog."""
        ids = await self.chat_prompt(messages, chat_template)
        return await self.generate(ids, opts, **overrides)

    async def chat_stream(self, messages: Any, opts: GenerateOpts | None = None, *,
                          chat_template: str | None = None, **overrides: Any) -> AsyncIterator[StreamPiece]:
        ids = await self.chat_prompt(messages, chat_template)
        async for piece in self.stream(ids, opts, **overrides):
            yield piece

    def stats(self) -> EngineStats:
        return self.engine.stats()

    async def aclose(self, drain: bool = True, timeout: float | None = 30.0) -> None:
        """Stop the engine (see :meth:`Engine.close`) without blocking the event loop."""
        await asyncio.to_thread(self.engine.close, drain, timeout)

    def close(self, drain: bool = True, timeout: float | None = 30.0) -> None:
        self.engine.close(drain, timeout)

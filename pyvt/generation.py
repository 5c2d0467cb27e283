"""Generation: :func:`generate`, :func:`stream` and :func:`text_completion` (SPEC §4, §10).

The heavy lifting is native: one call prefills the whole prompt as a batch, then one call
per token runs embedding -> all blocks -> final norm -> lm_head -> argmax/sampling. Python
tokenizes, loops over those calls and turns the ids into text.

There is one generation loop, :meth:`_Run.pieces`: it prefills each prompt on its own, then
decodes the live sequences together, one native call per step. :func:`stream` runs it on one
prompt and hands out its pieces; :func:`generate` consumes that stream; :func:`text_completion`
(and :func:`pyvt.chat_completion`) run it on up to ``max_batch_size`` prompts at a time. A
streamed, a plain and a batched run therefore cannot diverge. Per token it does, in order:

1. the native decode step, which also chooses the next token (penalties, min-p,
   temperature, top-k / top-p: libvt's one token chooser; with ``echo``, and with
   ``json_schema`` / ``json_object``, the same chooser is called on the logits row with the
   step passed explicitly — under a grammar, after :mod:`pyvt.structured`'s mask set the
   forbidden tokens to -inf; the grammar then advances past the chosen token);
2. when asked: logprobs of the chosen token from the *processed* logits (see
   :class:`~pyvt.GenerateOpts`; the row from libvt's ``vt_logits_process``);
3. the text side (:mod:`pyvt.stream`): UTF-8-safe detokenization, then stop strings.

``check_model``, ``resolve_opts``, ``check_batch_size``, ``prepare``, ``Stream`` /
``open_stream`` and ``run_batch`` are what :mod:`pyvt.chat` builds on.
"""

from __future__ import annotations

import logging
import secrets
import time
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from . import _model
from ._ops import logits_process
from .model import ModelHandle, as_token_array
from .ops import argmax, sample
from .options import GenerateOpts, GenerateResult, StreamPiece, TokenLogprob, default_generate_opts, is_int
from .stream import CONTEXT_TOKENS, IncrementalDecoder, StopMatcher
from .speculative import DraftPolicy, PromptLookup
from .structured import JsonConstraint, JsonGrammar, compile_json_grammar, grammar_tokenizer

__all__ = ["Stream", "generate", "stream", "text_completion"]

_log = logging.getLogger("pyvt")

#: Default number of sequences decoded together by text_completion / chat_completion.
DEFAULT_MAX_BATCH_SIZE = 8

#: Prompt positions whose logits one prefill call returns when ``echo`` needs them all
#: (bounds the [chunk, vocab] float32 buffer).
_ECHO_CHUNK = 128


# ==========================================================================================
# Logprobs
# ==========================================================================================
#
# libvt chooses tokens and processes logits (vt_logits_process: the penalties over a token
# history, the min-p mask — the row its chooser weighs). What is left to Python is turning
# that row into log-probabilities.


def _log_softmax(z: np.ndarray) -> np.ndarray:
    """float64 log-softmax of a 1-D or 2-D (row-wise) array."""
    z = np.asarray(z, dtype=np.float64)
    m = np.max(z, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    lse = m + np.log(np.sum(np.exp(z - m), axis=-1, keepdims=True))
    return z - lse


def _top_n(lp: np.ndarray, n: int) -> tuple[tuple[int, float], ...]:
    """The n largest entries of a 1-D array as (index, value), largest first (ties: lower index)."""
    if n <= 0:
        return ()
    n = min(n, lp.shape[0])
    idx = np.argpartition(-lp, n - 1)[:n]
    idx = sorted((int(i) for i in idx), key=lambda i: (-lp[i], i))
    return tuple((i, float(lp[i])) for i in idx)


# ==========================================================================================
# Generation
# ==========================================================================================


def resolve_opts(opts: GenerateOpts | None, overrides: Mapping[str, Any]) -> GenerateOpts:
    if opts is None:
        opts = default_generate_opts()
    elif not isinstance(opts, GenerateOpts):
        raise TypeError(f"opts must be a GenerateOpts, got {type(opts).__name__}")
    return opts.replace(**overrides) if overrides else opts


def check_model(model: Any) -> "ModelHandle":
    if not isinstance(model, ModelHandle):
        raise TypeError(f"model must be a ModelHandle from load_model(), got {type(model).__name__}")
    if model.closed:
        raise RuntimeError("model is closed")
    return model


@dataclass(frozen=True)
class Prepared:
    """A validated prompt with everything decided before any native work."""

    ids: np.ndarray      # int32 [n] prompt token ids (after truncation)
    opts: GenerateOpts
    seed: int
    truncated: int       # prompt tokens dropped by truncate_prompt
    tokenize_s: float
    grammar: JsonGrammar | None = None  # json_schema / json_object: the grammar and its tokenizer


def prepare(model: "ModelHandle", prompt: Any, opts: GenerateOpts, what: str = "prompt") -> Prepared:
    t0 = time.perf_counter()
    if isinstance(prompt, str):
        # No tokenizer turns more than this many characters into max_seq_len tokens (a
        # normalizer may fold a few characters into one: the factor 4). A 40 MB prompt is
        # refused (or, with truncate_prompt, cut) before minutes of tokenizing. max_token_chars
        # is at least 1, so a prompt within max_seq_len * 4 + 1024 characters passes without
        # it: its first reading walks the whole vocabulary (~30 ms of the first call's time to
        # first token with SmolLM2's 49k tokens).
        if len(prompt) > model.max_seq_len * 4 + 1024 and len(prompt) > (
                limit := model.max_seq_len * model.tokenizer.max_token_chars * 4 + 1024):
            if not opts.truncate_prompt:
                raise ValueError(
                    f"{what} has {len(prompt)} characters, more than the model's context (max_seq_len="
                    f"{model.max_seq_len}) can hold at {model.tokenizer.max_token_chars} characters per token at "
                    "most; shorten it or pass truncate_prompt=True")
            cut = len(prompt) - limit
            space = prompt.find(" ", cut, cut + 1024)
            prompt = prompt[space if space >= 0 else cut:]
        ids: Any = model.encode(prompt)
    elif isinstance(prompt, (bytes, bytearray)):
        raise TypeError(f"{what} must be a str or a sequence of token ids, got bytes")
    else:
        ids = prompt
    arr = as_token_array(ids, int(model.info["vocab_size"]), what)
    n = len(arr)
    if n == 0:
        raise ValueError(f"{what} is empty (no tokens to condition on)")
    ctx = model.max_seq_len
    truncated = 0
    if n + opts.max_new_tokens > ctx:
        room = ctx - opts.max_new_tokens
        if not opts.truncate_prompt or room < 1:
            hint = "" if opts.truncate_prompt else "; lower max_new_tokens or pass truncate_prompt=True"
            raise ValueError(
                f"{what} ({n} tokens) + max_new_tokens ({opts.max_new_tokens}) exceeds the model's "
                f"context (max_seq_len={ctx}){hint}"
            )
        bos = model.tokenizer.bos_token_id
        if bos is not None and int(arr[0]) == bos and room >= 2:
            arr = np.concatenate([arr[:1], arr[n - (room - 1):]])
        else:
            arr = arr[n - room:]
        truncated = n - len(arr)
        _log.info("%s truncated: kept the last %d of %d tokens (max_new_tokens=%d, max_seq_len=%d)",
                  what, len(arr), n, opts.max_new_tokens, ctx)
    seed = int(opts.seed) if opts.seed is not None else secrets.randbits(63)
    grammar = None
    if opts._grammar_schema is not None:
        grammar = JsonGrammar(compile_json_grammar(opts._grammar_schema),
                              grammar_tokenizer(model.tokenizer, int(model.info["vocab_size"]), model.eos_token_ids))
    return Prepared(np.ascontiguousarray(arr, dtype=np.int32), opts, seed, truncated,
                    time.perf_counter() - t0, grammar)


class _Sequence:
    """One prompt's generation state — everything but the KV cache: the tokens so far,
    penalties, logprobs and the text pipeline (detokenizer -> stop strings)."""

    def __init__(self, model: "ModelHandle", prep: Prepared):
        opts = prep.opts
        self.model = model
        self.prep = prep
        self.opts = opts
        self.tokens: list[int] = []
        # json_schema / json_object: the grammar's state, which masks every choice. The JSON
        # ends with EOS (the only token the grammar then allows), whatever stop_on_eos says.
        self.constraint: JsonConstraint | None = prep.grammar.start() if prep.grammar is not None else None
        self.eos = model.eos_token_ids if opts.stop_on_eos or self.constraint is not None else frozenset()
        self.decoder = IncrementalDecoder(model.tokenizer, prep.ids[-CONTEXT_TOKENS:].tolist())
        self.stopper = StopMatcher(opts.stop)
        self.finish: str | None = None
        self.text_parts: list[str] = []
        self.want_logprobs = opts._wants_logprobs
        self.top_n = int(opts.top_logprobs)
        # Who chooses the next token: libvt inside the decode call (the fast path), or the
        # same chooser called from Python on the logits row when echo's chunked prefill would
        # advance the session's sampling step (Python passes the step explicitly) or when a
        # grammar masks the row first.
        self.python_pick = bool(opts.echo) or self.constraint is not None
        self.need_logits = self.python_pick or self.want_logprobs
        self.logprobs: list[TokenLogprob] = []
        self.prompt_logprobs: list[TokenLogprob] | None = [] if opts.echo else None
        self._z: np.ndarray | None = None  # processed logits of the last choice
        penalties = dict(repetition_penalty=float(opts.repetition_penalty),
                         frequency_penalty=float(opts.frequency_penalty),
                         presence_penalty=float(opts.presence_penalty))
        self.sampling = dict(temperature=float(opts.temperature), top_k=opts._native_top_k(),
                             top_p=float(opts.top_p), seed=prep.seed, min_p=float(opts.min_p), **penalties)
        self._penalties = penalties if opts._has_penalties else None
        self._greedy = dict(temperature=0.0, top_k=0, top_p=1.0, seed=0)
        # Speculative decoding by prompt lookup (pyvt.speculative), where the native chooser
        # picks every token (no logits row wanted).
        self.lookup: PromptLookup | None = None
        self.policy: DraftPolicy | None = None
        self.drafted = self.confirmed = 0
        if opts.prompt_lookup_num_tokens > 0:
            self.start_lookup(int(opts.prompt_lookup_num_tokens))

    # ---- choosing ----------------------------------------------------------------------

    def processed(self, raw: np.ndarray) -> np.ndarray:
        """The raw logits with the penalties over this sequence's history applied (libvt's
        vt_logits_process: repetition over prompt + generated tokens, frequency / presence
        over the generated ones) — the row logprobs are taken from."""
        if self._penalties is None:
            return raw
        return logits_process(raw, self.prep.ids, self.tokens, min_p_mask=False, **self._penalties)

    def choose(self, raw: np.ndarray) -> int:
        """The token libvt's session chooses from these raw logits at this sequence's step:
        penalties, then vt_argmax, or the min-p mask and vt_sample with this seed and step.
        Under a grammar, the tokens it forbids are set to -inf after the penalties."""
        z = self.processed(raw)
        self._z = z
        if self.constraint is not None:
            z = self.constraint.mask(z)
        o = self.opts
        if o.temperature == 0:
            return argmax(z)
        if o.min_p > 0:
            z = logits_process(z, temperature=float(o.temperature), min_p=float(o.min_p), penalties=False)
        return sample(z, o.temperature, o.top_k, o.top_p, self.prep.seed, len(self.tokens))

    def _entry(self, z: np.ndarray, tok: int, temperature: float) -> TokenLogprob:
        zz = np.asarray(z, dtype=np.float64)
        if temperature > 0:
            zz = zz / temperature
        lp = _log_softmax(zz)
        return TokenLogprob(tok, self.model.tokenizer.decode([tok], skip_special_tokens=False),
                            float(lp[tok]), _top_n(lp, self.top_n))

    # ---- native calls --------------------------------------------------------------------

    def prefill(self, sess: "_model.Session", start: int = 0) -> tuple[int, np.ndarray | None]:
        """Prefill the prompt from position ``start`` (the positions before it are already in
        ``sess``: a prefix cache's copy or earlier chunks, prefilled with ``choose=False``)."""
        ids = self.prep.ids[start:]
        if self.opts.echo:
            assert start == 0, "echo needs every prompt position's logits"
            return self._prefill_echo(sess)
        if self.need_logits:
            tok, raw = sess.prefill(ids, logits="last",
                                    **(self._greedy if self.python_pick else self.sampling))
            return (self.choose(raw) if self.python_pick else tok), raw
        tok, _ = sess.prefill(ids, **self.sampling)
        return tok, None

    def _prefill_echo(self, sess: "_model.Session") -> tuple[int, np.ndarray | None]:
        ids = self.prep.ids
        tk = self.model.tokenizer
        out = self.prompt_logprobs
        assert out is not None
        out.append(TokenLogprob(int(ids[0]), tk.decode([int(ids[0])], skip_special_tokens=False), None, ()))
        last = None
        for c0 in range(0, len(ids), _ECHO_CHUNK):
            chunk = ids[c0:c0 + _ECHO_CHUNK]
            _, lg = sess.prefill(chunk, logits="all", **self._greedy)
            lp = _log_softmax(lg)          # row r predicts ids[c0 + r + 1]
            for r in range(len(chunk)):
                g = c0 + r + 1
                if g < len(ids):
                    t = int(ids[g])
                    out.append(TokenLogprob(t, tk.decode([t], skip_special_tokens=False),
                                            float(lp[r, t]), _top_n(lp[r], self.top_n)))
            last = np.array(lg[-1], copy=True)
            del lg, lp
        assert last is not None
        return self.choose(last), last

    def decode(self, sess: "_model.Session", tok: int) -> tuple[int, np.ndarray | None]:
        if self.need_logits:
            nxt, raw = sess.decode(tok, want_logits=True,
                                   **(self._greedy if self.python_pick else self.sampling))
            return (self.choose(raw) if self.python_pick else nxt), raw
        nxt, _ = sess.decode(tok, **self.sampling)
        return nxt, None

    def start_lookup(self, limit: int) -> None:
        """Speculative decoding by prompt lookup from here on, with drafts of up to ``limit``
        tokens, unless this sequence's steps need their logits rows (logprobs, echo, a
        grammar): then nothing changes."""
        if self.need_logits or self.lookup is not None:
            return
        self.lookup = PromptLookup(self.prep.ids.tolist() + self.tokens)
        self.policy = DraftPolicy(limit)

    def speculate(self, sess: "_model.Session", tok: int) -> list[int]:
        """One step with a prompt-lookup draft: ``tok`` and the draft in one verify call ->
        the tokens the model chose (1 .. draft + 1 of them); a plain decode step when there is
        no match or the policy says a draft would not pay."""
        lookup, policy = self.lookup, self.policy
        assert lookup is not None and policy is not None
        m = lookup.match()
        # No more drafted tokens than this sequence may still take after the next one.
        room = self.opts.max_new_tokens - len(self.tokens) - 1
        k = min(policy.choose(m[0]), room) if m is not None else 0
        draft = lookup.draft(k, m) if m is not None else []
        t0 = time.perf_counter()
        if not draft:
            nxt = self.decode(sess, tok)[0]
            policy.timed(1, time.perf_counter() - t0)
            return [nxt]
        chosen = sess.verify([tok] + draft, **self.sampling)
        policy.timed(1 + len(draft), time.perf_counter() - t0)
        assert m is not None
        policy.update(m[0], len(draft), len(chosen) - 1)
        self.drafted += len(draft)
        self.confirmed += len(chosen) - 1
        return chosen

    def drop_unused_positions(self, sess: "_model.Session", prompt_positions: int) -> None:
        """Before ``sess`` goes to a prefix cache: a verify call may have run positions past
        the token this sequence ended at; keep those of the prompt and of every generated
        token but the last (which was never an input)."""
        kept = prompt_positions + len(self.tokens) - 1
        if self.tokens and not sess.closed and sess.length > kept:
            sess.truncate(kept)

    # ---- batched decode (text_completion): the same choice as decode(), split in two -----

    def batch_options(self) -> dict[str, Any]:
        """This sequence's native sampling options for one row of a batched decode step."""
        return self._greedy if self.python_pick else self.sampling

    def batch_pick(self, nxt: int, raw: np.ndarray | None) -> tuple[int, np.ndarray | None]:
        """The token to accept from a batched step's native choice and this row's logits."""
        if self.python_pick:
            assert raw is not None
            return self.choose(raw), raw
        return nxt, raw

    # ---- accepting a token ---------------------------------------------------------------

    def accept(self, tok: int, raw: np.ndarray | None) -> StreamPiece:
        """Record the chosen token; return its piece. Sets self.finish when done."""
        lp = None
        if self.want_logprobs:
            assert raw is not None
            z = self._z if self._z is not None else self.processed(raw)
            lp = self._entry(z, tok, float(self.opts.temperature))
            self.logprobs.append(lp)
        self._z = None
        self.tokens.append(tok)
        if self.lookup is not None:
            self.lookup.push((tok,))
        if self.constraint is not None and tok not in self.eos:
            self.constraint.advance(tok)
        text = ""
        if tok in self.eos:
            self.finish = "eos"   # the EOS token itself adds no text
        else:
            text, matched = self.stopper.feed(self.decoder.push(tok))
            if matched is not None:
                self.finish = "stop"
        if self.finish is None and len(self.tokens) >= self.opts.max_new_tokens:
            self.finish = "length"
        if self.finish in ("eos", "length"):
            more, matched = self.stopper.feed(self.decoder.flush())
            text += more
            if matched is not None:
                self.finish = "stop"
            else:
                text += self.stopper.flush()
        self.text_parts.append(text)
        return StreamPiece(text=text, token=tok, logprob=lp)


def _make_result(prep: Prepared, seq: _Sequence, prefill_s: float, decode_s: float, n_decode: int,
                 ttft_s: float) -> GenerateResult:
    """The GenerateResult of a finished sequence (times in seconds)."""
    n_prompt = len(prep.ids)
    seq.finish = seq.finish or "length"
    result = GenerateResult(
        tokens=tuple(seq.tokens),
        text="".join(seq.text_parts),
        prompt_tokens=n_prompt,
        total_tokens=n_prompt + len(seq.tokens),
        ms_per_token=(decode_s * 1e3 / n_decode) if n_decode else 0.0,
        prefill_ms=prefill_s * 1e3,
        time_to_first_token_ms=ttft_s * 1e3,
        finish_reason=seq.finish,
        seed=prep.seed,
        stop_sequence=seq.stopper.matched,
        logprobs=tuple(seq.logprobs) if seq.want_logprobs else None,
        prompt_logprobs=tuple(seq.prompt_logprobs) if seq.prompt_logprobs is not None else None,
        truncated_prompt_tokens=prep.truncated,
        draft_tokens=seq.drafted,
        accepted_draft_tokens=seq.confirmed,
    )
    _log.debug("generated %d tokens (prompt %d) in %.1f ms prefill + %.2f ms/token; finish: %s; "
               "drafted %d, accepted %d", len(seq.tokens), n_prompt, result.prefill_ms, result.ms_per_token,
               result.finish_reason, seq.drafted, seq.confirmed)
    return result


class _Run:
    """The generation loop over one group of prepared prompts, as a generator of
    ``(index, piece)``: each prompt is prefilled on its own, then the live sequences decode
    together, one native call per step (``Session.decode`` for one live row, one
    ``decode_batch`` call — the linears see m = rows — for several). Each sequence's pieces
    come in order, its last one carrying its :class:`~pyvt.GenerateResult`; a sequence's KV
    cache is freed as soon as it finishes, and all of them when the generator is closed.

    ``sessions`` holds the live KV caches (``None`` before a prompt's prefill and after it
    ends)."""

    def __init__(self, model: ModelHandle, preps: Sequence[Prepared], cache: Any = None):
        self.model = model
        self.preps = list(preps)
        self.sessions: list[_model.Session | None] = [None] * len(self.preps)
        # A prefix cache (pyvt.engine.PrefixCache: lookup / insert), or None: sessions start
        # from its longest matching prefix and go to it when their sequence ends.
        self.cache = cache

    def _release(self, prep: Prepared, seq: "_Sequence", sess: "_model.Session") -> None:
        if self.cache is None or sess.closed:
            sess.close()
            return
        seq.drop_unused_positions(sess, len(prep.ids))
        ids = np.concatenate([prep.ids, np.asarray(seq.tokens, dtype=np.int32)])[:sess.length]
        self.cache.insert(ids, sess)

    def pieces(self) -> Iterator[tuple[int, StreamPiece]]:
        model, preps, sessions = self.model, self.preps, self.sessions
        n = len(preps)
        seqs = [_Sequence(model, p) for p in preps]
        toks = [0] * n
        raws: list[np.ndarray | None] = [None] * n
        prefill_s = [0.0] * n
        decode_s = [0.0] * n
        n_decode = [0] * n
        ttft_s = [0.0] * n
        live: list[int] = []

        def accept(i: int, last: bool = True) -> Iterator[tuple[int, StreamPiece]]:
            seq = seqs[i]
            piece = seq.accept(toks[i], raws[i])
            if seq.finish is None:
                if last:  # (a verify call's earlier tokens: more of this row follow)
                    live.append(i)
                yield i, piece
                return
            sess, sessions[i] = sessions[i], None
            assert sess is not None
            self._release(preps[i], seq, sess)  # the KV cache goes now, before the consumer sees the last pieces
            yield i, piece
            result = _make_result(preps[i], seq, prefill_s[i], decode_s[i], n_decode[i], ttft_s[i])
            yield i, StreamPiece(text="", token=None, result=result)

        try:
            for i, (prep, seq) in enumerate(zip(preps, seqs)):
                if prep.opts.max_new_tokens == 0:
                    yield i, StreamPiece(text="", token=None, result=_make_result(prep, seq, 0.0, 0.0, 0, 0.0))
                    continue
                t_start = time.perf_counter()
                sessions[i] = sess = model._native.new_session(len(prep.ids) + prep.opts.max_new_tokens)
                tp = time.perf_counter()
                start = 0
                if self.cache is not None and not prep.opts.echo:
                    src, start = self.cache.lookup(prep.ids)
                    if src is not None:
                        sess.copy_prefix(src, start)
                toks[i], raws[i] = seq.prefill(sess, start)
                prefill_s[i] = time.perf_counter() - tp
                ttft_s[i] = prep.tokenize_s + (time.perf_counter() - t_start)
                yield from accept(i)
            while live:
                rows, live[:] = list(live), []
                td = time.perf_counter()
                if len(rows) == 1 and seqs[rows[0]].lookup is not None:
                    i = rows[0]
                    chosen = seqs[i].speculate(sessions[i], toks[i])
                    decode_s[i] += time.perf_counter() - td
                    for j, tok in enumerate(chosen):
                        toks[i], raws[i] = tok, None
                        n_decode[i] += 1
                        yield from accept(i, last=j + 1 == len(chosen))
                        if seqs[i].finish is not None:
                            break
                    continue
                if len(rows) == 1:
                    i = rows[0]
                    toks[i], raws[i] = seqs[i].decode(sessions[i], toks[i])
                else:
                    nxt, logits = _model.decode_batch([sessions[i] for i in rows], [toks[i] for i in rows],
                                                      [seqs[i].batch_options() for i in rows],
                                                      want_logits=any(seqs[i].need_logits for i in rows))
                    for j, i in enumerate(rows):
                        toks[i], raws[i] = seqs[i].batch_pick(nxt[j], logits[j] if logits is not None else None)
                dt = time.perf_counter() - td
                for i in rows:
                    decode_s[i] += dt
                    n_decode[i] += 1
                    yield from accept(i)
        finally:
            for k, sess in enumerate(sessions):
                if sess is not None:
                    sessions[k] = None
                    self._release(preps[k], seqs[k], sess)


class Stream(Iterator[StreamPiece]):
    """An iterator of :class:`StreamPiece` (see :func:`stream`).

    Work happens as pieces are asked for. ``close()`` — or breaking out of a ``for`` loop
    over ``pyvt.stream(...)`` directly, or leaving a ``with`` block — stops generation and
    frees the KV cache at once. ``result`` is the :class:`GenerateResult` once the last
    piece has been produced (``None`` before, and when stopped early); ``text`` is the text
    streamed so far.
    """

    def __init__(self, run: _Run):
        self._run = run
        self._it = run.pieces()
        self._parts: list[str] = []
        self.result: GenerateResult | None = None

    def __iter__(self) -> "Stream":
        return self

    def __next__(self) -> StreamPiece:
        _, piece = next(self._it)
        if piece.text:
            self._parts.append(piece.text)
        if piece.result is not None:
            self.result = piece.result
        return piece

    @property
    def text(self) -> str:
        return "".join(self._parts)

    def close(self) -> None:
        """Stop generating and free the KV cache now (idempotent)."""
        self._it.close()

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def open_stream(model: ModelHandle, prep: Prepared, cache: Any = None) -> Stream:
    """The :class:`Stream` of one prepared prompt (nothing runs before the first ``next``);
    ``cache``: a :class:`pyvt.engine.PrefixCache` to start from and to leave the KV cache in."""
    return Stream(_Run(model, [prep], cache))


def stream(
    model: ModelHandle,
    prompt: str | Sequence[int],
    opts: GenerateOpts | None = None,
    **overrides: Any,
) -> Stream:
    """Generate a continuation of ``prompt`` piece by piece.

    Returns a :class:`Stream`: one :class:`StreamPiece` per generated token (its id, the
    text delta that became final with it — never half a UTF-8 character, never part of a
    stop string — and its logprob when asked for), then a last piece whose ``result`` is the
    :class:`GenerateResult` (``finish_reason``, timings, seed)::

        for piece in pyvt.stream(model, "Once upon a time", max_new_tokens=40):
            print(piece.text, end="", flush=True)

    Options are validated and the prompt tokenized now (errors raise here, not at the first
    ``next``); the KV cache is allocated at the first ``next`` and freed as soon as the run
    ends, is closed, or the loop is left.
    """
    model = check_model(model)
    opts = resolve_opts(opts, overrides)
    return open_stream(model, prepare(model, prompt, opts))


def generate(
    model: ModelHandle,
    prompt: str | Sequence[int],
    opts: GenerateOpts | None = None,
    **overrides: Any,
) -> GenerateResult:
    """Generate a continuation of ``prompt`` (text, or token ids used as they are).

    The prompt is prefilled as one batch; each new token is one native call. Keyword
    overrides (``max_new_tokens=20``...) are applied on top of ``opts``. A fresh KV cache is
    used per call, so one handle serves many prompts, also from several threads. This is
    :func:`stream` run to the end: the result is the same.
    """
    return finish(stream(model, prompt, opts, **overrides))


def finish(s: Stream) -> GenerateResult:
    """Run a stream to its end and return its result."""
    for _ in s:
        pass
    assert s.result is not None
    return s.result


def check_batch_size(max_batch_size: Any) -> int:
    if not is_int(max_batch_size) or max_batch_size < 1:
        raise ValueError(f"max_batch_size must be an integer >= 1, got {max_batch_size!r}")
    return int(max_batch_size)


def run_batch(model: ModelHandle, preps: Sequence[Prepared], max_batch_size: int) -> list[GenerateResult]:
    """Run prepared prompts through the generation loop, up to max_batch_size at a time
    (the live sequences of a group decode together). Each result equals running that prompt
    alone (greedy; with sampling, each row draws from its own seed at its own step)."""
    results: list[GenerateResult] = []
    for g0 in range(0, len(preps), max_batch_size):
        group = preps[g0:g0 + max_batch_size]
        done: list[GenerateResult | None] = [None] * len(group)
        for i, piece in _Run(model, group).pieces():
            if piece.result is not None:
                done[i] = piece.result
        results += [r for r in done if r is not None]
    return results


def text_completion(
    model: ModelHandle,
    prompts: Sequence[str | Sequence[int]],
    opts: GenerateOpts | None = None,
    *,
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
    **overrides: Any,
) -> list[GenerateResult]:
    """Complete a batch of prompts (texts or token-id lists) with the same options.

    Returns one :class:`GenerateResult` per prompt, in order, each equal to what
    :func:`generate` gives for that prompt alone (greedy; with sampling, each prompt uses
    the seed on its own). Up to ``max_batch_size`` prompts are decoded together. Every
    prompt is validated (and tokenized) before any work starts.
    """
    model = check_model(model)
    opts = resolve_opts(opts, overrides)
    mbs = check_batch_size(max_batch_size)
    if isinstance(prompts, (str, bytes)) or not isinstance(prompts, Sequence):
        raise TypeError("prompts must be a list of prompts (str or token ids); for one prompt use generate()")
    preps = [prepare(model, p, opts, f"prompts[{i}]") for i, p in enumerate(prompts)]
    return run_batch(model, preps, mbs)

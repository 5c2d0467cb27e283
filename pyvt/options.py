"""Options and results of a generation (SPEC §4, §10): :class:`GenerateOpts` (validated on
construction), :class:`GenerateResult`, :class:`StreamPiece` and :class:`TokenLogprob`.

Plain frozen dataclasses with no native dependency: the model handle (:mod:`pyvt.model`)
and the generation loop (:mod:`pyvt.generation`) both read them.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .speculative import MAX_DRAFT

__all__ = [
    "GenerateOpts",
    "GenerateResult",
    "StreamPiece",
    "TokenLogprob",
    "default_generate_opts",
]

#: Hard cap on sampling candidates (the fused top-k width).
MAX_TOP_K = 256

#: Most alternatives ``top_logprobs`` may ask for per token.
MAX_TOP_LOGPROBS = 20

#: Most stop strings one call may give, and the longest (characters): every token's text is
#: checked against all of them, so their number and length bound the cost per token.
MAX_STOP_STRINGS = 256
MAX_STOP_CHARS = 4096


def _short(v: Any, n: int = 80) -> str:
    """repr(v) cut to n characters, for an error message about a value that may be huge."""
    r = repr(v)
    return r if len(r) <= n else r[: n - 3] + "..."


def is_int(v: Any) -> bool:
    """An integer (Python or numpy), not a bool."""
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def is_real(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def finite(v: Any) -> bool:
    return is_real(v) and math.isfinite(float(v))


@dataclass(frozen=True)
class GenerateOpts:
    """Options of one generation (SPEC §4, §10). Invalid values raise ``ValueError`` naming
    the field and the value. Every feature below is off by default.

    Length and sampling

    * ``max_new_tokens`` — most tokens to generate (>= 0).
    * ``temperature`` — 0 is argmax (deterministic); > 0 samples.
    * ``top_k`` — ``None``: no cap beyond the fused 256 candidates; else capped at 256.
    * ``top_p`` — nucleus mass in (0, 1].
    * ``min_p`` — in [0, 1]: drop tokens whose probability (after temperature) is below
      ``min_p`` times the most likely token's; 0 = off. Applied after top-k and temperature,
      before top-p.
    * ``seed`` — the sampler's seed: same model + prompt + options + seed -> same tokens.
      ``None``: a fresh random seed, reported in ``GenerateResult.seed`` so the run can be
      repeated.

    Penalties (applied to the raw logits before anything else, also when greedy)

    * ``repetition_penalty`` — > 0, 1 = off (CTRL / transformers): the logit of every token
      already present in the prompt or the generated text is divided by it when positive,
      multiplied by it when negative.
    * ``frequency_penalty`` — 0 = off (OpenAI): ``count × frequency_penalty`` is subtracted
      from the logit of every token generated ``count`` times so far.
    * ``presence_penalty`` — 0 = off (OpenAI): subtracted once from the logit of every token
      generated at least once so far.

    Stopping

    * ``stop_on_eos`` — stop after emitting any of the checkpoint's EOS ids.
    * ``stop`` — stop strings (a str or a sequence of them): generation ends at the first
      occurrence of any of them in the generated text, which is cut just before it
      (``finish_reason="stop"``). Works across token boundaries and while streaming. At most
      ``MAX_STOP_STRINGS`` (256) strings of at most ``MAX_STOP_CHARS`` (4096) characters.

    Logprobs

    * ``logprobs`` — report, for each generated token, its log-probability under the
      *processed* distribution: ``log_softmax(z)`` where ``z`` is the raw logits with the
      penalties applied and divided by ``temperature`` when ``temperature > 0`` (top-k,
      top-p and min-p truncation are not applied: every token keeps a finite logprob).
    * ``top_logprobs`` — also the N most likely alternatives at each step (0..20; > 0
      implies ``logprobs``).
    * ``echo`` — also report every prompt token with its logprob under the model's raw
      distribution (``log_softmax`` of the raw logits of the position before it; the first
      token has none).

    Structured output (needs ``llguidance``: ``pip install 'pyvt[json]'``)

    * ``json_schema`` — a JSON schema (a dict, or its JSON text; stored as its JSON text): the
      output is JSON that validates against it, enforced by a token mask at every step (only
      tokens the schema's grammar allows keep their logits; greedy, temperature, top-k /
      top-p, min-p and penalties then act as usual). Generation ends with an EOS token when
      the JSON is complete (``finish_reason="eos"``), whatever ``stop_on_eos`` says. Cut off
      by ``max_new_tokens`` (``finish_reason="length"``) or a stop string, the text is
      incomplete JSON. Laid out as ``json.dumps`` writes it (``", "``, ``": "``, one line)
      unless the schema's ``"x-guidance"`` says otherwise. A schema that is not a JSON object
      or that llguidance cannot compile raises ``ValueError``. ``logprobs`` are those of the
      unconstrained distribution (as documented above: the mask is not applied).
    * ``json_object`` — any JSON object (``{"type": "object"}``); not with ``json_schema``.

    Speed

    * ``prompt_lookup_num_tokens`` — speculative decoding by prompt lookup (0 = off, up to
      63; as Hugging Face's option of that name): when the sequence's last tokens occurred
      before, up to this many tokens that followed them are checked by the model in one
      batched pass, and every one it would have chosen itself is kept (:mod:`pyvt.speculative`).
      The tokens are plain decoding's — greedy or sampled, same seed — up to the float
      rounding of a batched pass; it pays where the output repeats its input (editing code,
      quoting, summarizing) and costs a little elsewhere. Used by a lone sequence
      (``generate``, ``stream``, a batch's last live sequence) without logprobs, ``echo`` or
      structured output; otherwise ignored.

    Context

    * ``truncate_prompt`` — when prompt + ``max_new_tokens`` exceeds the model's context,
      drop the oldest prompt tokens (keeping a leading BOS) instead of raising
      ``ValueError``.
    """

    max_new_tokens: int = 50
    temperature: float = 0.0
    top_k: int | None = None
    top_p: float = 1.0
    seed: int | None = 42
    stop_on_eos: bool = True
    stop: tuple[str, ...] = ()
    repetition_penalty: float = 1.0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    min_p: float = 0.0
    logprobs: bool = False
    top_logprobs: int = 0
    echo: bool = False
    truncate_prompt: bool = False
    json_schema: str | None = None
    json_object: bool = False
    prompt_lookup_num_tokens: int = 0

    def __post_init__(self) -> None:
        if not is_int(self.max_new_tokens) or self.max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be an integer >= 0, got {self.max_new_tokens!r}")
        if not finite(self.temperature) or self.temperature < 0:
            raise ValueError(f"temperature must be a finite number >= 0, got {self.temperature!r}")
        if self.top_k is not None and (not is_int(self.top_k) or self.top_k < 1):
            raise ValueError(f"top_k must be None or an integer >= 1, got {self.top_k!r}")
        if not is_real(self.top_p) or not (0.0 < self.top_p <= 1.0):
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p!r}")
        if self.seed is not None and (not is_int(self.seed) or not (0 <= self.seed < 2**64)):
            raise ValueError(f"seed must be None or an integer in [0, 2**64), got {self.seed!r}")
        for name in ("stop_on_eos", "logprobs", "echo", "truncate_prompt", "json_object"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ValueError(f"{name} must be a bool, got {getattr(self, name)!r}")
        stop = self.stop
        if isinstance(stop, str):
            stop = (stop,)
        elif stop is None:
            stop = ()
        try:
            stop = tuple(stop)
        except TypeError:
            raise ValueError(f"stop must be a str or a sequence of str, got {_short(self.stop)}") from None
        if len(stop) > MAX_STOP_STRINGS:
            raise ValueError(f"stop: at most {MAX_STOP_STRINGS} strings, got {len(stop)}")
        for s in stop:
            if not isinstance(s, str) or not s:
                raise ValueError(f"stop must hold non-empty strings, got {_short(s)} in stop={_short(self.stop)}")
            if len(s) > MAX_STOP_CHARS:
                raise ValueError(f"stop: each string at most {MAX_STOP_CHARS} characters, got one of {len(s)}")
        object.__setattr__(self, "stop", stop)
        if not finite(self.repetition_penalty) or self.repetition_penalty <= 0:
            raise ValueError(f"repetition_penalty must be a finite number > 0 (1 = off), got "
                             f"{self.repetition_penalty!r}")
        for name in ("frequency_penalty", "presence_penalty"):
            if not finite(getattr(self, name)):
                raise ValueError(f"{name} must be a finite number (0 = off), got {getattr(self, name)!r}")
        if not is_real(self.min_p) or not (0.0 <= self.min_p <= 1.0):
            raise ValueError(f"min_p must be in [0, 1] (0 = off), got {self.min_p!r}")
        if not is_int(self.prompt_lookup_num_tokens) or not (0 <= self.prompt_lookup_num_tokens <= MAX_DRAFT):
            raise ValueError(f"prompt_lookup_num_tokens must be an integer in [0, {MAX_DRAFT}] (0 = off), got "
                             f"{self.prompt_lookup_num_tokens!r}")
        if not is_int(self.top_logprobs) or not (0 <= self.top_logprobs <= MAX_TOP_LOGPROBS):
            raise ValueError(f"top_logprobs must be an integer in [0, {MAX_TOP_LOGPROBS}], got "
                             f"{self.top_logprobs!r}")
        if self.json_schema is not None:
            if self.json_object:
                raise ValueError("json_schema and json_object are exclusive: json_object=True asks for any JSON "
                                 "object, json_schema for one schema")
            from .structured import schema_text

            object.__setattr__(self, "json_schema", schema_text(self.json_schema))
        if self._grammar_schema is not None:
            from .structured import compile_json_grammar

            compile_json_grammar(self._grammar_schema)  # raises ValueError naming json_schema

    def replace(self, **changes: Any) -> "GenerateOpts":
        """A copy with some fields changed (validated again)."""
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise ValueError(f"unknown generate option(s): {', '.join(sorted(unknown))}")
        return dataclasses.replace(self, **changes)

    def _native_top_k(self) -> int:
        return 0 if self.top_k is None else min(int(self.top_k), MAX_TOP_K)

    @property
    def _wants_logprobs(self) -> bool:
        return bool(self.logprobs) or self.top_logprobs > 0

    @property
    def _grammar_schema(self) -> str | None:
        """The JSON schema text that constrains the output, or None."""
        if self.json_object:
            from .structured import ANY_OBJECT_SCHEMA

            return ANY_OBJECT_SCHEMA
        return self.json_schema

    @property
    def _has_penalties(self) -> bool:
        return (self.repetition_penalty != 1.0 or self.frequency_penalty != 0.0
                or self.presence_penalty != 0.0)


def default_generate_opts() -> GenerateOpts:
    """The SPEC defaults: 50 tokens, greedy, no top-k cap, top_p 1, seed 42, stop on EOS,
    no stop strings, no penalties, min_p 0, no logprobs."""
    return GenerateOpts()


@dataclass(frozen=True)
class TokenLogprob:
    """One token with its log-probability (natural log) and, when asked for, the most likely
    alternatives at that position.

    ``text`` is the token decoded alone (special tokens included; a byte of a multi-byte
    character shows as U+FFFD). ``logprob`` is ``None`` for the first prompt token (nothing
    precedes it). ``top`` holds ``(token id, logprob)`` pairs, most likely first.
    """

    token: int
    text: str
    logprob: float | None
    top: tuple[tuple[int, float], ...] = ()


@dataclass(frozen=True)
class GenerateResult:
    """What one generation produced.

    ``tokens`` are the generated ids (an EOS that ended generation included), ``text`` the
    generated text (special tokens skipped, cut before a stop string; with
    ``finish_reason == "stop"`` it may be shorter than ``decode(tokens)``). ``total_tokens``
    = prompt + generated, as OpenAI counts. ``ms_per_token`` is decode time per token (the
    first token comes from prefill and is not counted); ``time_to_first_token_ms`` includes
    tokenization. ``finish_reason`` is ``"eos"``, ``"length"`` or ``"stop"``, and
    ``stop_sequence`` the stop string that matched. ``seed`` is the sampler seed used (the
    random one when ``GenerateOpts.seed`` was ``None``). ``logprobs`` (one entry per
    generated token) and ``prompt_logprobs`` (``echo``) are ``None`` unless asked for.
    ``draft_tokens`` / ``accepted_draft_tokens``: with ``prompt_lookup_num_tokens``, the
    drafted tokens the model checked and those it confirmed (0 otherwise).
    """

    tokens: tuple[int, ...]
    text: str
    prompt_tokens: int
    total_tokens: int
    ms_per_token: float
    prefill_ms: float
    time_to_first_token_ms: float
    finish_reason: str  # "eos" | "length" | "stop"
    seed: int | None = None
    stop_sequence: str | None = None
    logprobs: tuple[TokenLogprob, ...] | None = None
    prompt_logprobs: tuple[TokenLogprob, ...] | None = None
    truncated_prompt_tokens: int = 0
    draft_tokens: int = 0
    accepted_draft_tokens: int = 0

    @property
    def generated_tokens(self) -> int:
        return len(self.tokens)

    @property
    def message(self) -> dict[str, str]:
        """The text as a chat message: ``{"role": "assistant", "content": text}``."""
        return {"role": "assistant", "content": self.text}

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (tuples as lists, logprobs as dicts, a number that is not
        finite as None: see :func:`json_ready`)."""
        d = dataclasses.asdict(self)
        d["tokens"] = list(self.tokens)
        for k in ("logprobs", "prompt_logprobs"):
            v = getattr(self, k)
            d[k] = None if v is None else [
                {"token": e.token, "text": e.text, "logprob": e.logprob,
                 "top": [{"token": t, "logprob": lp} for t, lp in e.top]} for e in v]
        return json_ready(d)


def json_ready(x: Any) -> Any:
    """x with every float that is not finite replaced by None, through dicts, lists and tuples.
    JSON has no NaN or Infinity (json.dumps writes them, and parsers refuse them): a logprob of
    a model whose activations overflow is NaN, a grammar's forbidden tokens' are -inf. Written
    as null, as the server's JSON responses (pydantic) already did."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: json_ready(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_ready(v) for v in x]
    return x


@dataclass(frozen=True)
class StreamPiece:
    """One step of :func:`stream`.

    One piece per generated token: ``token`` is its id, ``text`` the text that became final
    with it ("" while a character or a possible stop string is incomplete), ``logprob`` its
    :class:`TokenLogprob` when asked for. The last piece has ``token=None``, the text still
    held back (if any), and ``result`` — the :class:`GenerateResult`, with ``finish_reason``
    and timings.
    """

    text: str
    token: int | None
    logprob: TokenLogprob | None = None
    result: GenerateResult | None = None

    @property
    def finish_reason(self) -> str | None:
        return None if self.result is None else self.result.finish_reason

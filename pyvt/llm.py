"""The LLM API: ``load_model``, ``generate``, ``stream`` and ``text_completion`` (SPEC §3, §4, §10).

The heavy lifting is native: one call prefills the whole prompt as a batch, then one call
per token runs embedding -> all blocks -> final norm -> lm_head -> argmax/sampling. Python
tokenizes, loops over those calls and turns the ids into text.

There is one generation loop, :func:`stream`'s generator; :func:`generate` consumes it, so a
streamed run and a plain one cannot diverge. Per token it does, in order:

1. the native decode step (which also chooses the next token when no Python-side
   processing is needed — the common case);
2. when asked: logprobs of the chosen token from the *processed* logits (see
   :class:`GenerateOpts`), and the penalties / min-p when this build's libvt does not apply
   them itself;
3. the text side (:mod:`pyvt.stream`): UTF-8-safe detokenization, then stop strings.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import secrets
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from . import _model
from . import ops as _ops
from .stream import CONTEXT_TOKENS, IncrementalDecoder, StopMatcher
from .tokenizer import Tokenizer, resolve_tokenizer_path

__all__ = [
    "GenerateOpts",
    "GenerateResult",
    "ModelHandle",
    "Stream",
    "StreamPiece",
    "TokenLogprob",
    "default_generate_opts",
    "generate",
    "load_model",
    "stream",
    "text_completion",
    "WEIGHT_FORMATS",
]

_log = logging.getLogger("pyvt")

#: Weight formats accepted by ``load_model(weight_format=...)`` (SPEC §7).
WEIGHT_FORMATS = ("int8", "fp8", "fp8-channel", "bf16")

#: Hard cap on sampling candidates (the fused top-k width).
MAX_TOP_K = 256

#: Most alternatives ``top_logprobs`` may ask for per token.
MAX_TOP_LOGPROBS = 20

#: Default number of sequences decoded together by text_completion / chat_completion.
DEFAULT_MAX_BATCH_SIZE = 8

#: Prompt positions whose logits one prefill call returns when ``echo`` needs them all
#: (bounds the [chunk, vocab] float32 buffer).
_ECHO_CHUNK = 128


# ==========================================================================================
# Options and results
# ==========================================================================================


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _is_real(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def _finite(v: Any) -> bool:
    return _is_real(v) and math.isfinite(float(v))


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
      (``finish_reason="stop"``). Works across token boundaries and while streaming.

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

    def __post_init__(self) -> None:
        if not _is_int(self.max_new_tokens) or self.max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be an integer >= 0, got {self.max_new_tokens!r}")
        if not _finite(self.temperature) or self.temperature < 0:
            raise ValueError(f"temperature must be a finite number >= 0, got {self.temperature!r}")
        if self.top_k is not None and (not _is_int(self.top_k) or self.top_k < 1):
            raise ValueError(f"top_k must be None or an integer >= 1, got {self.top_k!r}")
        if not _is_real(self.top_p) or not (0.0 < self.top_p <= 1.0):
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p!r}")
        if self.seed is not None and (not _is_int(self.seed) or not (0 <= self.seed < 2**64)):
            raise ValueError(f"seed must be None or an integer in [0, 2**64), got {self.seed!r}")
        for name in ("stop_on_eos", "logprobs", "echo", "truncate_prompt"):
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
            raise ValueError(f"stop must be a str or a sequence of str, got {self.stop!r}") from None
        for s in stop:
            if not isinstance(s, str) or not s:
                raise ValueError(f"stop must hold non-empty strings, got {s!r} in stop={self.stop!r}")
        object.__setattr__(self, "stop", stop)
        if not _finite(self.repetition_penalty) or self.repetition_penalty <= 0:
            raise ValueError(f"repetition_penalty must be a finite number > 0 (1 = off), got "
                             f"{self.repetition_penalty!r}")
        for name in ("frequency_penalty", "presence_penalty"):
            if not _finite(getattr(self, name)):
                raise ValueError(f"{name} must be a finite number (0 = off), got {getattr(self, name)!r}")
        if not _is_real(self.min_p) or not (0.0 <= self.min_p <= 1.0):
            raise ValueError(f"min_p must be in [0, 1] (0 = off), got {self.min_p!r}")
        if not _is_int(self.top_logprobs) or not (0 <= self.top_logprobs <= MAX_TOP_LOGPROBS):
            raise ValueError(f"top_logprobs must be an integer in [0, {MAX_TOP_LOGPROBS}], got "
                             f"{self.top_logprobs!r}")

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

    @property
    def generated_tokens(self) -> int:
        return len(self.tokens)

    @property
    def message(self) -> dict[str, str]:
        """The text as a chat message: ``{"role": "assistant", "content": text}``."""
        return {"role": "assistant", "content": self.text}

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (tuples as lists, logprobs as dicts)."""
        d = dataclasses.asdict(self)
        d["tokens"] = list(self.tokens)
        for k in ("logprobs", "prompt_logprobs"):
            v = getattr(self, k)
            d[k] = None if v is None else [
                {"token": e.token, "text": e.text, "logprob": e.logprob,
                 "top": [{"token": t, "logprob": lp} for t, lp in e.top]} for e in v]
        return d


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


# ==========================================================================================
# Model handle
# ==========================================================================================


def _read_json_opt(path: Path) -> dict[str, Any]:
    import json

    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: invalid JSON: {e}") from None
    return data if isinstance(data, dict) else {}


def _model_folder(path: Path) -> Path:
    return path if path.is_dir() else path.parent


class ModelHandle:
    """A loaded model: packed weights, tokenizer and metadata, reusable across prompts and
    threads. ``close()`` (or leaving a ``with`` block) frees its memory at once; calls on a
    closed handle raise ``RuntimeError``."""

    def __init__(self, native: "_model.Model", tokenizer: Tokenizer, path: Path):
        self._native = native
        self.tokenizer = tokenizer
        self.path = path
        self.info: dict[str, Any] = dict(native.info)
        eos = set(int(i) for i in self.info.get("eos_token_ids", []))
        gen_cfg = _read_json_opt(_model_folder(path) / "generation_config.json")
        g = gen_cfg.get("eos_token_id")
        for v in g if isinstance(g, list) else [g]:
            if _is_int(v):
                eos.add(int(v))
        if tokenizer.eos_token_id is not None:
            eos.add(int(tokenizer.eos_token_id))
        self.eos_token_ids: frozenset[int] = frozenset(eos)
        self._lock = threading.Lock()

    # ---- lifetime ----------------------------------------------------------------------

    def close(self) -> None:
        """Free the model's memory now (safe while other threads still finish their calls:
        the memory goes when the last of them returns)."""
        self._native.close()

    @property
    def closed(self) -> bool:
        return bool(self._native.closed)

    def __enter__(self) -> "ModelHandle":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        i = self.info
        state = "closed" if self.closed else f"{i.get('weight_format')} on {i.get('device')}"
        return f"<ModelHandle {str(self.path)!r} {i.get('num_layers')} layers, {state}>"

    # ---- convenience -------------------------------------------------------------------

    @property
    def max_seq_len(self) -> int:
        """The context: most positions (prompt + generated) one sequence may hold."""
        return int(self.info["max_seq_len"])

    @property
    def chat_template(self) -> str | None:
        """The model's Jinja chat template (``tokenizer_config.json`` or
        ``chat_template.jinja``), ``None`` when it has none."""
        from .chat import template_source

        return template_source(self.tokenizer.chat_template)

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=add_special_tokens)

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=skip_special_tokens)

    def logits(self, token_ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """float32 ``[n, vocab]`` logits for every position of ``token_ids`` in one batched
        pass (teacher forcing, scoring, perplexity)."""
        ids = _as_token_array(token_ids, self.info["vocab_size"], "token_ids")
        if len(ids) == 0:
            raise ValueError("token_ids is empty")
        if len(ids) > self.max_seq_len:
            raise ValueError(
                f"token_ids has {len(ids)} tokens, more than the model's context "
                f"(max_seq_len={self.max_seq_len})"
            )
        return self._native.logits(ids)


def _as_token_array(ids: Any, vocab: int, name: str) -> np.ndarray:
    try:
        arr = np.asarray(ids)
    except Exception:
        raise ValueError(f"{name} must be a sequence of integers") from None
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name} must hold integers, got dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    bad = np.flatnonzero((arr < 0) | (arr >= vocab))
    if bad.size:
        raise ValueError(f"{name}[{int(bad[0])}] = {int(arr[bad[0]])} is outside the vocabulary [0, {vocab})")
    return np.ascontiguousarray(arr, dtype=np.int32)


def _progress_callback(enabled: bool | Callable[[int, int], Any] | None, label: str):
    """A (done, total) callback drawing a tqdm bar when stderr is a terminal."""
    if callable(enabled):
        return enabled, None
    if enabled is False or (enabled is None and not sys.stderr.isatty()):
        return None, None
    try:
        from tqdm import tqdm
    except ImportError:
        return None, None
    bar = tqdm(total=1, unit="B", unit_scale=True, desc=label, leave=False, file=sys.stderr)

    def cb(done: int, total: int) -> None:
        if bar.total != total:
            bar.total = total
        bar.n = done
        bar.refresh()

    return cb, bar


def load_model(
    path: str | os.PathLike | None = None,
    *,
    weight_format: str = "int8",
    block_size: int | None = None,
    num_layers: int | None = None,
    tokenizer_path: str | os.PathLike | None = None,
    device: str = "auto",
    max_seq_len: int | None = None,
    threads: int | None = None,
    progress: bool | Callable[[int, int], Any] | None = None,
) -> ModelHandle:
    """Load a Llama-family checkpoint and prepack its weights (SPEC §3).

    ``path``: a ``.safetensors`` file, one shard, a ``model.safetensors.index.json`` or a
    folder holding either; ``None`` loads the default model (SmolLM2-135M-Instruct,
    fetched and converted once, see ``pyvt.hub``).

    ``weight_format``: ``"int8"`` (default: INT8, one scale per 32 weights), ``"fp8"`` (FP8
    E4M3, one scale per 16 — the original's format), ``"fp8-channel"``, or ``"bf16"`` (the
    unquantized reference). ``block_size`` overrides the format's K-block. ``num_layers``
    loads only the first N blocks. ``device``: "auto", "cpu", "cuda" or "cuda:N".
    ``max_seq_len`` caps the context (default: the config's). ``threads`` sets the CPU
    worker count (process-wide). ``progress``: a ``(done, total)`` callable, ``True`` for a
    bar, ``False`` for none; default a bar when stderr is a terminal.
    """
    if path is None:
        from . import hub

        path = hub.pull(quiet=not sys.stderr.isatty())
    p = Path(os.fspath(path))
    if not p.exists():
        raise FileNotFoundError(f"model path {str(p)!r} does not exist")
    if weight_format not in WEIGHT_FORMATS:
        raise ValueError(f"weight_format must be one of {', '.join(WEIGHT_FORMATS)}; got {weight_format!r}")
    for name, v in (("block_size", block_size), ("num_layers", num_layers), ("max_seq_len", max_seq_len),
                    ("threads", threads)):
        if v is not None and (not _is_int(v) or v < 1):
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if not isinstance(device, str) or not (device in ("auto", "cpu", "cuda") or device.startswith("cuda:")):
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}")
    if threads is not None:
        from . import ops

        ops.set_num_threads(int(threads))

    tok = Tokenizer(resolve_tokenizer_path(p, tokenizer_path))
    cb, bar = _progress_callback(progress, f"loading {p.name}")
    try:
        native = _model.Model(
            str(p),
            weight_format=weight_format,
            block_size=block_size or 0,
            num_layers=num_layers or 0,
            device=device,
            max_seq_len=max_seq_len or 0,
            progress=cb,
        )
    finally:
        if bar is not None:
            bar.close()
    handle = ModelHandle(native, tok, p)
    _log.info("loaded %s: %d layers, %s on %s, %.1f MB", p, handle.info["num_layers"],
              handle.info["weight_format"], handle.info["device"], handle.info["total_bytes"] / 1e6)
    vocab = int(handle.info["vocab_size"])
    if tok.vocab_size > vocab:
        # Ids the tokenizer can produce that have no embedding row would be rejected later;
        # say so now, naming both numbers.
        n_extra = tok.vocab_size - vocab
        handle.close()
        raise ValueError(
            f"{tok.path}: tokenizer has {tok.vocab_size} tokens but the model's embedding has "
            f"{vocab} rows ({n_extra} ids would have no embedding)"
        )
    return handle


# ==========================================================================================
# Logits processing: penalties, min-p, logprobs
# ==========================================================================================
#
# libvt chooses tokens natively. What needs the whole logits row on the Python side is done
# here, in numpy, with the same definitions libvt documents for vt_sample_options:
#   penalties (float32, in this order): repetition (÷ / × on every token seen in prompt or
#   output), then frequency (− count·f) and presence (− p) over the generated tokens;
#   then the sampler: top-k -> temperature -> min-p -> top-p -> seeded draw (vt_sample with
#   the same seed and step, so a Python-side choice is the token libvt would choose).


def _native_has(feature: str) -> bool:
    return bool(getattr(_model, "FEATURES", {}).get(feature, False))


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


class _Processor:
    """One sequence's penalty state: which tokens were seen (prompt + output, for the
    repetition penalty) and how often each was generated (frequency / presence)."""

    def __init__(self, opts: GenerateOpts, prompt_ids: np.ndarray, vocab: int):
        self.rep = np.float32(opts.repetition_penalty)
        self.freq = np.float32(opts.frequency_penalty)
        self.pres = np.float32(opts.presence_penalty)
        self.seen = np.zeros(vocab, dtype=bool) if opts.repetition_penalty != 1.0 else None
        if self.seen is not None:
            self.seen[prompt_ids] = True
        self.counts = (np.zeros(vocab, dtype=np.int32)
                       if opts.frequency_penalty != 0.0 or opts.presence_penalty != 0.0 else None)

    def add(self, tok: int) -> None:
        if self.seen is not None:
            self.seen[tok] = True
        if self.counts is not None:
            self.counts[tok] += 1

    def apply(self, raw: np.ndarray) -> np.ndarray:
        """float32 copy of raw logits with the penalties applied."""
        x = np.array(raw, dtype=np.float32, copy=True)
        if self.seen is not None:
            idx = np.flatnonzero(self.seen)
            v = x[idx]
            x[idx] = np.where(v > 0, v / self.rep, v * self.rep)
        if self.counts is not None:
            idx = np.flatnonzero(self.counts)
            c = self.counts[idx].astype(np.float32)
            x[idx] = (x[idx] - self.freq * c) - self.pres
        return x


def _min_p_mask(x: np.ndarray, min_p: float, temperature: float) -> np.ndarray:
    """Logits with every token whose probability (after temperature) is below min_p × the
    top probability set to -inf. p_i / p_max = exp((x_i - x_max) / T)."""
    xm = float(np.max(x))
    cut = (x.astype(np.float64) - xm) / temperature < math.log(min_p)
    if cut.any():
        x = x.copy()
        x[cut] = -np.inf
    return x


# ==========================================================================================
# Generation
# ==========================================================================================


def _resolve_opts(opts: GenerateOpts | None, overrides: Mapping[str, Any]) -> GenerateOpts:
    if opts is None:
        opts = default_generate_opts()
    elif not isinstance(opts, GenerateOpts):
        raise TypeError(f"opts must be a GenerateOpts, got {type(opts).__name__}")
    return opts.replace(**overrides) if overrides else opts


def _check_model(model: Any) -> "ModelHandle":
    if not isinstance(model, ModelHandle):
        raise TypeError(f"model must be a ModelHandle from load_model(), got {type(model).__name__}")
    if model.closed:
        raise RuntimeError("model is closed")
    return model


@dataclass(frozen=True)
class _Prepared:
    """A validated prompt with everything decided before any native work."""

    ids: np.ndarray      # int32 [n] prompt token ids (after truncation)
    opts: GenerateOpts
    seed: int
    truncated: int       # prompt tokens dropped by truncate_prompt
    tokenize_s: float


def _prepare(model: "ModelHandle", prompt: Any, opts: GenerateOpts, what: str = "prompt") -> _Prepared:
    t0 = time.perf_counter()
    if isinstance(prompt, str):
        ids: Any = model.encode(prompt)
    elif isinstance(prompt, (bytes, bytearray)):
        raise TypeError(f"{what} must be a str or a sequence of token ids, got bytes")
    else:
        ids = prompt
    arr = _as_token_array(ids, int(model.info["vocab_size"]), what)
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
    return _Prepared(np.ascontiguousarray(arr, dtype=np.int32), opts, seed, truncated,
                     time.perf_counter() - t0)


class _Sequence:
    """One prompt's generation state — everything but the KV cache: the tokens so far,
    penalties, logprobs and the text pipeline (detokenizer -> stop strings)."""

    def __init__(self, model: "ModelHandle", prep: _Prepared):
        opts = prep.opts
        self.model = model
        self.prep = prep
        self.opts = opts
        self.vocab = int(model.info["vocab_size"])
        self.tokens: list[int] = []
        self.eos = model.eos_token_ids if opts.stop_on_eos else frozenset()
        self.decoder = IncrementalDecoder(model.tokenizer, prep.ids[-CONTEXT_TOKENS:].tolist())
        self.stopper = StopMatcher(opts.stop)
        self.finish: str | None = None
        self.text_parts: list[str] = []
        self.want_logprobs = opts._wants_logprobs
        self.top_n = int(opts.top_logprobs)
        self.proc = _Processor(opts, prep.ids, self.vocab) if opts._has_penalties else None
        # Who chooses the next token: libvt (the fast path), or Python from the logits row
        # when libvt cannot apply the options itself, or when echo's chunked prefill would
        # advance libvt's sampling step (Python passes the step explicitly).
        needs_python = ((opts._has_penalties and not _native_has("penalties"))
                        or (opts.min_p > 0 and opts.temperature > 0 and not _native_has("min_p")))
        self.python_pick = needs_python or opts.echo
        self.need_logits = self.python_pick or self.want_logprobs
        self.logprobs: list[TokenLogprob] = []
        self.prompt_logprobs: list[TokenLogprob] | None = [] if opts.echo else None
        self._z: np.ndarray | None = None  # processed logits of the last choice
        self.sampling = dict(temperature=float(opts.temperature), top_k=opts._native_top_k(),
                             top_p=float(opts.top_p), seed=prep.seed)
        if _native_has("penalties"):
            self.sampling.update(repetition_penalty=float(opts.repetition_penalty),
                                 frequency_penalty=float(opts.frequency_penalty),
                                 presence_penalty=float(opts.presence_penalty))
        if _native_has("min_p"):
            self.sampling["min_p"] = float(opts.min_p)
        self._greedy = dict(temperature=0.0, top_k=0, top_p=1.0, seed=0)

    # ---- choosing ----------------------------------------------------------------------

    def processed(self, raw: np.ndarray) -> np.ndarray:
        return self.proc.apply(raw) if self.proc is not None else raw

    def choose(self, raw: np.ndarray) -> int:
        """The token libvt would choose from these raw logits with these options (Python
        side: penalties, then vt_argmax / min-p + vt_sample at this sequence's step)."""
        z = self.processed(raw)
        self._z = z
        o = self.opts
        if o.temperature == 0:
            return _ops.argmax(z)
        if o.min_p > 0:
            z = _min_p_mask(z, o.min_p, o.temperature)
        return _ops.sample(z, o.temperature, o.top_k, o.top_p, self.prep.seed, len(self.tokens))

    def _entry(self, z: np.ndarray, tok: int, temperature: float) -> TokenLogprob:
        zz = np.asarray(z, dtype=np.float64)
        if temperature > 0:
            zz = zz / temperature
        lp = _log_softmax(zz)
        return TokenLogprob(tok, self.model.tokenizer.decode([tok], skip_special_tokens=False),
                            float(lp[tok]), _top_n(lp, self.top_n))

    # ---- native calls --------------------------------------------------------------------

    def prefill(self, sess: "_model.Session") -> tuple[int, np.ndarray | None]:
        ids = self.prep.ids
        if self.opts.echo:
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
        if self.proc is not None:
            self.proc.add(tok)
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


def _make_result(prep: _Prepared, seq: _Sequence, prefill_s: float, decode_s: float, n_decode: int,
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
    )
    _log.debug("generated %d tokens (prompt %d) in %.1f ms prefill + %.2f ms/token; finish: %s",
               len(seq.tokens), n_prompt, result.prefill_ms, result.ms_per_token, result.finish_reason)
    return result


class _Run:
    """The generation loop of one prompt, as a generator of pieces. ``session`` is the live
    KV cache (None before the first piece is asked for and after the run ends)."""

    def __init__(self, model: "ModelHandle", prep: _Prepared):
        self.model = model
        self.prep = prep
        self.session: "_model.Session | None" = None

    def pieces(self) -> Iterator[StreamPiece]:
        model, prep, opts = self.model, self.prep, self.prep.opts
        seq = _Sequence(model, prep)
        n_prompt = len(prep.ids)
        prefill_s = decode_s = ttft_s = 0.0
        n_decode = 0
        t_start = time.perf_counter()
        if opts.max_new_tokens > 0:
            self.session = sess = model._native.new_session(n_prompt + opts.max_new_tokens)
            try:
                tp = time.perf_counter()
                tok, raw = seq.prefill(sess)
                prefill_s = time.perf_counter() - tp
                ttft_s = prep.tokenize_s + (time.perf_counter() - t_start)
                while True:
                    piece = seq.accept(tok, raw)
                    if seq.finish is not None:
                        break
                    yield piece
                    td = time.perf_counter()
                    tok, raw = seq.decode(sess, tok)
                    decode_s += time.perf_counter() - td
                    n_decode += 1
            finally:
                sess.close()  # the KV cache goes now, also when the consumer stops early
            yield piece
        result = _make_result(prep, seq, prefill_s, decode_s, n_decode, ttft_s)
        yield StreamPiece(text="", token=None, result=result)


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
        piece = next(self._it)
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
    model = _check_model(model)
    opts = _resolve_opts(opts, overrides)
    return Stream(_Run(model, _prepare(model, prompt, opts)))


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
    s = stream(model, prompt, opts, **overrides)
    for _ in s:
        pass
    assert s.result is not None
    return s.result


def _check_batch_size(max_batch_size: Any) -> int:
    if not _is_int(max_batch_size) or max_batch_size < 1:
        raise ValueError(f"max_batch_size must be an integer >= 1, got {max_batch_size!r}")
    return int(max_batch_size)


def _run_batch(model: ModelHandle, preps: Sequence[_Prepared], max_batch_size: int) -> list[GenerateResult]:
    """Run prepared prompts, up to max_batch_size at a time: each prompt is prefilled on its
    own, then the live sequences decode together, one native call per step (the linears see
    m = batch rows). Each result equals running that prompt alone (greedy; with sampling,
    each row draws from its own seed at its own step)."""
    results: list[GenerateResult] = []
    for g0 in range(0, len(preps), max_batch_size):
        results += _run_group(model, preps[g0:g0 + max_batch_size])
    return results


def _run_group(model: ModelHandle, preps: Sequence[_Prepared]) -> list[GenerateResult]:
    n = len(preps)
    seqs = [_Sequence(model, p) for p in preps]
    sessions: list[Any] = [None] * n
    toks = [0] * n
    raws: list[np.ndarray | None] = [None] * n
    prefill_s = [0.0] * n
    decode_s = [0.0] * n
    n_decode = [0] * n
    ttft_s = [0.0] * n
    results: list[GenerateResult | None] = [None] * n
    live: list[int] = []

    def accept(i: int) -> None:
        seqs[i].accept(toks[i], raws[i])
        if seqs[i].finish is not None:
            sessions[i].close()
            results[i] = _make_result(preps[i], seqs[i], prefill_s[i], decode_s[i], n_decode[i], ttft_s[i])
        else:
            live.append(i)

    try:
        for i, (prep, seq) in enumerate(zip(preps, seqs)):
            t_start = time.perf_counter()
            if prep.opts.max_new_tokens == 0:
                results[i] = _make_result(prep, seq, 0.0, 0.0, 0, 0.0)
                continue
            sessions[i] = model._native.new_session(len(prep.ids) + prep.opts.max_new_tokens)
            toks[i], raws[i] = seq.prefill(sessions[i])
            prefill_s[i] = time.perf_counter() - t_start
            ttft_s[i] = prep.tokenize_s + prefill_s[i]
            accept(i)
        while live:
            rows, live[:] = list(live), []
            td = time.perf_counter()
            nxt, logits = _model.decode_batch([sessions[i] for i in rows], [toks[i] for i in rows],
                                              [seqs[i].batch_options() for i in rows],
                                              want_logits=any(seqs[i].need_logits for i in rows))
            dt = time.perf_counter() - td
            for j, i in enumerate(rows):
                toks[i], raws[i] = seqs[i].batch_pick(nxt[j], logits[j] if logits is not None else None)
                decode_s[i] += dt
                n_decode[i] += 1
                accept(i)
    finally:
        for sess in sessions:
            if sess is not None:
                sess.close()
    return [r for r in results if r is not None]


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
    model = _check_model(model)
    opts = _resolve_opts(opts, overrides)
    mbs = _check_batch_size(max_batch_size)
    if isinstance(prompts, (str, bytes)) or not isinstance(prompts, Sequence):
        raise TypeError("prompts must be a list of prompts (str or token ids); for one prompt use generate()")
    preps = [_prepare(model, p, opts, f"prompts[{i}]") for i, p in enumerate(prompts)]
    return _run_batch(model, preps, mbs)

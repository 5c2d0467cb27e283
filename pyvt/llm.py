"""The LLM API: ``load_model(path)`` and ``generate(model, prompt, opts)`` (SPEC §3, §4).

The heavy lifting is native: one call prefills the whole prompt as a batch, then one call
per token runs embedding -> all blocks -> final norm -> lm_head -> argmax/sampling. Python
only tokenizes, loops over those calls and decodes the text.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from . import _model
from .tokenizer import Tokenizer, resolve_tokenizer_path

__all__ = [
    "GenerateOpts",
    "GenerateResult",
    "ModelHandle",
    "default_generate_opts",
    "generate",
    "load_model",
    "WEIGHT_FORMATS",
]

#: Weight formats accepted by ``load_model(weight_format=...)`` (SPEC §7).
WEIGHT_FORMATS = ("int8", "fp8", "fp8-channel", "bf16")

#: Hard cap on sampling candidates (the fused top-k width).
MAX_TOP_K = 256


# ==========================================================================================
# Options and results
# ==========================================================================================


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _is_real(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


@dataclass(frozen=True)
class GenerateOpts:
    """Options of one generation (SPEC §4). Invalid values raise ``ValueError`` naming the
    field and the value.

    * ``max_new_tokens`` — most tokens to generate (>= 0).
    * ``temperature`` — 0 is argmax (deterministic); > 0 samples.
    * ``top_k`` — ``None``: no cap beyond the fused 256 candidates; else capped at 256.
    * ``top_p`` — nucleus mass in (0, 1].
    * ``seed`` — the sampler's seed: same model + prompt + options + seed -> same tokens.
    * ``stop_on_eos`` — stop after emitting any of the checkpoint's EOS ids.
    """

    max_new_tokens: int = 50
    temperature: float = 0.0
    top_k: int | None = None
    top_p: float = 1.0
    seed: int = 42
    stop_on_eos: bool = True

    def __post_init__(self) -> None:
        if not _is_int(self.max_new_tokens) or self.max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be an integer >= 0, got {self.max_new_tokens!r}")
        if not _is_real(self.temperature) or not math.isfinite(self.temperature) or self.temperature < 0:
            raise ValueError(f"temperature must be a finite number >= 0, got {self.temperature!r}")
        if self.top_k is not None and (not _is_int(self.top_k) or self.top_k < 1):
            raise ValueError(f"top_k must be None or an integer >= 1, got {self.top_k!r}")
        if not _is_real(self.top_p) or not (0.0 < self.top_p <= 1.0):
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p!r}")
        if not _is_int(self.seed) or not (0 <= self.seed < 2**64):
            raise ValueError(f"seed must be an integer in [0, 2**64), got {self.seed!r}")
        if not isinstance(self.stop_on_eos, (bool, np.bool_)):
            raise ValueError(f"stop_on_eos must be a bool, got {self.stop_on_eos!r}")

    def replace(self, **changes: Any) -> "GenerateOpts":
        """A copy with some fields changed (validated again)."""
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise ValueError(f"unknown generate option(s): {', '.join(sorted(unknown))}")
        return dataclasses.replace(self, **changes)

    def _native_top_k(self) -> int:
        return 0 if self.top_k is None else min(int(self.top_k), MAX_TOP_K)


def default_generate_opts() -> GenerateOpts:
    """The SPEC defaults: 50 tokens, greedy, no top-k cap, top_p 1, seed 42, stop on EOS."""
    return GenerateOpts()


@dataclass(frozen=True)
class GenerateResult:
    """What one ``generate`` call produced.

    ``tokens`` are the generated ids (an EOS that ended generation included), ``text`` their
    decoded text (special tokens skipped). ``total_tokens`` = prompt + generated, as OpenAI
    counts. ``ms_per_token`` is decode time per token (the first token comes from prefill
    and is not counted); ``time_to_first_token_ms`` includes tokenization.
    """

    tokens: tuple[int, ...]
    text: str
    prompt_tokens: int
    total_tokens: int
    ms_per_token: float
    prefill_ms: float
    time_to_first_token_ms: float
    finish_reason: str  # "eos" | "length" | "stop"


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
        return int(self.info["max_seq_len"])

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
# Generation
# ==========================================================================================


def _resolve_opts(opts: GenerateOpts | None, overrides: dict[str, Any]) -> GenerateOpts:
    if opts is None:
        opts = default_generate_opts()
    elif not isinstance(opts, GenerateOpts):
        raise TypeError(f"opts must be a GenerateOpts, got {type(opts).__name__}")
    return opts.replace(**overrides) if overrides else opts


def generate(
    model: ModelHandle,
    prompt: str | Sequence[int],
    opts: GenerateOpts | None = None,
    **overrides: Any,
) -> GenerateResult:
    """Generate a continuation of ``prompt`` (text, or token ids used as they are).

    The prompt is prefilled as one batch; each new token is one native call. Keyword
    overrides (``max_new_tokens=20``...) are applied on top of ``opts``. A fresh KV cache is
    used per call, so one handle serves many prompts, also from several threads.
    """
    if not isinstance(model, ModelHandle):
        raise TypeError(f"model must be a ModelHandle from load_model(), got {type(model).__name__}")
    opts = _resolve_opts(opts, overrides)
    t0 = time.perf_counter()
    if isinstance(prompt, str):
        ids = model.encode(prompt)
    else:
        ids = list(prompt)
    prompt_ids = _as_token_array(ids, int(model.info["vocab_size"]), "prompt")
    n_prompt = len(prompt_ids)
    if n_prompt == 0:
        raise ValueError("prompt is empty (no tokens to condition on)")
    ctx = model.max_seq_len
    if n_prompt + opts.max_new_tokens > ctx:
        raise ValueError(
            f"prompt ({n_prompt} tokens) + max_new_tokens ({opts.max_new_tokens}) exceeds the "
            f"model's context (max_seq_len={ctx})"
        )

    sampling = dict(temperature=float(opts.temperature), top_k=opts._native_top_k(),
                    top_p=float(opts.top_p), seed=int(opts.seed))
    tokens: list[int] = []
    finish = "length"
    prefill_ms = 0.0
    ttft_ms = 0.0
    decode_s = 0.0
    n_decode = 0
    if opts.max_new_tokens > 0:
        with model._native.new_session(n_prompt + opts.max_new_tokens) as sess:
            tp = time.perf_counter()
            tok, _ = sess.prefill(prompt_ids, **sampling)
            t1 = time.perf_counter()
            prefill_ms = (t1 - tp) * 1e3
            ttft_ms = (t1 - t0) * 1e3
            eos = model.eos_token_ids if opts.stop_on_eos else frozenset()
            tokens.append(tok)
            td = time.perf_counter()
            while True:
                if tok in eos:
                    finish = "eos"
                    break
                if len(tokens) >= opts.max_new_tokens:
                    break
                tok, _ = sess.decode(tok, **sampling)
                tokens.append(tok)
                n_decode += 1
            decode_s = time.perf_counter() - td
    text = model.decode(tokens)
    return GenerateResult(
        tokens=tuple(tokens),
        text=text,
        prompt_tokens=n_prompt,
        total_tokens=n_prompt + len(tokens),
        ms_per_token=(decode_s * 1e3 / n_decode) if n_decode else 0.0,
        prefill_ms=prefill_ms,
        time_to_first_token_ms=ttft_ms,
        finish_reason=finish,
    )

"""The model handle: :func:`load_model` and :class:`ModelHandle` (SPEC §3).

A handle owns the native model (packed weights, :mod:`pyvt._model`), its tokenizer and its
metadata; generation (:mod:`pyvt.generation`) runs on it.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from . import _model
from .options import is_int
from .tokenizer import Tokenizer, resolve_tokenizer_path, template_source

__all__ = ["KV_CACHE_TYPES", "ModelHandle", "WEIGHT_FORMATS", "load_model"]

_log = logging.getLogger("pyvt")

#: Weight formats accepted by ``load_model(weight_format=...)`` (SPEC §7).
WEIGHT_FORMATS = ("auto", "int8", "fp8", "fp8-channel", "bf16", "int4", "int4-min", "mxfp4")

#: Element types of the CPU backend's KV cache, ``load_model(kv_cache=...)``; the first is the default.
KV_CACHE_TYPES = ("f16", "f32", "int8")


class ModelHandle:
    """A loaded model: packed weights, tokenizer and metadata, reusable across prompts and
    threads. ``close()`` (or leaving a ``with`` block) frees its memory at once; calls on a
    closed handle raise ``RuntimeError``."""

    def __init__(self, native: "_model.Model", tokenizer: Tokenizer, path: Path):
        self._native = native
        self.tokenizer = tokenizer
        self.path = path
        self.info: dict[str, Any] = dict(native.info)
        # The one EOS list, decided by libvt at load (config.json, generation_config.json and
        # the tokenizer's eos_token): vt_generate and pyvt.generate stop on the same ids.
        self.eos_token_ids: frozenset[int] = frozenset(int(i) for i in self.info["eos_token_ids"])

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
        return template_source(self.tokenizer.chat_template)

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=add_special_tokens)

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=skip_special_tokens)

    def logits(self, token_ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """float32 ``[n, vocab]`` logits for every position of ``token_ids`` in one batched
        pass (teacher forcing, scoring, perplexity)."""
        ids = as_token_array(token_ids, self.info["vocab_size"], "token_ids")
        if len(ids) == 0:
            raise ValueError("token_ids is empty")
        if len(ids) > self.max_seq_len:
            raise ValueError(
                f"token_ids has {len(ids)} tokens, more than the model's context "
                f"(max_seq_len={self.max_seq_len})"
            )
        return self._native.logits(ids)


def as_token_array(ids: Any, vocab: int, name: str) -> np.ndarray:
    """Token ids as a contiguous int32 array, each checked against the vocabulary (errors name
    ``name`` and the first bad index)."""
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


#: Checkpoints smaller than this pack in well under a second: not worth a cache file.
PACKED_CACHE_MIN_BYTES = 256 << 20


def _packed_cache_dir(packed_cache: Any, p: Path) -> str | None:
    """The folder for vt_model_options.packed_cache_dir, or None (no cache)."""
    if packed_cache is False:
        return None
    if isinstance(packed_cache, (str, os.PathLike)):
        return os.fspath(packed_cache)
    if packed_cache is not True and packed_cache is not None:
        raise TypeError(f"packed_cache must be None, a bool or a folder, got {type(packed_cache).__name__}")
    from .hub import cache_dir

    folder = str(cache_dir() / "packed")
    if packed_cache is True:
        return folder
    if os.environ.get("PYVT_PACKED_CACHE", "1") == "0":
        return None
    return folder if checkpoint_bytes(p) >= PACKED_CACHE_MIN_BYTES else None


def checkpoint_bytes(p: Path) -> int:
    """The bytes of a checkpoint's weights: its .safetensors files (the folder's, or the file
    given, or an index's folder's) and, in a folder converted from a GGUF by reference, the
    GGUF bytes ``pyvt_gguf.json`` refers to. 0 when they cannot be read (the load says why)."""
    from ._files import CONFIG_LIMIT, read_json

    try:
        folder = p.parent if p.is_file() else p
        files = list(folder.glob("*.safetensors")) if p.is_dir() or p.name.endswith(".index.json") else [p]
        size = sum(f.stat().st_size for f in files if f.is_file())
    except OSError:
        return 0
    refs = folder / "pyvt_gguf.json"
    if refs.is_file():
        try:
            spans = [v.get("data_offsets") for k, v in read_json(refs, "GGUF references", CONFIG_LIMIT).items()
                     if k != "__metadata__" and isinstance(v, dict)]
            size += sum(b - a for a, b in (s for s in spans if isinstance(s, list) and len(s) == 2)
                        if isinstance(a, int) and isinstance(b, int) and b > a)
        except (OSError, ValueError, AttributeError):
            pass
    return size


def load_model(
    path: str | os.PathLike | None = None,
    *,
    weight_format: str = "auto",
    block_size: int | None = None,
    num_layers: int | None = None,
    tokenizer_path: str | os.PathLike | None = None,
    device: str = "auto",
    max_seq_len: int | None = None,
    threads: int | None = None,
    progress: bool | Callable[[int, int], Any] | None = None,
    packed_cache: bool | str | os.PathLike | None = None,
    kv_cache: str = "f16",
) -> ModelHandle:
    """Load a checkpoint of a supported family (docs/models.md) and prepack its weights (SPEC §3).

    ``path``: a ``.safetensors`` file, one shard, a ``model.safetensors.index.json`` or a
    folder holding either; a ``.gguf`` file (converted once and cached); a Hugging Face id
    ``org/name[@revision]`` or ``org/name:file.gguf`` (fetched into the Hugging Face cache,
    offline mode honoured); ``None`` loads the default model (SmolLM2-135M-Instruct, fetched
    and converted once, see ``pyvt.hub``). See ``pyvt.resolve``.

    ``weight_format``: ``"auto"`` (default: a GGUF's Q8_0 / Q4_0 / Q4_1 tensors as they are —
    ``int8`` / ``int4`` / ``int4-min``, no second quantization —, Q4_K as ``int4-min`` blocks of
    its sub-blocks (scales rounded to f16), Q5_0 as ``int8`` of the same numbers, gpt-oss's MXFP4
    experts as ``mxfp4`` (exactly), and everything else as ``int8``), ``"int8"`` (INT8, one scale per 32 weights), ``"fp8"`` (FP8
    E4M3, one scale per 16 — the original's format), ``"fp8-channel"``, ``"bf16"`` (the
    unquantized reference), ``"int4"`` (4-bit weights, one scale per 32, float
    activations; lm_head stays INT8) or ``"int4-min"`` (4-bit with a scale and a min per 32,
    llama.cpp Q4_1's grid; lm_head stays INT8) or ``"mxfp4"`` (OCP MXFP4: FP4 E2M1 with a
    power-of-two scale per 32; CPU only; lm_head stays INT8). ``block_size`` overrides the format's K-block. ``num_layers``
    loads only the first N blocks. ``device``: "auto", "cpu", "cuda" or "cuda:N".
    ``max_seq_len`` caps the context (default: the config's). ``threads`` sets the CPU
    worker count (process-wide). ``progress``: a ``(done, total)`` callable, ``True`` for a
    bar, ``False`` for none; default a bar when stderr is a terminal. ``packed_cache``: keep the
    prepacked linears on disk so the next load of the same unchanged checkpoint in the same
    format reads them instead of quantizing again — ``True`` in ``$PYVT_CACHE/packed``, a
    folder, or ``False``; default (``None``): on for checkpoints of at least 256 MB unless
    ``PYVT_PACKED_CACHE=0`` (docs/api.md, "Packed-weight cache"). ``kv_cache``: the
    sessions' KV cache, ``"f16"`` (default: half the memory and attention's bytes; keys and
    values rounded to f16 when stored, attention computed in f32), ``"f32"``, or ``"int8"``
    (half of f16's bytes: each key and value vector rounded to int8 with its own scale; less
    faithful, see docs/guide.md); a key or value beyond f16's range (|x| > 65504) fails the call
    that would store it, naming ``kv_cache="f32"``.
    The CUDA backend has all three, with the same codes (its ``"int8"`` not yet run on a
    GPU); ``model.info["kv_cache"]`` reports the type in use (docs/guide.md, "Numerics").
    """
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str, a path or None, got {type(path).__name__}")
    if weight_format not in WEIGHT_FORMATS:
        raise ValueError(f"weight_format must be one of {', '.join(WEIGHT_FORMATS)}; got {weight_format!r}")
    if not isinstance(kv_cache, str) or kv_cache not in KV_CACHE_TYPES:
        raise ValueError(f"kv_cache must be one of {', '.join(KV_CACHE_TYPES)}; got {kv_cache!r}")
    for name, v in (("block_size", block_size), ("num_layers", num_layers), ("max_seq_len", max_seq_len),
                    ("threads", threads)):
        if v is not None and (not is_int(v) or v < 1):
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if not isinstance(device, str) or not (device in ("auto", "cpu", "cuda") or device.startswith("cuda:")):
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}")
    from .resolve import resolve_model

    p = resolve_model(path)
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
            # libvt reads <dir>/tokenizer.json's EOS itself; a tokenizer from elsewhere
            # (tokenizer_path=, a SentencePiece tokenizer.model) gives its EOS here, so the
            # model's one EOS list is the same for vt_generate and pyvt.generate.
            extra_eos_ids=() if tok.eos_token_id is None else (int(tok.eos_token_id),),
            packed_cache_dir=_packed_cache_dir(packed_cache, p),
            kv_cache=kv_cache,
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

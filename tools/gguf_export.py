#!/usr/bin/env python3
"""Export a Hugging Face-style Llama (or Qwen3-MoE, or LFM2) folder to a llama.cpp-loadable GGUF (v3).

Bench-only tool (llama.cpp is a baseline in ``bench/decode.py``, never a pyvt dependency).
Input: ``config.json`` + safetensors (one file, shards, or an index; BF16/F16/F32) +
``tokenizer.json`` (a byte-level BPE, as in GPT-2 / Llama-3 / SmolLM2 / the random
checkpoints of ``tools/make_checkpoint.py``). Output, in llama.cpp's conventions
(``convert_hf_to_gguf.py``):

* linear weights and ``token_embd`` in Q8_0 (blocks of 32: f16 scale d = absmax/127, then 32
  int8 ``roundf(x / d)``; bit-exact with ggml's ``quantize_row_q8_0_ref``), or F16/BF16/F32
  with ``--type``; norms (and ``rope_freqs``) in F32;
* tensor names ``token_embd.weight``, ``blk.N.{attn_norm,attn_q,attn_k,attn_v,attn_output,
  ffn_norm,ffn_gate,ffn_up,ffn_down}.weight``, ``output_norm.weight``, ``output.weight`` (only
  when the embeddings are untied), ``rope_freqs.weight`` for ``llama3`` rope scaling;
* Q and K rows permuted from HF's rotate-half rope layout to the interleaved layout GGUF
  expects (:func:`permute_qk`; :func:`unpermute_qk` is its inverse);
* ``llama.*`` hyper-parameters and a ``gpt2``-type vocabulary (tokens padded to the model's
  vocab size with unused ``[PAD<i>]`` entries, merges, bos/eos ids).

A Qwen3-MoE folder (``model_type`` ``qwen3_moe``, as tools/make_checkpoint.py's MoE shapes
write) becomes llama.cpp's ``qwen3moe`` architecture, as convert_hf_to_gguf.py's
``Qwen3MoeModel`` writes it:

* ``qwen3moe.*`` hyper-parameters, with ``expert_count``, ``expert_used_count``,
  ``expert_feed_forward_length`` and ``attention.key_length`` / ``value_length`` (head_dim);
* per block ``attn_q_norm`` / ``attn_k_norm`` (F32), the router ``ffn_gate_inp`` (F32: llama.cpp's
  converter and quantizer keep it so), and the experts stacked into 3-D tensors
  ``ffn_gate_exps`` / ``ffn_up_exps`` [experts, moe_intermediate, hidden] and ``ffn_down_exps``
  [experts, hidden, moe_intermediate] (numpy order), in the weight type;
* Q and K rows as they are: qwen3 / qwen3moe use NEOX (rotate-half) rope, no permutation.

An LFM2 folder (``model_type`` ``lfm2``, Lfm2ForCausalLM: LiquidAI's LFM2, as
tools/make_checkpoint.py's lfm2 shapes write) becomes llama.cpp's ``lfm2`` architecture, as
convert_hf_to_gguf.py's ``LFM2Model`` writes it (:func:`_lfm2_arch`):

* ``lfm2.*`` hyper-parameters: ``attention.head_count_kv`` an INT32 array with one entry per
  block, 0 for a convolution block (llama.cpp reads a block with 0 KV heads as recurrent),
  ``shortconv.l_cache`` (conv_L_cache), ``feed_forward_length`` the MLP's adjusted width
  (block_ff_dim through block_auto_adjust_ff_dim, multiplier and multiple, as Lfm2MLP and the
  converter compute it), the RMS eps from ``norm_eps``; no ``rope.dimension_count`` (the
  converter writes none: llama.cpp rotates the whole head, hidden / heads);
* per attention block ``attn_q`` / ``attn_k`` / ``attn_v`` / ``attn_output`` (out_proj) and
  ``attn_q_norm`` / ``attn_k_norm`` (q_layernorm / k_layernorm, F32); per convolution block
  ``shortconv.in_proj`` / ``shortconv.out_proj`` in the weight type and the depthwise kernel
  ``shortconv.conv`` squeezed from Conv1d's [hidden, 1, L] to [hidden, L] and kept F32 (the
  converter and llama.cpp's quantizer never quantize it); every block ``attn_norm``
  (operator_norm), ``ffn_norm`` and ``ffn_gate`` / ``ffn_up`` / ``ffn_down`` (w1 / w3 / w2);
* ``token_embd_norm`` for ``model.embedding_norm``: LFM2's final norm, which llama.cpp's lfm2
  loads under that name as its output norm (there is no ``output_norm``);
* Q and K rows as they are (NEOX rope).

A config llama.cpp's lfm2 would compute differently (convolution biases, which it does not load;
rope scaling; a sliding window; no attending block) is refused.

llama.cpp's qwen3moe always renormalizes the top-k weights and has every layer sparse, so a
config with ``norm_topk_prob`` false, ``mlp_only_layers`` or ``decoder_sparse_step`` > 1 is
refused rather than exported into a file that computes something else.

For SmolLM2-135M the like-for-like Q8_0 baseline is better made by requantizing the shipped
Q4_1 GGUF with llama.cpp itself (:func:`requantize_with_llamacpp`); this exporter is for the
random-weight shapes (and for cross-checks).

Usage::

    python tools/gguf_export.py MODEL_DIR OUT.gguf [--type q8_0|f16|bf16|f32] [--pre gpt-2]
    python tools/gguf_export.py --requantize IN.gguf OUT.gguf [--type q8_0|q4_0|q4_1|q4_k_m|q6_k]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import struct
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

__all__ = [
    "export_gguf",
    "quantize_q8_0",
    "dequantize_q8_0",
    "permute_qk",
    "unpermute_qk",
    "llama3_rope_factors",
    "requantize_with_llamacpp",
    "SafetensorsFolder",
    "GGUFWriter",
    "read_tensor_table",
    "decode_bytes_per_token",
]

# Stamped into every export: a cached export older than the exporter's current output (before
# the chat template, say) is re-exported rather than reused (bench/decode.py export_q8_0).
EXPORT_KEY = "pyvt.export_version"
EXPORT_VERSION = 2  # 2: tokenizer.chat_template
GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
ALIGNMENT = 32

# ggml tensor types: name -> (code, block elements, block bytes)
GGML_TYPES = {
    "f32": (0, 1, 4),
    "f16": (1, 1, 2),
    "q8_0": (8, 32, 34),
    "bf16": (30, 1, 2),
}
# llama_ftype for general.file_type
FILE_TYPES = {"f32": 0, "f16": 1, "q8_0": 7, "bf16": 32}
# gguf metadata value types
T_UINT8, T_INT8, T_UINT16, T_INT16, T_UINT32, T_INT32, T_FLOAT32, T_BOOL, T_STRING, T_ARRAY, \
    T_UINT64, T_INT64, T_FLOAT64 = range(13)
# llama.cpp token types
TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_USER_DEFINED, TOKEN_UNUSED, TOKEN_BYTE = 1, 2, 3, 4, 5, 6


# --------------------------------------------------------------------------------------------
# Numerics
# --------------------------------------------------------------------------------------------


# ggml's Q8_0 rounding (quantize_row_q8_0_ref, bit for bit) is pyvt.gguf.quantize_q8_0: the
# same numbers pyvt writes for a GGUF's 5- and 6-bit tensors (pyvt/convert.py).
from pyvt.gguf import quantize_q8_0  # noqa: E402


def dequantize_q8_0(blocks: np.ndarray, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """Inverse of :func:`quantize_q8_0` (up to the quantization error)."""
    b = np.asarray(blocks, np.uint8).reshape(-1, 34)
    d = np.ascontiguousarray(b[:, :2]).view(np.float16).astype(np.float32)
    y = d * b[:, 2:].view(np.int8).astype(np.float32)
    return y.reshape(shape) if shape is not None else y.reshape(-1)


def permute_qk(w: np.ndarray, n_head: int) -> np.ndarray:
    """HF rotate-half rows -> GGUF interleaved rows (convert_hf_to_gguf ``LlamaModel.permute``).

    Within each head the HF layout holds the first halves of the rotary pairs, then the
    second halves; llama.cpp wants them interleaved (pair i at rows 2i, 2i+1). ``n_head`` is
    the number of heads of *this* projection (KV heads for k_proj).
    """
    rows = w.shape[0]
    return (w.reshape(n_head, 2, rows // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2)
            .reshape(w.shape))


def unpermute_qk(w: np.ndarray, n_head: int) -> np.ndarray:
    """Inverse of :func:`permute_qk` (GGUF -> HF)."""
    rows = w.shape[0]
    return (w.reshape(n_head, rows // n_head // 2, 2, *w.shape[1:])
            .swapaxes(1, 2)
            .reshape(w.shape))


def llama3_rope_factors(cfg: dict[str, Any]) -> np.ndarray | None:
    """The ``rope_freqs`` tensor llama.cpp uses for ``llama3`` rope scaling (as
    convert_hf_to_gguf computes it), or None when the config has no llama3 scaling."""
    rs = cfg.get("rope_scaling") or cfg.get("rope_parameters") or {}
    if str(rs.get("rope_type", rs.get("type", ""))).lower() != "llama3":
        return None
    base = float(cfg.get("rope_theta", rs.get("rope_theta", 10000.0)))
    dim = int(cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"])
    freqs = 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.float32) / dim))
    factor = float(rs.get("factor", 8.0))
    low = float(rs.get("low_freq_factor", 1.0))
    high = float(rs.get("high_freq_factor", 4.0))
    old = float(rs.get("original_max_position_embeddings", 8192))
    low_wl, high_wl = old / low, old / high
    out = []
    for f in freqs:
        wl = 2 * math.pi / f
        if wl < high_wl:
            out.append(1.0)
        elif wl > low_wl:
            out.append(factor)
        else:
            smooth = (old / wl - low) / (high - low)
            out.append(1.0 / ((1 - smooth) / factor + smooth))
    return np.asarray(out, np.float32)


# --------------------------------------------------------------------------------------------
# Safetensors input
# --------------------------------------------------------------------------------------------

_ST_DTYPES = {"BF16": np.dtype("<u2"), "F16": np.dtype("<f2"), "F32": np.dtype("<f4")}


class SafetensorsFolder:
    """All tensors of the safetensors files of a folder (one file, shards or an index),
    memory-mapped; :meth:`get` returns float32."""

    def __init__(self, folder: Path):
        folder = Path(folder)
        if folder.is_file():
            files = [folder]
            folder = folder.parent
        else:
            files = sorted(folder.glob("*.safetensors"))
        if not files:
            raise FileNotFoundError(f"no .safetensors files in {folder}")
        self.tensors: dict[str, tuple[Path, str, tuple[int, ...], int, int]] = {}
        for f in files:
            with open(f, "rb") as fh:
                n = int.from_bytes(fh.read(8), "little")
                size = os.fstat(fh.fileno()).st_size
                if n <= 0 or n > size - 8:
                    raise ValueError(f"{f}: bad safetensors header length {n}")
                header = json.loads(fh.read(n))
            base = 8 + n
            for name, meta in header.items():
                if name == "__metadata__":
                    continue
                dt = meta["dtype"]
                if dt not in _ST_DTYPES:
                    raise ValueError(f"{f}: tensor {name!r} has dtype {dt} (need BF16/F16/F32)")
                a, b = meta["data_offsets"]
                shape = tuple(int(s) for s in meta["shape"])
                if b - a != int(np.prod(shape)) * _ST_DTYPES[dt].itemsize or base + b > size:
                    raise ValueError(f"{f}: tensor {name!r} has inconsistent offsets")
                self.tensors[name] = (f, dt, shape, base + a, base + b)
        self._maps: dict[Path, np.memmap] = {}

    def __contains__(self, name: str) -> bool:
        return name in self.tensors

    def shape(self, name: str) -> tuple[int, ...]:
        return self.tensors[name][2]

    def get(self, name: str, rows: tuple[int, int] | None = None) -> np.ndarray:
        """The tensor (or rows ``[r0, r1)`` of it) as a new float32 array."""
        f, dt, shape, a, b = self.tensors[name]
        if f not in self._maps:
            self._maps[f] = np.memmap(f, dtype=np.uint8, mode="r")
        if rows is not None:
            row_bytes = int(np.prod(shape[1:])) * _ST_DTYPES[dt].itemsize
            a, b = a + rows[0] * row_bytes, a + rows[1] * row_bytes
            shape = (rows[1] - rows[0], *shape[1:])
        raw = self._maps[f][a:b]
        if dt == "BF16":
            u = raw.view("<u2").astype(np.uint32) << np.uint32(16)
            return u.view(np.float32).reshape(shape)
        return raw.view(_ST_DTYPES[dt]).astype(np.float32).reshape(shape)


# --------------------------------------------------------------------------------------------
# GGUF writer
# --------------------------------------------------------------------------------------------


class GGUFWriter:
    """A minimal streaming GGUF v3 writer: add metadata and tensor declarations, then
    :meth:`write` streams each tensor's bytes from a callable (so nothing big is held)."""

    def __init__(self) -> None:
        self.kv: list[tuple[str, int, Any, int | None]] = []
        self.tensors: list[tuple[str, tuple[int, ...], str, Callable[[], Iterable[np.ndarray]]]] = []

    # metadata
    def add(self, key: str, vtype: int, value: Any, etype: int | None = None) -> None:
        if any(k == key for k, *_ in self.kv):
            raise ValueError(f"duplicate key {key}")
        self.kv.append((key, vtype, value, etype))

    def add_u32(self, k: str, v: int) -> None:
        self.add(k, T_UINT32, int(v))

    def add_f32(self, k: str, v: float) -> None:
        self.add(k, T_FLOAT32, float(v))

    def add_bool(self, k: str, v: bool) -> None:
        self.add(k, T_BOOL, bool(v))

    def add_str(self, k: str, v: str) -> None:
        self.add(k, T_STRING, str(v))

    def add_array(self, k: str, etype: int, v: Any) -> None:
        self.add(k, T_ARRAY, v, etype)

    def add_tensor(self, name: str, shape: tuple[int, ...], qtype: str,
                   data: Callable[[], Iterable[np.ndarray]]) -> None:
        """``shape`` in numpy order (rows, cols); ``data()`` yields the tensor's bytes (as
        uint8 / typed arrays, concatenated in row-major order)."""
        self.tensors.append((name, tuple(int(s) for s in shape), qtype, data))

    @staticmethod
    def _str(s: str | bytes) -> bytes:
        b = s if isinstance(s, bytes) else s.encode("utf-8")
        return struct.pack("<Q", len(b)) + b

    _SCALAR = {T_UINT8: "<B", T_INT8: "<b", T_UINT16: "<H", T_INT16: "<h", T_UINT32: "<I",
               T_INT32: "<i", T_FLOAT32: "<f", T_BOOL: "<B", T_UINT64: "<Q", T_INT64: "<q",
               T_FLOAT64: "<d"}
    _NP = {T_UINT8: "<u1", T_INT8: "<i1", T_UINT16: "<u2", T_INT16: "<i2", T_UINT32: "<u4",
           T_INT32: "<i4", T_FLOAT32: "<f4", T_BOOL: "<u1", T_UINT64: "<u8", T_INT64: "<i8",
           T_FLOAT64: "<f8"}

    def _value(self, vtype: int, v: Any, etype: int | None) -> bytes:
        if vtype == T_STRING:
            return self._str(v)
        if vtype == T_ARRAY:
            head = struct.pack("<IQ", etype, len(v))
            if etype == T_STRING:
                return head + b"".join(self._str(s) for s in v)
            return head + np.asarray(v, dtype=self._NP[etype]).tobytes()
        return struct.pack(self._SCALAR[vtype], v)

    @staticmethod
    def nbytes(shape: tuple[int, ...], qtype: str) -> int:
        _, blk, bsz = GGML_TYPES[qtype]
        n = int(np.prod(shape))
        if shape[-1] % blk:
            raise ValueError(f"{qtype} needs rows of a multiple of {blk}, got shape {shape}")
        return n // blk * bsz

    def write(self, path: Path, progress: Callable[[int, int], None] | None = None) -> None:
        path = Path(path)
        head = bytearray(GGUF_MAGIC)
        head += struct.pack("<IQQ", GGUF_VERSION, len(self.tensors), len(self.kv))
        for k, vt, v, et in self.kv:
            head += self._str(k) + struct.pack("<I", vt) + self._value(vt, v, et)
        off = 0
        sizes = []
        for name, shape, qtype, _ in self.tensors:
            nb = self.nbytes(shape, qtype)
            sizes.append(nb)
            dims = tuple(reversed(shape))  # ggml order: fastest-varying first
            head += self._str(name) + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims)
            head += struct.pack("<IQ", GGML_TYPES[qtype][0], off)
            off += nb + (-nb % ALIGNMENT)
        head += b"\0" * (-len(head) % ALIGNMENT)
        total = off
        tmp = path.with_name(path.name + ".partial")
        done = 0
        with open(tmp, "wb") as f:
            f.write(head)
            base = f.tell()
            for (name, shape, qtype, data), nb in zip(self.tensors, sizes):
                start = f.tell()
                for chunk in data():
                    f.write(memoryview(np.ascontiguousarray(chunk)).cast("B"))
                got = f.tell() - start
                if got != nb:
                    raise RuntimeError(f"{name}: wrote {got} bytes, expected {nb}")
                f.write(b"\0" * (-nb % ALIGNMENT))
                done += nb
                if progress:
                    progress(done, total)
            assert f.tell() - base == total
        os.replace(tmp, path)


# --------------------------------------------------------------------------------------------
# Tokenizer -> gguf vocabulary
# --------------------------------------------------------------------------------------------


def _merges_as_strings(merges: list[Any]) -> list[str]:
    out = []
    for m in merges:
        if isinstance(m, str):
            out.append(m)
        else:
            a, b = m
            out.append(f"{a} {b}")
    return out


def gpt2_vocab(tokenizer_json: Path, n_vocab: int) -> dict[str, Any]:
    """tokens / token types / merges of a byte-level BPE ``tokenizer.json``, padded to
    ``n_vocab`` entries."""
    tj = json.loads(Path(tokenizer_json).read_text(encoding="utf-8"))
    model = tj.get("model", {})
    if model.get("type") != "BPE":
        raise ValueError(f"{tokenizer_json}: only BPE tokenizers are supported (got {model.get('type')!r})")
    vocab: dict[str, int] = dict(model["vocab"])
    special = set()
    for at in tj.get("added_tokens", []):
        vocab[at["content"]] = int(at["id"])
        if at.get("special", False):
            special.add(int(at["id"]))
    n_tok = max(vocab.values()) + 1
    if n_tok > n_vocab:
        raise ValueError(f"{tokenizer_json}: {n_tok} tokens but the model has only {n_vocab} embeddings")
    tokens = [f"[PAD{i}]" for i in range(n_vocab)]
    types = [TOKEN_UNUSED] * n_vocab
    for t, i in vocab.items():
        tokens[i] = t
        types[i] = TOKEN_CONTROL if i in special else TOKEN_NORMAL
    seen = set()
    for i, t in enumerate(tokens):
        if t in seen:
            raise ValueError(f"{tokenizer_json}: duplicate token {t!r}")
        seen.add(t)
    return {"tokens": tokens, "types": types, "merges": _merges_as_strings(model.get("merges", []))}


# --------------------------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------------------------


def _moe_arch(cfg: dict[str, Any]) -> str | None:
    """The llama.cpp architecture of a Qwen3-MoE config this exporter can write (qwen3moe), None
    for a dense one; raises for a mixture of experts llama.cpp's qwen3moe would compute
    differently."""
    mt = cfg.get("model_type")
    if mt != "qwen3_moe":
        if cfg.get("num_experts") or cfg.get("num_local_experts"):
            raise ValueError(f"model_type {mt!r}: only qwen3_moe mixtures of experts can be exported")
        return None
    if not bool(cfg.get("norm_topk_prob", False)):
        raise ValueError("qwen3_moe with norm_topk_prob false: llama.cpp's qwen3moe always renormalizes")
    if cfg.get("mlp_only_layers") or int(cfg.get("decoder_sparse_step") or 1) != 1:
        raise ValueError("qwen3_moe with dense layers (mlp_only_layers / decoder_sparse_step): llama.cpp's "
                         "qwen3moe has every layer sparse")
    rs = cfg.get("rope_scaling") or cfg.get("rope_parameters") or {}
    if str(rs.get("rope_type", rs.get("type", "default")) or "default").lower() != "default":
        raise ValueError(f"qwen3_moe with rope scaling {rs!r}: not exported")
    return "qwen3moe"


def _lfm2_ff(cfg: dict[str, Any]) -> int:
    """LFM2's MLP width as convert_hf_to_gguf.py's LFM2Model writes feed_forward_length: what
    Lfm2MLP sizes w1 / w3 / w2 to, make_checkpoint.mlp_width (one computation for both tools)."""
    from make_checkpoint import mlp_width  # (tools/ is on the path wherever this module is)

    return mlp_width(cfg)


def _lfm2_arch(cfg: dict[str, Any], n_layers: int) -> list[bool] | None:
    """For an LFM2 config: which blocks convolve (layer_types "conv", else the blocks not in
    full_attn_idxs), as llama.cpp's lfm2 will read them from head_count_kv; None for another
    model. Raises for an LFM2 llama.cpp's lfm2 would compute differently."""
    if cfg.get("model_type") != "lfm2":
        return None
    types = cfg.get("layer_types")
    if types is not None:
        if len(types) != n_layers or set(types) - {"conv", "full_attention"}:
            raise ValueError(f"lfm2: layer_types {types} must name conv or full_attention for each of "
                             f"{n_layers} blocks")
        conv = [t == "conv" for t in types]
    else:
        full = set(cfg.get("full_attn_idxs") or range(n_layers))
        conv = [i not in full for i in range(n_layers)]
    if all(conv):
        raise ValueError("lfm2: no block attends; llama.cpp's lfm2 needs at least one")
    if cfg.get("conv_bias"):
        raise ValueError("lfm2 with conv_bias: llama.cpp's lfm2 loads no convolution biases")
    rs = cfg.get("rope_scaling") or cfg.get("rope_parameters") or {}
    if str(rs.get("rope_type", rs.get("type", "default")) or "default").lower() != "default":
        raise ValueError(f"lfm2 with rope scaling {rs!r}: not exported")
    if cfg.get("sliding_window"):
        raise ValueError("lfm2 with a sliding window: not exported")
    if int(cfg.get("conv_L_cache", 3)) < 2:
        raise ValueError(f"lfm2: conv_L_cache {cfg.get('conv_L_cache')} below 2 (llama.cpp needs a state)")
    return conv


def _first_int(v: Any) -> int | None:
    if isinstance(v, list):
        v = v[0] if v else None
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def export_gguf(
    src: str | os.PathLike,
    out: str | os.PathLike,
    *,
    qtype: str = "q8_0",
    tokenizer_path: str | os.PathLike | None = None,
    pre: str = "gpt-2",
    name: str | None = None,
    quiet: bool = False,
) -> Path:
    """Write ``out`` (GGUF v3) from the HF-style folder ``src``; return ``out``.

    ``qtype``: the type of the 2-D weights (``q8_0``, ``f16``, ``bf16``, ``f32``); 1-D
    tensors are F32. ``pre``: llama.cpp's pre-tokenizer name (``gpt-2`` for a plain
    byte-level BPE, ``smollm`` for SmolLM2, ``llama-bpe`` for Llama-3).
    """
    qtype = qtype.lower()
    if qtype not in GGML_TYPES:
        raise ValueError(f"qtype must be one of {', '.join(GGML_TYPES)}, got {qtype!r}")
    src = Path(src)
    folder = src if src.is_dir() else src.parent
    cfg = json.loads((folder / "config.json").read_text())
    st = SafetensorsFolder(src)
    h = int(cfg["hidden_size"])
    nl = int(cfg["num_hidden_layers"])
    nh = int(cfg["num_attention_heads"])
    nkv = int(cfg.get("num_key_value_heads") or nh)
    hd = int(cfg.get("head_dim") or h // nh)
    conv = _lfm2_arch(cfg, nl)  # (LFM2: which blocks convolve)
    inter = _lfm2_ff(cfg) if conv is not None else int(cfg["intermediate_size"])
    vocab = int(cfg["vocab_size"])
    emb_shape = st.shape("model.embed_tokens.weight")
    if emb_shape[0] != vocab:
        vocab = emb_shape[0]
    tied = bool(cfg.get("tie_word_embeddings", False)) or "lm_head.weight" not in st
    rs = cfg.get("rope_scaling") or {}
    theta = float(cfg.get("rope_theta", rs.get("rope_theta", 10000.0)) or 10000.0)
    moe = _moe_arch(cfg)
    a = moe or ("lfm2" if conv is not None else "llama")  # the metadata keys' prefix
    if conv is not None:
        if hd * nh != h:
            raise ValueError(f"lfm2: head_dim {hd} x {nh} heads is not hidden_size {h} (llama.cpp's lfm2 has "
                             "q and out_proj [hidden, hidden])")
        if "rope_theta" not in cfg:  # (transformers 5 keeps it in rope_parameters)
            theta = float((cfg.get("rope_parameters") or {}).get("rope_theta", theta))
        ff_rows = st.shape("model.layers.0.feed_forward.w1.weight")[0]
        if ff_rows != inter:
            raise ValueError(f"lfm2: feed_forward.w1 has {ff_rows} rows, but the config's MLP is {inter} wide")
    if moe:
        n_exp = int(cfg["num_experts"])
        n_used = int(cfg["num_experts_per_tok"])
        moe_inter = int(cfg["moe_intermediate_size"])
        if not 0 < n_used <= n_exp:
            raise ValueError(f"num_experts_per_tok {n_used} with {n_exp} experts")
        if "rope_theta" not in cfg:  # transformers 5 keeps it in rope_parameters
            theta = float((cfg.get("rope_parameters") or {}).get("rope_theta", theta))

    w = GGUFWriter()
    w.add_str("general.architecture", a)
    w.add_u32(EXPORT_KEY, EXPORT_VERSION)
    w.add_str("general.type", "model")
    w.add_str("general.name", name or cfg.get("_name_or_path") or folder.name)
    w.add_u32(f"{a}.vocab_size", vocab)
    w.add_u32(f"{a}.context_length", int(cfg.get("max_position_embeddings", 2048)))
    w.add_u32(f"{a}.embedding_length", h)
    w.add_u32(f"{a}.block_count", nl)
    w.add_u32(f"{a}.feed_forward_length", inter)
    if moe:
        w.add_u32(f"{a}.expert_count", n_exp)
        w.add_u32(f"{a}.expert_used_count", n_used)
        w.add_u32(f"{a}.expert_feed_forward_length", moe_inter)
    if conv is None:  # (lfm2: the converter writes none, llama.cpp rotates the whole head)
        w.add_u32(f"{a}.rope.dimension_count", hd)
    w.add_u32(f"{a}.attention.head_count", nh)
    if conv is not None:  # one per block, 0: a convolution block (INT32, as gguf-py writes a list)
        w.add_array(f"{a}.attention.head_count_kv", T_INT32, [0 if c else nkv for c in conv])
        w.add_u32(f"{a}.shortconv.l_cache", int(cfg.get("conv_L_cache", 3)))
    else:
        w.add_u32(f"{a}.attention.head_count_kv", nkv)
    if hd != h // nh or moe:  # llama.cpp's default head size is hidden / heads
        w.add_u32(f"{a}.attention.key_length", hd)
        w.add_u32(f"{a}.attention.value_length", hd)
    # (LFM2's eps is norm_eps: Lfm2Config reads no rms_norm_eps)
    eps = cfg.get("norm_eps", cfg.get("rms_norm_eps", 1e-5)) if conv is not None else cfg.get("rms_norm_eps", 1e-5)
    w.add_f32(f"{a}.attention.layer_norm_rms_epsilon", float(eps))
    w.add_f32(f"{a}.rope.freq_base", theta)
    w.add_u32("general.file_type", FILE_TYPES[qtype])
    w.add_u32("general.quantization_version", 2)

    tok_path = Path(tokenizer_path) if tokenizer_path else folder / "tokenizer.json"
    voc = gpt2_vocab(tok_path, vocab)
    w.add_str("tokenizer.ggml.model", "gpt2")
    w.add_str("tokenizer.ggml.pre", pre)
    w.add_array("tokenizer.ggml.tokens", T_STRING, voc["tokens"])
    w.add_array("tokenizer.ggml.token_type", T_INT32, voc["types"])
    w.add_array("tokenizer.ggml.merges", T_STRING, voc["merges"])
    gen = {}
    if (folder / "generation_config.json").is_file():
        gen = json.loads((folder / "generation_config.json").read_text())
    bos = _first_int(cfg.get("bos_token_id", gen.get("bos_token_id")))
    eos = _first_int(cfg.get("eos_token_id", gen.get("eos_token_id")))
    if bos is not None and bos < vocab:
        w.add_u32("tokenizer.ggml.bos_token_id", bos)
    if eos is not None and eos < vocab:
        w.add_u32("tokenizer.ggml.eos_token_id", eos)
    tcfg = {}
    if (folder / "tokenizer_config.json").is_file():
        tcfg = json.loads((folder / "tokenizer_config.json").read_text())
    w.add_bool("tokenizer.ggml.add_bos_token", bool(tcfg.get("add_bos_token", False)))
    # The model's own chat template, as llama.cpp's converter writes it: without it llama.cpp
    # (and llama-cpp-python's server) falls back to a template of its own choosing, and a chat
    # benchmark compares answers to different prompts (SmolLM2 under llama-2's format: a
    # dozen tokens of nonsense, then EOS).
    if isinstance(tcfg.get("chat_template"), str) and tcfg["chat_template"]:
        w.add_str("tokenizer.chat_template", tcfg["chat_template"])
    w.add_bool("tokenizer.ggml.add_space_prefix", False)

    rows_per_chunk = lambda cols: max(1, (1 << 22) // max(cols, 1))  # noqa: E731

    def encode(x: np.ndarray, qt: str) -> np.ndarray:
        if qt == "q8_0":
            return quantize_q8_0(x)
        if qt == "f16":
            return x.astype("<f2")
        if qt == "bf16":
            u = np.ascontiguousarray(x, np.float32).view(np.uint32)
            return ((u + (0x7FFF + ((u >> 16) & 1))) >> 16).astype("<u2")
        return x.astype("<f4")

    def weight(hf_name: str, qt: str, perm_heads: int | None = None):
        shape = st.shape(hf_name)
        if len(shape) == 2 and qt == "q8_0" and shape[1] % 32:
            qt = "f16"  # cannot block; llama.cpp's converter falls back the same way

        def data():
            if len(shape) == 1:
                yield st.get(hf_name).astype("<f4")
                return
            if perm_heads is not None:
                full = permute_qk(st.get(hf_name), perm_heads)
                getter = lambda a, b: full[a:b]  # noqa: E731
            else:  # stream row chunks straight from the mapping
                getter = lambda a, b: st.get(hf_name, (a, b))  # noqa: E731
            step = rows_per_chunk(shape[1])
            for a in range(0, shape[0], step):
                yield encode(getter(a, min(a + step, shape[0])), qt)

        return shape, (qt if len(shape) == 2 else "f32"), data

    def experts(gname: str, hf_names: list[str], qt: str) -> None:
        """The experts' 2-D matrices stacked into one 3-D tensor [experts, rows, cols] (what
        convert_hf_to_gguf does with torch.stack), streamed expert by expert."""
        shapes = {st.shape(n) for n in hf_names}
        if len(shapes) != 1 or len(next(iter(shapes))) != 2:
            raise ValueError(f"{gname}: the experts' matrices differ in shape or are not 2-D: {sorted(shapes)}")
        rows, cols = next(iter(shapes))
        if qt == "q8_0" and cols % 32:
            qt = "f16"

        def data():
            step = rows_per_chunk(cols)
            for n in hf_names:
                for r in range(0, rows, step):
                    yield encode(st.get(n, (r, min(r + step, rows))), qt)

        w.add_tensor(gname, (len(hf_names), rows, cols), qt, data)

    def add(gname: str, hf_name: str, perm_heads: int | None = None, qt: str | None = None):
        shape, qt2, data = weight(hf_name, qt or qtype, perm_heads)
        w.add_tensor(gname, shape, qt2, data)

    add("token_embd.weight", "model.embed_tokens.weight")
    if conv is not None:
        _lfm2_tensors(w, st, conv, nl, int(cfg.get("conv_L_cache", 3)), h, add)
        if not tied:
            add("output.weight", "lm_head.weight")
        return _write(w, out, folder, qtype, quiet)
    rf = llama3_rope_factors(cfg)
    if rf is not None:
        w.add_tensor("rope_freqs.weight", rf.shape, "f32", lambda: [rf])
    for i in range(nl):
        p = f"model.layers.{i}."
        b = f"blk.{i}."
        add(b + "attn_norm.weight", p + "input_layernorm.weight")
        # (qwen3moe's NEOX rope: Q/K rows as they are; llama's are permuted)
        add(b + "attn_q.weight", p + "self_attn.q_proj.weight", perm_heads=None if moe else nh)
        add(b + "attn_k.weight", p + "self_attn.k_proj.weight", perm_heads=None if moe else nkv)
        add(b + "attn_v.weight", p + "self_attn.v_proj.weight")
        add(b + "attn_output.weight", p + "self_attn.o_proj.weight")
        if moe:
            add(b + "attn_q_norm.weight", p + "self_attn.q_norm.weight")
            add(b + "attn_k_norm.weight", p + "self_attn.k_norm.weight")
        add(b + "ffn_norm.weight", p + "post_attention_layernorm.weight")
        if moe:
            if st.shape(p + "mlp.gate.weight") != (n_exp, h):
                raise ValueError(f"{p}mlp.gate.weight has shape {st.shape(p + 'mlp.gate.weight')}, "
                                 f"expected ({n_exp}, {h})")
            add(b + "ffn_gate_inp.weight", p + "mlp.gate.weight", qt="f32")
            for g, hf in (("gate", "gate_proj"), ("up", "up_proj"), ("down", "down_proj")):
                experts(f"{b}ffn_{g}_exps.weight", [f"{p}mlp.experts.{e}.{hf}.weight" for e in range(n_exp)], qtype)
            continue
        add(b + "ffn_gate.weight", p + "mlp.gate_proj.weight")
        add(b + "ffn_up.weight", p + "mlp.up_proj.weight")
        add(b + "ffn_down.weight", p + "mlp.down_proj.weight")
    add("output_norm.weight", "model.norm.weight")
    if not tied:
        add("output.weight", "lm_head.weight")
    return _write(w, out, folder, qtype, quiet)


def _lfm2_tensors(w: GGUFWriter, st: SafetensorsFolder, conv: list[bool], nl: int, l_cache: int, h: int,
                  add: Callable[..., None]) -> None:
    """LFM2's blocks under llama.cpp's lfm2 names (see the module's docstring), then its final
    norm as token_embd_norm."""
    for i in range(nl):
        p = f"model.layers.{i}."
        b = f"blk.{i}."
        add(b + "attn_norm.weight", p + "operator_norm.weight")
        if conv[i]:
            add(b + "shortconv.in_proj.weight", p + "conv.in_proj.weight")
            k = p + "conv.conv.weight"
            if st.shape(k) not in ((h, 1, l_cache), (h, l_cache)):
                raise ValueError(f"{k} has shape {st.shape(k)}, expected ({h}, 1, {l_cache})")
            # Conv1d's [hidden, 1, L] squeezed to [hidden, L] (ggml's {L, hidden}), F32 always
            w.add_tensor(b + "shortconv.conv.weight", (h, l_cache), "f32",
                         lambda k=k: [st.get(k).reshape(h, l_cache).astype("<f4")])
            add(b + "shortconv.out_proj.weight", p + "conv.out_proj.weight")
        else:
            # (NEOX rope: Q/K rows as they are)
            add(b + "attn_q.weight", p + "self_attn.q_proj.weight")
            add(b + "attn_k.weight", p + "self_attn.k_proj.weight")
            add(b + "attn_v.weight", p + "self_attn.v_proj.weight")
            add(b + "attn_output.weight", p + "self_attn.out_proj.weight")
            add(b + "attn_q_norm.weight", p + "self_attn.q_layernorm.weight")
            add(b + "attn_k_norm.weight", p + "self_attn.k_layernorm.weight")
        add(b + "ffn_norm.weight", p + "ffn_norm.weight")
        add(b + "ffn_gate.weight", p + "feed_forward.w1.weight")
        add(b + "ffn_up.weight", p + "feed_forward.w3.weight")
        add(b + "ffn_down.weight", p + "feed_forward.w2.weight")
    add("token_embd_norm.weight", "model.embedding_norm.weight")


def _write(w: GGUFWriter, out: str | os.PathLike, folder: Path, qtype: str, quiet: bool) -> Path:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    last = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.time()
        if not quiet and (now - last[0] > 5 or done == total):
            last[0] = now
            print(f"[gguf_export]   {done / 2**20:8.0f} / {total / 2**20:.0f} MiB ({now - t0:.0f} s)",
                  file=sys.stderr, flush=True)

    if not quiet:
        print(f"[gguf_export] {folder} -> {out} ({qtype})", file=sys.stderr, flush=True)
    w.write(out, progress)
    return out


# --------------------------------------------------------------------------------------------
# Reading a GGUF's tensor table (enough for byte counts; pyvt.gguf is the full reader)
# --------------------------------------------------------------------------------------------

# ggml type code -> (elements per block, bytes per block) for the types benchmarks meet
_GGML_BLOCKS = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24),
                8: (32, 34), 10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176),
                14: (256, 210), 30: (1, 2), 39: (32, 17)}
_GGML_NAMES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0",
               10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 30: "BF16", 39: "MXFP4"}


def _read_header(path: str | os.PathLike) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A GGUF file's scalar metadata (strings and numbers; arrays skipped) and its tensor table
    [{name, shape (numpy order), type, nbytes}], from its header only."""
    import mmap

    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        if mm[:4] != GGUF_MAGIC:
            raise ValueError(f"{path}: not a GGUF file")
        version, n_t, n_kv = struct.unpack_from("<IQQ", mm, 4)
        pos = 24

        def skip_value(vt: int, pos: int) -> int:
            if vt == T_STRING:
                (n,) = struct.unpack_from("<Q", mm, pos)
                return pos + 8 + n
            if vt == T_ARRAY:
                et, cnt = struct.unpack_from("<IQ", mm, pos)
                pos += 12
                if et in (T_STRING, T_ARRAY):
                    for _ in range(cnt):
                        pos = skip_value(et, pos)
                    return pos
                return pos + cnt * struct.calcsize(GGUFWriter._SCALAR[et])
            return pos + struct.calcsize(GGUFWriter._SCALAR[vt])

        meta: dict[str, Any] = {}
        for _ in range(n_kv):
            (n,) = struct.unpack_from("<Q", mm, pos)
            key = mm[pos + 8: pos + 8 + n].decode("utf-8")
            pos += 8 + n
            (vt,) = struct.unpack_from("<I", mm, pos)
            pos += 4
            if vt == T_STRING:
                (m,) = struct.unpack_from("<Q", mm, pos)
                meta[key] = mm[pos + 8: pos + 8 + m].decode("utf-8")
            elif vt != T_ARRAY:
                (meta[key],) = struct.unpack_from(GGUFWriter._SCALAR[vt], mm, pos)
            pos = skip_value(vt, pos)
        out = []
        for _ in range(n_t):
            (n,) = struct.unpack_from("<Q", mm, pos)
            name = mm[pos + 8: pos + 8 + n].decode("utf-8")
            pos += 8 + n
            (nd,) = struct.unpack_from("<I", mm, pos)
            dims = struct.unpack_from(f"<{nd}Q", mm, pos + 4)
            pos += 4 + 8 * nd
            tt, _off = struct.unpack_from("<IQ", mm, pos)
            pos += 12
            blk, bsz = _GGML_BLOCKS.get(tt, (0, 0))
            n_el = int(np.prod(dims)) if dims else 1
            out.append({"name": name, "shape": tuple(int(d) for d in reversed(dims)),
                        "type": _GGML_NAMES.get(tt, str(tt)),
                        "nbytes": n_el // blk * bsz if blk else None})
        return meta, out


def read_tensor_table(path: str | os.PathLike) -> list[dict[str, Any]]:
    """[{name, shape (numpy order), type, nbytes}] of a GGUF file, from its header only."""
    return _read_header(path)[1]


def read_metadata(path: str | os.PathLike) -> dict[str, Any]:
    """A GGUF file's scalar metadata (strings and numbers; arrays left out), from its header."""
    return _read_header(path)[0]


def decode_bytes_per_token(path: str | os.PathLike) -> int:
    """Weight bytes a llama.cpp decode step reads: every tensor except the embedding table
    (one row of it is gathered), unless the table doubles as the output projection (tied).
    Of a mixture of experts' stacked ``*_exps`` tensors a token reads ``expert_used_count``
    of the ``expert_count`` experts (the router, ``ffn_gate_inp``, is read whole)."""
    meta, tabs = _read_header(path)
    arch = meta.get("general.architecture", "llama")
    n_exp = int(meta.get(f"{arch}.expert_count") or 0)
    n_used = int(meta.get(f"{arch}.expert_used_count") or 0)
    names = {t["name"] for t in tabs}
    total = 0
    for t in tabs:
        if t["name"] == "token_embd.weight" and "output.weight" in names:
            continue
        nb = t["nbytes"] or 0
        if n_exp and t["name"].endswith("_exps.weight"):
            if len(t["shape"]) != 3 or t["shape"][0] != n_exp:
                raise ValueError(f"{path}: {t['name']} has shape {t['shape']}, not [{n_exp}, ...]")
            nb = nb // n_exp * min(n_used or n_exp, n_exp)
        total += nb
    return total


# --------------------------------------------------------------------------------------------
# Requantize through llama.cpp (SmolLM2 Q4_1 -> Q8_0)
# --------------------------------------------------------------------------------------------

_LLAMA_FTYPES = {"q8_0": 7, "f16": 1, "f32": 0, "bf16": 32, "q4_0": 2, "q4_1": 3, "q4_k_m": 15, "q6_k": 18}


def requantize_with_llamacpp(src: str | os.PathLike, dst: str | os.PathLike, qtype: str = "q8_0",
                             nthread: int = 0) -> Path:
    """Requantize a GGUF with llama.cpp's own quantizer (``llama_model_quantize``,
    ``allow_requantize``). Needs ``llama-cpp-python``."""
    if qtype.lower() not in _LLAMA_FTYPES:
        raise ValueError(f"requantize: type {qtype!r} is not one of {', '.join(_LLAMA_FTYPES)}")
    import ctypes

    import llama_cpp

    dst = Path(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = _LLAMA_FTYPES[qtype.lower()]
    params.allow_requantize = True
    params.nthread = int(nthread)
    tmp = dst.with_name(dst.name + ".partial")
    rc = llama_cpp.llama_model_quantize(str(src).encode(), str(tmp).encode(), ctypes.byref(params))
    if rc != 0:
        raise RuntimeError(f"llama_model_quantize({src} -> {dst}, {qtype}) failed with code {rc}")
    os.replace(tmp, dst)
    return dst


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src", help="HF model folder (or, with --requantize, a GGUF file)")
    ap.add_argument("out", help="output .gguf")
    ap.add_argument("--type", default="q8_0", help="q8_0 (default), f16, bf16, f32; with --requantize also q4_0, q4_1, "
                    "q4_k_m, q6_k (llama.cpp's own quantizer)")
    ap.add_argument("--pre", default="gpt-2", help="llama.cpp pre-tokenizer name (default gpt-2)")
    ap.add_argument("--tokenizer", default=None, help="tokenizer.json (default: the folder's)")
    ap.add_argument("--requantize", action="store_true",
                    help="src is a GGUF: requantize it with llama.cpp (needs llama-cpp-python)")
    args = ap.parse_args(argv)
    if args.requantize:
        try:
            print(requantize_with_llamacpp(args.src, args.out, args.type))
        except ValueError as e:
            ap.error(str(e))
    else:
        print(export_gguf(args.src, args.out, qtype=args.type, tokenizer_path=args.tokenizer, pre=args.pre))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Write random-weight Llama checkpoints of exact, named shapes (for benchmarks and tests).

Each checkpoint is a Hugging Face-style folder::

    <out>/<shape>/config.json              LlamaForCausalLM config (Qwen3MoeForCausalLM for
                                           the qwen3_moe shapes, Lfm2ForCausalLM for lfm2)
    <out>/<shape>/model.safetensors        BF16 weights, ~N(0, 0.02), norm weights 1
    <out>/<shape>/tokenizer.json           a small byte-level BPE (vocab <= the model's)
    <out>/<shape>/tokenizer_config.json
    <out>/<shape>/generation_config.json

The weights are drawn chunk by chunk from a seeded ``numpy.random.Generator`` (one stream per
tensor, keyed by the seed and the tensor name) and streamed to disk, so even the 7B shape
needs only a few hundred MB of RAM. The safetensors file is written here with numpy alone
(8-byte little-endian header length, JSON header, raw data); BF16 is float32 rounded to
nearest-even and truncated to its upper 16 bits.

LFM2 shapes (``model_type="lfm2"``: LiquidAI's LFM2, Lfm2ForCausalLM) are stored as LiquidAI's
checkpoints store them: a block either attends (``self_attn.{q,k,v,out}_proj``, per-head
``self_attn.{q,k}_layernorm``) or, where ``layer_types`` says ``conv``, mixes by a gated short
convolution (``conv.in_proj.weight`` [3 * hidden, hidden], the depthwise kernel
``conv.conv.weight`` [hidden, 1, conv_L_cache], ``conv.out_proj.weight``); every block has
``operator_norm``, ``ffn_norm`` and a SwiGLU MLP ``feed_forward.w1`` (gate) / ``w3`` (up) /
``w2`` (down) as wide as Lfm2MLP computes it (:func:`mlp_width`); the final norm is
``model.embedding_norm``. The kernel is drawn with ``conv_std`` (default
``1 / sqrt(conv_L_cache)``: each output channel sums conv_L_cache taps of its own channel, so
the convolution keeps its input's scale instead of shrinking it fifty-fold, as ``std`` would,
and the convolution blocks stay as much a part of the output as the attention ones).

Mixture-of-experts shapes (``model_type="qwen3_moe"`` in the shape dict: Qwen3-MoE, every
layer sparse) are stored as Hugging Face checkpoints store them: ``self_attn.{q,k}_norm``,
the router ``mlp.gate.weight`` [experts, hidden] and the experts one by one,
``mlp.experts.E.{gate,up,down}_proj.weight``. The router is drawn with its own standard
deviation, ``router_std`` (default ``1 / sqrt(hidden)``: a unit-RMS input, which is what the
post-attention RMSNorm with weight 1 hands it, gets router logits ~ N(0, 1), so the softmax
is neither uniform nor one-hot and the top-k choice is clear-cut rather than a string of
near-ties); every other matrix uses ``std``. Dense shapes are written exactly as before.

Usage::

    python tools/make_checkpoint.py tinyllama-1.1b [llama-3.2-1b ...] [--out DIR] [--force]
    python tools/make_checkpoint.py --list

As a module::

    from tools.make_checkpoint import make_checkpoint, SHAPES
    folder = make_checkpoint("tinyllama-1.1b")            # cached: built once
    folder = make_checkpoint(shape_dict, out=tmp_path)     # any shape given as a dict
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import time
import zlib
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

__all__ = [
    "SHAPES",
    "DEFAULT_OUT",
    "make_checkpoint",
    "llama_config",
    "qwen3_moe_config",
    "lfm2_config",
    "is_moe",
    "is_lfm2",
    "mlp_width",
    "tensor_specs",
    "write_safetensors",
    "make_tokenizer",
    "bf16_bits",
    "param_count",
]

DEFAULT_OUT = Path(os.environ.get("PYVT_BENCH_CACHE", "~/.cache/pyvt/bench")).expanduser()

#: Format version of what this script writes; bump it to invalidate cached checkpoints.
FORMAT_VERSION = 1

# --------------------------------------------------------------------------------------------
# Shapes
# --------------------------------------------------------------------------------------------

#: Named shapes. Keys are the Hugging Face LlamaConfig fields that matter; everything else is
#: filled in by :func:`llama_config`.
SHAPES: dict[str, dict[str, Any]] = {
    # TinyLlama/TinyLlama-1.1B-Chat-v1.0
    "tinyllama-1.1b": dict(
        hidden_size=2048,
        num_hidden_layers=22,
        num_attention_heads=32,
        num_key_value_heads=4,
        intermediate_size=5632,
        vocab_size=32000,
        tie_word_embeddings=False,
        rope_theta=10000.0,
        rms_norm_eps=1e-5,
        max_position_embeddings=2048,
    ),
    # meta-llama/Llama-3.2-1B
    "llama-3.2-1b": dict(
        hidden_size=2048,
        num_hidden_layers=16,
        num_attention_heads=32,
        num_key_value_heads=8,
        head_dim=64,
        intermediate_size=8192,
        vocab_size=128256,
        tie_word_embeddings=True,
        rope_theta=500000.0,
        rms_norm_eps=1e-5,
        max_position_embeddings=131072,
        rope_scaling=dict(
            rope_type="llama3",
            factor=32.0,
            low_freq_factor=1.0,
            high_freq_factor=4.0,
            original_max_position_embeddings=8192,
        ),
        bos_token_id=128000,
        eos_token_id=128001,
    ),
    # meta-llama/Llama-2-7b-hf
    "llama-2-7b": dict(
        hidden_size=4096,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=32,
        intermediate_size=11008,
        vocab_size=32000,
        tie_word_embeddings=False,
        rope_theta=10000.0,
        rms_norm_eps=1e-5,
        max_position_embeddings=4096,
    ),
    # The SmolLM2-135M shape (the real weights come from pyvt.hub; this is for tests/bench
    # dry runs without the network).
    "smollm2-135m": dict(
        hidden_size=576,
        num_hidden_layers=30,
        num_attention_heads=9,
        num_key_value_heads=3,
        intermediate_size=1536,
        vocab_size=49152,
        tie_word_embeddings=True,
        rope_theta=100000.0,
        rms_norm_eps=1e-5,
        max_position_embeddings=8192,
    ),
    # A ~1 MB model for unit tests.
    "tiny": dict(
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=128,
        vocab_size=512,
        tie_word_embeddings=False,
        rope_theta=10000.0,
        rms_norm_eps=1e-5,
        max_position_embeddings=1024,
    ),
    # Qwen/Qwen3-30B-A3B's per-layer shape with 4 of its 48 layers: 128 experts, 8 per token,
    # every layer sparse (intermediate_size is in the config but unused). ~3.1B params, of
    # which ~0.5B are read per decoded token (attention, router, 8 experts, lm_head).
    "qwen3-30b-a3b-4l": dict(
        model_type="qwen3_moe",
        hidden_size=2048,
        num_hidden_layers=4,
        num_attention_heads=32,
        num_key_value_heads=4,
        head_dim=128,
        num_experts=128,
        num_experts_per_tok=8,
        moe_intermediate_size=768,
        intermediate_size=6144,
        norm_topk_prob=True,
        vocab_size=151936,
        tie_word_embeddings=False,
        rope_theta=1000000.0,
        rms_norm_eps=1e-6,
        max_position_embeddings=40960,
    ),
}


# A ~1 MB Qwen3-MoE for unit tests (tests/test_bench_moe.py): the "tiny" shape with 8 experts.
SHAPES["tiny-qwen3-moe"] = dict(SHAPES["tiny"], model_type="qwen3_moe", head_dim=16, num_experts=8,
                                num_experts_per_tok=2, moe_intermediate_size=32, norm_topk_prob=True,
                                rope_theta=1000000.0, rms_norm_eps=1e-6)


# LiquidAI/LFM2-1.2B, from its config.json (huggingface.co/LiquidAI/LFM2-1.2B, as quoted verbatim
# in public code): hidden_size 2048, num_hidden_layers 16, num_attention_heads 32 (head_dim 64),
# num_key_value_heads 8, vocab_size 65536, conv_L_cache 3, conv_bias false, full_attn_idxs
# [2, 5, 8, 10, 12, 14] (the other 10 blocks convolve), block_ff_dim 12288 with
# block_auto_adjust_ff_dim true, block_ffn_dim_multiplier 1.0 and block_multiple_of 256 (Lfm2MLP:
# int(2 * 12288 / 3) = 8192, a multiple of 256 already; llama.cpp's lfm2 names n_ff 8192
# LLM_TYPE_1_2B), norm_eps 1e-5, rope_theta 1e6, max_position_embeddings 128000, embeddings tied
# (Lfm2Config's tie_embedding default; the hub repository has no lm_head). ~1.17B params.
SHAPES["lfm2-1.2b"] = dict(
    model_type="lfm2",
    hidden_size=2048,
    num_hidden_layers=16,
    num_attention_heads=32,
    num_key_value_heads=8,
    vocab_size=65536,
    conv_L_cache=3,
    layer_types=["full_attention" if i in (2, 5, 8, 10, 12, 14) else "conv" for i in range(16)],
    block_ff_dim=12288,
    block_auto_adjust_ff_dim=True,
    block_ffn_dim_multiplier=1.0,
    block_multiple_of=256,
    tie_word_embeddings=True,
    rope_theta=1000000.0,
    rms_norm_eps=1e-5,
    max_position_embeddings=128000,
)
# A ~0.2 MB LFM2 for unit tests (tests/test_bench_lfm2.py): blocks conv, attention, conv,
# attention, conv; the MLP int(2 * 192 / 3) = 128 wide (a multiple of 64).
SHAPES["tiny-lfm2"] = dict(SHAPES["tiny"], model_type="lfm2", num_hidden_layers=5,
                           layer_types=["conv", "full_attention", "conv", "full_attention", "conv"],
                           conv_L_cache=3, block_ff_dim=192, block_auto_adjust_ff_dim=True,
                           block_ffn_dim_multiplier=1.0, block_multiple_of=64, tie_word_embeddings=True,
                           rope_theta=1000000.0)
del SHAPES["tiny-lfm2"]["intermediate_size"]


def is_moe(cfg_or_shape: dict[str, Any]) -> bool:
    """Whether a shape or config is a mixture of experts (qwen3_moe)."""
    return cfg_or_shape.get("model_type") == "qwen3_moe"


def is_lfm2(cfg_or_shape: dict[str, Any]) -> bool:
    """Whether a shape or config is an LFM2 (short convolutions beside attention)."""
    return cfg_or_shape.get("model_type") == "lfm2"


def mlp_width(cfg: dict[str, Any]) -> int:
    """The MLP's width: ``intermediate_size``, or for LFM2 what Lfm2MLP computes from
    ``block_ff_dim``: with ``block_auto_adjust_ff_dim`` int(2 * ff / 3), then, unless the
    multiplier is null, int(multiplier * ff) rounded up to a multiple of ``block_multiple_of``."""
    if not is_lfm2(cfg):
        return int(cfg["intermediate_size"])
    ff = int(cfg.get("block_ff_dim") or cfg["intermediate_size"])
    if cfg.get("block_auto_adjust_ff_dim", True):
        ff = int(2 * ff / 3)
        mult = cfg.get("block_ffn_dim_multiplier", 1.0)
        if mult is not None:
            ff = int(float(mult) * ff)
            m = int(cfg.get("block_multiple_of") or 256)
            ff = m * ((ff + m - 1) // m)
    return ff


def llama_config(shape: dict[str, Any], name: str = "random") -> dict[str, Any]:
    """A complete ``config.json`` dict for a shape (a Qwen3-MoE one for a qwen3_moe shape:
    :func:`qwen3_moe_config`; an LFM2 one for an lfm2 shape: :func:`lfm2_config`)."""
    if is_moe(shape):
        return qwen3_moe_config(shape, name)
    if is_lfm2(shape):
        return lfm2_config(shape, name)
    s = dict(shape)
    hidden = int(s["hidden_size"])
    heads = int(s["num_attention_heads"])
    head_dim = int(s.get("head_dim") or hidden // heads)
    cfg: dict[str, Any] = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": hidden,
        "intermediate_size": int(s["intermediate_size"]),
        "num_hidden_layers": int(s["num_hidden_layers"]),
        "num_attention_heads": heads,
        "num_key_value_heads": int(s.get("num_key_value_heads", heads)),
        "head_dim": head_dim,
        "hidden_act": "silu",
        "max_position_embeddings": int(s.get("max_position_embeddings", 2048)),
        "rms_norm_eps": float(s.get("rms_norm_eps", 1e-5)),
        "rope_theta": float(s.get("rope_theta", 10000.0)),
        "rope_scaling": s.get("rope_scaling"),
        "tie_word_embeddings": bool(s.get("tie_word_embeddings", False)),
        "vocab_size": int(s["vocab_size"]),
        "bos_token_id": int(s.get("bos_token_id", 1)),
        "eos_token_id": s.get("eos_token_id", 2),
        "attention_bias": False,
        "attention_dropout": 0.0,
        "mlp_bias": False,
        "initializer_range": 0.02,
        "pretraining_tp": 1,
        "use_cache": True,
        "torch_dtype": "bfloat16",
        "_name_or_path": f"pyvt-random/{name}",
        "_pyvt_random_checkpoint": {"shape": name, "format_version": FORMAT_VERSION},
    }
    return cfg


def qwen3_moe_config(shape: dict[str, Any], name: str = "random") -> dict[str, Any]:
    """A complete Qwen3MoeForCausalLM ``config.json`` dict (transformers' Qwen3MoeConfig
    fields) for a ``model_type="qwen3_moe"`` shape: the Llama one's common fields (with
    Qwen3-MoE's defaults) and the experts'. Every layer is sparse."""
    s = {"max_position_embeddings": 40960, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, **shape}
    s.pop("model_type")
    cfg = llama_config(s, name)
    for k in ("mlp_bias", "pretraining_tp"):
        del cfg[k]
    layers = cfg["num_hidden_layers"]
    router_std = float(s.get("router_std") or 1.0 / math.sqrt(cfg["hidden_size"]))
    cfg.update({
        "architectures": ["Qwen3MoeForCausalLM"],
        "model_type": "qwen3_moe",
        "moe_intermediate_size": int(s["moe_intermediate_size"]),
        "num_experts": int(s["num_experts"]),
        "num_experts_per_tok": int(s["num_experts_per_tok"]),
        "norm_topk_prob": bool(s.get("norm_topk_prob", True)),
        "decoder_sparse_step": 1,
        "mlp_only_layers": [],
        "max_window_layers": layers,
        "rope_scaling": None,
        "sliding_window": None,
        "use_sliding_window": False,
        "output_router_logits": False,
        "router_aux_loss_coef": 0.001,
    })
    # (bos / eos: make_tokenizer's <s> and </s>; a real Qwen3 uses 151643 / 151645)
    cfg["_pyvt_random_checkpoint"] = dict(cfg["_pyvt_random_checkpoint"], router_std=router_std)
    return cfg


def lfm2_config(shape: dict[str, Any], name: str = "random") -> dict[str, Any]:
    """A complete Lfm2ForCausalLM ``config.json`` dict (LiquidAI's field names, as in
    LiquidAI/LFM2-1.2B's: ``block_ff_dim``, ``norm_eps``, ``tie_embedding``, ``conv_L_cache``,
    ``full_attn_idxs`` beside ``layer_types``) for a ``model_type="lfm2"`` shape. Lfm2 has no
    ``head_dim``: hidden / heads. The kernel's ``conv_std`` is stamped beside the seed's."""
    s = dict(shape)
    hidden, heads, layers = int(s["hidden_size"]), int(s["num_attention_heads"]), int(s["num_hidden_layers"])
    if hidden % heads:
        raise ValueError(f"lfm2: hidden_size {hidden} is not a multiple of num_attention_heads {heads}")
    types = list(s["layer_types"])
    if len(types) != layers or set(types) - {"conv", "full_attention"} or "full_attention" not in types:
        raise ValueError(f"lfm2: layer_types {types} must name conv or full_attention for each of {layers} "
                         "layers, at least one attending")
    l_cache = int(s.get("conv_L_cache", 3))
    ff = int(s["block_ff_dim"])
    tied = bool(s.get("tie_word_embeddings", True))
    conv_std = float(s.get("conv_std") or 1.0 / math.sqrt(l_cache))
    cfg: dict[str, Any] = {
        "architectures": ["Lfm2ForCausalLM"],
        "model_type": "lfm2",
        "hidden_size": hidden,
        "block_dim": hidden,
        "conv_dim": hidden,
        "conv_dim_out": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_heads": heads,
        "num_key_value_heads": int(s.get("num_key_value_heads", heads)),
        "layer_types": types,
        "full_attn_idxs": [i for i, t in enumerate(types) if t == "full_attention"],
        "conv_L_cache": l_cache,
        "conv_bias": False,
        "block_ff_dim": ff,
        "intermediate_size": ff,  # (Lfm2Config's name for block_ff_dim, which wins where both are)
        "block_auto_adjust_ff_dim": bool(s.get("block_auto_adjust_ff_dim", True)),
        "block_ffn_dim_multiplier": s.get("block_ffn_dim_multiplier", 1.0),
        "block_multiple_of": int(s.get("block_multiple_of", 256)),
        "norm_eps": float(s.get("norm_eps", s.get("rms_norm_eps", 1e-5))),
        "max_position_embeddings": int(s.get("max_position_embeddings", 128000)),
        "rope_theta": float(s.get("rope_theta", 1000000.0)),
        "tie_embedding": tied,
        "tie_word_embeddings": tied,
        "vocab_size": int(s["vocab_size"]),
        # (make_tokenizer's <s> and </s>; LFM2's own tokenizer has <|startoftext|> 1, <|im_end|> 7)
        "bos_token_id": int(s.get("bos_token_id", 1)),
        "eos_token_id": s.get("eos_token_id", 2),
        "pad_token_id": 0,
        "initializer_range": 0.02,
        "use_cache": True,
        "torch_dtype": "bfloat16",
        "_name_or_path": f"pyvt-random/{name}",
        "_pyvt_random_checkpoint": {"shape": name, "format_version": FORMAT_VERSION, "conv_std": conv_std},
    }
    if mlp_width(cfg) <= 0:
        raise ValueError(f"lfm2: block_ff_dim {ff} leaves the MLP no width")
    return cfg


def tensor_specs(cfg: dict[str, Any]) -> list[tuple[str, tuple[int, ...], str]]:
    """(name, shape, init) for every tensor of a Llama (or Qwen3-MoE) checkpoint, in file order.

    init is "normal" (N(0, std)), "ones" (RMSNorm weights), "router" (a MoE router:
    N(0, router_std)) or "conv" (LFM2's kernel: N(0, conv_std)), see the module's docstring. A
    Qwen3-MoE layer has q/k norms after o_proj and its router and experts (mlp.experts.E.*)
    instead of the dense MLP. An LFM2 checkpoint: :func:`_lfm2_specs`.
    """
    if is_lfm2(cfg):
        return _lfm2_specs(cfg)
    moe = is_moe(cfg)
    h = cfg["hidden_size"]
    nh = cfg["num_attention_heads"]
    nkv = cfg["num_key_value_heads"]
    hd = cfg["head_dim"]
    v = cfg["vocab_size"]
    specs: list[tuple[str, tuple[int, ...], str]] = [("model.embed_tokens.weight", (v, h), "normal")]

    def swiglu(q: str, inter: int) -> list[tuple[str, tuple[int, ...], str]]:
        return [(q + "gate_proj.weight", (inter, h), "normal"), (q + "up_proj.weight", (inter, h), "normal"),
                (q + "down_proj.weight", (h, inter), "normal")]

    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        specs += [
            (p + "input_layernorm.weight", (h,), "ones"),
            (p + "self_attn.q_proj.weight", (nh * hd, h), "normal"),
            (p + "self_attn.k_proj.weight", (nkv * hd, h), "normal"),
            (p + "self_attn.v_proj.weight", (nkv * hd, h), "normal"),
            (p + "self_attn.o_proj.weight", (h, nh * hd), "normal"),
        ]
        if moe:
            specs += [(p + "self_attn.q_norm.weight", (hd,), "ones"), (p + "self_attn.k_norm.weight", (hd,), "ones")]
        specs.append((p + "post_attention_layernorm.weight", (h,), "ones"))
        if moe:
            specs.append((p + "mlp.gate.weight", (cfg["num_experts"], h), "router"))
            for e in range(cfg["num_experts"]):
                specs += swiglu(f"{p}mlp.experts.{e}.", cfg["moe_intermediate_size"])
        else:
            specs += swiglu(p + "mlp.", cfg["intermediate_size"])
    specs.append(("model.norm.weight", (h,), "ones"))
    if not cfg["tie_word_embeddings"]:
        specs.append(("lm_head.weight", (v, h), "normal"))
    return specs


def _lfm2_specs(cfg: dict[str, Any]) -> list[tuple[str, tuple[int, ...], str]]:
    """LFM2's tensors in Lfm2ForCausalLM's order: per block operator_norm, its mixer (attention
    with q/k layernorms, or the short convolution), ffn_norm and the MLP; then embedding_norm
    (the final norm). No lm_head when tied."""
    h, nh, nkv, v = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["vocab_size"]
    hd = h // nh
    ff = mlp_width(cfg)
    specs: list[tuple[str, tuple[int, ...], str]] = [("model.embed_tokens.weight", (v, h), "normal")]
    for i, kind in enumerate(cfg["layer_types"]):
        p = f"model.layers.{i}."
        specs.append((p + "operator_norm.weight", (h,), "ones"))
        if kind == "conv":
            specs += [(p + "conv.in_proj.weight", (3 * h, h), "normal"),
                      (p + "conv.conv.weight", (h, 1, cfg["conv_L_cache"]), "conv"),
                      (p + "conv.out_proj.weight", (h, h), "normal")]
        else:
            specs += [(p + "self_attn.q_proj.weight", (nh * hd, h), "normal"),
                      (p + "self_attn.k_proj.weight", (nkv * hd, h), "normal"),
                      (p + "self_attn.v_proj.weight", (nkv * hd, h), "normal"),
                      (p + "self_attn.out_proj.weight", (h, nh * hd), "normal"),
                      (p + "self_attn.q_layernorm.weight", (hd,), "ones"),
                      (p + "self_attn.k_layernorm.weight", (hd,), "ones")]
        specs += [(p + "ffn_norm.weight", (h,), "ones"),
                  (p + "feed_forward.w1.weight", (ff, h), "normal"),
                  (p + "feed_forward.w3.weight", (ff, h), "normal"),
                  (p + "feed_forward.w2.weight", (h, ff), "normal")]
    specs.append(("model.embedding_norm.weight", (h,), "ones"))
    if not cfg["tie_word_embeddings"]:
        specs.append(("lm_head.weight", (v, h), "normal"))
    return specs


def param_count(cfg: dict[str, Any]) -> int:
    return sum(int(np.prod(s)) for _, s, _ in tensor_specs(cfg))


# --------------------------------------------------------------------------------------------
# BF16 and safetensors
# --------------------------------------------------------------------------------------------


def bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> BF16 bit patterns (uint16), rounding to nearest even (no NaN handling
    needed for finite inputs; NaN stays NaN as long as a mantissa bit survives)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    r = u + (np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1)))
    return (r >> np.uint32(16)).astype(np.uint16)


_ST_DTYPE_SIZE = {"BF16": 2, "F16": 2, "F32": 4}

CHUNK_ELEMS = 1 << 22  # 4M elements (16 MB of float32) per generated chunk


def _tensor_stream(name: str, shape: tuple[int, ...], init: str, seed: int, std: float) -> Iterator[np.ndarray]:
    """Yield the BF16 bit patterns of one tensor, chunk by chunk (row-major)."""
    n = int(np.prod(shape))
    if init == "ones":
        yield np.full(n, 0x3F80, np.uint16)  # bf16(1.0)
        return
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    done = 0
    while done < n:
        m = min(CHUNK_ELEMS, n - done)
        x = rng.standard_normal(m, dtype=np.float32)
        x *= np.float32(std)
        yield bf16_bits(x)
        done += m


def _prefetched(factories: list[Callable[[], Iterator[np.ndarray]]], pool: ThreadPoolExecutor | None,
                window: int) -> list[Iterator[np.ndarray]]:
    """The tensors' chunk streams for :func:`write_safetensors`, each tensor computed whole in
    ``pool``'s threads (numpy's generators and ufuncs release the GIL), up to ``window`` tensors
    ahead of the writer. The bytes are those of running the factories one by one: every tensor
    has its own generator. Without a pool: the factories' streams as they are."""
    if pool is None:
        return [f() for f in factories]
    futures: dict[int, Future] = {}

    def stream(i: int) -> Iterator[np.ndarray]:
        for j in range(i, min(i + window, len(factories))):
            if j not in futures:
                futures[j] = pool.submit(lambda f=factories[j]: list(f()))
        yield from futures.pop(i).result()

    return [stream(i) for i in range(len(factories))]


def write_safetensors(path: Path, tensors: list[tuple[str, tuple[int, ...], str, Iterator[np.ndarray]]],
                      metadata: dict[str, str] | None = None, progress=None) -> None:
    """Stream tensors to a safetensors file.

    ``tensors``: (name, shape, dtype "BF16"/"F16"/"F32", iterator of flat chunks whose raw
    bytes concatenate to the tensor's data). The header is written first (all sizes are known
    from the shapes), then the data; the file is written under a temporary name and renamed
    at the end, so an interrupted run never leaves a half file behind.
    """
    header: dict[str, Any] = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    off = 0
    for name, shape, dtype, _ in tensors:
        nbytes = int(np.prod(shape)) * _ST_DTYPE_SIZE[dtype]
        header[name] = {"dtype": dtype, "shape": [int(s) for s in shape], "data_offsets": [off, off + nbytes]}
        off += nbytes
    hb = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hb += b" " * (-len(hb) % 8)  # data starts 8-aligned
    tmp = path.with_name(path.name + ".partial")
    total = off
    with open(tmp, "wb") as f:
        f.write(len(hb).to_bytes(8, "little"))
        f.write(hb)
        base = f.tell()
        written = 0
        for name, shape, dtype, chunks in tensors:
            start = f.tell() - base
            for c in chunks:
                c = np.ascontiguousarray(c)
                f.write(c.tobytes() if c.dtype.byteorder == ">" else memoryview(c).cast("B"))
                written += c.nbytes
            want = header[name]["data_offsets"][1]
            if f.tell() - base != want:
                raise RuntimeError(f"{name}: wrote {f.tell() - base - start} bytes, expected {want - start}")
            if progress:
                progress(written, total)
    os.replace(tmp, path)


# --------------------------------------------------------------------------------------------
# Tokenizer
# --------------------------------------------------------------------------------------------

_TRAINING_TEXT = """\
The quick brown fox jumps over the lazy dog. A language model predicts the next token from
the tokens before it. Memory bandwidth bounds decoding at batch size one: every weight is read
once per generated token. Prefill processes the whole prompt as a matrix-matrix product, so it
is bound by arithmetic instead. Once upon a time there was a little robot who liked to count
the stars; every night it counted them again and found one more than the night before.
def fibonacci(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a
The capital of France is Paris. The capital of Japan is Tokyo. Water boils at 100 degrees
Celsius at sea level. Numbers: 0 1 2 3 4 5 6 7 8 9 10 11 12 42 100 1000 2024 3.14159.
"""

SPECIAL_TOKENS = ["<unk>", "<s>", "</s>"]  # ids 0, 1, 2 (Llama-2 style)


def make_tokenizer(vocab_size: int):
    """A byte-level BPE (``tokenizers``) with at most ``vocab_size`` tokens, trained in
    milliseconds on a small built-in text. Specials <unk>=0, <s>=1, </s>=2."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    target = int(min(vocab_size, 2048))
    if target < len(SPECIAL_TOKENS) + 256:
        raise ValueError(f"vocab_size {vocab_size} is too small for a byte-level BPE (needs >= 259)")
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=target,
        min_frequency=2,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator([_TRAINING_TEXT] * 4, trainer=trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)]
    )
    assert tok.token_to_id("<s>") == 1 and tok.token_to_id("</s>") == 2
    assert tok.get_vocab_size() <= vocab_size
    return tok


# --------------------------------------------------------------------------------------------
# The checkpoint
# --------------------------------------------------------------------------------------------


def _stamp(cfg: dict[str, Any], seed: int, std: float) -> str:
    blob = json.dumps({"cfg": cfg, "seed": seed, "std": std, "v": FORMAT_VERSION}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def make_checkpoint(
    shape: str | dict[str, Any],
    out: str | os.PathLike | None = None,
    *,
    seed: int = 0,
    std: float = 0.02,
    force: bool = False,
    quiet: bool = False,
    name: str | None = None,
    jobs: int | None = None,
) -> Path:
    """Write (or reuse) a random-weight checkpoint; return its folder.

    ``shape``: a key of :data:`SHAPES` or a shape dict. ``out``: the cache folder (default
    ``~/.cache/pyvt/bench``); the checkpoint goes to ``out/<name>``. A folder whose stamp
    (config + seed + std + format version) matches is reused unless ``force``. ``jobs``: threads
    generating tensors (default: the cores, at most 16); the bytes do not depend on it.
    """
    if isinstance(shape, str):
        if shape not in SHAPES:
            raise KeyError(f"unknown shape {shape!r}; known: {', '.join(SHAPES)}")
        name = name or shape
        shape = SHAPES[shape]
    name = name or "custom"
    cfg = llama_config(shape, name)
    folder = Path(out).expanduser() if out is not None else DEFAULT_OUT
    folder = folder / name
    stamp = _stamp(cfg, seed, std)
    stamp_file = folder / ".pyvt_random_stamp"
    if not force and stamp_file.is_file() and stamp_file.read_text().strip() == stamp \
            and (folder / "model.safetensors").is_file():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    if stamp_file.exists():
        stamp_file.unlink()

    specs = tensor_specs(cfg)
    total = sum(int(np.prod(s)) for _, s, _ in specs) * 2
    if not quiet:
        print(f"[make_checkpoint] {name}: {param_count(cfg) / 1e6:.1f}M params, "
              f"{total / 2**30:.2f} GiB BF16 -> {folder}", file=sys.stderr, flush=True)
    t0 = time.time()
    last = [0.0]

    def progress(done: int, tot: int) -> None:
        now = time.time()
        if not quiet and (now - last[0] > 5 or done == tot):
            last[0] = now
            print(f"[make_checkpoint]   {done / 2**20:8.0f} / {tot / 2**20:.0f} MiB "
                  f"({now - t0:.0f} s)", file=sys.stderr, flush=True)

    jobs = max(1, int(jobs or min(os.cpu_count() or 1, 16)))
    pool = ThreadPoolExecutor(jobs) if jobs > 1 else None
    try:
        router_std = float(cfg.get("_pyvt_random_checkpoint", {}).get("router_std", std))
        conv_std = float(cfg.get("_pyvt_random_checkpoint", {}).get("conv_std", std))

        def factory(n: str, s: tuple[int, ...], init: str) -> Callable[[], Iterator[np.ndarray]]:
            if init == "router":
                return lambda: _tensor_stream(n, s, "normal", seed, router_std)
            if init == "conv":
                return lambda: _tensor_stream(n, s, "normal", seed, conv_std)
            return lambda: _tensor_stream(n, s, init, seed, std)

        streams = _prefetched([factory(n, s, init) for n, s, init in specs], pool, 2 * jobs)
        write_safetensors(
            folder / "model.safetensors",
            [(n, s, "BF16", st) for (n, s, _), st in zip(specs, streams)],
            metadata={"format": "pt", "pyvt_random_shape": name, "seed": str(seed), "std": str(std)},
            progress=progress,
        )
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    (folder / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    eos = cfg["eos_token_id"]
    (folder / "generation_config.json").write_text(json.dumps(
        {"bos_token_id": cfg["bos_token_id"], "eos_token_id": eos, "do_sample": False}, indent=2) + "\n")

    tok = make_tokenizer(cfg["vocab_size"])
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": "<s>",
        "eos_token": "</s>",
        "unk_token": "<unk>",
        "add_bos_token": True,
        "add_eos_token": False,
        "model_max_length": cfg["max_position_embeddings"],
        "clean_up_tokenization_spaces": False,
    }, indent=2) + "\n")
    stamp_file.write_text(stamp + "\n")
    if not quiet:
        print(f"[make_checkpoint] {name}: done in {time.time() - t0:.1f} s", file=sys.stderr, flush=True)
    return folder


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("shapes", nargs="*", help=f"shapes to build ({', '.join(SHAPES)})")
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="cache folder (default %(default)s)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--std", type=float, default=0.02)
    ap.add_argument("--force", action="store_true", help="rebuild even when a matching copy exists")
    ap.add_argument("--jobs", type=int, default=None,
                    help="threads generating tensors (default: the cores, at most 16; same bytes for any)")
    ap.add_argument("--list", action="store_true", help="list the shapes and exit")
    args = ap.parse_args(argv)
    if args.list or not args.shapes:
        for k, s in SHAPES.items():
            cfg = llama_config(s, k)
            mlp = (f"{cfg['num_experts']} experts top-{cfg['num_experts_per_tok']} of inter "
                   f"{cfg['moe_intermediate_size']}" if is_moe(cfg) else f"inter {mlp_width(cfg)}")
            if is_lfm2(cfg):
                mlp += f", {cfg['layer_types'].count('conv')} conv layers (L {cfg['conv_L_cache']})"
            print(f"{k:16s} {param_count(cfg) / 1e6:9.1f}M params  hidden {cfg['hidden_size']}, "
                  f"{cfg['num_hidden_layers']} layers, {cfg['num_attention_heads']}/{cfg['num_key_value_heads']} heads, "
                  f"{mlp}, vocab {cfg['vocab_size']}, "
                  f"{'tied' if cfg['tie_word_embeddings'] else 'untied'}")
        return 0
    for s in args.shapes:
        print(make_checkpoint(s, args.out, seed=args.seed, std=args.std, force=args.force, jobs=args.jobs))
    return 0


if __name__ == "__main__":
    sys.exit(main())

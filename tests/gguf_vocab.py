"""A GGUF vocabulary stored in tests/data/gguf_tokenizer_llamacpp.json, as the file llama.cpp
read (tools/make_llamacpp_golden.py writes both; tests/test_gguf_tokenizer_llamacpp.py
rebuilds the file from the stored case)."""

from __future__ import annotations

import gguf_writer as gw

# llama.cpp loads a vocabulary only after the architecture's hyperparameters: a 1-layer shape.
HPARAMS = {
    "general.architecture": "llama",
    "llama.context_length": ("u32", 128),
    "llama.embedding_length": ("u32", 64),
    "llama.block_count": ("u32", 1),
    "llama.feed_forward_length": ("u32", 128),
    "llama.attention.head_count": ("u32", 4),
    "llama.attention.head_count_kv": ("u32", 4),
    "llama.attention.layer_norm_rms_epsilon": ("f32", 1e-6),
    "llama.rope.dimension_count": ("u32", 16),
}


def gguf_meta(case: dict) -> dict:
    """The GGUF metadata of a stored case (the tests build the same file from it)."""
    meta: dict = {}
    for k, (kind, v) in ((k, v) for k, v in HPARAMS.items() if not isinstance(v, str)):
        meta[k] = gw.Val(gw.UINT32 if kind == "u32" else gw.FLOAT32, v)
    meta["general.architecture"] = HPARAMS["general.architecture"]
    meta["tokenizer.ggml.model"] = case["tokenizer.ggml.model"]
    meta["tokenizer.ggml.tokens"] = case["tokens"]
    meta["tokenizer.ggml.token_type"] = gw.Val(gw.ARRAY, case["types"], gw.INT32)
    if "scores" in case:
        meta["tokenizer.ggml.scores"] = gw.Val(gw.ARRAY, case["scores"], gw.FLOAT32)
    if "merges" in case:
        meta["tokenizer.ggml.merges"] = case["merges"]
    if "pre" in case:
        meta["tokenizer.ggml.pre"] = case["pre"]
    for key, name in (("bos", "bos_token_id"), ("eos", "eos_token_id"), ("unk", "unknown_token_id"),
                      ("pad", "padding_token_id")):
        if key in case:
            meta[f"tokenizer.ggml.{name}"] = gw.Val(gw.UINT32, case[key])
    if "add_space_prefix" in case:
        meta["tokenizer.ggml.add_space_prefix"] = gw.Val(gw.BOOL, case["add_space_prefix"])
    if "add_bos" in case:
        meta["tokenizer.ggml.add_bos_token"] = gw.Val(gw.BOOL, case["add_bos"])
    return meta

"""Convert a GGUF file of llama.cpp's `llama` (Llama, Mistral; Mixtral when it has experts),
`qwen2`, `qwen3`, `gemma`, `gemma2`, `gemma3`, `phi2`, `phi3`, `stablelm`, `starcoder2`, `smollm3`,
`granite`, `olmo2` (OLMo 2; OLMo 3 when it has a sliding window), `ernie4_5`, `seed_oss`, `glm4`,
`command-r` (Cohere: Command R, Aya 23), `cohere2`, `arcee`, `exaone4`, `apertus`, `nemotron`, `gptneox`
(GPT-NeoX, Pythia), `gpt2`, `starcoder` (GPTBigCode: StarCoder 1, SantaCoder), `falcon`, `bloom`, `mpt`, `qwen2moe`,
`qwen3moe`, `granitemoe`, `olmoe`, `gpt-oss`, `glm4moe` (GLM-4.5 / 4.6 / 4.5-Air), `dots1`
(dots.llm1), `deepseek2` (DeepSeek-V2 / V3 / R1, Kimi K2, Moonlight), `ernie4_5-moe` (ERNIE 4.5
21B-A3B / 300B-A47B), `minimax-m2` (MiniMax-M2 / M2.1), `exaone-moe` (K-EXAONE), `lfm2` (LiquidAI
LFM2), `lfm2moe` (LiquidAI LFM2-MoE), `hunyuan-moe` (Hunyuan-A13B), `mistral3` (Ministral 3),
`mistral4` (Mistral 4), `minicpm3` (MiniCPM3), `exaone` (EXAONE 3 / 3.5), `jais2` (Jais-2), `afmoe`
(Arcee Trinity), `hunyuan-dense` (Hunyuan 0.5B … 7B), `olmo` (OLMo 1) or `hy_v3` (Hy3) architecture into a Hugging Face-style checkpoint folder.

    convert_gguf("SmolLM2-135M-Instruct.Q4_1.gguf", "out/")  ->  out/
        config.json               LlamaForCausalLM / Qwen2ForCausalLM / Qwen3ForCausalLM /
                                  Gemma2ForCausalLM / Gemma3ForCausalLM / Phi3ForCausalLM /
                                  MixtralForCausalLM / Qwen2MoeForCausalLM / Qwen3MoeForCausalLM, every
                                  field from the GGUF metadata (and llama.cpp's rules for the
                                  few it does not store: `_family_config`)
        generation_config.json    BOS/EOS/PAD ids
        model.safetensors         BF16 (default), Hugging Face tensor names and layouts
        tokenizer.json            rebuilt with `tokenizers` from the GGUF vocabulary
        tokenizer_config.json     special tokens, add_bos_token, chat_template, model_max_length
        special_tokens_map.json

Quantized tensors are dequantized (pyvt.gguf) and rounded once to the output dtype. Two
layout differences between llama.cpp and Hugging Face are undone here:

* llama.cpp's converter permutes the rows of Q and K of a `llama` model so that RoPE rotates
  adjacent pairs (x0, x1), (x2, x3)...; Hugging Face rotates halves (x_i, x_{i+d/2})
  ("rotate_half"). We apply the inverse permutation per head (`unpermute_qk`; Q with n_head,
  K with n_head_kv; their biases too; `arcee`, `smollm3`, `granite`, `mistral3` and `olmo` are converted as
  `llama` is). Its `qwen2` / `qwen3` / `gemma*` / `phi3` / `seed_oss`
  / `olmo2` / `exaone4` / `apertus` / `nemotron` / `gptneox` / `falcon` / `minimax-m2` / `exaone-moe` / `lfm2` / `lfm2moe` / `hunyuan-moe` / `hunyuan-dense` / `afmoe` / `hy_v3` converters keep the Hugging Face order (llama.cpp runs them with NEOX-style RoPE),
  and so do its `ernie4_5` / `ernie4_5-moe` / `glm4` / `command-r` / `cohere2` ones, whose Hugging Face models
  rotate pairs (2i, 2i + 1) as llama.cpp's NORM RoPE does (libvt reorders those rows at load,
  as for the Hub's checkpoints): nothing is undone there.
* What llama.cpp computes otherwise than the Hugging Face family is rebuilt or refused
  (`_hf_configs`): an `olmo2` file with a sliding window is OLMo 3, whose sliding layers
  llama.cpp rotates with rope.freq_base unscaled (`_olmo3_config`); Cohere's logit_scale as
  llama.cpp applies it, Cohere 2's window and sliding layers as it reads them (`_cohere_config`);
  ERNIE 4.5 files with biases, Seed-OSS o / MLP biases, GLM-4's M-RoPE and NextN layers,
  Cohere files with biases, q/k norms (Command R+) or an output matrix are refused; EXAONE 4's
  window and NoPE global layers only as llama.cpp runs them, with 64 blocks (`_exaone4_config`;
  another file storing a window is refused), Arcee files with biases are refused; Apertus's
  xIELU parameters, metadata arrays in the file (xielu.*, raw as the checkpoint holds them),
  become each block's mlp.act_fn.* tensors (`_xielu_params`), its llama3 RoPE is stated as
  rope_parameters, and biases on only some of q/k/v/o are refused; Nemotron's biases on only
  some of q/k/v/o or up/down, its rope_freqs and scaling other than linear are refused.
  Bloom's ALiBi is the max bias 8 llama.cpp applies (whatever attention.max_alibi_bias says: a
  file saying another is refused), its MLP 4 · hidden (another feed_forward_length is refused).
  MPT's ALiBi is the attention.max_alibi_bias llama.cpp reads (absent or 0: no positions at all;
  other than 8: refused), its clamp_kqv attn_config.clip_qkv; softmax_scale stays null (llama.cpp
  scales by 1/sqrt(head_dim) whatever the checkpoint said), its MLP 4 · hidden.
* Gemma's RMSNorm weights (every `*norm.weight`, q/k norms included) and Nemotron's
  LayerNorm1P weights are stored as w + 1 (llama.cpp's norm multiplies by the weight; Gemma's
  and Nemotron's by 1 + w): 1 is subtracted here.
  Phi-3's fused `attn_qkv` (q | k | v rows) and `ffn_up` (gate rows, then up rows) are
  Hugging Face's `qkv_proj` and `gate_up_proj` as they are; GPT-NeoX's `attn_qkv`, which
  llama.cpp's converter reorders from per-head [q, k, v] groups into q | k | v, gets its
  per-head rows back (`qkv_per_head`; a references file marks the GGUF's rows with
  pyvt_qkv_heads instead, which libvt honours; so does GPTBigCode's multi-head `c_attn`, and
  Falcon's `attn_qkv`, reordered from its groups per KV head ([q·g, k, v]): `qkv_per_head` with
  the KV heads, the marker [heads, KV heads]), and Bloom's `attn_qkv`, per-head [q, k, v] as
  GPT-NeoX's (the marker its heads).
  GPT-2's Conv1D weights, which llama.cpp's converter transposes to [out, in], are written
  as Conv1D's [in, out] again when they are floats; GGML blocks (rows along the input) stay
  [out, in], written or referenced with the marker pyvt_out_in, which libvt honours.
* A mixture-of-experts block stacks its experts ([experts, rows, cols] `ffn_*_exps`); Hugging
  Face checkpoints hold one tensor per expert, written here one slice at a time (a Q8_0 /
  Q4_0 / Q4_1 expert keeps its blocks: each expert is whole rows of them). Qwen2-MoE's shared
  expert gate is [hidden] in GGUF and [1, hidden] in Hugging Face. GLM-4 MoE's and dots1's
  router keys (sigmoid gating, expert groups, the weights' norm and scale, dense blocks first,
  shared experts) become Glm4MoeConfig's / Dots1Config's fields as llama.cpp reads them
  (`_sigmoid_router`), their correction bias exp_probs_b the router's float32
  e_score_correction_bias; GLM-4 MoE's NextN blocks (after the model's) are left out, and dots1
  has no sliding window (llama.cpp's has none). DeepSeek's (deepseek2) router is the same
  function's with softmax gating too (DeepseekV2ForCausalLM, greedy); its kv_b, which
  llama.cpp's converter splits per head into attn_k_b (transposed) and attn_v_b, is rebuilt into
  kv_b_proj, always float (`_mla_params`, `_mla_rope_scaling` for its YaRN). EXAONE MoE's
  router is the same function's too (its shared experts by expert_shared_feed_forward_length,
  dense blocks first as mlp_layer_types, NextN blocks left out), its window and NoPE full
  layers as llama.cpp runs them (`_exaone_moe_config`). ERNIE 4.5 MoE's softmax router and
  MiniMax-M2's sigmoid one choose with exp_probs_b and renormalize, unscaled
  (`_biased_router`); their correction bias goes where each family's checkpoints hold it
  (ERNIE's moe_statics [1, experts], MiniMax-M2's and EXAONE MoE's on the block), MiniMax-M2's
  experts under Mixtral's names; ERNIE 4.5 MoE files with MoE blocks every second or more
  (interleave_moe_layer_step, which llama.cpp's loader cannot hold) are refused.
* LFM2 (`lfm2`) mixes some blocks by a gated short convolution instead of attention: llama.cpp
  marks them by 0 in the per-block attention.head_count_kv array (written back as
  layer_types), stores the depthwise kernel as [hidden, shortconv.l_cache] (Hugging Face's
  Conv1d weight is [hidden, 1, l_cache]) and names the final norm token_embd_norm (Hugging
  Face's model.embedding_norm); the MLP is feed_forward_length wide as it stands
  (block_auto_adjust_ff_dim false). What Lfm2Config cannot say is refused (`_lfm2_layers`).
  LFM2-MoE (`lfm2moe`) is read the same way, its MoE blocks after leading_dense_block_count
  with the router, its bias and the experts under feed_forward (`_lfm2_moe_router`): llama.cpp
  renormalizes the chosen weights and never scales them whatever the keys say, and so does the
  folder (keys saying otherwise are refused).
* AFMoE (`afmoe`, Arcee Trinity): llama.cpp's afmoe always scales the embeddings by
  sqrt(hidden_size) (muP: mup_enabled true), leaves every 4th block without RoPE whatever the
  keys say and slides the blocks attention.sliding_window_pattern marks: a file whose full
  blocks are not its NoPE ones, or with no window, is refused, since AFMoE's full blocks are
  its NoPE blocks (`_afmoe_config`); its router is DeepSeek-V3's sigmoid one with the correction
  bias (mlp.expert_bias), always renormalized (`_afmoe_router`).
* HunYuan MoE (`hunyuan-moe`): llama.cpp's converter bakes the 'dynamic' NTK alpha into
  rope.freq_base (theta · alpha^(d / (d - 2))); the folder states that base as the default RoPE
  type's, which rotates the same. llama.cpp adds q/k/v biases but has no o_proj bias: a file with
  q/k/v biases becomes attention_bias true with a zero o_proj bias, one with attn_output.bias is
  refused (`_hunyuan_moe_router` for the MoE keys). HunYuan dense (`hunyuan-dense`) is the same
  attention with a SwiGLU MLP in every block; a rope.scaling.alpha key, which llama.cpp's loader
  applies to rope.freq_base (its converter bakes it in instead), is applied the same way
  (`_hunyuan_alpha_base`).
* Ministral 3 (`mistral3`): llama.cpp multiplies each query by 1 + attention.temperature_scale ·
  log(1 + floor(pos / original_context_length)) and computes YaRN's rotation factor from
  yarn_log_multiplier (mscale_all_dim) with mscale 1; both become Ministral3Config's
  rope_parameters (`_mistral3_rope`). llama.cpp's mistral3 has no sliding window, no biases and
  no experts in a Ministral 3: files saying otherwise are refused.
  Mistral 4 (`mistral4`) is llama.cpp's deepseek2 run under another name: its latent attention
  is read as deepseek2's (`_mla_params`), its softmax router over groups (scored by their two best,
  as Mistral4TopkRouter) through `_sigmoid_router`, its experts written stacked as transformers
  saves them (gate_up_proj from ffn_gate_up_exps, or gate and up stacked; down_proj), the query
  scale from attention.temperature_scale / temperature_length and YaRN as llama.cpp's mistral4
  scales it, not deepseek2's way (`_mistral4_rope`).
  MiniCPM3 (`minicpm3`): deepseek2's latent attention reading (q's LoRA required, kv_b whole),
  dense, rotate-half RoPE with LongRoPE from rope_factors_long / _short (`_minicpm3_rope`), and
  MiniCPM's scales as llama.cpp's graph fixes them: scale_emb 12, scale_depth 1.4,
  dim_model_base 256 (`_minicpm3_config`).
  EXAONE 3 / 3.5 (`exaone`): Llama's block, Q/K as they are (NEOX rope), written under EXAONE's
  own tensor and config.json names (`_exaone_config`), llama3 scaling from rope_freqs; biases
  are refused.
  Jais-2 (`jais2`): LayerNorms with biases, q/k/v/o and MLP biases (llama.cpp's jais2 needs
  the o / MLP / norm ones: the folder always says attention_bias and mlp_bias), the ungated relu²
  MLP, Q/K as they are (NEOX rope); a file without q/k/v biases is refused.
* A GGUF has no tokenizer.json; it stores the vocabulary, merges and token types as metadata
  (rebuilt by :mod:`pyvt.gguf_tokenizer`).

Only numpy, `tokenizers` and the standard library are used: no torch, no safetensors/gguf
packages.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import struct
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .gguf import (GGML_TYPES, GGMLType, GGUFFile, _describe, dequantize, iq4_nl_as_q8_0, iq4_xs_as_q8_0, meta_value,
                   q4_k_as_q4_1, q4_k_fits_q4_1, q5_0_as_q8_0, quantize_q8_0)
from .gguf_tokenizer import build_tokenizer, eos_token_ids, tokenizer_config

__all__ = [
    "convert_gguf",
    "unpermute_qk",
    "qkv_per_head",
    "qkv_blocked",
    "permute_qk",
    "write_safetensors",
    "dequantize_folder",
    "build_tokenizer",
    "hf_tensor_name",
    "CONVERTER_VERSION",
]

#: Bumped whenever the output of the converter changes (hub.pull re-converts on a mismatch, and
#: so does a folder converted from a local GGUF file).
#: 2: the tokenizer and end-of-generation ids as llama.cpp has them: SentencePiece's space
#: prefix before every stretch of text, llama.cpp's splits for every pre-tokenizer name, the
#: Llama 3 family's whole-word lookup and default BOS, and the EOS list extended with the tokens
#: llama.cpp ends generation on (<end_of_turn>, <|im_end|>, ...).
CONVERTER_VERSION = 2

# Large 2-D tensors are dequantized and written this many values at a time.
_CHUNK_VALUES = 1 << 22

# --------------------------------------------------------------------------------------------
# Tensor names and layouts
# --------------------------------------------------------------------------------------------

_GLOBAL_NAMES = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
}
# Phi-2's global tensors beside those (its LayerNorm's bias, lm_head's bias).
_PHI2_GLOBAL_NAMES = {
    "output_norm.weight": "model.final_layernorm.weight",
    "output_norm.bias": "model.final_layernorm.bias",
    "output.bias": "lm_head.bias",
}


# GPT-NeoX's global tensors (GPTNeoXForCausalLM's names: embed_in, final_layer_norm, embed_out).
_GPTNEOX_GLOBAL_NAMES = {
    "token_embd.weight": "gpt_neox.embed_in.weight",
    "output_norm.weight": "gpt_neox.final_layer_norm.weight",
    "output_norm.bias": "gpt_neox.final_layer_norm.bias",
    "output.weight": "embed_out.weight",
}


# GPT-2's and GPTBigCode's global tensors (the base model's transformer.*, the learned
# positions wpe; lm_head when untied).
_GPT2_GLOBAL_NAMES = {
    "token_embd.weight": "transformer.wte.weight",
    "position_embd.weight": "transformer.wpe.weight",
    "output_norm.weight": "transformer.ln_f.weight",
    "output_norm.bias": "transformer.ln_f.bias",
    "output.weight": "lm_head.weight",
}
# The GGUF architectures of the GPT-2 lineage: learned positions (position_embd), no RoPE.
_LEARNED_POS_ARCHS = ("gpt2", "starcoder")
# Falcon's global tensors (FalconForCausalLM's transformer.word_embeddings, ln_f; lm_head when untied).
_FALCON_GLOBAL_NAMES = {
    "token_embd.weight": "transformer.word_embeddings.weight",
    "output_norm.weight": "transformer.ln_f.weight",
    "output_norm.bias": "transformer.ln_f.bias",
    "output.weight": "lm_head.weight",
}
# Bloom's: Falcon's, and the LayerNorm of the embeddings (token_embd_norm: word_embeddings_layernorm).
_BLOOM_GLOBAL_NAMES = dict(_FALCON_GLOBAL_NAMES, **{
    "token_embd_norm.weight": "transformer.word_embeddings_layernorm.weight",
    "token_embd_norm.bias": "transformer.word_embeddings_layernorm.bias",
})
# MPT's global tensors (MptForCausalLM's transformer.wte, norm_f without a bias; lm_head when untied).
_MPT_GLOBAL_NAMES = {
    "token_embd.weight": "transformer.wte.weight",
    "output_norm.weight": "transformer.norm_f.weight",
    "output.weight": "lm_head.weight",
}
# EXAONE 3 / 3.5's global tensors under its modeling code's names (transformer.wte, ln_f; lm_head
# when untied), as the Hub's files and libvt's Exaone row name them.
_EXAONE_GLOBAL_NAMES = {
    "token_embd.weight": "transformer.wte.weight",
    "output_norm.weight": "transformer.ln_f.weight",
    "output.weight": "lm_head.weight",
}
# LFM2's global tensors: llama.cpp's converter maps model.embedding_norm, the norm LFM2 applies
# after its last block, to token_embd_norm, and llama.cpp's lfm2 loads that as its output norm.
_LFM2_GLOBAL_NAMES = {
    "token_embd.weight": "model.embed_tokens.weight",
    "token_embd_norm.weight": "model.embedding_norm.weight",
    "output.weight": "lm_head.weight",
}
# llama.cpp's LFM2 architectures: lfm2 (dense) and lfm2moe (LFM2-MoE), the same blocks.
_LFM2_ARCHS = ("lfm2", "lfm2moe")
# The GGUF architectures with ALiBi instead of RoPE.
_ALIBI_ARCHS = ("bloom", "mpt")
# The GGUF architectures without RoPE: learned positions (GPT-2 lineage) or ALiBi (Bloom, MPT).
_NO_ROPE_ARCHS = ("gpt2", "starcoder") + _ALIBI_ARCHS


def _global_name(gguf_name: str, arch: str) -> str | None:
    """The Hugging Face name of a global (not per-block) GGUF tensor of `arch`, else None."""
    if arch == "phi2" and gguf_name in _PHI2_GLOBAL_NAMES:
        return _PHI2_GLOBAL_NAMES[gguf_name]
    if arch == "gptneox":
        return _GPTNEOX_GLOBAL_NAMES.get(gguf_name)
    if arch in _LEARNED_POS_ARCHS:
        return _GPT2_GLOBAL_NAMES.get(gguf_name)
    if arch in ("falcon", "falcon-2ln"):
        return _FALCON_GLOBAL_NAMES.get(gguf_name)
    if arch == "bloom":
        return _BLOOM_GLOBAL_NAMES.get(gguf_name)
    if arch == "mpt":
        return _MPT_GLOBAL_NAMES.get(gguf_name)
    if arch in _LFM2_ARCHS:
        return _LFM2_GLOBAL_NAMES.get(gguf_name)
    if arch == "exaone":
        return _EXAONE_GLOBAL_NAMES.get(gguf_name)
    if arch in ("stablelm", "starcoder2", "nemotron", "jais2") and gguf_name == "output_norm.bias":  # (its final LayerNorm's bias)
        return "model.norm.bias"
    return _GLOBAL_NAMES.get(gguf_name)


# The GGUF architectures whose norms are LayerNorms (layer_norm_epsilon), and those of them
# whose heads may rotate only partly (rope.dimension_count below head_dim).
_LAYER_NORM_ARCHS = ("phi2", "stablelm", "starcoder2", "command-r", "cohere2", "nemotron", "jais2", "gptneox", "gpt2", "starcoder",
                     "falcon", "bloom", "mpt", "olmo")
_PARTIAL_ROTARY_ARCHS = ("phi2", "stablelm", "starcoder2", "glm4", "nemotron", "gptneox", "glm4moe", "minimax-m2")


_BLOCK_NAMES = {
    "attn_norm.weight": "input_layernorm.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
    "attn_q.weight": "self_attn.q_proj.weight",
    "attn_k.weight": "self_attn.k_proj.weight",
    "attn_v.weight": "self_attn.v_proj.weight",
    "attn_output.weight": "self_attn.o_proj.weight",
    "attn_q.bias": "self_attn.q_proj.bias",
    "attn_k.bias": "self_attn.k_proj.bias",
    "attn_v.bias": "self_attn.v_proj.bias",
    "attn_output.bias": "self_attn.o_proj.bias",
    "ffn_gate.weight": "mlp.gate_proj.weight",
    "ffn_up.weight": "mlp.up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
    "attn_q_norm.weight": "self_attn.q_norm.weight",
    "attn_k_norm.weight": "self_attn.k_norm.weight",
}
_BLOCK_RE = re.compile(r"^blk\.(\d+)\.(.+)$")
# Tensors llama.cpp may store that have no Hugging Face weight (handled through the config).
_SKIPPED = {"rope_freqs.weight"}
# Phi-3 LongRoPE (Phi-3-128k, Phi-3.5): the per-frequency factors, [rope_dim / 2] each.
_ROPE_FACTORS = ("rope_factors_long.weight", "rope_factors_short.weight")

# Gemma's block: llama.cpp's ffn_norm is the pre-feedforward norm, and two more norms.
_GEMMA_NAMES = {
    "ffn_norm.weight": "pre_feedforward_layernorm.weight",
    "post_attention_norm.weight": "post_attention_layernorm.weight",
    "post_ffw_norm.weight": "post_feedforward_layernorm.weight",
}
# Phi-3's fused projections, kept fused (pyvt's Phi3 family reads them as they are).
_PHI3_NAMES = {"attn_qkv.weight": "self_attn.qkv_proj.weight", "ffn_up.weight": "mlp.gate_up_proj.weight"}
_QKV_BIASES = ("attn_q.bias", "attn_k.bias", "attn_v.bias")
_QK_NORMS = ("attn_q_norm.weight", "attn_k_norm.weight")
_GEMMA_NORMS = ("post_attention_norm.weight", "post_ffw_norm.weight")


class _Arch(NamedTuple):
    """How llama.cpp stores one architecture (general.architecture)."""

    architecture: str        # config.json "architectures"
    model_type: str
    permuted: bool           # Q/K rows permuted by llama.cpp's converter (llama only)
    required: tuple = ()     # block tensors beyond the common ones that every block has
    optional: tuple = ()     # block tensors that may be there (biases of attention_bias models)
    norm_shift: float = 0.0  # norms stored as w + norm_shift (Gemma: 1)
    fused: bool = False      # attn_qkv and a gate|up ffn_up instead of q/k/v and gate/up (Phi-3)
    names: dict = {}         # block names that differ from Llama's
    post_norm: bool = False  # no attn_norm / ffn_norm (OLMo 2)
    qk_full: bool = False    # q/k norms over the whole projection (OLMo 2, OLMoE)
    mlp_norm: str = "ffn_norm.weight"  # the norm before the MLP (gpt-oss: post_attention_norm)
    parallel: bool = False   # one LayerNorm (attn_norm) before attention and the MLP, side by side: Phi-2's
                             # ungated MLP (ffn_up, ffn_down); with ffn_gate required, Cohere's gated one;
                             # with fused, attn_qkv instead of q/k/v (Falcon)
    gated: bool = True       # False: an ungated MLP, ffn_up then ffn_down (Starcoder2)
    gate_up: bool = False    # ffn_up is gate rows then up rows and there is no ffn_gate (GLM-4)
    prefix: str = "model.layers."  # the Hugging Face blocks' prefix (GPT-NeoX: gpt_neox.layers.)
    mla: bool = False        # DeepSeek's latent attention (attn_kv_a_mqa, ...) instead of q/k/v


_ARCHS = {
    "llama": _Arch("LlamaForCausalLM", "llama", True, optional=_QKV_BIASES + ("attn_output.bias",)),
    "qwen2": _Arch("Qwen2ForCausalLM", "qwen2", False, _QKV_BIASES, ("attn_output.bias",)),
    "qwen3": _Arch("Qwen3ForCausalLM", "qwen3", False, _QK_NORMS, _QKV_BIASES + ("attn_output.bias",)),
    # Gemma 1: llama's block (ffn_norm the pre-MLP norm), norms stored as 1 + w, not permuted.
    "gemma": _Arch("GemmaForCausalLM", "gemma", False, norm_shift=1.0),
    "gemma2": _Arch("Gemma2ForCausalLM", "gemma2", False, _GEMMA_NORMS, norm_shift=1.0, names=_GEMMA_NAMES),
    "gemma3": _Arch("Gemma3ForCausalLM", "gemma3_text", False, _GEMMA_NORMS + _QK_NORMS, norm_shift=1.0,
                    names=_GEMMA_NAMES),
    "phi3": _Arch("Phi3ForCausalLM", "phi3", False, fused=True, names=_PHI3_NAMES),
    # SmolLM3: llama's tensors (Q/K rows permuted), every 4th layer without RoPE (llama.cpp's
    # rule: no key stores it).
    "smollm3": _Arch("SmolLM3ForCausalLM", "smollm3", True, optional=_QKV_BIASES + ("attn_output.bias",)),
    # OLMo 2: the post-norm block (post_attention_norm, post_ffw_norm; no attn_norm / ffn_norm).
    "olmo2": _Arch("Olmo2ForCausalLM", "olmo2", False, _QK_NORMS + _GEMMA_NORMS, post_norm=True, qk_full=True,
                   names={"post_attention_norm.weight": "post_attention_layernorm.weight",
                          "post_ffw_norm.weight": "post_feedforward_layernorm.weight"}),
    # OLMo 1 (allenai/OLMo-1B-hf / 7B-hf / 7B-0424-hf; llama.cpp's olmo): Llama's block whose
    # LayerNorms have no weights or biases (no norm tensors at all, the final one neither), Q/K
    # rows permuted as llama's converter writes them, no biases, attention.clamp_kqv as clip_qkv.
    "olmo": _Arch("OlmoForCausalLM", "olmo", True, post_norm=True),
    # Granite: llama's tensors with four multipliers in the metadata (_hf_configs).
    "granite": _Arch("GraniteForCausalLM", "granite", True, optional=_QKV_BIASES + ("attn_output.bias",)),
    # GraniteMoE: granite's keys, experts as the MoE files have them; the folder stacks each
    # block's gate|up experts into input_linear [E, 2I, H] and its down experts into
    # output_linear [E, H, I], as GraniteMoeForCausalLM's checkpoints hold them.
    "granitemoe": _Arch("GraniteMoeForCausalLM", "granitemoe", True, optional=_QKV_BIASES + ("attn_output.bias",)),
    # Mixture of experts (every block: a router and the experts stacked in 3-D tensors; the
    # dense ffn_gate / ffn_up / ffn_down are absent). A `llama` file with expert_count > 0 is
    # Mixtral (_MIXTRAL).
    "qwen2moe": _Arch("Qwen2MoeForCausalLM", "qwen2_moe", False, _QKV_BIASES, ("attn_output.bias",)),
    "qwen3moe": _Arch("Qwen3MoeForCausalLM", "qwen3_moe", False, _QK_NORMS, _QKV_BIASES + ("attn_output.bias",)),
    # OLMoE: q/k norms over the whole projection, experts feed_forward_length wide, top weights
    # as they are (llama.cpp's norm_w false), attention.clamp_kqv = clip_qkv.
    "olmoe": _Arch("OlmoeForCausalLM", "olmoe", False, _QK_NORMS, _QKV_BIASES + ("attn_output.bias",), qk_full=True),
    # gpt-oss: attention sinks, post_attention_norm before the MLP, biases on the attention, the
    # router and every expert; gate and up experts apart (the folder interleaves them back).
    "gpt-oss": _Arch("GptOssForCausalLM", "gpt_oss", False, ("attn_sinks.weight",),
                     _QKV_BIASES + ("attn_output.bias",), mlp_norm="post_attention_norm.weight",
                     names={"post_attention_norm.weight": "post_attention_layernorm.weight",
                            "attn_sinks.weight": "self_attn.sinks"}),
}
_ARCHS["phi2"] = _Arch(  # Phi-1/1.5/2: biases everywhere, fc1 / fc2 as ffn_up / ffn_down, Q/K in HF order
    "PhiForCausalLM", "phi", False,
    ("attn_norm.bias", "attn_q.bias", "attn_k.bias", "attn_v.bias", "attn_output.bias", "ffn_up.bias", "ffn_down.bias"),
    parallel=True,
    names={"attn_output.weight": "self_attn.dense.weight", "attn_output.bias": "self_attn.dense.bias",
           "ffn_up.weight": "mlp.fc1.weight", "ffn_up.bias": "mlp.fc1.bias", "ffn_down.weight": "mlp.fc2.weight",
           "ffn_down.bias": "mlp.fc2.bias", "attn_norm.bias": "input_layernorm.bias"})
# StableLM: llama's block with LayerNorm biases, q/k/v biases when use_qkv_bias, Q/K in HF order.
_ARCHS["stablelm"] = _Arch("StableLmForCausalLM", "stablelm", False, ("attn_norm.bias", "ffn_norm.bias"), _QKV_BIASES,
                           names={"attn_norm.bias": "input_layernorm.bias",
                                  "ffn_norm.bias": "post_attention_layernorm.bias"})
# Starcoder2: LayerNorm biases, every linear's bias when use_bias, an ungated MLP (c_fc, c_proj).
_ARCHS["starcoder2"] = _Arch("Starcoder2ForCausalLM", "starcoder2", False, ("attn_norm.bias", "ffn_norm.bias"),
                             _QKV_BIASES + ("attn_output.bias", "ffn_up.bias", "ffn_down.bias"), gated=False,
                             names={"attn_norm.bias": "input_layernorm.bias",
                                    "ffn_norm.bias": "post_attention_layernorm.bias",
                                    "ffn_up.weight": "mlp.c_fc.weight", "ffn_up.bias": "mlp.c_fc.bias",
                                    "ffn_down.weight": "mlp.c_proj.weight", "ffn_down.bias": "mlp.c_proj.bias"})
# gpt-oss's biases beside its router and experts.
_OSS_BIASES = ("ffn_gate_inp.bias", "ffn_gate_exps.bias", "ffn_up_exps.bias", "ffn_down_exps.bias")
# ERNIE 4.5 dense: llama's tensors, Q/K in Hugging Face's order (its own RoPE rotates pairs
# (2i, 2i + 1), as llama.cpp's ernie4_5 does), no biases (_hf_configs: use_bias).
_ARCHS["ernie4_5"] = _Arch("Ernie4_5ForCausalLM", "ernie4_5", False)
# Seed-OSS: llama's block with q/k/v biases; its pre-MLP norm is post_attention_norm.
_ARCHS["seed_oss"] = _Arch("SeedOssForCausalLM", "seed_oss", False, optional=_QKV_BIASES,
                           mlp_norm="post_attention_norm.weight",
                           names={"post_attention_norm.weight": "post_attention_layernorm.weight"})
# GLM-4: Q/K in Hugging Face's order (pairs (2i, 2i + 1) of the first rope.dimension_count dims
# rotate), q/k/v biases, the sandwich norms (post_attention_norm after attention, ffn_norm
# before the MLP, post_ffw_norm after it) and gate|up fused in ffn_up.
_ARCHS["glm4"] = _Arch("Glm4ForCausalLM", "glm4", False, _GEMMA_NORMS, _QKV_BIASES, gated=False, gate_up=True,
                       names={"post_attention_norm.weight": "post_self_attn_layernorm.weight",
                              "post_ffw_norm.weight": "post_mlp_layernorm.weight",
                              "ffn_up.weight": "mlp.gate_up_proj.weight"})
# Cohere (Command R, Aya 23; llama.cpp's command-r) and Cohere 2 (Command R7B, Command A): one
# LayerNorm without bias (attn_norm) before a parallel block with Llama's gated MLP, Q/K in
# Hugging Face's order (its RoPE rotates pairs (2i, 2i + 1), as llama.cpp's NORM rope does), the
# output tied to token_embd (llama.cpp loads no output.weight), logits times logit_scale
# (_cohere_config); no biases, no q/k norms (_check_tensors).
_ARCHS["command-r"] = _Arch("CohereForCausalLM", "cohere", False, ("ffn_gate.weight",), parallel=True)
_ARCHS["cohere2"] = _Arch("Cohere2ForCausalLM", "cohere2", False, ("ffn_gate.weight",), parallel=True)
_COHERE_ARCHS = ("command-r", "cohere2")
# Arcee (AFM-4.5B; llama.cpp's converter is Llama's): llama's tensors, Q/K rows permuted, an
# ungated relu² MLP (ffn_up, ffn_down); no biases (_check_tensors).
_ARCHS["arcee"] = _Arch("ArceeForCausalLM", "arcee", True, gated=False)
# EXAONE 4: OLMo 2's post-norm block (post_attention_norm, post_ffw_norm) with q/k norms per head,
# Q/K in Hugging Face's order (NEOX rope); the window, its pattern and NoPE as llama.cpp decides
# them (_exaone4_config).
_ARCHS["exaone4"] = _Arch("Exaone4ForCausalLM", "exaone4", False, _QK_NORMS + _GEMMA_NORMS, post_norm=True,
                          names={"post_attention_norm.weight": "post_attention_layernorm.weight",
                                 "post_ffw_norm.weight": "post_feedforward_layernorm.weight"})
# EXAONE 3 / 3.5 (llama.cpp's ExaoneModel): Llama's block, Q/K in Hugging Face's order (its
# converter is not Llama's and permutes nothing: NEOX rope), under EXAONE's own names
# (transformer.h.N.ln_1 / ln_2, attn.attention.*, out_proj, mlp.c_fc_0 gate / c_fc_1 up / c_proj
# down); llama3 scaling as rope_freqs; no biases (_check_tensors).
_ARCHS["exaone"] = _Arch("ExaoneForCausalLM", "exaone", False, prefix="transformer.h.",
                         names={"attn_norm.weight": "ln_1.weight", "ffn_norm.weight": "ln_2.weight",
                                "attn_q.weight": "attn.attention.q_proj.weight",
                                "attn_k.weight": "attn.attention.k_proj.weight",
                                "attn_v.weight": "attn.attention.v_proj.weight",
                                "attn_output.weight": "attn.attention.out_proj.weight",
                                "ffn_gate.weight": "mlp.c_fc_0.weight", "ffn_up.weight": "mlp.c_fc_1.weight",
                                "ffn_down.weight": "mlp.c_proj.weight"})
# Apertus (llama.cpp's converter: Llama's with undo_permute off): Q/K in Hugging Face's order (NEOX
# rope), per-head q/k norms, the norms named attention_layernorm / feedforward_layernorm, an
# ungated xIELU MLP (ffn_up, ffn_down) whose per-layer parameters are metadata arrays
# (xielu.*: _xielu_params), q/k/v/o biases all or none (attention_bias; _check_tensors), llama3
# RoPE scaling by rope_freqs.
_ARCHS["apertus"] = _Arch("ApertusForCausalLM", "apertus", False, _QK_NORMS, _QKV_BIASES + ("attn_output.bias",),
                          gated=False, names={"attn_norm.weight": "attention_layernorm.weight",
                                              "ffn_norm.weight": "feedforward_layernorm.weight"})
# The xIELU parameters as transformers' checkpoint holds them (mlp.act_fn.*: alpha_p / alpha_n
# [1], beta / eps []), under llama.cpp's keys (no architecture prefix).
_XIELU = (("xielu.alpha_p", "alpha_p", (1,)), ("xielu.alpha_n", "alpha_n", (1,)), ("xielu.beta", "beta", ()),
          ("xielu.eps", "eps", ()))
# Nemotron (Minitron-4B, Nemotron-Mini-4B; llama.cpp's NemotronModel): Llama's sequential block
# with LayerNorm1P — llama.cpp's converter stores each `*norm.weight` as 1 + w (its LayerNorm
# multiplies by the weight), so 1 is subtracted here: the folder holds the checkpoint's w, as
# libvt adds 1 at load —, LayerNorm biases (attn_norm / ffn_norm / output_norm .bias), an
# ungated relu² MLP (ffn_up, ffn_down), Q/K in Hugging Face's order (NEOX rope) with the first
# rope.dimension_count dims of each head rotating; q/k/v/o biases and up/down biases each all or
# none (attention_bias, mlp_bias; _check_tensors).
_NEMOTRON_ATTN_BIASES = _QKV_BIASES + ("attn_output.bias",)
_NEMOTRON_MLP_BIASES = ("ffn_up.bias", "ffn_down.bias")
_ARCHS["nemotron"] = _Arch("NemotronForCausalLM", "nemotron", False, ("attn_norm.bias", "ffn_norm.bias"),
                           _NEMOTRON_ATTN_BIASES + _NEMOTRON_MLP_BIASES, norm_shift=1.0, gated=False,
                           names={"attn_norm.bias": "input_layernorm.bias",
                                  "ffn_norm.bias": "post_attention_layernorm.bias",
                                  "ffn_up.bias": "mlp.up_proj.bias", "ffn_down.bias": "mlp.down_proj.bias"})
# Jais2 (inceptionai Jais-2; llama.cpp's Jais2Model): Llama's sequential block with LayerNorms and
# their biases (attn_norm / ffn_norm / output_norm .bias), q/k/v/o biases, Nemotron's ungated relu²
# MLP (ffn_up, ffn_down) with its biases, Q/K in Hugging Face's order (NEOX rope over the whole
# head). llama.cpp's jais2 requires the o / MLP / norm biases (q/k/v's optional): a file is always
# Jais2Config's attention_bias and mlp_bias, and one without q/k/v biases is refused (_check_tensors).
_ARCHS["jais2"] = _Arch("Jais2ForCausalLM", "jais2", False,
                        ("attn_norm.bias", "ffn_norm.bias") + _QKV_BIASES + ("attn_output.bias",) + _NEMOTRON_MLP_BIASES,
                        gated=False, names={"attn_norm.bias": "input_layernorm.bias",
                                            "ffn_norm.bias": "post_attention_layernorm.bias",
                                            "ffn_up.bias": "mlp.up_proj.bias", "ffn_down.bias": "mlp.down_proj.bias"})
# GPT-NeoX (Pythia; llama.cpp's GPTNeoXModel): two LayerNorms with biases (attn_norm, ffn_norm)
# before attention and the MLP, side by side (use_parallel_residual) or one after the other; a
# fused attn_qkv whose rows llama.cpp's converter reorders from GPT-NeoX's per-head [q, k, v]
# groups into q | k | v (the folder gets them back per head: _qkv_per_head; a references file
# leaves them in the GGUF marked pyvt_qkv_heads, which libvt honours), biases on every linear
# (llama.cpp requires each), an ungated GELU MLP (ffn_up, ffn_down), the first
# rope.dimension_count dims of each head rotating (NEOX).
_ARCHS["gptneox"] = _Arch(
    "GPTNeoXForCausalLM", "gpt_neox", False,
    ("attn_norm.bias", "ffn_norm.bias", "attn_qkv.bias", "attn_output.bias", "ffn_up.bias", "ffn_down.bias"),
    fused=True, gated=False, prefix="gpt_neox.layers.",
    names={"attn_norm.weight": "input_layernorm.weight", "attn_norm.bias": "input_layernorm.bias",
           "ffn_norm.weight": "post_attention_layernorm.weight", "ffn_norm.bias": "post_attention_layernorm.bias",
           "attn_qkv.weight": "attention.query_key_value.weight", "attn_qkv.bias": "attention.query_key_value.bias",
           "attn_output.weight": "attention.dense.weight", "attn_output.bias": "attention.dense.bias",
           "ffn_up.weight": "mlp.dense_h_to_4h.weight", "ffn_up.bias": "mlp.dense_h_to_4h.bias",
           "ffn_down.weight": "mlp.dense_4h_to_h.weight", "ffn_down.bias": "mlp.dense_4h_to_h.bias"})
# GPT-2 (llama.cpp's GPT2Model) and GPTBigCode (StarCoder 1, SantaCoder; its StarCoderModel):
# LayerNorms with biases (attn_norm, ffn_norm) before attention and the MLP, one after the
# other, learned positions (position_embd, added to the embeddings; no RoPE), a fused attn_qkv
# of q | k | v rows, biases on every linear (llama.cpp requires each), an ungated tanh-GELU MLP
# (ffn_up, ffn_down), output optional (tied when absent). GPT-2's Conv1D weights are stored
# [in, out] on the Hub and transposed to [out, in] by llama.cpp's converter: the folder gets
# float ones back as Conv1D; GGML blocks (rows of the input dimension, which cannot be
# transposed) are written or referenced as they are, marked pyvt_out_in, which libvt honours.
# GPTBigCode's multi-head c_attn (one KV head per head) is per-head [q, k, v] groups, which the
# GGUF holds as q | k | v: moved back per head as GPT-NeoX's (pyvt_qkv_heads in a references file).
_GPT2_NAMES = {"attn_norm.weight": "ln_1.weight", "attn_norm.bias": "ln_1.bias",
               "ffn_norm.weight": "ln_2.weight", "ffn_norm.bias": "ln_2.bias",
               "attn_qkv.weight": "attn.c_attn.weight", "attn_qkv.bias": "attn.c_attn.bias",
               "attn_output.weight": "attn.c_proj.weight", "attn_output.bias": "attn.c_proj.bias",
               "ffn_up.weight": "mlp.c_fc.weight", "ffn_up.bias": "mlp.c_fc.bias",
               "ffn_down.weight": "mlp.c_proj.weight", "ffn_down.bias": "mlp.c_proj.bias"}
_GPT2_BIASES = ("attn_norm.bias", "ffn_norm.bias", "attn_qkv.bias", "attn_output.bias", "ffn_up.bias", "ffn_down.bias")
_ARCHS["gpt2"] = _Arch("GPT2LMHeadModel", "gpt2", False, _GPT2_BIASES, fused=True, gated=False,
                       prefix="transformer.h.", names=_GPT2_NAMES)
_ARCHS["starcoder"] = _Arch("GPTBigCodeForCausalLM", "gpt_bigcode", False, _GPT2_BIASES, fused=True, gated=False,
                            prefix="transformer.h.", names=_GPT2_NAMES)
# Falcon (llama.cpp's FalconModel): always the parallel block, x + attn(LN_a(x)) + mlp(LN_m(x)),
# LayerNorms with biases; without attn_norm_2 one norm for both (attn_norm: input_layernorm,
# falcon-7b, Falcon2-11B), with it attention reads attn_norm_2 and the MLP attn_norm (falcon-40b
# / 180B: ln_attn, ln_mlp — gguf-py's names, the "falcon-2ln" names here); a fused attn_qkv whose
# rows llama.cpp's converter reorders from Falcon's groups per KV head ([q·g, k, v]) into
# q | k | v (the folder gets the groups back: qkv_per_head; a references file leaves them in the
# GGUF marked pyvt_qkv_heads, which libvt honours); no biases on the linears (llama.cpp loads
# none), an ungated tanh-GELU MLP (ffn_up, ffn_down), every dim of each head rotating (NEOX),
# output optional (tied when absent).
_FALCON_NAMES = {"attn_norm.weight": "input_layernorm.weight", "attn_norm.bias": "input_layernorm.bias",
                 "attn_norm_2.weight": "ln_attn.weight", "attn_norm_2.bias": "ln_attn.bias",
                 "attn_qkv.weight": "self_attention.query_key_value.weight",
                 "attn_output.weight": "self_attention.dense.weight",
                 "ffn_up.weight": "mlp.dense_h_to_4h.weight", "ffn_down.weight": "mlp.dense_4h_to_h.weight"}
_ARCHS["falcon"] = _Arch("FalconForCausalLM", "falcon", False, ("attn_norm.bias",), ("attn_norm_2.weight", "attn_norm_2.bias"),
                         fused=True, parallel=True, gated=False, prefix="transformer.h.", names=_FALCON_NAMES)
# A falcon file with attn_norm_2 in its blocks: attn_norm is then the MLP's norm, ln_mlp.
_FALCON_2LN = _ARCHS["falcon"]._replace(names=dict(_FALCON_NAMES, **{"attn_norm.weight": "ln_mlp.weight",
                                                                     "attn_norm.bias": "ln_mlp.bias"}))
# Bloom (llama.cpp's BloomModel): the sequential pre-norm block with LayerNorms with biases
# (attn_norm: input_layernorm, ffn_norm: post_attention_layernorm), a LayerNorm of the
# embeddings (token_embd_norm), ALiBi instead of RoPE (no RoPE keys or tensors), a fused attn_qkv
# whose rows llama.cpp's converter reorders from Bloom's per-head [q, k, v] groups into
# q | k | v (the folder gets them back per head: qkv_per_head; a references file leaves them in
# the GGUF marked pyvt_qkv_heads, which libvt honours), biases on every linear (llama.cpp
# requires each), an ungated tanh-GELU MLP of 4 · hidden (ffn_up, ffn_down), output optional
# (tied when absent).
_ARCHS["bloom"] = _Arch(
    "BloomForCausalLM", "bloom", False,
    ("attn_norm.bias", "ffn_norm.bias", "attn_qkv.bias", "attn_output.bias", "ffn_up.bias", "ffn_down.bias"),
    fused=True, gated=False, prefix="transformer.h.",
    names={"attn_norm.weight": "input_layernorm.weight", "attn_norm.bias": "input_layernorm.bias",
           "ffn_norm.weight": "post_attention_layernorm.weight", "ffn_norm.bias": "post_attention_layernorm.bias",
           "attn_qkv.weight": "self_attention.query_key_value.weight",
           "attn_qkv.bias": "self_attention.query_key_value.bias",
           "attn_output.weight": "self_attention.dense.weight", "attn_output.bias": "self_attention.dense.bias",
           "ffn_up.weight": "mlp.dense_h_to_4h.weight", "ffn_up.bias": "mlp.dense_h_to_4h.bias",
           "ffn_down.weight": "mlp.dense_4h_to_h.weight", "ffn_down.bias": "mlp.dense_4h_to_h.bias"})
# MPT (llama.cpp's MPTModel): the sequential pre-norm block with LayerNorms without biases
# (attn_norm: norm_1, ffn_norm: norm_2; llama.cpp would add biases a file has, MptConfig cannot
# say so: they are tensors an mpt model does not have here), ALiBi instead of RoPE, a fused
# attn_qkv of q | k | v blocks (MPT's own Wqkv order: no regrouping), no linear biases, an
# ungated GELU MLP of 4 · hidden (ffn_up, ffn_down), output optional (tied when absent).
_ARCHS["mpt"] = _Arch(
    "MptForCausalLM", "mpt", False, fused=True, gated=False, prefix="transformer.blocks.",
    names={"attn_norm.weight": "norm_1.weight", "ffn_norm.weight": "norm_2.weight",
           "attn_qkv.weight": "attn.Wqkv.weight", "attn_output.weight": "attn.out_proj.weight",
           "ffn_up.weight": "ffn.up_proj.weight", "ffn_down.weight": "ffn.down_proj.weight"})
# Name variants of an architecture (hf_tensor_name's arch), chosen by the file's tensors.
_VARIANT_ARCHS = {"falcon-2ln": _FALCON_2LN}
# GPT-2's Conv1D weights (llama.cpp's names): [out, in] in the GGUF, [in, out] in the checkpoint.
_CONV1D = (".attn_qkv.weight", ".attn_output.weight", ".ffn_up.weight", ".ffn_down.weight")
_MIXTRAL = _Arch("MixtralForCausalLM", "mixtral", True)
# `olmo2` with a sliding window: OLMo 3 (llama.cpp's converter writes Olmo3ForCausalLM as olmo2).
_OLMO3 = _Arch("Olmo3ForCausalLM", "olmo3", False)
# granitemoe with a shared expert (expert_shared_feed_forward_length > 0): GraniteMoeShared, its
# ffn_gate_shexp | ffn_up_shexp rows stacked into shared_mlp.input_linear, no gate on it.
_GRANITEMOE_SHARED = _Arch("GraniteMoeSharedForCausalLM", "granitemoeshared", True,
                           optional=_QKV_BIASES + ("attn_output.bias",))
# GLM-4 MoE (GLM-4.5 / 4.6 / 4.5-Air; llama.cpp's glm4moe) and dots1 (dots.llm1): DeepSeek-V3's
# router (sigmoid scores, the choice made on score + exp_probs_b, the correction bias, within the
# expert_group_used_count best of expert_group_count groups; the chosen scores renormalized when
# expert_weights_norm, times expert_weights_scale), ungated shared experts (ffn_*_shexp,
# expert_shared_count experts wide), the first leading_dense_block_count blocks dense (ffn_gate /
# ffn_up / ffn_down). Q/K in Hugging Face's order (NEOX rope). GLM-4 MoE: the first
# rope.dimension_count dims of each head rotate, q/k/v biases (attention_bias) and per-head q/k
# norms (use_qk_norm) when the file has them, post_attention_norm before the MLP; the NextN
# (multi-token prediction) blocks after the model's (nextn_predict_layers, counted in
# block_count) are left out. dots1: Qwen3's attention (q/k norms; q/k/v/o biases all or none).
_ARCHS["glm4moe"] = _Arch("Glm4MoeForCausalLM", "glm4_moe", False, optional=_QKV_BIASES + _QK_NORMS,
                          mlp_norm="post_attention_norm.weight",
                          names={"post_attention_norm.weight": "post_attention_layernorm.weight"})
_ARCHS["dots1"] = _Arch("Dots1ForCausalLM", "dots1", False, _QK_NORMS, _QKV_BIASES + ("attn_output.bias",))
_SIGMOID_ROUTER_ARCHS = ("glm4moe", "dots1")
# DeepSeek-V2 / V2-Lite / V2.5 / Coder-V2, DeepSeek-V3 / R1, Kimi K2, Moonlight (llama.cpp's
# deepseek2 for all): multi-head latent attention — q from attn_q, or through its LoRA
# (attn_q_a, attn_q_a_norm, attn_q_b; attention.q_lora_rank), the latent attn_kv_a_mqa
# ([kv_lora_rank | rope] rows) and its norm attn_kv_a_norm, kv_b either whole (attn_kv_b, older
# files) or split per head as llama.cpp's converter now writes it (attn_k_b: each head's k rows
# transposed, attn_v_b: its v rows; attention.key_length_mla / value_length_mla say so), rebuilt
# into kv_b_proj as a float tensor (libvt splits and transposes it per head); RoPE over pairs
# (2i, 2i + 1) of the rope dims (llama.cpp's NORM rope, rows as they are: V2's rotation, V3's
# rope_interleave); the router as glm4moe's (_sigmoid_router) with expert_gating_func 2 (sigmoid:
# DeepseekV3ForCausalLM, exp_probs_b its correction bias) or 1 (softmax, the default of older
# files: DeepseekV2ForCausalLM, greedy), the first leading_dense_block_count blocks dense, the
# ungated shared experts; NextN blocks after the model's left out.
_MLA_NAMES = {"attn_q_a.weight": "self_attn.q_a_proj.weight", "attn_q_a_norm.weight": "self_attn.q_a_layernorm.weight",
              "attn_q_b.weight": "self_attn.q_b_proj.weight", "attn_kv_a_mqa.weight": "self_attn.kv_a_proj_with_mqa.weight",
              "attn_kv_a_norm.weight": "self_attn.kv_a_layernorm.weight", "attn_kv_b.weight": "self_attn.kv_b_proj.weight"}
_MLA_Q_LORA = ("attn_q_a.weight", "attn_q_a_norm.weight", "attn_q_b.weight")
_MLA_K_V_B = ("attn_k_b.weight", "attn_v_b.weight")  # (kv_b split per head: llama.cpp's newer files)
_ARCHS["deepseek2"] = _Arch("DeepseekV3ForCausalLM", "deepseek_v3", False,
                            optional=("attn_q.weight",) + _MLA_Q_LORA + ("attn_kv_b.weight",) + _MLA_K_V_B,
                            names=_MLA_NAMES, mla=True)
_DEEPSEEK_V2 = _ARCHS["deepseek2"]._replace(architecture="DeepseekV2ForCausalLM", model_type="deepseek_v2")
# Mistral 4 (llama.cpp's mistral4: deepseek2's loader and graph): the same latent attention,
# dense blocks first and ungated shared experts; its router a softmax (expert_gating_func 1)
# choosing within the expert_group_used_count groups whose two best probabilities sum highest,
# renormalized by expert_weights_norm, times expert_weights_scale, no correction bias; the
# routed experts as transformers saves them, mlp.experts.gate_up_proj [E, 2·I, H] (the file's
# ffn_gate_up_exps as it is, or its ffn_gate_exps / ffn_up_exps stacked per expert) and
# mlp.experts.down_proj [E, H, I]; RoPE and the query scale as _mistral4_rope.
_ARCHS["mistral4"] = _ARCHS["deepseek2"]._replace(architecture="Mistral4ForCausalLM", model_type="mistral4")
# MiniCPM3 (openbmb MiniCPM3-4B; llama.cpp's minicpm3): the same latent attention, dense (Llama's
# MLP in every block), q through its LoRA always (attention.q_lora_rank required), kv_b whole
# (attn_kv_b; llama.cpp's minicpm3 loads no attn_k_b / attn_v_b), Q and k_pe in Hugging Face's
# order rotating halves (NEOX rope: MiniCPM3's own rotation, never interleaved), LongRoPE from
# rope_factors_long / _short; MiniCPM's scales as llama.cpp's graph fixes them (_minicpm3_config).
_ARCHS["minicpm3"] = _Arch("MiniCPM3ForCausalLM", "minicpm3", False, _MLA_Q_LORA + ("attn_kv_b.weight",),
                           names=_MLA_NAMES, mla=True)
_MLA_ARCHS = ("deepseek2", "mistral4", "minicpm3")
_GATE_UP_EXPS = "ffn_gate_up_exps.weight"  # (gate rows then up rows of each expert: llama.cpp's fused experts)
# EXAONE MoE (K-EXAONE; llama.cpp's exaone-moe): Llama's pre-norm block with per-head q/k norms,
# Q/K in Hugging Face's order (NEOX rope), sliding layers by attention.sliding_window_pattern
# whose full layers attend without RoPE (_exaone_moe_config), DeepSeek-V3's router
# (_sigmoid_router) with the ungated shared experts and dense first blocks; NextN blocks after
# the model's left out.
_ARCHS["exaone-moe"] = _Arch("ExaoneMoeForCausalLM", "exaone_moe", False, _QK_NORMS)
# LFM2 (LiquidAI/LFM2-350M ... 2.6B; llama.cpp's lfm2): pre-norm blocks (attn_norm: operator_norm,
# ffn_norm) whose mixer is Qwen3's attention (per-head q/k norms as q_layernorm / k_layernorm,
# out_proj; Q/K in Hugging Face's order, NEOX rope) where attention.head_count_kv[i] > 0, else a
# gated short convolution (shortconv.in_proj, .conv, .out_proj; biases when conv_bias), and a
# SwiGLU MLP (w1 gate, w3 up, w2 down). Which tensors a block has depends on its kind
# (_check_tensors); the shortconv ones are listed as optional for the names alone.
_LFM2_CONV = ("shortconv.in_proj.weight", "shortconv.conv.weight", "shortconv.out_proj.weight")
_LFM2_CONV_BIASES = ("shortconv.in_proj.bias", "shortconv.conv.bias", "shortconv.out_proj.bias")
_ARCHS["lfm2"] = _Arch("Lfm2ForCausalLM", "lfm2", False, _QK_NORMS, _LFM2_CONV + _LFM2_CONV_BIASES,
                       names={"attn_norm.weight": "operator_norm.weight", "ffn_norm.weight": "ffn_norm.weight",
                              "attn_output.weight": "self_attn.out_proj.weight",
                              "attn_q_norm.weight": "self_attn.q_layernorm.weight",
                              "attn_k_norm.weight": "self_attn.k_layernorm.weight",
                              "ffn_gate.weight": "feed_forward.w1.weight", "ffn_up.weight": "feed_forward.w3.weight",
                              "ffn_down.weight": "feed_forward.w2.weight",
                              **{t: "conv." + t.split(".", 1)[1] for t in _LFM2_CONV + _LFM2_CONV_BIASES}})
# LFM2-MoE (LiquidAI/LFM2-8B-A1B; llama.cpp's lfm2moe): LFM2's blocks, the first
# leading_dense_block_count with the dense MLP (intermediate_size, as it stands), the others a
# sigmoid router (ffn_gate_inp: feed_forward.gate) choosing on score + exp_probs_b
# (feed_forward.expert_bias, when use_expert_bias), the chosen renormalized, experts
# feed_forward.experts.N.w1 / w3 / w2 expert_feed_forward_length wide (_lfm2_moe_router).
_ARCHS["lfm2moe"] = _ARCHS["lfm2"]._replace(architecture="Lfm2MoeForCausalLM", model_type="lfm2_moe")
# HunYuan MoE (tencent/Hunyuan-A13B; llama.cpp's hunyuan-moe): Llama's pre-norm block with per-head
# q/k norms after RoPE (query_layernorm / key_layernorm; Q/K in Hugging Face's order, NEOX rope),
# q/k/v biases when the file has them (llama.cpp loads no o_proj bias: the folder's is zeros), in
# every block a softmax router (ffn_gate_inp: mlp.gate.wg) whose top weights are renormalized,
# experts and one ungated shared MLP (mlp.shared_mlp) feed_forward_length wide (_hunyuan_moe_router).
_ARCHS["hunyuan-moe"] = _Arch("HunYuanMoEV1ForCausalLM", "hunyuan_v1_moe", False, _QK_NORMS, _QKV_BIASES,
                              names={"attn_q_norm.weight": "self_attn.query_layernorm.weight",
                                     "attn_k_norm.weight": "self_attn.key_layernorm.weight"})
# HunYuan dense (tencent/Hunyuan-0.5B ... 7B-Instruct; llama.cpp's hunyuan-dense, hunyuan-vl's
# loader and graph): hunyuan-moe's attention with Llama's SwiGLU MLP in every block; RoPE's NTK
# alpha either baked into rope.freq_base by the converter or, when the file has
# rope.scaling.alpha, applied at load as llama.cpp does (base · alpha^(d / (d - 2)), float32).
_ARCHS["hunyuan-dense"] = _ARCHS["hunyuan-moe"]._replace(architecture="HunYuanDenseV1ForCausalLM",
                                                         model_type="hunyuan_v1_dense")
_HUNYUAN_ARCHS = ("hunyuan-moe", "hunyuan-dense")
# Ministral 3 (mistralai/Ministral-3 3B / 8B / 14B text models; llama.cpp's mistral3): Llama's
# block, Q/K rows permuted as llama's converter writes them, no biases; RoPE and the query scale
# 1 + attention.temperature_scale · log(1 + floor(pos / original_context_length)) stated as
# Ministral3Config's rope_parameters (_mistral3_rope).
_ARCHS["mistral3"] = _Arch("Ministral3ForCausalLM", "ministral3", True)
# The GGUF architectures with DeepSeek's router keys (_sigmoid_router) and NextN blocks after the model's.
_DEEPSEEK_ROUTER_ARCHS = _SIGMOID_ROUTER_ARCHS + ("deepseek2", "exaone-moe", "mistral4")
# ERNIE 4.5 MoE (llama.cpp's ernie4_5-moe): ERNIE 4.5's attention (Q/K in Hugging Face's order,
# pairs (2i, 2i + 1) rotating: NORM rope), the first leading_dense_block_count blocks dense, the
# others a softmax router choosing by probability + exp_probs_b (moe_statics'
# e_score_correction_bias, [1, experts] in Hugging Face) and renormalizing the chosen, the
# ungated shared experts expert_shared_feed_forward_length wide (_ernie_moe_router).
_ARCHS["ernie4_5-moe"] = _Arch("Ernie4_5_MoeForCausalLM", "ernie4_5_moe", False)
# MiniMax-M2 (llama.cpp's minimax-m2): q/k RMSNorms over the whole projection, the first
# rope.dimension_count dims rotating (NEOX: Q/K as they are), experts in every block
# feed_forward_length wide under Mixtral's names, a sigmoid router with its correction bias
# (block_sparse_moe.e_score_correction_bias), top weights always renormalized.
_ARCHS["minimax-m2"] = _Arch("MiniMaxM2ForCausalLM", "minimax_m2", False, _QK_NORMS, qk_full=True)
# AFMoE (arcee-ai Trinity Nano / Mini / Large; llama.cpp's afmoe): Qwen3's attention (per-head q/k
# norms before RoPE; Q/K in Hugging Face's order, NEOX rope) whose output is times
# sigmoid(attn_gate · h), one gate per output dim, before o_proj; the sandwich norms (attn_norm,
# post_attention_norm on the attention's output; ffn_norm, post_ffw_norm on the MLP's); the
# first leading_dense_block_count blocks a SwiGLU MLP, the others a sigmoid router
# (ffn_gate_inp: mlp.router.gate) choosing on score + exp_probs_b (mlp.expert_bias), the chosen
# renormalized and times expert_weights_scale, and ungated shared experts (mlp.shared_experts);
# the embeddings times sqrt(hidden_size) (muP, which llama.cpp's afmoe always applies); sliding
# layers by attention.sliding_window_pattern, every 4th layer without RoPE (_afmoe_config).
_ARCHS["afmoe"] = _Arch("AfmoeForCausalLM", "afmoe", False, _QK_NORMS + _GEMMA_NORMS + ("attn_gate.weight",),
                        names={"ffn_norm.weight": "pre_mlp_layernorm.weight",
                               "post_attention_norm.weight": "post_attention_layernorm.weight",
                               "post_ffw_norm.weight": "post_mlp_layernorm.weight",
                               "attn_gate.weight": "self_attn.gate_proj.weight"})
# The GGUF architectures whose routers choose with a correction bias (exp_probs_b) and whose
# shared experts (ungated) are mlp.shared_experts.
# HY-V3 (tencent/Hy3-preview; llama.cpp's hy_v3): Qwen3's attention (per-head q/k norms before RoPE,
# Q/K in Hugging Face's order: NEOX rope), dense blocks (ffn_gate / ffn_up / ffn_down) first, then
# a sigmoid router (ffn_gate_inp: mlp.router.gate) choosing on score + exp_probs_b (mlp.expert_bias),
# the chosen renormalized and times expert_weights_scale (router_scaling_factor), and ungated shared
# experts (mlp.shared_mlp) expert_shared_feed_forward_length wide; its NextN blocks after the
# model's left out (_hy_v3_router).
_ARCHS["hy_v3"] = _Arch("HYV3ForCausalLM", "hy_v3", False, _QK_NORMS)
_BIASED_ROUTER_ARCHS = _DEEPSEEK_ROUTER_ARCHS + ("ernie4_5-moe", "minimax-m2", "afmoe", "hy_v3")
_MOE_ARCHS = ("llama", "qwen2moe", "qwen3moe", "granitemoe", "olmoe", "gpt-oss") + _BIASED_ROUTER_ARCHS + ("lfm2moe",
                                                                                                   "hunyuan-moe")
# Where each architecture's checkpoints keep the router's correction bias (else on mlp.gate).
_EXP_PROBS_B_NAMES = {"ernie4_5-moe": "mlp.moe_statics.e_score_correction_bias",
                      "minimax-m2": "block_sparse_moe.e_score_correction_bias",
                      "exaone-moe": "mlp.e_score_correction_bias", "afmoe": "mlp.expert_bias", "hy_v3": "mlp.expert_bias"}

# The expert tensors of a MoE block (llama.cpp's names), their Hugging Face names per expert.
_EXPERTS = ("ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight")
_SHARED = ("ffn_gate_inp_shexp.weight", "ffn_gate_shexp.weight", "ffn_up_shexp.weight", "ffn_down_shexp.weight")
# The sigmoid router's correction bias (DeepSeek-V3's e_score_correction_bias), [experts].
_EXP_PROBS_B = "exp_probs_b.bias"


def _moe_hf_name(t: str, layer: int, expert: int | None, mixtral: bool, arch: str = "") -> str:
    """The Hugging Face name of MoE block tensor `t` of `layer` (one expert of a stacked
    *_exps tensor) of architecture `arch` (general.architecture)."""
    p = f"model.layers.{layer}."
    if arch == "lfm2moe":  # (LFM2-MoE: its router, bias and experts under feed_forward)
        if t in _EXPERTS:
            return p + f"feed_forward.experts.{expert}." + ("w1", "w3", "w2")[_EXPERTS.index(t)] + ".weight"
        return p + {"ffn_gate_inp.weight": "feed_forward.gate.weight", _EXP_PROBS_B: "feed_forward.expert_bias"}[t]
    if arch == "hunyuan-moe" and t in ("ffn_gate_inp.weight", "ffn_gate_shexp.weight", "ffn_up_shexp.weight",
                                       "ffn_down_shexp.weight"):  # (HunYuan MoE: its router and shared MLP)
        return p + {"ffn_gate_inp.weight": "mlp.gate.wg.weight", "ffn_gate_shexp.weight": "mlp.shared_mlp.gate_proj.weight",
                    "ffn_up_shexp.weight": "mlp.shared_mlp.up_proj.weight",
                    "ffn_down_shexp.weight": "mlp.shared_mlp.down_proj.weight"}[t]
    if t == "ffn_gate_inp.weight":
        return p + ("block_sparse_moe.gate.weight" if mixtral else "mlp.router.gate.weight" if arch in ("afmoe", "hy_v3")
                    else "mlp.gate.weight")
    if t == _EXP_PROBS_B:
        return p + _EXP_PROBS_B_NAMES.get(arch, "mlp.gate.e_score_correction_bias")
    if t in _EXPERTS:
        k = _EXPERTS.index(t)
        if mixtral:
            return p + f"block_sparse_moe.experts.{expert}." + ("w1", "w3", "w2")[k] + ".weight"
        return p + f"mlp.experts.{expert}." + ("gate_proj", "up_proj", "down_proj")[k] + ".weight"
    if t == "ffn_gate_inp_shexp.weight":
        return p + "mlp.shared_expert_gate.weight"
    shared = ("mlp.shared_mlp." if arch == "hy_v3" else "mlp.shared_experts." if arch in _BIASED_ROUTER_ARCHS
              else "mlp.shared_expert.")
    return p + shared + {"ffn_gate_shexp.weight": "gate_proj", "ffn_up_shexp.weight": "up_proj",
                                       "ffn_down_shexp.weight": "down_proj"}[t] + ".weight"


def _common_block(a: _Arch) -> tuple:
    if a.mla:  # (DeepSeek: q and kv_b as the file has them, in a.required)
        return ("attn_norm.weight", "ffn_norm.weight", "attn_kv_a_mqa.weight", "attn_kv_a_norm.weight",
                "attn_output.weight", "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight")
    if a.parallel:
        attn = ("attn_qkv.weight",) if a.fused else ("attn_q.weight", "attn_k.weight", "attn_v.weight")
        return ("attn_norm.weight",) + attn + ("attn_output.weight", "ffn_up.weight", "ffn_down.weight")
    if a.fused:
        return ("attn_norm.weight", "ffn_norm.weight", "attn_qkv.weight", "attn_output.weight", "ffn_up.weight",
                "ffn_down.weight")
    norms = () if a.post_norm else ("attn_norm.weight", a.mlp_norm)
    gate = ("ffn_gate.weight",) if a.gated else ()
    return norms + ("attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_output.weight") + gate + (
        "ffn_up.weight", "ffn_down.weight")


def _block_tensors(a: _Arch, moe: bool, shared: bool) -> tuple:
    """The tensors every block of architecture `a` has (MoE: the router and stacked experts
    instead of the dense MLP; `shared`: Qwen2-MoE's gated shared expert, GraniteMoeShared's
    ungated one; GLM-4 MoE's, dots1's, DeepSeek's, EXAONE MoE's and ERNIE 4.5 MoE's ungated ones,
    and the router's correction bias of those and MiniMax-M2)."""
    common = _common_block(a)
    if not moe:
        return common + a.required
    dense = ("ffn_gate.weight", "ffn_up.weight", "ffn_down.weight")
    biased = a.model_type in ("glm4_moe", "dots1", "deepseek_v3", "exaone_moe", "ernie4_5_moe", "minimax_m2", "lfm2_moe",
                              "afmoe", "hy_v3")
    ungated = biased or a.model_type in ("granitemoe", "deepseek_v2", "hunyuan_v1_moe", "mistral4")
    shexp = (_SHARED[1:] if ungated else _SHARED) if shared else ()
    oss = _OSS_BIASES if a.model_type == "gpt_oss" else ()
    router = ("ffn_gate_inp.weight",) + ((_EXP_PROBS_B,) if biased else ())
    return tuple(t for t in common if t not in dense) + a.required + router + _EXPERTS + shexp + oss


def hf_tensor_name(gguf_name: str, arch: str = "llama", moe: bool = False) -> str | None:
    """The Hugging Face name of a GGUF tensor of architecture `arch` (general.architecture),
    or None if that architecture has no such tensor. (`moe`: a MoE block's router and shared
    expert; the stacked experts have one name per expert: _moe_hf_name. `arch` "falcon-2ln": a
    falcon file with attn_norm_2, whose attn_norm is falcon-40b's ln_mlp.)"""
    if _global_name(gguf_name, arch):
        return _global_name(gguf_name, arch)
    a = _ARCHS.get(arch) or _VARIANT_ARCHS.get(arch)
    m = _BLOCK_RE.match(gguf_name)
    if a is None or not m:
        return None
    t = m.group(2)
    if moe and t in ("ffn_gate_inp.weight", _EXP_PROBS_B) + _SHARED:
        return _moe_hf_name(t, int(m.group(1)), None, arch in ("llama", "minimax-m2"), arch)
    if moe and t in _EXPERTS:
        return None
    if t not in _common_block(a) + a.required + a.optional:
        return None
    name = a.names.get(t) or _BLOCK_NAMES.get(t)
    return f"{a.prefix}{int(m.group(1))}.{name}" if name else None


def permute_qk(w: np.ndarray, n_head: int) -> np.ndarray:
    """Hugging Face -> llama.cpp row order of a Q or K projection (what llama.cpp's converter does).

    w: [n_head * head_dim, ...]. Within each head, rows (i, i + head_dim/2) become adjacent.
    """
    rows = w.shape[0]
    if n_head <= 0 or rows % (2 * n_head):
        raise ValueError(f"cannot permute {rows} rows over {n_head} heads")
    return (
        w.reshape(n_head, 2, rows // n_head // 2, *w.shape[1:])
        .swapaxes(1, 2)
        .reshape(w.shape)
    )


def _qkv_head_rows(rows: int, n_head: int, n_kv: int, what: str) -> int:
    """The rows of one head of a fused q | k | v of n_head query and n_kv KV heads."""
    if n_head <= 0 or n_kv <= 0 or n_head % n_kv or rows % (n_head + 2 * n_kv):
        raise ValueError(f"cannot {what} {rows} rows over {n_head} heads and {n_kv} KV heads")
    return rows // (n_head + 2 * n_kv)


def qkv_per_head(w: np.ndarray, n_head: int, n_kv: int | None = None) -> np.ndarray:
    """llama.cpp -> Hugging Face row order of a fused query_key_value (weight or bias): q | k | v
    blocks (q of n_head heads, k and v of n_kv, n_head when None) back into groups per KV head,
    each its n_head / n_kv query heads, its key head, its value head — GPT-NeoX's per-head
    [q, k, v] (n_kv = n_head), Falcon's [q·g, k, v] (the inverse of llama.cpp's
    GPTNeoXModel / FalconModel.modify_tensors). Whole rows move: exact for rows of any GGML
    block type."""
    n_kv = n_head if n_kv is None else n_kv
    hd = _qkv_head_rows(w.shape[0], n_head, n_kv, "group")
    rest = w.shape[1:]
    q = w[:n_head * hd].reshape(n_kv, n_head // n_kv, hd, *rest)
    k = w[n_head * hd:(n_head + n_kv) * hd].reshape(n_kv, 1, hd, *rest)
    v = w[(n_head + n_kv) * hd:].reshape(n_kv, 1, hd, *rest)
    return np.concatenate([q, k, v], axis=1).reshape(w.shape)


def qkv_blocked(w: np.ndarray, n_head: int, n_kv: int | None = None) -> np.ndarray:
    """Hugging Face -> llama.cpp row order of a fused query_key_value (inverse of
    `qkv_per_head`; what llama.cpp's converter does)."""
    n_kv = n_head if n_kv is None else n_kv
    hd = _qkv_head_rows(w.shape[0], n_head, n_kv, "regroup")
    g = w.reshape(n_kv, n_head // n_kv + 2, hd, *w.shape[1:])
    return np.concatenate([g[:, :-2].reshape(-1, *w.shape[1:]), g[:, -2].reshape(-1, *w.shape[1:]),
                           g[:, -1].reshape(-1, *w.shape[1:])]).reshape(w.shape)


def unpermute_qk(w: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp -> Hugging Face row order of a Q or K projection (inverse of `permute_qk`)."""
    rows = w.shape[0]
    if n_head <= 0 or rows % (2 * n_head):
        raise ValueError(f"cannot un-permute {rows} rows over {n_head} heads")
    return (
        w.reshape(n_head, rows // n_head // 2, 2, *w.shape[1:])
        .swapaxes(1, 2)
        .reshape(w.shape)
    )


# --------------------------------------------------------------------------------------------
# SafeTensors writer
# --------------------------------------------------------------------------------------------

_DTYPES = {
    # name accepted by convert_gguf -> (safetensors dtype, torch_dtype, bytes per element)
    "bf16": ("BF16", "bfloat16", 2),
    "f16": ("F16", "float16", 2),
    "f32": ("F32", "float32", 4),
}
_DTYPE_ALIASES = {
    "bf16": "bf16", "bfloat16": "bf16",
    "f16": "f16", "fp16": "f16", "float16": "f16",
    "f32": "f32", "fp32": "f32", "float32": "f32",
}


def _to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bit patterns (uint16), round to nearest even; NaN stays NaN."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    u = x.view(np.uint32)
    r = u >> 16
    r &= 1
    r += 0x7FFF
    r += u  # wraps only for NaN payloads, fixed below
    r >>= 16
    out = r.astype(np.uint16)
    nan = np.isnan(x)
    if nan.any():
        out[nan] = ((u[nan] >> 16) | 0x0040).astype(np.uint16)
    return out


def _encode(x: np.ndarray, st_dtype: str) -> np.ndarray:
    if st_dtype == "GGML_Q8_0":  # rows of a multiple of 32 values: ggml's Q8_0 rounding
        return quantize_q8_0(x)
    if st_dtype == "BF16":
        return _to_bf16_bits(x)
    if st_dtype == "F16":
        return np.ascontiguousarray(x, dtype="<f2")
    return np.ascontiguousarray(x, dtype="<f4")


#: GGUF block types ``convert_gguf(keep_blocks=True)`` writes as they are, under pyvt's own
#: SafeTensors dtypes (libvt/src/ggml_import.h): ggml type -> (dtype, bytes per 32 weights).
#: Q4_K superblocks are written as the Q4_1 blocks of their sub-blocks (q4_k_as_q4_1: the same
#: codes, each sub-block's scale and min rounded to f16); Q5_0 blocks as the Q8_0 blocks of the
#: same numbers (q5_0_as_q8_0: exact); IQ4_NL / IQ4_XS as the Q8_0 blocks of their levels
#: (iq4_nl_as_q8_0: exact; iq4_xs_as_q8_0: each sub-block's scale rounded to f16).
BLOCK_DTYPES = {
    GGMLType.Q8_0: ("GGML_Q8_0", 34),
    GGMLType.Q4_0: ("GGML_Q4_0", 18),
    GGMLType.Q4_1: ("GGML_Q4_1", 20),
    GGMLType.Q4_K: ("GGML_Q4_1", 20),
    GGMLType.Q5_0: ("GGML_Q8_0", 34),
    GGMLType.IQ4_NL: ("GGML_Q8_0", 34),
    GGMLType.IQ4_XS: ("GGML_Q8_0", 34),
}
_BLOCK_BYTES = dict(BLOCK_DTYPES.values())
#: GGUF types of more than 4.5 bits a weight that pyvt has no format for: with keep_blocks they
#: are written as Q8_0 blocks (ggml's rounding of their values, 8.5 bits), loaded as int8. A
#: 4-bit format would drop the bits llama.cpp's mixes give them on purpose (Q4_K_M's Q6_K
#: output, attn_v and ffn_down).
TO_Q8_0 = {GGMLType.Q5_1, GGMLType.Q5_K, GGMLType.Q6_K}
# Float tensors convert_gguf(keep_blocks=True) writes in their own type, losing nothing.
_LOSSLESS = {GGMLType.F32: "F32", GGMLType.F16: "F16", GGMLType.BF16: "BF16"}


def write_safetensors(path, tensors, metadata: dict | None = None) -> None:
    """Write a .safetensors file from an iterable of ``(name, st_dtype, shape, produce)`` (a fifth
    element, a dict, adds its entries to the tensor's header entry: pyvt's markers, pyvt_out_in).

    ``produce()`` returns the tensor's data -- one array, or an iterable of arrays whose bytes
    follow each other -- and is called once per tensor, in order, after the header is written, so
    only one tensor (or one chunk of one) is in memory at a time. The file is written to ``path + ".tmp"`` and renamed into place when complete.
    """
    sizes = {"BF16": 2, "F16": 2, "F32": 4, "U8": 1, "I8": 1, "I32": 4, "I64": 8, "F64": 8}
    items = list(tensors)
    header: dict = {"__metadata__": {str(k): str(v) for k, v in (metadata or {"format": "pt"}).items()}}
    offset = 0
    for name, st_dtype, shape, _, *extra in items:
        if name in header:
            raise ValueError(f"duplicate tensor name {name!r}")
        if st_dtype in _BLOCK_BYTES:  # logical shape [rows, cols]: cols / 32 blocks per row
            n = math.prod(shape) // 32 * _BLOCK_BYTES[st_dtype]
        else:
            n = math.prod(shape) * sizes[st_dtype]
        header[name] = {"dtype": st_dtype, "shape": list(shape), "data_offsets": [offset, offset + n],
                        **(extra[0] if extra else {})}
        offset += n
    hbytes = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hbytes += b" " * (-len(hbytes) % 8)
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(struct.pack("<Q", len(hbytes)))
            f.write(hbytes)
            for name, st_dtype, shape, produce, *_ in items:
                want = header[name]["data_offsets"][1] - header[name]["data_offsets"][0]
                got = 0
                data = produce()
                for chunk in (data,) if isinstance(data, np.ndarray) else data:
                    chunk = np.ascontiguousarray(chunk)
                    got += chunk.nbytes
                    if got > want:
                        break
                    f.write(memoryview(chunk).cast("B"))
                if got != want:
                    raise ValueError(f"tensor {name!r}: produced {got} bytes, expected {want}")
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise


# --------------------------------------------------------------------------------------------
# Config
# --------------------------------------------------------------------------------------------


def _real(meta: dict, key: str, default: float, lo: float, hi: float, p: str, *, open_lo: bool = True) -> float:
    """A scalar number of the metadata, finite, in (lo, hi] (or [lo, hi]); ValueError naming
    the key otherwise — before anything is written, so no folder that cannot load back is made
    (a NaN epsilon or an infinite RoPE base once was)."""
    v = meta.get(key, default)
    if isinstance(v, (bool, str, bytes, list, tuple, dict)) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise ValueError(f"{p}: {key} = {v!r:.60} is not a number")
    x = float(v)
    ok = math.isfinite(x) and (x > lo if open_lo else x >= lo) and x <= hi
    # also as float32 (how config values are used): 1e-300 is 0 there, 1e300 is inf
    ok = ok and math.isfinite(float(np.float32(x))) and (float(np.float32(x)) != 0.0 or not open_lo)
    if not ok:
        lo_b = "(" if open_lo else "["
        raise ValueError(f"{p}: {key} = {x!r} is outside {lo_b}{lo:g}, {hi:g}] (as a finite float32)")
    return x


def _f32(x) -> float:
    """A float32 metadata value written as the shortest decimal that round-trips (1e-05, not
    9.999999747378752e-06)."""
    return float(str(np.float32(x)))


def _infer_llama3_rope_scaling(freqs: np.ndarray, rope_theta: float, head_dim: int, path):
    """Recover Llama-3 `rope_scaling` from llama.cpp's `rope_freqs.weight` (per-frequency
    divisors). Only the standard parameterisation is recognised; anything else is refused."""
    freqs = np.asarray(freqs, np.float64).ravel()
    if freqs.size != head_dim // 2:
        raise ValueError(f"{path}: rope_freqs.weight has {freqs.size} entries, expected {head_dim // 2}")
    if np.allclose(freqs, 1.0):
        return None
    factor = float(np.max(freqs))
    inv = rope_theta ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    wavelen = 2 * math.pi / inv
    lows, highs = (1.0, 2.0, 0.5, 4.0), (4.0, 2.0, 8.0, 1.0, 16.0)
    usual = (8192, 4096, 2048, 16384, 32768, 131072)
    # The usual original lengths first; then any other power of two from 16 to 2^20 (the tests'
    # tiny EXAONE case: 32), low and high factors outermost there, so that Llama 3's 1 / 4 is
    # found before a scaled copy of it (orig, low, high all halved give the same factors).
    candidates = [(o, lo, hi) for o in usual for lo in lows for hi in highs] + [
        (1 << k, lo, hi) for lo in lows for hi in highs for k in range(4, 21) if (1 << k) not in usual]
    for orig, low, high in candidates:
        if high <= low:
            continue
        lw, hw = orig / low, orig / high
        smooth = (orig / wavelen - low) / (high - low)
        expect = np.where(
            wavelen < hw, 1.0,
            np.where(wavelen > lw, factor, 1.0 / ((1 - smooth) / factor + smooth)),
        )
        if np.allclose(expect, freqs, rtol=1e-3, atol=1e-4):
            return {
                "rope_type": "llama3",
                "factor": factor,
                "low_freq_factor": low,
                "high_freq_factor": high,
                "original_max_position_embeddings": orig,
            }
    raise ValueError(
        f"{path}: rope_freqs.weight does not match any Llama-3 rope scaling pyvt recognises"
    )


# --------------------------------------------------------------------------------------------
# convert_gguf
# --------------------------------------------------------------------------------------------


def _hparams(meta: dict, p: str) -> dict:
    """The ARCH.* hyperparameters of the metadata (ARCH = general.architecture), checked
    (positive integers, head sizes pyvt supports); ``p`` names the file in errors."""
    arch = meta_value(meta, "general.architecture", "string", p)
    if arch not in _ARCHS:
        raise ValueError(
            f"{p}: unsupported architecture {arch!r:.60} (general.architecture); "
            f"pyvt converts {', '.join(repr(a) for a in _ARCHS)} GGUF files"
        )

    def need_int(k: str, default=None, per_block: bool = False) -> int:
        v = meta.get(f"{arch}.{k}", default)
        if v is None:
            raise ValueError(f"{p}: missing metadata {arch}.{k}")
        if per_block and isinstance(v, np.ndarray):  # (llama.cpp's get_key_or_arr: one value per block)
            if v.ndim != 1 or v.dtype.kind not in "iu" or len(v) != n_layers + nextn or (v <= 0).any():
                raise ValueError(f"{p}: {arch}.{k} = {_describe(v)} is not a positive integer for each of the "
                                 f"{n_layers + nextn} blocks")
            if (v != v[0]).any():
                first = int(np.argmax(v != v[0]))
                raise ValueError(f"{p}: {arch}.{k}[{first}] = {int(v[first])}, but block 0 has {int(v[0])}: the "
                                 "Hugging Face model has one width for every block; pyvt converts no other")
            return int(v[0])
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or int(v) <= 0:
            raise ValueError(f"{p}: {arch}.{k} = {_describe(v) if isinstance(v, np.ndarray) else repr(v)} is not a "
                             "positive integer")
        return int(v)

    n_expert = meta_value(meta, f"{arch}.expert_count", "int", p, 0)
    if arch == "hunyuan-dense" and n_expert == 1:  # (llama.cpp: one expert is none, the HunYuan-VL configs' 1)
        n_expert = 0
    if n_expert and arch not in _MOE_ARCHS:
        raise ValueError(f"{p}: mixture-of-experts {arch} models are not supported (pyvt converts the MoE "
                         f"architectures {', '.join(repr(a) for a in _MOE_ARCHS)}; llama's: Mixtral)")
    if arch in ("qwen2moe", "qwen3moe", "granitemoe", "olmoe", "gpt-oss", "lfm2moe", "hunyuan-moe") + _BIASED_ROUTER_ARCHS \
            and not n_expert:
        raise ValueError(f"{p}: missing metadata {arch}.expert_count (a {arch} model has experts)")
    moe = {}
    if n_expert:
        used = need_int("expert_used_count")
        if used > n_expert:
            raise ValueError(f"{p}: {arch}.expert_used_count = {used} is more than the {n_expert} experts")
        moe = dict(n_expert=int(n_expert), n_used=used)
    hidden = need_int("embedding_length")
    n_layers = need_int("block_count")
    nextn = 0
    if arch in _DEEPSEEK_ROUTER_ARCHS + ("hy_v3",):  # (llama.cpp: the NextN blocks are the last nextn_predict_layers of block_count)
        nextn = meta_value(meta, f"{arch}.nextn_predict_layers", "int", p, 0)
        if not 0 <= nextn < n_layers:
            raise ValueError(f"{p}: {arch}.nextn_predict_layers = {nextn} is not below block_count = {n_layers}")
        n_layers -= nextn
    if arch in ("ernie4_5-moe", "minimax-m2") and meta_value(meta, f"{arch}.nextn_predict_layers", "int", p, 0):
        raise ValueError(f"{p}: {arch}.nextn_predict_layers = {meta[f'{arch}.nextn_predict_layers']}: llama.cpp's "
                         f"{arch} loads no NextN (multi-token prediction) blocks; pyvt does not convert such a file")
    n_head = need_int("attention.head_count")
    conv = []  # (LFM2: the blocks that convolve instead of attending)
    if arch in _LFM2_ARCHS:
        n_kv, conv = _lfm2_layers(meta, arch, n_layers, n_head, p)
    else:
        n_kv = need_int("attention.head_count_kv", n_head)
    ffn = need_int("feed_forward_length")
    ctx = need_int("context_length", 2048)
    mla = _mla_params(meta, arch, n_head, n_kv, hidden, p) if arch in _MLA_ARCHS else None
    head_dim = (mla["nope"] + mla["rope"] if mla else
                need_int("attention.key_length", hidden // n_head if hidden % n_head == 0 else None))
    if not mla and need_int("attention.value_length", head_dim) != head_dim:
        raise ValueError(f"{p}: different key and value head sizes are not supported")
    if n_head % n_kv:
        raise ValueError(f"{p}: {n_head} attention heads is not a multiple of {n_kv} KV heads")
    if arch in _COHERE_ARCHS and n_head * head_dim != hidden:  # (q and o are [hidden, hidden] there)
        raise ValueError(f"{p}: {arch}.attention.key_length = {head_dim}: {n_head} heads of it are not "
                         f"embedding_length {hidden} (a {arch} model's heads span its hidden size)")
    if arch == "nemotron" and n_head * head_dim != hidden:
        # (llama.cpp's nemotron: q and o are [hidden, hidden], and its converter counts the
        # rotating dims as partial_rotary_factor · hidden / heads, not of head_dim)
        raise ValueError(f"{p}: nemotron.attention.key_length = {head_dim}: {n_head} heads of it are not "
                         f"embedding_length {hidden} (llama.cpp's nemotron needs heads spanning the hidden size)")
    if arch == "jais2":  # (llama.cpp's jais2 requires it; the rms eps its converter also writes is unused)
        _need_metadata(p, meta, "jais2.attention.layer_norm_epsilon", arch)
    if arch == "olmo":
        # llama.cpp's olmo needs the LayerNorm eps; OlmoLayerNorm's is 1e-5 (no config field), and its
        # converter always writes that: another value is refused, the folder could not say it
        _need_metadata(p, meta, "olmo.attention.layer_norm_epsilon", arch)
        ln_eps = _real(meta, "olmo.attention.layer_norm_epsilon", 1e-5, 0.0, 1.0, p)
        if _f32(ln_eps) != _f32(1e-5):
            raise ValueError(f"{p}: olmo.attention.layer_norm_epsilon = {ln_eps:g}: "
                             "OLMo's weightless LayerNorms use 1e-5 (OlmoConfig has no eps field); pyvt converts no "
                             "other")
    if arch == "nemotron" and "nemotron.attention.layer_norm_epsilon" not in meta:  # (llama.cpp requires it)
        raise ValueError(f"{p}: missing metadata nemotron.attention.layer_norm_epsilon (the LayerNorm eps "
                         "llama.cpp's nemotron needs)")
    l_cache = None
    if arch in _LFM2_ARCHS:
        l_cache = _lfm2_checks(meta, arch, n_head, head_dim, hidden, p)
    par_res = None
    if arch == "gptneox":
        # llama.cpp's gptneox: q and o are [hidden, hidden]; GPT-NeoX's head_size is hidden / heads
        # and its attention multi-head (GPTNeoXConfig has no num_key_value_heads), while
        # llama.cpp would group a file's heads by head_count_kv
        _heads_span_hidden(p, arch, n_head, head_dim, hidden, "GPT-NeoX's heads span its hidden size")
        _multi_head_only(p, arch, n_kv, n_head, "GPT-NeoX", "GPTNeoXConfig")
        for key in ("gptneox.attention.layer_norm_epsilon", "gptneox.use_parallel_residual"):
            _need_metadata(p, meta, key, arch)  # (llama.cpp requires both)
        par_res = meta_value(meta, "gptneox.use_parallel_residual", "bool", p)
    if arch in _LEARNED_POS_ARCHS:
        # llama.cpp's gpt2 / starcoder: q and o are [hidden, hidden] (the heads span the hidden
        # size); the LayerNorm eps and the context length (position_embd's rows) are needed
        _heads_span_hidden(p, arch, n_head, head_dim, hidden, f"llama.cpp's {arch} needs heads spanning the hidden size")
        for key in (f"{arch}.attention.layer_norm_epsilon", f"{arch}.context_length"):
            _need_metadata(p, meta, key, arch)
        # GPT2Config is multi-head; GPTBigCodeConfig multi-query (one KV head) or multi-head:
        # llama.cpp would group the heads by any other head_count_kv
        if arch == "gpt2":
            _multi_head_only(p, arch, n_kv, n_head, "GPT-2", "GPT2Config")
        if arch == "starcoder" and n_kv not in (1, n_head):
            raise ValueError(f"{p}: starcoder.attention.head_count_kv = {n_kv}: GPTBigCode's attention is multi-query "
                             f"(1 KV head) or multi-head ({n_head}); GPTBigCodeConfig cannot express grouped-query "
                             "attention, which llama.cpp would compute")
    if arch == "falcon":
        # llama.cpp's falcon: q and o are [hidden, hidden] (FalconConfig's head_dim is hidden /
        # heads); the LayerNorm eps is needed
        _heads_span_hidden(p, arch, n_head, head_dim, hidden, "Falcon's heads span its hidden size")
        _need_metadata(p, meta, f"{arch}.attention.layer_norm_epsilon", arch)
    if arch == "bloom":
        # llama.cpp's bloom: q and o are [hidden, hidden] and its heads multi-head (BloomConfig
        # has neither a head size nor KV heads), the MLP 4 · hidden wide (BloomMLP; llama.cpp
        # takes feed_forward_length), the LayerNorm eps needed, ALiBi with max bias 8 (llama.cpp
        # sets 8 whatever a file says; transformers' slopes are those of 8)
        _heads_span_hidden(p, arch, n_head, head_dim, hidden, "Bloom's heads span its hidden size")
        _multi_head_only(p, arch, n_kv, n_head, "Bloom", "BloomConfig")
        _mlp_of_4_hidden(p, arch, ffn, hidden, "Bloom",
                         "BloomConfig cannot express another width, which llama.cpp would compute")
        _need_metadata(p, meta, f"{arch}.attention.layer_norm_epsilon", arch)
        if "bloom.attention.max_alibi_bias" in meta:
            bias = _real(meta, "bloom.attention.max_alibi_bias", 8.0, 0.0, 1e30, p)
            if bias != 8.0:
                raise ValueError(f"{p}: bloom.attention.max_alibi_bias = {bias!r}: llama.cpp's bloom applies ALiBi with "
                                 "max bias 8 whatever the file says, and Bloom's slopes are those of 8; pyvt does "
                                 "not guess what is meant")
    alibi = clip = None
    if arch == "olmo" and "olmo.attention.clamp_kqv" in meta:  # (OLMo's clip_qkv; 0 or below: llama.cpp does not clamp)
        clip = _real(meta, "olmo.attention.clamp_kqv", 0.0, -1e30, 1e30, p, open_lo=False)
        clip = float(_f32(clip)) if clip > 0 else None
    if arch == "mpt":
        # llama.cpp's mpt: q and o are [hidden, hidden], its heads multi-head (transformers' MPT
        # has no KV heads: kv_n_heads is MPTModel's head_count_kv), the MLP 4 · hidden (MptMLP's
        # width whatever expansion_ratio; llama.cpp takes feed_forward_length), the LayerNorm
        # eps needed; ALiBi only with max_alibi_bias (llama.cpp's default 0: no positions at all,
        # which MptConfig cannot say), of 8 (pyvt's MPT slopes; ggml's are build_mpt_alibi_tensor's
        # for every head count); clamp_kqv clamps q | k | v as clip_qkv (not above 0: none)
        _heads_span_hidden(p, arch, n_head, head_dim, hidden, "MPT's heads span its hidden size")
        _multi_head_only(p, arch, n_kv, n_head, "MPT", "MptConfig")
        _mlp_of_4_hidden(p, arch, ffn, hidden, "MPT",
                         "transformers' MptMLP cannot compute another width, which llama.cpp would")
        _need_metadata(p, meta, f"{arch}.attention.layer_norm_epsilon", arch)
        if "mpt.attention.max_alibi_bias" not in meta:
            raise ValueError(f"{p}: missing metadata mpt.attention.max_alibi_bias: llama.cpp's mpt then applies no "
                             "ALiBi and no positions at all, which MptConfig cannot express")
        alibi = _real(meta, "mpt.attention.max_alibi_bias", 8.0, 0.0, 1e30, p, open_lo=False)
        if alibi != 8.0:
            raise ValueError(f"{p}: mpt.attention.max_alibi_bias = {alibi!r}: "
                             + ("llama.cpp's mpt then applies no ALiBi and no positions at all, which MptConfig "
                                "cannot express" if alibi == 0 else
                                "pyvt's MPT computes ALiBi with alibi_bias_max 8 only"))
        if "mpt.attention.clamp_kqv" in meta:
            clip = _real(meta, "mpt.attention.clamp_kqv", 0.0, -1e30, 1e30, p, open_lo=False)  # (0: no clip)
            clip = float(_f32(clip)) if clip > 0 else None  # (llama.cpp clamps only above 0)
    rope_dim = (head_dim if arch in _NO_ROPE_ARCHS else mla["rope"] if mla  # (no RoPE; DeepSeek: its rope dims)
                else need_int("rope.dimension_count", head_dim))
    ln = arch in _LAYER_NORM_ARCHS
    partial = arch in _PARTIAL_ROTARY_ARCHS  # (GLM-4: half of each head rotates)
    if rope_dim != head_dim and not mla and (not partial or rope_dim > head_dim or rope_dim % 2):
        raise ValueError(f"{p}: partial rotary embeddings (rope.dimension_count {rope_dim} "
                         f"of head_dim {head_dim}) are not supported"
                         + (" (an even number of dims up to head_dim is needed)" if partial else ""))
    if arch == "exaone4" and meta_value(meta, "exaone4.nextn_predict_layers", "int", p, 0):  # (EXAONE 4.5's MTP)
        raise ValueError(f"{p}: exaone4.nextn_predict_layers = {meta['exaone4.nextn_predict_layers']}: EXAONE files "
                         "with NextN (multi-token prediction) layers are not supported")
    xielu = _xielu_params(meta, n_layers, p) if arch == "apertus" else None
    if arch in ("glm4", "glm4moe") and f"{arch}.rope.dimension_sections" in meta:  # (GLM-4V's M-RoPE)
        raise ValueError(f"{p}: {arch}.rope.dimension_sections: a multimodal GLM-4 file (M-RoPE) is not supported")
    if arch == "glm4":  # GLM-OCR's NextN layers: not a Glm4ForCausalLM
        if meta_value(meta, "glm4.nextn_predict_layers", "int", p, 0):
            raise ValueError(f"{p}: glm4.nextn_predict_layers = {meta['glm4.nextn_predict_layers']}: GLM-4 files with "
                             "NextN (multi-token prediction) layers are not supported")
    if arch in ("deepseek2", "hunyuan-moe", "hunyuan-dense", "mistral3", "mistral4", "minicpm3", "exaone"):  # (llama.cpp requires it there)
        _need_metadata(p, meta, f"{arch}.attention.layer_norm_rms_epsilon", arch)
    eps = _f32(_real(meta, f"{arch}.attention.layer_norm_{'' if ln else 'rms_'}epsilon", 1e-5, 0.0, 1.0, p))
    theta = _f32(_real(meta, f"{arch}.rope.freq_base", 10000.0, 1.0, 1e12, p))
    if arch == "hunyuan-dense":
        if f"{arch}.rope.dimension_sections" in meta:  # (HunYuan-VL's M-RoPE)
            raise ValueError(f"{p}: {arch}.rope.dimension_sections: a multimodal HunYuan file (M-RoPE) is not "
                             "supported")
        theta = _hunyuan_alpha_base(meta, arch, theta, head_dim, p)
    if float(theta).is_integer():
        theta = float(theta)
    if moe:  # llama.cpp's defaults: feed_forward_length / expert_used_count, feed_forward_length
        moe["ffn_exp"] = (ffn if arch in ("llama", "granitemoe", "olmoe", "minimax-m2")  # (minimax-m2's experts: n_ff)
                          else need_int("expert_feed_forward_length", ffn) if arch == "gpt-oss"
                          else need_int("expert_feed_forward_length", per_block=arch == "afmoe")  # (llama.cpp requires it)
                          if arch in ("deepseek2", "ernie4_5-moe", "exaone-moe", "lfm2moe", "hunyuan-moe", "mistral4",
                                      "afmoe")
                          else need_int("expert_feed_forward_length", ffn // moe["n_used"] or None,  # (hy_v3's default too)
                                        per_block=arch == "hy_v3"))
        if arch == "qwen2moe":
            moe["ffn_shexp"] = need_int("expert_shared_feed_forward_length", ffn)
        elif arch == "granitemoe" and meta.get("granitemoe.expert_shared_feed_forward_length", 0) != 0:
            moe["ffn_shexp"] = need_int("expert_shared_feed_forward_length")  # GraniteMoeShared (0: none, as llama.cpp)
        elif arch == "exaone-moe":  # (llama.cpp: the shared experts expert_shared_feed_forward_length wide, else one)
            moe.update(_sigmoid_router(meta, arch, moe, n_layers, _shared_count(meta, arch, moe["ffn_exp"], 1, p), p))
        elif arch in _DEEPSEEK_ROUTER_ARCHS:
            moe.update(_sigmoid_router(meta, arch, moe, n_layers, need_int("expert_shared_count"), p))
        elif arch in ("ernie4_5-moe", "minimax-m2"):
            moe.update(_biased_router(meta, arch, moe, n_layers, p))
        elif arch == "afmoe":
            moe.update(_afmoe_router(meta, moe, n_layers, need_int("expert_shared_count"), p))
        elif arch == "hy_v3":
            moe.update(_hy_v3_router(meta, moe, n_layers, p))
        elif arch == "lfm2moe":
            moe.update(_lfm2_moe_router(meta, n_layers, p))
        elif arch == "hunyuan-moe":
            moe.update(_hunyuan_moe_router(meta, ffn, moe["ffn_exp"], p))
    return dict(arch=arch, hidden=hidden, n_layers=n_layers, nextn=nextn, n_head=n_head, n_kv=n_kv, ffn=ffn, ctx=ctx,
                head_dim=head_dim, eps=eps, theta=theta, moe=moe, rope_dim=rope_dim, xielu=xielu, par_res=par_res,
                alibi=alibi, clip=clip, mla=mla, conv=conv, l_cache=l_cache)


def _lfm2_layers(meta: dict, arch: str, n_layers: int, n_head: int, p: str) -> tuple[int, list[int]]:
    """An lfm2 / lfm2moe file's KV heads and convolution blocks as llama.cpp reads them: attention.head_count_kv
    one number (every block attends) or one per block (absent: the heads), a block with 0 mixing by
    its short convolution (is_recr) -> (the KV heads, the convolving blocks). Lfm2Config has one
    num_key_value_heads: attending blocks with different counts, and a file where no block attends,
    are refused naming the key."""
    key = f"{arch}.attention.head_count_kv"
    v = meta.get(key, n_head)
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        if int(v) <= 0:
            raise ValueError(f"{p}: {key} = {v!r} is not a positive integer (a number for every block, or an array "
                             "with 0 for the convolution blocks)")
        return int(v), []
    counts = [int(c) for c in meta_value(meta, key, "ints", p)]
    if len(counts) != n_layers:  # (llama.cpp's get_key_or_arr needs one per block)
        raise ValueError(f"{p}: {key} lists {len(counts)} blocks, but {arch}.block_count = {n_layers}")
    attending = [i for i, c in enumerate(counts) if c != 0]
    if not attending:
        raise ValueError(f"{p}: {key} is 0 for every block: an LFM2 model without an attention block is not one "
                         "pyvt converts")
    first = attending[0]
    for i in attending:
        if counts[i] < 0 or counts[i] != counts[first]:
            raise ValueError(f"{p}: {key}[{i}] = {counts[i]}, but block {first} has {counts[first]}: Lfm2Config has "
                             "one num_key_value_heads for every attention block (0 marks a convolution block)")
    return counts[first], [i for i, c in enumerate(counts) if c == 0]


def _lfm2_checks(meta: dict, arch: str, n_head: int, head_dim: int, hidden: int, p: str) -> int:
    """What an lfm2 / lfm2moe file must say for Lfm2ForCausalLM / Lfm2MoeForCausalLM to compute
    what llama.cpp does -> the kernel's width (shortconv.l_cache). llama.cpp needs
    shortconv.l_cache and the RMS eps, q and out_proj [hidden, hidden] (Lfm2's head_dim is hidden /
    heads); refused naming the key: an l_cache below 2 (llama.cpp's kernel reads l_cache - 1
    positions before each) or above 256 (the widest libvt reads), a sliding window (llama.cpp's
    lfm2 then slides every attention block, its lfm2moe ignores the key; neither config has a
    window), non-causal attention (LFM2's bidirectional embedding models)."""
    _heads_span_hidden(p, arch, n_head, head_dim, hidden, f"llama.cpp's {arch} has q and out_proj [hidden, hidden], "
                       "Lfm2's head_dim is hidden / heads")
    for key in (f"{arch}.attention.layer_norm_rms_epsilon", f"{arch}.shortconv.l_cache"):
        _need_metadata(p, meta, key, arch)
    l_cache = meta_value(meta, f"{arch}.shortconv.l_cache", "int", p)
    if not 2 <= l_cache <= 256:
        raise ValueError(f"{p}: {arch}.shortconv.l_cache = {l_cache} is not between 2 (llama.cpp's {arch} convolves "
                         "over the l_cache - 1 positions before each and needs one) and 256 (the widest kernel pyvt "
                         "runs)")
    window = _window(meta, f"{arch}.attention.sliding_window", None, p)
    if window:
        raise ValueError(f"{p}: {arch}.attention.sliding_window = {window}: "
                         + ("llama.cpp's lfm2 then slides every attention block over that window, which Lfm2Config "
                            "cannot express" if arch == "lfm2" else
                            "llama.cpp's lfm2moe ignores it and Lfm2MoeConfig has no window; pyvt does not guess "
                            "which is meant"))
    if not meta_value(meta, f"{arch}.attention.causal", "bool", p, True):
        raise ValueError(f"{p}: {arch}.attention.causal = false: a bidirectional LFM2 (an embedding model, "
                         "Lfm2BidirectionalModel) is not a causal language model pyvt runs")
    return l_cache


def _hunyuan_moe_router(meta: dict, ffn: int, ffn_exp: int, p: str) -> dict:
    """A hunyuan-moe file's experts and router as llama.cpp computes them (src/models/
    hunyuan-moe.cpp, build_moe_ffn): experts in every block, feed_forward_length wide whatever
    expert_feed_forward_length (needed) says, one ungated shared MLP
    expert_shared_feed_forward_length wide (absent or 0: feed_forward_length), a softmax router
    whose top weights are always renormalized and never scaled. HunYuanMoEV1ForCausalLM builds
    experts and shared MLP intermediate_size wide, with one shared MLP: each width that is not
    feed_forward_length and an expert_shared_count other than 1 is refused, and so is what
    llama.cpp's hunyuan-moe ignores while the key says otherwise (expert_gating_func not softmax,
    expert_weights_norm false, expert_weights_scale not 1, rope.scaling.alpha — hunyuan-vl's NTK
    alpha; a hunyuan-moe file has the stretched base in rope.freq_base), and expert groups
    (llama.cpp reads them for every architecture; HunYuan has none). -> hp["moe"]'s ffn_shexp."""
    a = "hunyuan-moe"
    if ffn_exp != ffn:
        raise ValueError(f"{p}: {a}.expert_feed_forward_length = {ffn_exp} differs from feed_forward_length = {ffn}: "
                         f"llama.cpp's {a} builds its experts feed_forward_length wide, HunYuanMoEV1's are "
                         "intermediate_size wide; pyvt does not guess which is meant")
    shexp = meta_value(meta, f"{a}.expert_shared_feed_forward_length", "int", p, 0) or ffn
    if shexp != ffn:
        raise ValueError(f"{p}: {a}.expert_shared_feed_forward_length = {shexp} differs from feed_forward_length = "
                         f"{ffn}: HunYuanMoEV1's shared MLP is intermediate_size wide, as its experts")
    shared = meta_value(meta, f"{a}.expert_shared_count", "int", p, 1)
    if shared != 1:
        raise ValueError(f"{p}: {a}.expert_shared_count = {shared}: HunYuanMoEV1 has one shared MLP "
                         "(num_shared_expert 1); pyvt converts no other")
    gating = meta_value(meta, f"{a}.expert_gating_func", "int", p, 1)
    if gating != 1:
        raise ValueError(f"{p}: {a}.expert_gating_func = {gating}: llama.cpp's {a} scores its experts by a softmax "
                         "(1) whatever the key says; pyvt does not guess which is meant")
    _refuse_router_keys_ignored(meta, a, p, "HunYuanMoEV1", "HunYuanMoEV1 does not either")
    if f"{a}.rope.scaling.alpha" in meta:
        raise ValueError(f"{p}: {a}.rope.scaling.alpha = {meta[f'{a}.rope.scaling.alpha']!r:.40}: llama.cpp's {a} "
                         "rotates with rope.freq_base alone (its converter stores the base the NTK alpha stretches "
                         "there); pyvt does not guess which is meant")
    return dict(ffn_shexp=ffn)


def _hunyuan_alpha_base(meta: dict, a: str, theta, head_dim: int, p: str):
    """A hunyuan-dense file's RoPE base as llama.cpp's loader makes it (src/models/hunyuan-vl.cpp):
    rope.freq_base, times alpha^(d / (d - 2)) in float32 when rope.scaling.alpha is above 0 (d the
    key length) — HunYuan's NTK alpha, which its converter usually bakes into rope.freq_base."""
    alpha = _real(meta, f"{a}.rope.scaling.alpha", 0.0, -1e30, 1e30, p, open_lo=False)
    if alpha <= 0:
        return theta
    if head_dim <= 2:
        raise ValueError(f"{p}: {a}.rope.scaling.alpha = {alpha:g} with a head of {head_dim} dims: its exponent "
                         "d / (d - 2) needs more than 2")
    f = np.float32
    base = f(theta) * np.power(f(alpha), f(f(head_dim) / f(head_dim - 2)))
    if not np.isfinite(base) or base > 1e12:
        raise ValueError(f"{p}: {a}.rope.scaling.alpha = {alpha:g} stretches rope.freq_base {theta:g} to {base:g}, "
                         "past the largest base pyvt reads (1e12)")
    return float(base) if float(base).is_integer() else base


def _refuse_router_keys_ignored(meta: dict, a: str, p: str, groupless: str, scale_note: str) -> None:
    """The router keys llama.cpp reads for every architecture but architecture `a`'s graph ignores (hunyuan-moe,
    lfm2moe): expert groups (which `groupless`, the HF model, has not), expert_weights_norm false
    (llama.cpp renormalizes anyway), expert_weights_scale other than 1 (llama.cpp does not scale;
    `scale_note` says what the HF model does) — a file saying otherwise is refused, as pyvt does
    not guess which computation is meant."""
    if meta_value(meta, f"{a}.expert_group_count", "int", p, 0) > 1:
        raise ValueError(f"{p}: {a}.expert_group_count = {meta[f'{a}.expert_group_count']}: llama.cpp would choose "
                         f"the experts within groups, which {groupless} has not")
    if not meta_value(meta, f"{a}.expert_weights_norm", "bool", p, True):
        raise ValueError(f"{p}: {a}.expert_weights_norm = false: llama.cpp's {a} renormalizes the chosen weights "
                         "whatever the key says; pyvt does not guess which is meant")
    scale = _real(meta, f"{a}.expert_weights_scale", 1.0, 0.0, 1e30, p, open_lo=False)
    if scale not in (0.0, 1.0):
        raise ValueError(f"{p}: {a}.expert_weights_scale = {scale!r}: llama.cpp's {a} does not scale the chosen "
                         f"weights whatever the key says ({scale_note}); pyvt does not guess which is meant")


def _lfm2_moe_router(meta: dict, n_layers: int, p: str) -> dict:
    """An lfm2moe file's router as llama.cpp computes it (src/models/lfm2moe.cpp, lfm2.cpp's graph,
    build_moe_ffn): expert_gating_func needed (llama.cpp requires it) and sigmoid (2,
    Lfm2MoeTopKRouter's), the choice on score + exp_probs_b, the chosen weights always
    renormalized and never scaled (llama.cpp's lfm2moe reads neither expert_weights_norm nor
    expert_weights_scale: a file saying otherwise is refused, as transformers would compute
    what it says), the first leading_dense_block_count blocks dense (absent: none), no expert
    groups (read for every architecture by llama.cpp; Lfm2MoeConfig has none) -> hp["moe"]'s lead."""
    a = "lfm2moe"
    gating = meta_value(meta, f"{a}.expert_gating_func", "int", p, None)
    if gating != 2:
        raise ValueError(f"{p}: " + (f"missing metadata {a}.expert_gating_func (llama.cpp's {a} needs it"
                                     if gating is None else f"{a}.expert_gating_func = {gating}: LFM2-MoE's router "
                                     "scores its experts")
                         + " by a sigmoid (2); pyvt converts no other)")
    _refuse_router_keys_ignored(meta, a, p, "Lfm2MoeConfig", "LFM2-MoE's routed_scaling_factor")
    lead = meta_value(meta, f"{a}.leading_dense_block_count", "int", p, 0)
    if not 0 <= lead < n_layers:
        raise ValueError(f"{p}: {a}.leading_dense_block_count = {lead} is not below the {n_layers} blocks "
                         "(a mixture-of-experts model with none)")
    return dict(lead=lead)


def _mla_params(meta: dict, a: str, n_head: int, n_kv: int, hidden: int, p: str) -> dict:
    """A deepseek2 / mistral4 / minicpm3 (`a`) file's latent attention as llama.cpp reads it
    (src/models/deepseek2.cpp, minicpm3.cpp): attention.kv_lora_rank, attention.q_lora_rank
    (absent or 0: attn_q, no LoRA; minicpm3 requires it, its q always through the LoRA), the rope dims
    rope.dimension_count; with attention.key_length_mla / value_length_mla (llama.cpp's converter
    since kv_b is split: attn_k_b / attn_v_b) the q·k head nope + rope and v's width, key_length /
    value_length then the latent cache's kv_lora + rope / kv_lora and one KV head; without them
    (older files: attn_kv_b whole) key_length / value_length are the q·k head and v's width, the
    KV heads the heads (minicpm3: always so, its kv_b whole). Each key that does not fit is
    refused naming it -> q_lora, kv_lora, nope, rope, v, split."""

    def need(k: str, default=None) -> int:
        v = meta_value(meta, f"{a}.{k}", "int", p, default)
        if v is None:
            raise ValueError(f"{p}: missing metadata {a}.{k} (llama.cpp's {a} needs it)")
        if v <= 0:
            raise ValueError(f"{p}: {a}.{k} = {v} is not a positive integer")
        return int(v)

    kv_lora, rope = need("attention.kv_lora_rank"), need("rope.dimension_count")
    q_lora = need("attention.q_lora_rank") if a == "minicpm3" else meta_value(meta, f"{a}.attention.q_lora_rank", "int", p, 0)
    if q_lora < 0:
        raise ValueError(f"{p}: {a}.attention.q_lora_rank = {q_lora} is negative")
    if rope % 2:
        raise ValueError(f"{p}: {a}.rope.dimension_count = {rope} is odd (RoPE rotates pairs)")
    have = [k for k in ("attention.key_length_mla", "attention.value_length_mla") if f"{a}.{k}" in meta]
    if len(have) == 1:  # (llama.cpp asserts both or neither)
        other = "value_length_mla" if have[0].endswith("key_length_mla") else "key_length_mla"
        raise ValueError(f"{p}: {a}.{have[0]} without {a}.attention.{other} (llama.cpp needs both or neither)")
    split = bool(have)
    if split and a == "minicpm3":  # (llama.cpp's minicpm3 reads neither and loads kv_b whole)
        raise ValueError(f"{p}: {a}.{have[0]}: llama.cpp's minicpm3 reads kv_b whole (attn_kv_b), not split per "
                         "head; pyvt does not convert such a file")
    default = hidden // n_head if hidden % n_head == 0 else None
    kl, vl = need("attention.key_length", default), need("attention.value_length", default)
    if split:
        qk, v = need("attention.key_length_mla"), need("attention.value_length_mla")
        for key, got, want in (("attention.key_length", kl, kv_lora + rope), ("attention.value_length", vl, kv_lora),
                               ("attention.head_count_kv", n_kv, 1)):
            if got != want:
                raise ValueError(f"{p}: {a}.{key} = {got}: a file with key_length_mla (the latent cache) has {want} "
                                 "(kv_lora_rank + rope dims, kv_lora_rank, one KV head) as llama.cpp computes it")
    else:
        qk, v = kl, vl
        if n_kv != n_head:
            raise ValueError(f"{p}: {a}.attention.head_count_kv = {n_kv}: a file without key_length_mla (kv_b whole) "
                             f"has as many KV heads as heads ({n_head}), as llama.cpp computes it")
    key = "attention.key_length_mla" if split else "attention.key_length"
    if qk <= rope:
        raise ValueError(f"{p}: {a}.{key} = {qk} leaves no nope dims beside the {rope} rope dims "
                         "(rope.dimension_count)")
    return dict(q_lora=q_lora, kv_lora=kv_lora, nope=qk - rope, rope=rope, v=v, split=split)


def _shared_count(meta: dict, arch: str, ffn_exp: int, default: int, p: str) -> int:
    """The shared experts of an exaone-moe / ernie4_5-moe file as llama.cpp sizes them: the
    expert_shared_feed_forward_length wide (absent or 0: `default` experts), in experts of
    expert_feed_forward_length (a width no whole number of them makes is refused naming it)."""
    width = meta_value(meta, f"{arch}.expert_shared_feed_forward_length", "int", p, 0)
    if width < 0 or width % ffn_exp:
        raise ValueError(f"{p}: {arch}.expert_shared_feed_forward_length = {width} is not a whole number of "
                         f"experts of expert_feed_forward_length = {ffn_exp} (the checkpoints' shared experts)")
    return width // ffn_exp if width else default


def _biased_router(meta: dict, arch: str, moe: dict, n_layers: int, p: str) -> dict:
    """An ernie4_5-moe / minimax-m2 file's router as llama.cpp computes it (src/models/
    ernie4-5-moe.cpp, minimax-m2.cpp, build_moe_ffn): the choice made on the gate's score +
    exp_probs_b, the chosen scores renormalized, never scaled (neither reads
    expert_weights_scale / _norm). ernie4_5-moe: softmax whatever expert_gating_func says, the
    first leading_dense_block_count blocks dense and every other one MoE (interleave_moe_layer_step,
    needed, must be 1: llama.cpp's loader makes the blocks between MoE ones MoE too, its graph
    dense), the shared experts by _shared_count (absent: none). minimax-m2: expert_gating_func
    needed and sigmoid (2), no dense blocks, no shared experts. Expert groups (read for every
    architecture by llama.cpp) are refused: neither model has them -> hp["moe"]'s lead,
    n_shared, ffn_shexp (when shared experts)."""
    if meta_value(meta, f"{arch}.expert_group_count", "int", p, 0) > 1:
        raise ValueError(f"{p}: {arch}.expert_group_count = {meta[f'{arch}.expert_group_count']}: llama.cpp would "
                         f"choose {arch}'s experts within groups, which its Hugging Face model has not")
    if arch == "minimax-m2":
        gating = meta_value(meta, f"{arch}.expert_gating_func", "int", p, None)
        if gating != 2:
            raise ValueError(f"{p}: " + ("missing metadata minimax-m2.expert_gating_func (llama.cpp's minimax-m2 "
                                         "needs it" if gating is None else f"minimax-m2.expert_gating_func = {gating}: "
                                         "MiniMax-M2's router scores its experts")
                             + " by a sigmoid (2); pyvt converts no other)")
        return dict(lead=0)
    step = meta_value(meta, f"{arch}.interleave_moe_layer_step", "int", p, None)
    if step is None:
        raise ValueError(f"{p}: missing metadata {arch}.interleave_moe_layer_step (llama.cpp's {arch} needs it)")
    if step != 1:
        raise ValueError(f"{p}: {arch}.interleave_moe_layer_step = {step}: llama.cpp's {arch} loads experts in "
                         "every block from leading_dense_block_count on and has no dense ones between; pyvt "
                         "converts a step of 1 only")
    lead = meta_value(meta, f"{arch}.leading_dense_block_count", "int", p, 0)
    if not 0 <= lead < n_layers:
        raise ValueError(f"{p}: {arch}.leading_dense_block_count = {lead} is not below the {n_layers} blocks "
                         "(a mixture-of-experts model with none)")
    n_shared = _shared_count(meta, arch, moe["ffn_exp"], 0, p)
    return dict(lead=lead, n_shared=n_shared, **({"ffn_shexp": n_shared * moe["ffn_exp"]} if n_shared else {}))


def _sigmoid_router(meta: dict, arch: str, moe: dict, n_layers: int, n_shared: int, p: str) -> dict:
    """A glm4moe / dots1 file's router, dense blocks and shared experts as llama.cpp reads its
    keys (src/models/glm4-moe.cpp, dots1.cpp, build_moe_ffn): expert_gating_func sigmoid (2;
    glm4moe's default, dots1 needs it), the first leading_dense_block_count blocks dense (absent:
    none), expert_group_count groups of which expert_group_used_count are open (absent or 1: one
    group; as llama.cpp, fewer open than there are, and a group scored by its two best),
    expert_weights_norm (absent: false), expert_weights_scale (absent or 0: 1), the shared
    experts expert_shared_count · expert_feed_forward_length wide. deepseek2 also takes softmax
    gating (1; absent: 1, as llama.cpp reads DeepSeek-V2 / V2.5 files without the key, but for
    GLM-4.7-Flash's 47 / 48 blocks of 154880 tokens, 2): DeepSeek-V2's greedy router, never grouped
    (llama.cpp scores a group by its two best probabilities, transformers' group_limited_greedy by
    its best) nor renormalized (transformers' DeepSeek-V2 ignores norm_topk_prob). Each key that
    does not fit is refused naming it -> hp["moe"]'s lead, n_group, topk_group, norm, scale,
    n_shared, ffn_shexp, softmax."""
    E, k = moe["n_expert"], moe["n_used"]
    default = 2 if arch in ("glm4moe", "afmoe", "hy_v3") else None
    if arch in _MLA_ARCHS:  # (llama.cpp's deepseek2 loader: absent, softmax, but for GLM 4.7 Lite's sizes)
        vocab = meta.get(f"{arch}.vocab_size", len(meta.get("tokenizer.ggml.tokens") or ()))
        default = 2 if n_layers in (47, 48) and vocab == 154880 else 1
    gating = meta_value(meta, f"{arch}.expert_gating_func", "int", p, default)
    if gating is None:
        raise ValueError(f"{p}: missing metadata {arch}.expert_gating_func (llama.cpp's {arch} needs it; "
                         "2, sigmoid, is the router's)")
    softmax = arch in _MLA_ARCHS and gating == 1
    if arch == "mistral4" and not softmax:  # (Mistral 4's router: a softmax, grouped by the best two)
        raise ValueError(f"{p}: mistral4.expert_gating_func = {gating}: Mistral 4's router scores its experts by a "
                         "softmax (1); pyvt converts no other")
    if gating != 2 and not softmax:
        raise ValueError(f"{p}: {arch}.expert_gating_func = {gating}: the {arch} router scores its experts by a "
                         "sigmoid (2) as DeepSeek-V3's" + (" or a softmax (1) as DeepSeek-V2's" if arch == "deepseek2"
                                                           else "") + "; pyvt converts no other")
    lead = meta_value(meta, f"{arch}.leading_dense_block_count", "int", p, 0)
    if not 0 <= lead < n_layers:
        raise ValueError(f"{p}: {arch}.leading_dense_block_count = {lead} is not below the {n_layers} blocks "
                         "(a mixture-of-experts model with none)")
    groups = meta_value(meta, f"{arch}.expert_group_count", "int", p, 0)
    used = meta_value(meta, f"{arch}.expert_group_used_count", "int", p, 0)
    norm = meta_value(meta, f"{arch}.expert_weights_norm", "bool", p, False)
    if softmax and groups > 1 and arch == "deepseek2":
        raise ValueError(f"{p}: {arch}.expert_group_count = {groups} with softmax gating (expert_gating_func 1): "
                         "llama.cpp scores a group by the sum of its two best probabilities, transformers' "
                         "DeepSeek-V2 (group_limited_greedy) by its best; pyvt does not convert a model that differs")
    if softmax and norm and arch == "deepseek2":
        raise ValueError(f"{p}: {arch}.expert_weights_norm = true with softmax gating (expert_gating_func 1): "
                         "transformers' DeepSeek-V2 never renormalizes its top weights (norm_topk_prob is ignored)")
    if groups > 1:
        if E % groups or E // groups < 2:
            raise ValueError(f"{p}: {arch}.expert_group_count = {groups} does not split the {E} experts into groups "
                             "of 2 or more (the router scores a group by its two best experts)")
        if not 0 < used < groups:
            raise ValueError(f"{p}: {arch}.expert_group_used_count = {used} is not between 1 and "
                             f"expert_group_count - 1 = {groups - 1} (as llama.cpp needs)")
        if k > used * (E // groups):
            raise ValueError(f"{p}: {arch}.expert_used_count = {k} is more than the {used * (E // groups)} experts "
                             f"of the expert_group_used_count = {used} groups a token may choose from")
    else:
        groups = used = 1
    scale = _real(meta, f"{arch}.expert_weights_scale", 1.0, 0.0, 1e30, p, open_lo=False)
    return dict(lead=lead, n_group=groups, topk_group=used, scale=_f32(scale) if scale else 1.0, norm=norm,
                n_shared=n_shared, ffn_shexp=n_shared * moe["ffn_exp"], softmax=softmax)


def _afmoe_router(meta: dict, moe: dict, n_layers: int, n_shared: int, p: str, arch: str = "afmoe") -> dict:
    """An afmoe file's router as llama.cpp computes it (src/models/afmoe.cpp, build_moe_ffn) and
    AFMoE's router does: _sigmoid_router's keys (expert_gating_func absent or sigmoid), the chosen
    scores always renormalized — expert_weights_norm absent or false (llama.cpp's default) leaves
    them as they are, which AfmoeConfig cannot say — and no expert groups (AFMoE has none); each
    refused naming the key."""
    r = _sigmoid_router(meta, arch, moe, n_layers, n_shared, p)
    model = {"afmoe": "AFMoE", "hy_v3": "HY-V3"}[arch]
    if r["n_group"] > 1:
        raise ValueError(f"{p}: {arch}.expert_group_count = {r['n_group']}: llama.cpp would choose {model}'s experts "
                         "within groups, which its Hugging Face model has not")
    if not r["norm"]:
        raise ValueError(f"{p}: {arch}.expert_weights_norm is " + ("false" if f"{arch}.expert_weights_norm" in meta
                                                                   else "absent (false for llama.cpp)")
                         + f": llama.cpp's {arch} then leaves the chosen experts' weights as they are, {model}'s router "
                         "always renormalizes them; pyvt does not convert a model that differs")
    return r


def _hy_v3_router(meta: dict, moe: dict, n_layers: int, p: str) -> dict:
    """A hy_v3 file's router as llama.cpp computes it (src/models/hy-v3.cpp, build_moe_ffn) and
    HY-V3's does: _afmoe_router's checks (a sigmoid, absent or 2; no groups; expert_weights_norm
    true — llama.cpp's default, false, would leave the chosen weights as they are, HYV3TopKRouter
    always renormalizes), the shared experts expert_shared_feed_forward_length wide (absent: one
    expert's) in whole experts of expert_feed_forward_length (num_shared_experts). Which blocks
    are dense is the tensors' to say (_check_tensors: ffn_gate_inp or not)."""
    r = _afmoe_router(meta, moe, n_layers, 1, p, arch="hy_v3")
    r["n_shared"] = _shared_count(meta, "hy_v3", moe["ffn_exp"], 1, p)
    r["ffn_shexp"] = r["n_shared"] * moe["ffn_exp"]
    return r


def _xielu_params(meta: dict, n_layers: int, p: str) -> dict:
    """Apertus's xIELU parameters per layer, as llama.cpp's get_key_or_arr reads xielu.alpha_p /
    alpha_n / beta / eps (each needed: one float per block, or one for all): the raw values of
    the checkpoint's mlp.act_fn.* (llama.cpp's converter stores them as they are; ggml_xielu,
    as transformers, takes alpha_p = softplus(alpha_p), alpha_n = beta + softplus(alpha_n)).
    -> {name: float32 array [n_layers]}."""
    out = {}
    for key, name, _ in _XIELU:
        if key not in meta:
            raise ValueError(f"{p}: missing metadata {key} (llama.cpp's apertus needs it: the xIELU parameter "
                             f"mlp.act_fn.{name} of every block)")
        v = meta[key]
        if isinstance(v, np.ndarray):
            if v.ndim != 1 or v.dtype.kind != "f" or len(v) != n_layers:
                raise ValueError(f"{p}: {key} = {_describe(v)} is not {n_layers} floats (one per block)")
            x = v.astype(np.float32)
        elif isinstance(v, (float, np.floating)):
            x = np.full(n_layers, v, np.float32)
        else:
            raise ValueError(f"{p}: {key} = {_describe(v)} is not a float or {n_layers} floats (one per block)")
        if not np.isfinite(x).all():
            raise ValueError(f"{p}: {key} has a value that is not a finite float32 (block "
                             f"{int(np.argmin(np.isfinite(x)))})")
        out[name] = x
    return out


def _all_or_none(g: GGUFFile, n_layers: int, kinds: tuple, why: str, p: str) -> None:
    """Block tensors `kinds` (biases a config field adds together): in every block, or in none;
    otherwise refused naming the first missing one."""
    if any(n.endswith(kinds) for n in g.tensors if _BLOCK_RE.match(n)):
        miss = [f"blk.{i}.{t}" for i in range(n_layers) for t in kinds if f"blk.{i}.{t}" not in g.tensors]
        if miss:
            raise ValueError(f"{p}: missing tensor {miss[0]}: {why}")


def _no_rope_freqs(g: GGUFFile, p: str, what: str) -> None:
    """A file of an architecture whose llama.cpp graph, or whose Hugging Face model, rotates
    without RoPE frequency factors: its rope_freqs tensor refused, `what` saying why."""
    if "rope_freqs.weight" in g.tensors:
        raise ValueError(f"{p}: tensor rope_freqs.weight: {what}; pyvt does not guess what is meant")


def _check_tensors(g: GGUFFile, meta: dict, hp: dict, p: str) -> tuple[int, bool]:
    """Check that the tensors are those of a model of this architecture with these
    hyperparameters, with their shapes -> (vocab size, tied embeddings)."""
    arch = hp["arch"]
    if arch == "hy_v3":
        # llama.cpp's hy_v3 names the router's correction bias blk.N.exp_probs_b (its converter keeps
        # mlp.expert_bias's lack of a suffix; the other architectures' are exp_probs_b.bias): read under
        # the common name (a float tensor, always written out, never referred to)
        if odd := [n for n in g.tensors if n.endswith("." + _EXP_PROBS_B)]:
            raise ValueError(f"{p}: tensor {odd[0]}: llama.cpp's hy_v3 names the router's correction bias "
                             "blk.N.exp_probs_b and loads no other; pyvt does not guess what is meant")
        g.tensors = {(n + ".bias" if _BLOCK_RE.match(n) and n.endswith(".exp_probs_b") else n): t
                     for n, t in g.tensors.items()}
    hidden, n_layers, head_dim = hp["hidden"], hp["n_layers"], hp["head_dim"]
    n_head, n_kv, ffn = hp["n_head"], hp["n_kv"], hp["ffn"]
    # (GLM-4 MoE's NextN blocks, after the model's: left out, whatever they hold)
    names = [n for n in g.tensors if not ((m := _BLOCK_RE.match(n)) and n_layers <= int(m.group(1)) < n_layers + hp["nextn"])]
    a = _ARCHS[arch]
    factors = [n for n in _ROPE_FACTORS if n in g.tensors]
    longrope = arch in ("phi3", "minicpm3")
    if factors and (not longrope or len(factors) != 2):
        raise ValueError(f"{p}: {', '.join(factors)} without "
                         + ("its pair" if longrope else f"a longrope {arch} model (only phi3 and minicpm3 files have them)"))
    half = (hp["mla"]["rope"] if hp.get("mla") else head_dim) // 2  # (MiniCPM3: one factor per rotating pair)
    for n in factors:
        if g.tensors[n].shape != (half,):
            raise ValueError(f"{p}: tensor {n} has shape {list(g.tensors[n].shape)}, expected [{half}]")
    moe = hp["moe"]
    if arch in ("ernie4_5", "ernie4_5-moe") and (biases := [n for n in names if n.endswith(".bias")
                                                        and not n.endswith(_EXP_PROBS_B)]):
        raise ValueError(f"{p}: tensor {biases[0]}: ERNIE 4.5 files with biases are not supported (transformers' "
                         f"use_bias puts one on every linear; llama.cpp's {arch} adds only q/k/v's)")
    if arch in ("ernie4_5-moe", "minimax-m2", "exaone-moe"):
        _no_rope_freqs(g, p, f"RoPE frequency factors in a {arch} file are not supported (the Hugging Face model "
                             "has none)")
        if arch != "ernie4_5-moe" and "output.weight" not in g.tensors:
            raise ValueError(f"{p}: missing tensor output.weight (llama.cpp's {arch} needs it)")
    if arch == "olmo" and (w := [n for n in ("output_norm.weight", "output_norm.bias", "rope_freqs.weight")
                                 if n in g.tensors]):
        raise ValueError(f"{p}: tensor {w[0]}: llama.cpp's olmo loads none (OLMo's final LayerNorm has no weights "
                         "and its RoPE no frequency factors); pyvt does not guess what is meant")
    if arch == "afmoe":
        _no_rope_freqs(g, p, "llama.cpp's afmoe loads no RoPE frequency factors")
        if biases := [n for n in names if n.endswith(".bias") and not n.endswith(_EXP_PROBS_B)]:
            raise ValueError(f"{p}: tensor {biases[0]}: afmoe files with biases are not supported (llama.cpp's afmoe "
                             "adds only q/k/v's; AfmoeConfig's attention_bias puts one on o_proj too)")
    if arch in _COHERE_ARCHS:
        if qk := [n for n in names if n.endswith(_QK_NORMS)]:  # (llama.cpp's command-r with 64+ blocks)
            raise ValueError(f"{p}: tensor {qk[0]}: Command R+ q/k LayerNorms (CohereConfig's use_qk_norm) "
                             "are not supported")
        if biases := [n for n in names if n.endswith(".bias")]:
            raise ValueError(f"{p}: tensor {biases[0]}: {arch} files with biases are not supported (llama.cpp's "
                             f"{arch} adds only q/k/v's, Cohere's attention_bias puts one on o_proj too)")
        if "output.weight" in g.tensors:
            raise ValueError(f"{p}: tensor output.weight: llama.cpp's {arch} takes its output from token_embd.weight "
                             "(tied) and does not load an output matrix; pyvt does not guess which is meant")
    if arch == "arcee" and (biases := [n for n in names if n.endswith(".bias")]):
        raise ValueError(f"{p}: tensor {biases[0]}: arcee files with biases are not supported (llama.cpp's arcee adds "
                         "only q/k/v's; ArceeConfig's attention_bias puts one on o_proj too, its mlp_bias on "
                         "up/down_proj, which llama.cpp never adds)")
    if arch == "exaone" and (biases := [n for n in names if n.endswith(".bias")]):
        raise ValueError(f"{p}: tensor {biases[0]}: exaone files with biases are not supported (llama.cpp's exaone adds "
                         "only q/k/v's; ExaoneConfig's attention_bias puts one on out_proj too, its mlp_bias on "
                         "c_fc_0 / c_fc_1 / c_proj, which llama.cpp never adds)")
    if arch == "apertus":  # ApertusConfig's attention_bias: q/k/v/o biases in every block, or none
        _all_or_none(g, n_layers, _QKV_BIASES + ("attn_output.bias",), "an apertus file with biases needs q/k/v/o "
                     "biases in every block (ApertusConfig's attention_bias puts them on all four)", p)
    if arch == "nemotron":
        # NemotronConfig's attention_bias puts biases on q/k/v/o, its mlp_bias on up/down_proj, in
        # every block; llama.cpp's nemotron loads each of the six on its own (all optional)
        _all_or_none(g, n_layers, _NEMOTRON_ATTN_BIASES, "a nemotron file with attention biases needs q/k/v/o "
                     "biases in every block (NemotronConfig's attention_bias puts them on all four)", p)
        _all_or_none(g, n_layers, _NEMOTRON_MLP_BIASES, "a nemotron file with MLP biases needs up and down "
                     "biases in every block (NemotronConfig's mlp_bias puts them on both)", p)
        _no_rope_freqs(g, p, "llama.cpp's nemotron loads no RoPE frequency factors (NemotronConfig's RoPE is "
                             "linear-scaled or not at all)")
    if arch == "jais2":
        _no_rope_freqs(g, p, "llama.cpp's jais2 loads no RoPE frequency factors")
        if "blk.0.attn_output.bias" in g.tensors and (
                miss := [f"blk.{i}.{t}" for i in range(n_layers) for t in _QKV_BIASES if f"blk.{i}.{t}" not in g.tensors]):
            raise ValueError(f"{p}: missing tensor {miss[0]}: a jais2 file has o_proj biases (llama.cpp's jais2 "
                             "needs them), and Jais2Config's attention_bias puts biases on q/k/v/o together")
    if arch == "gptneox":
        _no_rope_freqs(g, p, "llama.cpp's gptneox loads no RoPE frequency factors")
        if "output.weight" not in g.tensors:  # (GPT-NeoX's embed_out; llama.cpp's gptneox needs it)
            raise ValueError(f"{p}: missing tensor output.weight (llama.cpp's gptneox needs the output matrix, "
                             "GPT-NeoX's embed_out)")
    if arch == "falcon":
        _no_rope_freqs(g, p, "llama.cpp's falcon loads no RoPE frequency factors")
        # FalconConfig has the second norm (ln_attn, with its bias) in every block or in none;
        # llama.cpp takes it block by block
        _all_or_none(g, n_layers, ("attn_norm_2.weight", "attn_norm_2.bias"), "a falcon file with attn_norm_2 "
                     "needs it, weight and bias, in every block (falcon-40b's ln_attn; FalconConfig's "
                     "num_ln_in_parallel_attn 2 puts it in all)", p)
    if arch in _NO_ROPE_ARCHS and "rope_freqs.weight" in g.tensors:  # (no RoPE; llama.cpp would not load it)
        raise ValueError(f"{p}: tensor rope_freqs.weight: llama.cpp's {arch} has "
                         f"{'ALiBi' if arch in _ALIBI_ARCHS else 'learned positions'} and no RoPE; "
                         "pyvt does not guess what is meant")
    if arch == "glm4moe":  # Glm4MoeConfig's attention_bias, use_qk_norm: in every block or in none
        _all_or_none(g, n_layers, _QKV_BIASES, "a glm4moe file with biases needs q/k/v biases in every block "
                     "(Glm4MoeConfig's attention_bias puts them on all three)", p)
        _all_or_none(g, n_layers, _QK_NORMS, "a glm4moe file with q/k norms needs them in every block "
                     "(Glm4MoeConfig's use_qk_norm)", p)
    if arch == "dots1":  # Dots1Config's attention_bias: q/k/v/o biases in every block, or none
        _all_or_none(g, n_layers, _QKV_BIASES + ("attn_output.bias",), "a dots1 file with biases needs q/k/v/o "
                     "biases in every block (Dots1Config's attention_bias puts them on all four)", p)
    if arch in _HUNYUAN_ARCHS:
        _no_rope_freqs(g, p, f"RoPE frequency factors in a {arch} file are not supported (HunYuan has none)")
        if o_bias := [n for n in names if n.endswith(".attn_output.bias")]:
            raise ValueError(f"{p}: tensor {o_bias[0]}: llama.cpp's {arch} loads no o_proj bias (a file with one "
                             "does not load there, and a HunYuan checkpoint with attention_bias has one); pyvt does "
                             "not convert a model llama.cpp does not run")
        _all_or_none(g, n_layers, _QKV_BIASES, f"a {arch} file with biases needs q/k/v biases in every block "
                     "(HunYuan's attention_bias puts them on all)", p)
    if arch == "mistral3":
        _no_rope_freqs(g, p, "RoPE frequency factors in a mistral3 file are not supported (Ministral 3's RoPE "
                             "has none)")
        if biases := [n for n in names if n.endswith(".bias")]:  # (llama.cpp's mistral3 loads o / MLP biases)
            raise ValueError(f"{p}: tensor {biases[0]}: Ministral 3 has no biases (Ministral3Config has no "
                             "attention_bias or mlp_bias); pyvt does not convert a mistral3 file with them")
    conv = set(hp.get("conv") or ())
    conv_bias = expert_bias = False
    if arch in _LFM2_ARCHS:
        _no_rope_freqs(g, p, f"llama.cpp's {arch} loads no RoPE frequency factors (Lfm2's RoPE has none)")
        # Lfm2Config's conv_bias: in_proj, conv and out_proj biases in every convolution block, or
        # none (llama.cpp's lfm2 loads none: such a file is Hugging Face's model, not llama.cpp's)
        conv_bias = any(f"blk.{i}.{t}" in g.tensors for i in conv for t in _LFM2_CONV_BIASES)
        if conv_bias and (miss := [f"blk.{i}.{t}" for i in sorted(conv) for t in _LFM2_CONV_BIASES
                                   if f"blk.{i}.{t}" not in g.tensors]):
            raise ValueError(f"{p}: missing tensor {miss[0]}: an {arch} file with convolution biases needs in_proj, "
                             "conv and out_proj biases in every convolution block (Lfm2Config's conv_bias puts them "
                             "on all three)")
        if moe:  # Lfm2MoeConfig's use_expert_bias: exp_probs_b in every MoE block, or none (llama.cpp needs it)
            moe_blocks = [i for i in range(moe["lead"], n_layers) if f"blk.{i}.ffn_gate_inp.weight" in g.tensors]
            expert_bias = any(f"blk.{i}.{_EXP_PROBS_B}" in g.tensors for i in moe_blocks)
            if expert_bias and (miss := [i for i in moe_blocks if f"blk.{i}.{_EXP_PROBS_B}" not in g.tensors]):
                raise ValueError(f"{p}: missing tensor blk.{miss[0]}.{_EXP_PROBS_B}: an lfm2moe file with the "
                                 "router's expert bias needs it in every MoE block (Lfm2MoeConfig's "
                                 "use_expert_bias)")
    if arch in _MLA_ARCHS:
        _no_rope_freqs(g, p, f"llama.cpp's {arch} loads no RoPE frequency factors")
        a = _mla_arch(hp)  # (its q and kv_b tensors as the file's keys say)
    if arch == "mistral4":
        if bias := [n for n in names if n.endswith(_EXP_PROBS_B)]:  # (llama.cpp's loader takes one if there)
            raise ValueError(f"{p}: tensor {bias[0]}: Mistral 4's router has no correction bias (llama.cpp would "
                             "choose on score + bias); pyvt does not convert such a file")
        # (the experts' gate and up: fused, as llama.cpp's converter writes them, or apart; one way for all)
        hp["gate_up_exps"] = f"blk.{moe['lead']}.{_GATE_UP_EXPS}" in g.tensors
    if arch == "hy_v3":
        _no_rope_freqs(g, p, "RoPE frequency factors in a hy_v3 file are not supported (HY-V3's RoPE has none)")
        if biases := [n for n in names if n.endswith(".bias") and not n.endswith(_EXP_PROBS_B)]:
            raise ValueError(f"{p}: tensor {biases[0]}: hy_v3 files with biases are not supported (llama.cpp's hy_v3 "
                             "adds only q/k/v's; HYV3Config's attention_bias puts one on o_proj too)")
        # (llama.cpp: a block is MoE when it has ffn_gate_inp; HY-V3's mlp_layer_types, dense ones first)
        routed = [i for i in range(n_layers) if f"blk.{i}.ffn_gate_inp.weight" in g.tensors]
        dense_after = sorted(set(range(routed[0] if routed else 0, n_layers)) - set(routed))
        if not routed or dense_after:
            i = dense_after[0] if routed else n_layers - 1
            raise ValueError(f"{p}: missing tensor blk.{i}.ffn_gate_inp.weight: hy_v3 block {i} would be dense "
                             + ("after a mixture-of-experts block; pyvt converts hy_v3 files whose dense blocks come "
                                "first" if routed else "like every other, in a file with expert_count experts"))
        moe["lead"] = routed[0]
    lead = moe.get("lead", 0)  # (GLM-4 MoE, dots1, DeepSeek: the first blocks dense)
    block_has = (set(_block_tensors(a, bool(moe), "ffn_shexp" in moe)) | set(a.optional)
                 | (set(_block_tensors(a, False, False)) if lead else set()) | ({_GATE_UP_EXPS} if hp.get("gate_up_exps")
                                                                                 else set()))
    unknown = [n for n in names if n not in _SKIPPED and n not in factors and not _global_name(n, arch)
               and not ((m := _BLOCK_RE.match(n)) and m.group(2) in block_has)]
    if unknown:
        raise ValueError(f"{p}: tensors a {arch} model does not have: {', '.join(unknown[:10])}"
                         + (f" (and {len(unknown) - 10} more)" if len(unknown) > 10 else ""))
    if "token_embd.weight" not in g.tensors:
        raise ValueError(f"{p}: missing tensor token_embd.weight")
    vocab_size = g.tensors["token_embd.weight"].shape[0]
    # Before anything is built per block: a block_count the tensors cannot back (a lying
    # header says 4 million blocks) is refused, naming the first missing block.
    present = {int(m.group(1)) for n in names if (m := _BLOCK_RE.match(n))}
    if n_layers > len(present):
        first = min(set(range(len(present) + 1)) - present)
        raise ValueError(f"{p}: {arch}.block_count = {n_layers}, but the file has tensors for "
                         f"{len(present)} blocks (none for blk.{first})")
    # (LFM2's final norm is token_embd_norm: _LFM2_GLOBAL_NAMES)
    expected = {"token_embd.weight": (vocab_size, hidden),
                ("token_embd_norm.weight" if arch in _LFM2_ARCHS else "output_norm.weight"): (hidden,)}
    if arch == "olmo":  # (OLMo 1's final LayerNorm has no weights either)
        del expected["output_norm.weight"]
    if arch == "phi2":  # (its final LayerNorm's bias and lm_head's)
        expected.update({"output_norm.bias": (hidden,), "output.bias": (vocab_size,)})
    if arch in ("stablelm", "starcoder2", "nemotron", "jais2", "gptneox", "falcon", "bloom") + _LEARNED_POS_ARCHS:
        expected["output_norm.bias"] = (hidden,)
    if arch == "bloom":  # (the embeddings' LayerNorm, word_embeddings_layernorm: llama.cpp requires it)
        expected.update({"token_embd_norm.weight": (hidden,), "token_embd_norm.bias": (hidden,)})
    if arch in _LEARNED_POS_ARCHS:  # (llama.cpp: [context_length, hidden])
        expected["position_embd.weight"] = (hp["ctx"], hidden)
    shapes = {
        "attn_norm.weight": (hidden,), "ffn_norm.weight": (hidden,),
        "attn_q.weight": (n_head * head_dim, hidden), "attn_k.weight": (n_kv * head_dim, hidden),
        "attn_v.weight": (n_kv * head_dim, hidden), "attn_output.weight": (hidden, n_head * head_dim),
        "attn_qkv.weight": ((n_head + 2 * n_kv) * head_dim, hidden), "attn_qkv.bias": ((n_head + 2 * n_kv) * head_dim,),
        "ffn_gate.weight": (ffn, hidden), "ffn_up.weight": (2 * ffn if (a.fused and a.gated) or a.gate_up else ffn, hidden),
        "ffn_down.weight": (hidden, ffn),
        "attn_q.bias": (n_head * head_dim,), "attn_k.bias": (n_kv * head_dim,), "attn_v.bias": (n_kv * head_dim,),
        "attn_output.bias": (hidden,),
        # (OLMo 2's q/k norms span the whole projection)
        "attn_q_norm.weight": (n_head * head_dim if a.qk_full else head_dim,),
        "attn_k_norm.weight": (n_kv * head_dim if a.qk_full else head_dim,),
        "post_attention_norm.weight": (hidden,), "post_ffw_norm.weight": (hidden,),
        "attn_sinks.weight": (n_head,),
        "attn_gate.weight": (n_head * head_dim, hidden),  # (AFMoE: one gate per output dim)
        "attn_norm.bias": (hidden,), "ffn_up.bias": (ffn,), "ffn_down.bias": (hidden,),  # (phi2)
        "ffn_norm.bias": (hidden,),  # (stablelm)
        "attn_norm_2.weight": (hidden,), "attn_norm_2.bias": (hidden,),  # (falcon-40b's ln_attn)
        # (LFM2's short convolution: [B | C | x] rows, the depthwise kernel as ggml's [hidden, l_cache])
        "shortconv.in_proj.weight": (3 * hidden, hidden), "shortconv.conv.weight": (hidden, hp.get("l_cache")),
        "shortconv.out_proj.weight": (hidden, hidden), "shortconv.in_proj.bias": (3 * hidden,),
        "shortconv.conv.bias": (hidden,), "shortconv.out_proj.bias": (hidden,),
    }
    if hp.get("mla"):  # (DeepSeek's latent attention; attn_k_b / attn_v_b per head, as ggml's [nope, kv_lora, heads] ...)
        m = hp.get("mla")
        ql, R, nope, rope, v = m["q_lora"], m["kv_lora"], m["nope"], m["rope"], m["v"]
        shapes.update({"attn_q_a.weight": (ql, hidden), "attn_q_a_norm.weight": (ql,),
                       "attn_q_b.weight": (n_head * (nope + rope), ql), "attn_kv_a_mqa.weight": (R + rope, hidden),
                       "attn_kv_a_norm.weight": (R,), "attn_kv_b.weight": (n_head * (nope + v), R),
                       "attn_k_b.weight": (n_head, R, nope), "attn_v_b.weight": (n_head, v, R),
                       "attn_output.weight": (hidden, n_head * v)})
    if moe:
        E, fe = moe["n_expert"], moe["ffn_exp"]
        shapes.update({"ffn_gate_inp.weight": (E, hidden), "ffn_gate_exps.weight": (E, fe, hidden),
                       "ffn_up_exps.weight": (E, fe, hidden), "ffn_down_exps.weight": (E, hidden, fe),
                       _EXP_PROBS_B: (E,)})
        shapes.update({"ffn_gate_inp.bias": (E,), "ffn_gate_exps.bias": (E, fe), "ffn_up_exps.bias": (E, fe),
                       "ffn_down_exps.bias": (E, hidden)})  # (gpt-oss)
        if "ffn_shexp" in moe:
            fs = moe["ffn_shexp"]
            shapes.update({"ffn_gate_inp_shexp.weight": (hidden,), "ffn_gate_shexp.weight": (fs, hidden),
                           "ffn_up_shexp.weight": (fs, hidden), "ffn_down_shexp.weight": (hidden, fs)})
    for i in range(n_layers):
        b = f"blk.{i}."
        if arch in _LFM2_ARCHS:  # (a convolution block: its shortconv tensors instead of the attention's)
            dense = ("ffn_gate.weight", "ffn_up.weight", "ffn_down.weight")
            kinds = (("attn_norm.weight", "ffn_norm.weight") + dense + _LFM2_CONV
                     + (_LFM2_CONV_BIASES if conv_bias else ()) if i in conv else _block_tensors(a, False, False))
            if moe and i >= lead:  # (LFM2-MoE: the router, its bias when use_expert_bias, the experts)
                kinds = (tuple(t for t in kinds if t not in dense) + ("ffn_gate_inp.weight",) + _EXPERTS
                         + ((_EXP_PROBS_B,) if expert_bias else ()))
            expected.update({b + t: shapes[t] for t in kinds})
            continue
        expected.update({b + t: shapes[t] for t in _block_tensors(a, bool(moe) and i >= lead, "ffn_shexp" in moe)})
        expected.update({b + t: shapes[t] for t in a.optional if b + t in g.tensors})
        if hp.get("gate_up_exps") and i >= lead:  # (Mistral 4's fused gate|up experts instead of the two)
            for t in _EXPERTS[:2]:
                del expected[b + t]
            expected[b + _GATE_UP_EXPS] = (moe["n_expert"], 2 * moe["ffn_exp"], hidden)
    if arch in _LFM2_ARCHS and (stray := [n for n in names if (m := _BLOCK_RE.match(n))
                                          and int(m.group(1)) < n_layers and n not in expected]):
        i = int(_BLOCK_RE.match(stray[0]).group(1))
        if moe and stray[0].split(".", 2)[2] in ("ffn_gate_inp.weight", _EXP_PROBS_B, "ffn_gate.weight",
                                                        "ffn_up.weight", "ffn_down.weight") + _EXPERTS:
            raise ValueError(f"{p}: tensor {stray[0]}: block {i} is "
                             + ("dense" if i < lead else "a mixture of experts")
                             + f" (lfm2moe.leading_dense_block_count = {lead}), and an LFM2-MoE block has either "
                             "the dense MLP or the router and experts")
        raise ValueError(f"{p}: tensor {stray[0]}: block {i} "
                         + (f"convolves ({arch}.attention.head_count_kv[{i}] = 0)" if i in conv else
                            f"attends ({arch}.attention.head_count_kv[{i}] = {n_kv})")
                         + ", and an LFM2 block has either attention or convolution tensors")
    missing = [n for n in expected if n not in g.tensors]
    if missing:
        raise ValueError(f"{p}: missing tensors: {', '.join(missing[:10])}"
                         + (f" (and {len(missing) - 10} more)" if len(missing) > 10 else ""))
    for n, shape in expected.items():
        if g.tensors[n].shape != shape and not (arch == "ernie4_5-moe" and n.endswith(_EXP_PROBS_B)
                                                and g.tensors[n].shape == (1,) + shape):  # (its [1, E] as HF's)
            raise ValueError(f"{p}: tensor {n} has shape {list(g.tensors[n].shape)}, "
                             f"expected {list(shape)}")
    tied = "output.weight" not in g.tensors
    if not tied and g.tensors["output.weight"].shape != (vocab_size, hidden):
        raise ValueError(f"{p}: tensor output.weight has shape "
                         f"{list(g.tensors['output.weight'].shape)}, expected {[vocab_size, hidden]}")
    blocks = {m.group(1) for n in names if (m := _BLOCK_RE.match(n))}
    if any(int(b) >= n_layers for b in blocks):
        raise ValueError(f"{p}: tensors for more blocks than {arch}.block_count = {n_layers}")
    meta_vocab = meta.get(f"{arch}.vocab_size")
    if meta_vocab is not None and (isinstance(meta_vocab, bool) or not isinstance(meta_vocab, (int, np.integer))
                                   or int(meta_vocab) != vocab_size):
        raise ValueError(f"{p}: {arch}.vocab_size {meta_vocab} but token_embd.weight has {vocab_size} rows")
    return vocab_size, tied


def _rope_scaling(g: GGUFFile, meta: dict, hp: dict, p: str) -> dict | None:
    """config.json's rope_scaling: Llama-3's from the rope_freqs tensor, or linear / yarn
    from the metadata; None without scaling."""
    a = hp["arch"]
    if a == "exaone":
        return _exaone_rope(g, meta, hp, p)
    if "rope_freqs.weight" in g.tensors:
        return _infer_llama3_rope_scaling(g.dequantize("rope_freqs.weight"), hp["theta"], hp["head_dim"], p)
    if a in _NO_ROPE_ARCHS:  # (no RoPE: llama.cpp reads no scaling)
        return None
    if a == "deepseek2":
        return _mla_rope_scaling(meta, hp, p)
    if a == "mistral3":
        return _mistral3_rope(meta, hp, p)
    if a == "mistral4":
        return _mistral4_rope(meta, hp, p)
    if a == "minicpm3":
        return _minicpm3_rope(g, meta, hp, p)
    if a in ("nemotron", "gptneox", "falcon") + _HUNYUAN_ARCHS:
        return _linear_rope_scaling(meta, a, p)
    if a == "jais2":  # (llama.cpp's generic scaling keys; Jais2Model writes a linear or YaRN one from rope_parameters)
        return _linear_rope_scaling(meta, a, p, "llama.cpp's jais2 would rotate with its YaRN (or other) scaling; "
                                                "pyvt converts jais2 files with linear scaling or none")
    if all(n in g.tensors for n in _ROPE_FACTORS):  # phi3 (checked): LongRoPE
        out = _longrope_factors(g, meta, hp, p)
        if f"{a}.rope.scaling.attn_factor" in meta:
            out["attention_factor"] = _f32(_real(meta, f"{a}.rope.scaling.attn_factor", 1.0, 0.0, 1e6, p))
        return out
    kind = meta_value(meta, f"{a}.rope.scaling.type", "string", p)
    if kind in ("linear", "yarn"):
        factor = _real(meta, f"{a}.rope.scaling.factor", 1.0, 0.0, 1e6, p)
        if factor != 1.0:
            out = {"rope_type": kind, "factor": factor}
            if f"{a}.rope.scaling.original_context_length" in meta:
                orig = meta[f"{a}.rope.scaling.original_context_length"]
                if isinstance(orig, bool) or not isinstance(orig, (int, np.integer)) or not 0 < int(orig) <= 1 << 24:
                    raise ValueError(f"{p}: {a}.rope.scaling.original_context_length = {orig!r:.60} is not a "
                                     "positive integer <= 2^24")
                out["original_max_position_embeddings"] = int(orig)
            return out
    return None



def _exaone_rope(g: GGUFFile, meta: dict, hp: dict, p: str) -> dict | None:
    """An exaone file's RoPE as llama.cpp computes it (src/models/exaone.cpp: NEOX rope over the
    whole head, each frequency divided by rope_freqs, positions by the linear factor): llama3
    scaling from rope_freqs (what ExaoneModel writes for EXAONE 3.5's rope_scaling), else linear
    or none (_linear_rope_scaling). Both at once (llama.cpp would apply the two, ExaoneConfig has
    one rope_type) is refused naming the factor's key."""
    linear = _linear_rope_scaling(meta, "exaone", p, "llama.cpp's converter writes exaone files with llama3 "
                                  "factors (rope_freqs), linear scaling or none; pyvt converts those only")
    if "rope_freqs.weight" not in g.tensors:
        return linear
    llama3 = _infer_llama3_rope_scaling(g.dequantize("rope_freqs.weight"), hp["theta"], hp["head_dim"], p)
    if linear and llama3:
        raise ValueError(f"{p}: exaone.rope.scaling.factor = {linear['factor']!r} beside rope_freqs.weight: llama.cpp "
                         "then applies both, which ExaoneConfig's one rope_type cannot express")
    return llama3 or linear


def _refuse_mla_attn_factor(meta: dict, a: str, p: str, who: str) -> None:
    """rope.scaling.attn_factor other than 1 in a latent-attention file (deepseek2, mistral4):
    llama.cpp scales the rotated dims by it and the scores by its square, which `who` cannot
    express -> refused naming the key."""
    if _real(meta, f"{a}.rope.scaling.attn_factor", 1.0, 0.0, 1e6, p) != 1.0:
        raise ValueError(f"{p}: {a}.rope.scaling.attn_factor = {meta[f'{a}.rope.scaling.attn_factor']}: llama.cpp's "
                         f"{a} scales the rotated dims by it and the scores by its square, which {who} cannot express")


def _mla_rope_scaling(meta: dict, hp: dict, p: str) -> dict | None:
    """A deepseek2 file's RoPE scaling as llama.cpp computes it (src/models/deepseek2.cpp,
    llama_context's YaRN factors): none, or yarn by rope.scaling.factor from
    rope.scaling.original_context_length (absent: context_length) with beta_fast 32 / beta_slow 1
    (deepseek2 reads no other) and mscale = mscale_all_dim = rope.scaling.yarn_log_multiplier / 0.1
    (its converter writes 0.1 · mscale_all_dim; llama.cpp then rotates unscaled and multiplies the
    scores by yarn_get_mscale(factor, mscale_all_dim)², as transformers' DeepSeek does with mscale
    equal to mscale_all_dim, DeepSeek's and Kimi's configs). What transformers' DeepSeek cannot
    compute is refused naming the key: linear scaling and YaRN without yarn_log_multiplier (llama.cpp
    then scales the scores by (1 + 0.1 ln factor)² on top), rope.scaling.attn_factor other than 1,
    attention.temperature_scale (Llama 4's temperature tuning, Mistral Large 3's)."""
    a = "deepseek2"
    if meta.get(f"{a}.attention.temperature_scale"):
        raise ValueError(f"{p}: {a}.attention.temperature_scale: llama.cpp's temperature tuning of the queries "
                         "(Mistral Large 3) is not in transformers' DeepSeek; pyvt does not convert it")
    _refuse_mla_attn_factor(meta, a, p, "transformers' DeepSeek")
    kind = meta_value(meta, f"{a}.rope.scaling.type", "string", p, "linear")
    factor = _real(meta, f"{a}.rope.scaling.factor", 1.0, 0.0, 1e6, p)
    if kind == "none" or factor == 1.0:
        return None
    if kind != "yarn":
        raise ValueError(f"{p}: {a}.rope.scaling.type = {kind!r:.40}: llama.cpp's {a} then scales the scores by "
                         "(1 + 0.1 ln factor)² as well, which transformers' DeepSeek does not; pyvt converts yarn only")
    if f"{a}.rope.scaling.yarn_log_multiplier" not in meta:
        raise ValueError(f"{p}: missing metadata {a}.rope.scaling.yarn_log_multiplier: llama.cpp's {a} then scales "
                         "the rotated dims and the scores by YaRN's mscale both, which transformers' DeepSeek "
                         "cannot express")
    log_mul = _real(meta, f"{a}.rope.scaling.yarn_log_multiplier", 0.1, 0.0, 1e6, p)
    mscale = _f32(np.float32(log_mul) / np.float32(0.1))  # (llama.cpp's rope_yarn_log_mul /= 0.1f)
    orig = meta.get(f"{a}.rope.scaling.original_context_length", hp["ctx"])
    if isinstance(orig, bool) or not isinstance(orig, (int, np.integer)) or not 0 < int(orig) <= 1 << 24:
        raise ValueError(f"{p}: {a}.rope.scaling.original_context_length = {orig!r:.60} is not a positive "
                         "integer <= 2^24")
    return {"rope_type": "yarn", "factor": _f32(factor), "original_max_position_embeddings": int(orig),
            "mscale": mscale, "mscale_all_dim": mscale, "beta_fast": 32.0, "beta_slow": 1.0}


def _orig_context(meta: dict, a: str, hp: dict, p: str) -> int:
    """rope.scaling.original_context_length as llama.cpp reads it (absent: context_length)."""
    orig = meta.get(f"{a}.rope.scaling.original_context_length", hp["ctx"])
    if isinstance(orig, bool) or not isinstance(orig, (int, np.integer)) or not 0 < int(orig) <= 1 << 24:
        raise ValueError(f"{p}: {a}.rope.scaling.original_context_length = {orig!r:.60} is not a positive "
                         "integer <= 2^24")
    return int(orig)


def _mistral3_rope(meta: dict, hp: dict, p: str) -> dict:
    """A mistral3 file's RoPE and query scale as llama.cpp computes them (src/models/mistral3.cpp,
    llama_context's YaRN factors) -> Ministral3Config's rope_parameters. rope.scaling.type (absent:
    linear, llama.cpp's default) none, linear or yarn by rope.scaling.factor (absent or 1: none);
    YaRN from rope.scaling.original_context_length (absent: context_length) with
    rope.scaling.yarn_beta_fast / _slow (absent: 32 / 1) and the rotation's attention factor
    mscale(factor, 1) / mscale(factor, yarn_log_multiplier) (llama.cpp assumes mscale 1; the
    converter writes mscale_all_dim as yarn_log_multiplier; absent or 0: mscale(factor, 1), as
    transformers without the two fields). Each query, after RoPE, times 1 + temperature_scale ·
    log(1 + floor(pos / original_context_length)) (llama.cpp's n_ctx_orig_yarn, whatever the
    scaling type: llama_4_scaling_beta and original_max_position_embeddings; absent or 0: no
    scale, beta 0). Refused naming the key: another scaling type, rope.scaling.attn_factor other
    than 1 (llama.cpp then scales the rotated dims by it), rope.scaling.yarn_attn_factor (which
    llama.cpp's mistral3 ignores and transformers would apply), a negative temperature_scale."""
    a = "mistral3"
    if _real(meta, f"{a}.rope.scaling.attn_factor", 1.0, 0.0, 1e6, p) != 1.0:
        raise ValueError(f"{p}: {a}.rope.scaling.attn_factor = {meta[f'{a}.rope.scaling.attn_factor']}: llama.cpp's "
                         f"{a} scales the rotated dims by it, which Ministral3Config cannot express")
    if f"{a}.rope.scaling.yarn_attn_factor" in meta:
        raise ValueError(f"{p}: {a}.rope.scaling.yarn_attn_factor = {meta[f'{a}.rope.scaling.yarn_attn_factor']!r:.40}: "
                         f"llama.cpp's {a} ignores it and transformers would apply it (attention_factor); pyvt does "
                         "not guess which is meant")
    orig = _orig_context(meta, a, hp, p)
    kind = meta_value(meta, f"{a}.rope.scaling.type", "string", p, "linear")
    factor = _real(meta, f"{a}.rope.scaling.factor", 1.0, 0.0, 1e6, p)
    out: dict = {"rope_type": "default", "rope_theta": hp["theta"]}
    if kind not in ("none", "linear", "yarn"):
        raise ValueError(f"{p}: {a}.rope.scaling.type = {kind!r:.40}: pyvt converts mistral3 files with yarn, linear "
                         "or no scaling")
    if kind == "linear" and factor != 1.0:
        out.update(rope_type="linear", factor=_f32(factor))
    elif kind == "yarn" and factor != 1.0:
        out.update(rope_type="yarn", factor=_f32(factor), original_max_position_embeddings=orig,
                   beta_fast=_f32(_real(meta, f"{a}.rope.scaling.yarn_beta_fast", 32.0, 0.0, 1e6, p)),
                   beta_slow=_f32(_real(meta, f"{a}.rope.scaling.yarn_beta_slow", 1.0, 0.0, 1e6, p)))
        log_mul = _real(meta, f"{a}.rope.scaling.yarn_log_multiplier", 0.0, -1e6, 1e6, p, open_lo=False)
        if log_mul < 0:
            raise ValueError(f"{p}: {a}.rope.scaling.yarn_log_multiplier = {log_mul!r} is negative "
                             "(Ministral 3's mscale_all_dim)")
        if log_mul:
            out.update(mscale=1.0, mscale_all_dim=_f32(log_mul))
    beta = _real(meta, f"{a}.attention.temperature_scale", 0.0, -1e6, 1e6, p, open_lo=False)
    if beta < 0:
        raise ValueError(f"{p}: {a}.attention.temperature_scale = {beta!r}: a negative query scale is not one "
                         "Ministral 3 is released with; pyvt converts 0 or more")
    out.update(llama_4_scaling_beta=_f32(beta) if beta else 0.0, original_max_position_embeddings=orig)
    return out


def _longrope_factors(g: GGUFFile, meta: dict, hp: dict, p: str) -> dict:
    """A phi3 / minicpm3 file's LongRoPE (its rope_factors_long / _short tensors, checked in
    _check_tensors): rope_type longrope, long_factor / short_factor (finite positive) and
    original_max_position_embeddings, llama.cpp's n_ctx_orig_yarn — rope.scaling.
    original_context_length, absent: context_length (llama.cpp then takes the short factors up
    to the context it was trained for)."""
    a = hp["arch"]
    out = {"rope_type": "longrope"}
    for n, key in zip(_ROPE_FACTORS, ("long_factor", "short_factor")):
        f = np.asarray(g.dequantize(n), np.float64).ravel()
        if not (np.isfinite(f).all() and (f > 0).all()):
            raise ValueError(f"{p}: tensor {n} has entries that are not finite positive numbers")
        out[key] = [_f32(v) for v in f]
    orig = meta.get(f"{a}.rope.scaling.original_context_length", hp["ctx"])
    if isinstance(orig, bool) or not isinstance(orig, (int, np.integer)) or not 0 < int(orig) <= 1 << 24:
        raise ValueError(f"{p}: {a}.rope.scaling.original_context_length = {orig!r:.60} is not a "
                         "positive integer <= 2^24")
    out["original_max_position_embeddings"] = int(orig)
    return out


def _minicpm3_rope(g: GGUFFile, meta: dict, hp: dict, p: str) -> dict | None:
    """A minicpm3 file's RoPE as llama.cpp computes it (src/models/minicpm3.cpp, NEOX rope over
    the rope dims of q and k_pe) -> MiniCPM3Config's rope_parameters scaling: none, or LongRoPE
    from rope_factors_long / _short (_longrope_factors; llama.cpp's converter writes them, and
    no original_context_length, from MiniCPM3-4B's longrope config) with attention_factor
    rope.scaling.attn_factor (absent: 1 — llama.cpp computes no other, where transformers would
    derive one from the two lengths). Refused naming the key: yarn (llama.cpp's YaRN ramp, which
    MiniCPM3's LongRoPE is not), a rope.scaling.factor other than 1 (llama.cpp's linear
    scaling on top), an attn_factor other than 1 without the factors (the rotated dims scaled,
    which a default RoPE cannot say)."""
    a = "minicpm3"
    kind = meta_value(meta, f"{a}.rope.scaling.type", "string", p, "linear")
    if kind == "yarn":
        raise ValueError(f"{p}: {a}.rope.scaling.type = 'yarn': llama.cpp's {a} then rotates with YaRN's ramp, "
                         "which MiniCPM3Config's RoPE (default or longrope) cannot express")
    factor = _real(meta, f"{a}.rope.scaling.factor", 1.0, 0.0, 1e6, p, open_lo=False) or 1.0
    if kind != "none" and factor != 1.0:
        raise ValueError(f"{p}: {a}.rope.scaling.factor = {factor!r}: llama.cpp's {a} then divides every "
                         "position by it, which MiniCPM3Config's RoPE (default or longrope) cannot express")
    attn = _f32(_real(meta, f"{a}.rope.scaling.attn_factor", 1.0, 0.0, 1e6, p))
    if not all(n in g.tensors for n in _ROPE_FACTORS):
        if attn != 1.0:
            raise ValueError(f"{p}: {a}.rope.scaling.attn_factor = {attn!r} without rope_factors_long / "
                             "rope_factors_short: llama.cpp scales the rotated dims by it, which MiniCPM3Config's "
                             "default RoPE cannot express")
        return None
    return dict(_longrope_factors(g, meta, hp, p), attention_factor=attn)


def _mistral4_rope(meta: dict, hp: dict, p: str) -> dict:
    """A mistral4 file's RoPE and query scale as llama.cpp computes them (deepseek2's graph run as
    mistral4, llama_context's YaRN factors) -> Mistral4Config's rope_parameters. Scaling none, or
    yarn by rope.scaling.factor f from rope.scaling.original_context_length (absent:
    context_length), betas 32 / 1 (llama.cpp's deepseek2 loader reads no others). llama.cpp then
    scales every score by mscale(f, 1)² and the rotated dims' by (mscale(f, 1) / mscale(f, m))² on
    top, m = yarn_log_multiplier / 0.1 (its converter writes 0.1 · mscale_all_dim; absent: 0) —
    unlike deepseek2, whose mscale llama.cpp sets to m —, which transformers computes with
    mscale_all_dim 1 and mscale M such that mscale(f, M) = mscale(f, 1)² / mscale(f, m) (1 when m
    is 1, as Mistral 4's releases). Each query times 1 + attention.temperature_scale · log(1 +
    floor(pos / attention.temperature_length)) (absent or 0: no scale, beta 0), stated as
    llama_4_scaling_beta and original_max_position_embeddings, which Mistral 4 also takes as
    YaRN's original length. partial_rotary_factor the rope dims' share of the q·k head. Refused
    naming the key: linear or other scaling (llama.cpp then scales the scores by mscale(f, 1)²
    without YaRN), rope.scaling.attn_factor other than 1, temperature_scale without
    temperature_length (llama.cpp fails on it) or negative, a temperature_length other than
    YaRN's original length (transformers has one for both)."""
    a, m = "mistral4", hp["mla"]
    _refuse_mla_attn_factor(meta, a, p, "Mistral4Config")
    kind = meta_value(meta, f"{a}.rope.scaling.type", "string", p, "linear")
    factor = _real(meta, f"{a}.rope.scaling.factor", 1.0, 0.0, 1e6, p)
    orig = _orig_context(meta, a, hp, p)
    out: dict = {"rope_type": "default", "rope_theta": hp["theta"]}
    yarn = kind != "none" and factor != 1.0
    if yarn and kind != "yarn":
        raise ValueError(f"{p}: {a}.rope.scaling.type = {kind!r:.40}: llama.cpp's {a} then scales the scores by "
                         "(1 + 0.1 ln factor)² without YaRN, which Mistral4Config cannot express; pyvt converts yarn "
                         "or none")
    if yarn:
        log_mul = _real(meta, f"{a}.rope.scaling.yarn_log_multiplier", 0.0, 0.0, 1e6, p, open_lo=False)
        mall = float(np.float32(log_mul) / np.float32(0.1))  # (llama.cpp's rope_yarn_log_mul /= 0.1f)
        f = float(np.float32(factor))
        lnf = math.log(f)
        one = 1.0 + 0.1 * lnf
        mscale = 1.0 if _f32(mall) == 1.0 else (one * one / (1.0 + 0.1 * mall * lnf) - 1.0) / (0.1 * lnf)
        if not mscale > 0:  # (transformers then scales the rotated dims by mscale(f) alone)
            raise ValueError(f"{p}: {a}.rope.scaling.yarn_log_multiplier = {log_mul!r}: llama.cpp's {a} then scales "
                             "the rotated dims' scores by less than transformers' YaRN can")
        out.update(rope_type="yarn", factor=_f32(factor), original_max_position_embeddings=orig, beta_fast=32.0,
                   beta_slow=1.0, mscale=mscale, mscale_all_dim=1.0)
    beta = _real(meta, f"{a}.attention.temperature_scale", 0.0, -1e6, 1e6, p, open_lo=False)
    if beta < 0:
        raise ValueError(f"{p}: {a}.attention.temperature_scale = {beta!r}: a negative query scale is not one "
                         "Mistral 4 is released with; pyvt converts 0 or more")
    floor = orig
    if beta:
        length = meta_value(meta, f"{a}.attention.temperature_length", "int", p, 0)
        if length <= 0:
            raise ValueError(f"{p}: " + (f"missing metadata {a}.attention.temperature_length" if length == 0 else
                                         f"{a}.attention.temperature_length = {length} is not positive")
                             + f" (the query scale's floor; llama.cpp's {a} fails without it)")
        if yarn and length != orig:
            raise ValueError(f"{p}: {a}.attention.temperature_length = {length} differs from YaRN's "
                             f"rope.scaling.original_context_length = {orig}: Mistral4Config has one "
                             "original_max_position_embeddings for both")
        floor = length
    out.update(llama_4_scaling_beta=_f32(beta) if beta else 0.0, original_max_position_embeddings=floor,
               partial_rotary_factor=m["rope"] / (m["nope"] + m["rope"]))
    return out


def _heads_span_hidden(p, arch: str, n_head: int, head_dim: int, hidden: int, why: str) -> None:
    """Refuses a GGUF whose heads do not span its hidden size (q and o [hidden, hidden])."""
    if n_head * head_dim != hidden:
        raise ValueError(f"{p}: {arch}.attention.key_length = {head_dim}: {n_head} heads of it are not "
                         f"embedding_length {hidden} ({why})")


def _multi_head_only(p, arch: str, n_kv: int, n_head: int, family: str, config_class: str) -> None:
    """Refuses a GGUF whose KV heads are not its heads, for a family whose config class has
    multi-head attention only (llama.cpp would group the heads)."""
    if n_kv != n_head:
        raise ValueError(f"{p}: {arch}.attention.head_count_kv = {n_kv}: {family}'s attention is multi-head "
                         f"({n_head} KV heads, one per head); {config_class} cannot express grouped-query "
                         "attention, which llama.cpp would compute")


def _mlp_of_4_hidden(p, arch: str, ffn: int, hidden: int, family: str, why: str) -> None:
    """Refuses a GGUF whose MLP is not 4 · hidden wide, for a family whose width is fixed so."""
    if ffn != 4 * hidden:
        raise ValueError(f"{p}: {arch}.feed_forward_length = {ffn}: {family}'s MLP is 4 · embedding_length = "
                         f"{4 * hidden} wide; {why}")


def _need_metadata(p, meta, key: str, arch: str) -> None:
    if key not in meta:
        raise ValueError(f"{p}: missing metadata {key} (llama.cpp's {arch} needs it)")

def _linear_rope_scaling(meta: dict, arch: str, p: str, only: str = "") -> dict | None:
    """A nemotron / gptneox / falcon / hunyuan-moe file's RoPE scaling as llama.cpp reads it: rope.scaling.type (absent:
    linear) none, or linear by rope.scaling.factor (absent or 1: none) — what llama.cpp's
    converter writes for NemotronConfig's rope factor (for GPT-NeoX and Falcon it writes no scaling); any
    other type is refused naming the key."""
    kind = meta_value(meta, f"{arch}.rope.scaling.type", "string", p, "linear")
    if kind == "none":
        return None
    if kind != "linear":
        raise ValueError(f"{p}: {arch}.rope.scaling.type = {kind!r:.40}: "
                         + (only or f"llama.cpp's converter writes {arch} files with linear scaling or none; "
                            "pyvt converts those only"))
    factor = _real(meta, f"{arch}.rope.scaling.factor", 1.0, 0.0, 1e6, p)
    return {"rope_type": "linear", "factor": factor} if factor != 1.0 else None


def _rotary_factor(rot: int, head_dim: int) -> float:
    """partial_rotary_factor f with int(head_dim · f) == rot (transformers' truncation)."""
    f = rot / head_dim
    while int(head_dim * f) < rot:
        f = math.nextafter(f, 2.0)
    return f


def _hf_configs(g: GGUFFile, meta: dict, hp: dict, vocab_size: int, tied: bool, rope_scaling: dict | None,
                bos_id, torch_dtype: str) -> tuple[dict, dict]:
    """(config.json, generation_config.json)."""
    eos_ids = eos_token_ids(meta, vocab_size, g.path)
    pad_id = meta.get("tokenizer.ggml.padding_token_id")
    pad_id = pad_id if isinstance(pad_id, int) and 0 <= pad_id < vocab_size else None
    eos_value = eos_ids[0] if len(eos_ids) == 1 else (eos_ids or None)
    architecture, model_type = (_MIXTRAL if hp["arch"] == "llama" and hp["moe"]
                                else _mla_arch(hp) if hp.get("mla")
                                else _GRANITEMOE_SHARED if hp["arch"] == "granitemoe" and "ffn_shexp" in hp["moe"]
                                else _ARCHS[hp["arch"]])[:2]
    if hp["arch"] == "phi2":  # PhiConfig: LayerNorm eps, the rotary dims as a factor, gelu_new
        config = {
            "architectures": [architecture], "model_type": model_type, "bos_token_id": bos_id,
            "eos_token_id": eos_value, "hidden_act": "gelu_new", "hidden_size": hp["hidden"],
            "intermediate_size": hp["ffn"], "layer_norm_eps": hp["eps"],
            "max_position_embeddings": hp["ctx"], "num_attention_heads": hp["n_head"],
            "num_hidden_layers": hp["n_layers"], "num_key_value_heads": hp["n_kv"],
            "partial_rotary_factor": _rotary_factor(hp["rope_dim"], hp["head_dim"]), "qk_layernorm": False,
            "rope_theta": hp["theta"], "rope_scaling": rope_scaling, "tie_word_embeddings": tied,
            "torch_dtype": torch_dtype, "use_cache": True, "vocab_size": vocab_size,
            "attention_dropout": 0.0, "embd_pdrop": 0.0, "resid_pdrop": 0.0, "initializer_range": 0.02,
        }
        gen_config = {"bos_token_id": bos_id, "eos_token_id": eos_value}
        if pad_id is not None:
            config["pad_token_id"] = pad_id
            gen_config["pad_token_id"] = pad_id
        return config, gen_config
    if hp["arch"] in _LEARNED_POS_ARCHS or hp["arch"] in ("falcon", "bloom", "mpt"):
        config = (_falcon_config(g, hp, vocab_size, tied, rope_scaling, bos_id, eos_value, torch_dtype)
                  if hp["arch"] == "falcon" else _bloom_config(hp, vocab_size, tied, bos_id, eos_value, torch_dtype)
                  if hp["arch"] == "bloom" else _mpt_config(hp, vocab_size, tied, bos_id, eos_value, torch_dtype)
                  if hp["arch"] == "mpt" else _gpt2_config(hp, vocab_size, tied, bos_id, eos_value, torch_dtype))
        gen_config = {"bos_token_id": bos_id, "eos_token_id": eos_value}
        if pad_id is not None:
            config["pad_token_id"] = pad_id
            gen_config["pad_token_id"] = pad_id
        return config, gen_config
    if hp["arch"] in ("gemma", "gemma2", "gemma3", "phi3"):
        config = _family_config(meta, hp, vocab_size, tied, rope_scaling, bos_id, eos_value, torch_dtype, g.path)
        gen_config = {"bos_token_id": bos_id, "eos_token_id": eos_value}
        if pad_id is not None:
            config["pad_token_id"] = pad_id
            gen_config["pad_token_id"] = pad_id
        return config, gen_config
    config = {
        "architectures": [architecture],
        "model_type": model_type,
        "attention_bias": any(n.endswith("attn_q.bias") for n in g.tensors),
        "attention_dropout": 0.0,
        "bos_token_id": bos_id,
        "eos_token_id": eos_value,
        "head_dim": hp["head_dim"],
        "hidden_act": "silu",
        "hidden_size": hp["hidden"],
        "initializer_range": 0.02,
        "intermediate_size": hp["ffn"],
        "max_position_embeddings": hp["ctx"],
        "mlp_bias": False,
        "num_attention_heads": hp["n_head"],
        "num_hidden_layers": hp["n_layers"],
        "num_key_value_heads": hp["n_kv"],
        "pretraining_tp": 1,
        "rms_norm_eps": hp["eps"],
        "rope_scaling": rope_scaling,
        "rope_theta": hp["theta"],
        "tie_word_embeddings": tied,
        "torch_dtype": torch_dtype,
        "use_cache": True,
        "vocab_size": vocab_size,
    }
    gen_config = {"bos_token_id": bos_id, "eos_token_id": eos_value}
    if hp["arch"] == "minicpm3":  # MiniCPM3Config (_mla_params, _minicpm3_rope, _minicpm3_config)
        _minicpm3_config(config, meta, hp, g.path)
    elif hp["arch"] == "olmo2":  # Olmo2Config; with a sliding window Olmo3Config
        for k in ("mlp_bias", "pretraining_tp"):
            del config[k]
        window = _window(meta, "olmo2.attention.sliding_window", None, g.path)
        if window:
            _olmo3_config(config, meta, hp, window, g.path)
    elif hp["arch"] == "ernie4_5":  # Ernie4_5Config: use_bias false (a file with biases is refused)
        for k in ("mlp_bias", "pretraining_tp", "attention_bias"):
            del config[k]
        config["use_bias"] = False
    elif hp["arch"] == "seed_oss":  # SeedOssConfig: q/k/v biases by attention_bias; llama.cpp has no o or MLP biases
        del config["pretraining_tp"]
        config["attention_out_bias"] = False
    elif hp["arch"] in _COHERE_ARCHS:  # CohereConfig / Cohere2Config
        _cohere_config(config, meta, hp, g.path)
    elif hp["arch"] == "arcee":  # ArceeConfig: relu² (llama.cpp's LLM_FFN_RELU_SQR), no biases (refused)
        del config["pretraining_tp"]
        config["hidden_act"] = "relu2"
    elif hp["arch"] == "apertus":  # ApertusConfig: xIELU, RoPE as rope_parameters
        for k in ("mlp_bias", "pretraining_tp"):
            del config[k]
        # (ApertusConfig fills in llama3 scaling when rope_parameters is absent: the file's RoPE
        # is stated, llama3 from rope_freqs or none, as llama.cpp rotates)
        config.update(hidden_act="xielu", rope_parameters={"rope_type": "default", "rope_theta": hp["theta"],
                                                           **(config["rope_scaling"] or {})})
        del config["rope_scaling"], config["rope_theta"]
    elif hp["arch"] == "nemotron":  # NemotronConfig: LayerNorm1P eps as norm_eps, relu², RoPE as rope_parameters
        for k in ("pretraining_tp", "rms_norm_eps"):
            del config[k]
        config.update(hidden_act="relu2", norm_eps=hp["eps"],
                      mlp_bias=any(n.endswith("ffn_up.bias") for n in g.tensors),
                      rope_parameters={"rope_type": "default", "rope_theta": hp["theta"],
                                       "partial_rotary_factor": _rotary_factor(hp["rope_dim"], hp["head_dim"]),
                                       **(config["rope_scaling"] or {})})
        del config["rope_scaling"], config["rope_theta"]
    elif hp["arch"] == "jais2":  # Jais2Config: LayerNorm eps, relu², every bias (llama.cpp's jais2 needs them)
        for k in ("pretraining_tp", "rms_norm_eps"):
            del config[k]
        config.update(hidden_act="relu2", layer_norm_eps=hp["eps"], attention_bias=True, mlp_bias=True,
                      rope_parameters={"rope_type": "default", "rope_theta": hp["theta"], **(config["rope_scaling"] or {})})
        del config["rope_scaling"], config["rope_theta"]
    elif hp["arch"] == "gptneox":  # GPTNeoXConfig (transformers 5's rope_parameters)
        for k in ("pretraining_tp", "rms_norm_eps", "head_dim", "mlp_bias", "num_key_value_heads"):
            del config[k]
        # llama.cpp's gptneox applies ggml_gelu, the tanh approximation (FastGELU's formula),
        # whatever the checkpoint's hidden_act was (a GGUF does not store it): the folder says so.
        config.update(hidden_act="gelu_fast", layer_norm_eps=hp["eps"], use_parallel_residual=hp["par_res"],
                      attention_bias=True, attention_dropout=0.0, hidden_dropout=0.0,
                      rope_parameters={"rope_type": "default", "rope_theta": hp["theta"],
                                       "partial_rotary_factor": _rotary_factor(hp["rope_dim"], hp["head_dim"]),
                                       **(config["rope_scaling"] or {})})
        del config["rope_scaling"], config["rope_theta"]
    elif hp["arch"] == "exaone":  # ExaoneConfig under the Hub's names (its attribute_map), no biases (refused)
        _exaone_config(config)
    elif hp["arch"] == "exaone4":  # Exaone4Config
        for k in ("mlp_bias", "pretraining_tp", "attention_bias"):
            del config[k]
        _exaone4_config(config, meta, hp, g.path)
    elif hp["arch"] == "glm4":  # Glm4Config: the rotating dims as partial_rotary_factor
        for k in ("mlp_bias", "pretraining_tp"):
            del config[k]
        config["partial_rotary_factor"] = _rotary_factor(hp["rope_dim"], hp["head_dim"])
    elif hp["arch"] in ("granite", "granitemoe"):  # GraniteConfig's multipliers, as llama.cpp applies the keys
        # (no attention.scale: llama.cpp scales scores by 1/sqrt(head_dim), GraniteConfig's default is 1)
        config.update(
            embedding_multiplier=_f32(_real(meta, f"{hp['arch']}.embedding_scale", 1.0, 0.0, 1e30, g.path)),
            attention_multiplier=_f32(_real(meta, f"{hp['arch']}.attention.scale", 1.0 / math.sqrt(hp["head_dim"]),
                                            0.0, 1e30, g.path)),
            residual_multiplier=_f32(_real(meta, f"{hp['arch']}.residual_scale", 1.0, 0.0, 1e30, g.path)),
            logits_scaling=_f32(_real(meta, f"{hp['arch']}.logit_scale", 1.0, 0.0, 1e30, g.path)))
        del config["pretraining_tp"]
        if hp["moe"]:  # GraniteMoeConfig: experts intermediate_size wide, softmax over the top-k
            config.update(num_local_experts=hp["moe"]["n_expert"], num_experts_per_tok=hp["moe"]["n_used"],
                          intermediate_size=hp["moe"]["ffn_exp"])
            if "ffn_shexp" in hp["moe"]:  # GraniteMoeSharedConfig
                config["shared_intermediate_size"] = hp["moe"]["ffn_shexp"]
    elif hp["arch"] == "stablelm":  # StableLmConfig: LayerNorm eps, the rotary dims as a factor
        for k in ("mlp_bias", "pretraining_tp", "attention_bias", "rms_norm_eps", "head_dim"):
            config.pop(k, None)
        config.update(layer_norm_eps=hp["eps"], use_qkv_bias=any(n.endswith("attn_q.bias") for n in g.tensors),
                      partial_rotary_factor=_rotary_factor(hp["rope_dim"], hp["head_dim"]),
                      use_parallel_residual=False, qk_layernorm=False)
    elif hp["arch"] == "starcoder2":  # Starcoder2Config: norm_epsilon, use_bias, a window when stored
        for k in ("mlp_bias", "pretraining_tp", "attention_bias", "rms_norm_eps", "head_dim"):
            config.pop(k, None)
        config.update(norm_epsilon=hp["eps"], use_bias=any(n.endswith("attn_q.bias") for n in g.tensors),
                      hidden_act="gelu_pytorch_tanh",
                      sliding_window=_window(meta, "starcoder2.attention.sliding_window", None, g.path))
    elif hp["arch"] == "smollm3":  # SmolLM3Config: llama.cpp rotates every layer but each 4th
        config.update(no_rope_layers=[int((i + 1) % 4 != 0) for i in range(hp["n_layers"])], no_rope_layer_interval=4,
                      use_sliding_window=False, sliding_window=None)
        del config["pretraining_tp"]
    elif hp["arch"] in _LFM2_ARCHS:
        _lfm2_config(config, g, hp)
    elif hp["arch"] == "mistral3":  # Ministral3Config: no biases, RoPE and the query scale as rope_parameters
        for k in ("mlp_bias", "pretraining_tp", "attention_bias", "rope_theta"):
            del config[k]
        # (llama.cpp's mistral3 attends over every position: a file with a window is refused)
        window = _window(meta, "mistral3.attention.sliding_window", None, g.path)
        if window:
            raise ValueError(f"{g.path}: mistral3.attention.sliding_window = {window}: llama.cpp's mistral3 attends "
                             "over every position whatever the key says, Ministral3Config would slide; pyvt does not "
                             "guess which is meant")
        config.update(rope_parameters=config.pop("rope_scaling"), sliding_window=None)
    elif hp["arch"] == "olmo":  # OlmoConfig: no eps field (1e-5, checked), clip_qkv, no biases (refused)
        for k in ("mlp_bias", "pretraining_tp", "rms_norm_eps", "head_dim"):
            del config[k]
        config.update(clip_qkv=hp["clip"], rope_parameters={"rope_type": "default", "rope_theta": hp["theta"],
                                                            **(config["rope_scaling"] or {})})
        del config["rope_scaling"], config["rope_theta"]
    elif hp["arch"] == "hunyuan-dense":  # HunYuanDenseV1Config: RoPE as rope_parameters (the alpha baked in the base)
        del config["mlp_bias"]
        config.update(rope_parameters={"rope_type": "default", "rope_theta": hp["theta"],
                                       **(config["rope_scaling"] or {})})
        del config["rope_scaling"], config["rope_theta"]
    elif hp["arch"] not in ("llama", "gpt-oss", "stablelm", "starcoder2") + _HUNYUAN_ARCHS + _BIASED_ROUTER_ARCHS:  # Qwen2Config / Qwen3Config fields
        qkv_family = hp["arch"] in ("qwen2", "qwen2moe")
        for k in ("mlp_bias", "pretraining_tp") + (("attention_bias",) if qkv_family else ()):
            del config[k]  # (Qwen2's q/k/v biases are the family's, not a config field)
        config.update(use_sliding_window=False, sliding_window=None, max_window_layers=hp["n_layers"])
    moe = hp["moe"]
    if moe and hp["arch"] == "llama":  # MixtralConfig: the experts are intermediate_size wide
        for k in ("mlp_bias", "pretraining_tp", "attention_bias"):
            del config[k]
        config.update(num_local_experts=moe["n_expert"], num_experts_per_tok=moe["n_used"], sliding_window=None,
                      intermediate_size=moe["ffn_exp"])
    elif moe and hp["arch"] == "olmoe":  # OlmoeConfig: experts intermediate_size wide
        config.update(num_experts=moe["n_expert"], num_experts_per_tok=moe["n_used"], intermediate_size=moe["ffn_exp"],
                      norm_topk_prob=False,
                      clip_qkv=_f32(_real(meta, "olmoe.attention.clamp_kqv", 0.0, 0.0, 1e30, g.path, open_lo=False))
                      or None)
        for k in ("mlp_bias", "pretraining_tp", "use_sliding_window", "sliding_window", "max_window_layers"):
            config.pop(k, None)
    elif moe and hp["arch"] == "gpt-oss":  # GptOssConfig: even layers slide, the clamped SwiGLU's
        # limit 7 and alpha 1.702 (llama.cpp's constants, the gpt-oss configs' values), and YaRN as
        # gpt-oss defines it: its ramp between the correction dims unrounded (truncate false, as
        # the gpt-oss configs say; llama.cpp rounds them: docs/models.md, "GGUF")
        window = _window(meta, "gpt-oss.attention.sliding_window", 128, g.path)
        if config["rope_scaling"] and config["rope_scaling"].get("rope_type") == "yarn":
            config["rope_scaling"] = dict(config["rope_scaling"], beta_fast=32.0, beta_slow=1.0, truncate=False)
        for k in ("mlp_bias", "pretraining_tp"):
            config.pop(k, None)
        config.update(num_local_experts=moe["n_expert"], num_experts_per_tok=moe["n_used"],
                      intermediate_size=moe["ffn_exp"], sliding_window=window, swiglu_limit=7.0, swiglu_alpha=1.702,
                      layer_types=[("sliding_attention" if window and i % 2 == 0 else "full_attention")
                                   for i in range(hp["n_layers"])])
    elif moe and hp["arch"] in _SIGMOID_ROUTER_ARCHS:  # Glm4MoeConfig / Dots1Config (_sigmoid_router)
        for k in ("mlp_bias", "pretraining_tp"):
            del config[k]
        config.update(n_routed_experts=moe["n_expert"], num_experts_per_tok=moe["n_used"],
                      moe_intermediate_size=moe["ffn_exp"], n_shared_experts=moe["n_shared"],
                      first_k_dense_replace=moe["lead"], n_group=moe["n_group"], topk_group=moe["topk_group"],
                      norm_topk_prob=moe["norm"], routed_scaling_factor=moe["scale"])
        if hp["arch"] == "glm4moe":  # the rotating dims as a factor; the NextN blocks are not in the folder
            config.update(partial_rotary_factor=_rotary_factor(hp["rope_dim"], hp["head_dim"]),
                          use_qk_norm=any(n.endswith("attn_q_norm.weight") for n in g.tensors),
                          num_nextn_predict_layers=0)
        else:  # (llama.cpp's dots1 has no sliding window)
            config.update(sliding_window=None, layer_types=["full_attention"] * hp["n_layers"])
    elif moe and hp["arch"] == "deepseek2":
        _deepseek_config(config, hp)
    elif moe and hp["arch"] == "mistral4":  # Mistral4Config (_mla_params, _sigmoid_router, _mistral4_rope)
        m = hp["mla"]
        del config["mlp_bias"]
        config.update(head_dim=m["nope"] + m["rope"], num_key_value_heads=hp["n_head"], q_lora_rank=m["q_lora"] or None,
                      kv_lora_rank=m["kv_lora"], qk_nope_head_dim=m["nope"], qk_rope_head_dim=m["rope"],
                      v_head_dim=m["v"], n_routed_experts=moe["n_expert"], num_experts_per_tok=moe["n_used"],
                      moe_intermediate_size=moe["ffn_exp"], n_shared_experts=moe["n_shared"],
                      first_k_dense_replace=moe["lead"], n_group=moe["n_group"], topk_group=moe["topk_group"],
                      norm_topk_prob=moe["norm"], routed_scaling_factor=moe["scale"], rope_interleave=True,
                      rope_parameters=config.pop("rope_scaling"))
        del config["rope_theta"]
    elif moe and hp["arch"] in ("ernie4_5-moe", "minimax-m2", "exaone-moe"):
        _biased_router_config(config, meta, hp, g.path)
    elif moe and hp["arch"] == "afmoe":
        _afmoe_config(config, meta, hp, g.path)
    elif moe and hp["arch"] == "hy_v3":  # HYV3Config (_hy_v3_router; the dense blocks first)
        for k in ("mlp_bias", "pretraining_tp", "rope_theta"):
            del config[k]
        config.update(num_experts=moe["n_expert"], num_experts_per_tok=moe["n_used"],
                      moe_intermediate_size=moe["ffn_exp"], num_shared_experts=moe["n_shared"],
                      router_scaling_factor=moe["scale"], num_nextn_predict_layers=0,
                      mlp_layer_types=["dense" if i < moe["lead"] else "sparse" for i in range(hp["n_layers"])],
                      rope_parameters={"rope_type": "default", "rope_theta": hp["theta"],
                                       **(config.pop("rope_scaling") or {})})
    elif moe and hp["arch"] == "hunyuan-moe":  # HunYuanMoEV1Config (_hunyuan_moe_router)
        del config["mlp_bias"]
        # (the file's rope.freq_base is the base HunYuan's NTK alpha stretches — 'dynamic' with
        # alpha in the checkpoint, llama.cpp's converter storing base · alpha^(d / (d - 2)) —: stated
        # as the default type's base, which rotates as that)
        config.update(num_experts=moe["n_expert"], moe_topk=moe["n_used"],
                      rope_parameters={"rope_type": "default", "rope_theta": hp["theta"],
                                       **(config["rope_scaling"] or {})})
        del config["rope_scaling"], config["rope_theta"]
    elif moe and hp["arch"] == "lfm2moe":  # Lfm2MoeConfig (_lfm2_moe_router)
        config.update(num_experts=moe["n_expert"], num_experts_per_tok=moe["n_used"],
                      moe_intermediate_size=moe["ffn_exp"], num_dense_layers=moe["lead"],
                      use_expert_bias=any(n.endswith(_EXP_PROBS_B) for n in g.tensors), norm_topk_prob=True,
                      routed_scaling_factor=1.0)
    elif moe and hp["arch"] != "granitemoe":  # Qwen2MoeConfig / Qwen3MoeConfig; llama.cpp renormalizes qwen3moe's top weights, not qwen2moe's
        config.update(num_experts=moe["n_expert"], num_experts_per_tok=moe["n_used"],
                      moe_intermediate_size=moe["ffn_exp"], norm_topk_prob=hp["arch"] == "qwen3moe",
                      decoder_sparse_step=1, mlp_only_layers=[])
        if "ffn_shexp" in moe:
            config["shared_expert_intermediate_size"] = moe["ffn_shexp"]
    if pad_id is not None:
        config["pad_token_id"] = pad_id
        gen_config["pad_token_id"] = pad_id
    return config, gen_config


def _lfm2_config(config: dict, g: GGUFFile, hp: dict) -> None:
    """Lfm2Config's / Lfm2MoeConfig's fields of an lfm2 / lfm2moe file: the RMS eps as norm_eps (the
    classes read no rms_norm_eps), the convolution blocks as layer_types (and, for Lfm2Config,
    full_attn_idxs, the attending ones), conv_L_cache, conv_bias, tie_embedding beside
    tie_word_embeddings, RoPE as rope_parameters. lfm2: the MLP feed_forward_length wide as
    block_ff_dim (llama.cpp's converter wrote the adjusted width: block_auto_adjust_ff_dim false);
    lfm2moe: the dense blocks' MLP as intermediate_size (Lfm2MoeConfig takes it as it is)."""
    for k in ("mlp_bias", "pretraining_tp", "attention_bias", "rms_norm_eps", "head_dim", "hidden_act"):
        del config[k]
    types = ["conv" if i in hp["conv"] else "full_attention" for i in range(hp["n_layers"])]
    config.update(norm_eps=hp["eps"], conv_L_cache=hp["l_cache"],
                  conv_bias=any(n.endswith(_LFM2_CONV_BIASES) for n in g.tensors), layer_types=types,
                  tie_embedding=config["tie_word_embeddings"],
                  rope_parameters={"rope_type": "default", "rope_theta": hp["theta"], **(config["rope_scaling"] or {})})
    if hp["arch"] == "lfm2":
        config.update(block_ff_dim=hp["ffn"], block_auto_adjust_ff_dim=False,
                      full_attn_idxs=[i for i, t in enumerate(types) if t == "full_attention"])
    del config["rope_scaling"], config["rope_theta"]


def _biased_router_config(config: dict, meta: dict, hp: dict, p) -> None:
    """Ernie4_5_MoeConfig / MiniMaxM2Config / ExaoneMoeConfig fields of an ernie4_5-moe /
    minimax-m2 / exaone-moe file (_biased_router, _sigmoid_router). ERNIE 4.5 MoE: the MoE
    layers from leading_dense_block_count to the last, every one, the shared experts' count; no
    biases (use_bias). MiniMax-M2: the rotating dims as rotary_dim (the released config's field),
    the experts feed_forward_length wide. EXAONE MoE: DeepSeek-V3's router fields, the dense
    blocks first as mlp_layer_types, the window and its layers (_exaone_moe_config), its NextN
    blocks not in the folder."""
    moe, arch, n = hp["moe"], hp["arch"], hp["n_layers"]
    for k in ("mlp_bias", "pretraining_tp", "attention_bias"):
        del config[k]
    if arch == "ernie4_5-moe":
        config.update(use_bias=False, moe_num_experts=moe["n_expert"], moe_k=moe["n_used"],
                      moe_intermediate_size=moe["ffn_exp"], moe_num_shared_experts=moe["n_shared"],
                      moe_layer_start_index=moe["lead"], moe_layer_end_index=n - 1, moe_layer_interval=1)
    elif arch == "minimax-m2":
        config.update(num_local_experts=moe["n_expert"], num_experts_per_tok=moe["n_used"], rotary_dim=hp["rope_dim"],
                      scoring_func="sigmoid", use_routing_bias=True, use_qk_norm=True, qk_norm_type="per_layer")
    else:
        config.update(num_experts=moe["n_expert"], num_experts_per_tok=moe["n_used"],
                      moe_intermediate_size=moe["ffn_exp"], num_shared_experts=moe["n_shared"],
                      first_k_dense_replace=moe["lead"], n_group=moe["n_group"], topk_group=moe["topk_group"],
                      norm_topk_prob=moe["norm"], routed_scaling_factor=moe["scale"], num_nextn_predict_layers=0,
                      mlp_layer_types=["dense" if i < moe["lead"] else "sparse" for i in range(n)])
        _exaone_moe_config(config, meta, hp, p)


def _exaone_moe_config(config: dict, meta: dict, hp: dict, p) -> None:
    """An exaone-moe file's window as ExaoneMoeConfig's, as llama.cpp runs it (src/models/
    exaone-moe.cpp): the window attention.sliding_window (needed, as llama.cpp needs it; 0 is
    refused), the sliding layers attention.sliding_window_pattern marks (flags, or n: all but
    each n-th; absent: 4) — only they rotate, the full ones attend without RoPE, as transformers'
    EXAONE MoE computes them with a window — all with rope.freq_base (a differing
    rope.freq_base_swa is refused)."""
    a, n = "exaone-moe", hp["n_layers"]
    if f"{a}.attention.sliding_window" not in meta:
        raise ValueError(f"{p}: missing metadata {a}.attention.sliding_window (llama.cpp's {a} needs it)")
    window = _window(meta, f"{a}.attention.sliding_window", None, p)
    if not window:
        raise ValueError(f"{p}: {a}.attention.sliding_window = 0: llama.cpp's {a} has sliding layers and full "
                         "ones without RoPE; a window of 0 is not one pyvt can represent")
    sliding = _swa_layers(meta, f"{a}.attention.sliding_window_pattern", n, p)
    _same_swa_base(meta, a, hp, "EXAONE MoE", p)
    config.update(sliding_window=window, layer_types=["sliding_attention" if s else "full_attention" for s in sliding])


def _afmoe_config(config: dict, meta: dict, hp: dict, p) -> None:
    """AfmoeConfig's fields of an afmoe file, as llama.cpp runs it (src/models/afmoe.cpp): the
    router's (_afmoe_router), the dense blocks first (num_dense_layers), muP's embedding scale
    (always applied there: mup_enabled), the window attention.sliding_window (needed and not 0:
    llama.cpp's afmoe rotates 3 blocks of 4 with or without one, AFMoE only its sliding ones) and
    the sliding blocks attention.sliding_window_pattern marks (flags, or n; absent: 4), which
    must leave full exactly the blocks llama.cpp runs without RoPE (every 4th: 3, 7, ...; a
    key says nothing of it) — AFMoE's full blocks are its NoPE ones. Only the sliding blocks
    rotate, with rope.freq_base_swa when the file has it (llama.cpp's base for them), else
    rope.freq_base."""
    a, n, moe = "afmoe", hp["n_layers"], hp["moe"]
    if f"{a}.attention.sliding_window" not in meta:
        raise ValueError(f"{p}: missing metadata {a}.attention.sliding_window: llama.cpp's afmoe then rotates 3 blocks "
                         "of 4 over every position, which AfmoeConfig cannot express")
    window = _window(meta, f"{a}.attention.sliding_window", None, p)
    if not window:
        raise ValueError(f"{p}: {a}.attention.sliding_window = 0: llama.cpp's afmoe then rotates 3 blocks of 4 over "
                         "every position, which AfmoeConfig cannot express")
    sliding = _swa_layers(meta, f"{a}.attention.sliding_window_pattern", n, p)
    for i, s in enumerate(sliding):
        if s != ((i + 1) % 4 != 0):
            raise ValueError(f"{p}: {a}.attention.sliding_window_pattern makes block {i} "
                             f"{'sliding' if s else 'full'}: llama.cpp's afmoe runs every 4th block (3, 7, ...) "
                             "without RoPE whatever the pattern, AFMoE its full blocks; pyvt converts a pattern "
                             "whose full blocks are those")
    base = _f32(_real(meta, f"{a}.rope.freq_base_swa", hp["theta"], 1.0, 1e12, p))
    base = float(base) if float(base).is_integer() else base
    for k in ("mlp_bias", "pretraining_tp", "rope_theta"):
        del config[k]
    config.update(num_experts=moe["n_expert"], num_experts_per_tok=moe["n_used"], moe_intermediate_size=moe["ffn_exp"],
                  num_shared_experts=moe["n_shared"], num_dense_layers=moe["lead"], route_scale=moe["scale"],
                  mup_enabled=True, sliding_window=window, global_attn_every_n_layers=4,
                  layer_types=["sliding_attention" if s else "full_attention" for s in sliding],
                  rope_parameters={"rope_type": "default", "rope_theta": base, **(config.pop("rope_scaling") or {})})


def _mla_arch(hp: dict) -> _Arch:
    """A deepseek2 file's architecture: DeepSeek-V3 (sigmoid router) or V2 (softmax), its q
    (attn_q, or its LoRA) and kv_b (whole, or split per head) tensors as the keys say."""
    m = hp.get("mla")
    if hp["arch"] == "minicpm3":  # (its q LoRA and kv_b whole: _mla_params requires both)
        return _ARCHS["minicpm3"]
    a = (_ARCHS["mistral4"] if hp["arch"] == "mistral4" else _DEEPSEEK_V2 if hp["moe"].get("softmax")
         else _ARCHS["deepseek2"])
    return a._replace(required=(_MLA_Q_LORA if m["q_lora"] else ("attn_q.weight",))
                      + (_MLA_K_V_B if m["split"] else ("attn_kv_b.weight",)), optional=())


def _deepseek_config(config: dict, hp: dict) -> None:
    """DeepseekV3Config / DeepseekV2Config fields of a deepseek2 file (_mla_params,
    _sigmoid_router, _mla_rope_scaling): the latent attention's sizes, head_dim the rope dims
    (as their config classes set it), the router (V2: greedy), RoPE as rope_parameters; V3's
    pairs interleaved (llama.cpp's NORM rope) and its NextN blocks not in the folder."""
    m, moe = hp.get("mla"), hp["moe"]
    v3 = not moe["softmax"]
    for k in ("pretraining_tp",) + (("mlp_bias",) if v3 else ()):
        del config[k]
    config.update(head_dim=m["rope"], num_key_value_heads=hp["n_head"], q_lora_rank=m["q_lora"] or None,
                  kv_lora_rank=m["kv_lora"], qk_nope_head_dim=m["nope"], qk_rope_head_dim=m["rope"], v_head_dim=m["v"],
                  n_routed_experts=moe["n_expert"], num_experts_per_tok=moe["n_used"],
                  moe_intermediate_size=moe["ffn_exp"], n_shared_experts=moe["n_shared"],
                  first_k_dense_replace=moe["lead"], n_group=moe["n_group"], topk_group=moe["topk_group"],
                  norm_topk_prob=moe["norm"], routed_scaling_factor=moe["scale"],
                  rope_parameters={"rope_type": "default", "rope_theta": hp["theta"], **(config["rope_scaling"] or {})})
    if v3:
        config.update(rope_interleave=True, num_nextn_predict_layers=0)
    else:
        config["topk_method"] = "greedy"
    del config["rope_scaling"], config["rope_theta"]


# llama.cpp's minicpm3 graph fixes MiniCPM3-4B's scales (src/models/minicpm3.cpp: "if the model
# varies, these parameters need to be read from the model"); its converter writes none.
_MINICPM3_SCALES = {"scale_emb": 12, "scale_depth": 1.4, "dim_model_base": 256}


def _minicpm3_config(config: dict, meta: dict, hp: dict, p: str) -> None:
    """MiniCPM3Config fields of a minicpm3 file (_mla_params, _minicpm3_rope): the latent
    attention's sizes (head_dim the rope dims, as its config class sets it; as many KV heads as
    heads), RoPE as rope_parameters, and MiniCPM's scales as llama.cpp computes them whatever
    the file says: embeddings times 12, each residual branch times 1.4 / sqrt(block_count), the
    final norm's output times 256 / embedding_length (scale_emb 12, scale_depth 1.4,
    dim_model_base 256: _MINICPM3_SCALES). Keys with other values (minicpm's embedding_scale,
    residual_scale, logit_scale, which llama.cpp's minicpm3 does not read) are refused naming
    them."""
    m, a, n = hp["mla"], "minicpm3", hp["n_layers"]
    want = {"embedding_scale": 12.0, "residual_scale": float(np.float32(1.4) / np.sqrt(np.float32(n))),
            "logit_scale": hp["hidden"] / 256}
    for k, v in want.items():
        if f"{a}.{k}" in meta and not math.isclose(got := _real(meta, f"{a}.{k}", v, -1e30, 1e30, p), v, rel_tol=1e-6):
            raise ValueError(f"{p}: {a}.{k} = {got!r}: llama.cpp's {a} computes with {v:.7g} whatever the key says "
                             "(MiniCPM3-4B's scale_emb 12, scale_depth 1.4, dim_model_base 256); pyvt does not "
                             "guess which is meant")
    config.update(head_dim=m["rope"], num_key_value_heads=hp["n_head"], q_lora_rank=m["q_lora"],
                  kv_lora_rank=m["kv_lora"], qk_nope_head_dim=m["nope"], qk_rope_head_dim=m["rope"], v_head_dim=m["v"],
                  rope_parameters={"rope_type": "default", "rope_theta": hp["theta"], **(config["rope_scaling"] or {})},
                  **_MINICPM3_SCALES)
    del config["rope_scaling"], config["rope_theta"]


def _gpt2_config(hp: dict, vocab_size: int, tied: bool, bos_id, eos_value, torch_dtype: str) -> dict:
    """GPT2Config (gpt2) or GPTBigCodeConfig (starcoder) under their own field names, as llama.cpp
    runs the file (src/models/gpt2.cpp, starcoder.cpp): scores / sqrt(head_dim)
    (scale_attn_weights), ggml's tanh GELU (gelu_new; GPTBigCode's gelu_pytorch_tanh, the same
    formula), the MLP feed_forward_length wide (n_inner), n_positions the context length (the
    rows of wpe); GPTBigCode multi-query with one KV head, else multi-head."""
    a = _ARCHS[hp["arch"]]
    config = {
        "architectures": [a.architecture], "model_type": a.model_type, "bos_token_id": bos_id,
        "eos_token_id": eos_value, "n_embd": hp["hidden"], "n_layer": hp["n_layers"], "n_head": hp["n_head"],
        "n_inner": hp["ffn"], "n_positions": hp["ctx"], "layer_norm_epsilon": hp["eps"],
        "activation_function": "gelu_new" if hp["arch"] == "gpt2" else "gelu_pytorch_tanh",
        "scale_attn_weights": True, "add_cross_attention": False, "tie_word_embeddings": tied,
        "vocab_size": vocab_size, "torch_dtype": torch_dtype, "use_cache": True, "initializer_range": 0.02,
        "attn_pdrop": 0.0, "embd_pdrop": 0.0, "resid_pdrop": 0.0,
    }
    if hp["arch"] == "gpt2":
        config.update(scale_attn_by_inverse_layer_idx=False, reorder_and_upcast_attn=False)
    else:
        config.update(multi_query=hp["n_kv"] == 1, attention_softmax_in_fp32=True,
                      scale_attention_softmax_in_fp32=True)
    return config


def _bloom_config(hp: dict, vocab_size: int, tied: bool, bos_id, eos_value, torch_dtype: str) -> dict:
    """BloomConfig under its own field names, as llama.cpp runs the file (src/models/bloom.cpp):
    the sequential pre-norm block whose residual is taken before the norms
    (apply_residual_connection_post_layernorm false), the embeddings' LayerNorm, ALiBi with max
    bias 8 (transformers' _get_alibi_slopes, which are ggml's for any head count), scores /
    sqrt(head_dim), one KV head per head, biases on every linear, the tanh GELU (BloomGelu, ggml's
    formula) of a 4 · hidden MLP (checked in _hparams). BloomConfig stores no context length."""
    return {
        "architectures": ["BloomForCausalLM"], "model_type": "bloom", "bos_token_id": bos_id,
        "eos_token_id": eos_value, "hidden_size": hp["hidden"], "n_layer": hp["n_layers"], "n_head": hp["n_head"],
        "layer_norm_epsilon": hp["eps"], "apply_residual_connection_post_layernorm": False,
        "tie_word_embeddings": tied, "vocab_size": vocab_size, "torch_dtype": torch_dtype, "use_cache": True,
        "initializer_range": 0.02, "attention_dropout": 0.0, "hidden_dropout": 0.0, "pretraining_tp": 1,
        "slow_but_exact": False,
    }


def _mpt_config(hp: dict, vocab_size: int, tied: bool, bos_id, eos_value, torch_dtype: str) -> dict:
    """MptConfig under its own field names, as llama.cpp runs the file (src/models/mpt.cpp): the
    sequential pre-norm block with LayerNorms without biases, ALiBi with alibi_bias_max 8 (ggml's
    m0 / m1 slopes are build_mpt_alibi_tensor's for every head count), clamp_kqv as clip_qkv,
    scores / sqrt(head_dim) (softmax_scale null: llama.cpp has no other scale), one KV head per
    head, no biases, a 4 · hidden MLP (checked in _hparams). llama.cpp's MLP applies ggml's tanh
    GELU where transformers' MptMLP applies the exact one, which no MptConfig field changes: the
    folder says what transformers' MPT computes (see docs/models.md for the difference)."""
    return {
        "architectures": ["MptForCausalLM"], "model_type": "mpt", "bos_token_id": bos_id, "eos_token_id": eos_value,
        "d_model": hp["hidden"], "n_heads": hp["n_head"], "n_layers": hp["n_layers"], "expansion_ratio": 4,
        "max_seq_len": hp["ctx"], "vocab_size": vocab_size, "layer_norm_epsilon": hp["eps"], "no_bias": True,
        "norm_type": "low_precision_layernorm", "learned_pos_emb": False, "logit_scale": None,
        "attn_config": {"attn_type": "multihead_attention", "attn_pdrop": 0, "attn_impl": "torch",
                        "clip_qkv": hp["clip"], "softmax_scale": None, "prefix_lm": False, "qk_ln": False,
                        "attn_uses_sequence_id": False, "alibi": True, "alibi_bias_max": 8},
        "tie_word_embeddings": tied, "torch_dtype": torch_dtype, "use_cache": True, "initializer_range": 0.02,
        "emb_pdrop": 0.0, "resid_pdrop": 0.0, "embedding_fraction": 1.0,
    }


def _falcon_config(g: GGUFFile, hp: dict, vocab_size: int, tied: bool, rope_scaling: dict | None, bos_id, eos_value,
                   torch_dtype: str) -> dict:
    """FalconConfig under its own field names, as llama.cpp runs the file (src/models/falcon.cpp):
    always the parallel block — with attn_norm_2 two norms (new_decoder_architecture,
    num_ln_in_parallel_attn 2: attention reads ln_attn, the MLP ln_mlp), else one for both
    (parallel_attn) —, head_count_kv KV heads: falcon-7b's multi_query for one, the old
    architecture's one per head for all, else the new decoder architecture's num_kv_heads (with
    one norm: Falcon2-11B's num_ln_in_parallel_attn 1); ggml's tanh GELU (gelu_fast: llama.cpp
    applies it whatever the checkpoint said, a GGUF does not store it), no biases (bias false:
    llama.cpp loads none), the MLP feed_forward_length wide (ffn_hidden_size), alibi false, RoPE
    over every dim as rope_parameters (transformers 5)."""
    n_head, n_kv = hp["n_head"], hp["n_kv"]
    two = "blk.0.attn_norm_2.weight" in g.tensors
    config = {
        "architectures": ["FalconForCausalLM"], "model_type": "falcon", "bos_token_id": bos_id,
        "eos_token_id": eos_value, "hidden_size": hp["hidden"], "num_hidden_layers": hp["n_layers"],
        "num_attention_heads": n_head, "ffn_hidden_size": hp["ffn"], "layer_norm_epsilon": hp["eps"],
        "max_position_embeddings": hp["ctx"], "activation": "gelu_fast", "bias": False, "alibi": False,
        "parallel_attn": True, "tie_word_embeddings": tied, "vocab_size": vocab_size, "torch_dtype": torch_dtype,
        "use_cache": True, "initializer_range": 0.02, "attention_dropout": 0.0, "hidden_dropout": 0.0,
        "rope_parameters": {"rope_type": "default", "rope_theta": hp["theta"], **(rope_scaling or {})},
    }
    if two or n_kv not in (1, n_head):  # (the new decoder architecture: its KV heads, its norms)
        config.update(new_decoder_architecture=True, num_kv_heads=n_kv, num_ln_in_parallel_attn=2 if two else 1)
    else:  # falcon-7b's multi-query block, or the old multi-head one
        config.update(new_decoder_architecture=False, multi_query=n_kv == 1)
    return config


def _olmo3_config(config: dict, meta: dict, hp: dict, window: int, p) -> None:
    """An `olmo2` file with a sliding window as Olmo3Config, as llama.cpp runs it
    (src/models/olmo2.cpp): the layers attention.sliding_window_pattern marks (an array of
    flags, or n: layer i slides unless i % n == n - 1; absent: 4) attend over the window and
    rotate with rope.freq_base unscaled (its graph passes freq_scale 1, ext_factor 0,
    attn_factor 1); the others with rope.freq_base and the file's scaling. llama.cpp's graph
    does not read rope.freq_base_swa, so a file whose swa base differs (the model's sliding
    layers rotating otherwise) is refused naming it."""
    sliding = _swa_layers(meta, "olmo2.attention.sliding_window_pattern", hp["n_layers"], p)
    _same_swa_base(meta, "olmo2", hp, "OLMo 3", p)
    full = {"rope_type": "default", "rope_theta": hp["theta"]}
    if config["rope_scaling"]:
        full.update(config["rope_scaling"])
    config.update(architectures=["Olmo3ForCausalLM"], model_type="olmo3", sliding_window=window,
                  layer_types=["sliding_attention" if s else "full_attention" for s in sliding],
                  rope_parameters={"full_attention": full,
                                   "sliding_attention": {"rope_type": "default", "rope_theta": hp["theta"]}})
    del config["rope_scaling"], config["rope_theta"]


def _swa_layers(meta: dict, key: str, n_layers: int, p) -> list[bool]:
    """Which layers slide, as llama.cpp's load_swa_pattern reads `key`: an array of flags, or n
    (layer i slides unless i % n == n - 1); absent: 4."""
    pat = meta.get(key, 4)
    if isinstance(pat, np.ndarray):  # (llama.cpp's converter writes bools)
        if pat.ndim != 1 or pat.dtype.kind not in "biu" or len(pat) != n_layers or not np.isin(pat, (0, 1)).all():
            raise ValueError(f"{p}: {key} = {_describe(pat)} is not {n_layers} flags (one per block)")
        return [bool(f) for f in pat]
    n = meta_value(meta, key, "int", p, 4)
    if not 0 < n <= 1 << 20:
        raise ValueError(f"{p}: {key} = {n} is not a positive integer")
    return [i % n < n - 1 for i in range(n_layers)]


def _same_swa_base(meta: dict, arch: str, hp: dict, model: str, p) -> None:
    """llama.cpp's olmo2, cohere2 and exaone4 graphs rotate the sliding layers with rope.freq_base and
    never read rope.freq_base_swa: a file whose swa base differs is refused naming it."""
    if f"{arch}.rope.freq_base_swa" in meta:
        swa = _f32(_real(meta, f"{arch}.rope.freq_base_swa", hp["theta"], 1.0, 1e12, p))
        if swa != hp["theta"]:
            raise ValueError(f"{p}: {arch}.rope.freq_base_swa = {swa:g} differs from rope.freq_base = {hp['theta']:g}: "
                             f"llama.cpp rotates {model}'s sliding layers with rope.freq_base, the model with its own "
                             "base; pyvt does not guess which is meant")


def _exaone_config(config: dict) -> None:
    """config.json of an exaone file as EXAONE 3 / 3.5's own files say it: num_layers,
    layer_norm_epsilon and activation_function (ExaoneConfig's attribute_map, which libvt's
    Exaone row reads), RoPE as rope_parameters (the llama3 scaling rope_freqs gave, or linear, or
    none), no biases (a file with them is refused)."""
    rope = {"rope_type": "default", "rope_theta": config.pop("rope_theta"), **(config.pop("rope_scaling") or {})}
    del config["pretraining_tp"]
    renamed = {"num_hidden_layers": "num_layers", "rms_norm_eps": "layer_norm_epsilon",
               "hidden_act": "activation_function"}
    items = list(config.items())
    config.clear()
    config.update({renamed.get(k, k): v for k, v in items}, rope_parameters=rope)


def _exaone4_config(config: dict, meta: dict, hp: dict, p) -> None:
    """An exaone4 file as Exaone4Config, as llama.cpp runs it (src/models/exaone4.cpp): only a
    file of 64 blocks (EXAONE 4.0 32B) has sliding layers there — the window
    attention.sliding_window (absent: 4096), the layers attention.sliding_window_pattern marks
    (flags, or n; absent: 4) — and then only they rotate (the global layers attend without
    RoPE, as transformers' Exaone4 computes them with a window), all with rope.freq_base (a
    differing rope.freq_base_swa is refused). Any other file llama.cpp runs with every layer
    global and rotating: transformers' model without a window; a window or pattern stored in
    one (which transformers would honour) is refused naming the key."""
    n = hp["n_layers"]
    if n == 64:
        window = _window(meta, "exaone4.attention.sliding_window", 4096, p)
        if not window:
            raise ValueError(f"{p}: exaone4.attention.sliding_window = 0: llama.cpp's 64-block EXAONE 4 has sliding "
                             "layers; a window of 0 is not one pyvt can represent")
        sliding = _swa_layers(meta, "exaone4.attention.sliding_window_pattern", n, p)
        _same_swa_base(meta, "exaone4", hp, "EXAONE 4", p)
        config.update(sliding_window=window, layer_types=["sliding_attention" if s else "full_attention" for s in sliding])
        return
    for key in ("exaone4.attention.sliding_window", "exaone4.attention.sliding_window_pattern"):
        if key in meta and (key.endswith("pattern") or _window(meta, key, None, p)):
            raise ValueError(f"{p}: {key}: llama.cpp gives EXAONE 4 sliding layers (and global ones without RoPE) "
                             f"only with 64 blocks, so it runs this {n}-block file with every layer global and "
                             "rotating, which the model with its window does not; pyvt does not guess which is meant")
    config.update(sliding_window=None, sliding_window_pattern=0, layer_types=["full_attention"] * n)


def _cohere_config(config: dict, meta: dict, hp: dict, p) -> None:
    """A command-r file as CohereConfig, a cohere2 one as Cohere2Config, as llama.cpp runs them
    (src/models/command-r.cpp, cohere2.cpp): LayerNorm eps, the logits times ARCH.logit_scale
    (command-r: absent or 0, llama.cpp does not scale them: 1; cohere2: the key is needed, as
    llama.cpp needs it), no biases (a file with them is refused). Cohere 2: the window (needed;
    transformers' null window rotates no layer, which llama.cpp never computes), the sliding
    layers by attention.sliding_window_pattern (absent: 4) — only they rotate, in llama.cpp's
    graph as in transformers' — with rope.freq_base (a differing rope.freq_base_swa is refused)."""
    arch = hp["arch"]
    key = f"{arch}.logit_scale"
    if arch == "cohere2" and key not in meta:
        raise ValueError(f"{p}: missing metadata {key} (llama.cpp's cohere2 needs it)")
    scale = _f32(_real(meta, key, 0.0, 0.0, 1e30, p, open_lo=False)) or 1.0
    for k in ("mlp_bias", "pretraining_tp", "rms_norm_eps"):
        del config[k]
    config.update(layer_norm_eps=hp["eps"], logit_scale=scale)
    if arch == "command-r":  # (CohereConfig has no head_dim: hidden_size / heads, checked in _hparams)
        del config["head_dim"]
        config["use_qk_norm"] = False
        return
    window = _window(meta, "cohere2.attention.sliding_window", None, p)
    if not window:
        raise ValueError(f"{p}: cohere2.attention.sliding_window is missing or 0 (llama.cpp's cohere2 needs a window; "
                         "without one transformers rotates no layer)")
    sliding = _swa_layers(meta, "cohere2.attention.sliding_window_pattern", hp["n_layers"], p)
    _same_swa_base(meta, "cohere2", hp, "Cohere 2", p)
    config.update(sliding_window=window, layer_types=["sliding_attention" if s else "full_attention" for s in sliding])


def _window(meta: dict, key: str, default, p: str):
    """A sliding window from the metadata: a positive integer, or None for 0 / absent without
    a default."""
    v = meta.get(key, default)
    if v is None or (not isinstance(v, bool) and isinstance(v, (int, np.integer)) and int(v) == 0):
        return None
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 < int(v) <= 1 << 31:
        raise ValueError(f"{p}: {key} = {v!r:.60} is not a non-negative integer")
    return int(v)


def _family_config(meta: dict, hp: dict, vocab_size: int, tied: bool, rope_scaling: dict | None, bos_id,
                   eos_value, torch_dtype: str, p) -> dict:
    """config.json of a gemma / gemma2 / gemma3 / phi3 GGUF. What llama.cpp does not store is
    rebuilt with llama.cpp's own rules (src/llama-model.cpp, load_hparams):

    * Gemma 1: scores / sqrt(head_dim), no window, no soft-caps (GemmaConfig's block);

    * Gemma 2 / 3 query_pre_attn_scalar: hidden / heads for the 27B models (46 / 62 blocks),
      else head_dim (llama.cpp's attention scale);
    * Gemma 2: even layers slide (pattern 2), window 4096 and soft-caps 50 / 30 when absent
      (files written before llama.cpp stored them);
    * Gemma 3: layer i slides unless (i + 1) % 6 == 0; the sliding layers' RoPE base is
      rope.freq_base_swa, else 10000; no attention soft-cap; the final one when stored;
    * Phi-3: sliding_window as stored (0: none); LongRoPE from its rope_factors_long / _short
      tensors, original_context_length and attn_factor (`_rope_scaling`)."""
    arch, a = hp["arch"], _ARCHS[hp["arch"]]
    n_layers = hp["n_layers"]
    common = {
        "architectures": [a.architecture],
        "model_type": a.model_type,
        "bos_token_id": bos_id,
        "eos_token_id": eos_value,
        "head_dim": hp["head_dim"],
        "hidden_size": hp["hidden"],
        "intermediate_size": hp["ffn"],
        "max_position_embeddings": hp["ctx"],
        "num_attention_heads": hp["n_head"],
        "num_hidden_layers": n_layers,
        "num_key_value_heads": hp["n_kv"],
        "rms_norm_eps": hp["eps"],
        "rope_theta": hp["theta"],
        "rope_scaling": rope_scaling,
        "tie_word_embeddings": tied,
        "torch_dtype": torch_dtype,
        "use_cache": True,
        "vocab_size": vocab_size,
        "attention_dropout": 0.0,
        "initializer_range": 0.02,
    }
    if arch == "phi3":
        orig = meta.get("phi3.rope.scaling.original_context_length", hp["ctx"])
        longrope = bool(rope_scaling) and rope_scaling.get("rope_type") == "longrope"
        if not longrope and ("phi3.rope.scaling.attn_factor" in meta or orig != hp["ctx"]):
            raise ValueError(f"{p}: a longrope phi3 file (phi3.rope.scaling.attn_factor, or a context_length "
                             f"{hp['ctx']} beyond original_context_length {orig!r:.30}) without its "
                             "rope_factors_long / rope_factors_short tensors")
        return {**common, "hidden_act": "silu",
                "original_max_position_embeddings": int(orig) if longrope else hp["ctx"],
                "sliding_window": _window(meta, "phi3.attention.sliding_window", None, p),
                "embd_pdrop": 0.0, "resid_pdrop": 0.0}
    if arch == "gemma":
        return {**common, "hidden_act": "gelu_pytorch_tanh", "attention_bias": False}
    big = n_layers == (46 if arch == "gemma2" else 62)  # llama.cpp's test for the 27B models
    qpas = hp["hidden"] // hp["n_head"] if big else hp["head_dim"]
    cfg = {**common, "hidden_activation": "gelu_pytorch_tanh", "query_pre_attn_scalar": qpas,
           "attention_bias": False}
    if arch == "gemma2":
        window = _window(meta, "gemma2.attention.sliding_window", 4096, p)
        cfg.update(
            sliding_window=window,
            layer_types=[("sliding_attention" if window and i % 2 == 0 else "full_attention") for i in range(n_layers)],
            attn_logit_softcapping=_f32(_real(meta, "gemma2.attn_logit_softcapping", 50.0, 0.0, 1e6, p, open_lo=False)) or None,
            final_logit_softcapping=_f32(_real(meta, "gemma2.final_logit_softcapping", 30.0, 0.0, 1e6, p, open_lo=False)) or None)
    else:
        window = _window(meta, "gemma3.attention.sliding_window", None, p)
        local = _f32(_real(meta, "gemma3.rope.freq_base_swa", 10000.0, 1.0, 1e12, p))
        cfg.update(
            sliding_window=window,
            layer_types=[("sliding_attention" if window and (i + 1) % 6 else "full_attention") for i in range(n_layers)],
            rope_local_base_freq=float(local) if float(local).is_integer() else local,
            attn_logit_softcapping=None,
            final_logit_softcapping=_f32(_real(meta, "gemma3.final_logit_softcapping", 0.0, 0.0, 1e6, p, open_lo=False)) or None)
    return cfg


def up_of(name: str) -> str:
    """The up experts (shared up) beside a gate experts (shared gate) tensor."""
    return name.replace("ffn_gate_exps", "ffn_up_exps").replace("ffn_gate_shexp", "ffn_up_shexp")


def _write_weights(g: GGUFFile, path: Path, hp: dict, st_dtype: str, p: str, say, keep_blocks: bool,
                   refs: dict | None = None) -> dict:
    """model.safetensors: every tensor dequantized (or, with `keep_blocks`, Q8_0 / Q4_0 / Q4_1
    matrices kept as they are, Q4_K and Q5_0 as Q4_1 and Q8_0 blocks), Q/K un-permuted, in Hugging Face order. Returns
    ``{"kept": {type: count}, "dequantized": {type: count}}`` over the quantized tensors.
    With `refs` (a dict, filled here): kept tensors whose bytes the GGUF holds in one piece
    (GGUF_REF_DTYPES, not a stacked gate|up) are not written but entered in `refs` as
    SafeTensors header entries whose data_offsets count from the start of the GGUF
    (:data:`GGUF_REFS`); a permuted Q or K with ``"pyvt_permuted_heads"``, its heads."""
    n_head, n_kv = hp["n_head"], hp["n_kv"]
    arch = hp["arch"]
    permuted = _ARCHS[arch].permuted
    shift = _ARCHS[arch].norm_shift
    moe = hp["moe"]
    order: list = ["token_embd.weight", "position_embd.weight", "token_embd_norm.weight", "token_embd_norm.bias"]
    for i in range(hp["n_layers"]):
        b = f"blk.{i}."
        order += [b + s for s in (
            "attn_norm.weight", "attn_norm.bias", "attn_norm_2.weight", "attn_norm_2.bias", "attn_qkv.weight", "attn_qkv.bias", "attn_q.weight", "attn_q.bias", "attn_k.weight",
            "attn_k.bias",
            "attn_v.weight", "attn_v.bias", "attn_output.weight", "attn_output.bias", "attn_sinks.weight",
            "attn_gate.weight", "attn_q_norm.weight", "attn_k_norm.weight", "attn_q_a.weight", "attn_q_a_norm.weight", "attn_q_b.weight",
            "attn_kv_a_mqa.weight", "attn_kv_a_norm.weight", "attn_kv_b.weight", "post_attention_norm.weight",
            "shortconv.in_proj.weight", "shortconv.in_proj.bias", "shortconv.conv.weight", "shortconv.conv.bias",
            "shortconv.out_proj.weight", "shortconv.out_proj.bias", "ffn_norm.weight", "ffn_norm.bias")]
        if b + "attn_k_b.weight" in g.tensors:  # (DeepSeek: kv_b_proj rebuilt from attn_k_b and attn_v_b)
            order.append((b + "attn_k_b.weight", "kv_b"))
        if not moe or i < moe.get("lead", 0):  # (GLM-4 MoE, dots1: the first blocks dense)
            order += [b + s for s in ("ffn_gate.weight", "ffn_up.weight", "ffn_up.bias", "ffn_down.weight",
                                      "ffn_down.bias", "post_ffw_norm.weight")]
            continue
        # a MoE block: the router (its correction bias), each expert's gate / up / down, the shared expert
        order += [b + "ffn_gate_inp.weight", b + _EXP_PROBS_B]
        if arch == "gpt-oss":  # as transformers holds them (MXFP4 experts: as the Hub's files do)
            order.append(b + "ffn_gate_inp.bias")
            for t, key in (("ffn_gate_exps.weight", "gu"), ("ffn_down_exps.weight", "dn")):
                mx = all(g.tensors[b + u].ggml_type == GGMLType.MXFP4 for u in {t, up_of(b + t)[len(b):]}
                         if b + u in g.tensors)
                order += ([(b + t, f"oss-{key}-blocks"), (b + t, f"oss-{key}-scales")] if mx
                          else [(b + t, f"oss-{key}")])
                order.append((b + t.replace(".weight", ".bias"), f"oss-{key}-bias"))
            continue
        if arch == "granitemoe":  # stacked as the folder holds them (input_linear, output_linear)
            order += [(b + "ffn_gate_exps.weight", "in"), (b + "ffn_down_exps.weight", "out"),
                      (b + "ffn_gate_shexp.weight", "shared-in")]  # (its shared gate|up: one tensor)
            order.append(b + "ffn_down_shexp.weight")
            continue
        elif arch == "mistral4":  # stacked as transformers saves them (gate_up_proj, down_proj)
            order += [(b + _GATE_UP_EXPS, "out") if b + _GATE_UP_EXPS in g.tensors else (b + "ffn_gate_exps.weight", "in"),
                      (b + "ffn_down_exps.weight", "out")]
        else:
            order += [(b + t, e) for e in range(moe["n_expert"]) for t in _EXPERTS]
        order += [b + s for s in ("ffn_gate_shexp.weight", "ffn_up_shexp.weight", "ffn_down_shexp.weight",
                                  "ffn_gate_inp_shexp.weight", "post_ffw_norm.weight")]  # (AFMoE's norm after it)
    order += ["output_norm.weight", "output_norm.bias", "output.weight", "output.bias"]
    mixtral = bool(moe) and arch in ("llama", "minimax-m2")  # (MiniMax-M2: Mixtral's names)
    falcon_2ln = arch == "falcon" and "blk.0.attn_norm_2.weight" in g.tensors  # (ln_attn / ln_mlp)
    order = [n if isinstance(n, tuple) else (n, None) for n in order]
    order = [(n, e) for n, e in order if n in g.tensors]

    def permuted_heads(name: str) -> int:
        """The heads of a Q or K projection llama.cpp's converter permuted (0 for others)."""
        kind = name.split(".")[-2] if name.startswith("blk.") else ""
        return {"attn_q": n_head, "attn_k": n_kv}.get(kind, 0) if permuted else 0

    def qkv_heads(name: str):
        """A fused attn_qkv (weight or bias) whose q | k | v rows go back into groups per KV head
        (GPT-NeoX's and Bloom's per-head [q, k, v]; GPTBigCode's multi-head c_attn; Falcon's [q·g, k, v]):
        its pyvt_qkv_heads, the heads (one KV head each) or [heads, KV heads]; 0 for others and
        for one KV head (q | k | v is then the Hugging Face order)."""
        grouped = (arch in ("gptneox", "bloom") or (arch == "starcoder" and n_kv == n_head > 1)
                   or (arch == "falcon" and n_kv > 1))
        if not (grouped and name.endswith((".attn_qkv.weight", ".attn_qkv.bias"))):
            return 0
        return n_head if n_kv == n_head else [n_head, n_kv]

    def per_head(x: np.ndarray, name: str) -> np.ndarray:
        m = qkv_heads(name)
        return qkv_per_head(x, *m) if isinstance(m, list) else qkv_per_head(x, m)

    def conv1d(name: str) -> bool:
        """GPT-2's Conv1D weights: [out, in] in the GGUF, [in, out] in the checkpoint."""
        return arch == "gpt2" and name.startswith("blk.") and name.endswith(_CONV1D)

    def layer_of(name: str) -> int:
        return int(_BLOCK_RE.match(name).group(1))

    def out_name(name: str, e) -> str:
        t = name.split(".", 2)[2] if name.startswith("blk.") else ""
        if e == "kv_b":
            return f"model.layers.{layer_of(name)}.self_attn.kv_b_proj.weight"
        if isinstance(e, str) and e.startswith("oss-"):  # gpt-oss: oss-{gu,dn}[-blocks|-scales|-bias]
            part = e.split("-")
            return (f"model.layers.{layer_of(name)}.mlp.experts." + ("gate_up_proj" if part[1] == "gu" else "down_proj")
                    + (f"_{part[2]}" if len(part) > 2 else ""))
        if arch == "gpt-oss" and t in ("ffn_gate_inp.weight", "ffn_gate_inp.bias"):
            return f"model.layers.{layer_of(name)}.mlp.router." + t.split(".")[1]
        if arch == "mistral4" and e in ("in", "out"):
            return f"model.layers.{layer_of(name)}.mlp.experts." + ("down_proj" if t == "ffn_down_exps.weight"
                                                                    else "gate_up_proj")
        if e in ("in", "out"):
            return f"model.layers.{layer_of(name)}.block_sparse_moe." + ("input_linear.weight" if e == "in"
                                                                           else "output_linear.weight")
        if e == "shared-in" or (arch == "granitemoe" and t == "ffn_down_shexp.weight"):
            return f"model.layers.{layer_of(name)}.shared_mlp." + ("input_linear.weight" if e else "output_linear.weight")
        if arch == "granitemoe" and t == "ffn_gate_inp.weight":
            return f"model.layers.{layer_of(name)}.block_sparse_moe.router.layer.weight"
        if moe and (e is not None or t in ("ffn_gate_inp.weight", _EXP_PROBS_B) + _SHARED):
            return _moe_hf_name(t, layer_of(name), e, mixtral, arch)
        return hf_tensor_name(name, "falcon-2ln" if falcon_2ln else arch)

    def out_shape(name: str, e) -> tuple:
        shape = tuple(g.tensors[name].shape)
        if e == "kv_b":  # attn_k_b [heads, kv_lora, nope] and attn_v_b [heads, v, kv_lora] -> [heads · (nope + v), kv_lora]
            return (shape[0] * (shape[2] + g.tensors[v_b(name)].shape[1]), shape[1])
        if isinstance(e, str) and e.startswith("oss-"):  # gpt-oss: GGUF [E, rows, cols] (bias [E, rows])
            gu = e.startswith("oss-gu")
            E, rows = shape[0], shape[1] * (2 if gu else 1)
            if e.endswith("-bias"):
                return (E, rows)
            cols = shape[2]
            return {"": (E, cols, rows), "-blocks": (E, rows, cols // 32, 16),
                    "-scales": (E, rows, cols // 32)}[e[6:]]
        if e == "in":  # [E, I, H] gate and up -> [E, 2I, H]
            return (shape[0], 2 * shape[1], shape[2])
        if e == "shared-in":  # [S, H] gate and up -> [2S, H]
            return (2 * shape[0], shape[1])
        if e == "out":
            return shape
        if e is not None:
            return shape[1:]
        if arch == "ernie4_5-moe" and name.endswith(_EXP_PROBS_B):  # (moe_statics' [1, experts])
            return (1, shape[-1])
        if arch in _LFM2_ARCHS and name.endswith(".shortconv.conv.weight"):  # ([hidden, l_cache] -> Conv1d's [hidden, 1, l_cache])
            return (shape[0], 1, shape[1])
        return (1,) + shape if name.endswith("ffn_gate_inp_shexp.weight") else shape

    def block_matrix(name: str, e=None) -> bool:
        """Whether the item may be written as GGML blocks at all: keep_blocks, a matrix (or a
        stacked expert in / out) whose rows are whole blocks of 32; not the router nor the shared
        expert's gate (float: libvt compares the router's logits), nor gpt-oss's experts (written
        as their MXFP4 blocks by oss_producer), nor DeepSeek's kv_b (float: libvt splits and
        transposes it per head)."""
        if not keep_blocks or (isinstance(e, str) and e.startswith("oss-")) or kv_b(name, e):
            return False
        shape = out_shape(name, e)
        return (len(shape) in (2, 3) and shape[-1] % 32 == 0 and (len(shape) == 2 or e in ("in", "out"))
                and not name.endswith(("ffn_gate_inp.weight", "ffn_gate_inp_shexp.weight"))
                and name != "position_embd.weight")  # (libvt adds its rows as floats)

    def kept(name: str, e=None) -> bool:
        info = g.tensors[name]
        if e in ("in", "shared-in") and g.tensors[up_of(name)].ggml_type != info.ggml_type:
            return False  # (one block type for the stacked gate|up)
        # A Q4_K tensor referred to is not read here: libvt converts its blocks and refuses one
        # whose sub-block scale or min overflows an f16, naming it; copied, q4k_fits reads it.
        return (block_matrix(name, e) and info.ggml_type in BLOCK_DTYPES
                and (info.ggml_type != GGMLType.Q4_K or (refs is not None and verbatim(name, e)) or q4k_fits(name)))

    def to_q8_0(name: str, e=None) -> bool:
        """Not kept, but written as Q8_0 blocks: a 5- or 6-bit type (TO_Q8_0), or a stacked
        gate|up of two quantized types one of which is (the pair then shares int8)."""
        types = {g.tensors[t].ggml_type for t, _ in (stacked_parts(name, e) or [(name, None)])}
        return (bool(types & TO_Q8_0) and not types & set(_LOSSLESS) and block_matrix(name, e)
                and not kept(name, e))

    q4k_ok: dict = {}

    def q4k_fits(name: str) -> bool:  # (cached: kept() is asked several times a tensor)
        if name not in q4k_ok:
            blocks = np.frombuffer(g.raw(name), np.uint8).reshape(-1, 144)
            q4k_ok[name] = all(q4_k_fits_q4_1(blocks[i:i + (1 << 16)]) for i in range(0, len(blocks), 1 << 16))
        return q4k_ok[name]

    def expert_bytes(name: str, e: int) -> tuple[int, int]:
        per = g.tensors[name].nbytes // g.tensors[name].shape[0]
        return e * per, (e + 1) * per

    def stacked_parts(name: str, e) -> list | None:
        """The (tensor, expert or None) pieces an "in" / "out" / "shared-in" item writes, in
        order: each expert's gate rows then its up rows; the whole down tensor; the shared gate
        rows then its up rows. None for any other item."""
        if e == "in":
            return [(t, x) for x in range(g.tensors[name].shape[0]) for t in (name, up_of(name))]
        if e == "out":
            return [(name, None)]
        if e == "shared-in":
            return [(name, None), (up_of(name), None)]
        return None

    def raw_producer(name: str, e: int | None = None):
        # Whole rows of blocks; a row permutation (Q/K) moves rows, never splits a block.
        info = g.tensors[name]
        heads = permuted_heads(name) or None
        rows = out_shape(name, e)[0]

        def blocks(raw):  # Q4_K superblocks as the Q4_1 blocks of their sub-blocks; Q5_0, IQ4 as Q8_0
            if info.ggml_type == GGMLType.Q5_0:
                return q5_0_as_q8_0(np.frombuffer(raw, np.uint8).reshape(-1, 22)).reshape(-1)
            if info.ggml_type == GGMLType.IQ4_NL:
                return iq4_nl_as_q8_0(np.frombuffer(raw, np.uint8).reshape(-1, 18)).reshape(-1)
            if info.ggml_type == GGMLType.IQ4_XS:
                return iq4_xs_as_q8_0(np.frombuffer(raw, np.uint8).reshape(-1, 136)).reshape(-1)
            if info.ggml_type != GGMLType.Q4_K:
                return raw
            return q4_k_as_q4_1(np.frombuffer(raw, np.uint8).reshape(-1, 144)).reshape(-1)

        def produce():
            parts = stacked_parts(name, e)
            if parts is not None:
                for t, x in parts:
                    yield blocks(g.raw(t, *expert_bytes(t, x)) if x is not None else g.raw(t))
                return
            raw = blocks(g.raw(name, *expert_bytes(name, e)) if e is not None else g.raw(name))
            raw = raw.reshape(rows, raw.size // rows)
            yield (unpermute_qk(raw, heads) if heads is not None else per_head(raw, name) if qkv_heads(name) else raw)
        return produce

    def oss_producer(name: str, e: str, st_dtype: str = st_dtype):
        """gpt-oss's experts as transformers holds them: gate|up interleaved (gate j at 2j, up j
        at 2j + 1) and transposed to [E, in, out] (x · W) with the bias [E, 2I] interleaved
        alike; down transposed; MXFP4 ones as the Hub's blocks ([E, rows, cols/32, 16], two
        codes a byte, element 2i in the low nibble; ggml's block has element i there and i + 16
        in the high one) and e8m0 scales ([E, rows, cols/32]; the byte as ggml's, which scales
        the doubled codes by 2^(e - 128): the same values)."""
        info = g.tensors[name]
        gu = e.startswith("oss-gu")
        parts = [name, up_of(name)] if gu else [name]

        def check(x, label):
            if not np.isfinite(x).all():
                raise ValueError(f"{p}: tensor {label} has non-finite values")
            return _encode(x, st_dtype)

        def interleave(a, b):  # rows of a at even, rows of b at odd places
            out = np.empty((2 * a.shape[0],) + a.shape[1:], a.dtype)
            out[0::2], out[1::2] = a, b
            return out

        def blocks_of(t, x):  # expert x of MXFP4 tensor t: [rows, cols/32, 17] bytes
            ti = g.tensors[t]
            raw = np.frombuffer(g.raw(t, *expert_bytes(t, x)), np.uint8)
            b = raw.reshape(ti.shape[1], ti.shape[2] // 32, 17)
            if (b[..., 0] == 0xFF).any():
                r, k = np.argwhere(b[..., 0] == 0xFF)[0]
                raise ValueError(f"{p}: tensor {t} (expert {x}) row {r} block {k} is NaN (scale 0xFF)")
            return b

        def produce():
            if e.endswith("-bias"):
                xs = [g.dequantize(t) for t in parts]
                yield check(interleave(xs[0].T, xs[1].T).T if gu else xs[0], name)
                return
            for x in range(info.shape[0]):
                if e.endswith("-blocks"):
                    qs = [blocks_of(t, x)[..., 1:] for t in parts]
                    codes = [np.concatenate([q & 0x0F, q >> 4], axis=-1) for q in qs]  # ggml order
                    hf = [(c[..., 0::2] | (c[..., 1::2] << 4)).astype(np.uint8) for c in codes]
                    yield interleave(*hf) if gu else hf[0]
                elif e.endswith("-scales"):
                    sc = [np.ascontiguousarray(blocks_of(t, x)[..., 0]) for t in parts]
                    yield interleave(*sc) if gu else sc[0]
                else:
                    ws = []
                    for t in parts:
                        ti = g.tensors[t]
                        try:
                            ws.append(dequantize(g.raw(t, *expert_bytes(t, x)), ti.ggml_type, tuple(ti.shape[1:])))
                        except ValueError as err:
                            raise ValueError(f"{p}: tensor {t!r} (expert {x}): {err}") from None
                    yield check(np.ascontiguousarray((interleave(*ws) if gu else ws[0]).T), f"{name} (expert {x})")
        return produce

    def v_b(name: str) -> str:
        return name.replace("attn_k_b.weight", "attn_v_b.weight")

    def kv_b(name: str, e) -> bool:
        """DeepSeek's kv_b_proj: attn_kv_b, or the item rebuilding it from attn_k_b / attn_v_b."""
        return e == "kv_b" or name.endswith(".attn_kv_b.weight")

    def producer(name: str, st_dtype: str = st_dtype, expert: int | None = None):
        info = g.tensors[name]
        heads = permuted_heads(name) or None

        unshift = shift if name.endswith("norm.weight") else 0.0
        label = name if expert is None else f"{name} (expert {expert})"

        def check(x):
            if not np.isfinite(x).all():
                raise ValueError(f"{p}: tensor {label} has non-finite values")
            if unshift:  # Gemma: stored as w + 1
                x = np.asarray(x, np.float32) - np.float32(unshift)
            return _encode(x, st_dtype)

        def produce():
            if expert == "kv_b":  # each head's k rows (attn_k_b's, transposed back) then its v rows
                k, v = g.dequantize(name), g.dequantize(v_b(name))
                yield check(np.concatenate([k.transpose(0, 2, 1), v], axis=1).reshape(-1, k.shape[1]))
                return
            parts = stacked_parts(name, expert)
            if parts is not None:
                for t, x in parts:
                    ti = g.tensors[t]
                    yield check(dequantize(g.raw(t, *expert_bytes(t, x)), ti.ggml_type, tuple(ti.shape[1:]))
                                if x is not None else g.dequantize(t))
                return
            if expert is not None:  # one expert of a stacked [experts, rows, cols] tensor
                shape = out_shape(name, expert)
                try:
                    x = dequantize(g.raw(name, *expert_bytes(name, expert)), info.ggml_type, shape)
                except ValueError as err:
                    raise ValueError(f"{p}: tensor {label!r}: {err}") from None
                yield check(x)
                return
            if name.endswith("ffn_gate_inp_shexp.weight"):  # [hidden] in GGUF, [1, hidden] in HF
                yield check(g.dequantize(name).reshape(1, -1))
                return
            if arch in _LFM2_ARCHS and name.endswith(".shortconv.conv.weight"):  # (LFM2's kernel: Conv1d's [hidden, 1, l_cache])
                yield check(g.dequantize(name).reshape(out_shape(name, None)))
                return
            if heads is not None or qkv_heads(name) or len(info.shape) != 2 or conv1d(name):
                x = g.dequantize(name)
                if conv1d(name) and st_dtype != "GGML_Q8_0":  # (GPT-2: Conv1D's [in, out]; Q8_0 rows stay [out, in])
                    x = np.ascontiguousarray(x.T)
                yield check(unpermute_qk(x, heads) if heads is not None else per_head(x, name) if qkv_heads(name)
                            else x)
                return
            # Row chunks of ~4M values bound the float32 temporaries (embedding tables).
            rows, cols = info.shape
            row_bytes = info.nbytes // rows
            step = max(1, _CHUNK_VALUES // cols)
            for r in range(0, rows, step):
                r1 = min(rows, r + step)
                raw = g.raw(name, r * row_bytes, r1 * row_bytes)  # read per chunk, as converted
                try:
                    x = dequantize(raw, info.ggml_type, (r1 - r, cols))
                except ValueError as e:
                    raise ValueError(f"{p}: tensor {name!r}: {e}") from None
                yield check(x)
        return produce

    def verbatim(name: str, e) -> bool:
        """An item whose bytes are one piece of the GGUF that libvt packs as they are or
        converts to the blocks this function would write (GGUF_REF_DTYPES), not stacked (a
        permuted Q/K is named with its heads: libvt puts its rows in order)."""
        return (g.tensors[name].ggml_type in GGUF_REF_DTYPES and (e is None or isinstance(e, int) or e == "out")
                and not (permuted_heads(name) and e is not None))

    # What becomes of each item: its blocks as they are, Q8_0 blocks, or floats (decided once).
    how = {(n, e): "kept" if kept(n, e) else "int8" if to_q8_0(n, e) else None for n, e in order}
    n_kept = sum(v == "kept" for v in how.values())
    n_q8 = sum(v == "int8" for v in how.values())
    summary: dict = {"kept": {}, "int8": {}, "dequantized": {}}
    for n, e in order:
        t = g.tensors[n].ggml_type
        if t in (GGMLType.F32, GGMLType.F16, GGMLType.BF16) or (e or "") == "oss-gu-scales" or (e or "") == "oss-dn-scales":
            continue
        mxfp4 = isinstance(e, str) and e.endswith("-blocks")  # (gpt-oss's MXFP4 experts: written as blocks)
        d = summary["kept" if mxfp4 else how[(n, e)] or "dequantized"]
        name = GGML_TYPES[t][0]
        d[name] = d.get(name, 0) + 1
    if n_kept or n_q8:
        say(f"keeping {n_kept} Q8_0/Q4_0/Q4_1/Q4_K/Q5_0/IQ4 tensors as blocks (Q4_K as Q4_1, Q5_0 and IQ4 as Q8_0)"
            + (f", rounding {n_q8} Q5_1/Q5_K/Q6_K tensors to Q8_0" if n_q8 else "")
            + f", converting {len(order) - n_kept - n_q8} to {st_dtype}")
    else:
        say(f"converting {len(order)} tensors to {st_dtype}")
    def float_shape(name: str, e) -> tuple:  # (GPT-2's Conv1D weights written as the checkpoint holds them)
        return out_shape(name, e)[::-1] if conv1d(name) else out_shape(name, e)

    items = []
    for n, e in order:
        out_in = {"pyvt_out_in": True} if conv1d(n) else {}  # (blocks: rows of the GGUF's [out, in])
        if isinstance(e, str) and e.startswith("oss-"):
            mx = e.endswith(("-blocks", "-scales"))
            items.append((out_name(n, e), "U8" if mx else st_dtype, out_shape(n, e), oss_producer(n, e)))
        elif how[(n, e)] in ("kept", "int8") and refs is not None and verbatim(n, e):
            info = g.tensors[n]
            a, b = expert_bytes(n, e) if isinstance(e, int) else (0, info.nbytes)
            refs[out_name(n, e)] = {"dtype": GGUF_REF_DTYPES[info.ggml_type], "shape": list(out_shape(n, e)),
                                    "data_offsets": [info.offset + a, info.offset + b]}
            if permuted_heads(n) and e is None:
                refs[out_name(n, e)]["pyvt_permuted_heads"] = permuted_heads(n)
            if qkv_heads(n):  # (GPT-NeoX, GPTBigCode multi-head, Falcon, Bloom: the GGUF's q | k | v rows, as they are)
                refs[out_name(n, e)]["pyvt_qkv_heads"] = qkv_heads(n)
            if conv1d(n):  # (GPT-2: the GGUF's [out, in] rows, not transposed to Conv1D)
                refs[out_name(n, e)]["pyvt_out_in"] = True
        elif how[(n, e)] == "kept":
            items.append((out_name(n, e), BLOCK_DTYPES[g.tensors[n].ggml_type][0], out_shape(n, e),
                          raw_producer(n, e), out_in))
        elif how[(n, e)] == "int8":
            items.append((out_name(n, e), "GGML_Q8_0", out_shape(n, e), producer(n, "GGML_Q8_0", expert=e), out_in))
        elif keep_blocks and kv_b(n, e):  # (DeepSeek's kv_b: float as the file holds it, else float32: exact)
            types = {g.tensors[t].ggml_type for t in ((n, v_b(n)) if e else (n,))}
            d = _LOSSLESS[types.pop()] if len(types) == 1 and types <= set(_LOSSLESS) else "F32"
            items.append((out_name(n, e), d, out_shape(n, e), producer(n, d, expert=e)))
        elif keep_blocks and g.tensors[n].ggml_type in _LOSSLESS:  # F32 norms stay F32
            d = _LOSSLESS[g.tensors[n].ggml_type]
            items.append((out_name(n, e), d, float_shape(n, e), producer(n, d, expert=e)))
        elif (keep_blocks and n == "position_embd.weight") or n.endswith(_EXP_PROBS_B):
            # (quantized positions: as libvt holds them, float32, exact; the router's correction bias
            # float32 as the checkpoints hold it: it decides which experts, to the last bit)
            items.append((out_name(n, e), "F32", out_shape(n, e), producer(n, "F32", expert=e)))
        else:
            items.append((out_name(n, e), st_dtype, float_shape(n, e), producer(n, expert=e)))
    if arch in _HUNYUAN_ARCHS and "blk.0.attn_q.bias" in g.tensors:
        # (HunYuan's attention_bias puts a bias on o_proj too; llama.cpp's hunyuan-moe / -dense have
        # none: zeros, float32, compute what llama.cpp computes)
        for i in range(hp["n_layers"]):
            items.append((f"model.layers.{i}.self_attn.o_proj.bias", "F32", (hp["hidden"],),
                          lambda: np.zeros(hp["hidden"], "<f4")))
    if hp.get("xielu"):  # Apertus: the metadata's xIELU parameters as the checkpoint's tensors, float32
        for i in range(hp["n_layers"]):
            for _, name, shape in _XIELU:
                x = hp["xielu"][name][i].reshape(shape)
                items.append((f"model.layers.{i}.mlp.act_fn.{name}", "F32", shape,
                              lambda x=x: np.ascontiguousarray(x, "<f4")))
    write_safetensors(path, items, {"format": "pt" if not n_kept + n_q8 else "pyvt"})
    return summary


def convert_gguf(gguf_path, out_dir, *, dtype: str = "bf16", progress=None, keep_blocks: bool = False,
                 gguf_refs: bool = False) -> Path:
    """Convert a GGUF file (architecture `llama`, `qwen2`, `qwen3`, `gemma`, `gemma2`, `gemma3`,
    `phi2`, `phi3`, `stablelm`, `starcoder2`, `smollm3`, `granite`, `olmo2`, `ernie4_5`, `seed_oss`,
    `glm4`, `command-r`, `cohere2`, `arcee`, `exaone4`, `apertus`, `nemotron`, `gptneox`, `gpt2`, `starcoder`, `falcon`, `bloom`, `mpt`, `qwen2moe`,
    `qwen3moe`, `granitemoe`,
    `olmoe`, `gpt-oss`, `glm4moe`, `dots1`, `deepseek2`, `ernie4_5-moe`, `minimax-m2`, `exaone-moe`, `lfm2`, `lfm2moe`, `hunyuan-moe`, `mistral3`, `mistral4`, `minicpm3`, `exaone`, `jais2`, `afmoe`, `hunyuan-dense`, `olmo` or `hy_v3`) to a
    Hugging Face-style folder; returns `out_dir`.

    dtype: "bf16" (default), "f16" or "f32" for model.safetensors.
    keep_blocks: write Q8_0, Q4_0 and Q4_1 matrices as they are (pyvt's GGML_* SafeTensors
    dtypes, which libvt packs without a second quantization; Q4_K as the Q4_1 blocks of its
    sub-blocks, scales and mins rounded to f16; Q5_0 as the Q8_0 blocks of its numbers) instead
    of dequantizing them:
    the folder then loads in pyvt only (transformers cannot read those tensors); other
    tensor types are dequantized to `dtype` as usual.
    gguf_refs (with keep_blocks): the blocks the GGUF holds as they are are not copied but
    referenced (``pyvt_gguf.json``, :data:`GGUF_REFS`): the folder then needs the GGUF, unchanged
    (libvt refuses it once the file's size or modification time differ). pyvt's cache of
    converted GGUFs is made so (a fraction of the file's bytes written, not all of them). A
    GGUF whose path is not UTF-8 (which the references file could not name) is copied.
    progress: optional callable(str) for progress messages.
    Raises FileNotFoundError for a missing file, ValueError for a malformed or unsupported one
    (another architecture, a tensor type pyvt cannot dequantize, an unsupported
    tokenizer model...).
    """
    key = _DTYPE_ALIASES.get(str(dtype).lower())
    if key is None:
        raise ValueError(f"dtype must be one of bf16, f16, f32; got {dtype!r}")
    st_dtype, torch_dtype, _ = _DTYPES[key]
    say = progress or (lambda msg: None)
    out = Path(out_dir)
    with GGUFFile(gguf_path) as g:
        p = str(g.path)
        meta = g.metadata
        hp = _hparams(meta, p)
        vocab_size, tied = _check_tensors(g, meta, hp, p)
        rope_scaling = _rope_scaling(g, meta, hp, p)
        tokenizer, tinfo = build_tokenizer(meta, p)
        # HF pads the embedding table past the vocabulary in some models; the reverse is broken.
        if len(tinfo["tokens"]) > vocab_size:
            raise ValueError(f"{p}: {len(tinfo['tokens'])} tokens but token_embd.weight has "
                             f"{vocab_size} rows")
        config, gen_config = _hf_configs(g, meta, hp, vocab_size, tied, rope_scaling, tinfo["bos_token_id"],
                                         torch_dtype)
        tok_config, special_map = tokenizer_config(meta, tinfo, hp["ctx"], p)
        out.mkdir(parents=True, exist_ok=True)
        refs: dict | None = {} if gguf_refs and keep_blocks else None
        gguf_file = str(Path(p).resolve())
        try:
            gguf_file.encode("utf-8")
        except UnicodeEncodeError:  # a path JSON cannot hold byte for byte: the blocks are copied
            refs = None
        _, size, mtime_ns = g.file_stat
        summary = _write_weights(g, out / "model.safetensors", hp, st_dtype, p, say, keep_blocks, refs)
        if refs:
            meta = {"format": GGUF_REFS_FORMAT, "file": gguf_file, "size": size, "mtime_ns": mtime_ns}
            _write_json(out / GGUF_REFS, {"__metadata__": meta, **refs})

    say("writing config and tokenizer")
    _write_json(out / "config.json", config)
    _write_json(out / "generation_config.json", gen_config)
    _write_json(out / "tokenizer_config.json", tok_config)
    _write_json(out / "special_tokens_map.json", special_map)
    tmp = out / "tokenizer.json.tmp"
    tokenizer.save(str(tmp), pretty=True)
    os.replace(tmp, out / "tokenizer.json")
    if keep_blocks:
        _write_json(out / "pyvt_blocks.json", summary)
    return out


#: The references file of a folder converted with ``gguf_refs`` (libvt/src/safetensors.h):
#: a SafeTensors header of the tensors left in the GGUF, data_offsets counted from the GGUF's
#: first byte, the GGUF's absolute path, size and mtime_ns in ``__metadata__``.
GGUF_REFS = "pyvt_gguf.json"
GGUF_REFS_FORMAT = "pyvt-gguf-refs"
#: The GGUF types a references file names, under pyvt's SafeTensors dtypes: libvt packs the
#: first three as they are and converts the others row by row into the blocks a copied folder
#: holds (libvt/src/ggml_import.h: Q4_K as Q4_1, Q5_0 and IQ4 as Q8_0, Q6_K rounded to Q8_0).
GGUF_REF_DTYPES = {GGMLType.Q8_0: "GGML_Q8_0", GGMLType.Q4_0: "GGML_Q4_0", GGMLType.Q4_1: "GGML_Q4_1",
                   GGMLType.Q4_K: "GGML_Q4_K", GGMLType.Q5_0: "GGML_Q5_0", GGMLType.Q6_K: "GGML_Q6_K",
                   GGMLType.IQ4_NL: "GGML_IQ4_NL", GGMLType.IQ4_XS: "GGML_IQ4_XS"}

_GGML_OF_DTYPE = {st: t for t, (st, _) in BLOCK_DTYPES.items()  # (Q4_K, Q5_0 and IQ4 written as Q4_1 / Q8_0)
                  if t not in (GGMLType.Q4_K, GGMLType.Q5_0, GGMLType.IQ4_NL, GGMLType.IQ4_XS)}
_GGML_OF_REF_DTYPE = {st: t for t, st in GGUF_REF_DTYPES.items()}
_ST_DTYPES = {"F32": "<f4", "F16": "<f2"}
# Our own folders' headers are a few KB; a bound keeps a damaged file from costing memory.
_MAX_HEADER = 64 << 20


def dequantize_folder(src, dst, *, dtype: str = "bf16") -> Path:
    """A folder written by ``convert_gguf(keep_blocks=True)`` as a plain Hugging Face folder
    (one transformers reads): its GGML_* tensors dequantized and every tensor written in
    `dtype` -- the same numbers ``convert_gguf(keep_blocks=False)`` writes from the GGUF. Other
    files are copied; ``pyvt_blocks.json`` (and ``pyvt_gguf.json``: the tensors it refers to in
    the GGUF are read from there) are left out. Returns `dst`.
    Raises ValueError naming the file when model.safetensors is not such a file, or when the
    GGUF the folder refers to has changed since."""
    key = _DTYPE_ALIASES.get(str(dtype).lower())
    if key is None:
        raise ValueError(f"dtype must be one of bf16, f16, f32; got {dtype!r}")
    st_dtype = _DTYPES[key][0]
    src, out = Path(src), Path(dst)
    path = src / "model.safetensors"
    with contextlib.ExitStack() as stack:
        f = stack.enter_context(open(path, "rb"))
        size = os.fstat(f.fileno()).st_size
        head = f.read(8)
        n = struct.unpack("<Q", head)[0] if len(head) == 8 else -1
        if not 0 < n <= min(_MAX_HEADER, size - 8):
            raise ValueError(f"{path}: not a SafeTensors file (header length {n}, file {size} bytes)")
        try:
            header = json.loads(f.read(n))
        except ValueError as e:
            raise ValueError(f"{path}: bad SafeTensors header: {e}") from None
        # (file, where its data begins, its data's size, the name for errors, header, dtypes)
        sources = [(f, 8 + n, size - 8 - n, path, header, _GGML_OF_DTYPE)]
        refs_path = src / GGUF_REFS
        if refs_path.exists():
            from ._files import CONFIG_LIMIT, read_json

            refs = read_json(refs_path, "GGUF references", CONFIG_LIMIT)
            meta = refs.get("__metadata__") if isinstance(refs, dict) else None
            if not isinstance(meta, dict) or meta.get("format") != GGUF_REFS_FORMAT:
                raise ValueError(f"{refs_path}: not a pyvt GGUF references file")
            g = stack.enter_context(open(meta.get("file"), "rb"))
            st = os.fstat(g.fileno())
            if (st.st_size, st.st_mtime_ns) != (meta.get("size"), meta.get("mtime_ns")):
                raise ValueError(f"{refs_path}: {meta.get('file')} has changed since this folder was converted "
                                 "from it: convert the .gguf again")
            sources.append((g, 0, st.st_size, refs_path, refs, _GGML_OF_REF_DTYPE))
        items = []
        for fh, base, data_size, where, hdr, ggml_of in sources:
            for name, h in hdr.items():
                offs = h.get("data_offsets") if isinstance(h, dict) else None
                if name != "__metadata__" and not (isinstance(offs, list) and len(offs) == 2
                                                   and all(isinstance(o, int) for o in offs)
                                                   and isinstance(h.get("shape"), list)):
                    raise ValueError(f"{where}: tensor {name!r}: an entry without a shape and two data offsets")
            entries = sorted(((k, v) for k, v in hdr.items() if k != "__metadata__"),
                             key=lambda kv: kv[1]["data_offsets"][0])
            for name, h in entries:
                a, b = h["data_offsets"]
                shape = tuple(h["shape"])
                if not 0 <= a <= b <= data_size:
                    raise ValueError(f"{where}: tensor {name!r} lies outside the file")

                def produce(fh=fh, base=base, a=a, b=b, shape=shape, st=h["dtype"], name=name, where=where,
                            ggml_of=ggml_of, heads=h.get("pyvt_permuted_heads", 0),
                            qkv=h.get("pyvt_qkv_heads", 0), out_in=h.get("pyvt_out_in", False)):
                    fh.seek(base + a)
                    raw = np.frombuffer(fh.read(b - a), dtype=np.uint8)
                    if st in ggml_of:
                        x = dequantize(raw, ggml_of[st], shape)
                    elif st == "BF16":
                        x = (raw.view("<u2").astype(np.uint32) << 16).view(np.float32).reshape(shape)
                    elif st in _ST_DTYPES:
                        x = raw.view(_ST_DTYPES[st]).astype(np.float32).reshape(shape)
                    else:
                        raise ValueError(f"{where}: tensor {name!r} has dtype {st}, not one pyvt writes")
                    if heads:
                        x = unpermute_qk(x, heads)
                    if qkv:  # (q | k | v rows as llama.cpp holds them: per head, per KV head again)
                        x = qkv_per_head(x, *qkv) if isinstance(qkv, list) else qkv_per_head(x, qkv)
                    if out_in:  # (GPT-2's [out, in] rows: Conv1D's [in, out] again)
                        x = np.ascontiguousarray(x.T)
                    return _encode(x, st_dtype)

                items.append((name, st_dtype, shape[::-1] if h.get("pyvt_out_in") else shape, produce))
        out.mkdir(parents=True, exist_ok=True)
        write_safetensors(out / "model.safetensors", items, {"format": "pt"})
    for p in sorted(src.iterdir()):
        if p.is_file() and p.name not in ("model.safetensors", "pyvt_blocks.json", GGUF_REFS):
            shutil.copyfile(p, out / p.name)
    return out


def _write_json(path: Path, obj) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, ensure_ascii=False)
        f.write("\n")
    os.replace(tmp, path)


def main(argv=None) -> int:
    import argparse
    import sys
    import time

    ap = argparse.ArgumentParser(prog="python -m pyvt.convert",
                                 description="Convert a llama / qwen2 / qwen3 / gemma / gemma2 / gemma3 / phi2 / "
                                             "phi3 / stablelm / starcoder2 / smollm3 / granite / "
                                             "olmo2 / ernie4_5 / seed_oss / glm4 / command-r / cohere2 / arcee / exaone4 / apertus / nemotron / gptneox / gpt2 / starcoder / falcon / bloom / mpt / qwen2moe / qwen3moe / granitemoe / olmoe / gpt-oss / glm4moe / dots1 / deepseek2 / ernie4_5-moe / minimax-m2 / exaone-moe / lfm2 / lfm2moe / hunyuan-moe / mistral3 / mistral4 / minicpm3 / exaone / jais2 / afmoe / hunyuan-dense / olmo / hy_v3 GGUF file to a "
                                             "Hugging Face folder.")
    ap.add_argument("gguf")
    ap.add_argument("out_dir")
    ap.add_argument("--dtype", default="bf16", choices=sorted(_DTYPE_ALIASES))
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    try:
        out = convert_gguf(args.gguf, args.out_dir, dtype=args.dtype,
                           progress=lambda m: print(m, file=sys.stderr))
    except (ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"wrote {out} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

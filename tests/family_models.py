"""Tiny random checkpoints of the model families beyond plain Llama (Llama with biases and
head_dim != hidden/heads, Mistral, Qwen2, Qwen3), for tests/test_families.py and
tools/make_family_golden.py.

A case is a transformers config class and its arguments (so every config field is the real
one). Its weights are seeded numpy arrays over the tensor names and shapes of transformers'
own model of that config, rounded to bfloat16 values (pyvt's bf16 mode then holds them
exactly). With torch and transformers installed the tests build the transformers model, load
these weights into it and save it with save_pretrained; tests/data/families_golden.json keeps
the config.json, the tensor names and shapes, and transformers' float32 results, so that
without torch the same checkpoint is written here with numpy and checked against them.

The tokenizer is a byte-level BPE over the 256 bytes (no merges) with Qwen's ChatML special
tokens and chat template, written with the `tokenizers` library (a pyvt dependency).
"""

from __future__ import annotations

import json
import math
import zlib
from pathlib import Path
from typing import Any

import numpy as np

import llama_ref as R

VOCAB = 300  # 256 byte tokens, 3 special tokens, unused ids above (as real vocabularies have)
ENDOFTEXT, IM_START, IM_END = 256, 257, 258
PROMPT = [72, 101, 108, 108, 111, 44, 32, 119]  # "Hello, w" in the byte tokenizer

_COMMON: dict[str, Any] = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                               num_key_value_heads=2, vocab_size=VOCAB, max_position_embeddings=256,
                               rms_norm_eps=1e-6, bos_token_id=ENDOFTEXT, eos_token_id=IM_END)

# name -> (transformers config class, its arguments beyond _COMMON)
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "llama-bias-hd24": ("LlamaConfig", dict(attention_bias=True, mlp_bias=True, head_dim=24)),
    # Dynamic NTK RoPE (transformers' "dynamic"): a pass whose sequence reaches past
    # max_position_embeddings (32 here) rotates with a base grown for its length. The
    # teacher-forced 96 tokens cross it in one prefill, greedy decoding (8 + 32) step by step.
    "llama-dynamic": ("LlamaConfig", dict(max_position_embeddings=32, rope_parameters={
        "rope_type": "dynamic", "factor": 3.5, "rope_theta": 10000.0})),
    "mistral": ("MistralConfig", dict(sliding_window=None)),
    "mistral-window8": ("MistralConfig", dict(sliding_window=8, head_dim=32)),
    "qwen2-tied": ("Qwen2Config", dict(tie_word_embeddings=True)),
    "qwen2-window6": ("Qwen2Config", dict(use_sliding_window=True, sliding_window=6, max_window_layers=1,
                                          rope_theta=1e6)),
    "qwen3-hd32-tied": ("Qwen3Config", dict(head_dim=32, tie_word_embeddings=True)),
    "qwen3-bias-hd8": ("Qwen3Config", dict(head_dim=8, attention_bias=True, num_key_value_heads=1)),
    "gemma2": ("Gemma2Config", dict(head_dim=16, query_pre_attn_scalar=24, sliding_window=8,
                                    attn_logit_softcapping=3.0, final_logit_softcapping=8.0, pad_token_id=ENDOFTEXT)),
    "gemma2-defaults-hd32": ("Gemma2Config", dict(head_dim=32, pad_token_id=ENDOFTEXT)),
    "gemma3": ("Gemma3TextConfig", dict(head_dim=16, sliding_window=6, pad_token_id=ENDOFTEXT,
                                        layer_types=["sliding_attention", "full_attention"])),
    "gemma3-linear-hd32": ("Gemma3TextConfig", dict(
        head_dim=32, query_pre_attn_scalar=32, sliding_window=8, pad_token_id=ENDOFTEXT,
        layer_types=["full_attention", "sliding_attention"],
        rope_parameters={"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}})),
    # Gemma 1: Llama's block with Gemma's (1 + w) norms, scaled embeddings and GeGLU; head_dim
    # independent of hidden / heads as gemma-7b's (16 heads x 256 = 4096 > 3072).
    "gemma": ("GemmaConfig", dict(head_dim=32, pad_token_id=ENDOFTEXT)),
    "gemma-mqa-bias": ("GemmaConfig", dict(head_dim=16, num_key_value_heads=1, attention_bias=True,
                                           pad_token_id=ENDOFTEXT)),
    # Phi-1/1.5/2: LayerNorm, the parallel block, GELU MLP, biases everywhere, partial rotary
    # (PhiConfig's default 0.5; phi-2's 0.4 on head_dim 16 rotates 6 dims), MHA or GQA.
    "phi": ("PhiConfig", dict(pad_token_id=ENDOFTEXT, num_key_value_heads=4)),
    "phi-gqa-04": ("PhiConfig", dict(pad_token_id=ENDOFTEXT, partial_rotary_factor=0.4, tie_word_embeddings=False)),
    # StableLM: Llama's block with LayerNorms (and their biases), partial rotary (StableLmConfig's
    # default 0.25: 4 of head_dim 16 rotate); the second with q/k/v biases and a factor of 0.5.
    "stablelm": ("StableLmConfig", dict(pad_token_id=ENDOFTEXT)),
    "stablelm-qkv-bias": ("StableLmConfig", dict(pad_token_id=ENDOFTEXT, use_qkv_bias=True,
                                                 partial_rotary_factor=0.5, tie_word_embeddings=True)),
    # Starcoder2: LayerNorms, biases everywhere (use_bias), an ungated GELU MLP (c_fc, c_proj),
    # tied; the second without biases and with a window of 8 on every layer.
    "starcoder2": ("Starcoder2Config", dict(pad_token_id=ENDOFTEXT)),
    "starcoder2-window-nobias": ("Starcoder2Config", dict(pad_token_id=ENDOFTEXT, use_bias=False, sliding_window=8,
                                                          tie_word_embeddings=False)),
    # EXAONE 4: OLMo 2's post-norm block with per-head q/k norms; a sliding layer (window 6) and
    # a global one without RoPE; the second without a window (both global, both rotate), tied.
    "exaone4": ("Exaone4Config", dict(pad_token_id=ENDOFTEXT, sliding_window=6, sliding_window_pattern=2)),
    "exaone4-nowindow": ("Exaone4Config", dict(pad_token_id=ENDOFTEXT, sliding_window=None,
                                               layer_types=["full_attention", "full_attention"],
                                               tie_word_embeddings=True)),
    "phi3": ("Phi3Config", dict(pad_token_id=ENDOFTEXT)),
    # LongRoPE (Phi-3-128k / 3.5): short factors up to original_max_position_embeddings (the
    # golden greedy run, 40 positions), long ones past it (the 96-token teacher-forced pass).
    "phi3-longrope": ("Phi3Config", dict(pad_token_id=ENDOFTEXT, original_max_position_embeddings=48, rope_parameters={
        "rope_type": "longrope", "rope_theta": 10000.0,
        "short_factor": [1.0, 1.05, 1.1, 1.3, 1.6, 2.0, 2.4, 2.9],
        "long_factor": [1.0, 1.3, 1.9, 2.8, 4.1, 6.0, 8.5, 12.0]})),
    "phi3-partial-rotary": ("Phi3Config", dict(pad_token_id=ENDOFTEXT, partial_rotary_factor=0.5)),
    "qwen2-yarn": ("Qwen2Config", dict(rope_parameters={"rope_type": "yarn", "factor": 4.0, "rope_theta": 10000.0,
                                                        "original_max_position_embeddings": 32})),
    "phi3-window8": ("Phi3Config", dict(pad_token_id=ENDOFTEXT, sliding_window=8, num_key_value_heads=4)),
    # Mixture of experts: Mixtral (experts intermediate_size wide, always renormalized), Qwen3-MoE
    # (q/k norms, norm_topk_prob, a dense layer listed in mlp_only_layers), Qwen2-MoE (qkv bias,
    # the sigmoid-gated shared expert, top weights not renormalized).
    "mixtral": ("MixtralConfig", dict(num_local_experts=4, num_experts_per_tok=2, sliding_window=None)),
    "qwen3-moe": ("Qwen3MoeConfig", dict(num_experts=8, num_experts_per_tok=3, moe_intermediate_size=32,
                                         norm_topk_prob=True, head_dim=32, num_hidden_layers=3, mlp_only_layers=[1])),
    "qwen2-moe-shared": ("Qwen2MoeConfig", dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                                                shared_expert_intermediate_size=64)),
    # DeepSeek-V3's router (sigmoid scores, a correction bias, group-limited choice, scaling),
    # shared experts, dense layers first: GLM-4 MoE (half-rotary heads, q/k/v biases; then q/k
    # norms, unnormalized weights, two shared experts), dots1 (Qwen3's attention, a sliding layer).
    "glm4-moe": ("Glm4MoeConfig", dict(n_routed_experts=8, num_experts_per_tok=3, moe_intermediate_size=32,
                                       n_group=4, topk_group=2, num_hidden_layers=3, attention_bias=True,
                                       routed_scaling_factor=2.5, pad_token_id=ENDOFTEXT)),
    "glm4-moe-qknorm": ("Glm4MoeConfig", dict(n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                                              use_qk_norm=True, norm_topk_prob=False, n_shared_experts=2,
                                              first_k_dense_replace=0, pad_token_id=ENDOFTEXT)),
    # DeepSeek-V3 / V2: multi-head latent attention (q through its LoRA or whole, the latent KV
    # and its RMSNorm, kv_b expanding it per head; v narrower than q·k), DeepSeek-V3's sigmoid
    # router (V2's softmax one, groups scored by their best), shared experts, dense layers first;
    # the second V2 has Lite's 576-wide latent (512 + 64) and YaRN with mscale_all_dim.
    "deepseek-v3": ("DeepseekV3Config", dict(num_key_value_heads=4, q_lora_rank=32, kv_lora_rank=32,
                                             qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=24,
                                             n_routed_experts=8, num_experts_per_tok=2, n_group=4, topk_group=2,
                                             n_shared_experts=1, moe_intermediate_size=32, first_k_dense_replace=1,
                                             num_hidden_layers=3, routed_scaling_factor=2.5, pad_token_id=ENDOFTEXT)),
    "deepseek-v3-halfrope": ("DeepseekV3Config", dict(num_key_value_heads=4, q_lora_rank=None, kv_lora_rank=48,
                                                      qk_nope_head_dim=16, qk_rope_head_dim=16, v_head_dim=16,
                                                      n_routed_experts=4, num_experts_per_tok=2, n_group=1,
                                                      topk_group=1, n_shared_experts=2, moe_intermediate_size=32,
                                                      first_k_dense_replace=0, rope_interleave=False,
                                                      norm_topk_prob=False, pad_token_id=ENDOFTEXT)),
    "deepseek-v2": ("DeepseekV2Config", dict(num_key_value_heads=4, q_lora_rank=None, kv_lora_rank=512,
                                             qk_nope_head_dim=32, qk_rope_head_dim=64, v_head_dim=32,
                                             n_routed_experts=8, num_experts_per_tok=3, topk_method="group_limited_greedy",
                                             n_group=4, topk_group=2, n_shared_experts=2, moe_intermediate_size=32,
                                             first_k_dense_replace=1, num_hidden_layers=3, routed_scaling_factor=1.5,
                                             rope_parameters={"rope_type": "yarn", "factor": 4.0, "rope_theta": 10000.0,
                                                              "original_max_position_embeddings": 64, "mscale": 0.707,
                                                              "mscale_all_dim": 0.707, "beta_fast": 32, "beta_slow": 1},
                                             pad_token_id=ENDOFTEXT)),
    "deepseek-v2-lora": ("DeepseekV2Config", dict(num_key_value_heads=4, q_lora_rank=32, kv_lora_rank=32,
                                                  qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16,
                                                  n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1,
                                                  moe_intermediate_size=32, pad_token_id=ENDOFTEXT)),
    # MiniMax-M2: q/k norms over the whole projection, half the head rotating (rotary_dim), a
    # sigmoid router with its correction bias on the block and Mixtral's expert names.
    "minimax-m2": ("MiniMaxM2Config", dict(head_dim=16, num_local_experts=8, num_experts_per_tok=2,
                                           intermediate_size=32, rotary_dim=8)),
    "minimax-m2-full-rope": ("MiniMaxM2Config", dict(head_dim=32, num_local_experts=4, num_experts_per_tok=3,
                                                     intermediate_size=64, rope_theta=10000.0)),
    # ERNIE 4.5 MoE: ERNIE 4.5's attention (pairs-interleaved RoPE, use_bias false), softmax
    # probabilities chosen with a correction bias (moe_statics), renormalized, shared experts,
    # MoE layers by moe_layer_start_index / interval / end_index.
    "ernie4_5-moe": ("Ernie4_5_MoeConfig", dict(moe_num_experts=8, moe_k=2, moe_intermediate_size=32,
                                                moe_num_shared_experts=1, num_hidden_layers=3, tie_word_embeddings=False)),
    "ernie4_5-moe-interval": ("Ernie4_5_MoeConfig", dict(moe_num_experts=4, moe_k=3, moe_intermediate_size=32,
                                                         moe_num_shared_experts=0, num_hidden_layers=4,
                                                         moe_layer_start_index=0, moe_layer_interval=2,
                                                         moe_layer_end_index=2)),
    # EXAONE MoE: per-head q/k norms, alternating sliding layers whose full layers attend without
    # RoPE, DeepSeek-V3's router and shared experts; then layer_types and mlp_layer_types given.
    "exaone-moe": ("ExaoneMoeConfig", dict(num_experts=8, num_experts_per_tok=2, moe_intermediate_size=32,
                                           num_shared_experts=1, num_hidden_layers=4, sliding_window=6,
                                           sliding_window_pattern=2, n_group=2, topk_group=1, pad_token_id=ENDOFTEXT)),
    "exaone-moe-types": ("ExaoneMoeConfig", dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                                                 num_shared_experts=2, num_hidden_layers=3, sliding_window=8,
                                                 layer_types=["sliding_attention", "full_attention", "sliding_attention"],
                                                 mlp_layer_types=["sparse", "dense", "sparse"], norm_topk_prob=False,
                                                 routed_scaling_factor=1.0, pad_token_id=ENDOFTEXT)),
    # GLM-4 MoE lite (GLM-4.7-Flash): DeepSeek-V3's latent attention, GLM-4 MoE's router.
    # A.X-K1: DeepSeek-V3 (latent attention, its grouped sigmoid router, a shared expert) with the
    # MoE block's output RMSNormed (post_mlp_layernorm). The first: AXK1Config's defaults for the
    # layers (the first dense), groups 2 of 4, a random nonzero correction bias; the second: the
    # layers from first_k_dense_replace 1 and moe_layer_freq 2 (dense, dense, sparse, dense), no
    # groups, rotate-half RoPE (rope_interleave false), two shared experts, scale 1.5.
    "axk1": ("AXK1Config", dict(num_key_value_heads=4, q_lora_rank=32, kv_lora_rank=32, qk_nope_head_dim=16,
                                qk_rope_head_dim=8, v_head_dim=24, n_routed_experts=8, num_experts_per_tok=2, n_group=4,
                                topk_group=2, moe_intermediate_size=32, num_hidden_layers=3, pad_token_id=ENDOFTEXT)),
    "axk1-freq": ("AXK1Config", dict(num_key_value_heads=4, q_lora_rank=32, kv_lora_rank=32, qk_nope_head_dim=16,
                                     qk_rope_head_dim=16, v_head_dim=16, n_routed_experts=4, num_experts_per_tok=3,
                                     n_group=1, topk_group=1, n_shared_experts=2, moe_intermediate_size=32,
                                     first_k_dense_replace=1, moe_layer_freq=2, num_hidden_layers=4,
                                     rope_interleave=False, routed_scaling_factor=1.5, pad_token_id=ENDOFTEXT)),
    "glm4-moe-lite": ("Glm4MoeLiteConfig", dict(num_key_value_heads=4, q_lora_rank=32, kv_lora_rank=32,
                                                qk_nope_head_dim=16, qk_rope_head_dim=16, v_head_dim=32,
                                                n_routed_experts=8, num_experts_per_tok=4, n_group=1, topk_group=1,
                                                n_shared_experts=1, moe_intermediate_size=32, num_hidden_layers=3,
                                                pad_token_id=ENDOFTEXT)),
    "dots1": ("Dots1Config", dict(n_routed_experts=8, num_experts_per_tok=2, n_shared_experts=1,
                                  moe_intermediate_size=32, n_group=2, topk_group=1, first_k_dense_replace=1,
                                  num_hidden_layers=3, attention_bias=True, sliding_window=6, max_window_layers=2,
                                  pad_token_id=ENDOFTEXT)),
    # LFM2: short-convolution layers beside attention ones (layer_types; or the layers not in
    # full_attn_idxs), the MLP's width from block_ff_dim auto-adjusted (int(2·96/3) = 64, times
    # 1.5, a multiple of 32: 96), norm_eps over the rms_norm_eps the config class does not read.
    "lfm2": ("Lfm2Config", dict(num_hidden_layers=3, layer_types=["conv", "full_attention", "conv"],
                                block_multiple_of=32, block_ffn_dim_multiplier=1.5, pad_token_id=ENDOFTEXT)),
    "lfm2-bias": ("Lfm2Config", dict(num_hidden_layers=4, full_attn_idxs=[1], conv_bias=True, conv_L_cache=4,
                                     block_auto_adjust_ff_dim=False, tie_embedding=False, pad_token_id=ENDOFTEXT)),
    # LFM2-MoE: LFM2's layers, experts after num_dense_layers with a sigmoid router choosing on
    # score + expert_bias, the top weights renormalized (sum + 1e-6) and scaled; or no bias, raw weights.
    "lfm2-moe": ("Lfm2MoeConfig", dict(num_hidden_layers=3, layer_types=["conv", "full_attention", "conv"],
                                       num_experts=8, num_experts_per_tok=2, moe_intermediate_size=32,
                                       num_dense_layers=1, routed_scaling_factor=1.5, pad_token_id=ENDOFTEXT)),
    # AFMoE (Arcee's Trinity): gated attention (one gate per output dim) with q/k norms, sliding
    # layers rotating and NoPE global ones, sandwich norms, dense layers first, then a sigmoid router
    # choosing on score + its (random, nonzero) expert_bias, the top weights renormalized, shared
    # experts. The first: the default layer_types from global_attn_every_n_layers, one dense layer,
    # one shared expert; the second: layer_types given, no dense layer, two shared experts,
    # route_scale, muP's embedding scale, biases, one KV head.
    "afmoe": ("AfmoeConfig", dict(num_hidden_layers=4, head_dim=16, global_attn_every_n_layers=2, sliding_window=6,
                                  num_dense_layers=1, num_experts=8, num_experts_per_tok=2, moe_intermediate_size=32,
                                  num_shared_experts=1, pad_token_id=ENDOFTEXT)),
    "afmoe-mup": ("AfmoeConfig", dict(num_hidden_layers=3, head_dim=16, num_key_value_heads=1, sliding_window=5,
                                      layer_types=["full_attention", "sliding_attention", "sliding_attention"],
                                      num_dense_layers=0, num_experts=4, num_experts_per_tok=3, moe_intermediate_size=32,
                                      num_shared_experts=2, route_scale=2.5, mup_enabled=True, attention_bias=True,
                                      pad_token_id=ENDOFTEXT)),
    # AFMoE as llama.cpp's afmoe can hold it (tests/test_convert.py's GGUF of it): the default
    # layer_types (every 4th full, without RoPE), muP, a dense first layer, two shared experts,
    # route_scale, head_dim not hidden / heads, its own RoPE base.
    "afmoe-gguf": ("AfmoeConfig", dict(num_hidden_layers=4, head_dim=24, sliding_window=6, num_dense_layers=1,
                                       num_experts=8, num_experts_per_tok=2, moe_intermediate_size=32,
                                       num_shared_experts=2, route_scale=1.5, mup_enabled=True,
                                       rope_parameters={"rope_type": "default", "rope_theta": 50000.0},
                                       pad_token_id=ENDOFTEXT)),
    # Sarvam-MoE: GLM-4 MoE as transformers runs it, under the Hub's names (word_embeddings, one
    # fused query_key_value with its bias, dense, query_layernorm / key_layernorm, the router's
    # expert_bias) with SarvamMoEConfig's defaults (q/k norms, every dim rotating, scaling 2.5, one
    # dense layer, one shared expert, no MTP layers); GQA, head_dim 24, groups. The second without
    # q/k norms or biases, half-rotary heads, one KV head, two shared experts, no dense layer.
    "sarvam-moe": ("SarvamMoEConfig", dict(n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=32,
                                           num_hidden_layers=3, head_dim=24, use_qkv_bias=True, n_group=2,
                                           topk_group=1, rope_parameters={"rope_type": "default", "rope_theta": 1e4},
                                           pad_token_id=ENDOFTEXT)),
    "sarvam-moe-plain": ("SarvamMoEConfig", dict(n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                                                 head_dim=16, num_key_value_heads=1, use_qk_norm=False,
                                                 num_shared_experts=2, first_k_dense_replace=0, norm_topk_prob=False,
                                                 partial_rotary_factor=0.5, pad_token_id=ENDOFTEXT)),
    # Sarvam-MLA: DeepSeek-V3 as transformers runs it with SarvamMLAConfig's defaults (q_proj
    # without a LoRA, no expert groups, one dense layer, scaling 2.5, interleaved RoPE), YaRN with
    # mscale_all_dim.
    "sarvam-mla": ("SarvamMLAConfig", dict(num_key_value_heads=4, kv_lora_rank=32, qk_nope_head_dim=16,
                                           qk_rope_head_dim=8, v_head_dim=24, n_routed_experts=8, num_experts_per_tok=3,
                                           moe_intermediate_size=32, num_hidden_layers=3,
                                           rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                                                            "original_max_position_embeddings": 64, "beta_fast": 32,
                                                            "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0},
                                           pad_token_id=ENDOFTEXT)),
    # Kolibri 1: EXAONE 4's attention (q/k norms, sliding layers rotating, global ones without RoPE),
    # GLM-4's sandwich norms, experts in every layer chosen on the router's logit + its (random,
    # nonzero) expert bias, a shared expert. The first: Kolibri1Config's default layer_types (every
    # 5th global), weights not renormalized; the second: layer_types given, renormalized, one KV head.
    "kolibri1": ("Kolibri1Config", dict(num_hidden_layers=5, head_dim=16, sliding_window=6, num_experts=8,
                                        num_experts_per_tok=2, moe_intermediate_size=32,
                                        shared_expert_intermediate_size=64, pad_token_id=ENDOFTEXT)),
    "kolibri1-norm": ("Kolibri1Config", dict(num_hidden_layers=3, head_dim=16, num_key_value_heads=1, sliding_window=5,
                                             layer_types=["sliding_attention", "full_attention", "sliding_attention"],
                                             num_experts=4, num_experts_per_tok=3, moe_intermediate_size=32,
                                             shared_expert_intermediate_size=32, norm_topk_prob=True,
                                             pad_token_id=ENDOFTEXT)),
    # LFM3: Lfm3Config's default layer_types (conv, conv, full, conv, sliding) and RoPE (full layers
    # proportional, 4 of 8 pairs turning; sliding layers their own base), sandwich norms, the heads'
    # output gate, 7 taps; or none of the gate and norms, with biases and a quarter of the pairs.
    "lfm3": ("Lfm3Config", dict(num_hidden_layers=5, head_dim=16, sliding_window=6, pad_token_id=ENDOFTEXT)),
    "lfm3-nogate": ("Lfm3Config", dict(num_hidden_layers=4, head_dim=16, use_attention_gate=False, use_sandwich_norm=False,
                                       attention_bias=True, conv_L_cache=3, sliding_window=8, tie_word_embeddings=False,
                                       layer_types=["sliding_attention", "conv", "full_attention", "conv"],
                                       rope_parameters={"full_attention": {"rope_type": "proportional", "rope_theta": 1e6,
                                                                           "factor": 2.0, "partial_rotary_factor": 0.25},
                                                        "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}},
                                       pad_token_id=ENDOFTEXT)),
    "lfm2-moe-nobias": ("Lfm2MoeConfig", dict(num_hidden_layers=3, layer_types=["full_attention", "conv", "conv"],
                                              num_experts=4, num_experts_per_tok=3, moe_intermediate_size=32,
                                              num_dense_layers=0, use_expert_bias=False, norm_topk_prob=False,
                                              pad_token_id=ENDOFTEXT)),
    # Ministral 3: Mistral's block, YaRN, queries scaled by 1 + beta · log(1 + floor(pos / orig)) (orig
    # small here, so the sequence crosses many steps); or every layer sliding with default RoPE.
    "ministral3": ("Ministral3Config", dict(head_dim=16, pad_token_id=ENDOFTEXT, rope_parameters={
        "rope_type": "yarn", "rope_theta": 1e6, "factor": 4.0, "original_max_position_embeddings": 8, "beta_fast": 32.0,
        "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0, "llama_4_scaling_beta": 0.1})),
    "ministral3-window": ("Ministral3Config", dict(head_dim=32, sliding_window=8, pad_token_id=ENDOFTEXT, rope_parameters={
        "rope_type": "default", "rope_theta": 1e4, "original_max_position_embeddings": 16, "llama_4_scaling_beta": 0.3})),
    # Mistral 4: DeepSeek-V3's latent attention (q LoRA, interleaved rope), YaRN with mscale_all_dim,
    # Ministral 3's query scale, a softmax router within the group whose best two sum highest,
    # renormalized and scaled; or q_proj, rotate-half rope, raw weights, no groups.
    "mistral4": ("Mistral4Config", dict(num_hidden_layers=3, num_key_value_heads=4, q_lora_rank=32, kv_lora_rank=32,
                                        qk_nope_head_dim=16,
                                        qk_rope_head_dim=16, v_head_dim=16, n_routed_experts=8, num_experts_per_tok=2,
                                        n_group=2, topk_group=1, n_shared_experts=1, moe_intermediate_size=32,
                                        first_k_dense_replace=1, routed_scaling_factor=1.5, pad_token_id=ENDOFTEXT,
                                        rope_parameters={"rope_type": "yarn", "rope_theta": 1e4, "factor": 4.0,
                                                         "original_max_position_embeddings": 8, "beta_fast": 32.0,
                                                         "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0,
                                                         "llama_4_scaling_beta": 0.1, "partial_rotary_factor": 0.5})),
    "mistral4-nolora": ("Mistral4Config", dict(num_hidden_layers=2, num_key_value_heads=4, q_lora_rank=None,
                                               kv_lora_rank=48, qk_nope_head_dim=16,
                                               qk_rope_head_dim=8, v_head_dim=24, n_routed_experts=4, num_experts_per_tok=3,
                                               n_shared_experts=2, moe_intermediate_size=32, norm_topk_prob=False,
                                               rope_interleave=False, pad_token_id=ENDOFTEXT,
                                               rope_parameters={"rope_type": "yarn", "rope_theta": 1e4, "factor": 2.0,
                                                                "original_max_position_embeddings": 16,
                                                                "llama_4_scaling_beta": 0.2,
                                                                "partial_rotary_factor": 8 / 24})),
    # MiniCPM3: DeepSeek-V2's latent attention with rotate-half RoPE, dense MLPs, Granite-like scales
    # (scale_emb, scale_depth / sqrt(layers), hidden / dim_model_base); or q_proj, the nulls' defaults
    # (v_head_dim hidden / heads, scale_depth sqrt(layers), dim_model_base hidden) and LongRoPE (the
    # long factors past 64 positions).
    "minicpm3": ("MiniCPM3Config", dict(num_hidden_layers=3, num_key_value_heads=4, q_lora_rank=32, kv_lora_rank=32,
                                        qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16, scale_emb=12,
                                        scale_depth=1.4, dim_model_base=32, pad_token_id=ENDOFTEXT)),
    "minicpm3-longrope": ("MiniCPM3Config", dict(num_key_value_heads=4, q_lora_rank=None, kv_lora_rank=48,
                                                 qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=None,
                                                 scale_depth=None, dim_model_base=None, pad_token_id=ENDOFTEXT,
                                                 rope_parameters={"rope_type": "longrope", "rope_theta": 1e4,
                                                                  "original_max_position_embeddings": 64,
                                                                  "short_factor": [1.0, 1.1, 1.5, 2.0],
                                                                  "long_factor": [1.0, 1.3, 2.5, 4.0]})),
    # Youtu-LLM: DeepSeek-V3's latent attention (q LoRA, pair-interleaved RoPE, YaRN whose mscale /
    # mscale_all_dim scale cos / sin and mscale_all_dim² the scores) in Llama's block with a dense
    # SwiGLU MLP in every layer, an lm_head; or q_proj, rotate-half RoPE, tied embeddings
    # (YoutuConfig's default).
    "youtu": ("YoutuConfig", dict(num_hidden_layers=3, num_key_value_heads=4, q_lora_rank=32, kv_lora_rank=32,
                                  qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=24, tie_word_embeddings=False,
                                  pad_token_id=ENDOFTEXT,
                                  rope_parameters={"rope_type": "yarn", "rope_theta": 1e4, "factor": 4.0,
                                                   "original_max_position_embeddings": 16, "beta_fast": 32.0,
                                                   "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 0.8})),
    "youtu-nolora": ("YoutuConfig", dict(num_key_value_heads=4, q_lora_rank=None, kv_lora_rank=48, qk_nope_head_dim=16,
                                         qk_rope_head_dim=16, v_head_dim=16, rope_interleave=False,
                                         pad_token_id=ENDOFTEXT,
                                         rope_parameters={"rope_type": "default", "rope_theta": 5e5})),
    # Solar Open: Llama's attention (q/k/v biases), GLM-4 MoE's router and shared expert in every layer
    # (no groups, no scaling, as released; GLM-4 MoE's cases cover those).
    "solar-open": ("SolarOpenConfig", dict(head_dim=16, n_routed_experts=8, num_experts_per_tok=2,
                                           moe_intermediate_size=32, n_shared_experts=1, attention_bias=True,
                                           pad_token_id=ENDOFTEXT)),
    # CWM: Llama's block, MLP biases, its default layer types (full every 4th layer from 0) and llama3 RoPE.
    "cwm": ("CwmConfig", dict(num_hidden_layers=5, head_dim=16, sliding_window=6, mlp_bias=True, pad_token_id=ENDOFTEXT,
                              rope_parameters={"rope_type": "llama3", "rope_theta": 1e6, "factor": 16.0,
                                               "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                                               "original_max_position_embeddings": 32})),
    # FlexOlmo: OLMo 2's post-norm block with OLMoE's experts in every layer.
    "flex-olmo": ("FlexOlmoConfig", dict(num_experts=4, num_experts_per_tok=2, norm_topk_prob=True,
                                         pad_token_id=ENDOFTEXT)),
    # SmolLM3: every 4th layer attends without RoPE (NoPE); with use_sliding_window the NoPE
    # layers slide (transformers' default layer_types).
    "smollm3": ("SmolLM3Config", dict(num_hidden_layers=4, pad_token_id=ENDOFTEXT)),
    # Granite (IBM Granite 3.x dense): Llama with four multipliers (embeddings, attention scores,
    # the residual branches, 1 / logits).
    "granite": ("GraniteConfig", dict(embedding_multiplier=6.0, attention_multiplier=0.0625, residual_multiplier=0.375,
                                      logits_scaling=2.5, attention_bias=True, tie_word_embeddings=False)),
    # GraniteSWA: Granite's multipliers with attention sinks and sliding layers — its default layer
    # types (full every 4th layer from 0, the others sliding over 6 keys), tied; the second with
    # layer_types, a window of 5, per-layer RoPE bases (layer_rope_theta: the full layers NoPE, the
    # sliding ones a base other than rope_theta's) and MLP biases.
    "granite-swa": ("GraniteSWAConfig", dict(num_hidden_layers=4, sliding_window=6, embedding_multiplier=6.0,
                                             attention_multiplier=0.0625, residual_multiplier=0.375, logits_scaling=2.5,
                                             attention_bias=True, pad_token_id=ENDOFTEXT)),
    "granite-swa-nope": ("GraniteSWAConfig", dict(
        num_hidden_layers=4, sliding_window=5, layer_types=["sliding_attention", "full_attention", "sliding_attention",
                                                            "full_attention"],
        layer_rope_theta=[5e5, 0, 5e5, 0], mlp_bias=True, embedding_multiplier=3.0, attention_multiplier=0.125,
        residual_multiplier=0.5, logits_scaling=2.0, tie_word_embeddings=False, pad_token_id=ENDOFTEXT)),
    # GraniteMoE (granite-3.x-1b-a400m / 3b-a800m): Granite's multipliers with experts stacked in
    # two 3-D tensors (input_linear gate|up, output_linear), softmax over the top-k logits.
    "granitemoe": ("GraniteMoeConfig", dict(num_local_experts=4, num_experts_per_tok=2, intermediate_size=32,
                                            embedding_multiplier=3.0, attention_multiplier=0.125,
                                            residual_multiplier=0.5, logits_scaling=2.0, tie_word_embeddings=False)),
    # OLMoE: full-width q/k norms in the pre-norm block, 8 experts top 2 (weights as they are),
    # MHA as OLMoE-1B-7B (llama.cpp's olmoe needs k_norm hidden wide); the second with GQA,
    # norm_topk_prob and clip_qkv (q, k, v clamped).
    # GraniteMoeShared: GraniteMoE plus an ungated shared expert (shared_mlp, gate|up in one tensor).
    "granitemoe-shared": ("GraniteMoeSharedConfig", dict(num_local_experts=4, num_experts_per_tok=2, intermediate_size=32,
                                                         shared_intermediate_size=64, embedding_multiplier=3.0,
                                                         attention_multiplier=0.125, residual_multiplier=0.5,
                                                         logits_scaling=2.0, tie_word_embeddings=False)),
    # gpt-oss: attention sinks, q/k/v/o biases, the first layer sliding (window 8), YaRN past 64
    # positions, 4 experts top 2 with biases and the clamped SwiGLU (limit 7: GptOssConfig's);
    # the second with a limit the random weights reach (0.75) and the layers the other way round.
    "gpt-oss": ("GptOssConfig", dict(num_local_experts=4, num_experts_per_tok=2, intermediate_size=32, head_dim=16,
                                     sliding_window=8, tie_word_embeddings=False, pad_token_id=ENDOFTEXT,
                                     rope_parameters={"rope_type": "yarn", "factor": 4.0, "beta_fast": 32.0,
                                                      "beta_slow": 1.0, "truncate": False,
                                                      "original_max_position_embeddings": 64,
                                                      "rope_theta": 150000.0})),
    "gpt-oss-limit": ("GptOssConfig", dict(num_local_experts=4, num_experts_per_tok=2, intermediate_size=32,
                                           head_dim=16, sliding_window=6, swiglu_limit=0.75,
                                           layer_types=["full_attention", "sliding_attention"],
                                           tie_word_embeddings=False, pad_token_id=ENDOFTEXT)),
    "olmoe": ("OlmoeConfig", dict(num_experts=8, num_experts_per_tok=2, intermediate_size=32, num_key_value_heads=4)),
    "olmoe-clip-norm": ("OlmoeConfig", dict(num_experts=4, num_experts_per_tok=2, intermediate_size=32,
                                            norm_topk_prob=True, clip_qkv=1.5)),
    # OLMo 2: the post-norm block (no norm before attention / MLP), q/k norms over the whole projection.
    "olmo2": ("Olmo2Config", dict(num_hidden_layers=3, pad_token_id=ENDOFTEXT)),
    "smollm3-window-bias": ("SmolLM3Config", dict(num_hidden_layers=4, no_rope_layers=[1, 0, 1, 1], use_sliding_window=True,
                                                  sliding_window=6, attention_bias=True, mlp_bias=True,
                                                  tie_word_embeddings=False, pad_token_id=ENDOFTEXT)),
    # RoPE over pairs (2i, 2i + 1) (the loader reorders q's and k's rows, biases and norms):
    # Helium with q/k/v and MLP biases; ERNIE 4.5 with use_bias (every linear), tied; GLM with
    # its fused gate_up_proj, q/k/v biases and half of each head rotating; GLM-4 adds the
    # sandwich norms.
    "helium": ("HeliumConfig", dict(head_dim=16, attention_bias=True, mlp_bias=True, pad_token_id=ENDOFTEXT)),
    "ernie4_5": ("Ernie4_5Config", dict(head_dim=16, use_bias=True, pad_token_id=ENDOFTEXT)),
    "glm": ("GlmConfig", dict(head_dim=16, pad_token_id=ENDOFTEXT)),
    "glm4": ("Glm4Config", dict(head_dim=16, pad_token_id=ENDOFTEXT)),
    # Seed-OSS: q/k/v biases (attention_bias) and o's (attention_out_bias), MLP biases.
    "seed-oss": ("SeedOssConfig", dict(head_dim=16, attention_out_bias=True, mlp_bias=True, pad_token_id=ENDOFTEXT)),
    # OLMo 3: OLMo 2's block, three sliding layers (window 6) and a global one (the 4th), the
    # global layer's RoPE with linear scaling, the sliding ones' without and with another base.
    "olmo3": ("Olmo3Config", dict(num_hidden_layers=4, sliding_window=6, pad_token_id=ENDOFTEXT, rope_parameters={
        "full_attention": {"rope_type": "linear", "factor": 4.0, "rope_theta": 10000.0},
        "sliding_attention": {"rope_type": "default", "rope_theta": 500.0}})),
    # Ministral: Mistral's block with sliding layers by layer_types.
    "ministral": ("MinistralConfig", dict(head_dim=16, sliding_window=6, layer_types=["full_attention", "sliding_attention"])),
    # Cohere: a bias-free LayerNorm before a parallel block, RoPE over pairs (2i, 2i + 1),
    # q/k/v/o biases, logits times logit_scale (0.25), tied; Cohere 2 adds sliding layers
    # (window 6) that alone rotate: three sliding layers and a global one without RoPE.
    "cohere": ("CohereConfig", dict(attention_bias=True, logit_scale=0.25, pad_token_id=ENDOFTEXT)),
    "cohere2": ("Cohere2Config", dict(num_hidden_layers=4, sliding_window=6, pad_token_id=ENDOFTEXT)),
    # Cohere 2 MoE: Cohere 2's block with experts (intermediate_size wide) after dense layers. The
    # first: one dense layer prefix_dense_intermediate_size wide that rotates though global
    # (prefix_dense_sliding_window_pattern 1), a softmax over the top 2 of 8 logits, one shared
    # expert averaged with the routed sum, the rest's layer types every 2nd global (NoPE). The
    # second: two dense layers with their own pattern (2: the global one NoPE), the top 3 of 4
    # sigmoids unrenormalized, two shared experts added, biases, one KV head, untied.
    "cohere2-moe": ("Cohere2MoeConfig", dict(num_hidden_layers=4, head_dim=16, sliding_window=6, sliding_window_pattern=2,
                                             rms_norm_eps=None, first_k_dense_replace=1, intermediate_size=32,
                                             prefix_dense_intermediate_size=64, num_experts=8, num_experts_per_tok=2,
                                             num_shared_experts=1, logit_scale=0.25, pad_token_id=ENDOFTEXT)),
    "cohere2-moe-sigmoid": ("Cohere2MoeConfig", dict(num_hidden_layers=4, head_dim=16, num_key_value_heads=1,
                                                     sliding_window=5, rms_norm_eps=None, first_k_dense_replace=2,
                                                     prefix_dense_sliding_window_pattern=2, intermediate_size=64,
                                                     num_experts=4, num_experts_per_tok=3, num_shared_experts=2,
                                                     shared_expert_combination_strategy="sum",
                                                     expert_selection_fn="sigmoid", norm_topk_prob=False,
                                                     attention_bias=True, tie_word_embeddings=False,
                                                     pad_token_id=ENDOFTEXT)),
    # HY-V3 (Hy3): Qwen3-MoE's attention, a sigmoid router choosing on score + its (random,
    # nonzero) expert bias, the top weights renormalized and times router_scaling_factor, ungated
    # shared experts. The first: its defaults (the first layer dense, one shared expert, scale
    # 2.826, RoPE base 11158840); the second: mlp_layer_types with the dense layer in the middle,
    # the top 3 of 4, two shared experts, scale 1.5, biases, one KV head, base 10000.
    "hy-v3": ("HYV3Config", dict(num_hidden_layers=3, head_dim=16, num_experts=8, num_experts_per_tok=2,
                                 moe_intermediate_size=32, pad_token_id=ENDOFTEXT)),
    "hy-v3-types": ("HYV3Config", dict(num_hidden_layers=3, head_dim=16, num_key_value_heads=1,
                                       mlp_layer_types=["sparse", "dense", "sparse"], num_experts=4,
                                       num_experts_per_tok=3, moe_intermediate_size=32, num_shared_experts=2,
                                       router_scaling_factor=1.5, attention_bias=True,
                                       rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                                       pad_token_id=ENDOFTEXT)),
    # Mellum: Qwen3-MoE's attention and softmax router. The first with MellumConfig's defaults (every
    # layer full and sparse, RoPE base 500000, norm_topk_prob true); the second: sliding layers
    # rotating with their own base, the full one with linear scaling, a dense layer in the middle,
    # the top 3 of 4 not renormalized, biases, one KV head.
    "mellum": ("MellumConfig", dict(num_hidden_layers=3, head_dim=16, num_experts=8, num_experts_per_tok=2,
                                    moe_intermediate_size=32, pad_token_id=ENDOFTEXT)),
    "mellum-types": ("MellumConfig", dict(num_hidden_layers=3, head_dim=16, num_key_value_heads=1, sliding_window=6,
                                          layer_types=["sliding_attention", "full_attention", "sliding_attention"],
                                          mlp_layer_types=["sparse", "dense", "sparse"], num_experts=4,
                                          num_experts_per_tok=3, moe_intermediate_size=32, norm_topk_prob=False,
                                          attention_bias=True, rope_parameters={
                                              "full_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 20000.0},
                                              "sliding_attention": {"rope_type": "default", "rope_theta": 500.0}},
                                          pad_token_id=ENDOFTEXT)),
    # Flint: Qwen3-MoE's attention with attention sinks, RoPE on the sliding layers only, a sigmoid
    # router and an ungated shared expert. The first with FlintConfig's default layer_types (layer
    # 2 of 4 sliding) and mlp_only_layers ([0, 1]); the second: layer types and mlp_only_layers
    # given, the top 3 of 4 not renormalized, biases, one KV head, base 500.
    "flint": ("FlintConfig", dict(num_hidden_layers=4, head_dim=16, sliding_window=6, num_experts=8, num_experts_per_tok=2,
                                  moe_intermediate_size=32, shared_expert_intermediate_size=64, pad_token_id=ENDOFTEXT)),
    "flint-types": ("FlintConfig", dict(num_hidden_layers=3, head_dim=16, num_key_value_heads=1, sliding_window=5,
                                        layer_types=["sliding_attention", "full_attention", "sliding_attention"],
                                        mlp_only_layers=[1], num_experts=4, num_experts_per_tok=3, moe_intermediate_size=32,
                                        shared_expert_intermediate_size=32, norm_topk_prob=False, attention_bias=True,
                                        rope_parameters={"rope_type": "default", "rope_theta": 500.0},
                                        pad_token_id=ENDOFTEXT)),
    # Arcee: Llama's attention with an ungated relu² MLP (up_proj, down_proj), biases everywhere.
    "arcee": ("ArceeConfig", dict(attention_bias=True, mlp_bias=True)),
    # EXAONE 3 / 3.5: Llama's block under its modeling code's names (transformer.h.N.attn.attention.*,
    # mlp.c_fc_0 / c_fc_1 / c_proj) and its config.json's (num_layers, layer_norm_epsilon,
    # activation_function), as the Hub's files are; llama3 RoPE scaling as 3.5's, untied as 7.8B's.
    "exaone": ("ExaoneConfig", dict(head_dim=24, tie_word_embeddings=False, pad_token_id=ENDOFTEXT,
                                    rope_parameters={"rope_type": "llama3", "rope_theta": 1e6, "factor": 8.0,
                                                     "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                     "original_max_position_embeddings": 32})),
    # IQuest-Coder: Llama's block under its own architecture and model_type; attention and MLP biases.
    "iquestcoder": ("IQuestCoderConfig", dict(attention_bias=True, mlp_bias=True, head_dim=24, pad_token_id=ENDOFTEXT)),
    # HyperCLOVA X: Granite's multipliers (logits_scaling multiplying; attention_multiplier left to
    # its default 1/sqrt(head_dim)) with post norms after attention and the MLP; then without them
    # (use_post_norm false), an explicit attention multiplier and MLP biases.
    "hyperclovax": ("HyperCLOVAXConfig", dict(embedding_multiplier=3.0, residual_multiplier=0.6, logits_scaling=0.4,
                                              attention_bias=True, pad_token_id=ENDOFTEXT)),
    "hyperclovax-nopost": ("HyperCLOVAXConfig", dict(embedding_multiplier=2.0, residual_multiplier=0.3, logits_scaling=1.5,
                                                     attention_multiplier=0.2, use_post_norm=False, mlp_bias=True,
                                                     pad_token_id=ENDOFTEXT)),
    # InternLM3: Llama's block; config.json as the Hub's (InternLM3ForCausalLM, qkv_bias and bias
    # for attention_bias and mlp_bias, rope_scaling dynamic by factor 6 beside rope_theta 5e7);
    # InternLM3Config's default head_dim 128; max_position_embeddings 24, which the teacher-forced
    # sequence and greedy decoding cross.
    "internlm3": ("InternLM3Config", dict(qkv_bias=True, bias=True, max_position_embeddings=24, pad_token_id=ENDOFTEXT,
                                          rope_parameters={"rope_type": "dynamic", "factor": 6.0, "rope_theta": 5e7})),
    # NanoChat: RMSNorms without weights (the embeddings' too), RoPE by -θ, per-head q/k norms
    # after RoPE, an ungated relu² MLP (fc1, fc2), the logits capped at 15; then q/k/v/o biases,
    # one KV head per query head, a cap of 6 that bends the larger logits, and tied embeddings.
    "nanochat": ("NanoChatConfig", dict(pad_token_id=ENDOFTEXT)),
    "nanochat-bias-cap-tied": ("NanoChatConfig", dict(attention_bias=True, num_key_value_heads=4, final_logit_softcapping=6.0,
                                                      tie_word_embeddings=True, pad_token_id=ENDOFTEXT)),
    # Apertus: q/k norms, an ungated xIELU MLP with per-layer parameters, its default llama3 RoPE
    # scaling (factor 8 over 8192 positions, base 1.2e7: the low frequencies are scaled).
    "apertus": ("ApertusConfig", dict(pad_token_id=ENDOFTEXT)),
    # Nemotron: LayerNorm1P (1 + w, with bias), an ungated relu² MLP, half of each head rotating,
    # every bias.
    "nemotron": ("NemotronConfig", dict(attention_bias=True, mlp_bias=True, pad_token_id=ENDOFTEXT)),
    # Jais2: Llama's attention and block with LayerNorms (biases; layer_norm_eps, not the stray
    # rms_norm_eps), Nemotron's ungated relu² MLP; Jais2Config's defaults put biases on every
    # linear; head_dim other than hidden / heads. The second without biases, MQA, tied.
    "jais2": ("Jais2Config", dict(head_dim=24, pad_token_id=ENDOFTEXT)),
    "jais2-nobias-tied": ("Jais2Config", dict(attention_bias=False, mlp_bias=False, num_key_value_heads=1,
                                              tie_word_embeddings=True, pad_token_id=ENDOFTEXT)),
    # HunYuan dense: per-head q/k norms after RoPE, q/k/v/o biases, RoPE "dynamic" with a fixed
    # NTK alpha (the base stretched to 10000 · 1000^(16/14)).
    # VaultGemma: Gemma 2's block without its post norms (caps 3 / 8, a window of 6 on layer 0).
    "vaultgemma": ("VaultGemmaConfig", dict(head_dim=16, query_pre_attn_scalar=24, sliding_window=6,
                                            attn_logit_softcapping=3.0, final_logit_softcapping=8.0,
                                            pad_token_id=ENDOFTEXT)),
    "hunyuan-dense": ("HunYuanDenseV1Config", dict(head_dim=16, attention_bias=True, pad_token_id=ENDOFTEXT,
                                                   rope_parameters={"rope_type": "dynamic", "alpha": 1000.0, "factor": 1.0,
                                                                    "rope_theta": 10000.0})),
    # HunYuan MoE (Hunyuan-A13B's layout): HunYuan dense's attention (q/k norms after RoPE, the
    # fixed NTK alpha) with experts in every layer: softmax, the top moe_topk renormalized, one
    # shared MLP added ungated, all intermediate_size wide. Then the released config.json's
    # per-layer lists (moe_topk, num_shared_expert, moe_intermediate_size; the same value for
    # each layer) with top 3 of 4, q/k/v/o biases, tied embeddings and the default RoPE.
    "hunyuan-moe": ("HunYuanMoEV1Config", dict(head_dim=16, num_experts=8, moe_topk=2, pad_token_id=ENDOFTEXT,
                                               rope_parameters={"rope_type": "dynamic", "alpha": 1000.0, "factor": 1.0,
                                                                "rope_theta": 10000.0})),
    "hunyuan-moe-lists": ("HunYuanMoEV1Config", dict(head_dim=16, num_experts=4, moe_topk=[3, 3, 3], num_hidden_layers=3,
                                                     num_shared_expert=[1, 1, 1], moe_intermediate_size=[96, 96, 96],
                                                     use_mixed_mlp_moe=True, use_cla=False, moe_layer_num_skipped=0,
                                                     attention_bias=True, tie_word_embeddings=True,
                                                     pad_token_id=ENDOFTEXT)),
    # GPT-NeoX (Pythia): the fused query_key_value in per-head [q, k, v] groups, the parallel
    # block with two LayerNorms, exact GELU, biases everywhere, a quarter of each head rotary;
    # and its sequential block (use_parallel_residual false) without attention biases, tanh
    # GELU (gelu_fast, GPT-NeoX-20B's) and half the head rotary. (One KV head per query head:
    # GPTNeoXConfig has no such field; _COMMON's would otherwise say 2.)
    "gpt-neox": ("GPTNeoXConfig", dict(num_key_value_heads=4)),
    # GPT-2: learned positions, no RoPE, Conv1D weights, tied; GPTBigCode: the same block with
    # Linear weights, multi-query (one KV head) by default; its multi-head variant (c_attn in
    # per-head [q, k, v] groups) with unscaled scores (scale_attn_weights false), untied. (n_inner:
    # their name for the MLP width; the intermediate_size _COMMON passes is stored unread.)
    "gpt2": ("GPT2Config", dict(n_inner=96)),
    "gpt-bigcode": ("GPTBigCodeConfig", dict(n_inner=96)),
    # GPT-Neo: a global and a local layer (window 8), unscaled scores, out_proj's bias only.
    "gpt-neo": ("GPTNeoConfig", dict(window_size=8, attention_types=[[["global", "local"], 1]])),
    "gpt-bigcode-mha-unscaled": ("GPTBigCodeConfig", dict(n_inner=96, multi_query=False, scale_attn_weights=False,
                                                          tie_word_embeddings=False)),
    # GPT-J: Phi's parallel block without attention biases, RoPE over pairs (2i, 2i + 1) of the
    # first rotary_dim dims (8 of 16; and every dim), lm_head's bias, untied.
    "gptj": ("GPTJConfig", dict(n_inner=96, rotary_dim=8)),
    "gptj-full-rotary": ("GPTJConfig", dict(rotary_dim=16)),
    # OPT: learned positions (rows pos + 2), the pre-norm LayerNorm block, an ungated ReLU MLP,
    # biases (enable_bias), tied; and without biases, untied. (ffn_dim: its MLP width.)
    "opt": ("OPTConfig", dict(ffn_dim=96)),
    "opt-nobias-untied": ("OPTConfig", dict(ffn_dim=96, enable_bias=False, tie_word_embeddings=False)),
    # Falcon: falcon-7b's block (multi-query, parallel with one norm, no biases, exact GELU, tied);
    # the old sequential multi-head block with biases, untied; the new decoder architecture with
    # two parallel norms (ln_attn, ln_mlp) and 2 KV heads; and with one norm (Falcon2-11B's) and
    # biases. (ffn_hidden_size: its MLP width.)
    "falcon-7b": ("FalconConfig", dict(ffn_hidden_size=96)),
    "falcon-seq-mha-bias": ("FalconConfig", dict(ffn_hidden_size=96, multi_query=False, parallel_attn=False, bias=True,
                                                 tie_word_embeddings=False)),
    "falcon-new-2ln": ("FalconConfig", dict(ffn_hidden_size=96, new_decoder_architecture=True, num_kv_heads=2)),
    "falcon-new-1ln-bias": ("FalconConfig", dict(ffn_hidden_size=96, new_decoder_architecture=True, num_kv_heads=2,
                                                 num_ln_in_parallel_attn=1, bias=True)),
    # Bloom: ALiBi (4 heads: slopes 2^-2k; 6 heads: the power-of-2 slopes of 4 and two odd
    # powers of the next base), the embeddings' LayerNorm, per-head [q, k, v] rows, biases, tied;
    # and untied.
    "bloom": ("BloomConfig", dict()),
    "bloom-6heads-untied": ("BloomConfig", dict(hidden_size=96, num_attention_heads=6, tie_word_embeddings=False)),
    # MPT: ALiBi with MPT's slopes (4 heads; 6 heads: the odd slopes of 8 first), bias-free
    # LayerNorms, no biases, exact GELU; with clip_qkv and softmax_scale.
    "mpt": ("MptConfig", dict()),
    "mpt-6heads-clip-scale": ("MptConfig", dict(hidden_size=96, num_attention_heads=6,
                                                attn_config={"clip_qkv": 1.5, "softmax_scale": 0.2})),
    # OLMo 1: LayerNorms without weights or biases; with clip_qkv, q/k/v/o biases and tied.
    "olmo": ("OlmoConfig", dict(pad_token_id=ENDOFTEXT)),
    "olmo-clip-bias-tied": ("OlmoConfig", dict(pad_token_id=ENDOFTEXT, clip_qkv=0.5, attention_bias=True,
                                               tie_word_embeddings=True)),
    "gpt-neox-sequential": ("GPTNeoXConfig", dict(num_key_value_heads=4, use_parallel_residual=False,
                                                  hidden_act="gelu_fast", attention_bias=False,
                                                  rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                                                   "partial_rotary_factor": 0.5})),
    # PhiMoE: Mixtral's experts with LayerNorms, q/k/v/o and lm_head biases and the sparsemixer
    # router; router_jitter_noise 0.3 leaves several experts inside its mask (weights below 1).
    # The second: the default 0.01 and LongRoPE whose short and long factors are equal (transformers'
    # PhimoeRotaryEmbedding rotates with the short ones past original_max_position_embeddings too:
    # docs/models.md) but whose short_mscale / long_mscale differ, the teacher-forced 96 tokens
    # past 48; a window of 8 on every layer.
    "phimoe": ("PhimoeConfig", dict(num_local_experts=6, attention_bias=True, lm_head_bias=True, router_jitter_noise=0.3,
                                    pad_token_id=ENDOFTEXT)),
    "phimoe-longrope": ("PhimoeConfig", dict(num_local_experts=4, head_dim=16, sliding_window=8, pad_token_id=ENDOFTEXT,
                                             rope_parameters={
                                                 "rope_type": "longrope", "rope_theta": 10000.0,
                                                 "original_max_position_embeddings": 48,
                                                 "short_factor": [1.0, 1.05, 1.1, 1.3, 1.6, 2.0, 2.4, 2.9],
                                                 "long_factor": [1.0, 1.05, 1.1, 1.3, 1.6, 2.0, 2.4, 2.9],
                                                 "short_mscale": 1.1, "long_mscale": 1.3})),
}

# What `pyvt info` / vt_model_info report for each case.
EXPECTED_FEATURES: dict[str, tuple[str, list[str]]] = {
    "llama-bias-hd24": ("Llama", ["attention-bias", "mlp-bias", "head-dim 24"]),
    "llama-dynamic": ("Llama", []),
    "mistral": ("Mistral", []),
    "mistral-window8": ("Mistral", ["head-dim 32", "sliding-window 8 (every layer)"]),
    "qwen2-tied": ("Qwen2", ["qkv-bias"]),
    "qwen2-window6": ("Qwen2", ["qkv-bias", "sliding-window 6 (layer 1)"]),
    "qwen3-hd32-tied": ("Qwen3", ["qk-norm", "head-dim 32"]),
    "qwen3-bias-hd8": ("Qwen3", ["attention-bias", "qk-norm", "head-dim 8"]),
    "gemma2": ("Gemma2", ["gemma-norms", "geglu", "query-pre-attn-scalar 24", "attn-softcap 3", "final-softcap 8",
                          "sliding-window 8 (layer 0)"]),
    "gemma2-defaults-hd32": ("Gemma2", ["gemma-norms", "geglu", "query-pre-attn-scalar 256", "attn-softcap 50",
                                        "final-softcap 30", "head-dim 32", "sliding-window 4096 (layer 0)"]),
    "gemma3": ("Gemma3", ["qk-norm", "gemma-norms", "geglu", "query-pre-attn-scalar 256", "local-rope-theta 10000",
                          "sliding-window 6 (layer 0)"]),
    "gemma3-linear-hd32": ("Gemma3", ["qk-norm", "gemma-norms", "geglu", "query-pre-attn-scalar 32",
                                      "local-rope-theta 10000", "head-dim 32", "sliding-window 8 (layer 1)"]),
    "gemma": ("Gemma", ["gemma-norms", "geglu", "head-dim 32"]),
    "gemma-mqa-bias": ("Gemma", ["attention-bias", "gemma-norms", "geglu"]),
    "phi": ("Phi", ["attention-bias", "mlp-bias", "layer-norm", "parallel-block", "gelu-mlp", "rotary-dim 8"]),
    "phi-gqa-04": ("Phi", ["attention-bias", "mlp-bias", "layer-norm", "parallel-block", "gelu-mlp", "rotary-dim 6"]),
    "stablelm": ("StableLM", ["layer-norm", "rotary-dim 4"]),
    "stablelm-qkv-bias": ("StableLM", ["qkv-bias", "layer-norm", "rotary-dim 8"]),
    "starcoder2": ("Starcoder2", ["attention-bias", "mlp-bias", "layer-norm"]),
    "starcoder2-window-nobias": ("Starcoder2", ["layer-norm", "sliding-window 8 (every layer)"]),
    "exaone4": ("Exaone4", ["qk-norm", "post-norm", "no-rope layer 1", "sliding-window 6 (layer 0)"]),
    "exaone4-nowindow": ("Exaone4", ["qk-norm", "post-norm"]),
    "phi3": ("Phi3", ["fused-qkv", "fused-gate-up"]),
    "phi3-longrope": ("Phi3", ["fused-qkv", "fused-gate-up"]),
    "qwen2-yarn": ("Qwen2", ["qkv-bias"]),
    "phi3-partial-rotary": ("Phi3", ["fused-qkv", "fused-gate-up", "rotary-dim 8"]),
    "phi3-window8": ("Phi3", ["fused-qkv", "fused-gate-up", "sliding-window 8 (every layer)"]),
    "mixtral": ("Mixtral", ["moe 4 experts top-2", "norm-topk"]),
    "qwen3-moe": ("Qwen3MoE", ["qk-norm", "moe 8 experts top-3 (2 of 3 layers)", "norm-topk", "head-dim 32"]),
    "qwen2-moe-shared": ("Qwen2MoE", ["qkv-bias", "moe 4 experts top-2", "shared-expert 64"]),
    "glm4-moe": ("Glm4MoE", ["qkv-bias", "moe 8 experts top-3 (2 of 3 layers)", "norm-topk", "shared-expert 32",
                             "sigmoid-router groups 2/4 scale 2.5", "rotary-dim 8"]),
    "glm4-moe-qknorm": ("Glm4MoE", ["qk-norm", "moe 4 experts top-2", "shared-expert 64", "sigmoid-router",
                                    "rotary-dim 8"]),
    "deepseek-v2": ("DeepseekV2", ["moe 8 experts top-3 (2 of 3 layers)", "shared-expert 64",
                                   "softmax-router groups 2/4 scale 1.5", "mla kv-lora 512 heads 32+64 v 32",
                                   "interleaved-rope"]),
    "deepseek-v2-lora": ("DeepseekV2", ["moe 4 experts top-2", "shared-expert 32",
                                        "mla kv-lora 32 q-lora 32 heads 16+8 v 16", "interleaved-rope"]),
    "deepseek-v3": ("DeepseekV3", ["moe 8 experts top-2 (2 of 3 layers)", "norm-topk", "shared-expert 32",
                                   "sigmoid-router groups 2/4 scale 2.5", "mla kv-lora 32 q-lora 32 heads 16+8 v 24",
                                   "interleaved-rope"]),
    "deepseek-v3-halfrope": ("DeepseekV3", ["moe 4 experts top-2", "shared-expert 64", "sigmoid-router scale 2.5",
                                            "mla kv-lora 48 heads 16+16 v 16"]),
    "minimax-m2": ("MiniMaxM2", ["qk-norm-full", "moe 8 experts top-2", "norm-topk", "sigmoid-router", "rotary-dim 8"]),
    "minimax-m2-full-rope": ("MiniMaxM2", ["qk-norm-full", "moe 4 experts top-3", "norm-topk", "sigmoid-router",
                                           "head-dim 32"]),
    "ernie4_5-moe": ("Ernie4_5_MoE", ["interleaved-rope", "moe 8 experts top-2 (2 of 3 layers)", "norm-topk",
                                      "shared-expert 32"]),
    "ernie4_5-moe-interval": ("Ernie4_5_MoE", ["interleaved-rope", "moe 4 experts top-3 (1 of 4 layers)", "norm-topk"]),
    "exaone-moe": ("ExaoneMoE", ["qk-norm", "no-rope layers 1,3", "moe 8 experts top-2 (3 of 4 layers)", "norm-topk",
                                 "shared-expert 32", "sigmoid-router groups 1/2 scale 2.5", "sliding-window 6 (layers 0,2)"]),
    "exaone-moe-types": ("ExaoneMoE", ["qk-norm", "no-rope layer 1", "moe 4 experts top-2 (2 of 3 layers)",
                                       "shared-expert 64", "sigmoid-router", "sliding-window 8 (layers 0,2)"]),
    "axk1": ("AXK1", ["moe 8 experts top-2 (2 of 3 layers)", "norm-topk", "shared-expert 32",
                      "sigmoid-router groups 2/4 scale 2.5", "moe-output-norm", "mla kv-lora 32 q-lora 32 heads 16+8 v 24",
                      "interleaved-rope"]),
    "axk1-freq": ("AXK1", ["moe 4 experts top-3 (1 of 4 layers)", "norm-topk", "shared-expert 64",
                           "sigmoid-router scale 1.5", "moe-output-norm", "mla kv-lora 32 q-lora 32 heads 16+16 v 16"]),
    "glm4-moe-lite": ("Glm4MoeLite", ["moe 8 experts top-4 (2 of 3 layers)", "norm-topk", "shared-expert 32",
                                      "sigmoid-router scale 1.8", "mla kv-lora 32 q-lora 32 heads 16+16 v 32",
                                      "interleaved-rope"]),
    "dots1": ("Dots1", ["attention-bias", "qk-norm", "moe 8 experts top-2 (2 of 3 layers)", "shared-expert 32",
                        "sigmoid-router groups 1/2", "sliding-window 6 (layer 2)"]),
    "lfm2": ("Lfm2", ["qk-norm", "short-conv 3 (layers 0,2)"]),
    "lfm2-bias": ("Lfm2", ["qk-norm", "short-conv 4 (layers 0,2,3)", "conv-bias"]),
    "afmoe": ("Afmoe", ["qk-norm", "sandwich-norms", "attention-gate per-dim", "no-rope layers 1,3",
                        "moe 8 experts top-2 (3 of 4 layers)", "norm-topk", "shared-expert 32", "sigmoid-router",
                        "sliding-window 6 (layers 0,2)"]),
    "afmoe-mup": ("Afmoe", ["attention-bias", "qk-norm", "sandwich-norms", "attention-gate per-dim",
                            "mup-embedding-scale 8", "no-rope layer 0", "moe 4 experts top-3", "norm-topk",
                            "shared-expert 64", "sigmoid-router scale 2.5", "sliding-window 5 (layers 1..2)"]),
    "afmoe-gguf": ("Afmoe", ["qk-norm", "sandwich-norms", "attention-gate per-dim", "mup-embedding-scale 8",
                             "no-rope layer 3", "moe 8 experts top-2 (3 of 4 layers)", "norm-topk", "shared-expert 64",
                             "sigmoid-router scale 1.5", "head-dim 24", "sliding-window 6 (layers 0..2)"]),
    "sarvam-moe": ("SarvamMoE", ["qkv-bias", "qk-norm", "fused-qkv", "moe 8 experts top-2 (2 of 3 layers)", "norm-topk",
                                 "shared-expert 32", "sigmoid-router groups 1/2 scale 2.5", "head-dim 24"]),
    "sarvam-moe-plain": ("SarvamMoE", ["fused-qkv", "moe 4 experts top-2", "shared-expert 64", "sigmoid-router scale 2.5",
                                       "rotary-dim 8"]),
    "sarvam-mla": ("SarvamMLA", ["moe 8 experts top-3 (2 of 3 layers)", "norm-topk", "shared-expert 32",
                                 "sigmoid-router scale 2.5", "mla kv-lora 32 heads 16+8 v 24", "interleaved-rope"]),
    "kolibri1": ("Kolibri1", ["qk-norm", "sandwich-norms", "no-rope layer 4", "moe 8 experts top-2", "shared-expert 64",
                              "sigmoid-router logit-choice", "sliding-window 6 (layers 0..3)"]),
    "kolibri1-norm": ("Kolibri1", ["qk-norm", "sandwich-norms", "no-rope layer 1", "moe 4 experts top-3", "norm-topk",
                                   "shared-expert 32", "sigmoid-router logit-choice", "sliding-window 5 (layers 0,2)"]),
    "lfm3": ("Lfm3", ["qk-norm", "sandwich-norms", "attention-gate", "proportional-rope 8 of 16 dims",
                      "local-rope-theta 10000", "short-conv 7 (layers 0,1,3)", "sliding-window 6 (layer 4)"]),
    "lfm3-nogate": ("Lfm3", ["attention-bias", "qk-norm", "proportional-rope 4 of 16 dims", "local-rope-theta 10000",
                             "short-conv 3 (layers 1,3)", "sliding-window 8 (layer 0)"]),
    "lfm2-moe": ("Lfm2Moe", ["qk-norm", "moe 8 experts top-2 (2 of 3 layers)", "norm-topk", "sigmoid-router scale 1.5",
                             "short-conv 3 (layers 0,2)"]),
    "lfm2-moe-nobias": ("Lfm2Moe", ["qk-norm", "moe 4 experts top-3", "sigmoid-router", "short-conv 3 (layers 1..2)"]),
    "ministral3": ("Ministral3", ["query-log-scale 0.1 per 8"]),
    "ministral3-window": ("Ministral3", ["query-log-scale 0.3 per 16", "head-dim 32", "sliding-window 8 (every layer)"]),
    "mistral4": ("Mistral4", ["query-log-scale 0.1 per 8", "moe 8 experts top-2 (2 of 3 layers)", "norm-topk",
                              "shared-expert 32", "softmax-router groups 1/2 scale 1.5",
                              "mla kv-lora 32 q-lora 32 heads 16+16 v 16", "interleaved-rope"]),
    "mistral4-nolora": ("Mistral4", ["query-log-scale 0.2 per 16", "moe 4 experts top-3", "shared-expert 64",
                                     "mla kv-lora 48 heads 16+8 v 24"]),
    "minicpm3": ("MiniCPM3", ["embedding-multiplier 12", "residual-multiplier 0.80829", "logits-scaling 2",
                              "mla kv-lora 32 q-lora 32 heads 16+8 v 16"]),
    "minicpm3-longrope": ("MiniCPM3", ["embedding-multiplier 12", "residual-multiplier 1", "logits-scaling 1",
                                       "mla kv-lora 48 heads 16+8 v 16"]),
    "youtu": ("Youtu", ["mla kv-lora 32 q-lora 32 heads 16+8 v 24", "interleaved-rope"]),
    "youtu-nolora": ("Youtu", ["mla kv-lora 48 heads 16+16 v 16"]),
    "solar-open": ("SolarOpen", ["qkv-bias", "moe 8 experts top-2", "norm-topk", "shared-expert 32", "sigmoid-router"]),
    "cwm": ("Cwm", ["mlp-bias", "sliding-window 6 (layers 1..3)"]),
    "flex-olmo": ("FlexOlmo", ["qk-norm-full", "post-norm", "moe 4 experts top-2", "norm-topk"]),
    "smollm3": ("SmolLM3", ["no-rope layer 3"]),
    "olmo2": ("OLMo2", ["qk-norm-full", "post-norm"]),
    "olmoe": ("OLMoE", ["qk-norm-full", "moe 8 experts top-2"]),
    "olmoe-clip-norm": ("OLMoE", ["qk-norm-full", "clip-qkv 1.5", "moe 4 experts top-2", "norm-topk"]),
    "granitemoe": ("GraniteMoE", ["embedding-multiplier 3", "attention-multiplier 0.125", "residual-multiplier 0.5",
                                  "logits-scaling 2", "moe 4 experts top-2", "norm-topk"]),
    "granitemoe-shared": ("GraniteMoeShared", ["embedding-multiplier 3", "attention-multiplier 0.125",
                                               "residual-multiplier 0.5", "logits-scaling 2", "moe 4 experts top-2",
                                               "norm-topk", "shared-expert 64"]),
    "gpt-oss": ("GptOss", ["attention-bias", "attention-sinks", "swiglu-limit 7", "moe 4 experts top-2", "norm-topk",
                           "sliding-window 8 (layer 0)"]),
    "gpt-oss-limit": ("GptOss", ["attention-bias", "attention-sinks", "swiglu-limit 0.75", "moe 4 experts top-2",
                                 "norm-topk", "sliding-window 6 (layer 1)"]),
    "granite": ("Granite", ["attention-bias", "embedding-multiplier 6", "attention-multiplier 0.0625",
                            "residual-multiplier 0.375", "logits-scaling 2.5"]),
    "granite-swa": ("GraniteSWA", ["attention-bias", "attention-sinks", "embedding-multiplier 6",
                                   "attention-multiplier 0.0625", "residual-multiplier 0.375", "logits-scaling 2.5",
                                   "sliding-window 6 (layers 1..3)"]),
    "granite-swa-nope": ("GraniteSWA", ["mlp-bias", "attention-sinks", "embedding-multiplier 3",
                                        "attention-multiplier 0.125", "residual-multiplier 0.5", "logits-scaling 2",
                                        "no-rope layers 1,3", "sliding-window 5 (layers 0,2)"]),
    "smollm3-window-bias": ("SmolLM3", ["attention-bias", "mlp-bias", "no-rope layer 1", "sliding-window 6 (layer 1)"]),
    "helium": ("Helium", ["qkv-bias", "mlp-bias", "interleaved-rope"]),
    "ernie4_5": ("Ernie4_5", ["attention-bias", "mlp-bias", "interleaved-rope"]),
    "glm": ("Glm", ["qkv-bias", "interleaved-rope", "fused-gate-up", "rotary-dim 8"]),
    "glm4": ("Glm4", ["qkv-bias", "sandwich-norms", "interleaved-rope", "fused-gate-up", "rotary-dim 8"]),
    "seed-oss": ("SeedOss", ["attention-bias", "mlp-bias"]),
    "olmo3": ("OLMo3", ["qk-norm-full", "post-norm", "local-rope-theta 500", "sliding-window 6 (layers 0..2)"]),
    "ministral": ("Ministral", ["sliding-window 6 (layer 1)"]),
    "cohere": ("Cohere", ["attention-bias", "layer-norm", "parallel-block", "logit-scale 0.25", "interleaved-rope"]),
    "cohere2": ("Cohere2", ["layer-norm", "parallel-block", "logit-scale 0.0625", "interleaved-rope",
                            "no-rope layer 3", "sliding-window 6 (layers 0..2)"]),
    "cohere2-moe": ("Cohere2Moe", ["layer-norm", "parallel-block", "logit-scale 0.25", "interleaved-rope", "no-rope layer 2",
                                   "moe 8 experts top-2 (3 of 4 layers)", "norm-topk", "shared-expert 32 average",
                                   "sliding-window 6 (layers 1,3)"]),
    "cohere2-moe-sigmoid": ("Cohere2Moe", ["attention-bias", "layer-norm", "parallel-block", "logit-scale 0.0625",
                                           "interleaved-rope", "no-rope layer 1", "moe 4 experts top-3 (2 of 4 layers)",
                                           "shared-expert 128", "sigmoid-router", "sliding-window 5 (layers 0,2,3)"]),
    "hy-v3": ("HYV3", ["qk-norm", "moe 8 experts top-2 (2 of 3 layers)", "norm-topk", "shared-expert 32",
                       "sigmoid-router scale 2.826"]),
    "hy-v3-types": ("HYV3", ["attention-bias", "qk-norm", "moe 4 experts top-3 (2 of 3 layers)", "norm-topk",
                             "shared-expert 64", "sigmoid-router scale 1.5"]),
    "mellum": ("Mellum", ["qk-norm", "local-rope-theta 10000", "moe 8 experts top-2", "norm-topk"]),
    "mellum-types": ("Mellum", ["attention-bias", "qk-norm", "local-rope-theta 500", "moe 4 experts top-3 (2 of 3 layers)",
                                "sliding-window 6 (layers 0,2)"]),
    "flint": ("Flint", ["qk-norm", "attention-sinks", "no-rope layers 0,1,3", "moe 8 experts top-2 (2 of 4 layers)",
                        "norm-topk", "shared-expert 64", "sigmoid-router", "sliding-window 6 (layer 2)"]),
    "flint-types": ("Flint", ["attention-bias", "qk-norm", "attention-sinks", "no-rope layer 1",
                              "moe 4 experts top-3 (2 of 3 layers)", "shared-expert 32", "sigmoid-router",
                              "sliding-window 5 (layers 0,2)"]),
    "arcee": ("Arcee", ["attention-bias", "mlp-bias", "relu2-mlp"]),
    "exaone": ("Exaone", ["head-dim 24"]),
    "hyperclovax": ("HyperCLOVAX", ["attention-bias", "logit-scale 0.4", "sandwich-norms", "embedding-multiplier 3",
                                    "attention-multiplier 0.25", "residual-multiplier 0.6"]),
    "hyperclovax-nopost": ("HyperCLOVAX", ["mlp-bias", "logit-scale 1.5", "embedding-multiplier 2",
                                           "attention-multiplier 0.2", "residual-multiplier 0.3"]),
    "iquestcoder": ("IQuestCoder", ["attention-bias", "mlp-bias", "head-dim 24"]),
    "internlm3": ("InternLM3", ["attention-bias", "mlp-bias", "head-dim 128"]),
    "nanochat": ("NanoChat", ["qk-norm-after-rope", "no-norm-weights", "embedding-norm", "relu2-mlp", "negated-rope",
                              "final-softcap 15"]),
    "nanochat-bias-cap-tied": ("NanoChat", ["attention-bias", "qk-norm-after-rope", "no-norm-weights", "embedding-norm",
                                            "relu2-mlp", "negated-rope", "final-softcap 6"]),
    "apertus": ("Apertus", ["qk-norm", "xielu-mlp"]),
    "nemotron": ("Nemotron", ["attention-bias", "mlp-bias", "layer-norm-1p", "relu2-mlp", "rotary-dim 8"]),
    "jais2": ("Jais2", ["attention-bias", "mlp-bias", "layer-norm", "relu2-mlp", "head-dim 24"]),
    "jais2-nobias-tied": ("Jais2", ["layer-norm", "relu2-mlp"]),
    "vaultgemma": ("VaultGemma", ["gemma-norms", "geglu", "no-post-norms", "query-pre-attn-scalar 24", "attn-softcap 3",
                                  "final-softcap 8", "sliding-window 6 (layer 0)"]),
    "hunyuan-dense": ("HunYuanDenseV1", ["attention-bias", "qk-norm-after-rope", "ntk-alpha 1000"]),
    "hunyuan-moe": ("HunYuanMoEV1", ["qk-norm-after-rope", "ntk-alpha 1000", "moe 8 experts top-2", "norm-topk",
                                     "shared-expert 96"]),
    "hunyuan-moe-lists": ("HunYuanMoEV1", ["attention-bias", "qk-norm-after-rope", "moe 4 experts top-3", "norm-topk",
                                           "shared-expert 96"]),
    "gpt-neox": ("GPTNeoX", ["attention-bias", "mlp-bias", "layer-norm", "parallel-block-two-norms", "gelu-exact-mlp",
                              "fused-qkv", "rotary-dim 4"]),
    "gpt-neox-sequential": ("GPTNeoX", ["mlp-bias", "layer-norm", "fused-qkv", "rotary-dim 8"]),
    "gptj": ("GPTJ", ["mlp-bias", "layer-norm", "parallel-block", "gelu-mlp", "interleaved-rope", "rotary-dim 8"]),
    "gptj-full-rotary": ("GPTJ", ["mlp-bias", "layer-norm", "parallel-block", "gelu-mlp", "interleaved-rope"]),
    "opt": ("OPT", ["attention-bias", "mlp-bias", "layer-norm", "learned-positions", "relu-mlp"]),
    "opt-nobias-untied": ("OPT", ["layer-norm", "learned-positions", "relu-mlp"]),
    "falcon-7b": ("Falcon", ["layer-norm", "parallel-block", "gelu-exact-mlp", "multi-query", "fused-qkv"]),
    "falcon-seq-mha-bias": ("Falcon", ["attention-bias", "mlp-bias", "layer-norm", "gelu-exact-mlp", "fused-qkv"]),
    "falcon-new-2ln": ("Falcon", ["layer-norm", "parallel-block-two-norms", "gelu-exact-mlp", "fused-qkv"]),
    "falcon-new-1ln-bias": ("Falcon", ["attention-bias", "mlp-bias", "layer-norm", "parallel-block", "gelu-exact-mlp",
                                       "fused-qkv"]),
    "bloom": ("Bloom", ["attention-bias", "mlp-bias", "layer-norm", "alibi", "embedding-norm", "fused-qkv"]),
    "bloom-6heads-untied": ("Bloom", ["attention-bias", "mlp-bias", "layer-norm", "alibi", "embedding-norm", "fused-qkv"]),
    "mpt": ("MPT", ["layer-norm", "gelu-exact-mlp", "alibi", "fused-qkv"]),
    "mpt-6heads-clip-scale": ("MPT", ["clip-qkv 1.5", "layer-norm", "gelu-exact-mlp", "alibi", "softmax-scale 0.2",
                                      "fused-qkv"]),
    "olmo": ("OLMo", ["layer-norm", "no-norm-weights"]),
    "olmo-clip-bias-tied": ("OLMo", ["attention-bias", "clip-qkv 0.5", "layer-norm", "no-norm-weights"]),
    "gpt2": ("GPT2", ["attention-bias", "mlp-bias", "layer-norm", "learned-positions", "conv1d-weights", "fused-qkv"]),
    "gpt-neo": ("GPTNeo", ["out-bias", "mlp-bias", "layer-norm", "learned-positions", "attention-scale 1",
                           "sliding-window 8 (layer 1)"]),
    "gpt-bigcode": ("GPTBigCode", ["attention-bias", "mlp-bias", "layer-norm", "learned-positions", "multi-query",
                                   "fused-qkv"]),
    "gpt-bigcode-mha-unscaled": ("GPTBigCode", ["attention-bias", "mlp-bias", "layer-norm", "learned-positions",
                                                "attention-scale 1", "fused-qkv"]),
    "phimoe": ("PhiMoE", ["attention-bias", "layer-norm", "lm-head-bias", "moe 6 experts top-2",
                          "sparsemixer-router jitter 0.3"]),
    "phimoe-longrope": ("PhiMoE", ["layer-norm", "moe 4 experts top-2", "sparsemixer-router jitter 0.01",
                                   "sliding-window 8 (every layer)"]),
}

GOLDEN = Path(__file__).parent / "data" / "families_golden.json"


def transformers_config(name: str):
    """The transformers config object of a case (needs transformers)."""
    import transformers

    cls, kw = CASES[name]
    args = dict(_COMMON)
    args.update(kw)
    return getattr(transformers, cls)(**args)


def architecture(config_class: str) -> str:
    """The ForCausalLM class of a config class ("Qwen2Config" -> "Qwen2ForCausalLM")."""
    # (transformers >= 5 runs Sarvam's models, and saves them, as GLM-4 MoE and DeepSeek-V3)
    return {"Gemma3TextConfig": "Gemma3ForCausalLM", "GPT2Config": "GPT2LMHeadModel",
            "SarvamMoEConfig": "Glm4MoeForCausalLM", "SarvamMLAConfig": "DeepseekV3ForCausalLM"}.get(
        config_class, config_class.replace("Config", "ForCausalLM"))


# EXAONE 3 / 3.5's config.json names (ExaoneConfig's attribute_map), as the Hub's files have them
EXAONE_NAMES = {"num_layers": "num_hidden_layers", "layer_norm_epsilon": "rms_norm_eps",
                "activation_function": "hidden_act"}


def config_json(config) -> dict[str, Any]:
    """config.json as save_pretrained writes it for a transformers config (EXAONE's: as the Hub's
    files, under its own names)."""
    d = json.loads(config.to_json_string(use_diff=False))
    d["architectures"] = [architecture(type(config).__name__)]
    if d["model_type"] == "exaone":
        d = {next((a for a, b in EXAONE_NAMES.items() if b == k), k): v for k, v in d.items()}
    if d["model_type"] == "internlm3":  # (the Hub's: qkv_bias, bias, rope_scaling beside rope_theta)
        d = {INTERNLM3_NAMES.get(k, k): v for k, v in d.items()}
        rp = dict(d.pop("rope_parameters"))
        d["rope_theta"] = rp.pop("rope_theta")
        d["rope_scaling"] = rp
    return d


# InternLM3's config.json names (InternLM3Config's attribute_map), as the Hub's files have them
INTERNLM3_NAMES = {"attention_bias": "qkv_bias", "mlp_bias": "bias"}


def dynamic_rope(cfg: dict[str, Any]) -> bool:
    """Whether a config.json's RoPE is transformers' dynamic NTK (its frequencies per forward
    call's length; HunYuan's "dynamic" with an alpha is a fixed base)."""
    rp = cfg.get("rope_parameters") or cfg.get("rope_scaling") or {}
    return rp.get("rope_type", rp.get("type")) == "dynamic" and not (
        cfg["model_type"].startswith("hunyuan") and rp.get("alpha"))


def decode_seq_lens(cfg: dict[str, Any], prefill: int, n: int) -> list[int] | None:
    """The sequence length each position's RoPE belongs to when `prefill` tokens are prefilled
    and the rest of n decoded one by one (llama_ref.reference_logits' rope_seq_lens): for dynamic
    NTK, whose cached keys keep the frequencies of the call that made them. None otherwise."""
    if not dynamic_rope(cfg):
        return None
    return [prefill] * prefill + list(range(prefill + 1, n + 1))


def hf_greedy(model, prompt: list[int], n: int, cached: bool = False) -> tuple[list[int], list[float]]:
    """n greedy tokens of a transformers model after `prompt` and the top-2 margin of each step:
    each step a forward over the whole sequence, or (cached) as generate() runs, the prompt then
    one token per call with the KV cache (dynamic NTK: the keys keep the frequencies of the
    call that made them, the sequence length of each call its own)."""
    import torch

    toks, margins, past = list(prompt), [], None
    with torch.no_grad():
        for _ in range(n):
            if cached:
                out = model(torch.tensor([toks if past is None else toks[-1:]]), cache=past, use_cache=True)
                past = out.cache
            else:
                out = model(torch.tensor([toks]))
            row = out.logits[0, -1].double().numpy()
            top2 = np.sort(row)[-2:]
            margins.append(float(top2[1] - top2[0]))
            toks.append(int(row.argmax()))
    return toks[len(prompt):], margins


GPT2_NAMES = {"n_embd": "hidden_size", "n_inner": "intermediate_size", "n_layer": "num_hidden_layers",
              "n_head": "num_attention_heads", "n_positions": "max_position_embeddings",
              "layer_norm_epsilon": "layer_norm_eps"}


def std_fields(cfg: dict[str, Any]) -> dict[str, Any]:
    """A config.json with GPT-2's field names (n_embd, ...) under the usual ones, and the KV heads
    its family computes with (GPT-NeoX, GPT-2: one per query head; GPTBigCode: multi_query)."""
    if cfg["model_type"] == "falcon":  # (FalconDecoderLayer / FalconAttention's choices)
        nh = cfg["num_attention_heads"]
        kv = (cfg.get("num_kv_heads") or nh) if cfg.get("new_decoder_architecture") else \
            1 if cfg.get("multi_query", True) else nh
        return dict(cfg, intermediate_size=cfg.get("ffn_hidden_size") or 4 * cfg["hidden_size"], num_key_value_heads=kv,
                    layer_norm_eps=cfg["layer_norm_epsilon"])
    if cfg["model_type"] == "olmo":  # (OlmoLayerNorm's eps: 1e-5, no field)
        return dict(cfg, layer_norm_eps=1e-5)
    if cfg["model_type"] == "exaone":
        return {EXAONE_NAMES.get(k, k): v for k, v in cfg.items()}
    if cfg["model_type"] == "internlm3" and "rope_scaling" in cfg:
        d = {next((a for a, b in INTERNLM3_NAMES.items() if b == k), k): v for k, v in cfg.items()}
        d["rope_parameters"] = dict(d.pop("rope_scaling"), rope_theta=d.pop("rope_theta"))
        return d
    if cfg["model_type"] == "gpt_neo":  # (GPTNeoConfig's names; intermediate_size, null: 4 · hidden)
        return dict(cfg, intermediate_size=cfg.get("intermediate_size") or 4 * cfg["hidden_size"],
                    num_hidden_layers=cfg["num_layers"], num_attention_heads=cfg["num_heads"],
                    num_key_value_heads=cfg["num_heads"], layer_norm_eps=cfg["layer_norm_epsilon"])
    if cfg["model_type"] == "mpt":  # (MptConfig's names; expansion_ratio · d_model)
        return dict(cfg, hidden_size=cfg["d_model"], intermediate_size=cfg["expansion_ratio"] * cfg["d_model"],
                    num_hidden_layers=cfg["n_layers"], num_attention_heads=cfg["n_heads"],
                    num_key_value_heads=cfg["n_heads"], layer_norm_eps=cfg["layer_norm_epsilon"])
    if cfg["model_type"] == "bloom":  # (BloomMLP: 4 · hidden)
        return dict(cfg, intermediate_size=4 * cfg["hidden_size"], num_hidden_layers=cfg["n_layer"],
                    num_attention_heads=cfg["n_head"], num_key_value_heads=cfg["n_head"],
                    layer_norm_eps=cfg["layer_norm_epsilon"])
    if cfg["model_type"] == "opt":  # (its LayerNorms' eps: PyTorch's default)
        return dict(cfg, intermediate_size=cfg["ffn_dim"], num_key_value_heads=cfg["num_attention_heads"],
                    layer_norm_eps=1e-5)
    if cfg["model_type"] not in ("gpt2", "gpt_bigcode", "gpt_neox", "gptj"):
        return cfg
    out = dict(cfg)
    for a, b in GPT2_NAMES.items():
        if a in cfg:
            out[b] = cfg[a]
    if cfg["model_type"] != "gpt_neox":  # (n_inner null: 4 · n_embd)
        out["intermediate_size"] = cfg.get("n_inner") or 4 * out["hidden_size"]
    if cfg["model_type"] == "gptj":  # (the rotated dims of each head)
        out["partial_rotary_factor"] = cfg["rotary_dim"] / (out["hidden_size"] // out["num_attention_heads"])
    mq = cfg["model_type"] == "gpt_bigcode" and cfg.get("multi_query", True)
    out["num_key_value_heads"] = 1 if mq else out["num_attention_heads"]
    return out


def tiny_config(cfg: dict[str, Any]) -> R.TinyConfig:
    """llama_ref's view of a config.json (for the float64 reference)."""
    cfg = std_fields(cfg)
    rp = cfg.get("rope_parameters") or {}
    rp = rp.get("full_attention", rp)  # Gemma 3: the global layers' (the local ones: gemma2_params)
    theta = cfg.get("rope_theta", rp.get("rope_theta", 10000.0))
    if cfg["model_type"] == "granite_swa" and any(cfg["layer_rope_theta"]):  # (one base beside NoPE layers)
        theta = next(t for t in cfg["layer_rope_theta"] if t)
    if rp.get("rope_type") == "dynamic" and rp.get("alpha"):  # HunYuan's fixed NTK alpha: a larger base
        hd = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
        theta = theta * rp["alpha"] ** (hd / (hd - 2))
        rp = {"rope_type": "default", "rope_theta": theta}
    scaling = dict(rp) if rp.get("rope_type", "default") != "default" or rp.get("partial_rotary_factor", 1) != 1 else None
    prf = cfg.get("partial_rotary_factor", rp.get("partial_rotary_factor", 1.0))
    if prf != 1.0:  # (llama_ref reads it from the rope dict)
        scaling = dict(scaling or {"rope_type": "default"}, partial_rotary_factor=prf)
    if scaling and "original_max_position_embeddings" in cfg:  # Phi-3 keeps it at the top level
        scaling.setdefault("original_max_position_embeddings", cfg["original_max_position_embeddings"])
    if scaling and cfg["model_type"] == "phimoe":  # (its cos / sin times short_mscale, long_mscale past the original)
        scaling["mscale_by_length"] = True
    return R.TinyConfig(hidden=cfg["hidden_size"], intermediate=cfg["intermediate_size"],
                        layers=cfg["num_hidden_layers"], heads=cfg["num_attention_heads"],
                        kv_heads=cfg.get("num_key_value_heads", cfg["num_attention_heads"]), head_dim=cfg.get("head_dim"), vocab=cfg["vocab_size"],
                        max_pos=cfg["max_position_embeddings"], eps=(cfg["layer_norm_eps"] if cfg["model_type"] in ("phi", "stablelm", "jais2", "gpt_neox", "gpt2", "gpt_bigcode", "gptj", "opt", "olmo",
                                                                                             "falcon", "bloom", "mpt",
                                                                                             "gpt_neo", "cohere2_moe")
                             else cfg["norm_epsilon"] if cfg["model_type"] == "starcoder2"
                             else cfg["norm_eps"] if cfg["model_type"] in ("lfm2", "lfm2_moe", "lfm3") else cfg["rms_norm_eps"]), theta=theta,
                        tie=bool(cfg.get("tie_word_embeddings")), rope_scaling=scaling)


def longrope_switch(cfg: dict[str, Any]) -> int | None:
    """original_max_position_embeddings of a LongRoPE config (past it: the long factors), else None."""
    rp = cfg.get("rope_parameters") or cfg.get("rope_scaling") or {}
    if rp.get("rope_type", rp.get("type")) not in ("longrope", "su"):
        return None
    return rp.get("original_max_position_embeddings") or cfg.get("original_max_position_embeddings")


def layer_windows(cfg: dict[str, Any]) -> list[int]:
    """The keys each layer attends back over (0: all), as transformers decides it."""
    cfg = std_fields(cfg)
    n = cfg["num_hidden_layers"]
    if cfg["model_type"] == "gpt_neo":  # (attention_types: [[["global", "local"], count], ...])
        types = [t for kinds, count in cfg["attention_types"] for _ in range(count) for t in kinds]
        return [cfg["window_size"] if t == "local" else 0 for t in types]
    w = cfg.get("sliding_window") or 0
    if cfg["model_type"] in ("gemma2", "gemma3_text", "gpt_oss", "exaone4", "olmo3", "ministral", "cohere2",
                             "vaultgemma", "dots1", "exaone_moe", "lfm3", "cwm", "granite_swa", "afmoe", "kolibri1", "cohere2_moe",
                             "mellum", "flint"):
        return [w if t == "sliding_attention" else 0 for t in cfg["layer_types"]]
    if cfg["model_type"] in ("mistral", "phi3", "mixtral", "starcoder2", "ministral3", "phimoe"):
        return [w] * n
    if cfg["model_type"] in ("qwen2", "qwen3", "qwen2_moe", "qwen3_moe", "smollm3") and cfg.get("use_sliding_window"):
        types = cfg.get("layer_types") or ["sliding_attention" if i >= cfg["max_window_layers"] else "full_attention"
                                           for i in range(n)]
        return [w if t == "sliding_attention" else 0 for t in types]
    return [0] * n


# HY-V3: transformers' names -> the Hub's, which save_pretrained writes (conversion_mapping's hy_v3 renames, reversed)
HY_V3_HUB_NAMES = {".mlp.gate.weight": ".mlp.router.gate.weight", ".mlp.e_score_correction_bias": ".mlp.expert_bias",
                   ".mlp.shared_experts.": ".mlp.shared_mlp."}


def to_checkpoint(w: dict[str, np.ndarray], cfg: dict[str, Any]) -> dict[str, np.ndarray]:
    """The tensors of a checkpoint file from transformers' in-memory weights: transformers >= 5
    holds a MoE layer's experts as two 3-D tensors (mlp.experts.gate_up_proj [E, 2·I, H], gate
    rows first; mlp.experts.down_proj [E, H, I]) and save_pretrained writes them one expert at
    a time, as the Hub's checkpoints are (Qwen: mlp.experts.N.{gate,up,down}_proj.weight;
    Mixtral: block_sparse_moe.experts.N.{w1,w3,w2}.weight and block_sparse_moe.gate)."""
    # (MiniMax-M2: Mixtral's names, its bias on the block; PhiMoE: Mixtral's names, its router mlp.router)
    mixtral = cfg["model_type"] in ("mixtral", "minimax_m2", "phimoe")
    out: dict[str, np.ndarray] = {}
    if cfg["model_type"] in ("gpt_oss", "mistral4"):  # stacked as saved (gpt-oss: transposed, as the Hub's files)
        return dict(w)
    if cfg["model_type"] in ("gpt2", "gpt_bigcode", "gptj"):  # (the causal-mask buffers are not saved)
        return {k: v for k, v in w.items() if not k.endswith((".attn.bias", ".attn.masked_bias"))}
    if cfg["model_type"] == "exaone":  # under its modeling code's names, as the Hub's files (transformers renames them at load)
        ren = {"model.embed_tokens.": "transformer.wte.", "model.norm.": "transformer.ln_f.", "model.layers.": "transformer.h.",
               ".self_attn.o_proj.": ".attn.attention.out_proj.", ".self_attn.": ".attn.attention.",
               ".input_layernorm.": ".ln_1.", ".post_attention_layernorm.": ".ln_2.", ".mlp.gate_proj.": ".mlp.c_fc_0.",
               ".mlp.up_proj.": ".mlp.c_fc_1.", ".mlp.down_proj.": ".mlp.c_proj."}
        for name, x in w.items():
            for a, b in ren.items():
                name = name.replace(a, b)
            out[name] = x
        return out
    if cfg["model_type"] == "kolibri1":  # its files' names (conversion_mapping "kolibri1"), as save_pretrained writes them back
        w = {name.replace(".mlp.gate.e_score_correction_bias", ".moe.router.expert_bias")
             .replace(".post_self_attn_layernorm.", ".post_attn_norm.").replace(".post_mlp_layernorm.", ".post_ffn_norm."): x
             for name, x in w.items()}
    if cfg["model_type"] == "sarvam_moe":  # under the Hub's names, q|k|v fused, as save_pretrained writes them back
        named = {}
        for name, x in w.items():
            for a, b in SARVAM_MOE_NAMES.items():
                name = name.replace(b, a)
            named[name] = x
        for name in [n for n in named if ".self_attn.q_proj." in n]:
            k, v = name.replace(".q_proj.", ".k_proj."), name.replace(".q_proj.", ".v_proj.")
            fused = name.replace(".self_attn.q_proj.", ".attention.query_key_value.")
            named[fused] = np.concatenate([named.pop(name), named.pop(k), named.pop(v)])
        w = named
    if cfg["model_type"] == "gpt_neox":  # (transformers >= 5 holds embed_out as lm_head, saves it as embed_out)
        return {("embed_out.weight" if k == "lm_head.weight" else k): v for k, v in w.items()}
    if cfg["model_type"] in ("granitemoe", "granitemoeshared"):  # stacked as they are, under their file names
        ren = {"block_sparse_moe.router.weight": "block_sparse_moe.router.layer.weight",
               "block_sparse_moe.experts.gate_up_proj": "block_sparse_moe.input_linear.weight",
               "block_sparse_moe.experts.down_proj": "block_sparse_moe.output_linear.weight"}
        for name, x in w.items():
            for a, b in ren.items():
                if name.endswith(a):
                    name = name[:-len(a)] + b
            out[name] = x
        return out
    for name, x in w.items():
        if name.endswith(("feed_forward.experts.gate_up_proj", "feed_forward.experts.down_proj")):  # LFM2-MoE
            p = name[:name.index("feed_forward.experts.") + len("feed_forward.experts.")]
            for e in range(x.shape[0]):
                if name.endswith("gate_up_proj"):
                    gate, up = np.split(x[e], 2)
                    out[p + f"{e}.w1.weight"], out[p + f"{e}.w3.weight"] = np.ascontiguousarray(gate), np.ascontiguousarray(up)
                else:
                    out[p + f"{e}.w2.weight"] = np.ascontiguousarray(x[e])
            continue
        if name.endswith("mlp.experts.gate_up_proj") or name.endswith("mlp.experts.down_proj"):
            p = name[:-len("mlp.experts.gate_up_proj" if name.endswith("gate_up_proj") else "mlp.experts.down_proj")]
            ep = p + ("block_sparse_moe.experts." if mixtral else "mlp.experts.")
            for e in range(x.shape[0]):
                if name.endswith("gate_up_proj"):
                    gate, up = np.split(x[e], 2)
                    out[ep + f"{e}." + ("w1.weight" if mixtral else "gate_proj.weight")] = np.ascontiguousarray(gate)
                    out[ep + f"{e}." + ("w3.weight" if mixtral else "up_proj.weight")] = np.ascontiguousarray(up)
                else:
                    out[ep + f"{e}." + ("w2.weight" if mixtral else "down_proj.weight")] = np.ascontiguousarray(x[e])
        elif name.endswith(".mlp.post_mlp_layernorm.weight"):  # (A.X-K1: saved at the layer's level, as its files)
            out[name.replace(".mlp.post_mlp_layernorm.", ".post_mlp_layernorm.")] = x
        elif cfg["model_type"] == "flint" and name.endswith(".self_attn.sinks"):  # (saved as its files name it)
            out[name.replace(".self_attn.sinks", ".self_attn.softmax_offset")] = x
        elif name.endswith(".self_attn.g_proj.weight"):  # (LFM3: saved as its files name it)
            out[name.replace(".self_attn.g_proj.", ".self_attn.gate_proj.")] = x
        elif cfg["model_type"] == "hy_v3" and any(a in name for a in HY_V3_HUB_NAMES):  # (saved under the Hub's names)
            for a, b in HY_V3_HUB_NAMES.items():
                name = name.replace(a, b)
            out[name] = x
        elif mixtral and name.endswith("mlp.gate.weight"):
            out[name.replace("mlp.gate.weight", "block_sparse_moe.gate.weight")] = x
        elif mixtral and name.endswith("mlp.router.weight"):
            out[name.replace("mlp.router.weight", "block_sparse_moe.gate.weight")] = x
        elif cfg["model_type"] == "exaone_moe" and name.endswith("mlp.gate.e_score_correction_bias"):  # (on the block)
            out[name.replace("mlp.gate.e_score_correction_bias", "mlp.e_score_correction_bias")] = x
        elif name.endswith("mlp.gate.moe_statics.e_score_correction_bias"):  # (ERNIE 4.5: saved off the gate)
            out[name.replace("mlp.gate.moe_statics.", "mlp.moe_statics.")] = x
        elif mixtral and name.endswith("mlp.e_score_correction_bias"):
            out[name.replace("mlp.e_score_correction_bias", "block_sparse_moe.e_score_correction_bias")] = x
        else:
            out[name] = x
    return out


def reference_extras(cfg: dict[str, Any]) -> dict[str, Any]:
    """llama_ref.reference_logits' keyword arguments of the families beyond its positional
    ones: moe, nope, granite, olmo2."""
    local = None
    if cfg["model_type"] in ("olmo3", "lfm3", "mellum"):  # the sliding layers' own RoPE base, unscaled
        local = {"theta": cfg["rope_parameters"]["sliding_attention"]["rope_theta"],
                 "layers": [t == "sliding_attention" for t in cfg["layer_types"]]}
    rp = cfg.get("rope_parameters") or {}
    llama4 = {"beta": rp["llama_4_scaling_beta"], "orig": rp["original_max_position_embeddings"]} \
        if cfg["model_type"] in ("ministral3", "mistral4") else None
    return dict(moe=moe_params(cfg), nope=nope_layers(cfg), granite=granite_params(cfg), mla=mla_params(cfg), llama4=llama4,
                qk_after_rope=cfg["model_type"] in ("hunyuan_v1_dense", "hunyuan_v1_moe", "nanochat"),
                rope_negated=cfg["model_type"] == "nanochat",
                final_softcap=float(cfg.get("final_logit_softcapping") or 0.0) if cfg["model_type"] == "nanochat" else 0.0,
                interleaved=cfg["model_type"] in ("helium", "ernie4_5", "ernie4_5_moe", "glm", "glm4", "cohere", "cohere2",
                                                  "cohere2_moe", "gptj"),
                cohere=cfg["logit_scale"] if cfg["model_type"] in ("cohere", "cohere2", "cohere2_moe") else None,
                sandwich=cfg["model_type"] == "glm4" or (cfg["model_type"] == "lfm3" and cfg.get("use_sandwich_norm", True))
                or (cfg["model_type"] == "hyperclovax" and cfg.get("use_post_norm", True))
                or cfg["model_type"] in ("afmoe", "kolibri1"),
                local_rope=local,
                olmo2=cfg["model_type"] in ("olmo2", "exaone4", "olmo3", "flex_olmo"), qk_full=cfg["model_type"] in ("olmoe", "minimax_m2"),
                qk_per_head=cfg["model_type"] == "exaone4",
                clip_qkv=float(cfg.get("clip_qkv") or (cfg.get("attn_config") or {}).get("clip_qkv") or 0.0), gemma1=cfg["model_type"] == "gemma",
                phi=cfg["model_type"] in ("phi", "gptj"),
                layer_norm=cfg["model_type"] in ("stablelm", "starcoder2", "nemotron", "jais2", "gpt_neox", "gpt2", "gpt_bigcode",
                                                 "opt", "falcon", "bloom", "mpt", "gpt_neo", "olmo", "phimoe"),
                alibi=alibi_slopes(cfg["n_head"]) if cfg["model_type"] == "bloom"
                else mpt_alibi_slopes(cfg["n_heads"]) if cfg["model_type"] == "mpt" else None,
                gelu_exact=(cfg.get("hidden_act") == "gelu" and cfg["model_type"] == "gpt_neox") or cfg["model_type"] == "mpt"
                or (cfg["model_type"] == "falcon" and cfg.get("activation", "gelu") == "gelu"),
                parallel_one_norm=cfg["model_type"] == "falcon" and not falcon_two_norms(cfg)
                and (cfg.get("parallel_attn", True) or cfg.get("new_decoder_architecture")),
                learned_positions=cfg["model_type"] in ("gpt2", "gpt_bigcode", "opt", "gpt_neo"),
                # (MPT: attn_config's clip_qkv; softmax_scale, when set, replaces 1/sqrt(head_dim))
                relu=cfg["model_type"] == "opt",
                attn_scale=mla_scale(cfg) if mla_params(cfg)
                else 1.0 if cfg.get("scale_attn_weights") is False or cfg["model_type"] == "gpt_neo"
                else (cfg.get("attn_config") or {}).get("softmax_scale") if cfg["model_type"] == "mpt" else None,
                parallel_norms=(cfg["model_type"] == "gpt_neox" and cfg.get("use_parallel_residual", True))
                or (cfg["model_type"] == "falcon" and falcon_two_norms(cfg)))


def mla_params(cfg: dict[str, Any]) -> dict[str, Any] | None:
    """llama_ref's `mla` argument for DeepSeek-V2 / V3 and the families with their multi-head
    latent attention (GLM-4 MoE lite, Mistral 4, MiniCPM3, Youtu), else None."""
    if cfg["model_type"] not in ("deepseek_v2", "deepseek_v3", "glm4_moe_lite", "mistral4", "minicpm3", "youtu",
                                 "sarvam_mla", "axk1"):
        return None
    return {"heads": cfg["num_attention_heads"], "nope": cfg["qk_nope_head_dim"], "rope": cfg["qk_rope_head_dim"],
            "v": cfg["v_head_dim"], "interleaved": cfg["model_type"] == "deepseek_v2"
            or (cfg["model_type"] != "minicpm3" and cfg.get("rope_interleave", True))}


def mla_scale(cfg: dict[str, Any]) -> float:
    """DeepSeek's softmax scale: (qk_nope + qk_rope)^-0.5, times mscale(factor, mscale_all_dim)² with YaRN."""
    s = (cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"]) ** -0.5
    rp = cfg.get("rope_parameters") or {}
    if rp.get("rope_type", "default") != "default" and rp.get("mscale_all_dim"):
        m = 1.0 if rp["factor"] <= 1 else 0.1 * rp["mscale_all_dim"] * math.log(rp["factor"]) + 1.0
        s *= m * m
    return s


def alibi_slopes(n: int) -> list[float]:
    """transformers' _get_alibi_slopes (Bloom) for n heads, in float32."""
    p2 = 2 ** math.floor(math.log2(n))
    base = np.float32(2 ** (-(2 ** -(math.log2(p2) - 3))))
    out = [np.float32(base ** np.float32(k)) for k in range(1, p2 + 1)]
    extra = np.float32(2 ** (-(2 ** -(math.log2(2 * p2) - 3))))
    out += [np.float32(extra ** np.float32(k)) for k in range(1, 1 + 2 * min(p2, n - p2), 2)]
    return [float(x) for x in out]


def mpt_alibi_slopes(n: int) -> list[float]:
    """transformers' build_mpt_alibi_tensor slopes (MPT) for n heads, in float32."""
    p2 = 2 ** math.ceil(math.log2(n))
    s = [np.float32(1.0) / np.float32(2.0) ** (np.float32(k) * np.float32(8 / p2)) for k in range(1, p2 + 1)]
    if p2 != n:
        s = (s[1::2] + s[::2])[:n]
    return [float(x) for x in s]


def falcon_two_norms(cfg: dict[str, Any]) -> bool:
    """Whether a Falcon config.json describes the block with ln_attn and ln_mlp."""
    return bool(cfg.get("new_decoder_architecture")) and (cfg.get("num_ln_in_parallel_attn") or 2) == 2


def granite_params(cfg: dict[str, Any]) -> dict[str, float] | None:
    """llama_ref's `granite` argument for a Granite config.json (MiniCPM3's scales as Granite's
    multipliers: its attention's scale the latent one), else None."""
    if cfg["model_type"] == "minicpm3":
        n = cfg["num_hidden_layers"]
        return {"embedding_multiplier": cfg["scale_emb"], "attention_multiplier": mla_scale(cfg),
                "residual_multiplier": cfg["scale_depth"] / math.sqrt(n),
                "logits_scaling": cfg["hidden_size"] / cfg["dim_model_base"]}
    if cfg["model_type"] == "hyperclovax":  # (its logits_scaling multiplies: the reference divides by its inverse)
        return {"embedding_multiplier": cfg["embedding_multiplier"], "attention_multiplier": cfg["attention_multiplier"],
                "residual_multiplier": cfg["residual_multiplier"], "logits_scaling": 1.0 / cfg["logits_scaling"]}
    if cfg["model_type"] == "afmoe":  # (mup_enabled: the embeddings times sqrt(hidden_size), nothing else)
        if not cfg.get("mup_enabled"):
            return None
        hd = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
        return {"embedding_multiplier": cfg["hidden_size"] ** 0.5, "attention_multiplier": hd ** -0.5,
                "residual_multiplier": 1.0, "logits_scaling": 1.0}
    if cfg["model_type"] not in ("granite", "granitemoe", "granitemoeshared", "granite_swa"):
        return None
    return {k: cfg[k] for k in ("embedding_multiplier", "attention_multiplier", "residual_multiplier",
                                "logits_scaling")}


def nope_layers(cfg: dict[str, Any]) -> list[bool] | None:
    """llama_ref's `nope` argument: the layers that attend without RoPE (SmolLM3; EXAONE 4's
    global layers when it has a window), else None."""
    if cfg["model_type"] in ("exaone4", "exaone_moe", "kolibri1"):
        return [bool(cfg.get("sliding_window")) and t == "full_attention" for t in cfg["layer_types"]]
    if cfg["model_type"] == "granite_swa":  # (layer_rope_theta: 0 = NoPE)
        return [not t for t in cfg["layer_rope_theta"]]
    if cfg["model_type"] == "afmoe":  # (only its sliding layers rotate)
        return [t != "sliding_attention" for t in cfg["layer_types"]]
    if cfg["model_type"] in ("cohere2", "flint"):  # only the sliding layers rotate
        return [not cfg.get("sliding_window") or t != "sliding_attention" for t in cfg["layer_types"]]
    if cfg["model_type"] == "cohere2_moe":  # (and, with prefix_dense_sliding_window_pattern 1, the dense ones)
        force = cfg.get("prefix_dense_sliding_window_pattern", 1) == 1
        return [not (cfg.get("sliding_window") and t == "sliding_attention") and not (force and m == "dense")
                for t, m in zip(cfg["layer_types"], cfg["mlp_layer_types"])]
    if cfg["model_type"] != "smollm3":
        return None
    return [not v for v in cfg["no_rope_layers"]]


def moe_params(cfg: dict[str, Any]) -> dict[str, Any] | None:
    """llama_ref's `moe` argument for a mixture-of-experts config.json, else None."""
    if cfg["model_type"] not in ("mixtral", "qwen2_moe", "qwen3_moe", "granitemoe", "granitemoeshared", "olmoe",
                                 "gpt_oss", "glm4_moe", "dots1", "deepseek_v2", "deepseek_v3", "minimax_m2",
                                 "ernie4_5_moe", "exaone_moe", "glm4_moe_lite", "hunyuan_v1_moe", "lfm2_moe", "mistral4",
                                 "solar_open", "flex_olmo", "afmoe", "phimoe", "sarvam_moe", "sarvam_mla", "kolibri1",
                                 "cohere2_moe", "hy_v3", "axk1", "mellum", "flint"):
        return None
    # (ERNIE 4.5: moe_k; HunYuan MoE: moe_topk, one number or one per layer, alike in these cases)
    k = cfg.get("num_experts_per_tok") or cfg.get("moe_k") or cfg["moe_topk"]
    out = {"experts_per_tok": k[0] if isinstance(k, list) else k,
           "norm_topk": cfg["model_type"] in ("mixtral", "granitemoe", "granitemoeshared", "gpt_oss", "minimax_m2",
                                              "ernie4_5_moe", "hunyuan_v1_moe")
           or bool(cfg.get("norm_topk_prob"))}
    if cfg["model_type"] == "deepseek_v2":  # (transformers' DeepseekV2 never renormalizes)
        out["norm_topk"] = False
        grouped = cfg.get("topk_method") == "group_limited_greedy"
        out["softmax_groups"] = {"groups": cfg["n_group"] if grouped else 1,
                                 "topk_groups": cfg["topk_group"] if grouped else 1,
                                 "scale": cfg.get("routed_scaling_factor", 1.0)}
    if cfg["model_type"] in ("glm4_moe", "dots1", "deepseek_v3", "minimax_m2", "exaone_moe", "glm4_moe_lite", "solar_open",
                             "sarvam_moe", "sarvam_mla", "axk1"):
        out["sigmoid"] = {"groups": cfg.get("n_group") or 1, "topk_groups": cfg.get("topk_group") or 1,
                          "scale": cfg.get("routed_scaling_factor", 1.0)}
    if cfg["model_type"] == "mistral4":  # (softmax; groups by their best two; norm_topk_prob true when left out)
        out["norm_topk"] = cfg.get("norm_topk_prob", True)
        out["softmax_groups"] = {"groups": cfg.get("n_group") or 1, "topk_groups": cfg.get("topk_group") or 1,
                                 "scale": cfg.get("routed_scaling_factor", 1.0), "two_best": True}
    if cfg["model_type"] == "lfm2_moe":  # (its router's sum + 1e-6; norm_topk_prob true when left out)
        out["norm_topk"] = cfg.get("norm_topk_prob", True)
        out["sigmoid"] = {"groups": 1, "topk_groups": 1, "scale": cfg.get("routed_scaling_factor", 1.0), "norm_eps": 1e-6}
    if cfg["model_type"] == "afmoe":  # (AfmoeTokenChoiceRouter: always renormalized, times route_scale)
        out["norm_topk"] = True
        out["sigmoid"] = {"groups": 1, "topk_groups": 1, "scale": cfg.get("route_scale", 1.0)}
    if cfg["model_type"] == "phimoe":  # (sparsemixer: two experts, not renormalized)
        out["norm_topk"] = False
        out["sparsemixer"] = cfg.get("router_jitter_noise", 0.01)
    if cfg["model_type"] == "kolibri1":  # (Kolibri1TopKRouter: the choice on logit + bias, the plain sum, no scaling)
        out["sigmoid"] = {"groups": 1, "topk_groups": 1, "scale": 1.0, "norm_eps": 0.0, "choice_on_logits": True}
    if cfg["model_type"] == "hy_v3":  # (HYV3TopKRouter: always renormalized, times router_scaling_factor)
        out["norm_topk"] = True
        out["sigmoid"] = {"groups": 1, "topk_groups": 1, "scale": cfg.get("router_scaling_factor", 2.826)}
    if cfg["model_type"] == "cohere2_moe":  # (the top k logits' softmax, or their sigmoids; shared experts averaged)
        sigmoid = cfg.get("expert_selection_fn", "softmax") == "sigmoid"
        out["norm_topk"] = not sigmoid or cfg.get("norm_topk_prob", True)
        if sigmoid:
            out["sigmoid"] = {"groups": 1, "topk_groups": 1, "scale": 1.0, "norm_eps": 0.0}
        out["shared_average"] = bool(cfg.get("num_shared_experts")) and \
            cfg.get("shared_expert_combination_strategy", "average") == "average"
    if cfg["model_type"] == "flint":  # (FlintTopKRouter: the top k sigmoids, their plain sum; norm_topk_prob true)
        out["norm_topk"] = cfg.get("norm_topk_prob", True)
        out["sigmoid"] = {"groups": 1, "topk_groups": 1, "scale": 1.0, "norm_eps": 0.0}
    if cfg["model_type"] == "gpt_oss":
        out.update(swiglu_alpha=cfg.get("swiglu_alpha", 1.702), swiglu_limit=cfg.get("swiglu_limit", 7.0))
    return out


# The families whose tensor names llama_ref does not read, under the names of a family it does
# (Starcoder2's LayerNorm block with c_fc / c_proj, Phi's parallel block, Arcee's up / down),
# with their fused query_key_value (the name after renaming) split into q / k / v.
_STARCODER2_MLP = {".mlp.dense_h_to_4h.": ".mlp.c_fc.", ".mlp.dense_4h_to_h.": ".mlp.c_proj."}
REFERENCE_NAMES: dict[str, tuple[dict[str, str], str | None]] = {
    "gpt_neox": ({"gpt_neox.embed_in.": "model.embed_tokens.", "embed_out.": "lm_head.",
                  "gpt_neox.final_layer_norm.": "model.norm.", "gpt_neox.layers.": "model.layers.",
                  ".attention.dense.": ".self_attn.o_proj.", **_STARCODER2_MLP}, "attention.query_key_value"),
    "gpt2": ({"transformer.wte.": "model.embed_tokens.", "transformer.wpe.": "model.pos_embed.",
              "transformer.ln_f.": "model.norm.", "transformer.h.": "model.layers.", ".ln_1.": ".input_layernorm.",
              ".ln_2.": ".post_attention_layernorm.", ".attn.c_proj.": ".self_attn.o_proj."}, "attn.c_attn"),
    "gptj": ({"transformer.wte.": "model.embed_tokens.", "transformer.ln_f.": "model.final_layernorm.",
              "transformer.h.": "model.layers.", ".ln_1.": ".input_layernorm.", ".attn.out_proj.": ".self_attn.dense.",
              ".attn.": ".self_attn.", ".mlp.fc_in.": ".mlp.fc1.", ".mlp.fc_out.": ".mlp.fc2."}, None),
    "opt": ({"model.decoder.embed_tokens.": "model.embed_tokens.", "model.decoder.final_layer_norm.": "model.norm.",
             "model.decoder.layers.": "model.layers.", ".self_attn_layer_norm.": ".input_layernorm.",
             ".final_layer_norm.": ".post_attention_layernorm.", ".self_attn.out_proj.": ".self_attn.o_proj.",
             ".fc1.": ".mlp.up_proj.", ".fc2.": ".mlp.down_proj."}, None),
    "falcon": ({"transformer.word_embeddings.": "model.embed_tokens.", "transformer.ln_f.": "model.norm.",
                "transformer.h.": "model.layers.", ".self_attention.dense.": ".self_attn.o_proj.", **_STARCODER2_MLP,
                ".ln_attn.": ".input_layernorm.", ".ln_mlp.": ".post_attention_layernorm."},
               "self_attention.query_key_value"),
    "bloom": ({"transformer.word_embeddings_layernorm.": "model.embed_norm.",
               "transformer.word_embeddings.": "model.embed_tokens.", "transformer.ln_f.": "model.norm.",
               "transformer.h.": "model.layers.", ".self_attention.dense.": ".self_attn.o_proj.", **_STARCODER2_MLP},
              "self_attention.query_key_value"),
    "mpt": ({"transformer.wte.": "model.embed_tokens.", "transformer.norm_f.": "model.norm.",
             "transformer.blocks.": "model.layers.", ".norm_1.": ".input_layernorm.", ".norm_2.": ".post_attention_layernorm.",
             ".attn.out_proj.": ".self_attn.o_proj.", ".ffn.up_proj.": ".mlp.c_fc.", ".ffn.down_proj.": ".mlp.c_proj."},
            "attn.Wqkv"),
}
REFERENCE_NAMES["gpt_bigcode"] = REFERENCE_NAMES["gpt2"]
REFERENCE_NAMES["gpt_neo"] = ({**REFERENCE_NAMES["gpt2"][0], ".attn.attention.out_proj.": ".self_attn.o_proj.",
                               ".attn.attention.": ".self_attn."}, None)
# EXAONE 3 / 3.5: its modeling code's names (transformers' conversion_mapping "exaone")
REFERENCE_NAMES["exaone"] = ({"transformer.wte.": "model.embed_tokens.", "transformer.ln_f.": "model.norm.",
                              "transformer.h.": "model.layers.", ".attn.attention.out_proj.": ".self_attn.o_proj.",
                              ".attn.attention.": ".self_attn.", ".ln_1.": ".input_layernorm.",
                              ".ln_2.": ".post_attention_layernorm.", ".mlp.c_fc_0.": ".mlp.gate_proj.",
                              ".mlp.c_fc_1.": ".mlp.up_proj.", ".mlp.c_proj.": ".mlp.down_proj."}, None)
# HyperCLOVA X: its post norms under GLM-4's names
REFERENCE_NAMES["hyperclovax"] = ({".post_norm1.": ".post_self_attn_layernorm.", ".post_norm2.": ".post_mlp_layernorm."}, None)
# Flint: its files' attention sinks (conversion_mapping "flint": softmax_offset -> sinks)
REFERENCE_NAMES["flint"] = ({".self_attn.softmax_offset": ".self_attn.sinks"}, None)
# NanoChat: its ungated fc1 / fc2 as Arcee's up / down
REFERENCE_NAMES["nanochat"] = ({".mlp.fc1.": ".mlp.up_proj.", ".mlp.fc2.": ".mlp.down_proj."}, None)
# LFM2: Llama's names for its norms, MLP and attention (its convolution's stay as they are)
REFERENCE_NAMES["lfm2"] = ({".operator_norm.": ".input_layernorm.", ".ffn_norm.": ".post_attention_layernorm.",
                            ".feed_forward.w1.": ".mlp.gate_proj.", ".feed_forward.w3.": ".mlp.up_proj.",
                            ".feed_forward.w2.": ".mlp.down_proj.", ".self_attn.out_proj.": ".self_attn.o_proj.",
                            ".self_attn.q_layernorm.": ".self_attn.q_norm.", ".self_attn.k_layernorm.": ".self_attn.k_norm.",
                            "model.embedding_norm.": "model.norm."}, None)
# LFM3: its sandwich norms under GLM-4's names
REFERENCE_NAMES["lfm3"] = ({".operator_norm.": ".input_layernorm.", ".post_operator_norm.": ".post_self_attn_layernorm.",
                            ".ffn_norm.": ".post_attention_layernorm.", ".post_ffn_norm.": ".post_mlp_layernorm.",
                            ".feed_forward.w1.": ".mlp.gate_proj.", ".feed_forward.w3.": ".mlp.up_proj.",
                            ".feed_forward.w2.": ".mlp.down_proj.", "model.embedding_norm.": "model.norm."}, None)
# LFM2-MoE: LFM2's, its router and experts under Qwen-MoE's names
REFERENCE_NAMES["lfm2_moe"] = ({**REFERENCE_NAMES["lfm2"][0], ".feed_forward.expert_bias": ".mlp.gate.e_score_correction_bias",
                                ".feed_forward.gate.": ".mlp.gate.", ".feed_forward.experts.": ".mlp.experts.",
                                ".w1.": ".gate_proj.", ".w3.": ".up_proj.", ".w2.": ".down_proj."}, None)
# HY-V3: the Hub's router, expert bias and shared experts under DeepSeek-V3's names
REFERENCE_NAMES["hy_v3"] = ({".mlp.router.gate.": ".mlp.gate.", ".mlp.expert_bias": ".mlp.gate.e_score_correction_bias",
                             ".mlp.shared_mlp.": ".mlp.shared_experts."}, None)
# AFMoE: its sandwich norms under GLM-4's names, its router and expert bias under DeepSeek-V3's
REFERENCE_NAMES["afmoe"] = ({".post_attention_layernorm.": ".post_self_attn_layernorm.",
                             ".pre_mlp_layernorm.": ".post_attention_layernorm.", ".mlp.router.gate.": ".mlp.gate.",
                             ".mlp.expert_bias": ".mlp.gate.e_score_correction_bias"}, None)


# Sarvam-MoE: the Hub's names (transformers' conversion_mapping "sarvam_moe") -> GLM-4 MoE's, its
# fused query_key_value split into q / k / v
SARVAM_MOE_NAMES = {"model.word_embeddings.": "model.embed_tokens.", ".attention.dense.": ".self_attn.o_proj.",
                    ".attention.query_layernorm.": ".self_attn.q_norm.", ".attention.key_layernorm.": ".self_attn.k_norm.",
                    ".mlp.gate.expert_bias": ".mlp.gate.e_score_correction_bias"}
REFERENCE_NAMES["sarvam_moe"] = (SARVAM_MOE_NAMES, "attention.query_key_value")
# Kolibri 1: its files' names -> GLM-4's sandwich norms and DeepSeek-V3's correction bias
REFERENCE_NAMES["kolibri1"] = ({".moe.router.expert_bias": ".mlp.gate.e_score_correction_bias",
                                ".post_attn_norm.": ".post_self_attn_layernorm.", ".post_ffn_norm.": ".post_mlp_layernorm."}, None)


def _split_qkv(x: np.ndarray, cfg: dict[str, Any], hd: int) -> list[np.ndarray]:
    """A fused query_key_value's q, k, v rows: in groups per KV head ([q·g, k, v]: GPT-NeoX,
    Bloom, Falcon, multi-head GPTBigCode), else in q|k|v blocks."""
    nh, nkv, rest = cfg["num_attention_heads"], cfg["num_key_value_heads"], x.shape[1:]
    grouped = cfg["model_type"] in ("gpt_neox", "bloom", "falcon") or (cfg["model_type"] == "gpt_bigcode" and nkv == nh)
    if not grouped:
        return np.split(x, [nh * hd, (nh + nkv) * hd])
    g = x.reshape(nkv, nh // nkv + 2, hd, *rest)
    return [g[:, :-2].reshape(-1, *rest), g[:, -2].reshape(-1, *rest), g[:, -1].reshape(-1, *rest)]


def _under_reference_names(w: dict[str, np.ndarray], cfg: dict[str, Any], hd: int) -> dict[str, np.ndarray]:
    ren, fused = REFERENCE_NAMES[cfg["model_type"]]
    out: dict[str, np.ndarray] = {}
    for name, x in w.items():
        if cfg["model_type"] == "opt" and name == "model.decoder.embed_positions.weight":  # (rows pos + 2)
            out["model.pos_embed.weight"] = x[2:]
            continue
        for a, b in ren.items():
            name = name.replace(a, b)
        if cfg["model_type"] == "gpt2" and x.ndim == 2 and ".layers." in name:
            x = x.T  # Conv1D: [in, out]
        if fused and f".{fused}." in name:
            for t, part in zip("qkv", _split_qkv(x, cfg, hd)):
                out[name.replace(fused, f"self_attn.{t}_proj")] = np.ascontiguousarray(part)
        else:
            out[name] = np.ascontiguousarray(x)
    return out


def unfused(w: dict[str, np.ndarray], cfg: dict[str, Any]) -> dict[str, np.ndarray]:
    """Phi-3's fused qkv_proj / gate_up_proj split into Llama's tensors, Mixtral's
    block_sparse_moe named as Qwen-MoE's mlp, the experts one by one (for llama_ref)."""
    out = {}
    for name, x in to_checkpoint(w, cfg).items():
        if name.endswith("mlp.experts.gate_up_proj") and cfg["model_type"] == "mistral4":  # stacked: per expert
            p = name[:-len("gate_up_proj")]
            for e in range(x.shape[0]):
                out[f"{p}{e}.gate_proj.weight"], out[f"{p}{e}.up_proj.weight"] = np.split(x[e], 2)
            continue
        if name.endswith("mlp.experts.down_proj") and cfg["model_type"] == "mistral4":
            p = name[:-len("down_proj")]
            for e in range(x.shape[0]):
                out[f"{p}{e}.down_proj.weight"] = x[e]
            continue
        if name.endswith("block_sparse_moe.input_linear.weight"):  # GraniteMoE: one tensor per expert
            p = name[:-len("block_sparse_moe.input_linear.weight")]
            for e in range(x.shape[0]):
                out[f"{p}mlp.experts.{e}.gate_proj.weight"], out[f"{p}mlp.experts.{e}.up_proj.weight"] = np.split(x[e], 2)
            continue
        if name.endswith("block_sparse_moe.output_linear.weight"):
            p = name[:-len("block_sparse_moe.output_linear.weight")]
            for e in range(x.shape[0]):
                out[f"{p}mlp.experts.{e}.down_proj.weight"] = x[e]
            continue
        if name.endswith("block_sparse_moe.router.layer.weight"):
            out[name.replace("block_sparse_moe.router.layer.weight", "mlp.gate.weight")] = x
            continue
        if name.endswith("shared_mlp.input_linear.weight"):  # GraniteMoeShared: gate rows, then up rows
            p = name[:-len("shared_mlp.input_linear.weight")]
            out[f"{p}mlp.shared_expert.gate_proj.weight"], out[f"{p}mlp.shared_expert.up_proj.weight"] = np.split(x, 2)
            continue
        if name.endswith("shared_mlp.output_linear.weight"):
            out[name.replace("shared_mlp.output_linear.weight", "mlp.shared_expert.down_proj.weight")] = x
            continue
        # HunYuan MoE's router and shared MLP under the names llama_ref reads (added ungated)
        name = name.replace(".mlp.gate.wg.weight", ".mlp.gate.weight").replace(".mlp.shared_mlp.", ".mlp.shared_experts.")
        # Apertus's norms under Llama's names
        name = name.replace(".attention_layernorm.", ".input_layernorm.")
        name = name.replace(".feedforward_layernorm.", ".post_attention_layernorm.")
        if ".block_sparse_moe." in name:
            name = name.replace(".block_sparse_moe.", ".mlp.")
            name = name.replace(".w1.", ".gate_proj.").replace(".w3.", ".up_proj.").replace(".w2.", ".down_proj.")
        out[name] = x
    cfg = std_fields(cfg)
    hd = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    if cfg["model_type"] in REFERENCE_NAMES:
        out = _under_reference_names(out, cfg, hd)
    if cfg["model_type"] in ("olmo", "nanochat"):  # (OlmoLayerNorm, NanoChat's RMSNorm: no weights, as weights of 1)
        ones = np.ones(cfg["hidden_size"], np.float32)
        out["model.norm.weight"] = ones
        for i in range(cfg["num_hidden_layers"]):
            out[f"model.layers.{i}.input_layernorm.weight"] = out[f"model.layers.{i}.post_attention_layernorm.weight"] = ones
            if cfg["model_type"] == "nanochat":  # (and its q/k norms after RoPE, and the embeddings')
                out[f"model.layers.{i}.self_attn.query_layernorm.weight"] = np.ones(hd, np.float32)
                out[f"model.layers.{i}.self_attn.key_layernorm.weight"] = np.ones(hd, np.float32)
        if cfg["model_type"] == "nanochat":
            out["model.embed_norm.weight"] = ones
    q, kv = cfg["num_attention_heads"] * hd, cfg.get("num_key_value_heads", cfg["num_attention_heads"]) * hd
    for name in list(out):
        if name.endswith("self_attn.qkv_proj.weight"):
            x = out.pop(name)
            p = name[:-len("qkv_proj.weight")]
            out[p + "q_proj.weight"], out[p + "k_proj.weight"], out[p + "v_proj.weight"] = x[:q], x[q:q + kv], x[q + kv:]
        elif name.endswith("mlp.gate_up_proj.weight"):
            x = out.pop(name)
            p = name[:-len("gate_up_proj.weight")]
            out[p + "gate_proj.weight"], out[p + "up_proj.weight"] = np.split(x, 2)
    if cfg["model_type"] == "nemotron":  # LayerNorm1P: the weights used as 1 + w
        for name in list(out):
            if name.endswith(("layernorm.weight", "model.norm.weight")):
                out[name] = (1.0 + out[name].astype(np.float64)).astype(np.float32)
    return out


def gemma2_params(cfg: dict[str, Any]) -> dict[str, float] | None:
    """llama_ref's `gemma2` argument for a Gemma 2 config.json, else None."""
    if cfg["model_type"] not in ("gemma2", "gemma3_text", "vaultgemma"):
        return None
    out = {"query_pre_attn_scalar": cfg["query_pre_attn_scalar"],
           "attn_softcap": cfg.get("attn_logit_softcapping") or 0.0,
           "final_softcap": cfg.get("final_logit_softcapping") or 0.0}
    if cfg["model_type"] == "gemma3_text":
        out["local_theta"] = cfg["rope_parameters"]["sliding_attention"]["rope_theta"]
        out["local"] = [t == "sliding_attention" for t in cfg["layer_types"]]
    return out


def norm_center(model_type: str) -> float:
    """Where random_weights centres the norm weights: 1, except Nemotron's LayerNorm1P, which uses
    its weights as 1 + w (trained ones sit near 0; near 1 they doubled every norm, and the relu²
    MLP's outputs grew so that int8 moved its logits 3 % where the other families' moved 1 %)."""
    return 0.0 if model_type == "nemotron" else 1.0


def random_weights(shapes: dict[str, list[int]], seed: int, norm_center: float = 1.0) -> dict[str, np.ndarray]:
    """float32 weights of bfloat16 values, scaled so activations and logits are O(1)."""
    rng = np.random.default_rng(seed)
    w: dict[str, np.ndarray] = {}
    for name in sorted(shapes):
        shape = tuple(shapes[name])
        if name.endswith(("act_fn.alpha_p", "act_fn.alpha_n")):  # Apertus's xIELU (softplus of these)
            a = 0.3 * rng.standard_normal(shape)
        elif name.endswith("act_fn.beta"):
            a = np.full(shape, 0.5)
        elif name.endswith("act_fn.eps"):
            a = np.full(shape, -1e-6)
        elif name.endswith(".bias"):
            a = 0.3 * rng.standard_normal(shape)
        elif name.endswith("norm.weight"):
            a = norm_center + 0.2 * rng.standard_normal(shape)
        elif name in ("model.embed_tokens.weight", "gpt_neox.embed_in.weight", "transformer.wte.weight",
                      "model.decoder.embed_tokens.weight", "transformer.word_embeddings.weight"):  # (GPT-2's, OPT's, ...)
            a = rng.standard_normal(shape)
        elif name in ("transformer.wpe.weight", "model.decoder.embed_positions.weight"):  # (smaller than the tokens')
            a = 0.5 * rng.standard_normal(shape)
        elif name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight", "ln_attn.weight", "ln_mlp.weight", "norm_1.weight",
                            "norm_2.weight", "norm_f.weight")):  # (GPT-2's, Falcon's, MPT's)
            a = norm_center + 0.2 * rng.standard_normal(shape)
        else:
            # (GPT-Neo's unscaled scores, q · k without 1/sqrt(head_dim): its q and k at a quarter
            # of the others' gain keep them the size of the other families')
            gain = 4.0 if name == "lm_head.weight" else 0.5 if name.endswith(("attention.q_proj.weight",
                                                                               "attention.k_proj.weight")) \
                else 2.0 if name.endswith(("q_proj.weight", "k_proj.weight")) \
                else 0.5 if name.endswith(("o_proj.weight", "down_proj.weight", "experts.down_proj")) else 1.0
            a = rng.standard_normal(shape) * gain / math.sqrt(shape[-1])  # (fan-in: the last dim)
        w[name] = R.round_to(a.astype(np.float32), "BF16").reshape(shape)  # (0-d stays 0-d)
    return w


def write_tokenizer(folder: Path) -> None:
    """tokenizer.json (byte-level BPE, no merges) + tokenizer_config.json (ChatML)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    # Token id = byte value: the byte-level alphabet maps the printable bytes to themselves
    # and the others, in order, to chr(256), chr(257), ... (GPT-2's bytes_to_unicode).
    printable = set(range(ord("!"), ord("~") + 1)) | set(range(0xA1, 0xAD)) | set(range(0xAE, 0x100))
    extra = iter(range(256, 512))
    vocab = {(chr(b) if b in printable else chr(next(extra))): b for b in range(256)}
    assert set(vocab) == set(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    template = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + "
                "'<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}"
                "{% endif %}")
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": None, "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>", "add_bos_token": False, "chat_template": template}))


def load_golden() -> dict[str, Any]:
    return json.loads(GOLDEN.read_text())


def write_from_golden(folder: Path, name: str, golden: dict[str, Any]) -> dict[str, np.ndarray]:
    """Writes case `name` from the golden data with numpy only; returns its weights."""
    g = golden["cases"][name]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(g["config"], indent=2))
    w = random_weights(g["shapes"], g["seed"], norm_center(g["config"]["model_type"]))
    R.write_safetensors(folder / "model.safetensors", to_checkpoint(w, g["config"]), "BF16")
    write_tokenizer(folder)
    return w


def seed_of(name: str) -> int:
    """A case's weight seed: from its name, so adding a case changes no other case."""
    return zlib.crc32(name.encode()) % 10007 + 1


def build_transformers(name: str, folder: Path | None = None):
    """(transformers model in float32 with this case's weights, its config.json dict, the
    weights). With `folder`: saved there with save_pretrained (safetensors) + the tokenizer."""
    import torch
    import transformers

    config = transformers_config(name)
    torch.manual_seed(0)
    try:
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32).eval()
    except ValueError:  # (Mistral 4: a text model transformers' Auto classes map only inside Mistral 3's)
        model = getattr(transformers, architecture(type(config).__name__))(config).to(torch.float32).eval()
    tied = bool(getattr(config, "tie_word_embeddings", False))
    shapes = {k: list(v.shape) for k, v in model.state_dict().items() if not (tied and k == "lm_head.weight")}
    w = random_weights(shapes, seed_of(name), norm_center(config.model_type))
    state = {k: torch.from_numpy(v.copy()) for k, v in w.items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not unexpected and set(missing) <= {"lm_head.weight"}, (missing, unexpected)
    if folder is not None:
        model.save_pretrained(str(folder), safe_serialization=True)
        write_tokenizer(folder)
        # What write_from_golden writes with numpy is what transformers saved, tensor for tensor.
        from safetensors.numpy import load_file
        saved = {}
        for f in sorted(folder.glob("*.safetensors")):
            saved.update(load_file(str(f)))
        mine = to_checkpoint(w, config_json(config))
        assert sorted(saved) == sorted(k for k in mine if not (tied and k == "lm_head.weight")), \
            (sorted(set(saved) ^ set(mine)))
        for k, v in saved.items():
            np.testing.assert_array_equal(v.astype(np.float32), mine[k], err_msg=k)
    return model, config_json(config), w, shapes

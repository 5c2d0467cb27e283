#include "family.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>
#include <vector>

#include "common.h"
#include "config.h"

namespace vt {
namespace {

#define VT_LLAMA_LAYER_TENSORS                                                                              \
    {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",                       \
     "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",       \
     "input_layernorm.weight", "post_attention_layernorm.weight", "self_attn.q_proj.bias",                  \
     "self_attn.k_proj.bias", "self_attn.v_proj.bias", "self_attn.o_proj.bias", "mlp.gate_proj.bias",       \
     "mlp.up_proj.bias", "mlp.down_proj.bias", "self_attn.q_norm.weight", "self_attn.k_norm.weight", nullptr,  \
     nullptr}

// No router, no experts, no shared expert (the MoE fields of a dense row).
#define VT_NO_MOE nullptr, nullptr, {nullptr, nullptr, nullptr}, nullptr, nullptr, false
// The trailing fields of a dense family (no router, no experts): VT_DENSE; up to
// moe_layer_range, for a row that sets short_conv: VT_DENSE_BEFORE_CONV.
#define VT_DENSE_BEFORE_CONV VT_NO_MOE, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false, /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false
#define VT_DENSE VT_DENSE_BEFORE_CONV, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false

// Defaults are transformers' config classes' (LlamaConfig, MistralConfig, Qwen2Config,
// Qwen3Config, Phi3Config), except without a config.json, where they are TinyLlama's (Llama only).
const ModelFamily kFamilies[] = {
    {
        "Llama", "LlamaForCausalLM", "llama",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        VT_LLAMA_LAYER_TENSORS, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/true, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/64, /*eps without config=*/1e-5, /*eps with config=*/1e-6,
        /*rope_theta=*/10000.0, /*max positions=*/2048,
        VT_DENSE,
    },
    {
        "Mistral", "MistralForCausalLM", "mistral",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        VT_LLAMA_LAYER_TENSORS, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::NO_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::WINDOW_ALL_LAYERS, /*default window=*/4096, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-6, /*eps with config=*/1e-6,
        /*rope_theta=*/10000.0, /*max positions=*/4096 * 32,
        VT_DENSE,
    },
    {
        "Qwen2", "Qwen2ForCausalLM", "qwen2",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        VT_LLAMA_LAYER_TENSORS, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::QKV_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::WINDOW_QWEN, /*default window=*/4096, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-6, /*eps with config=*/1e-6,
        /*rope_theta=*/10000.0, /*max positions=*/32768,
        VT_DENSE,
    },
    {
        "Qwen3", "Qwen3ForCausalLM", "qwen3",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        VT_LLAMA_LAYER_TENSORS, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/true,
        /*fused qkv, gate_up=*/false, false, ModelFamily::WINDOW_QWEN, /*default window=*/4096, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/128, /*head_dim=*/128, /*eps without config=*/1e-6, /*eps with config=*/1e-6,
        /*rope_theta=*/10000.0, /*max positions=*/32768,
        VT_DENSE,
    },
    {
        "Phi3", "Phi3ForCausalLM", "phi3",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.qkv_proj.weight", nullptr, nullptr, "self_attn.o_proj.weight", "mlp.gate_up_proj.weight",
         nullptr, "mlp.down_proj.weight", "input_layernorm.weight", "post_attention_layernorm.weight", nullptr,
         nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr},
        "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::NO_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/true, true, ModelFamily::WINDOW_ALL_LAYERS, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/96, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/10000.0, /*max positions=*/4096,
        VT_DENSE,
    },
    {
        // Gemma 1 (gemma-2b / 7b, gemma-1.1, CodeGemma): Llama's pre-norm block with Gemma's
        // (1 + w) norms, scaled embeddings and GeGLU.
        "Gemma", "GemmaForCausalLM", "gemma",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        VT_LLAMA_LAYER_TENSORS, "self_attn.rotary_emb.inv_freq",
        "gelu_pytorch_tanh", ModelFamily::RMS_NORM_PLUS_ONE, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::GEMMA1, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/256, /*head_dim=*/256, /*eps without config=*/1e-6, /*eps with config=*/1e-6,
        /*rope_theta=*/10000.0, /*max positions=*/8192,
        VT_DENSE,
    },
    {
        "Gemma2", "Gemma2ForCausalLM", "gemma2",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
         "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
         "input_layernorm.weight", "pre_feedforward_layernorm.weight", nullptr, nullptr, nullptr, nullptr, nullptr,
         nullptr, nullptr, nullptr, nullptr, "post_attention_layernorm.weight", "post_feedforward_layernorm.weight"},
        "self_attn.rotary_emb.inv_freq",
        "gelu_pytorch_tanh", ModelFamily::RMS_NORM_PLUS_ONE, ModelFamily::ROTATE_HALF, ModelFamily::NO_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::WINDOW_ALTERNATE, /*default window=*/4096, /*gemma=*/ModelFamily::GEMMA2, /*window pattern=*/2, /*softcaps=*/50.0, 30.0, /*local rope=*/false,
        /*config head_dim=*/256, /*head_dim=*/256, /*eps without config=*/1e-6, /*eps with config=*/1e-6,
        /*rope_theta=*/10000.0, /*max positions=*/8192,
        VT_DENSE,
    },
    {
        "Gemma3", "Gemma3ForCausalLM", "gemma3_text",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
         "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
         "input_layernorm.weight", "pre_feedforward_layernorm.weight", nullptr, nullptr, nullptr, nullptr, nullptr,
         nullptr, nullptr, "self_attn.q_norm.weight", "self_attn.k_norm.weight", "post_attention_layernorm.weight",
         "post_feedforward_layernorm.weight"},
        "self_attn.rotary_emb.inv_freq",
        "gelu_pytorch_tanh", ModelFamily::RMS_NORM_PLUS_ONE, ModelFamily::ROTATE_HALF, ModelFamily::NO_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/true,
        /*fused qkv, gate_up=*/false, false, ModelFamily::WINDOW_ALTERNATE, /*default window=*/4096,
        /*gemma=*/ModelFamily::GEMMA2, /*window pattern=*/6, /*softcaps=*/0.0, 0.0, /*local rope=*/true,
        /*config head_dim=*/256, /*head_dim=*/256, /*eps without config=*/1e-6, /*eps with config=*/1e-6,
        /*rope_theta=*/1000000.0, /*max positions=*/131072,
        VT_DENSE,
    },
    {
        "SmolLM3", "SmolLM3ForCausalLM", "smollm3",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        VT_LLAMA_LAYER_TENSORS, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/true, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::WINDOW_QWEN, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-6, /*eps with config=*/1e-6,
        /*rope_theta=*/2000000.0, /*max positions=*/32768,
        VT_NO_MOE, /*nope=*/true, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        "Granite", "GraniteForCausalLM", "granite",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        VT_LLAMA_LAYER_TENSORS, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/true, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-6, /*eps with config=*/1e-6,
        /*rope_theta=*/10000.0, /*max positions=*/2048,
        VT_NO_MOE, /*nope=*/false, /*multipliers=*/true, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // HyperCLOVA X (naver-hyperclovax/HyperCLOVAX-SEED-Think-14B): Granite's block and
        // multipliers (MuP) with the logits times logits_scaling and, when use_post_norm, each
        // attention / MLP output RMSNormed (post_norm1 / post_norm2, "Peri-LN") before the
        // residual multiplier and add.
        "HyperCLOVAX", "HyperCLOVAXForCausalLM", "hyperclovax",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
         "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
         "input_layernorm.weight", "post_attention_layernorm.weight", "self_attn.q_proj.bias",
         "self_attn.k_proj.bias", "self_attn.v_proj.bias", "self_attn.o_proj.bias", "mlp.gate_proj.bias",
         "mlp.up_proj.bias", "mlp.down_proj.bias", nullptr, nullptr, "post_norm1.weight", "post_norm2.weight"},
        "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/true, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-6, /*eps with config=*/1e-6,
        /*rope_theta=*/10000.0, /*max positions=*/2048,
        VT_NO_MOE, /*nope=*/false, /*multipliers=*/2, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/true, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // GraniteSWA (ibm-granite/granite-swash): Granite's block and four multipliers with
        // attention sinks (self_attn.sinks: transformers' sigmoid(logsumexp - sink) rescaling, one
        // more logit per head in each softmax), sliding layers by layer_types (else all but every
        // 4th from the first; sliding_window default 128) and per-layer RoPE bases (layer_rope_theta,
        // 0: NoPE).
        "GraniteSWA", "GraniteSWAForCausalLM", "granite_swa",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
         "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
         "input_layernorm.weight", "post_attention_layernorm.weight", "self_attn.q_proj.bias",
         "self_attn.k_proj.bias", "self_attn.v_proj.bias", "self_attn.o_proj.bias", "mlp.gate_proj.bias",
         "mlp.up_proj.bias", "mlp.down_proj.bias", nullptr, nullptr, nullptr, nullptr, "self_attn.sinks"},
        "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/true, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::WINDOW_TYPES_OR_FIRST, /*default window=*/128, /*gemma=*/ModelFamily::NOT_GEMMA, /*window pattern=*/4, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/10000.0, /*max positions=*/8192,
        VT_NO_MOE, /*nope=*/false, /*multipliers=*/true, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false,
        /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/true, /*sparsemixer=*/false,
    },
    {
        // Phi-1 / 1.5 / 2: the parallel LayerNorm block (phi), partial rotary embeddings
        // (partial_rotary_factor, default 0.5), GELU (tanh) MLP, biases everywhere.
        "Phi", "PhiForCausalLM", "phi",
        "model.embed_tokens.weight", "model.final_layernorm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight", "self_attn.dense.weight",
         "mlp.fc1.weight", nullptr, "mlp.fc2.weight", "input_layernorm.weight", nullptr, "self_attn.q_proj.bias",
         "self_attn.k_proj.bias", "self_attn.v_proj.bias", "self_attn.dense.bias", "mlp.fc1.bias", nullptr,
         "mlp.fc2.bias", nullptr, nullptr, nullptr, nullptr, nullptr, "input_layernorm.bias"},
        "self_attn.rotary_emb.inv_freq",
        "gelu_new", ModelFamily::LAYER_NORM, ModelFamily::ROTATE_HALF, ModelFamily::ALL_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/64, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/10000.0, /*max positions=*/2048,
        VT_NO_MOE, /*nope=*/false,
        /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false,
        /*gpt-oss=*/false, /*phi=*/true, /*rotary factor=*/0.5, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // GPT-J (gpt-j-6b, GPT4All-J, Pygmalion-6B): Phi's parallel block (one LayerNorm with
        // bias, x + attn(h) + mlp(h), an ungated gelu_new MLP with biases, lm_head's bias) with
        // q/k/v/out_proj without biases and RoPE over pairs (2i, 2i + 1) of the first rotary_dim
        // dims of each head (reordered at load).
        "GPTJ", "GPTJForCausalLM", "gptj",
        "transformer.wte.weight", "transformer.ln_f.weight", "lm_head.weight", "transformer.h.",
        {"attn.q_proj.weight", "attn.k_proj.weight", "attn.v_proj.weight", "attn.out_proj.weight", "mlp.fc_in.weight",
         nullptr, "mlp.fc_out.weight", "ln_1.weight", nullptr, nullptr, nullptr, nullptr, nullptr, "mlp.fc_in.bias", nullptr,
         "mlp.fc_out.bias", nullptr, nullptr, nullptr, nullptr, nullptr, "ln_1.bias"},
        // (the causal-mask buffers of old files)
        "attn.bias|attn.masked_bias",
        "gelu_new", ModelFamily::LAYER_NORM, ModelFamily::INTERLEAVED, ModelFamily::NO_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/256, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/10000.0, /*max positions=*/2048,
        VT_NO_MOE, /*nope=*/false,
        /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false,
        /*gpt-oss=*/false, /*phi=*/true, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/true, /*rotary dim field=*/true, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // StableLM (stablelm-2-1.6b, stablelm-3b-4e1t, stablelm-zephyr): Llama's sequential block
        // with LayerNorms (weights and biases), q/k/v biases when use_qkv_bias, partial rotary
        // embeddings (default 0.25).
        "StableLM", "StableLmForCausalLM", "stablelm",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
         "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
         "input_layernorm.weight", "post_attention_layernorm.weight", "self_attn.q_proj.bias",
         "self_attn.k_proj.bias", "self_attn.v_proj.bias", nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
         nullptr, nullptr, nullptr, "input_layernorm.bias", "post_attention_layernorm.bias"},
        "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::LAYER_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_QKV_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/80, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/10000.0, /*max positions=*/4096,
        VT_NO_MOE, /*nope=*/false,
        /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false,
        /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.25, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // OLMo 1 (allenai/OLMo-1B-hf / 7B-hf, OLMo-1.7): Llama's block with LayerNorms that have no
        // weights and no biases (eps 1e-5), clip_qkv, q/k/v/o biases when attention_bias.
        "OLMo", "OlmoForCausalLM", "olmo",
        "model.embed_tokens.weight", nullptr, "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight", "self_attn.o_proj.weight",
         "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight", nullptr, nullptr, "self_attn.q_proj.bias",
         "self_attn.k_proj.bias", "self_attn.v_proj.bias", "self_attn.o_proj.bias"},
        "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::LAYER_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/10000.0, /*max positions=*/2048,
        VT_NO_MOE, /*nope=*/false,
        /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false,
        /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/true, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // GPT-NeoX (Pythia, GPT-NeoX-20B, Dolly v2, RedPajama-INCITE): LayerNorms (weights and
        // biases), the fused query_key_value in per-head [q, k, v] groups (regrouped at load),
        // q/k/v/o biases when attention_bias (true when left out), an ungated exact-GELU MLP
        // with biases, partial rotary embeddings (rotary_pct, default 0.25), the parallel block
        // with two norms when use_parallel_residual (true when left out), an untied embed_out.
        "GPTNeoX", "GPTNeoXForCausalLM", "gpt_neox",
        "gpt_neox.embed_in.weight", "gpt_neox.final_layer_norm.weight", "embed_out.weight", "gpt_neox.layers.",
        {"attention.query_key_value.weight", nullptr, nullptr, "attention.dense.weight", "mlp.dense_h_to_4h.weight",
         nullptr, "mlp.dense_4h_to_h.weight", "input_layernorm.weight", "post_attention_layernorm.weight",
         "attention.query_key_value.bias", nullptr, nullptr, "attention.dense.bias", "mlp.dense_h_to_4h.bias", nullptr,
         "mlp.dense_4h_to_h.bias", nullptr, nullptr, nullptr, nullptr, nullptr, "input_layernorm.bias",
         "post_attention_layernorm.bias"},
        // (and attention.bias / attention.masked_bias: the causal mask buffers of old files)
        "attention.rotary_emb.inv_freq|attention.bias|attention.masked_bias",
        "gelu", ModelFamily::LAYER_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/true, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/64, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/10000.0, /*max positions=*/2048,
        VT_NO_MOE, /*nope=*/false,
        /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false,
        /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.25, /*nope global=*/false, /*bias by default=*/true, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/true, /*parallel residual field=*/true, /*mlp bias always=*/true, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/true, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // Falcon (falcon-7b, falcon-rw without ALiBi, Falcon2-11B): LayerNorms (weights and
        // biases), the fused query_key_value in groups per KV head (regrouped at load: falcon-7b's
        // multi-query q|k|v, per-head [q, k, v] without multi_query, [q·g, k, v] per KV head in the
        // new decoder architecture), biases when `bias` (false when left out), an ungated exact-GELU
        // MLP, RoPE; the parallel block with one norm (input_layernorm) when parallel_attn, else
        // the sequential one (post_attention_layernorm before the MLP).
        "Falcon", "FalconForCausalLM", "falcon",
        "transformer.word_embeddings.weight", "transformer.ln_f.weight", "lm_head.weight", "transformer.h.",
        {"self_attention.query_key_value.weight", nullptr, nullptr, "self_attention.dense.weight",
         "mlp.dense_h_to_4h.weight", nullptr, "mlp.dense_4h_to_h.weight", "input_layernorm.weight", "post_attention_layernorm.weight",
         "self_attention.query_key_value.bias", nullptr, nullptr, "self_attention.dense.bias", "mlp.dense_h_to_4h.bias",
         nullptr, "mlp.dense_4h_to_h.bias", nullptr, nullptr, nullptr, nullptr, nullptr, "input_layernorm.bias", "post_attention_layernorm.bias"},
        "self_attention.rotary_emb.inv_freq",
        "gelu", ModelFamily::LAYER_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_USE_BIAS_OFF,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/true, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/64, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/10000.0, /*max positions=*/2048,
        VT_NO_MOE, /*nope=*/false,
        /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false,
        /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/true, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/1, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // Falcon with two parallel norms (falcon-40b / 180B: new_decoder_architecture with
        // num_ln_in_parallel_attn 2, its default): x + attn(ln_attn(x)) + mlp(ln_mlp(x)).
        "Falcon", "FalconForCausalLM", "falcon",
        "transformer.word_embeddings.weight", "transformer.ln_f.weight", "lm_head.weight", "transformer.h.",
        {"self_attention.query_key_value.weight", nullptr, nullptr, "self_attention.dense.weight",
         "mlp.dense_h_to_4h.weight", nullptr, "mlp.dense_4h_to_h.weight", "ln_attn.weight", "ln_mlp.weight",
         "self_attention.query_key_value.bias", nullptr, nullptr, "self_attention.dense.bias", "mlp.dense_h_to_4h.bias",
         nullptr, "mlp.dense_4h_to_h.bias", nullptr, nullptr, nullptr, nullptr, nullptr, "ln_attn.bias", "ln_mlp.bias"},
        "self_attention.rotary_emb.inv_freq",
        "gelu", ModelFamily::LAYER_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_USE_BIAS_OFF,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/true, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/64, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/10000.0, /*max positions=*/2048,
        VT_NO_MOE, /*nope=*/false,
        /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false,
        /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/true, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/2, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // Bloom (bigscience/bloom-560m … 176b, bloomz, mt0-free decoders): LayerNorms (weights and
        // biases) — one of the embeddings too (word_embeddings_layernorm) —, ALiBi instead of RoPE,
        // the fused query_key_value in per-head [q, k, v] groups (regrouped at load), biases on
        // every linear but lm_head, an ungated tanh-GELU MLP of 4 · hidden, tied embeddings.
        "Bloom", "BloomForCausalLM", "bloom",
        "transformer.word_embeddings.weight", "transformer.ln_f.weight", "lm_head.weight", "transformer.h.",
        {"self_attention.query_key_value.weight", nullptr, nullptr, "self_attention.dense.weight",
         "mlp.dense_h_to_4h.weight", nullptr, "mlp.dense_4h_to_h.weight", "input_layernorm.weight",
         "post_attention_layernorm.weight", "self_attention.query_key_value.bias", nullptr, nullptr,
         "self_attention.dense.bias", "mlp.dense_h_to_4h.bias", nullptr, "mlp.dense_4h_to_h.bias", nullptr, nullptr,
         nullptr, nullptr, nullptr, "input_layernorm.bias", "post_attention_layernorm.bias"},
        nullptr,
        "gelu_pytorch_tanh", ModelFamily::LAYER_NORM, ModelFamily::ROTATE_HALF, ModelFamily::ALL_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/true, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/64, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/10000.0, /*max positions=*/2048,
        VT_NO_MOE, /*nope=*/false,
        /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false,
        /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/true, /*parallel residual field=*/false, /*mlp bias always=*/true, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/"transformer.", /*kv heads are heads=*/true, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/1, /*embed norm=*/"transformer.word_embeddings_layernorm.weight", /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // MPT (mosaicml/mpt-7b / 30b and their -instruct / -chat, as transformers' MptForCausalLM
        // computes them): the pre-norm block with LayerNorms without biases (norm_1, norm_2,
        // norm_f), ALiBi instead of RoPE, a fused Wqkv of q|k|v blocks, clip_qkv, no biases, an
        // ungated exact-GELU MLP of expansion_ratio · d_model, tied embeddings.
        "MPT", "MptForCausalLM", "mpt",
        "transformer.wte.weight", "transformer.norm_f.weight", "lm_head.weight", "transformer.blocks.",
        {"attn.Wqkv.weight", nullptr, nullptr, "attn.out_proj.weight", "ffn.up_proj.weight", nullptr,
         "ffn.down_proj.weight", "norm_1.weight", "norm_2.weight"},
        nullptr,
        "gelu", ModelFamily::LAYER_NORM, ModelFamily::ROTATE_HALF, ModelFamily::NO_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/true, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/10000.0, /*max positions=*/2048,
        VT_NO_MOE, /*nope=*/false,
        /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false,
        /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/true, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/true, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/2, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // OPT (facebook/opt-125m … 66b, OPT-IML, Galactica): the pre-norm block with LayerNorms
        // (weights and biases), learned absolute positions (embed_positions, rows pos + 2), no
        // RoPE, biases on every linear but lm_head when enable_bias (true when left out), an
        // ungated ReLU MLP fc2(relu(fc1 · h)), tied embeddings; the Hub's files without the
        // "model." prefix.
        "OPT", "OPTForCausalLM", "opt",
        "model.decoder.embed_tokens.weight", "model.decoder.final_layer_norm.weight", "lm_head.weight",
        "model.decoder.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight", "self_attn.out_proj.weight",
         "fc1.weight", nullptr, "fc2.weight", "self_attn_layer_norm.weight", "final_layer_norm.weight",
         "self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias", "self_attn.out_proj.bias", "fc1.bias",
         nullptr, "fc2.bias", nullptr, nullptr, nullptr, nullptr, nullptr, "self_attn_layer_norm.bias",
         "final_layer_norm.bias"},
        "self_attn.rotary_emb.inv_freq",  // (none: OPT stores no buffers)
        "relu", ModelFamily::LAYER_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_USE_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/64, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/10000.0, /*max positions=*/2048,
        VT_NO_MOE, /*nope=*/false,
        /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false,
        /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/"model.decoder.embed_positions.weight", /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/"model.", /*kv heads are heads=*/true, /*rotary dim field=*/false, /*pos embed offset=*/2, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // GPT-Neo (EleutherAI/gpt-neo-125m / 1.3B / 2.7B): GPT-2's block with Linear weights,
        // separate q/k/v without biases (out_proj's bias), unscaled scores, learned positions,
        // global and local (window_size) layers by attention_types, tied embeddings.
        "GPTNeo", "GPTNeoForCausalLM", "gpt_neo",
        "transformer.wte.weight", "transformer.ln_f.weight", "lm_head.weight", "transformer.h.",
        {"attn.attention.q_proj.weight", "attn.attention.k_proj.weight", "attn.attention.v_proj.weight",
         "attn.attention.out_proj.weight", "mlp.c_fc.weight", nullptr, "mlp.c_proj.weight", "ln_1.weight", "ln_2.weight",
         nullptr, nullptr, nullptr, "attn.attention.out_proj.bias", "mlp.c_fc.bias", nullptr, "mlp.c_proj.bias", nullptr,
         nullptr, nullptr, nullptr, nullptr, "ln_1.bias", "ln_2.bias"},
        // (the causal-mask buffers of old files)
        "attn.attention.bias|attn.attention.masked_bias",
        "gelu_new", ModelFamily::LAYER_NORM, ModelFamily::ROTATE_HALF, ModelFamily::OUT_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::WINDOW_TYPES_OR_ALL, /*default window=*/256, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/10000.0, /*max positions=*/2048,
        VT_NO_MOE, /*nope=*/false,
        /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false,
        /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/true, /*pos embed=*/"transformer.wpe.weight", /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/"transformer.", /*kv heads are heads=*/true, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/true,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // GPT-2 (gpt2 … gpt2-xl, distilgpt2, DialoGPT): LayerNorms (weights and biases), learned
        // absolute positions (wpe), no RoPE, Conv1D weights ([in, out]: transposed at load), a
        // fused c_attn of q|k|v blocks, biases on every linear but lm_head, an ungated tanh-GELU
        // MLP (gelu_new), tied embeddings; the Hub's files without the "transformer." prefix.
        "GPT2", "GPT2LMHeadModel", "gpt2",
        "transformer.wte.weight", "transformer.ln_f.weight", "lm_head.weight", "transformer.h.",
        {"attn.c_attn.weight", nullptr, nullptr, "attn.c_proj.weight", "mlp.c_fc.weight", nullptr, "mlp.c_proj.weight",
         "ln_1.weight", "ln_2.weight", "attn.c_attn.bias", nullptr, nullptr, "attn.c_proj.bias", "mlp.c_fc.bias", nullptr,
         "mlp.c_proj.bias", nullptr, nullptr, nullptr, nullptr, nullptr, "ln_1.bias", "ln_2.bias"},
        // (the causal-mask buffers of old files)
        "attn.bias|attn.masked_bias",
        "gelu_new", ModelFamily::LAYER_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/true, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/64, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/10000.0, /*max positions=*/1024,
        VT_NO_MOE, /*nope=*/false,
        /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false,
        /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/true, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/true, /*pos embed=*/"transformer.wpe.weight", /*multi query field=*/false, /*conv1d=*/true, /*bare prefix=*/"transformer.", /*kv heads are heads=*/true, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // GPTBigCode (StarCoder, StarCoderBase, SantaCoder, WizardCoder, granite-20b/34b-code):
        // GPT-2's block — LayerNorms (weights and biases), learned absolute positions (wpe), no
        // RoPE — with Linear weights, a fused c_attn (multi-query: q|k|v with one KV head;
        // else per-head [q, k, v] groups), biases on every linear but lm_head, an ungated
        // tanh-GELU MLP, tied embeddings by default.
        "GPTBigCode", "GPTBigCodeForCausalLM", "gpt_bigcode",
        "transformer.wte.weight", "transformer.ln_f.weight", "lm_head.weight", "transformer.h.",
        {"attn.c_attn.weight", nullptr, nullptr, "attn.c_proj.weight", "mlp.c_fc.weight", nullptr, "mlp.c_proj.weight",
         "ln_1.weight", "ln_2.weight", "attn.c_attn.bias", nullptr, nullptr, "attn.c_proj.bias", "mlp.c_fc.bias", nullptr,
         "mlp.c_proj.bias", nullptr, nullptr, nullptr, nullptr, nullptr, "ln_1.bias", "ln_2.bias"},
        // (the causal-mask buffers of old files)
        "attn.bias|attn.masked_bias",
        "gelu_pytorch_tanh", ModelFamily::LAYER_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/true, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/10000.0, /*max positions=*/1024,
        VT_NO_MOE, /*nope=*/false,
        /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false,
        /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/true, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/true, /*parallel residual field=*/false, /*mlp bias always=*/true, /*pos embed=*/"transformer.wpe.weight", /*multi query field=*/true, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // Starcoder2 (starcoder2-3b / 7b / 15b): a sequential block with LayerNorms (weights and
        // biases), biases on every linear when use_bias (default), an ungated tanh-GELU MLP
        // (c_fc, c_proj), sliding_window on every layer (null: none).
        "Starcoder2", "Starcoder2ForCausalLM", "starcoder2",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
         "self_attn.o_proj.weight", "mlp.c_fc.weight", nullptr, "mlp.c_proj.weight", "input_layernorm.weight",
         "post_attention_layernorm.weight", "self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias",
         "self_attn.o_proj.bias", "mlp.c_fc.bias", nullptr, "mlp.c_proj.bias", nullptr, nullptr, nullptr, nullptr,
         nullptr, "input_layernorm.bias", "post_attention_layernorm.bias"},
        "self_attn.rotary_emb.inv_freq",
        "gelu_pytorch_tanh", ModelFamily::LAYER_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_USE_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::WINDOW_ALL_LAYERS, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/10000.0, /*max positions=*/4096,
        VT_NO_MOE, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false,
        /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // EXAONE 3.0 / 3.5 (LGAI-EXAONE/EXAONE-3.5-2.4B / 7.8B / 32B, EXAONE Deep): Llama's block
        // under the names of its own modeling code (transformer.h.N.attn.attention.*, mlp.c_fc_0
        // gate, c_fc_1 up, c_proj down, ln_1 / ln_2 / ln_f), which transformers renames into
        // LlamaForCausalLM's at load; config.json's num_layers, layer_norm_epsilon and
        // activation_function stand for num_hidden_layers, rms_norm_eps and hidden_act
        // (ExaoneConfig's attribute_map). Biases when attention_bias / mlp_bias, as Llama's.
        "Exaone", "ExaoneForCausalLM", "exaone",
        "transformer.wte.weight", "transformer.ln_f.weight", "lm_head.weight", "transformer.h.",
        {"attn.attention.q_proj.weight", "attn.attention.k_proj.weight", "attn.attention.v_proj.weight",
         "attn.attention.out_proj.weight", "mlp.c_fc_0.weight", "mlp.c_fc_1.weight", "mlp.c_proj.weight",
         "ln_1.weight", "ln_2.weight", "attn.attention.q_proj.bias", "attn.attention.k_proj.bias",
         "attn.attention.v_proj.bias", "attn.attention.out_proj.bias", "mlp.c_fc_0.bias", "mlp.c_fc_1.bias",
         "mlp.c_proj.bias"},
        "attn.attention.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/true, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/500000.0, /*max positions=*/4096,
        VT_DENSE,
    },
    {
        // IQuest-Coder-V1 (IQuestLab/IQuest-Coder-V1-40B): Llama's block and names under its own
        // architecture and model_type (IQuestCoderConfig: head_dim 128, rms_norm_eps 1e-5;
        // transformers runs it as LlamaForCausalLM).
        "IQuestCoder", "IQuestCoderForCausalLM", "iquestcoder",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        VT_LLAMA_LAYER_TENSORS, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/true, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/128, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/10000.0, /*max positions=*/131072,
        VT_DENSE,
    },
    {
        // InternLM3 (internlm/internlm3-8b-instruct): Llama's block under Llama's tensor names,
        // which transformers (>= 5) loads as LlamaForCausalLM; its config.json says qkv_bias (q/k/v)
        // and bias (o_proj and the MLP) for attention_bias and mlp_bias (InternLM3Config's
        // attribute_map; transformers refuses them unequal), head_dim 128 when left out, and RoPE
        // type dynamic (NTK by factor, 6 in the released config).
        "InternLM3", "InternLM3ForCausalLM", "internlm3",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        VT_LLAMA_LAYER_TENSORS, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/true, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/128, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/10000.0, /*max positions=*/32768,
        VT_DENSE,
    },
    {
        // EXAONE 4 (EXAONE-4.0-1.2B / 32B): OLMo 2's post-norm block with per-head q/k norms,
        // sliding layers by layer_types (else every sliding_window_pattern-th layer is global),
        // the global layers without RoPE when there is a window (nope_global).
        "Exaone4", "Exaone4ForCausalLM", "exaone4",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
         "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
         nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, "self_attn.q_norm.weight",
         "self_attn.k_norm.weight", "post_attention_layernorm.weight", "post_feedforward_layernorm.weight"},
        "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::NO_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/true,
        /*fused qkv, gate_up=*/false, false, ModelFamily::WINDOW_ALTERNATE, /*default window=*/4096, /*gemma=*/ModelFamily::NOT_GEMMA, /*window pattern=*/4, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/10000.0, /*max positions=*/2048,
        VT_NO_MOE, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/true, /*fused experts=*/false,
        /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/true, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        "OLMo2", "Olmo2ForCausalLM", "olmo2",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
         "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
         nullptr, nullptr, "self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias",
         "self_attn.o_proj.bias", nullptr, nullptr, nullptr, "self_attn.q_norm.weight", "self_attn.k_norm.weight",
         "post_attention_layernorm.weight", "post_feedforward_layernorm.weight"},
        "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/true,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/10000.0, /*max positions=*/2048,
        VT_NO_MOE, /*nope=*/false,
        /*multipliers=*/false, /*post norm only=*/true, /*fused experts=*/false, /*qk norm full=*/true, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // FlexOlmo (allenai/FlexOlmo-7x7B): OLMo 2's post-norm block (q/k norms over the whole
        // projection, the sublayers' outputs RMSNormed before their adds) with OLMoE's experts in
        // every layer (softmax router, top k renormalized when norm_topk_prob).
        "FlexOlmo", "FlexOlmoForCausalLM", "flex_olmo",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
         "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
         nullptr, nullptr, "self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias",
         "self_attn.o_proj.bias", nullptr, nullptr, nullptr, "self_attn.q_norm.weight", "self_attn.k_norm.weight",
         "post_attention_layernorm.weight", "post_feedforward_layernorm.weight"},
        "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/true,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-6, /*eps with config=*/1e-6,
        /*rope_theta=*/500000.0, /*max positions=*/4096,
        "mlp.gate.weight", "mlp.experts.", {"gate_proj.weight", "up_proj.weight", "down_proj.weight"},
        /*shared expert=*/nullptr, nullptr, /*config norm_topk_prob=*/true, /*nope=*/false,
        /*multipliers=*/false, /*post norm only=*/true, /*fused experts=*/false, /*qk norm full=*/true, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        "GraniteMoE", "GraniteMoeForCausalLM", "granitemoe",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        VT_LLAMA_LAYER_TENSORS, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-6, /*eps with config=*/1e-6,
        /*rope_theta=*/10000.0, /*max positions=*/2048,
        // (softmax over the top-k logits: the renormalized top-k of the softmax)
        "block_sparse_moe.router.layer.weight", nullptr,
        {"block_sparse_moe.input_linear.weight", nullptr, "block_sparse_moe.output_linear.weight"},
        /*shared expert=*/nullptr, nullptr, /*config norm_topk_prob=*/false, /*nope=*/false,
        /*multipliers=*/true, /*post norm only=*/false, /*fused experts=*/true, /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // GraniteMoeShared (granite-4.0-tiny-preview's layout without its Mamba layers,
        // GraniteMoeSharedForCausalLM): GraniteMoE plus a shared expert beside the routed ones,
        // its gate|up rows in one tensor (shared_mlp.input_linear [2·S, H]) and added ungated.
        "GraniteMoeShared", "GraniteMoeSharedForCausalLM", "granitemoeshared",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        VT_LLAMA_LAYER_TENSORS, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-6, /*eps with config=*/1e-6,
        /*rope_theta=*/10000.0, /*max positions=*/2048,
        "block_sparse_moe.router.layer.weight", nullptr,
        {"block_sparse_moe.input_linear.weight", nullptr, "block_sparse_moe.output_linear.weight"},
        /*shared expert=*/"shared_mlp.", nullptr, /*config norm_topk_prob=*/false, /*nope=*/false,
        /*multipliers=*/true, /*post norm only=*/false, /*fused experts=*/true, /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        "OLMoE", "OlmoeForCausalLM", "olmoe",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        VT_LLAMA_LAYER_TENSORS, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/true,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/10000.0, /*max positions=*/4096,
        "mlp.gate.weight", "mlp.experts.", {"gate_proj.weight", "up_proj.weight", "down_proj.weight"},
        /*shared expert=*/nullptr, nullptr, /*config norm_topk_prob=*/true, /*nope=*/false,
        /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/true, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // gpt-oss (gpt-oss-20b / 120b): Llama's pre-norm block with q/k/v/o biases, attention
        // sinks, sliding layers (layer_types; default: even layers, window 128), YaRN, and MoE
        // layers whose router has a bias and whose experts run the clamped SwiGLU (gpt_oss).
        "GptOss", "GptOssForCausalLM", "gpt_oss",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
         "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
         "input_layernorm.weight", "post_attention_layernorm.weight", "self_attn.q_proj.bias",
         "self_attn.k_proj.bias", "self_attn.v_proj.bias", "self_attn.o_proj.bias", nullptr, nullptr, nullptr,
         nullptr, nullptr, nullptr, nullptr, "self_attn.sinks"},
        "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::WINDOW_ALTERNATE, /*default window=*/128,
        /*gemma=*/ModelFamily::NOT_GEMMA, /*window pattern=*/2, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/64, /*head_dim=*/64, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/150000.0, /*max positions=*/131072,
        "mlp.router.weight", nullptr, {"mlp.experts.gate_up_proj", nullptr, "mlp.experts.down_proj"},
        /*shared expert=*/nullptr, nullptr, /*config norm_topk_prob=*/false, /*nope=*/false,
        /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/true, /*qk norm full=*/false,
        /*gpt-oss=*/true, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        "Mixtral", "MixtralForCausalLM", "mixtral",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        VT_LLAMA_LAYER_TENSORS, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::NO_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::WINDOW_ALL_LAYERS, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/1000000.0, /*max positions=*/131072,
        "block_sparse_moe.gate.weight", "block_sparse_moe.experts.", {"w1.weight", "w3.weight", "w2.weight"},
        /*shared expert=*/nullptr, nullptr, /*config norm_topk_prob=*/false, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        "Qwen2MoE", "Qwen2MoeForCausalLM", "qwen2_moe",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        VT_LLAMA_LAYER_TENSORS, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::QKV_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::WINDOW_QWEN, /*default window=*/4096, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-6, /*eps with config=*/1e-6,
        /*rope_theta=*/10000.0, /*max positions=*/32768,
        "mlp.gate.weight", "mlp.experts.", {"gate_proj.weight", "up_proj.weight", "down_proj.weight"},
        "mlp.shared_expert.", "mlp.shared_expert_gate.weight", /*config norm_topk_prob=*/true, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        "Qwen3MoE", "Qwen3MoeForCausalLM", "qwen3_moe",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        VT_LLAMA_LAYER_TENSORS, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/true,
        /*fused qkv, gate_up=*/false, false, ModelFamily::WINDOW_QWEN, /*default window=*/4096, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-6, /*eps with config=*/1e-6,
        /*rope_theta=*/10000.0, /*max positions=*/32768,
        "mlp.gate.weight", "mlp.experts.", {"gate_proj.weight", "up_proj.weight", "down_proj.weight"},
        /*shared expert=*/nullptr, nullptr, /*config norm_topk_prob=*/true, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // EXAONE MoE (K-EXAONE): Llama's pre-norm block with per-head q/k RMSNorms, sliding layers
        // (layer_types, else sliding_window_pattern, default 4) and, with a sliding window, full
        // layers without RoPE (EXAONE 4's); dense layers by mlp_layer_types (else the first
        // first_k_dense_replace), the others experts with DeepSeek-V3's router and shared experts.
        "ExaoneMoE", "ExaoneMoeForCausalLM", "exaone_moe",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        VT_LLAMA_LAYER_TENSORS, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::NO_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/true,
        /*fused qkv, gate_up=*/false, false, ModelFamily::WINDOW_ALTERNATE, /*default window=*/4096, /*gemma=*/ModelFamily::NOT_GEMMA, /*window pattern=*/4, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/10000.0, /*max positions=*/2048,
        "mlp.gate.weight", "mlp.experts.", {"gate_proj.weight", "up_proj.weight", "down_proj.weight"},
        "mlp.shared_experts.", /*shared gate=*/nullptr, /*config norm_topk_prob=*/true, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/true, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/5, /*qk norm field=*/false, /*mla=*/0,
        /*choice bias=*/"mlp.e_score_correction_bias", /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // GLM-4 MoE (zai-org/GLM-4.5, GLM-4.5-Air, GLM-4.6): Llama's block with RoPE over the first
        // half of each head (rotate-half pairs), q/k/v biases when attention_bias, per-head q/k
        // RMSNorms when use_qk_norm; dense layers first, then experts with DeepSeek-V3's router
        // and a shared expert (sigmoid_router).
        "Glm4MoE", "Glm4MoeForCausalLM", "glm4_moe",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        VT_LLAMA_LAYER_TENSORS, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_QKV_OUT_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/10000.0, /*max positions=*/131072,
        "mlp.gate.weight", "mlp.experts.", {"gate_proj.weight", "up_proj.weight", "down_proj.weight"},
        "mlp.shared_experts.", /*shared gate=*/nullptr, /*config norm_topk_prob=*/true, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.5, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/1, /*qk norm field=*/true, /*mla=*/0, /*choice bias=*/"mlp.gate.e_score_correction_bias", /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // Solar Open (upstage/Solar-Open-100B): Llama's attention (every dim rotates; q/k/v biases when
        // attention_bias, none on o_proj) and GLM-4 MoE's experts in every layer (DeepSeek-V3's router,
        // shared experts; sigmoid_router 8).
        "SolarOpen", "SolarOpenForCausalLM", "solar_open",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        VT_LLAMA_LAYER_TENSORS, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_QKV_OUT_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/128, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/1000000.0, /*max positions=*/131072,
        "mlp.gate.weight", "mlp.experts.", {"gate_proj.weight", "up_proj.weight", "down_proj.weight"},
        "mlp.shared_experts.", /*shared gate=*/nullptr, /*config norm_topk_prob=*/true, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/8, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/"mlp.gate.e_score_correction_bias", /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // dots1 (rednote-hilab/dots.llm1): Qwen3's attention (per-head q/k RMSNorms, biases on
        // q/k/v/o when attention_bias), sliding layers by layer_types or max_window_layers, dense
        // layers first, then experts with DeepSeek-V3's router and shared experts (sigmoid_router).
        "Dots1", "Dots1ForCausalLM", "dots1",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        VT_LLAMA_LAYER_TENSORS, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/true,
        /*fused qkv, gate_up=*/false, false, ModelFamily::WINDOW_TYPES_OR_FROM, /*default window=*/4096, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-6, /*eps with config=*/1e-6,
        /*rope_theta=*/10000.0, /*max positions=*/2048,
        "mlp.gate.weight", "mlp.experts.", {"gate_proj.weight", "up_proj.weight", "down_proj.weight"},
        "mlp.shared_experts.", /*shared gate=*/nullptr, /*config norm_topk_prob=*/true, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/2, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/"mlp.gate.e_score_correction_bias", /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // DeepSeek-V3 / R1 (and Kimi K2, Moonlight: the same layout): multi-head latent attention
        // (mla), dense layers first, then DeepSeek-V3's sigmoid router with shared experts.
        "DeepseekV3", "DeepseekV3ForCausalLM", "deepseek_v3",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", nullptr, nullptr, "self_attn.o_proj.weight", "mlp.gate_proj.weight",
         "mlp.up_proj.weight", "mlp.down_proj.weight", "input_layernorm.weight", "post_attention_layernorm.weight",
         nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
         nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, "self_attn.q_a_proj.weight",
         "self_attn.q_a_layernorm.weight", "self_attn.q_b_proj.weight", "self_attn.kv_a_proj_with_mqa.weight",
         "self_attn.kv_a_layernorm.weight", "self_attn.kv_b_proj.weight"}, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::NO_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-6, /*eps with config=*/1e-6,
        /*rope_theta=*/10000.0, /*max positions=*/4096,
        "mlp.gate.weight", "mlp.experts.", {"gate_proj.weight", "up_proj.weight", "down_proj.weight"},
        "mlp.shared_experts.", /*shared gate=*/nullptr, /*config norm_topk_prob=*/true, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/3, /*qk norm field=*/false, /*mla=*/3, /*choice bias=*/"mlp.gate.e_score_correction_bias", /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // MiniCPM3 (openbmb/MiniCPM3-4B): DeepSeek-V2's latent attention with rotate-half RoPE
        // (mla 5), Llama's MLP in every layer, embeddings times scale_emb, each residual branch
        // times scale_depth / sqrt(layers), the final norm's output divided by hidden / dim_model_base.
        "MiniCPM3", "MiniCPM3ForCausalLM", "minicpm3",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", nullptr, nullptr, "self_attn.o_proj.weight", "mlp.gate_proj.weight",
         "mlp.up_proj.weight", "mlp.down_proj.weight", "input_layernorm.weight", "post_attention_layernorm.weight",
         nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
         nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, "self_attn.q_a_proj.weight",
         "self_attn.q_a_layernorm.weight", "self_attn.q_b_proj.weight", "self_attn.kv_a_proj_with_mqa.weight",
         "self_attn.kv_a_layernorm.weight", "self_attn.kv_b_proj.weight"}, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::NO_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/10000.0, /*max positions=*/32768,
        nullptr, nullptr, {nullptr, nullptr, nullptr},
        nullptr, /*shared gate=*/nullptr, /*config norm_topk_prob=*/false, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/5, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/true, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // Youtu-LLM (tencent/Youtu-LLM-2B): DeepSeek-V3's latent attention (mla 3: its defaults,
        // pairs-interleaved RoPE unless rope_interleave is false, YaRN's mscale_all_dim in the
        // softmax scale) in Llama's pre-norm block with Qwen3's SwiGLU MLP in every layer, no router.
        "Youtu", "YoutuForCausalLM", "youtu",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", nullptr, nullptr, "self_attn.o_proj.weight", "mlp.gate_proj.weight",
         "mlp.up_proj.weight", "mlp.down_proj.weight", "input_layernorm.weight", "post_attention_layernorm.weight",
         nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
         nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, "self_attn.q_a_proj.weight",
         "self_attn.q_a_layernorm.weight", "self_attn.q_b_proj.weight", "self_attn.kv_a_proj_with_mqa.weight",
         "self_attn.kv_a_layernorm.weight", "self_attn.kv_b_proj.weight"}, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::NO_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-6, /*eps with config=*/1e-6,
        /*rope_theta=*/10000.0, /*max positions=*/131072,
        nullptr, nullptr, {nullptr, nullptr, nullptr},
        nullptr, /*shared gate=*/nullptr, /*config norm_topk_prob=*/false, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/3, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // Mistral 4 (mistralai/Mistral-Small-4 / Mistral-Large-3 layout as Mistral4ForCausalLM):
        // DeepSeek-V3's latent attention with Ministral 3's query scale, a softmax router choosing
        // within the topk_group groups whose best two scores sum highest, shared experts; the
        // routed experts stacked as transformers saves this model (gate_up_proj [E, 2·I, H], gate
        // rows first; down_proj [E, H, I]).
        "Mistral4", "Mistral4ForCausalLM", "mistral4",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", nullptr, nullptr, "self_attn.o_proj.weight", "mlp.gate_proj.weight",
         "mlp.up_proj.weight", "mlp.down_proj.weight", "input_layernorm.weight", "post_attention_layernorm.weight",
         nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
         nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, "self_attn.q_a_proj.weight",
         "self_attn.q_a_layernorm.weight", "self_attn.q_b_proj.weight", "self_attn.kv_a_proj_with_mqa.weight",
         "self_attn.kv_a_layernorm.weight", "self_attn.kv_b_proj.weight"}, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::NO_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-6, /*eps with config=*/1e-6,
        /*rope_theta=*/10000.0, /*max positions=*/1048576,
        "mlp.gate.weight", /*expert prefix=*/nullptr, {"mlp.experts.gate_up_proj", nullptr, "mlp.experts.down_proj"},
        "mlp.shared_experts.", /*shared gate=*/nullptr, /*config norm_topk_prob=*/true, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/true, /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/true, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/4, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/true, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // GLM-4 MoE lite (zai-org/GLM-4.7-Flash): DeepSeek-V3's latent attention with GLM-4 MoE's
        // router and shared experts, dense layers by mlp_layer_types (default: the first).
        "Glm4MoeLite", "Glm4MoeLiteForCausalLM", "glm4_moe_lite",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", nullptr, nullptr, "self_attn.o_proj.weight", "mlp.gate_proj.weight",
         "mlp.up_proj.weight", "mlp.down_proj.weight", "input_layernorm.weight", "post_attention_layernorm.weight",
         nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
         nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, "self_attn.q_a_proj.weight",
         "self_attn.q_a_layernorm.weight", "self_attn.q_b_proj.weight", "self_attn.kv_a_proj_with_mqa.weight",
         "self_attn.kv_a_layernorm.weight", "self_attn.kv_b_proj.weight"}, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::NO_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/10000.0, /*max positions=*/202752,
        "mlp.gate.weight", "mlp.experts.", {"gate_proj.weight", "up_proj.weight", "down_proj.weight"},
        "mlp.shared_experts.", /*shared gate=*/nullptr, /*config norm_topk_prob=*/true, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/6, /*qk norm field=*/false, /*mla=*/3, /*choice bias=*/"mlp.gate.e_score_correction_bias", /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // DeepSeek-V2 / V2-Lite / V2.5, DeepSeek-Coder-V2: multi-head latent attention (mla), dense
        // layers first, then routed experts with V2's softmax router (topk_method) and shared experts.
        "DeepseekV2", "DeepseekV2ForCausalLM", "deepseek_v2",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", nullptr, nullptr, "self_attn.o_proj.weight", "mlp.gate_proj.weight",
         "mlp.up_proj.weight", "mlp.down_proj.weight", "input_layernorm.weight", "post_attention_layernorm.weight",
         nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
         nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, "self_attn.q_a_proj.weight",
         "self_attn.q_a_layernorm.weight", "self_attn.q_b_proj.weight", "self_attn.kv_a_proj_with_mqa.weight",
         "self_attn.kv_a_layernorm.weight", "self_attn.kv_b_proj.weight"}, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::NO_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-6, /*eps with config=*/1e-6,
        /*rope_theta=*/10000.0, /*max positions=*/2048,
        "mlp.gate.weight", "mlp.experts.", {"gate_proj.weight", "up_proj.weight", "down_proj.weight"},
        "mlp.shared_experts.", /*shared gate=*/nullptr, /*config norm_topk_prob=*/true, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/2, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // MiniMax-M2 / M2.1: Llama's block with q and k RMSNormed over the whole projection (OLMo 2's
        // q/k norms), partial rotary embeddings (rotary_dim), and experts in every layer named as
        // Mixtral's (block_sparse_moe, w1 / w3 / w2, intermediate_size wide) with a sigmoid router
        // whose correction bias sits on the block (the top weights always renormalized).
        "MiniMaxM2", "MiniMaxM2ForCausalLM", "minimax_m2",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        VT_LLAMA_LAYER_TENSORS, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::NO_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/true,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/128, /*head_dim=*/128, /*eps without config=*/1e-6, /*eps with config=*/1e-6,
        /*rope_theta=*/5000000.0, /*max positions=*/196608,
        "block_sparse_moe.gate.weight", "block_sparse_moe.experts.", {"w1.weight", "w3.weight", "w2.weight"},
        /*shared expert=*/nullptr, nullptr, /*config norm_topk_prob=*/false, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/true, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/4, /*qk norm field=*/false, /*mla=*/0,
        /*choice bias=*/"block_sparse_moe.e_score_correction_bias", /*rotary dim or factor=*/true, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // Helium (kyutai/helium-1-2b): Llama's block with RoPE over pairs (2i, 2i + 1), q/k/v
        // biases when attention_bias (its o_proj has none), MLP biases when mlp_bias.
        "Helium", "HeliumForCausalLM", "helium",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        VT_LLAMA_LAYER_TENSORS, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::INTERLEAVED, ModelFamily::CONFIG_QKV_OUT_BIAS,
        /*config_mlp_bias=*/true, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, /*window pattern=*/0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/128, /*head_dim=*/128, /*eps without config=*/1e-8, /*eps with config=*/1e-8,
        /*rope_theta=*/100000.0, /*max positions=*/4096,
        VT_NO_MOE, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false,
        /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false,
        /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // ERNIE 4.5 dense (baidu/ERNIE-4.5-0.3B): Llama's block with RoPE over pairs (2i, 2i + 1),
        // biases on every linear when use_bias (default false), tied embeddings by default.
        "Ernie4_5", "Ernie4_5ForCausalLM", "ernie4_5",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        VT_LLAMA_LAYER_TENSORS, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::INTERLEAVED, ModelFamily::CONFIG_USE_BIAS_OFF,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, /*window pattern=*/0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/128, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/500000.0, /*max positions=*/131072,
        VT_NO_MOE, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false,
        /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false,
        /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // ERNIE 4.5 MoE (baidu/ERNIE-4.5-21B-A3B, 300B-A47B): ERNIE 4.5's attention and, in the
        // layers moe_layer_start_index .. end_index every moe_layer_interval, routed experts chosen
        // by softmax probability + a correction bias (moe_statics) and shared experts.
        "Ernie4_5_MoE", "Ernie4_5_MoeForCausalLM", "ernie4_5_moe",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        VT_LLAMA_LAYER_TENSORS, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::INTERLEAVED, ModelFamily::CONFIG_USE_BIAS_OFF,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, /*window pattern=*/0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/500000.0, /*max positions=*/131072,
        "mlp.gate.weight", "mlp.experts.", {"gate_proj.weight", "up_proj.weight", "down_proj.weight"},
        "mlp.shared_experts.", /*shared gate=*/nullptr, /*config norm_topk_prob=*/false, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false,
        /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false,
        /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/"mlp.moe_statics.e_score_correction_bias", /*rotary dim or factor=*/false,
        /*moe layer range=*/true, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // Seed-OSS (ByteDance-Seed/Seed-OSS-36B): Llama's block, q/k/v biases when attention_bias
        // (default true), o's when attention_out_bias, MLP biases when mlp_bias.
        "SeedOss", "SeedOssForCausalLM", "seed_oss",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        VT_LLAMA_LAYER_TENSORS, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_QKV_OUT_BIAS,
        /*config_mlp_bias=*/true, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, /*window pattern=*/0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/128, /*head_dim=*/128, /*eps without config=*/1e-6, /*eps with config=*/1e-6,
        /*rope_theta=*/10000.0, /*max positions=*/524288,
        VT_NO_MOE, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false,
        /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false,
        /*bias by default=*/true, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/true, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // GLM (THUDM/glm-4-9b-chat-hf): Llama's block with a fused gate_up_proj (gate rows, then
        // up), q/k/v biases (attention_bias, default true), RoPE over pairs (2i, 2i + 1) of the
        // first half of each head (partial_rotary_factor 0.5).
        "Glm", "GlmForCausalLM", "glm",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
         "self_attn.o_proj.weight", "mlp.gate_up_proj.weight", nullptr, "mlp.down_proj.weight",
         "input_layernorm.weight", "post_attention_layernorm.weight", "self_attn.q_proj.bias",
         "self_attn.k_proj.bias", "self_attn.v_proj.bias", nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
         nullptr, nullptr}, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::INTERLEAVED, ModelFamily::CONFIG_QKV_OUT_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, true, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, /*window pattern=*/0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/128, /*head_dim=*/128, /*eps without config=*/1.5625e-7, /*eps with config=*/1.5625e-7,
        /*rope_theta=*/10000.0, /*max positions=*/131072,
        VT_NO_MOE, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false,
        /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.5, /*nope global=*/false,
        /*bias by default=*/true, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // GLM-4 (THUDM/GLM-4-9B-0414, GLM-Z1): GLM's block plus the attention and MLP outputs
        // RMSNormed before their residual adds (post_self_attn_layernorm, post_mlp_layernorm).
        "Glm4", "Glm4ForCausalLM", "glm4",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
         "self_attn.o_proj.weight", "mlp.gate_up_proj.weight", nullptr, "mlp.down_proj.weight",
         "input_layernorm.weight", "post_attention_layernorm.weight", "self_attn.q_proj.bias",
         "self_attn.k_proj.bias", "self_attn.v_proj.bias", nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
         "post_self_attn_layernorm.weight", "post_mlp_layernorm.weight"}, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::INTERLEAVED, ModelFamily::CONFIG_QKV_OUT_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, true, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, /*window pattern=*/0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/128, /*head_dim=*/128, /*eps without config=*/1.5625e-7, /*eps with config=*/1.5625e-7,
        /*rope_theta=*/10000.0, /*max positions=*/131072,
        VT_NO_MOE, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false,
        /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.5, /*nope global=*/false,
        /*bias by default=*/true, /*sandwich norms=*/true, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // OLMo 3 (allenai/Olmo-3-7B): OLMo 2's block with sliding layers by layer_types (default:
        // every 4th layer global), the sliding layers rotating with rope_parameters.sliding_attention
        // (no scaling) and the global ones with full_attention's (YaRN in the long-context models).
        "OLMo3", "Olmo3ForCausalLM", "olmo3",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
         "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
         nullptr, nullptr, "self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias",
         "self_attn.o_proj.bias", nullptr, nullptr, nullptr, "self_attn.q_norm.weight", "self_attn.k_norm.weight",
         "post_attention_layernorm.weight", "post_feedforward_layernorm.weight"}, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/true,
        /*fused qkv, gate_up=*/false, false, ModelFamily::WINDOW_ALTERNATE, /*default window=*/4096, /*gemma=*/ModelFamily::NOT_GEMMA, /*window pattern=*/4, 0.0, 0.0, /*local rope=*/true,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/500000.0, /*max positions=*/2048,
        VT_NO_MOE, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/true, /*fused experts=*/false,
        /*qk norm full=*/true, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false,
        /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // Ministral (mistralai/Ministral-8B-Instruct-2410 as model_type ministral): Mistral's block,
        // sliding layers by layer_types, else every layer when sliding_window is not null.
        "Ministral", "MinistralForCausalLM", "ministral",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        VT_LLAMA_LAYER_TENSORS, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::NO_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::WINDOW_TYPES_OR_ALL, /*default window=*/4096, /*gemma=*/ModelFamily::NOT_GEMMA, /*window pattern=*/0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-6, /*eps with config=*/1e-6,
        /*rope_theta=*/10000.0, /*max positions=*/4096 * 32,
        VT_NO_MOE, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false,
        /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false,
        /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // CWM (facebook/cwm, Code World Model): Llama's block without attention biases (MLP biases
        // when mlp_bias), sliding layers by layer_types, else all but every 4th from the first.
        "Cwm", "CwmForCausalLM", "cwm",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        VT_LLAMA_LAYER_TENSORS, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::NO_BIAS,
        /*config_mlp_bias=*/true, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::WINDOW_TYPES_OR_FIRST, /*default window=*/8192, /*gemma=*/ModelFamily::NOT_GEMMA, /*window pattern=*/4, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/128, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/1000000.0, /*max positions=*/131072,
        VT_NO_MOE, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false,
        /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false,
        /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/true, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // Ministral 3 (mistralai/Ministral-3-3B / 8B / 14B's text model as Ministral3ForCausalLM):
        // Mistral's block (every layer sliding when sliding_window is set; none by default), YaRN,
        // and each query times 1 + llama_4_scaling_beta · log(1 + floor(pos / original_max)).
        "Ministral3", "Ministral3ForCausalLM", "ministral3",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        VT_LLAMA_LAYER_TENSORS, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::NO_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::WINDOW_ALL_LAYERS, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, /*window pattern=*/0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/128, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/1000000.0, /*max positions=*/262144,
        VT_NO_MOE, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false,
        /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false,
        /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/true, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/true, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // Cohere (CohereForAI/c4ai-command-r-v01, Aya 23): a bias-free LayerNorm before a parallel
        // block, RoPE over pairs (2i, 2i + 1), q/k/v/o biases when attention_bias, logits times
        // logit_scale, tied embeddings by default.
        "Cohere", "CohereForCausalLM", "cohere",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
         "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
         "input_layernorm.weight", nullptr, "self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias",
         "self_attn.o_proj.bias", nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr},
        "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::LAYER_NORM, ModelFamily::INTERLEAVED, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, /*window pattern=*/0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/10000.0, /*max positions=*/8192,
        VT_NO_MOE, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false,
        /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false,
        /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/true, /*norm without bias=*/true,
        /*logit scale=*/true, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // Cohere 2 (Command R7B, Command A): Cohere's block with sliding layers by layer_types
        // (default: every 4th layer global) and RoPE on the sliding layers only.
        "Cohere2", "Cohere2ForCausalLM", "cohere2",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
         "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
         "input_layernorm.weight", nullptr, "self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias",
         "self_attn.o_proj.bias", nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr},
        "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::LAYER_NORM, ModelFamily::INTERLEAVED, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::WINDOW_ALTERNATE, /*default window=*/4096, /*gemma=*/ModelFamily::NOT_GEMMA, /*window pattern=*/4, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/10000.0, /*max positions=*/8192,
        VT_NO_MOE, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false,
        /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false,
        /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/true, /*norm without bias=*/true,
        /*logit scale=*/true, /*rope sliding only=*/true, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // Arcee (arcee-ai/AFM-4.5B): Llama's block with an ungated MLP, down(relu(up · x)²)
        // (NemotronMLP; up_proj as the one input linear), MLP biases when mlp_bias.
        "Arcee", "ArceeForCausalLM", "arcee",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
         "self_attn.o_proj.weight", "mlp.up_proj.weight", nullptr, "mlp.down_proj.weight",
         "input_layernorm.weight", "post_attention_layernorm.weight", "self_attn.q_proj.bias",
         "self_attn.k_proj.bias", "self_attn.v_proj.bias", "self_attn.o_proj.bias", "mlp.up_proj.bias", nullptr,
         "mlp.down_proj.bias", nullptr, nullptr, nullptr, nullptr},
        "self_attn.rotary_emb.inv_freq",
        "relu2", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/true, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/10000.0, /*max positions=*/4096,
        VT_NO_MOE, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false,
        /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false,
        /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false,
        /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // NanoChat (karpathy/nanochat-d20 / d32): Llama's pre-norm block whose RMSNorms have no
        // weights (the embeddings RMSNormed too, before the first block), RoPE turning each pair
        // by -θ (its rotate_half is transformers' negated), per-head q/k RMSNorms after RoPE, an
        // ungated MLP fc2(relu(fc1 · x)²), q/k/v/o biases when attention_bias, and the logits
        // soft-capped (final_logit_softcapping, 15 when left out) as Gemma 2's.
        "NanoChat", "NanoChatForCausalLM", "nanochat",
        "model.embed_tokens.weight", nullptr, "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
         "self_attn.o_proj.weight", "mlp.fc1.weight", nullptr, "mlp.fc2.weight", nullptr, nullptr,
         "self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias", "self_attn.o_proj.bias"},
        "self_attn.rotary_emb.inv_freq",
        "relu2", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF_NEGATED, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/true,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, /*final softcap=*/15.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-6, /*eps with config=*/1e-6,
        /*rope_theta=*/10000.0, /*max positions=*/2048,
        VT_NO_MOE, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false,
        /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false,
        /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false,
        /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/true, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/"", /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // Apertus (swiss-ai/Apertus-8B / 70B): Llama's attention with per-head q/k RMSNorms
        // before RoPE, norms named attention_layernorm / feedforward_layernorm, and an ungated
        // MLP down(xielu(up · x)) whose xIELU has learned per-layer parameters (mlp.act_fn.*).
        "Apertus", "ApertusForCausalLM", "apertus",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
         "self_attn.o_proj.weight", "mlp.up_proj.weight", nullptr, "mlp.down_proj.weight",
         "attention_layernorm.weight", "feedforward_layernorm.weight", "self_attn.q_proj.bias",
         "self_attn.k_proj.bias", "self_attn.v_proj.bias", "self_attn.o_proj.bias", nullptr, nullptr, nullptr,
         "self_attn.q_norm.weight", "self_attn.k_norm.weight", nullptr, nullptr, nullptr, nullptr, nullptr,
         "mlp.act_fn.alpha_p", "mlp.act_fn.alpha_n", "mlp.act_fn.beta", "mlp.act_fn.eps"},
        "self_attn.rotary_emb.inv_freq",
        "xielu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/true,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/12000000.0, /*max positions=*/65536,
        VT_NO_MOE, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false,
        /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false,
        /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false,
        /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/true, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // Nemotron (nvidia/Minitron-4B / 8B, Nemotron-Mini-4B): Llama's sequential block with
        // LayerNorm1P (weight used as 1 + w, with bias; norm_eps), an ungated relu² MLP (up_proj,
        // down_proj), RoPE on the first partial_rotary_factor (default 0.5) of each head, q/k/v/o
        // biases when attention_bias, MLP biases when mlp_bias.
        "Nemotron", "NemotronForCausalLM", "nemotron",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
         "self_attn.o_proj.weight", "mlp.up_proj.weight", nullptr, "mlp.down_proj.weight",
         "input_layernorm.weight", "post_attention_layernorm.weight", "self_attn.q_proj.bias",
         "self_attn.k_proj.bias", "self_attn.v_proj.bias", "self_attn.o_proj.bias", "mlp.up_proj.bias", nullptr,
         "mlp.down_proj.bias", nullptr, nullptr, nullptr, nullptr, nullptr, "input_layernorm.bias",
         "post_attention_layernorm.bias"},
        "self_attn.rotary_emb.inv_freq",
        "relu2", ModelFamily::LAYER_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/true, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/10000.0, /*max positions=*/4096,
        VT_NO_MOE, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false,
        /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.5, /*nope global=*/false,
        /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false,
        /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/true, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // Jais2 (inceptionai/Jais-2-8B): Llama's attention (q/k/v/o biases when attention_bias) and
        // sequential block with LayerNorms (with biases; layer_norm_eps), Nemotron's ungated MLP
        // (up_proj, down_proj; relu²) with biases when mlp_bias; both bias fields true when left
        // out (Jais2Config's defaults).
        "Jais2", "Jais2ForCausalLM", "jais2",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
         "self_attn.o_proj.weight", "mlp.up_proj.weight", nullptr, "mlp.down_proj.weight",
         "input_layernorm.weight", "post_attention_layernorm.weight", "self_attn.q_proj.bias",
         "self_attn.k_proj.bias", "self_attn.v_proj.bias", "self_attn.o_proj.bias", "mlp.up_proj.bias", nullptr,
         "mlp.down_proj.bias", nullptr, nullptr, nullptr, nullptr, nullptr, "input_layernorm.bias",
         "post_attention_layernorm.bias"},
        "self_attn.rotary_emb.inv_freq",
        "relu2", ModelFamily::LAYER_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/true, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/10000.0, /*max positions=*/8192,
        VT_NO_MOE, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false,
        /*bias by default=*/true, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/true, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // HunYuan dense (tencent/Hunyuan-0.5B..7B-Instruct): Llama's block with per-head q/k
        // RMSNorms applied after RoPE (query_layernorm, key_layernorm), q/k/v/o biases when
        // attention_bias, and RoPE "dynamic" with an alpha read as a fixed NTK base.
        "HunYuanDenseV1", "HunYuanDenseV1ForCausalLM", "hunyuan_v1_dense",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
         "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
         "input_layernorm.weight", "post_attention_layernorm.weight", "self_attn.q_proj.bias",
         "self_attn.k_proj.bias", "self_attn.v_proj.bias", "self_attn.o_proj.bias", nullptr, nullptr, nullptr,
         "self_attn.query_layernorm.weight", "self_attn.key_layernorm.weight", nullptr, nullptr},
        "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/true,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/10000.0, /*max positions=*/2048,
        VT_NO_MOE, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false,
        /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false,
        /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false,
        /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/true,
        /*ntk alpha=*/true, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // HunYuan MoE (tencent/Hunyuan-A13B): HunYuan dense's attention (per-head q/k RMSNorms after
        // RoPE, q/k/v/o biases when attention_bias, RoPE "dynamic" with a fixed NTK alpha) and
        // experts in every layer: Mixtral's softmax router (mlp.gate.wg, its top moe_topk
        // probabilities renormalized) plus one shared MLP (mlp.shared_mlp) added ungated, all
        // intermediate_size wide; config.json's MoE fields may be per-layer lists.
        "HunYuanMoEV1", "HunYuanMoEV1ForCausalLM", "hunyuan_v1_moe",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
         "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
         "input_layernorm.weight", "post_attention_layernorm.weight", "self_attn.q_proj.bias",
         "self_attn.k_proj.bias", "self_attn.v_proj.bias", "self_attn.o_proj.bias", nullptr, nullptr, nullptr,
         "self_attn.query_layernorm.weight", "self_attn.key_layernorm.weight", nullptr, nullptr},
        "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/true,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/10000.0, /*max positions=*/2048,
        "mlp.gate.wg.weight", "mlp.experts.", {"gate_proj.weight", "up_proj.weight", "down_proj.weight"},
        "mlp.shared_mlp.", /*shared gate=*/nullptr, /*config norm_topk_prob=*/false, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false,
        /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false,
        /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false,
        /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/true,
        /*ntk alpha=*/true, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false,
        /*short conv=*/false, /*moe per layer fields=*/true, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // VaultGemma (google/vaultgemma-1b): Gemma 2's block without its post-attention and
        // post-feedforward norms ((1 + w) norms, scaled embeddings, GeGLU, query_pre_attn_scalar,
        // soft-caps, alternating sliding layers).
        "VaultGemma", "VaultGemmaForCausalLM", "vaultgemma",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
         "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
         "input_layernorm.weight", "pre_feedforward_layernorm.weight", nullptr, nullptr, nullptr, nullptr, nullptr,
         nullptr, nullptr, nullptr, nullptr, nullptr, nullptr},
        "self_attn.rotary_emb.inv_freq",
        "gelu_pytorch_tanh", ModelFamily::RMS_NORM_PLUS_ONE, ModelFamily::ROTATE_HALF, ModelFamily::NO_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::WINDOW_ALTERNATE, /*default window=*/4096, /*gemma=*/ModelFamily::GEMMA2, /*window pattern=*/2, /*softcaps=*/50.0, 30.0, /*local rope=*/false,
        /*config head_dim=*/256, /*head_dim=*/256, /*eps without config=*/1e-6, /*eps with config=*/1e-6,
        /*rope_theta=*/10000.0, /*max positions=*/8192,
        VT_DENSE,
    },
    {
        // LFM2 (LiquidAI/LFM2-350M / 700M / 1.2B / 2.6B): pre-norm blocks (operator_norm,
        // ffn_norm) whose mixer is either Qwen3's attention (per-head q/k RMSNorms before RoPE,
        // out_proj) or a gated short convolution (short_conv), and a SwiGLU MLP (w1 gate, w3 up,
        // w2 down); the final norm is model.embedding_norm.
        "Lfm2", "Lfm2ForCausalLM", "lfm2",
        "model.embed_tokens.weight", "model.embedding_norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
         "self_attn.out_proj.weight", "feed_forward.w1.weight", "feed_forward.w3.weight", "feed_forward.w2.weight",
         "operator_norm.weight", "ffn_norm.weight", nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
         "self_attn.q_layernorm.weight", "self_attn.k_layernorm.weight", nullptr, nullptr, nullptr, nullptr, nullptr,
         nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
         "conv.in_proj.weight", "conv.conv.weight", "conv.out_proj.weight", "conv.in_proj.bias", "conv.conv.bias",
         "conv.out_proj.bias"},
        nullptr,
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::NO_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/true,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/80, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/1000000.0, /*max positions=*/128000,
        VT_DENSE_BEFORE_CONV, /*short conv=*/1, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // LFM2-MoE (LiquidAI/LFM2-8B-A1B): LFM2's blocks with experts after the first
        // num_dense_layers: a sigmoid router (feed_forward.gate) choosing on score +
        // feed_forward.expert_bias (use_expert_bias), the top weights renormalized (the sum +
        // 1e-6) and scaled; experts feed_forward.experts.N.w1 / w3 / w2, moe_intermediate_size wide.
        "Lfm2Moe", "Lfm2MoeForCausalLM", "lfm2_moe",
        "model.embed_tokens.weight", "model.embedding_norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
         "self_attn.out_proj.weight", "feed_forward.w1.weight", "feed_forward.w3.weight", "feed_forward.w2.weight",
         "operator_norm.weight", "ffn_norm.weight", nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
         "self_attn.q_layernorm.weight", "self_attn.k_layernorm.weight", nullptr, nullptr, nullptr, nullptr, nullptr,
         nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
         "conv.in_proj.weight", "conv.conv.weight", "conv.out_proj.weight", "conv.in_proj.bias", "conv.conv.bias",
         "conv.out_proj.bias"},
        nullptr,
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::NO_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/true,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/64, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/1000000.0, /*max positions=*/128000,
        "feed_forward.gate.weight", "feed_forward.experts.", {"w1.weight", "w3.weight", "w2.weight"},
        /*shared prefix=*/nullptr, /*shared gate=*/nullptr, /*config norm_topk_prob=*/true, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false,
        /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false,
        /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/7, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/"feed_forward.expert_bias", /*rotary dim or factor=*/false, /*moe layer range=*/false,
        /*short conv=*/2, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // LFM3 (LiquidAI/LFM3-1.7B): LFM2's convolution layers beside Qwen3's attention (q_norm,
        // k_norm, o_proj; q/k/v/o biases when attention_bias) with each head's output times
        // sigmoid(g_proj · h) (self_attn.gate_proj in its files), full and sliding layers by layer_types with their own RoPE
        // (full: proportional by default), the sandwich norms, a SwiGLU MLP intermediate_size wide.
        "Lfm3", "Lfm3ForCausalLM", "lfm3",
        "model.embed_tokens.weight", "model.embedding_norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
         "self_attn.o_proj.weight", "feed_forward.w1.weight", "feed_forward.w3.weight", "feed_forward.w2.weight",
         "operator_norm.weight", "ffn_norm.weight", "self_attn.q_proj.bias", "self_attn.k_proj.bias",
         "self_attn.v_proj.bias", "self_attn.o_proj.bias", nullptr, nullptr, nullptr,
         "self_attn.q_norm.weight", "self_attn.k_norm.weight", "post_operator_norm.weight", "post_ffn_norm.weight",
         nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
         "conv.in_proj.weight", "conv.conv.weight", "conv.out_proj.weight", "conv.in_proj.bias", "conv.conv.bias",
         "conv.out_proj.bias", "self_attn.gate_proj.weight"},
        nullptr,
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/true,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/true,
        /*config head_dim=*/128, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/1000000.0, /*max positions=*/128000,
        VT_NO_MOE, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false,
        /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false,
        /*bias by default=*/false, /*sandwich norms=*/true, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/true, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false,
        /*short conv=*/3, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // AFMoE (arcee-ai/Trinity-Nano, Trinity-Mini): Qwen3's attention (per-head q/k RMSNorms
        // before RoPE; q/k/v/o biases when attention_bias) with each output dim times
        // sigmoid(gate_proj · h) before o_proj, sliding layers rotating and NoPE global ones (by
        // layer_types, else every global_attn_every_n_layers-th global), the sandwich norms
        // (post_attention_layernorm after the attention, pre_mlp_layernorm / post_mlp_layernorm
        // around the MLP), the first num_dense_layers dense, then a sigmoid router choosing on
        // score + mlp.expert_bias with ungated shared experts (sigmoid_router 9); mup_enabled
        // scales the embeddings.
        "Afmoe", "AfmoeForCausalLM", "afmoe",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
         "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
         "input_layernorm.weight", "pre_mlp_layernorm.weight", "self_attn.q_proj.bias", "self_attn.k_proj.bias",
         "self_attn.v_proj.bias", "self_attn.o_proj.bias", nullptr, nullptr, nullptr,
         "self_attn.q_norm.weight", "self_attn.k_norm.weight", "post_attention_layernorm.weight",
         "post_mlp_layernorm.weight",
         nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
         nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, "self_attn.gate_proj.weight"},
        "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/true,
        /*fused qkv, gate_up=*/false, false, ModelFamily::WINDOW_ALTERNATE, /*default window=*/1024, /*gemma=*/ModelFamily::NOT_GEMMA, /*window pattern=*/4, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/128, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/10000.0, /*max positions=*/16384,
        "mlp.router.gate.weight", "mlp.experts.", {"gate_proj.weight", "up_proj.weight", "down_proj.weight"},
        "mlp.shared_experts.", /*shared gate=*/nullptr, /*config norm_topk_prob=*/true, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false,
        /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/true,
        /*bias by default=*/false, /*sandwich norms=*/true, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/9, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/"mlp.expert_bias", /*rotary dim or factor=*/false, /*moe layer range=*/false,
        /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/false,
    },
    {
        // PhiMoE (microsoft/Phi-3.5-MoE-instruct; the Hub's PhiMoEForCausalLM, transformers'
        // PhimoeForCausalLM): Mixtral's block and expert names (block_sparse_moe, w1 / w3 / w2,
        // experts intermediate_size wide) with LayerNorms (weights and biases, eps rms_norm_eps),
        // q/k/v/o biases when attention_bias, lm_head's bias when lm_head_bias, the sparsemixer
        // router, LongRoPE with short_mscale / long_mscale.
        "PhiMoE", "PhimoeForCausalLM", "phimoe",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
         "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
         "input_layernorm.weight", "post_attention_layernorm.weight", "self_attn.q_proj.bias",
         "self_attn.k_proj.bias", "self_attn.v_proj.bias", "self_attn.o_proj.bias", nullptr, nullptr, nullptr, nullptr,
         nullptr, nullptr, nullptr, nullptr, "input_layernorm.bias", "post_attention_layernorm.bias"},
        "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::LAYER_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::WINDOW_ALL_LAYERS, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/1000000.0, /*max positions=*/131072,
        "block_sparse_moe.gate.weight", "block_sparse_moe.experts.", {"w1.weight", "w3.weight", "w2.weight"},
        /*shared expert=*/nullptr, nullptr, /*config norm_topk_prob=*/false, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false,
        /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false, /*sparsemixer=*/true,
    },
    {
        // Sarvam-MoE (sarvamai/sarvam-30b): GLM-4 MoE's block as transformers runs it
        // (Glm4MoeForCausalLM, SarvamMoEConfig's defaults: every dim rotates, q/k norms unless
        // use_qk_norm is false, head_dim 64, routed_scaling_factor 2.5) under the Hub's names, which
        // transformers' save_pretrained writes back: word_embeddings, attention.query_key_value (q|k|v
        // rows, with its bias when use_qkv_bias / attention_bias), attention.dense, query_layernorm /
        // key_layernorm, the router's mlp.gate.expert_bias (sigmoid_router 10).
        "SarvamMoE", "SarvamMoEForCausalLM", "sarvam_moe",
        "model.word_embeddings.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"attention.query_key_value.weight", nullptr, nullptr, "attention.dense.weight", "mlp.gate_proj.weight",
         "mlp.up_proj.weight", "mlp.down_proj.weight", "input_layernorm.weight", "post_attention_layernorm.weight",
         "attention.query_key_value.bias", nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
         "attention.query_layernorm.weight", "attention.key_layernorm.weight", nullptr, nullptr},
        nullptr,
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_QKV_OUT_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/true, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/64, /*head_dim=*/64, /*eps without config=*/1e-6, /*eps with config=*/1e-6,
        /*rope_theta=*/8000000.0, /*max positions=*/131072,
        "mlp.gate.weight", "mlp.experts.", {"gate_proj.weight", "up_proj.weight", "down_proj.weight"},
        "mlp.shared_experts.", /*shared gate=*/nullptr, /*config norm_topk_prob=*/true, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false,
        /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/1.0, /*nope global=*/false,
        /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/10, /*qk norm field=*/true, /*mla=*/0, /*choice bias=*/"mlp.gate.expert_bias", /*rotary dim or factor=*/false, /*moe layer range=*/false,
        /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false,
    },
    {
        // Sarvam-MoE under transformers' own names, as save_pretrained(save_original_format=False)
        // writes them (alternate_layout of the row above: chosen when its files hold these): GLM-4
        // MoE's q_proj / k_proj / v_proj, o_proj, q_norm / k_norm, the router's
        // e_score_correction_bias, the experts stacked (gate_up_proj [E, 2·I, H], gate rows first;
        // down_proj [E, H, I]).
        "SarvamMoE", "SarvamMoEForCausalLM", "sarvam_moe",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        VT_LLAMA_LAYER_TENSORS, nullptr,
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_QKV_OUT_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/64, /*head_dim=*/64, /*eps without config=*/1e-6, /*eps with config=*/1e-6,
        /*rope_theta=*/8000000.0, /*max positions=*/131072,
        "mlp.gate.weight", /*expert prefix=*/nullptr, {"mlp.experts.gate_up_proj", nullptr, "mlp.experts.down_proj"},
        "mlp.shared_experts.", /*shared gate=*/nullptr, /*config norm_topk_prob=*/true, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/true,
        /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/1.0, /*nope global=*/false,
        /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/10, /*qk norm field=*/true, /*mla=*/0, /*choice bias=*/"mlp.gate.e_score_correction_bias", /*rotary dim or factor=*/false, /*moe layer range=*/false,
        /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false,
    },
    {
        // Sarvam-MLA (sarvamai/sarvam-105b): DeepSeek-V3 as transformers runs it (DeepseekV3ForCausalLM)
        // with SarvamMLAConfig's defaults (q_proj without a LoRA, no expert groups, one dense layer,
        // pairs-interleaved RoPE unless rope_interleave is false; sigmoid_router 11) and its released
        // config.json's legacy keys (head_dim, q_head_dim: derived, not read; rope_scaling type
        // deepseek_yarn: yarn).
        "SarvamMLA", "SarvamMLAForCausalLM", "sarvam_mla",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", nullptr, nullptr, "self_attn.o_proj.weight", "mlp.gate_proj.weight",
         "mlp.up_proj.weight", "mlp.down_proj.weight", "input_layernorm.weight", "post_attention_layernorm.weight",
         nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
         nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, "self_attn.q_a_proj.weight",
         "self_attn.q_a_layernorm.weight", "self_attn.q_b_proj.weight", "self_attn.kv_a_proj_with_mqa.weight",
         "self_attn.kv_a_layernorm.weight", "self_attn.kv_b_proj.weight"}, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::NO_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-6, /*eps with config=*/1e-6,
        /*rope_theta=*/10000.0, /*max positions=*/4096,
        "mlp.gate.weight", "mlp.experts.", {"gate_proj.weight", "up_proj.weight", "down_proj.weight"},
        "mlp.shared_experts.", /*shared gate=*/nullptr, /*config norm_topk_prob=*/true, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/11, /*qk norm field=*/false, /*mla=*/3, /*choice bias=*/"mlp.gate.e_score_correction_bias", /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false,
    },
    {
        // Kolibri 1 (Aleph-Alpha/Kolibri-1): EXAONE 4's attention (per-head q/k RMSNorms before RoPE,
        // no biases; sliding layers by layer_types, default every 5th global; with a window the
        // global layers attend without RoPE), GLM-4's sandwich norms (post_attn_norm after the
        // attention, post_attention_layernorm / post_ffn_norm around the MLP, as its files name
        // them), experts in every layer chosen on the router's logit + moe.router.expert_bias,
        // a shared expert beside them (sigmoid_router 12).
        "Kolibri1", "Kolibri1ForCausalLM", "kolibri1",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
         "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
         "input_layernorm.weight", "post_attention_layernorm.weight", nullptr, nullptr, nullptr, nullptr, nullptr,
         nullptr, nullptr, "self_attn.q_norm.weight", "self_attn.k_norm.weight", "post_attn_norm.weight",
         "post_ffn_norm.weight"},
        "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::NO_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/true,
        /*fused qkv, gate_up=*/false, false, ModelFamily::WINDOW_ALTERNATE, /*default window=*/513, /*gemma=*/ModelFamily::NOT_GEMMA, /*window pattern=*/5, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/128, /*head_dim=*/128, /*eps without config=*/1e-6, /*eps with config=*/1e-6,
        /*rope_theta=*/10000.0, /*max positions=*/262144,
        "mlp.gate.weight", "mlp.experts.", {"gate_proj.weight", "up_proj.weight", "down_proj.weight"},
        "mlp.shared_experts.", /*shared gate=*/nullptr, /*config norm_topk_prob=*/true, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false,
        /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/true,
        /*bias by default=*/false, /*sandwich norms=*/true, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/12, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/"moe.router.expert_bias", /*rotary dim or factor=*/false, /*moe layer range=*/false,
        /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false,
    },
    {
        // HY-V3 (tencent/Hy3-preview): Qwen3-MoE's attention (per-head q/k RMSNorms before RoPE;
        // q/k/v/o biases when attention_bias) in Llama's pre-norm block; dense layers by
        // mlp_layer_types (else the first), the others a sigmoid router (mlp.router.gate) choosing
        // on score + mlp.expert_bias, the chosen scores renormalized and times
        // router_scaling_factor, plus ungated shared experts (mlp.shared_mlp) — the Hub's names,
        // which save_pretrained writes (transformers renames them to mlp.gate, mlp.e_score_correction_bias
        // and mlp.shared_experts in memory). sigmoid_router 13.
        "HYV3", "HYV3ForCausalLM", "hy_v3",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        VT_LLAMA_LAYER_TENSORS, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/true,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/128, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/11158840.0, /*max positions=*/131072,
        "mlp.router.gate.weight", "mlp.experts.", {"gate_proj.weight", "up_proj.weight", "down_proj.weight"},
        "mlp.shared_mlp.", /*shared gate=*/nullptr, /*config norm_topk_prob=*/true, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false,
        /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false,
        /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/13, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/"mlp.expert_bias", /*rotary dim or factor=*/false, /*moe layer range=*/false,
        /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false,
    },
    {
        // Cohere 2 MoE (CohereLabs/command-a-plus-05-2026): Cohere 2's block (a bias-free LayerNorm
        // before a parallel block, RoPE over pairs (2i, 2i + 1) on the sliding layers only,
        // logit_scale, tied by default) with a router (mlp.gate) over experts and shared experts
        // (mlp.shared_experts) averaged in, dense layers first (cohere_moe).
        "Cohere2Moe", "Cohere2MoeForCausalLM", "cohere2_moe",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
         "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
         "input_layernorm.weight", nullptr, "self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias",
         "self_attn.o_proj.bias", nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr},
        "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::LAYER_NORM, ModelFamily::INTERLEAVED, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::WINDOW_ALTERNATE, /*default window=*/4096, /*gemma=*/ModelFamily::NOT_GEMMA, /*window pattern=*/4, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/128, /*head_dim=*/128, /*eps without config=*/1e-5, /*eps with config=*/1e-5,
        /*rope_theta=*/10000.0, /*max positions=*/8192,
        "mlp.gate.weight", "mlp.experts.", {"gate_proj.weight", "up_proj.weight", "down_proj.weight"},
        "mlp.shared_experts.", /*shared gate=*/nullptr, /*config norm_topk_prob=*/true, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false,
        /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false,
        /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/true, /*norm without bias=*/true,
        /*logit scale=*/true, /*rope sliding only=*/true, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false,
        /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false,
        /*sparsemixer=*/false, /*cohere moe=*/true,
    },
    {
        // A.X-K1 (skt/A.X-K1): DeepSeek-V3's latent attention (always with q's LoRA) and router, the
        // MoE block's output RMSNormed (post_mlp_layernorm, at the layer's level in its files as
        // save_pretrained writes it) before the residual add (sigmoid_router 14).
        "AXK1", "AXK1ForCausalLM", "axk1",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", nullptr, nullptr, "self_attn.o_proj.weight", "mlp.gate_proj.weight",
         "mlp.up_proj.weight", "mlp.down_proj.weight", "input_layernorm.weight", "post_attention_layernorm.weight",
         nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, "post_mlp_layernorm.weight",
         nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, "self_attn.q_a_proj.weight",
         "self_attn.q_a_layernorm.weight", "self_attn.q_b_proj.weight", "self_attn.kv_a_proj_with_mqa.weight",
         "self_attn.kv_a_layernorm.weight", "self_attn.kv_b_proj.weight"}, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::NO_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/false,
        /*fused qkv, gate_up=*/false, false, ModelFamily::NO_WINDOW, /*default window=*/0, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/0, /*head_dim=*/128, /*eps without config=*/1e-6, /*eps with config=*/1e-6,
        /*rope_theta=*/10000.0, /*max positions=*/32768,
        "mlp.gate.weight", "mlp.experts.", {"gate_proj.weight", "up_proj.weight", "down_proj.weight"},
        "mlp.shared_experts.", /*shared gate=*/nullptr, /*config norm_topk_prob=*/true, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/14, /*qk norm field=*/false, /*mla=*/3, /*choice bias=*/"mlp.gate.e_score_correction_bias", /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false,
    },
    {
        // Mellum (JetBrains/Mellum2-12B-A2.5B): Qwen3-MoE's attention (per-head q/k RMSNorms before
        // RoPE) and softmax router (norm_topk_prob, true when left out); sliding layers by
        // layer_types (all full when left out), rotating with rope_parameters.sliding_attention's
        // base (10000), the full ones with full_attention's (500000, and its scaling); dense MLPs
        // (intermediate_size) by mlp_layer_types (all sparse when left out). Its files hold the
        // experts one by one (conversion_mapping's qwen2_moe stacking, undone by save_pretrained);
        // the multi-token-prediction module (mtp.*) is not loaded, as transformers ignores it.
        "Mellum", "MellumForCausalLM", "mellum",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        VT_LLAMA_LAYER_TENSORS, "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/true,
        /*fused qkv, gate_up=*/false, false, ModelFamily::WINDOW_TYPES_OR_ALL, /*default window=*/1024, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/true,
        /*config head_dim=*/128, /*head_dim=*/128, /*eps without config=*/1e-6, /*eps with config=*/1e-6,
        /*rope_theta=*/500000.0, /*max positions=*/131072,
        "mlp.gate.weight", "mlp.experts.", {"gate_proj.weight", "up_proj.weight", "down_proj.weight"},
        /*shared expert=*/nullptr, nullptr, /*config norm_topk_prob=*/true, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/false, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false,
    },
    {
        // Flint (RecursiveSI/flint): Qwen3-MoE's attention (per-head q/k RMSNorms before RoPE) with
        // gpt-oss's attention sinks (self_attn.softmax_offset in its files, transformers' sinks in
        // memory), RoPE on the sliding layers only (layer_types, default: full when i < 2,
        // i % 4 == 1 or the last); dense layers by mlp_only_layers ([0, 1] when left out) and
        // decoder_sparse_step, the others a sigmoid top-k router (float32; the chosen sigmoids
        // renormalized by their plain sum when norm_topk_prob, true when left out) plus one ungated
        // shared expert shared_expert_intermediate_size (1024) wide. GptOss's RMSNorm is Llama's in
        // float32.
        "Flint", "FlintForCausalLM", "flint",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
         "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
         "input_layernorm.weight", "post_attention_layernorm.weight", "self_attn.q_proj.bias",
         "self_attn.k_proj.bias", "self_attn.v_proj.bias", "self_attn.o_proj.bias", nullptr, nullptr, nullptr,
         "self_attn.q_norm.weight", "self_attn.k_norm.weight", nullptr, nullptr, "self_attn.softmax_offset"},
        "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, ModelFamily::CONFIG_ATTENTION_BIAS,
        /*config_mlp_bias=*/false, /*qk_norm=*/true,
        /*fused qkv, gate_up=*/false, false, ModelFamily::WINDOW_TYPES_OR_ALL, /*default window=*/513, /*gemma=*/ModelFamily::NOT_GEMMA, 0, 0.0, 0.0, /*local rope=*/false,
        /*config head_dim=*/128, /*head_dim=*/128, /*eps without config=*/1e-6, /*eps with config=*/1e-6,
        /*rope_theta=*/10000.0, /*max positions=*/262144,
        "mlp.gate.weight", "mlp.experts.", {"gate_proj.weight", "up_proj.weight", "down_proj.weight"},
        "mlp.shared_expert.", /*shared gate=*/nullptr, /*config norm_topk_prob=*/true, /*nope=*/false, /*multipliers=*/false, /*post norm only=*/false, /*fused experts=*/false, /*qk norm full=*/false, /*gpt-oss=*/false, /*phi=*/false, /*rotary factor=*/0.0, /*nope global=*/false, /*bias by default=*/false, /*sandwich norms=*/false, /*parallel block=*/false, /*norm without bias=*/false, /*logit scale=*/false, /*rope sliding only=*/true, /*norm plus one=*/false, /*qk norm after rope=*/false, /*ntk alpha=*/false, /*out bias field=*/false, /*rope fields required=*/false, /*qkv grouped=*/false, /*parallel residual field=*/false, /*mlp bias always=*/false, /*pos embed=*/nullptr, /*multi query field=*/false, /*conv1d=*/false, /*bare prefix=*/nullptr, /*kv heads are heads=*/false, /*rotary dim field=*/false, /*pos embed offset=*/0, /*falcon norms=*/0, /*alibi=*/0, /*embed norm=*/nullptr, /*attention types=*/false,
        /*sigmoid router=*/0, /*qk norm field=*/false, /*mla=*/0, /*choice bias=*/nullptr, /*rotary dim or factor=*/false, /*moe layer range=*/false, /*short conv=*/false, /*moe per layer fields=*/false, /*llama4 scale=*/false, /*minicpm scales=*/false, /*mlp bias by default=*/false, /*layer rope theta=*/false,
    },
};

#undef VT_LLAMA_LAYER_TENSORS
#undef VT_DENSE
#undef VT_NO_MOE

// Families transformers has that this engine does not run, with what they would need.
struct Unsupported {
    const char* model_type;
    const char* needs;
};
const Unsupported kUnsupported[] = {
    {"gemma3", "the vision tower and the language_model.* tensor names of Gemma3ForConditionalGeneration (its text "
               "model as Gemma3ForCausalLM, model_type gemma3_text, is supported)"},
};

std::string lower(std::string s) {
    for (char& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    return s;
}

std::string supported_list() {
    std::string s;
    std::set<std::string> named;  // (Falcon's two rows: named once)
    for (const ModelFamily& f : kFamilies)
        if (named.insert(f.architecture).second) s += (s.empty() ? "" : ", ") + std::string(f.architecture);
    return s;
}

}  // namespace

const ModelFamily& llama_family() { return kFamilies[0]; }

// The model types transformers >= 5 runs under another family's architecture (its auto mapping)
// and saves so, with their own model_type: EXAONE 3 (under EXAONE's tensor names), IQuest-Coder,
// InternLM3 as Llama; Sarvam-MoE (under its Hub names) as GLM-4 MoE; Sarvam-MLA as DeepSeek-V3.
static bool runs_as(const ModelFamily& f, const std::string& arch) {
    if (arch == "llamaforcausallm") return is_model_type(f, {"exaone", "iquestcoder", "internlm3"});
    if (arch == "glm4moeforcausallm") return is_model_type(f, {"sarvam_moe"});
    if (arch == "deepseekv3forcausallm") return is_model_type(f, {"sarvam_mla"});
    return false;
}

const ModelFamily* alternate_layout(const ModelFamily& f) {
    const ModelFamily* next = &f + 1;
    const bool in_table = &f >= kFamilies && next < kFamilies + sizeof(kFamilies) / sizeof(kFamilies[0]);
    return in_table && std::strcmp(next->model_type, f.model_type) == 0 && !next->falcon_norms ? next : nullptr;
}

bool is_model_type(const ModelFamily& f, std::initializer_list<const char*> types) {
    for (const char* t : types)
        if (std::strcmp(f.model_type, t) == 0) return true;
    return false;
}

const ModelFamily* family_of(const LlamaConfig& c) {
    for (const ModelFamily& f : kFamilies) {
        if (!c.model_type.empty() && lower(c.model_type) != f.model_type) continue;
        if (f.falcon_norms && f.falcon_norms != (falcon_two_norms(c) ? 2 : 1)) continue;
        if (c.architectures.empty()) return &f;
        for (const auto& a : c.architectures) {
            if (lower(a) == lower(f.architecture)) return &f;
            if (runs_as(f, lower(a))) return &f;
        }
    }
    return nullptr;
}

std::string unsupported_family_reason(const LlamaConfig& c) {
    std::string mt = lower(c.model_type);
    if (mt.empty()) {  // no model_type: guess it from the architecture ("Gemma2ForCausalLM" -> gemma2)
        for (const auto& a : c.architectures) {
            const std::string la = lower(a);
            for (const Unsupported& u : kUnsupported)
                if (la == lower(std::string(u.model_type)) + "forcausallm") mt = u.model_type;
        }
    }
    std::string msg = "architecture " + c.architecture_str() + " is not supported";
    for (const Unsupported& u : kUnsupported)
        if (mt == u.model_type) {
            msg += std::string(" yet: it needs ") + u.needs + ", which this engine does not implement";
            break;
        }
    return msg + " (supported: " + supported_list() + ")";
}

std::string layer_tensor_name(const ModelFamily& f, int64_t layer, LayerTensor which) {
    return f.layer_prefix + std::to_string(layer) + "." + f.layer_tensors[which];
}

int64_t LlamaConfig::mlp_width() const {
    const bool gate_up = family && family->gpt_oss;  // (one linear of 2·moe_intermediate rows)
    int64_t w = std::max(gate_up ? 2 * moe_intermediate : moe_intermediate, shared_intermediate);
    for (size_t l = 0; l < layer_moe.size(); ++l)
        if (!layer_moe[l]) return std::max(w, intermediate_size);
    return layer_moe.empty() ? std::max(w, intermediate_size) : w;
}

std::vector<MoeTensor> moe_layer_tensors(const LlamaConfig& c, int64_t layer) {
    std::vector<MoeTensor> out;
    if (!c.family || !c.family->router || !c.moe_layer(layer)) return out;
    const ModelFamily& f = *c.family;
    const std::string p = f.layer_prefix + std::to_string(layer) + ".";
    const int64_t H = c.hidden_size, E = c.num_experts, I = c.moe_intermediate;
    out.push_back({p + f.router, {E, H}, false});
    if (c.moe_choice_bias)  // (the router's correction bias, float32 [E]; ERNIE 4.5's [1, E])
        out.push_back({p + f.choice_bias, f.moe_layer_range ? std::vector<int64_t>{1, E} : std::vector<int64_t>{E}, false});
    if (f.gpt_oss) {
        const std::string rb = p + std::string(f.router);
        out.push_back({rb.substr(0, rb.size() - std::strlen("weight")) + "bias", {E}, false});
        const std::string gu = p + f.expert_tensors[0], dn = p + f.expert_tensors[2];
        if (c.mxfp4_experts) {  // the untransposed weights' blocks of 32 (16 bytes) and e8m0 scales
            out.push_back({gu + "_blocks", {E, 2 * I, H / 32, 16}, true, true});
            out.push_back({gu + "_scales", {E, 2 * I, H / 32}, false, true});
        } else {
            out.push_back({gu, {E, H, 2 * I}, true});
        }
        out.push_back({gu + "_bias", {E, 2 * I}, false});
        if (c.mxfp4_experts) {
            out.push_back({dn + "_blocks", {E, H, I / 32, 16}, true, true});
            out.push_back({dn + "_scales", {E, H, I / 32}, false, true});
        } else {
            out.push_back({dn, {E, I, H}, true});
        }
        out.push_back({dn + "_bias", {E, H}, false});
        return out;
    }
    if (f.fused_experts) {  // GraniteMoE, Mistral 4: [E, 2·I, H] gate|up and [E, H, I] down
        out.push_back({p + f.expert_tensors[0], {E, 2 * I, H}, true});
        out.push_back({p + f.expert_tensors[2], {E, H, I}, true});
    }
    for (int64_t e = 0; e < E && !f.fused_experts; ++e) {
        const std::string ep = p + f.expert_prefix + std::to_string(e) + ".";
        out.push_back({ep + f.expert_tensors[0], {I, H}, true});
        out.push_back({ep + f.expert_tensors[1], {I, H}, true});
        out.push_back({ep + f.expert_tensors[2], {H, I}, true});
    }
    if (c.shared_intermediate > 0 && granite_shared(f)) {  // GraniteMoeShared
        const int64_t S = c.shared_intermediate;
        const std::string sp = p + f.shared_prefix;
        out.push_back({sp + "input_linear.weight", {2 * S, H}, true});  // gate rows, then up rows
        out.push_back({sp + "output_linear.weight", {H, S}, true});
    } else if (f.shared_prefix && c.shared_intermediate > 0) {
        const int64_t S = c.shared_intermediate;
        const std::string sp = p + f.shared_prefix;
        out.push_back({sp + "gate_proj.weight", {S, H}, true});
        out.push_back({sp + "up_proj.weight", {S, H}, true});
        out.push_back({sp + "down_proj.weight", {H, S}, true});
        if (f.shared_gate) out.push_back({p + f.shared_gate, {1, H}, false});
    }
    return out;
}

bool falcon_two_norms(const LlamaConfig& c) {
    return c.new_decoder_architecture == 1 && (c.num_ln_in_parallel_attn < 0 ? 2 : c.num_ln_in_parallel_attn) == 2;
}

bool is_ignored_layer_tensor(const ModelFamily& f, const std::string& rest) {
    if (!f.ignored_layer_tensor || rest.empty()) return false;
    for (const char* p = f.ignored_layer_tensor;;) {
        const char* e = std::strchr(p, '|');
        const size_t n = e ? size_t(e - p) : std::strlen(p);
        if (rest.size() == n && rest.compare(0, n, p, n) == 0) return true;
        if (!e) return false;
        p = e + 1;
    }
}

bool layer_tensor_expected(const LlamaConfig& c, LayerTensor which, int64_t layer) {
    if (c.family && !c.family->layer_tensors[which]) return false;  // fused into another
    if (c.conv_layer(layer)) {  // (LFM2: its short convolution in place of the attention)
        switch (which) {
            case T_Q: case T_K: case T_V: case T_O: case T_Q_NORM: case T_K_NORM: case T_ATTN_GATE:
            case T_Q_BIAS: case T_K_BIAS: case T_V_BIAS: case T_O_BIAS: return false;
            case T_CONV_IN: case T_CONV: case T_CONV_OUT: return true;
            case T_CONV_IN_BIAS: case T_CONV_BIAS: case T_CONV_OUT_BIAS: return c.conv_bias;
            default: break;
        }
    }
    switch (which) {
        case T_GATE:
        case T_UP:
        case T_DOWN: return !c.moe_layer(layer);
        case T_Q_BIAS:
        case T_K_BIAS:
        case T_V_BIAS: return c.qkv_bias;
        case T_O_BIAS: return c.o_bias;
        case T_GATE_BIAS:
        case T_UP_BIAS:
        case T_DOWN_BIAS: return c.mlp_bias && !c.moe_layer(layer);
        case T_Q_NORM:
        case T_K_NORM: return c.qk_norm;
        case T_POST_ATTN_NORM:
        case T_POST_MLP_NORM:
            return (c.family && (c.family->gemma_block() || c.family->post_norm_only || c.sandwich_norms)) ||
                   (which == T_POST_MLP_NORM && c.moe_out_norm && c.moe_layer(layer));  // (A.X-K1's MoE layers)
        case T_SINKS: return c.family && c.family->layer_tensors[T_SINKS];  // (gpt-oss, GraniteSWA)
        case T_MLP_NORM: return !c.parallel_one_norm;  // (Falcon's parallel block with one norm)
        case T_ATTN_NORM_BIAS: return c.family && c.family->norm == ModelFamily::LAYER_NORM && !c.family->norm_without_bias;
        case T_MLP_NORM_BIAS:
            return c.family && c.family->norm == ModelFamily::LAYER_NORM && !c.family->norm_without_bias &&
                   !c.parallel_one_norm;
        case T_ACT_ALPHA_P:
        case T_ACT_ALPHA_N:
        case T_ACT_BETA:
        case T_ACT_EPS: return true;  // (where the family names them: Apertus)
        case T_Q: return !c.mla || c.mla_q_lora == 0;  // (DeepSeek: q_proj, or its LoRA)
        case T_Q_A:
        case T_Q_A_NORM:
        case T_Q_B: return c.mla && c.mla_q_lora > 0;
        case T_KV_A:
        case T_KV_A_NORM:
        case T_KV_B: return c.mla;
        case T_CONV_IN: case T_CONV: case T_CONV_OUT:
        case T_CONV_IN_BIAS: case T_CONV_BIAS: case T_CONV_OUT_BIAS: return false;  // (conv layers: above)
        case T_ATTN_GATE: return c.attn_gate;
        default: return which < kRequiredTensors;
    }
}

namespace {

// "layers 2..5", "layers 1,3,5", "every layer", "13 of 26 layers": the layers `on` of n.
std::string layer_set(const std::vector<int64_t>& on, size_t n) {
    if (on.size() == n) return "every layer";
    if (on.size() > 1 && on.back() - on.front() + 1 == int64_t(on.size()))
        return format("layers %lld..%lld", (long long)on.front(), (long long)on.back());
    if (on.size() > 6) return format("%zu of %zu layers", on.size(), n);
    std::string s = on.size() == 1 ? "layer " : "layers ";
    // (",", no space: the feature list itself is ", "-separated)
    for (size_t i = 0; i < on.size(); ++i) s += (i ? "," : "") + std::to_string(on[i]);
    return s;
}

// The layers with a window.
std::string window_layers(const LlamaConfig& c) {
    std::vector<int64_t> on;
    for (size_t l = 0; l < c.layer_window.size(); ++l)
        if (c.layer_window[l] > 0) on.push_back(int64_t(l));
    return layer_set(on, c.layer_window.size());
}

}  // namespace

std::string feature_list(const LlamaConfig& c) {
    std::string s;
    auto add = [&](const std::string& f) { s += (s.empty() ? "" : ", ") + f; };
    if (c.qkv_bias) add(c.o_bias ? "attention-bias" : "qkv-bias");
    if (!c.qkv_bias && c.o_bias) add("out-bias");  // (GPT-Neo)
    if (c.mlp_bias) add("mlp-bias");
    if (c.qk_norm)
        add(c.family && c.family->qk_norm_full ? "qk-norm-full" : c.family && c.family->qk_norm_after_rope ? "qk-norm-after-rope" : "qk-norm");
    if (c.rope.ntk_alpha > 0) add(format("ntk-alpha %g", c.rope.ntk_alpha));
    if (c.clip_qkv > 0) add(format("clip-qkv %g", c.clip_qkv));
    if (c.family && c.family->norm == ModelFamily::LAYER_NORM) add(c.family->norm_plus_one ? "layer-norm-1p" : "layer-norm");
    if (c.family && !c.family->final_norm) add("no-norm-weights");
    if (c.family && c.family->phi) add("parallel-block, gelu-mlp");
    if (!c.lm_head_bias.empty() && c.family && !c.family->phi) add("lm-head-bias");  // (PhiMoE's lm_head_bias)
    if (c.family && c.family->parallel_block) add("parallel-block");
    if (c.parallel_two_norms) add("parallel-block-two-norms");
    if (c.parallel_one_norm) add("parallel-block");
    if (c.family && ungated_mlp(*c.family) && c.ungated_act == LlamaConfig::ACT_GELU) add("gelu-exact-mlp");
    if (c.family && c.family->pos_embed) add("learned-positions");
    if (c.family && c.family->alibi) add("alibi");
    if (c.family && c.family->alibi == 2 && c.attn_scale > 0) add(format("softmax-scale %g", c.attn_scale));
    if (c.family && c.family->embed_norm) add("embedding-norm");
    if (c.family && (c.family->multi_query_field || c.family->falcon_norms) && c.num_kv_heads == 1) add("multi-query");
    if (c.family && c.family->conv1d_weights) add("conv1d-weights");
    if (c.family && c.family->pos_embed && c.attn_scale > 0) add(format("attention-scale %g", c.attn_scale));
    if (c.family && std::strcmp(c.family->activation, "relu2") == 0) add("relu2-mlp");
    if (c.family && ungated_mlp(*c.family) && c.ungated_act == LlamaConfig::ACT_RELU) add("relu-mlp");
    if (c.family && std::strcmp(c.family->activation, "xielu") == 0) add("xielu-mlp");
    if (c.logit_scale != 1.0) add(format("logit-scale %g", c.logit_scale));
    if (c.family && c.family->layer_tensors[T_SINKS] && !c.family->gpt_oss) add("attention-sinks");  // (GraniteSWA)
    if (c.family && c.family->gpt_oss) {
        add("attention-sinks");
        add(format("swiglu-limit %g", c.swiglu_limit));
        if (c.mxfp4_experts) add("mxfp4-experts");
    }
    if (c.family && c.family->post_norm_only) add("post-norm");
    if (c.sandwich_norms) add("sandwich-norms");
    if (c.family && c.family->llama4_attn_scale)  // (Ministral 3, Mistral 4)
        add(format("query-log-scale %g per %lld", c.rope.llama4_beta, (long long)c.rope.llama4_orig));
    if (c.attn_gate) add(c.attn_gate_per_dim ? "attention-gate per-dim" : "attention-gate");
    if (c.family && c.family->sigmoid_router == ModelFamily::ROUTER_AFMOE && c.embed_scale > 0)  // (AFMoE's mup_enabled)
        add(format("mup-embedding-scale %g", double(c.embed_scale)));
    if (c.rope.kind == RopeScaling::PROPORTIONAL)
        add(format("proportional-rope %lld of %lld dims", (long long)(2 * c.rope_angles), (long long)c.head_dim));
    if (c.family && c.family->rope == ModelFamily::INTERLEAVED) add("interleaved-rope");
    if (c.family && c.family->rope == ModelFamily::ROTATE_HALF_NEGATED) add("negated-rope");
    if (c.family && c.family->fused_qkv) add("fused-qkv");
    if (c.family && c.family->fused_gate_up) add("fused-gate-up");
    if (c.family && c.family->gemma != ModelFamily::NOT_GEMMA) {
        add("gemma-norms");
        add("geglu");
    }
    if (c.family && c.family->gemma_block()) {
        if (!c.family->layer_tensors[T_POST_ATTN_NORM]) add("no-post-norms");
        add(format("query-pre-attn-scalar %g", c.query_pre_attn_scalar));
        if (c.family->local_rope) add(format("local-rope-theta %g", c.rope_local_theta));
    } else if (c.family && c.family->local_rope) {  // (OLMo 3)
        add(format("local-rope-theta %g", c.rope_local_theta));
    }
    if (c.attn_softcap > 0) add(format("attn-softcap %g", c.attn_softcap));
    if (c.final_softcap > 0) add(format("final-softcap %g", c.final_softcap));
    if (c.family && c.family->minicpm_scales) {  // (MiniCPM3: its attention's scale is the latent one)
        add(format("embedding-multiplier %g", double(c.embed_scale)));
        add(format("residual-multiplier %g", double(c.residual_scale)));
        add(format("logits-scaling %g", c.logits_scaling));
    }
    if (c.family && c.family->multipliers) {  // (HyperCLOVA X: its logits_scaling is the logit-scale above;
        add(format("embedding-multiplier %g", double(c.embed_scale)));  // attention_multiplier left out: none)
        if (c.attn_scale > 0) add(format("attention-multiplier %g", c.attn_scale));
        add(format("residual-multiplier %g", double(c.residual_scale)));
        if (c.family->multipliers != 2) add(format("logits-scaling %g", c.logits_scaling));
    }
    if (c.family && (c.family->nope_layers || c.family->nope_global || c.family->rope_sliding_only || c.family->layer_rope_theta)) {
        std::vector<int64_t> on;
        for (size_t l = 0; l < c.layer_nope.size(); ++l)
            if (c.layer_nope[l]) on.push_back(int64_t(l));
        if (c.family->nope_layers || !on.empty()) add("no-rope " + layer_set(on, c.layer_nope.size()));
    }
    if (c.num_experts > 0) {
        int64_t n = 0;
        for (uint8_t x : c.layer_moe) n += x;
        std::string moe = format("moe %lld experts top-%lld", (long long)c.num_experts, (long long)c.experts_per_tok);
        if (n != int64_t(c.layer_moe.size())) moe += format(" (%lld of %zu layers)", (long long)n, c.layer_moe.size());
        add(moe);
        if (c.norm_topk) add("norm-topk");
        if (c.family && c.family->sparsemixer) add(format("sparsemixer-router jitter %g", double(c.moe_jitter2) / 2));
        if (c.shared_intermediate > 0)  // (Cohere 2 MoE: "shared-expert N average", (routed + shared) / 2)
            add(format("shared-expert %lld%s", (long long)c.shared_intermediate, c.moe_shared_average ? " average" : ""));
        if (c.moe_sigmoid || c.moe_groups > 1 || c.routed_scaling != 1.0f) {  // (DeepSeek-V2's: softmax)
            std::string r = c.moe_sigmoid ? "sigmoid-router" : "softmax-router";
            if (c.moe_choice_on_logits) r += " logit-choice";  // (Kolibri 1)
            if (c.moe_groups > 1) r += format(" groups %lld/%lld", (long long)c.moe_topk_groups, (long long)c.moe_groups);
            if (c.routed_scaling != 1.0f) r += format(" scale %g", double(c.routed_scaling));
            add(r);
        }
        if (c.moe_out_norm) add("moe-output-norm");  // (A.X-K1)
    }
    if (c.mla) {
        std::string a = format("mla kv-lora %lld", (long long)c.mla_kv_lora);
        if (c.mla_q_lora > 0) a += format(" q-lora %lld", (long long)c.mla_q_lora);
        add(a + format(" heads %lld+%lld v %lld", (long long)c.mla_nope, (long long)c.mla_rope, (long long)c.mla_v));
        if (c.mla_interleaved) add("interleaved-rope");
    }
    if (c.family && c.family->short_conv) {  // LFM2: "short-conv 3 (layers 0,1,3)", "conv-bias"
        std::vector<int64_t> on;
        for (size_t l = 0; l < c.layer_conv.size(); ++l)
            if (c.layer_conv[l]) on.push_back(int64_t(l));
        if (!on.empty()) add(format("short-conv %lld (%s)", (long long)c.conv_kernel, layer_set(on, c.layer_conv.size()).c_str()));
        if (!on.empty() && c.conv_bias) add("conv-bias");
    }
    if (c.rotary_dim > 0 && c.rotary_dim != c.head_dim && !c.mla)
        add(format("rotary-dim %lld", (long long)c.rotary_dim));
    if (c.num_heads > 0 && c.head_dim * c.num_heads != c.hidden_size && !c.mla)
        add(format("head-dim %lld", (long long)c.head_dim));
    int64_t w = 0;
    for (int64_t x : c.layer_window) w = std::max(w, x);
    if (w > 0) add(format("sliding-window %lld (%s)", (long long)w, window_layers(c).c_str()));
    return s;
}

}  // namespace vt

// vt::ModelWeights: a loaded model's config and weights as the backends read them (the
// neutral description both the CPU backend and the CUDA upload start from). vt_model (model.h)
// is this plus what the C API reports.
//
// Names: H = hidden_size, I = intermediate_size, V = vocab_size, NH = num_heads,
// KV = num_kv_heads, HD = head_dim, QKV = (NH + 2·KV)·HD.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common.h"
#include "config.h"
#include "ops/rope.h"
#include "quant.h"

namespace vt {

struct LayerWeights {
    AlignedVec<float> attn_norm;  // [H]  input_layernorm
    AlignedVec<float> mlp_norm;   // [H]  post_attention_layernorm (Gemma 2: pre_feedforward_layernorm)
    std::unique_ptr<Packed> qkv;  // [QKV, H]   rows: q_proj | k_proj | v_proj
    std::unique_ptr<Packed> o;    // [H, NH·HD] o_proj
    std::unique_ptr<Packed> gate; // [I, H]     gate_proj
    std::unique_ptr<Packed> up;   // [I, H]     up_proj
    std::unique_ptr<Packed> down; // [H, I]     down_proj
    // The family's optional tensors (family.h), f32; empty when the model has none.
    AlignedVec<float> qkv_bias;   // [QKV]  q_proj.bias | k_proj.bias | v_proj.bias
    AlignedVec<float> o_bias;     // [H]
    AlignedVec<float> gate_bias;  // [I]
    AlignedVec<float> up_bias;    // [I]
    AlignedVec<float> down_bias;  // [H]
    AlignedVec<float> q_norm;     // [HD] per-head RMSNorm of q before RoPE
    AlignedVec<float> k_norm;     // [HD] per-head RMSNorm of k before RoPE
    AlignedVec<float> post_attn_norm;  // [H] Gemma 2: RMSNorm of the attention output
    AlignedVec<float> post_mlp_norm;   // [H] Gemma 2: RMSNorm of the MLP output
    AlignedVec<float> sinks;           // [NH] gpt-oss: each head's attention sink logit
    // Apertus's xIELU, as transformers computes it: x > 0: alpha_p·x² + beta·x, else
    // (expm1(min(x, eps)) − x)·alpha_n + beta·x, alpha_p = softplus(its parameter), alpha_n =
    // beta + softplus(its parameter) (float32).
    float xielu_alpha_p = 0, xielu_alpha_n = 0, xielu_beta = 0, xielu_eps = 0;
    AlignedVec<float> attn_norm_bias;  // [H] LayerNorm families (Phi, StableLM): input_layernorm's bias
    AlignedVec<float> mlp_norm_bias;   // [H] StableLM: post_attention_layernorm's bias
    // DeepSeek's latent attention (LlamaConfig::mla; qkv above is then [q_a_proj or q_proj |
    // kv_a_proj_with_mqa]: q's LoRA down-projection, or q itself, and the latent KV, one linear).
    std::unique_ptr<Packed> q_b;                 // [NH·(nope + rope), q_lora] (null: no q LoRA)
    AlignedVec<float> q_a_norm;                  // [q_lora]
    AlignedVec<float> kv_a_norm;                 // [kv_lora]
    std::vector<std::unique_ptr<Packed>> uk;     // [NH] W_uk_hᵀ [kv_lora, nope]: kv_b's k rows, transposed
    std::vector<std::unique_ptr<Packed>> uv;     // [NH] W_uv_h [v, kv_lora]: kv_b's v rows
    // LFM2's short-convolution layer (LlamaConfig::layer_conv; qkv above is then in_proj
    // [3·H, H] (B | C | x rows) with its bias in qkv_bias, o is out_proj [H, H] with o_bias).
    AlignedVec<float> conv;                      // [H, K] the depthwise causal kernel
    AlignedVec<float> conv_bias;                 // [H] (conv_bias; else empty)
    std::unique_ptr<Packed> attn_gate;           // [NH, H] LFM3: each head's output times sigmoid(attn_gate · h); [NH·HD, H] AFMoE: each dim's
    // Mixture of experts (LlamaConfig::moe_layer; gate / up / down above are then null).
    struct Expert {
        std::unique_ptr<Packed> gate, up;  // [I_e, H] (gpt-oss: gate is [2·I_e, H], gate and up rows
                                           // interleaved as the checkpoint has them; up null)
        std::unique_ptr<Packed> down;      // [H, I_e]
        AlignedVec<float> gate_bias;       // gpt-oss: [2·I_e], interleaved as gate's rows
        AlignedVec<float> down_bias;       // gpt-oss: [H]
    };
    AlignedVec<float> router;        // [E, H] float32: the expert choice is a comparison
    AlignedVec<float> router_bias;   // [E] gpt-oss (else empty)
    AlignedVec<float> router_choice_bias;  // [E] sigmoid_router's e_score_correction_bias (else empty)
    std::vector<Expert> experts;     // [E]
    Expert shared;                   // Qwen2-MoE's shared expert (null when none)
    AlignedVec<float> shared_gate;   // [H]
};

// The bias a linear adds: null when the model has none.
inline const float* bias_or_null(const AlignedVec<float>& b) { return b.empty() ? nullptr : b.data(); }

struct ModelWeights {
    LlamaConfig cfg;          // every field resolved (no -1 left), num_layers = loaded blocks

    // The embedding table: embed (embed_dtype) for a float checkpoint; for GGUF blocks
    // (ggml_import.h) the rows of the packed table embed_rows points to instead (lm_head when
    // the embeddings are tied and lm_head was packed from the same blocks, else embed_pack),
    // and embed is empty.
    const Packed* embed_rows = nullptr;
    std::unique_ptr<Packed> embed_pack;
    vt_dtype embed_dtype = VT_DTYPE_BF16;  // as stored: F32, F16 or BF16
    RawBuf<uint8_t> embed;                 // [V, H] of embed_dtype
    std::vector<LayerWeights> layers;      // [num_layers]
    AlignedVec<float> final_norm;          // [H]
    AlignedVec<float> final_norm_bias;     // [H] a LayerNorm's bias (Phi, StableLM; else empty)
    AlignedVec<float> lm_head_bias;        // [V] Phi (else empty)
    AlignedVec<float> alibi_slopes;        // [NH] ALiBi's slope per head (Bloom; else empty)
    AlignedVec<float> embed_norm, embed_norm_bias;  // [H] Bloom's LayerNorm of the embeddings (else empty)
    AlignedVec<float> pos_embed;           // [max_position_embeddings, H] learned positions (GPT-2 lineage; else empty)
    // (Every RMSNorm weight is stored as the pass multiplies by it: 1 + w for Gemma's norms.)
    std::unique_ptr<Packed> lm_head;       // [V, H] (from the embedding table when tied)
    // (On a CUDA model the packed linears above are freed after upload: null.)
    std::vector<float> inv_freq;           // [HD/2] RoPE inverse frequencies (scaling applied)
    std::vector<float> inv_freq_local;     // [HD/2] Gemma 3's sliding layers (rope_local_theta); else empty
    // LongRoPE: the long factors' frequencies, used by a pass whose sequence reaches past
    // rope_long_after positions (transformers decides per forward call: max position + 1 >
    // original_max_position_embeddings); else empty.
    std::vector<float> inv_freq_long;
    int64_t rope_long_after = 0;
    float rope_scale = 1.0f;               // cos/sin scale (YaRN / LongRoPE attention_factor)
    float rope_scale_long = 1.0f;          // the same past rope_long_after (PhiMoE's long_mscale; else rope_scale)
    bool rope_negated = false;             // NanoChat: the frequencies negated (each pair turns by -θ)

    // The frequencies rope_freqs computed last for a pass (dynamic NTK: per sequence length).
    // One per call site and thread: a forward pass keeps one while it fills its RoPE tables.
    struct RopeFreqs {
        int64_t seq_len = -1;
        std::vector<float> inv;
    };

    // The RoPE frequencies of a pass whose sequence reaches seq_len positions (transformers
    // decides per forward call, seq_len = its largest position + 1): LongRoPE's long factors
    // past rope_long_after; dynamic NTK's (cfg.rope.kind DYNAMIC) computed into `memo` for
    // seq_len past max_position_embeddings (ops::rope_inv_freq_dynamic; memo keeps the last
    // seq_len's); else inv_freq.
    const float* rope_freqs(int64_t seq_len, RopeFreqs& memo) const {
        if (cfg.rope.kind == RopeScaling::DYNAMIC && seq_len > cfg.max_position_embeddings) {
            if (memo.seq_len != seq_len) {
                memo.inv = ops::rope_inv_freq_dynamic(cfg, seq_len);
                if (rope_negated)
                    for (float& f : memo.inv) f = -f;
                memo.seq_len = seq_len;
            }
            return memo.inv.data();
        }
        return !inv_freq_long.empty() && seq_len > rope_long_after ? inv_freq_long.data() : inv_freq.data();
    }

    // The cos/sin scale of a pass whose sequence reaches seq_len positions (PhiMoE: long_mscale
    // past original_max_position_embeddings, short_mscale within; the others: rope_scale).
    float rope_scale_at(int64_t seq_len) const { return seq_len > rope_long_after ? rope_scale_long : rope_scale; }

    // Embedding row of `token` as f32 -> out[H].
    void embed_row(int32_t token, float* out) const;
};

}  // namespace vt

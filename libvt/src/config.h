// LlamaConfig: the hyper-parameters of a Llama-family checkpoint, from config.json (and the
// EOS ids of generation_config.json and the tokenizer), completed from the tensor shapes:
// resolve_config is the one place a config is completed.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace vt {

class Checkpoint;
struct ModelFamily;

struct RopeScaling {
    // transformers' rope types (modeling_rope_utils): default, linear, llama3, yarn, longrope
    // (Phi-3's "su" is longrope).
    // PROPORTIONAL (Gemma 4, LFM3): every dim of the head in rotate-half pairs, the first
    // int(partial_rotary_factor · head_dim // 2) pairs at base ** (-2i / head_dim) / factor, the
    // others at frequency 0 (not rotated).
    // DYNAMIC: transformers' dynamic NTK (_compute_dynamic_ntk_parameters, dynamic_rope_update):
    // a pass whose sequence reaches seq_len > max_position_embeddings positions rotates with
    // base' = base · ((factor · seq_len / max_position_embeddings) − (factor − 1))^(d / (d − 2))
    // (d: the rotary dims), the others with base (ModelWeights::rope_freqs).
    enum Kind { NONE, LINEAR, LLAMA3, YARN, LONGROPE, PROPORTIONAL, DYNAMIC } kind = NONE;
    double factor = 1.0;                              // yarn / longrope: -1 = max_position / original; dynamic: NaN = absent
    double low_freq_factor = 1.0;                     // llama3
    double high_freq_factor = 4.0;                    // llama3
    int64_t original_max_position_embeddings = 8192;  // llama3, yarn, longrope (-1: config's top-level field)
    double beta_fast = 32, beta_slow = 1;             // yarn
    double mscale = 0, mscale_all_dim = 0;            // yarn (0: absent)
    bool truncate = true;                             // yarn
    double attention_factor = -1;                     // yarn, longrope: cos/sin scale (-1: the type's default)
    // PhiMoE's longrope: rope_parameters' short_mscale / long_mscale (-1: absent); resolved into
    // attention_factor (within original_max_position_embeddings) and attention_factor_long (past
    // it; -1: attention_factor there too).
    double short_mscale = -1, long_mscale = -1;
    double attention_factor_long = -1;
    std::vector<double> long_factor, short_factor;    // longrope: [head_dim / 2] each
    std::string field = "rope_scaling";               // the config.json key it came from (messages)
    // rope type "dynamic" with an alpha (HunYuan: a fixed NTK alpha, base · alpha^(d / (d - 2)));
    // 0: none. Other families read "dynamic" as transformers' dynamic NTK (kind DYNAMIC, by
    // factor; an alpha there is ignored, as transformers ignores it).
    double ntk_alpha = 0;
    // llama_4_scaling_beta and original_max_position_embeddings as the rope dict has them,
    // whatever its type (-1: absent; family.h's llama4_attn_scale reads them)
    double llama4_beta = -1;
    int64_t llama4_orig = -1;
    // type "deepseek_yarn": SarvamMLAConfig's legacy name for yarn (read as yarn; check_and_resolve
    // refuses it elsewhere)
    bool deepseek_yarn = false;
};

struct LlamaConfig {
    // -1 = not given by config.json (resolve_config infers it from shapes or applies a default).
    int64_t hidden_size = -1;
    int64_t intermediate_size = -1;
    int64_t num_layers = -1;
    int64_t num_heads = -1;
    int64_t num_kv_heads = -1;
    int64_t head_dim = -1;
    int64_t vocab_size = -1;
    int64_t max_position_embeddings = -1;
    int64_t original_max_positions = -1;  // config.json's top-level original_max_position_embeddings (Phi-3)
    double partial_rotary_factor = 1.0;   // config.json (top level or in the rope dict)
    bool partial_rotary_given = false;    // (Phi's default, when config.json leaves it out, is 0.5)
    // The dims of each head RoPE rotates (the first rotary_dim, pairs (i, i + rotary_dim / 2));
    // the rest pass unrotated. head_dim unless partial_rotary_factor < 1 (Phi-3 family only).
    int64_t rotary_dim = -1;
    // rotary_dim, or head_dim for a config that was not resolved (tests build some by hand).
    int64_t rotary_width() const { return rotary_dim > 0 ? rotary_dim : head_dim; }
    double rms_norm_eps = -1;
    double rope_theta = -1;
    int tie_word_embeddings = -1;  // -1 unknown, 0, 1
    RopeScaling rope;
    int32_t bos_token_id = -1;
    // config.json, then generation_config.json, then the tokenizer's eos_token (add_tokenizer_eos),
    // no repeats: the one EOS list of the model (vt_model_info, vt_generate, pyvt).
    std::vector<int32_t> eos_token_ids;

    bool from_file = false;              // config.json was found and read
    std::string path;                    // its path (for messages)
    std::vector<std::string> architectures;
    std::string model_type;
    std::string hidden_act;           // hidden_act / hidden_activation (resolved: the family's field)
    std::string activation_function;  // GPT-2's lineage, GPT-J, OPT
    std::string activation_field;     // Falcon's "activation"
    // config.json's family-specific fields (-1 / empty: absent or null).
    int attention_bias_field = -1;   // attention_bias
    int attention_out_bias = -1;     // Seed-OSS: o_proj's bias
    int mlp_bias_field = -1;         // mlp_bias
    int qkv_bias_field = -1;         // qkv_bias (InternLM3's name for attention_bias; its "bias": use_bias)
    int use_sliding_window = -1;     // use_sliding_window (Qwen2, Qwen3)
    int64_t sliding_window = -1;     // sliding_window
    int64_t max_window_layers = -1;  // max_window_layers (Qwen2, Qwen3)
    std::vector<std::string> layer_types;  // "full_attention" / "sliding_attention" per layer
    std::vector<std::string> mlp_layer_types;  // EXAONE MoE: "dense" / "sparse" per layer (empty: absent)
    double query_pre_attn_scalar = -1;     // Gemma 2 (-1: absent)
    double attn_logit_softcapping = -1;    // Gemma 2 (-1: absent, 0: null)
    double final_logit_softcapping = -1;   // Gemma 2 (-1: absent, 0: null)
    int64_t sliding_window_pattern = -1;   // Gemma 2/3 without layer_types
    int use_bidirectional_attention = -1;  // Gemma 3 (true: refused)
    int qk_layernorm = -1;                 // Phi, StableLM (true: refused)
    int use_qkv_bias = -1;                 // StableLM
    int use_bias = -1;                     // Starcoder2 (-1: absent = true)
    std::string use_bias_name = "use_bias";  // its field (OPT: enable_bias)
    int use_parallel_residual = -1;        // GPT-NeoX (StableLM: true refused)
    int multi_query = -1;                  // GPTBigCode (-1: absent = true)
    int64_t n_inner = -1;                  // GPT-2 lineage's MLP width (-1: absent or null = 4 · hidden)
    int64_t rotary_dim_field = -1;         // GPT-J's rotary_dim (-1: absent, 0: null)
    // OPT (-1: absent): what its block computes otherwise than pyvt's (refused when so)
    int do_layer_norm_before = -1, remove_final_layer_norm = -1, layer_norm_elementwise_affine = -1;
    int64_t word_embed_proj_dim = -1;
    // Falcon (-1: absent): its block's layout, its KV heads, ALiBi (refused), its MLP width
    int new_decoder_architecture = -1, parallel_attn = -1, alibi = -1;
    int apply_residual_connection_post_layernorm = -1;  // Bloom (true: refused)
    // MPT (-1: absent): expansion_ratio, attn_config's fields, and those transformers' MPT does
    // not compute (refused when set otherwise)
    int64_t expansion_ratio = -1, alibi_bias_max = -1;
    double softmax_scale = -1;
    int qk_ln = -1, prefix_lm = -1, attn_uses_sequence_id = -1, attn_alibi = -1, no_bias = -1;
    int64_t num_ln_in_parallel_attn = -1, falcon_num_kv_heads = -1, ffn_hidden_size = -1;
    // GPT-Neo: attention_types expanded ("full_attention" / "sliding_attention" per layer), window_size
    std::vector<std::string> attention_types;
    int64_t window_size = -1;
    int scale_attn_weights = -1;           // GPT-2 lineage (false: scores unscaled)
    int scale_attn_by_inverse_layer_idx = -1;  // GPT-2 (true: refused)
    int add_cross_attention = -1;          // GPT-2 lineage (true: refused)
    double layer_norm_eps = -1;            // Phi's LayerNorm eps (its rms_norm_eps; -1: absent)
    double rope_local_theta = -1;          // Gemma 3: rope_local_base_freq / rope_parameters.sliding_attention
    // Mixture of experts (config.json; -1 / empty: absent).
    int64_t num_experts_field = -1;         // num_experts (Qwen) / num_local_experts (Mixtral)
    int64_t experts_per_tok_field = -1;     // num_experts_per_tok
    std::string experts_per_tok_key = "num_experts_per_tok";  // its name there (gpt-oss, ERNIE 4.5: others)
    int64_t moe_intermediate_field = -1;    // moe_intermediate_size (Qwen; Mixtral: intermediate_size)
    int64_t shared_intermediate_field = -1; // shared_expert_intermediate_size (Qwen2-MoE)
    int norm_topk_prob_field = -1;          // norm_topk_prob (Qwen)
    int64_t decoder_sparse_step = -1;       // Qwen: layer l is MoE when (l + 1) % step == 0 ...
    // DeepSeek-V3-style routers (family.h, sigmoid_router; -1: absent): n_group, topk_group,
    // routed_scaling_factor, n_shared_experts, first_k_dense_replace, num_nextn_predict_layers
    int64_t n_group_field = -1, topk_group_field = -1, n_shared_experts_field = -1;
    int64_t first_k_dense_field = -1, nextn_layers_field = -1;
    // Sarvam's config.json names (their config classes' attribute_map) for n_shared_experts and
    // num_nextn_predict_layers, which win over those where both are there
    int64_t num_shared_experts_alias = -1, num_mtp_layers_field = -1;
    // ERNIE 4.5 MoE (-1: absent): moe_layer_start_index / end_index (-1 there: the last) / interval
    int64_t moe_start_field = -1, moe_end_field = -2, moe_interval_field = -1;
    // HunYuan MoE: num_experts, moe_topk, num_shared_expert and moe_intermediate_size given as
    // per-layer lists (empty: one number, or absent; the *_field above / num_shared_expert_field
    // then hold the list's first value); use_cla, use_mixed_mlp_moe (-1: absent),
    // moe_layer_num_skipped (-1: absent).
    std::vector<int64_t> num_experts_list, moe_topk_list, num_shared_expert_list, moe_intermediate_list;
    int64_t num_shared_expert_field = -1, moe_layer_num_skipped = -1;
    int use_cla = -1, use_mixed_mlp_moe = -1;
    double routed_scaling_field = -1;
    // DeepSeek-V2 / V3 (-1: absent; q_lora_rank null: 0): the latent attention's sizes,
    // rope_interleave (V3), topk_method (V2: "greedy" or "group_limited_greedy")
    int64_t q_lora_field = -1, kv_lora_field = -1, qk_nope_field = -1, qk_rope_field = -1, v_head_field = -1;
    int rope_interleave_field = -1;
    std::string topk_method;
    std::vector<int64_t> mlp_only_layers;   // ... and l is not listed here
    bool mlp_only_layers_given = false;     // (Flint: [0, 1] when absent or null)
    std::vector<int64_t> no_rope_layers;    // SmolLM3: 1 = the layer rotates, 0 = NoPE (empty: absent)
    int64_t no_rope_layer_interval = -1;    // SmolLM3 without no_rope_layers
    std::vector<double> layer_rope_theta;   // GraniteSWA: each layer's RoPE base, 0 = NoPE (empty: absent or null)
    double embedding_multiplier = -1, attention_multiplier = -1;  // Granite (-1: absent)
    double residual_multiplier = -1, logits_scaling_field = -1;
    double clip_qkv = 0;  // OLMoE: q, k and v clamped to [-clip_qkv, clip_qkv] after the q/k norms (0: none)
    double clip_qkv_root = 0;  // config.json's top-level clip_qkv (OLMo's, OLMoE's field; MPT's is in attn_config)
    double swiglu_alpha = 1.702, swiglu_limit = 7.0;  // gpt-oss's clamped SwiGLU (GptOssConfig's defaults)
    // LFM2 (-1: absent): full_attn_idxs (given: full_attn_given), conv_L_cache, conv_bias,
    // block_ff_dim, block_auto_adjust_ff_dim, block_ffn_dim_multiplier (-2: null),
    // block_multiple_of, norm_eps, tie_embedding
    std::vector<int64_t> full_attn_idxs;
    bool full_attn_given = false;
    int64_t conv_kernel_field = -1, block_ff_dim = -1, block_multiple_of = -1;
    int conv_bias_field = -1, block_auto_adjust = -1, tie_embedding = -1;
    double block_ffn_multiplier = -1, norm_eps_field = -1;
    int64_t num_dense_layers_field = -1;  // LFM2-MoE: num_dense_layers (-1: absent)
    int use_expert_bias = -1;             // LFM2-MoE: use_expert_bias (-1: absent = true)
    int use_sandwich_norm = -1, use_attention_gate = -1;  // LFM3 (-1: absent = true)
    int64_t global_attn_every = -1;  // AFMoE: global_attn_every_n_layers (-1: absent)
    double route_scale_field = -1;   // AFMoE: route_scale (-1: absent)
    int mup_enabled = -1;            // AFMoE: mup_enabled (-1: absent = false)
    double router_jitter_field = -1;  // PhiMoE: router_jitter_noise (-1: absent)
    int lm_head_bias_field = -1;      // PhiMoE: lm_head_bias (-1: absent = false)
    double router_scaling_field = -1;  // HY-V3: router_scaling_factor (-1: absent)
    // Cohere 2 MoE (empty / -1: absent or null):
    // expert_selection_fn, shared_expert_combination_strategy, prefix_dense_sliding_window_pattern,
    // prefix_dense_intermediate_size
    std::string expert_selection_fn, shared_combination;
    int64_t prefix_dense_pattern = -1, prefix_dense_intermediate = -1;
    int64_t moe_layer_freq = -1;  // A.X-K1: moe_layer_freq (-1: absent)
    int use_post_norm = -1;                                // HyperCLOVA X (-1: absent = true)
    bool rope_by_layer_type = false;  // rope_parameters held full_attention (and sliding_attention) sets
    // Mellum: what config.json said of RoPE outside those sets — a top-level rope_theta (-1: absent),
    // a rope_parameters that is one set, not one per layer type — and whether it held a sliding_attention set
    double rope_theta_top = -1;
    bool rope_parameters_flat = false, rope_local_given = false;
    // MiniCPM3 (-1: absent; -2: null): scale_emb, scale_depth, dim_model_base
    double scale_emb = -1, scale_depth = -1;
    int64_t dim_model_base = -1;

    // The family (family.h) and its features for this checkpoint, resolved by resolve_config.
    // Phi: the final norm's and lm_head's bias names ("" elsewhere).
    std::string final_norm_bias, lm_head_bias;
    const ModelFamily* family = nullptr;
    bool qkv_bias = false;  // q_proj / k_proj / v_proj carry biases
    bool o_bias = false;    // o_proj carries a bias
    bool mlp_bias = false;  // gate_proj / up_proj / down_proj carry biases
    bool qk_norm = false;   // per-head RMSNorm of q and k (weights [head_dim]) before RoPE
    // [blocks of the checkpoint] keys each layer attends back over, the query's own included
    // (transformers' sliding_window: key j is seen from query i when i - j < window); 0 = all.
    std::vector<int64_t> layer_window;
    // Gemma 2 (resolved; Gemma2Config's defaults when config.json leaves them out): scores are
    // q·k / sqrt(query_pre_attn_scalar) (others: / sqrt(head_dim)); scores and logits are
    // soft-capped as cap·tanh(x / cap) when the cap is > 0; embeddings are scaled by
    // embed_scale when > 0 (float32(sqrt(hidden_size))).
    double attn_softcap = 0;
    double final_softcap = 0;
    float embed_scale = 0;
    // [blocks] 1 where the layer rotates with rope_local_theta (Gemma 3's sliding layers).
    std::vector<uint8_t> layer_local_rope;
    // Granite (resolved; others: 0 / 1 / 1): scores are q·k · attn_scale when > 0; each residual
    // branch (attention output, MLP output) is multiplied by residual_scale before its add; the
    // logits are divided by logits_scaling. (Its embedding multiplier is embed_scale.)
    double attn_scale = 0;
    float residual_scale = 1.0f;
    double logits_scaling = 1.0;
    // Cohere (resolved; others 1): the logits are multiplied by it (config.json's logit_scale).
    double logit_scale = 1.0;
    double logit_scale_field = -1;  // logit_scale as config.json has it (-1: absent)
    int use_qk_norm = -1;           // Cohere (true: refused)
    // The ungated MLP's activation (family.h, ungated_mlp: Phi, Starcoder2, GPT-NeoX, Arcee,
    // Apertus, Nemotron), resolved from hidden_act: GELU with tanh (gelu_new, gelu_fast,
    // gelu_pytorch_tanh), exact GELU (gelu: erf), relu², xIELU, ReLU (OPT).
    enum UngatedAct { ACT_GELU_TANH, ACT_GELU, ACT_RELU2, ACT_XIELU, ACT_RELU } ungated_act = ACT_GELU_TANH;
    // GPT-NeoX with use_parallel_residual: the parallel block with two norms, x + attn(LN1(x)) +
    // mlp(LN2(x)) (LN2: the layer's mlp_norm, applied to the block's input).
    bool parallel_two_norms = false;
    // Falcon's parallel block with one norm: x + attn(LN(x)) + mlp(LN(x)) (no mlp_norm).
    bool parallel_one_norm = false;
    // [blocks] 1 where the layer attends without RoPE (SmolLM3's NoPE layers; q is still scaled).
    std::vector<uint8_t> layer_nope;
    // Mixture of experts (resolved; 0 experts = a dense model): each token's MLP is the sum of
    // its top experts_per_tok experts (softmax over the router's logits, in float32; the top
    // weights renormalized to sum 1 when norm_topk), each a SwiGLU MLP of width
    // moe_intermediate, plus a shared expert of width shared_intermediate (0: none) scaled by
    // sigmoid(shared_gate · x).
    int64_t num_experts = 0;
    int64_t experts_per_tok = 0;
    int64_t moe_intermediate = 0;
    int64_t shared_intermediate = 0;
    bool norm_topk = false;
    // DeepSeek-V3-style routing (GLM-4 MoE, dots1; family.h, sigmoid_router): sigmoid scores,
    // the experts chosen by score + the router's correction bias within the topk_groups best of
    // moe_groups groups (a group's score: the sum of its two best), weighted by their plain
    // scores (renormalized when norm_topk) times routed_scaling.
    // (DeepSeek-V2's softmax router limits its groups too: scored by their best, the others 0)
    bool moe_sigmoid = false;
    int64_t moe_groups = 1, moe_topk_groups = 1;
    bool moe_groups_two_best = false;  // a group scored by its best two experts (else its best)
    float routed_scaling = 1.0f;
    // The router's correction bias is in the checkpoint (ModelFamily::choice_bias; LFM2-MoE: when
    // use_expert_bias), and what the sigmoid router adds to the top weights' sum before dividing.
    bool moe_choice_bias = false;
    float moe_norm_eps = 1e-20f;
    // PhiMoE (ModelFamily::sparsemixer): the router's 2 · router_jitter_noise, its masking
    // threshold (resolved; 0 for other routers).
    float moe_jitter2 = 0.0f;
    // Kolibri 1: the choice made on the router's logit + its bias (the others': sigmoid(logit) + bias);
    // the chosen experts still weighted by sigmoid(logit)
    bool moe_choice_on_logits = false;
    // Cohere 2 MoE's "average": the routed experts' sum and the shared experts' output averaged,
    // (routed + shared) / 2, not added.
    bool moe_shared_average = false;
    // A.X-K1: the MoE block's output (shared experts included) RMSNormed by the layer's
    // post_mlp_norm (T_POST_MLP_NORM) before the residual add; its dense layers' MLPs are not.
    bool moe_out_norm = false;
    std::vector<uint8_t> layer_moe;  // [blocks] 1 where the layer's MLP is the experts
    // gpt-oss (family.h): the checkpoint holds the experts as MXFP4 blocks and scales.
    bool mxfp4_experts = false;
    bool moe_layer(int64_t l) const { return l >= 0 && size_t(l) < layer_moe.size() && layer_moe[size_t(l)]; }
    // The widest MLP row of any layer (dense, expert, shared; gpt-oss's experts' gate|up is one
    // linear of 2·moe_intermediate rows): scratch sizes. (family.cpp)
    int64_t mlp_width() const;

    // DeepSeek-V2 / V3's multi-head latent attention (family.h, mla; resolved): the cache and the
    // attention see one KV head of head_dim = mla_kv_lora + mla_rope ([rotated k_pe | RMSNormed c]
    // for keys and values alike), the queries num_heads heads of that width ([rotated q_pe |
    // W_uk_hᵀ · q_nope]); rotary_dim = mla_rope (pairs (2i, 2i + 1) of the checkpoint's rows
    // when mla_interleaved, put in rotate-half order as they are copied); each head's output's
    // latent part goes through W_uv_h (mla_v rows) before o_proj ([H, num_heads · mla_v]).
    bool mla = false;
    int64_t mla_q_lora = 0, mla_kv_lora = 0, mla_nope = 0, mla_rope = 0, mla_v = 0;
    bool mla_interleaved = false;

    // LFM2's short-convolution layers (family.h, short_conv; resolved): [blocks] 1 where the
    // layer convolves instead of attending, the kernel's width (conv_L_cache) and its biases.
    std::vector<uint8_t> layer_conv;
    int64_t conv_kernel = 0;
    bool conv_bias = false;
    // The attention and MLP outputs RMSNormed before their adds (family.h: sandwich_norms, GLM-4;
    // LFM3 unless use_sandwich_norm is false), the heads' sigmoid output gate (LFM3: T_ATTN_GATE).
    bool sandwich_norms = false;
    bool attn_gate = false;
    bool attn_gate_per_dim = false;  // AFMoE: the gate [num_heads · head_dim, H], one per output dim
    // PROPORTIONAL RoPE: the rotated pairs (the rest of head_dim / 2 turn at frequency 0).
    int64_t rope_angles = 0;
    bool conv_layer(int64_t l) const { return l >= 0 && size_t(l) < layer_conv.size() && layer_conv[size_t(l)]; }
    // The first layer that attends (the last one when every layer convolves): whose q_proj tells
    // the heads and the format.
    int64_t first_attention_layer() const {
        int64_t l = 0;
        while (l + 1 < int64_t(layer_conv.size()) && layer_conv[size_t(l)]) ++l;
        return l;
    }

    // Which family these name: family_of() (family.h).
    std::string architecture_str() const;  // "PhiForCausalLM (model_type phi)" for messages
};

// Reads dir/config.json and dir/generation_config.json when present. Bad JSON, wrong field
// types or impossible values -> VT_STATUS_FORMAT_ERROR naming the file and the field; an
// unsupported rope_scaling type or activation -> VT_STATUS_UNSUPPORTED.
LlamaConfig read_config(const std::string& dir);

// The config of checkpoint ck, every field resolved (no -1 left): read_config(ck.dir()), then
// the tensor names and dtypes checked against the family (VT_STATUS_UNSUPPORTED naming what is
// missing or unexpected), what config.json did not say inferred from the shapes (or the
// family's defaults), every shape checked against it, and the float32 constants derived from
// it (rms_norm_eps, rope_theta, rope scaling factors, the RoPE inverse frequencies, Gemma's
// attention scale and soft caps) checked to be finite and nonzero (VT_STATUS_FORMAT_ERROR naming config.json and the field).
// *file_layers: the blocks of the checkpoint.
LlamaConfig resolve_config(Checkpoint& ck, int64_t* file_layers);

// Appends the tokenizer's EOS to c.eos_token_ids (read_config does): tokenizer_config.json's
// "eos_token" (a string or {"content": ...}) mapped to its id through dir/tokenizer.json (added
// tokens, then the model's vocabulary), when both files are there. A SentencePiece-only
// tokenizer (tokenizer.model) is not read here.
void add_tokenizer_eos(const std::string& dir, LlamaConfig& c);

}  // namespace vt

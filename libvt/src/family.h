// Model families: one description per family — tensor names, norms, activation, biases, RoPE
// variant, attention window, the defaults of what config.json may leave out — in one table
// (family.cpp), read by the loader (model.cpp, config.cpp) instead of literals and
// conditionals spread through them. Rows: Llama, Mistral, Qwen2 (Qwen2.5), Qwen3 (dense),
// Phi-3 (fused qkv_proj / gate_up_proj, split or used as they are at load), Gemma 1, Gemma 2,
// Gemma 3 (text).
// What a row enables is resolved per checkpoint into LlamaConfig's feature fields (qkv_bias,
// qk_norm, layer_window, ...), which the forward passes (cpu/engine.cpp, cuda/engine.cpp) read.
// SmolLM3 (Llama with NoPE layers), Granite (Llama with multipliers), OLMo 2 (post-norm
// block). Mixture-of-experts rows: GraniteMoE, GraniteMoeShared, OLMoE, Mixtral, Qwen2-MoE,
// Qwen3-MoE, gpt-oss (the router and experts: the fields at the end); Phi-1/2 (LayerNorm, the
// parallel block), StableLM, Starcoder2 (LayerNorm, Starcoder2's ungated MLP), EXAONE 4 (OLMo 2's
// block, NoPE global layers), Helium, ERNIE 4.5 and GLM (pairs-interleaved RoPE, reordered at
// load), GLM-4 (sandwich norms), Seed-OSS, OLMo 3 (OLMo 2 with sliding layers), Ministral,
// Cohere and Cohere 2 (a bias-free LayerNorm before a parallel block, logit_scale), Arcee
// (an ungated relu² MLP), HunYuan dense (q/k norms after RoPE, NTK alpha), VaultGemma (Gemma 2
// without its post norms), Nemotron (LayerNorm1P, relu², half-rotary heads), Jais2 (Llama's block with
// LayerNorms and Nemotron's ungated relu² MLP, biases by default), GraniteSWA (Granite with
// sliding layers, attention sinks and per-layer RoPE bases), Apertus (an ungated
// xIELU MLP with per-layer parameters, q/k norms), GPT-NeoX (the fused qkv in per-head groups,
// the parallel block with two LayerNorms, an exact-GELU MLP), GLM-4 MoE and dots1 (DeepSeek-V3's
// sigmoid router with groups and shared experts: sigmoid_router).
// DeepSeek-V2 and V3 (multi-head latent attention: mla), MiniMax-M2 (a sigmoid router with
// Mixtral's names), ERNIE 4.5 MoE (a softmax router with a correction bias, MoE layers by range), EXAONE MoE
// (EXAONE 4's windows and NoPE with a pre-norm block, DeepSeek-V3's router, mlp_layer_types),
// GLM-4 MoE lite (DeepSeek-V3's latent attention, GLM-4 MoE's router), HunYuan MoE (HunYuan
// dense's attention, Mixtral's softmax router, one ungated shared MLP; per-layer config lists),
// LFM2 (short-convolution layers beside attention ones: short_conv), LFM2-MoE (LFM2's layers, a
// sigmoid router with an optional bias: sigmoid_router 7), AFMoE (Arcee's Trinity: gated
// attention with q/k norms, NoPE global layers beside sliding RoPE ones, sandwich norms, a sigmoid
// router with an expert bias and shared experts after dense layers: sigmoid_router 9), PhiMoE
// (Mixtral's names and experts with LayerNorms, attention biases, lm_head's bias and the
// sparsemixer router: sparsemixer), Sarvam-MoE (GLM-4 MoE's
// block under its Hub names, q|k|v fused in one query_key_value, or under transformers' own with
// the experts stacked: sigmoid_router 10), Sarvam-MLA
// (DeepSeek-V3 with its own defaults: sigmoid_router 11), Kolibri 1 (EXAONE 4's attention and windows, GLM-4's
// sandwich norms, experts in every layer chosen on the router's logit + bias: sigmoid_router 12), HY-V3
// (Tencent's Hy3: Qwen3-MoE's attention, AFMoE's router with its scale and shared experts, dense
// layers by mlp_layer_types: sigmoid_router 13), Cohere 2 MoE (Cohere 2's block with experts,
// shared ones averaged in: cohere_moe), A.X-K1 (DeepSeek-V3 with the MoE block's output RMSNormed:
// sigmoid_router 14), Mellum (Qwen3-MoE's attention and router, sliding layers with their own RoPE
// base as Gemma 3's (local_rope), dense layers by mlp_layer_types), Flint (Qwen3-MoE's attention
// with gpt-oss's sinks, RoPE on the sliding layers only as Cohere 2's, a sigmoid top-k router as
// Cohere 2 MoE's sigmoid one, one ungated shared expert). Multimodal Gemma 3 is not a row: the
// loader refuses it naming what it needs (unsupported_family_reason).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace vt {

struct LlamaConfig;

// The per-layer tensors of a block, in the order of ModelFamily::layer_tensors: the first
// kRequiredTensors in every checkpoint of every family, the rest only where the family and
// config.json enable them (layer_tensor_expected).
enum LayerTensor {
    T_Q, T_K, T_V, T_O, T_GATE, T_UP, T_DOWN, T_ATTN_NORM, T_MLP_NORM,
    T_Q_BIAS, T_K_BIAS, T_V_BIAS, T_O_BIAS, T_GATE_BIAS, T_UP_BIAS, T_DOWN_BIAS, T_Q_NORM, T_K_NORM,
    T_POST_ATTN_NORM, T_POST_MLP_NORM, T_SINKS, T_ATTN_NORM_BIAS, T_MLP_NORM_BIAS,
    // Apertus: the xIELU activation's per-layer parameters (alpha_p, alpha_n [1]; beta, eps [])
    T_ACT_ALPHA_P, T_ACT_ALPHA_N, T_ACT_BETA, T_ACT_EPS,
    // DeepSeek-V2 / V3's multi-head latent attention (ModelFamily::mla): q's LoRA (q_a_proj, its
    // RMSNorm, q_b_proj; T_Q is q_proj when q_lora_rank is null), the latent KV (kv_a_proj_with_mqa,
    // its RMSNorm over the first kv_lora_rank) and kv_b_proj expanding it per head
    T_Q_A, T_Q_A_NORM, T_Q_B, T_KV_A, T_KV_A_NORM, T_KV_B,
    // LFM2's short-convolution layers (ModelFamily::short_conv), in place of the attention:
    // in_proj ([3·H, H]: B, C and x rows), the depthwise causal kernel ([H, 1, K]), out_proj
    // ([H, H]), and their biases when config.json's conv_bias is true
    T_CONV_IN, T_CONV, T_CONV_OUT, T_CONV_IN_BIAS, T_CONV_BIAS, T_CONV_OUT_BIAS,
    // LFM3: each attention head's output times sigmoid(g_proj · h) ([num_heads, H]; its files'
    // self_attn.gate_proj, transformers' g_proj), when
    // config.json's use_attention_gate (true when left out); AFMoE: each output dim's
    // ([num_heads · head_dim, H], self_attn.gate_proj), always
    T_ATTN_GATE,
    T_COUNT
};
constexpr int kRequiredTensors = T_Q_BIAS;

struct ModelFamily {
    const char* name;          // for messages and vt_model_info: "Llama"
    const char* architecture;  // config.json "architectures" entry (compared case-insensitively)
    const char* model_type;    // config.json "model_type"
    // Tensor names. Layer tensors are layer_prefix + N + "." + layer_tensors[k].
    const char* embed;
    const char* final_norm;  // null: the family's LayerNorms have no weights (OLMo 1): every norm's is 1
    const char* lm_head;  // absent or ignored when the embeddings are tied
    const char* layer_prefix;
    const char* layer_tensors[T_COUNT];  // null: the family has no such tensor (fused)
    // Buffers old conversions store (the RoPE inverse frequencies, GPT-NeoX's causal masks),
    // recomputed: not "unexpected". Layer-relative names, '|'-separated (is_ignored_layer_tensor).
    const char* ignored_layer_tensor;
    // The block.
    const char* activation;  // config.json hidden_act this family's MLP computes: act(gate) · up
    // RMS_NORM: x · rsqrt(mean(x²) + eps) · w; RMS_NORM_PLUS_ONE: the same with (1 + w)
    // (Gemma: the loader stores 1 + w, so the pass is the same); LAYER_NORM: (x − mean) ·
    // rsqrt(var + eps) · w + b (T_ATTN_NORM_BIAS, T_MLP_NORM_BIAS, and the final norm's bias:
    // final_norm with ".weight" -> ".bias"; eps from config.json's layer_norm_eps).
    enum Norm { RMS_NORM, RMS_NORM_PLUS_ONE, LAYER_NORM } norm;
    // ROTATE_HALF: pairs (i, i + rotary_dim/2), transformers' rotate_half. INTERLEAVED: pairs
    // (2i, 2i + 1) (Helium, ERNIE 4.5, GLM: their rotate_half takes x[..., 0::2] and
    // x[..., 1::2]); the loader puts each head's rows of q_proj and k_proj (and their biases
    // and norms) in rotate-half order, so the passes compute the same scores with one RoPE.
    // ROTATE_HALF_NEGATED: NanoChat's rotate_half returns (x2, -x1), transformers' negated, so
    // each pair turns by -θ: the inverse frequencies are negated at load (ModelWeights::inv_freq:
    // the same cosines, the sines negated), and the passes rotate as for ROTATE_HALF.
    enum Rope { ROTATE_HALF, INTERLEAVED, ROTATE_HALF_NEGATED } rope;
    // Biases of the attention projections: none; q/k/v always (Qwen2); q/k/v/o when
    // config.json's attention_bias is true (Llama, Qwen3); q/k/v when its use_qkv_bias is
    // (StableLM).
    // CONFIG_USE_BIAS: every linear but lm_head (q/k/v/o and the MLP's) when use_bias is,
    // true when left out (Starcoder2); CONFIG_USE_BIAS_OFF: the same, false when left out
    // (ERNIE 4.5).
    // CONFIG_QKV_OUT_BIAS: q/k/v when attention_bias is (left out: bias_by_default), o when
    // attention_out_bias is (Seed-OSS; GLM and Helium have no o bias, so no such field).
    enum AttnBias {
        NO_BIAS, QKV_BIAS, CONFIG_ATTENTION_BIAS, CONFIG_QKV_BIAS, CONFIG_USE_BIAS, CONFIG_USE_BIAS_OFF,
        CONFIG_QKV_OUT_BIAS,
        ALL_BIAS,  // q/k/v/o always (Phi)
        OUT_BIAS   // o only, always (GPT-Neo)
    } attn_bias;
    bool config_mlp_bias;  // gate/up/down biases when config.json's mlp_bias is true (Llama)
    bool qk_norm;          // per-head RMSNorm (weights [head_dim]) on q and k before RoPE (Qwen3)
    // Fused tensors: T_Q names q|k|v rows in one tensor ([QKV, H], Phi-3's qkv_proj; T_K, T_V
    // null); T_GATE names gate|up rows ([2·I, H], Phi-3's gate_up_proj; T_UP null).
    bool fused_qkv;
    bool fused_gate_up;
    // Sliding-window attention: none; every layer when config.json's sliding_window is not
    // null (Mistral, Phi-3); the layers config.json's layer_types marks "sliding_attention" —
    // else, when use_sliding_window is true, layers >= max_window_layers (Qwen2, Qwen3).
    // WINDOW_ALTERNATE: layer_types, else layer i slides unless (i + 1) % P == 0, P =
    // sliding_window_pattern or default_window_pattern (Gemma 2: 2, Gemma 3: 6).
    // WINDOW_TYPES_OR_ALL: layer_types, else every layer when sliding_window is not null
    // (Ministral).
    // WINDOW_TYPES_OR_FROM: layer_types, else layers >= max_window_layers when sliding_window is
    // not null (dots1: Qwen's rule without use_sliding_window).
    // WINDOW_TYPES_OR_FIRST: layer_types, else layer i attends fully when i % P == 0 and slides
    // otherwise, P = default_window_pattern (CWM: 4).
    enum Window { NO_WINDOW, WINDOW_ALL_LAYERS, WINDOW_QWEN, WINDOW_ALTERNATE, WINDOW_TYPES_OR_ALL, WINDOW_TYPES_OR_FROM,
                  WINDOW_TYPES_OR_FIRST } window;
    int64_t default_window;  // sliding_window when config.json leaves it out (0: none)
    // Gemma (every generation): embeddings scaled by float32(sqrt(hidden_size)) and a GeGLU MLP
    // (tanh GELU). GEMMA1 stops there: Llama's pre-norm block, scores / sqrt(head_dim).
    // GEMMA2 (Gemma 2, Gemma 3): also the attention output and the MLP output RMSNormed
    // before the residual add (post_attention_layernorm / post_feedforward_layernorm, the
    // MLP's input norm then being pre_feedforward_layernorm); query_pre_attn_scalar,
    // attn_logit_softcapping and final_logit_softcapping read from config.json.
    enum Gemma { NOT_GEMMA, GEMMA1, GEMMA2 } gemma;
    bool gemma_block() const { return gemma == GEMMA2; }
    int64_t default_window_pattern;
    double default_attn_softcap;   // when config.json leaves the cap out (null: none)
    double default_final_softcap;
    // Gemma 3 (OLMo 3, LFM3, Mellum): the sliding layers rotate with their own RoPE base (rope_local_base_freq, or
    // rope_parameters.sliding_attention), the others with rope_theta and the rope scaling.
    bool local_rope;
    // Defaults for what config.json does not say (or when there is none).
    int64_t config_head_dim;             // config.json without head_dim (0: hidden_size / num_heads)
    int64_t default_head_dim;            // no config.json at all
    double default_eps_without_config;   // no config.json at all
    double default_eps_with_config;      // config.json without rms_norm_eps (transformers' default)
    double default_rope_theta;
    int64_t default_max_positions;
    // Mixture-of-experts MLP (Mixtral, Qwen2-MoE, Qwen3-MoE): null router = a dense MLP.
    // Names are layer-relative (layer_prefix + N + "." + name): the router ([num_experts, H]),
    // each expert's gate / up / down (expert_prefix + E + "." + expert_tensors[k]); Qwen2-MoE's
    // shared expert (shared_prefix + gate_proj / up_proj / down_proj) and its gate ([1, H],
    // sigmoid). Which layers are MoE: decoder_sparse_step and mlp_only_layers (config.json,
    // Qwen); the others have the dense tensors (T_GATE, T_UP, T_DOWN).
    const char* router;
    const char* expert_prefix;
    const char* expert_tensors[3];  // gate, up, down
    const char* shared_prefix;      // null: no shared expert
    const char* shared_gate;        // null: the shared expert's output is added as it is
    // true: the top-k routing weights are renormalized to sum to 1 when config.json's
    // norm_topk_prob is (Qwen); false: always (Mixtral).
    bool config_norm_topk;
    // SmolLM3: some layers attend without RoPE (config.json's no_rope_layers: 1 = rotate, 0 =
    // not; else every no_rope_layer_interval-th layer, default 4, is a NoPE layer); with
    // use_sliding_window and no layer_types, the NoPE layers slide.
    bool nope_layers;
    // 1, Granite: config.json's embedding_multiplier (embeddings), attention_multiplier (scores,
    // instead of 1/sqrt(head_dim)), residual_multiplier (each residual branch before its add)
    // and logits_scaling (logits divided by it); each 1 when left out (GraniteConfig).
    // 2, HyperCLOVA X: the same, but logits_scaling multiplies the logits, attention_multiplier
    // left out is 1/sqrt(head_dim) (HyperCLOVAXConfig), and use_post_norm (true when left out)
    // gives the block its sandwich norms (sandwich_norms: post_norm1 / post_norm2, each output
    // normed before its residual multiplier). 0: none.
    int multipliers;
    // OLMo 2: no norm before attention or the MLP; their outputs are RMSNormed before the
    // residual add (post_attention_layernorm, post_feedforward_layernorm: T_POST_*).
    bool post_norm_only;
    // GraniteMoE: the experts stacked in two 3-D tensors, expert_tensors[0] [E, 2·I, H] (gate
    // rows, then up rows, per expert) and expert_tensors[2] [E, H, I] (down), named
    // layer-relative without an expert prefix. With a shared_prefix (GraniteMoeShared), the
    // shared expert is shared_prefix + input_linear.weight [2·S, H] (gate rows, then up
    // rows) and output_linear.weight [H, S], added without a gate (shared_gate null).
    bool fused_experts;
    // OLMo 2, OLMoE: q and k RMSNormed over the whole projection (weights [NH·HD], [KV·HD]),
    // not per head (qk_norm must be set too).
    bool qk_norm_full;
    // gpt-oss: attention sinks (T_SINKS, one learned logit per query head that joins each
    // softmax's denominator; a row that names T_SINKS has them in every layer: GraniteSWA's
    // sigmoid(logsumexp - sink) rescaling is the same; Flint's self_attn.softmax_offset), the router's bias (router with
    // ".weight" -> ".bias"), experts
    // stacked as transformers holds them — expert_tensors[0] [E, H, 2·I] (x · W; gate and up
    // columns interleaved: 2j gate, 2j + 1 up) with "_bias" [E, 2·I], expert_tensors[2]
    // [E, I, H] with "_bias" [E, H] — or as the Hub's MXFP4 files hold them ("_blocks"
    // [E, rows, cols/32, 16] and "_scales" [E, rows, cols/32] of the untransposed weights), and
    // the clamped SwiGLU: (clamp(up, ±limit) + 1) · g · sigmoid(alpha · g), g = min(gate, limit)
    // (config.json's swiglu_limit, swiglu_alpha).
    bool gpt_oss;
    // Phi-1 / 1.5 / 2, GPT-J: one LayerNorm (with bias) before a parallel block, x + attn(h) +
    // mlp(h), h = LN(x); the MLP fc2(act(fc1 · h)) (T_GATE = fc1, T_DOWN = fc2, no up; biases
    // T_GATE_BIAS, T_DOWN_BIAS); the final norm's bias (final_norm with ".weight" -> ".bias")
    // and lm_head's (likewise). (The attention's biases: attn_bias — Phi's ALL_BIAS, GPT-J's none.)
    bool phi;
    // partial_rotary_factor when config.json leaves it out (0: 1, every dim rotates; Phi 0.5,
    // StableLM 0.25, as their config classes).
    double default_rotary_factor;
    // EXAONE 4: with a sliding window (sliding_window not null), the full-attention layers attend
    // without RoPE (NoPE), the sliding ones rotate.
    bool nope_global;
    // The fields below are left out of the rows that do not use them (false).
    // CONFIG_QKV_OUT_BIAS: q/k/v biases when config.json leaves attention_bias out (GLM,
    // Seed-OSS: true, as their config classes).
    bool bias_by_default;
    // GLM-4 (0414): the pre-norm block plus the attention and MLP outputs RMSNormed before
    // their residual adds (T_POST_ATTN_NORM = post_self_attn_layernorm, T_POST_MLP_NORM =
    // post_mlp_layernorm; T_MLP_NORM, the MLP's input norm, is its post_attention_layernorm).
    bool sandwich_norms;
    // Cohere: one norm before a parallel block, x + attn(h) + mlp(h) with h = norm(x), the MLP
    // gated as Llama's (Phi's parallel block has its own flag, with its ungated MLP and biases).
    bool parallel_block;
    // Cohere: LayerNorm (mean subtracted) with a weight and no bias (no ".bias" tensors, the
    // final norm's included).
    bool norm_without_bias;
    // Cohere: the logits times config.json's logit_scale (CohereConfig's default 0.0625).
    bool logit_scale;
    // Cohere 2, Flint: only the sliding layers rotate (a layer with no window — every layer when
    // sliding_window is null — attends without RoPE).
    bool rope_sliding_only;
    // Nemotron: LayerNorm1P, the LayerNorm's weight used as 1 + w (the loader stores 1 + w).
    bool norm_plus_one;
    // HunYuan dense: the per-head q/k RMSNorms after RoPE (query_layernorm, key_layernorm), and
    // rope type "dynamic" with an alpha as a fixed NTK base (RopeScaling::ntk_alpha).
    bool qk_norm_after_rope;
    bool ntk_alpha;
    // Seed-OSS: o_proj's bias has a field of its own in config.json (attention_out_bias), which
    // a refusal of unexpected bias tensors names.
    bool out_bias_field;
    // Apertus: config.json must state its RoPE (its config class fills in llama3 scaling when it
    // does not, which is not guessed here).
    bool rope_fields_required;
    // GPT-NeoX: the fused query_key_value's rows in groups, one per KV head — that group's
    // num_heads / num_kv_heads query heads, then its key head, then its value head (GPT-NeoX,
    // one KV head per query head: [q, k, v] per head); the loader puts them (and the fused
    // bias) in q|k|v order, as fused_qkv's packed qkv holds them.
    bool qkv_grouped;
    // GPT-NeoX: config.json's use_parallel_residual (true when left out) chooses the parallel
    // block with two norms, x + attn(LN1(x)) + mlp(LN2(x)) (T_ATTN_NORM, T_MLP_NORM: resolved
    // into LlamaConfig::parallel_two_norms), over the sequential one.
    bool parallel_residual_field;
    // GPT-NeoX: biases on the MLP's linears whatever config.json says.
    bool mlp_bias_always;
    // GPT-2 lineage (GPTBigCode): learned absolute positions, this [max_position_embeddings, H]
    // table's row `pos` added to each token's embedding, and no RoPE (every layer NoPE);
    // null: none. The context is then at most max_position_embeddings (n_positions).
    const char* pos_embed;
    // GPTBigCode: config.json's multi_query (true when left out) makes one KV head (its
    // c_attn: q rows, then k's, then v's); false: one per query head, c_attn's rows in per-head
    // [q, k, v] groups (qkv_grouped).
    bool multi_query_field;
    // GPT-2: its linears are Conv1D weights, stored [in, out] (x · W): transposed at load
    // (c_attn, c_proj, mlp.c_fc, mlp.c_proj); the shapes are checked as stored.
    bool conv1d_weights;
    // GPT-2: the Hub's own files name the base model's tensors without this prefix (wte.weight,
    // h.0.attn.c_attn.weight, ...); such a checkpoint's names get it, as transformers loads them.
    const char* bare_prefix;
    // GPT-NeoX, GPT-2: config.json's num_key_value_heads is not read (their config classes have
    // none): one KV head per query head, as transformers computes.
    bool kv_heads_are_heads;
    // GPT-J: config.json's rotary_dim (the rotated dims of each head, 64 when left out) instead
    // of a partial_rotary_factor.
    bool rotary_dim_field;
    // OPT: the learned positions' table starts this many rows before position 0 (its rows
    // pos + 2; the table has max_position_embeddings + 2 rows).
    int64_t pos_embed_offset;
    // Falcon: config.json chooses the block (new_decoder_architecture, parallel_attn,
    // num_ln_in_parallel_attn: sequential, parallel with one norm, parallel with two), and
    // the two-norm checkpoints name their norms ln_attn / ln_mlp: two rows, 1 for the layouts
    // named input_layernorm (/ post_attention_layernorm), 2 for ln_attn + ln_mlp; family_of
    // picks the one the config describes. 0: not Falcon.
    int falcon_norms;
    // ALiBi instead of RoPE (every layer NoPE; each head's slope times the key position added to
    // its scores): 1, Bloom's slopes (transformers' _get_alibi_slopes); 2, MPT's
    // (build_mpt_alibi_tensor, alibi_bias_max 8); 0: none. Bloom: a LayerNorm of the embeddings
    // (embed_norm, its ".bias") before the first block; null: none. "" (a family whose norms
    // have no weights, final_norm null: NanoChat): the embeddings RMSNormed without weights.
    int alibi;
    const char* embed_norm;
    // GPT-Neo: config.json's attention_types ([[["global", "local"], n], ...], expanded per layer;
    // required) choose each layer's window (window_size), and the MLP is intermediate_size wide
    // (null: 4 · hidden); scores are not scaled.
    bool attention_types;
    // GLM-4 MoE, dots1 (DeepSeek-V3's router): the router's sigmoid scores pick the experts
    // with its e_score_correction_bias added (router with "weight" -> "e_score_correction_bias",
    // [E] float32) within config.json's topk_group best of n_group groups; the picked scores,
    // renormalized when norm_topk_prob, times routed_scaling_factor, weight them. The first
    // first_k_dense_replace layers are dense; the others' shared experts (shared_prefix, no
    // gate) are n_shared_experts · moe_intermediate_size wide. Layers past num_hidden_layers
    // (num_nextn_predict_layers: the multi-token-prediction heads) are not loaded.
    // 0: not this router; else whose config class's defaults apply to what config.json leaves
    // out: 1 GLM-4 MoE's (first_k_dense_replace 1, norm_topk_prob true, n_shared_experts 1, one
    // MTP layer), 2 dots1's (0, false, none: the shared expert's rows say), 3 DeepSeek-V3's (3,
    // true, 1, one MTP layer; n_group 8, topk_group 4, routed_scaling_factor 2.5), 4 MiniMax-M2's
    // (no groups, no shared experts, the top weights always renormalized, no scaling), 5 EXAONE MoE's
    // (1, true, num_shared_experts 1, routed_scaling_factor 2.5; mlp_layer_types, when given, decide),
    // 6 GLM-4 MoE lite's (as GLM-4 MoE's with routed_scaling_factor 1.8; mlp_layer_types decide),
    // 7 LFM2-MoE's (the first num_dense_layers, default 2, dense; no groups, no shared experts;
    // norm_topk_prob true with the sum + 1e-6 instead of 1e-20; the correction bias only when
    // use_expert_bias, true when left out), 8 Solar Open's (GLM-4 MoE's router in every layer:
    // no first_k_dense_replace, no MTP layers), 9 AFMoE's (AfmoeTokenChoiceRouter: the first
    // num_dense_layers, default 1, dense; num_shared_experts, default 2, shared experts' width; no
    // groups (n_group / topk_group are not its fields); the top weights always renormalized, the
    // sum + 1e-20, times route_scale (1.0); the choice bias always there, on the MoE block. The
    // row's other AFMoE-only parts ride on this value too: global_attn_every_n_layers as the
    // window pattern, mup_enabled (embeddings times sqrt(hidden_size)), and an attention gate
    // with one logit per output dim (T_ATTN_GATE [num_heads · head_dim, H]), not per head),
    // 10 Sarvam-MoE's (GLM-4 MoE's with routed_scaling_factor 2.5 and no MTP layers), 11
    // Sarvam-MLA's (DeepSeek-V3's with n_group 1, topk_group 1, first_k_dense_replace 1, no MTP
    // layers; q_lora_rank null when left out), 12 Kolibri 1's (Kolibri1TopKRouter: experts in every
    // layer, the choice on the logit + the choice bias, the chosen sigmoid(logit) renormalized by
    // their plain sum when norm_topk_prob (default false), no scaling, no groups; shared experts
    // shared_expert_intermediate_size (512) wide; n_group, topk_group, routed_scaling_factor,
    // first_k_dense_replace and sliding_window_pattern are not its fields and are not read),
    // 13 HY-V3's (HYV3TopKRouter: AFMoE's router — no groups, the choice bias on the block, the
    // top weights always renormalized, the sum + 1e-20 — times router_scaling_factor (2.826);
    // dense layers by mlp_layer_types, else the first one; num_shared_experts (1) ungated shared
    // experts' width; one multi-token-prediction layer after the model's, not loaded),
    // 14 A.X-K1's (AXK1Config: DeepSeek-V3's router and defaults but first_k_dense_replace 1 and
    // no multi-token-prediction layer; mlp_layer_types, else layer l sparse when l >=
    // first_k_dense_replace and l % moe_layer_freq (1) == 0; the correction bias when the files
    // hold it (the released ones route without: transformers' zeros); the MoE block's output,
    // shared experts included, RMSNormed by the layer's post_mlp_layernorm (T_POST_MLP_NORM),
    // which the dense layers' files may hold unused).
    int sigmoid_router;
    // (its values by name, for the comparisons in config.cpp)
    enum : int {
        ROUTER_GLM4_MOE = 1,
        ROUTER_DOTS1 = 2,
        ROUTER_DEEPSEEK_V3 = 3,
        ROUTER_MINIMAX_M2 = 4,
        ROUTER_EXAONE_MOE = 5,
        ROUTER_GLM4_MOE_LITE = 6,
        ROUTER_LFM2_MOE = 7,
        ROUTER_SOLAR_OPEN = 8,
        ROUTER_AFMOE = 9,
        ROUTER_SARVAM_MOE = 10,
        ROUTER_SARVAM_MLA = 11,
        ROUTER_KOLIBRI1 = 12,
        ROUTER_HY_V3 = 13,
        ROUTER_AXK1 = 14,
    };
    // use_qk_norm (GLM-4 MoE): per-head RMSNorms of q and k before RoPE when true.
    bool qk_norm_field;
    // DeepSeek-V2 (2) / V3 (3): multi-head latent attention. q = q_proj · x, or q_b(RMSNorm(q_a ·
    // x)) (q_lora_rank), per head [nope | rope]; the latent [c | k_pe] = kv_a_proj_with_mqa · x,
    // c RMSNormed (kv_a_layernorm); kv_b_proj · c per head = [k_nope | v]; k_pe shared by the
    // heads; RoPE on q's and k_pe's rope dims over pairs (2i, 2i + 1) (V2 always, V3 when
    // rope_interleave), scores · (nope + rope)^-0.5 (· YaRN's mscale(factor, mscale_all_dim)²).
    // The engine computes it absorbed: the cache holds one KV head per layer, [rotated k_pe |
    // c] (LlamaConfig::mla_*), each query head's nope part goes through its W_uk (kv_b's k rows,
    // transposed) into the latent, and each head's output through its W_uv (kv_b's v rows).
    // Youtu-LLM: 3 (V3's attention and defaults) with no router, a dense MLP in every layer.
    // 5: MiniCPM3 — V2's attention (its defaults: q LoRA 768, latent 256 + 32, nope 64, v
    // hidden / heads) with rotate-half RoPE, no router.
    // 4: Mistral 4 — V3's attention (its defaults: q LoRA 1024, latent 256 + 64, nope 64), the router a
    // softmax choosing within the topk_group groups whose two best scores sum highest, the top
    // weights renormalized when norm_topk_prob (true) and times routed_scaling_factor.
    // The router: V3's sigmoid one (sigmoid_router 3); V2's softmax with topk_method
    // ("greedy", or "group_limited_greedy": groups scored by their best), routed_scaling_factor.
    int mla;
    // The sigmoid router's correction bias, layer-relative ([E] float32; GLM-4 MoE, dots1,
    // DeepSeek-V3: mlp.gate.e_score_correction_bias; MiniMax-M2: on the MoE block); null: none.
    const char* choice_bias;
    // MiniMax-M2: the rotated dims are config.json's rotary_dim (its released files' legacy
    // field), else head_dim · partial_rotary_factor, else every dim.
    bool rotary_dim_or_factor;
    // ERNIE 4.5 MoE: the MoE layers are those with (l + 1) % moe_layer_interval == 0 between
    // moe_layer_start_index and moe_layer_end_index (-1: the last); moe_num_shared_experts
    // ungated shared experts (shared_prefix) moe_intermediate_size wide each; the router's
    // softmax probabilities chosen by probability + choice_bias ([1, E]), the chosen ones
    // renormalized (their sum clamped below at moe_norm_min, 1e-12).
    bool moe_layer_range;
    // LFM2: the layers config.json's layer_types marks "conv" (else those not in full_attn_idxs;
    // with neither, every layer attends) replace the attention by a gated short convolution:
    // [B | C | x] = in_proj · h, y = C ⊙ conv_K(B ⊙ x) (depthwise, causal over the last
    // conv_L_cache positions, zeros before the first), out_proj · y. The cache keeps B ⊙ x per
    // position of such a layer (LlamaConfig::layer_conv). The MLP's width is
    // LFM2's block_ff_dim, auto-adjusted as its config class does (1); LFM2-MoE (2): its dense
    // MLPs intermediate_size wide as config.json says, its experts after num_dense_layers; LFM3
    // (3): as LFM2-MoE's dense MLPs, plus "sliding_attention" layers (sliding_window, default
    // 256; RoPE with rope_parameters.sliding_attention's base, the full layers with
    // rope_parameters.full_attention's), the sandwich norms (post_operator_norm, post_ffn_norm)
    // when use_sandwich_norm and the heads' output gate (T_ATTN_GATE) when use_attention_gate
    // (both true when left out), layer_types by default conv but for every 4th layer from 2
    // (full) and from 4 (sliding).
    int short_conv;
    // HunYuan MoE: config.json's num_experts, moe_topk (the experts per token), num_shared_expert
    // and moe_intermediate_size may each be one number or a list of one per layer
    // (HunYuanMoEV1Config's moe_topk; the others as llama.cpp's converter reads the released
    // config.json). The engine routes every layer alike: a list must hold one value for
    // every layer; and as transformers builds it, the experts and the one ungated shared MLP
    // (shared_prefix) are intermediate_size wide, so num_shared_expert must be 1 and
    // moe_intermediate_size intermediate_size (else refused naming the field). use_cla true
    // (cross-layer KV sharing), use_mixed_mlp_moe false (no shared MLP) and moe_layer_num_skipped
    // above 0 — released config.json fields transformers' model does not read, whose other
    // values describe a model it does not compute — are refused too.
    bool moe_per_layer_fields;
    // Ministral 3, Mistral 4: each query (after RoPE) times 1 + beta · log(1 + floor(pos / orig)),
    // beta and orig rope_parameters' llama_4_scaling_beta and original_max_position_embeddings
    // (both required: transformers' model reads them unguarded). 1 below orig positions.
    bool llama4_attn_scale;
    // MiniCPM3: embeddings times scale_emb (12 when left out), each residual branch times
    // scale_depth / sqrt(num_hidden_layers) (1.4; null: sqrt(layers)), the logits divided by
    // hidden_size / dim_model_base (256; null: hidden_size) — Granite's multipliers, by other names.
    bool minicpm_scales;
    // Jais2: config.json's mlp_bias true when left out (Jais2Config's default; its attention_bias
    // default is bias_by_default's).
    bool mlp_bias_by_default;
    // GraniteSWA: config.json's layer_rope_theta, one RoPE base per layer (its config class fills
    // in rope_theta for every layer when null): 0 makes that layer attend without RoPE
    // (layer_nope); the other layers rotate with the one base they share (with rope_parameters'
    // scaling, as its rotary embeddings keep it), which replaces rope_theta. Two different
    // nonzero bases are refused naming the field (the engine rotates them with one table).
    bool layer_rope_theta;
    // PhiMoE: the router is transformers' sparsemixer in inference mode, not a softmax top k.
    // With s the router's logits (float32) and eps config.json's router_jitter_noise (0.01 when
    // left out): the first expert is argmax s, its weight the softmax of s over the experts i
    // with (max s - s_i) / max(|s_i|, max s) <= 2 · eps (the others masked to -inf); the second
    // is the argmax of s with the first masked, its weight the softmax of that masked s over the
    // experts within 2 · eps of its own maximum by the same rule. Always two experts
    // (num_experts_per_tok must be 2), the weights not renormalized. The rotary embedding's
    // cos / sin scale is rope_parameters' short_mscale, or long_mscale past
    // original_max_position_embeddings (RopeScaling::attention_factor_long).
    bool sparsemixer;
    // Cohere 2 MoE: Cohere 2's block (a row with parallel_block, rope_sliding_only) with experts
    // intermediate_size wide: the router (mlp.gate) takes the top num_experts_per_tok logits and
    // weights them by their softmax (expert_selection_fn "softmax", the default) or by their
    // sigmoids, renormalized when norm_topk_prob (true) ("sigmoid"; no correction bias, no
    // scaling); num_shared_experts (0) ungated shared experts, intermediate_size ·
    // num_shared_experts wide, added to the routed sum ("sum") or averaged with it ("average",
    // the default: (routed + shared) / 2; shared_expert_combination_strategy). Dense layers by
    // mlp_layer_types, else the first first_k_dense_replace (0), prefix_dense_intermediate_size
    // wide (null: intermediate_size); every dense layer rotates when
    // prefix_dense_sliding_window_pattern is 1 (the default: force_rope), and the default
    // layer_types count that pattern over the dense prefix and sliding_window_pattern (4) over
    // the rest. rms_norm_eps not null (RMSNorms instead of the LayerNorms) is refused.
    bool cohere_moe;
};

// The expert tensors of MoE layer `layer` (config c resolved), in load order: router,
// experts' gate / up / down, then the shared expert's gate / up / down and its gate; shapes
// [rows, cols] ([1, H] for the shared gate). gpt-oss: router, its bias, gate_up (or its
// blocks and scales), its bias, down (or its blocks and scales), its bias.
struct MoeTensor {
    std::string name;
    std::vector<int64_t> dims;  // its shape: [rows, cols]; [experts, rows, cols] for stacked experts
    bool matrix;  // packed as a linear (the router and the shared gate stay float32)
    bool u8 = false;  // MXFP4 blocks or scales (gpt-oss): U8, not float
    const std::vector<int64_t>& shape() const { return dims; }
};
std::vector<MoeTensor> moe_layer_tensors(const LlamaConfig& c, int64_t layer);

// GraniteMoeShared's shared expert: one input_linear ([2·S, H], gate rows then up rows) and
// output_linear beside stacked experts. (Mistral 4's and Sarvam-MoE's stacked experts keep
// per-tensor shared ones.)
inline bool granite_shared(const ModelFamily& f) { return f.fused_experts && f.shared_prefix && !f.mla && !f.sigmoid_router; }

// Whether the family's MLP is act(gate) alone, not act(gate) · up (Phi's fc1, Starcoder2's c_fc,
// Arcee's up_proj).
inline bool ungated_mlp(const ModelFamily& f) { return !f.layer_tensors[T_UP] && !f.fused_gate_up && !f.router; }

// Falcon: whether config c describes the block with two parallel norms (ln_attn, ln_mlp).
bool falcon_two_norms(const LlamaConfig& c);

// The family a config declares (architectures / model_type; a config that says nothing is
// taken as Llama), or nullptr when no row of the table matches. A model type that transformers
// >= 5 runs (and saves) under another family's architecture — EXAONE 3, IQuest-Coder, InternLM3
// as LlamaForCausalLM, Sarvam-MoE as Glm4MoeForCausalLM, Sarvam-MLA as DeepseekV3ForCausalLM —
// matches its own row under that architecture too.
const ModelFamily* family_of(const LlamaConfig& c);

// The row of f's family under other tensor names, which a checkpoint whose files hold them loads
// with (Sarvam-MoE: transformers' own names after the Hub's), or nullptr.
const ModelFamily* alternate_layout(const ModelFamily& f);

// Whether f's model_type is one of types: for the few config.json rules of one config class
// that no row field says (EXAONE's and InternLM3's field names, OLMo's clip_qkv, ...).
bool is_model_type(const ModelFamily& f, std::initializer_list<const char*> types);

// Why a config whose family_of() is null cannot be loaded, in one clause naming the
// architecture and what it would need ("Gemma3ForCausalLM (model_type gemma3_text) is not supported
// yet: it needs ..."), listing the supported architectures.
std::string unsupported_family_reason(const LlamaConfig& c);

// The Llama row (a config that names no family).
const ModelFamily& llama_family();

// Whether `rest` (a layer tensor's name after layer_prefix + N + ".") is one of the family's
// ignored_layer_tensor names.
bool is_ignored_layer_tensor(const ModelFamily& f, const std::string& rest);

// layer_prefix + layer + "." + layer_tensors[which].
std::string layer_tensor_name(const ModelFamily& f, int64_t layer, LayerTensor which);

// Whether layer `layer` of a checkpoint of config c (its features resolved) has layer tensor
// `which` (an MoE layer has no dense gate / up / down).
bool layer_tensor_expected(const LlamaConfig& c, LayerTensor which, int64_t layer);

// The variant features of a resolved config, for vt_model_info and messages:
// "qkv-bias, qk-norm, sliding-window 4096 (layers 2..3)"; "" for a plain Llama.
std::string feature_list(const LlamaConfig& c);

}  // namespace vt

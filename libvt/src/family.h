// Model families: one description per family — tensor names, norms, activation, biases, RoPE
// variant, the defaults of what config.json may leave out — in one table (family.cpp), read by
// the loader (model.cpp, config.cpp) instead of literals and conditionals spread through them.
// Llama is the only family today; Mistral, Qwen2/3, Phi-3 and Gemma are to be rows of the
// table (and the fields they need: biases, norm variants, activations), with the forward
// passes (cpu/engine.cpp, cuda/engine.cpp) reading the same description.
#pragma once

#include <cstdint>
#include <string>

namespace vt {

struct LlamaConfig;

// The per-layer tensors of a block, in the order of ModelFamily::layer_tensors.
enum LayerTensor { T_Q, T_K, T_V, T_O, T_GATE, T_UP, T_DOWN, T_ATTN_NORM, T_MLP_NORM, T_COUNT };

struct ModelFamily {
    const char* name;          // for messages: "Llama"
    const char* architecture;  // config.json "architectures" entry (compared case-insensitively)
    const char* model_type;    // config.json "model_type"
    // Tensor names. Layer tensors are layer_prefix + N + "." + layer_tensors[k].
    const char* embed;
    const char* final_norm;
    const char* lm_head;  // absent or ignored when the embeddings are tied
    const char* layer_prefix;
    const char* layer_tensors[T_COUNT];
    const char* ignored_layer_tensor;  // stored by old conversions, recomputed: not "unexpected"
    // The block.
    const char* activation;  // config.json hidden_act this family's MLP computes: act(gate) · up
    enum Norm { RMS_NORM } norm;         // x · rsqrt(mean(x²) + eps) · w
    enum Rope { ROTATE_HALF } rope;      // pairs (i, i + head_dim/2), transformers' rotate_half
    bool qkv_bias;                       // q/k/v projections carry biases
    // Defaults for what config.json does not say (or when there is none).
    int64_t default_head_dim;
    double default_eps_without_config;   // no config.json at all
    double default_eps_with_config;      // config.json without rms_norm_eps (transformers' default)
    double default_rope_theta;
    int64_t default_max_positions;
};

// The family a config declares (architectures / model_type; a config that says nothing is
// taken as Llama), or nullptr when no row of the table matches.
const ModelFamily* family_of(const LlamaConfig& c);

// The Llama row (the loader's family until the table has more rows).
const ModelFamily& llama_family();

// layer_prefix + layer + "." + layer_tensors[which].
std::string layer_tensor_name(const ModelFamily& f, int64_t layer, LayerTensor which);

}  // namespace vt

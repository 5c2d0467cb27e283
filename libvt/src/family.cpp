#include "family.h"

#include <cctype>

#include "config.h"

namespace vt {
namespace {

const ModelFamily kFamilies[] = {
    {
        "Llama", "LlamaForCausalLM", "llama",
        "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
        {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
         "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
         "input_layernorm.weight", "post_attention_layernorm.weight"},
        "self_attn.rotary_emb.inv_freq",
        "silu", ModelFamily::RMS_NORM, ModelFamily::ROTATE_HALF, /*qkv_bias=*/false,
        /*head_dim=*/64, /*eps without config=*/1e-5, /*eps with config=*/1e-6, /*rope_theta=*/10000.0,
        /*max positions=*/2048,
    },
};

std::string lower(std::string s) {
    for (char& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    return s;
}

}  // namespace

const ModelFamily& llama_family() { return kFamilies[0]; }

const ModelFamily* family_of(const LlamaConfig& c) {
    for (const ModelFamily& f : kFamilies) {
        if (!c.model_type.empty() && lower(c.model_type) != f.model_type) continue;
        if (c.architectures.empty()) return &f;
        for (const auto& a : c.architectures)
            if (lower(a) == lower(f.architecture)) return &f;
    }
    return nullptr;
}

std::string layer_tensor_name(const ModelFamily& f, int64_t layer, LayerTensor which) {
    return f.layer_prefix + std::to_string(layer) + "." + f.layer_tensors[which];
}

}  // namespace vt

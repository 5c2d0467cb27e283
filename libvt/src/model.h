// vt_model: a loaded Llama-family checkpoint, immutable after vt_model_load, shared by any
// number of sessions on any number of threads.
//
// Names below: H = hidden_size, I = intermediate_size, V = vocab_size, NH = num_heads,
// KV = num_kv_heads, HD = head_dim, QKV = (NH + 2·KV)·HD.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common.h"
#include "config.h"
#include "cuda/backend.h"
#include "quant.h"

namespace vt {

struct LayerWeights {
    AlignedVec<float> attn_norm;  // [H]  input_layernorm
    AlignedVec<float> mlp_norm;   // [H]  post_attention_layernorm
    std::unique_ptr<Packed> qkv;  // [QKV, H]   rows: q_proj | k_proj | v_proj
    std::unique_ptr<Packed> o;    // [H, NH·HD] o_proj
    std::unique_ptr<Packed> gate; // [I, H]     gate_proj
    std::unique_ptr<Packed> up;   // [I, H]     up_proj
    std::unique_ptr<Packed> down; // [H, I]     down_proj
};

}  // namespace vt

struct vt_model {
    vt::LlamaConfig cfg;      // every field resolved (no -1 left), num_layers = loaded blocks
    int64_t file_layers = 0;  // blocks in the checkpoint
    vt_format format = VT_FORMAT_INT8_BLOCKED;
    int32_t block_size = 0;   // of the layer linears; 0 for per-channel / bf16
    int32_t device = VT_DEVICE_CPU;  // where sessions run: CPU, or CUDA (then `cuda` is set)
    int32_t device_index = 0;
    int64_t max_seq_len = 0;  // KV capacity limit of a session

    vt_dtype embed_dtype = VT_DTYPE_BF16;  // as stored: F32, F16 or BF16
    vt::RawBuf<uint8_t> embed;             // [V, H] of embed_dtype
    std::vector<vt::LayerWeights> layers;  // [num_layers]
    vt::AlignedVec<float> final_norm;      // [H]
    std::unique_ptr<vt::Packed> lm_head;   // [V, H] (from the embedding table when tied)
    // (On a CUDA model the packed linears above are freed after upload: null.)
    std::vector<float> inv_freq;           // [HD/2] RoPE inverse frequencies (scaling applied)

    int64_t weight_bytes = 0;  // read per decoded token
    int64_t total_bytes = 0;   // held in host memory

    // Embedding row of `token` as f32 -> out[H].
    void embed_row(int32_t token, float* out) const;

    // The device copy when device == CUDA (cuda/backend.h). Declared last: it reads the
    // fields above, so it is destroyed first.
    vt::CudaModelPtr cuda;
};

namespace vt {

std::unique_ptr<vt_model> load_model(const char* path, const vt_model_options& opt);

void get_model_info(const vt_model& m, vt_model_info* info);

}  // namespace vt

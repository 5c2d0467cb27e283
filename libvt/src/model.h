// vt_model: a loaded Llama-family checkpoint, immutable after vt_model_load, shared by any
// number of sessions on any number of threads: its weights (weights.h) and the backend its
// sessions run on (backend.h), chosen once at load.
#pragma once

#include <cstdint>
#include <memory>

#include "backend.h"
#include "weights.h"

struct vt_model : vt::ModelWeights {
    int64_t file_layers = 0;  // blocks in the checkpoint
    vt_format format = VT_FORMAT_INT8_BLOCKED;
    int32_t block_size = 0;   // of the layer linears; 0 for per-channel / bf16
    int32_t device = VT_DEVICE_CPU;  // where sessions run: CPU or CUDA
    int32_t device_index = 0;
    int64_t max_seq_len = 0;  // KV capacity limit of a session
    int32_t kv_cache_dtype = VT_DTYPE_F16;  // of the sessions' KV cache: F16 or F32 (CUDA: always F32)

    int64_t weight_bytes = 0;  // read per decoded token
    int64_t total_bytes = 0;   // held in host memory

    // The backend sessions run on (cpu_backend or cuda_backend). Declared last: the CPU
    // backend reads the weights above, so it is destroyed first.
    std::unique_ptr<vt::BackendModel> backend;
};

namespace vt {

std::unique_ptr<vt_model> load_model(const char* path, const vt_model_options& opt);

void get_model_info(const vt_model& m, vt_model_info* info);

}  // namespace vt

// The device KV cache's layout (CudaSession's, one allocation per session), shared by the
// kernels, the engine and the host checks (cuda/host_check.cpp compiles it without CUDA).
#pragma once

#include <cstdint>

#include "cuda/device_math.h"

namespace vt {
namespace cudak {

// One row's KV cache in a batched decode step (CudaModel::decode_batch): its session's whole
// cache, K^T [layers][nkv][hd][cap] then V [layers][nkv][cap][hd] (CudaSession's layout),
// elements of eb bytes; an int8 cache (eb 1) then its f32 scales (kv_i8.h): per layer, KV
// head and position the key's and the value's, [layers][nkv][cap][2] (one 8-byte load).
struct KvRow {
    void* kv = nullptr;
    int64_t cap = 0;
};
// Layer l's K and V of a cache laid out so.
VT_HD char* kv_layer_k(void* kv, int64_t cap, int l, int nkv, int hd, int eb) {
    return static_cast<char*>(kv) + int64_t(l) * nkv * hd * cap * eb;
}
VT_HD char* kv_layer_v(void* kv, int64_t cap, int l, int layers, int nkv, int hd, int eb) {
    return static_cast<char*>(kv) + (int64_t(layers) * nkv * hd * cap + int64_t(l) * nkv * cap * hd) * eb;
}
// An int8 cache's scales of layer l: [nkv][cap][2] (key, value).
VT_HD float* kv_layer_scales(void* kv, int64_t cap, int l, int layers, int nkv, int hd) {
    return reinterpret_cast<float*>(static_cast<char*>(kv) + 2 * int64_t(layers) * nkv * hd * cap) +
           2 * int64_t(l) * nkv * cap;
}
// Bytes of such a cache of `cap` positions (eb 1: the int8 cache with its scales).
VT_HD int64_t kv_cache_bytes(int64_t cap, int layers, int nkv, int hd, int eb) {
    return 2 * int64_t(layers) * nkv * cap * (int64_t(hd) * eb + (eb == 1 ? 4 : 0));
}

}  // namespace cudak
}  // namespace vt

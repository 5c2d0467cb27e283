// RMSNorm, the CPU implementation (the reference the CUDA kernel is tested against).
#pragma once

#include <cstdint>

namespace vt {
namespace ops {

// x[i] += d[i] (when d is not null), then out = x · rsqrt(mean(x²) + eps) · w — the residual
// add fused with the next RMSNorm. x, d, w, out: [n]; out must not alias x.
void add_rmsnorm(float* x, const float* d, const float* w, float eps, int64_t n, float* out);

// RMSNorm of each of `heads` vectors of length hd in place, with the same weights w[hd]
// (Qwen3's q_norm / k_norm, applied per head before RoPE).
void rmsnorm_heads(float* x, int64_t heads, int64_t hd, const float* w, float eps);

}  // namespace ops
}  // namespace vt

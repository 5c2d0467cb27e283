// SwiGLU's activation, the CPU implementation. The dense linears fuse it into their epilogue
// (cpu/kernels_*.cpp, linear_swiglu); the sparse path and the generic kernel call these.
#pragma once

#include <cstdint>

namespace vt {
namespace ops {

// silu(x) = x / (1 + e^-x), computed in double and rounded once.
float silu(float x);

// y[i] = silu(g[i]) · u[i], i < n. y may alias g or u.
void swiglu(const float* g, const float* u, int64_t n, float* y);

}  // namespace ops
}  // namespace vt

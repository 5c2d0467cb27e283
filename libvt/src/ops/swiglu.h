// SwiGLU's activation, the CPU implementation. The dense linears fuse it into their epilogue
// (cpu/kernels_*.cpp, linear_swiglu); the sparse path and the generic kernel call these.
#pragma once

#include <cstdint>

namespace vt {
namespace ops {

// silu(x) = x / (1 + e^-x), computed in double and rounded once.
float silu(float x);

// GELU with tanh's approximation (as geglu_tanh below, the same operations as its lanes).
float gelu_tanh(float x);

// y[i] = silu(g[i]) · u[i], i < n. y may alias g or u.
void swiglu(const float* g, const float* u, int64_t n, float* y);

// y[i] = gelu_tanh(g[i]) · u[i], i < n, with PyTorch's tanh-approximated GELU
// (gelu_pytorch_tanh: 0.5·x·(1 + tanh(sqrt(2/π)·(x + 0.044715·x³))), in float as PyTorch).
// GeGLU of Gemma 2. y may alias g or u.
void geglu_tanh(const float* g, const float* u, int64_t n, float* y);

// x[i] = cap · tanh(x[i] / cap), i < n: Gemma 2's soft-capping of attention scores and final
// logits, in float as transformers computes it (tanh within a few ulps; ops/exp_nonpos.h).
void softcap(float* x, int64_t n, float cap);

}  // namespace ops
}  // namespace vt

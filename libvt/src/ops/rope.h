// RoPE, the CPU implementation: the inverse frequencies (with rope scaling), the cos | sin
// table of a position, and the rotation. The CUDA backend uses the first two as they are
// and its QKV epilogue rotates as rope() does.
#pragma once

#include <cstdint>
#include <vector>

#include "config.h"

namespace vt {
namespace ops {

// RoPE inverse frequencies [head_dim / 2] exactly as transformers computes them in float32
// (default, linear and llama3 rope types).
std::vector<float> rope_inv_freq(const LlamaConfig& c);

// cs = cos[hd/2] | sin[hd/2] of the angles pos · inv_freq[k] (double, then rounded to float).
void rope_angles(const float* inv_freq, int64_t pos, int64_t hd, float* cs);

// Rotates `heads` vectors of length hd in place (transformers' rotate_half convention: pairs
// (i, i + hd/2)) and multiplies them by `scale`. x: [heads, hd]; cs: rope_angles' table.
void rope(float* x, int64_t heads, int64_t hd, const float* cs, float scale);

}  // namespace ops
}  // namespace vt

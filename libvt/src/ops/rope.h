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
// (default, linear, llama3, yarn, longrope and dynamic rope types; for longrope the short factors',
// which transformers uses while the sequence is within original_max_position_embeddings).
std::vector<float> rope_inv_freq(const LlamaConfig& c);

// Dynamic NTK (rope type dynamic) for a pass whose sequence reaches seq_len >
// max_position_embeddings positions: the default type's frequencies of
// base' = base · ((factor · seq_len / max_position_embeddings) − (factor − 1))^(d / (d − 2)),
// base' in float32 steps as transformers' dynamic_rope_update computes it (seq_len a tensor).
// (rope_inv_freq gives a DYNAMIC config's frequencies below it: base' at max_position_embeddings,
// in double, as transformers' __init__ computes them.)
std::vector<float> rope_inv_freq_dynamic(const LlamaConfig& c, int64_t seq_len);

// LongRoPE's long-factor frequencies (a sequence past original_max_position_embeddings);
// empty for every other rope type.
std::vector<float> rope_inv_freq_long(const LlamaConfig& c);

// The factor transformers multiplies cos and sin by (yarn, longrope: attention_factor, as
// resolved in config.cpp), as a float32; 1 for the other types.
float rope_attention_scale(const LlamaConfig& c);

// cs = cos[hd/2] | sin[hd/2] of the angles pos · inv_freq[k] (double, then rounded to float),
// each then multiplied by `scale` in float32 when it is not 1.
void rope_angles(const float* inv_freq, int64_t pos, int64_t hd, float* cs, float scale = 1.0f);

// Rotates `heads` vectors of length hd in place (transformers' rotate_half convention: pairs
// (i, i + rot/2) of the first rot dims, rot = hd unless given: partial rotary embeddings leave
// the others unrotated) and multiplies them by `scale`. x: [heads, hd]; cs: rope_angles'
// table of rot dims.
void rope(float* x, int64_t heads, int64_t hd, const float* cs, float scale, int64_t rot = 0);

}  // namespace ops
}  // namespace vt

// vt_session: one sequence's KV cache and preallocated scratch, and the forward passes over
// it: prefill (a batch of tokens, matrix-matrix work) and decode (one token, one call).
//
// Names as in model.h; P = positions the session may hold, R = scratch rows.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "common.h"
#include "model.h"
#include "sampling.h"

namespace vt {
struct FreeDeleter {
    void operator()(float* p) const { std::free(p); }
};
// 64-byte aligned, uninitialized (a std::vector would zero-fill the whole KV cache).
using FloatArray = std::unique_ptr<float[], FreeDeleter>;
}  // namespace vt

struct vt_session {
    const vt_model* model = nullptr;
    int64_t max_tokens = 0;  // P: capacity limit (<= model->max_seq_len)
    int64_t len = 0;         // positions cached
    uint64_t step = 0;       // tokens chosen so far: the sampling step of the next one

    // KV cache, grown geometrically up to max_tokens (never per token). Keys are stored
    // transposed so the scores q·K of one query vectorize over positions.
    // Not zero-filled: only positions < len are ever read.
    int64_t kv_cap = 0;          // positions allocated
    vt::FloatArray kt;           // [L, KV, HD, kv_cap]  keys (after RoPE), transposed
    vt::FloatArray v;            // [L, KV, kv_cap, HD]  values

    // Scratch for up to `rows` tokens per pass (prefill runs in chunks of at most kChunk).
    int64_t rows = 0;
    vt::AlignedVec<float> x;      // [R, H]      residual stream
    vt::AlignedVec<float> xn;     // [R, H]      normed input of a linear
    vt::AlignedVec<float> qkv;    // [R, QKV]    q | k | v of each token
    vt::AlignedVec<float> att;    // [R, NH·HD]  attention output
    vt::AlignedVec<float> mlp;    // [R, I]      silu(gate) ⊙ up
    vt::AlignedVec<float> tmp;    // [R, H]      o_proj / down_proj output
    vt::AlignedVec<float> rope;   // [R, HD]     cos | sin of each token's position
    vt::AlignedVec<float> logits; // [V]         last row's logits when the caller gives none
    vt::AlignedVec<float> part;   // decode attention's per-split partial results (per row)

    // Penalty state (both backends): tokens seen and chosen since the last reset, and the
    // chooser's copy of the logits the penalties are applied to (the caller's stay raw).
    vt::TokenHistory history;
    std::vector<float> plogits;   // [V]

    // Device state when the model runs on CUDA; then the CPU buffers above stay empty and
    // prefill / decode go to cuda_prefill / cuda_decode (len and step are still kept here).
    vt::CudaSessionPtr cuda;
};

namespace vt {

constexpr int64_t kPrefillChunk = 256;  // tokens per batched pass (bounds scratch memory)
constexpr int64_t kMaxHeadDim = 512;

std::unique_ptr<vt_session> new_session(const vt_model& m, int64_t max_tokens);
void reset_session(vt_session& s);

// See vt_session_prefill / vt_session_decode in vt.h. Validates everything before changing
// the session; on error nothing is appended.
void prefill(vt_session& s, const int32_t* tokens, int64_t n, const vt_sample_options* sampling,
             int32_t* next_token, float* logits, vt_logits_mode mode);
void decode(vt_session& s, int32_t token, const vt_sample_options* sampling, int32_t* next_token,
            float* logits);
// See vt_session_decode_batch.
void decode_batch(vt_session* const* sessions, int64_t n, const int32_t* tokens, const vt_sample_options* sampling,
                  int32_t* next_tokens, float* logits);

// The next token from one row of raw logits[V]: the session's penalties (on a copy), then
// argmax (sampling NULL or temperature 0) or vt_sample at the session's step; records the
// choice in the history and advances the step. Shared by the CPU and CUDA paths.
int32_t choose_token(vt_session& s, const float* logits, const vt_sample_options* sampling);
// Records a token chosen elsewhere (the CUDA device's argmax / candidates) and advances the step.
void note_choice(vt_session& s, int32_t token);

}  // namespace vt

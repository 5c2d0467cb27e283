// The session layer: vt_session (one sequence: its length, sampling step and token history,
// over a backend session that holds the KV cache) and the entry points of vt.h's session API.
// Everything is validated here, once, before any backend runs; the backends (backend.h) only
// run tokens. The next token is chosen here, by one chooser, whatever the backend.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend.h"
#include "common.h"
#include "model.h"
#include "sampling.h"

struct vt_session {
    const vt_model* model = nullptr;
    const vt::BackendModel* backend_model = nullptr;  // the model's backend (tests may give another)
    int64_t max_tokens = 0;  // P: capacity limit (<= model->max_seq_len)
    int64_t len = 0;         // positions cached
    uint64_t step = 0;       // tokens chosen so far: the sampling step of the next one
    std::vector<int32_t> ids;  // the cached positions' token ids [len] (vt_session_copy_prefix)

    // Penalty state: tokens seen and chosen since the last reset, and the chooser's copy of
    // the logits the penalties are applied to (the caller's stay raw).
    vt::TokenHistory history;
    std::vector<float> plogits;   // [V]
    vt::AlignedVec<float> logits; // [V] (batched: [n, V]) logits when the caller gives none
    vt::Picked picked;            // a choice the device made

    std::unique_ptr<vt::BackendSession> backend;  // KV cache and scratch
};

namespace vt {

// A session of model m on its backend (or on `backend`, a backend made for m: vt_cuda_test
// runs one CPU-loaded model on both).
std::unique_ptr<vt_session> new_session(const vt_model& m, int64_t max_tokens,
                                        const BackendModel* backend = nullptr);
void reset_session(vt_session& s);
// See vt_session_copy_prefix.
void copy_prefix(vt_session& dst, const vt_session& src, int64_t n);

// See vt_session_prefill / vt_session_decode in vt.h. Validates everything before changing
// the session; on error nothing is appended.
void prefill(vt_session& s, const int32_t* tokens, int64_t n, const vt_sample_options* sampling,
             int32_t* next_token, float* logits, vt_logits_mode mode);
void decode(vt_session& s, int32_t token, const vt_sample_options* sampling, int32_t* next_token,
            float* logits);
// See vt_session_truncate / vt_session_verify.
void truncate(vt_session& s, int64_t n);
int64_t verify(vt_session& s, const int32_t* tokens, int64_t n, const vt_sample_options* sampling,
               int32_t* out_tokens);
// See vt_session_decode_batch.
void decode_batch(vt_session* const* sessions, int64_t n, const int32_t* tokens, const vt_sample_options* sampling,
                  int32_t* next_tokens, float* logits);

}  // namespace vt

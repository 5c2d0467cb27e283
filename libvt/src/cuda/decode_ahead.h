// Device-side token feedback for decoding (docs/cuda.md, "Decode: one CUDA Graph per token"):
// the rules by which a CUDA session launches the next position's decode step before the host
// has read this step's token. Plain C++ (no CUDA header) so that
// tests/test_cuda_host.py checks them on any machine (host_check.cpp).
//
// A decode call whose token the device chooses and that wants no logits (Pick::Argmax or
// Pick::Draw, Logits::None) at position p enqueues its step (graph slot p & 1), then at once
// the step for p + 1 (slot (p + 1) & 1), whose embedding reads its input token from the key of
// the token step p chose (argmax or draw.h's draw), left in device memory, then waits for
// step p alone. While the host returns the token and the caller decides what to do with it
// (stop strings, detokenizing, Python), the GPU already runs step p + 1. The next call uses
// that step when it asks for exactly what was launched (ahead_matches); anything else waits
// for it and runs its own step at the same position, whose keys and values overwrite the ones
// the discarded step wrote (attention reads positions <= the step's own only, so nothing reads
// them before). Two slots because step p + 1's inputs (pinned step parameters, argmax key,
// result buffers) must not be those step p is still using.
#pragma once

#include <cstdint>
#include <cstring>

#include "cuda/draw.h"

namespace vt {
namespace cudak {

constexpr int kStepRopeFloats = 256;  // = kMaxHeadDim (kernels.h; engine.cpp asserts it)

// Inputs of one decode step: pinned on the host, copied by the graph's first node.
struct StepParams {
    int32_t token;     // the input token, unless feedback
    int32_t pos;
    int32_t feedback;  // 1: the input token is the other slot's argmax key (the previous step's choice)
    int32_t pad;
    DrawArgs draw;     // a step that draws its token on the device: the options and sampling step (else zero)
    float rope[kStepRopeFloats];        // cos[hd/2] | sin[hd/2]
    float rope_local[kStepRopeFloats];  // the same with the local RoPE base (Gemma 3)
};

// The step a session launched ahead of the host, if any.
struct AheadStep {
    bool in_flight = false;  // launched, neither used nor settled yet
    int64_t pos = -1;        // its position
    int32_t token = -1;      // the token the device fed it, once the host has read the previous step's choice; -1 before
};

// The slot (pinned parameters, device parameters, argmax key, result buffers, graphs) of the
// step at position pos.
inline int step_slot(int64_t pos) { return int(pos & 1); }

// Whether a decode call at position pos may launch the step of pos + 1 before it returns:
// feedback on (VT_CUDA_FEEDBACK), a call whose token the device chooses and that wants no
// logits (device_chooses: greedy, or drawn on the device; the next call of the same kind feeds
// back that choice), and room for position pos + 1 in the KV cache as allocated now
// (cap: the cache never grows under a step in flight; cap <= the session's max_tokens).
inline bool may_run_ahead(bool feedback_on, bool device_chooses, int64_t pos, int64_t cap) {
    return feedback_on && device_chooses && pos >= 0 && pos + 1 < cap;
}

// Whether the step launched ahead is the one a call asks for: a call choosing on the device
// without logits, at the step's position, with the token the device fed it, the same RoPE
// inputs (LongRoPE's tables depend on the sequence length the session layer gives) and the
// same draw (options and sampling step; all zero for greedy). `launched` holds the inputs
// the step was launched with, `want` those this call would use (both zero-filled before they
// were written, so the unused floats compare equal).
inline bool ahead_matches(const AheadStep& a, const StepParams& launched, const StepParams& want,
                          bool device_chooses) {
    if (!a.in_flight || !device_chooses || a.token < 0) return false;
    if (a.pos != want.pos || launched.pos != want.pos || a.token != want.token || launched.feedback != 1) return false;
    return std::memcmp(&launched.draw, &want.draw, sizeof want.draw) == 0 &&
           std::memcmp(launched.rope, want.rope, sizeof want.rope) == 0 &&
           std::memcmp(launched.rope_local, want.rope_local, sizeof want.rope_local) == 0;
}

}  // namespace cudak
}  // namespace vt

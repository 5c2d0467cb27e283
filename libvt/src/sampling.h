// argmax, softmax and the seeded sampler (see vt.h for the exact algorithm).
#pragma once

#include <cstdint>
#include <vector>

#include "vt/vt.h"

namespace vt {

int64_t argmax(const float* x, int64_t n);
void softmax(const float* x, int64_t n, float* y);
double uniform(uint64_t seed, uint64_t step);
// Validates options (throws vt::Error naming the field and value).
void check_sample_options(const vt_sample_options& o);

// The one token chooser, in two halves. select_candidates: what a draw with options o can
// pick from logits[n] (vt.h's vt_sample steps 1-4: top-k, temperature softmax in f64, min-p,
// top-p), in rank order with their renormalized-to-be probabilities; temperature > 0. draw:
// step 5, the seeded inverse-CDF draw (0 when there are no candidates: all NaN).
struct Candidates {
    std::vector<int64_t> ids;  // best first
    std::vector<double> p;     // [ids.size()], not yet renormalized after top-p
};
Candidates select_candidates(const float* logits, int64_t n, const vt_sample_options& o);
int64_t draw(const Candidates& c, uint64_t seed, uint64_t step);
// vt_sample: argmax when temperature is 0, else draw(select_candidates(...)).
int64_t sample(const float* logits, int64_t n, const vt_sample_options& o, uint64_t step);

// vt_logits_process (vt.h): the processed row, from a token history given as arrays.
void process_logits(const float* logits, int64_t n, const vt_sample_options& o, const int32_t* inputs,
                    int64_t n_inputs, const int32_t* chosen, int64_t n_chosen, int flags, float* out);
// Every token with (x - max x) / temperature < ln(min_p) set to -inf (f64 arithmetic; a NaN
// anywhere makes the max NaN and cuts nothing, as numpy); only when temperature and min_p > 0.
void min_p_mask(const vt_sample_options& o, int64_t n, float* x);

// ---- Penalties (applied by sessions, which know the history) ----------------------------

// What a session has seen (inputs and choices) and chosen since its last reset. Updates
// are O(tokens added); clear() and applying the penalties are O(distinct tokens).
struct TokenHistory {
    std::vector<uint8_t> seen;        // [V] 1 once a token was input or chosen
    std::vector<int32_t> seen_ids;    // the distinct ids with seen = 1
    std::vector<int32_t> counts;      // [V] times chosen
    std::vector<int32_t> chosen_ids;  // the distinct ids with counts > 0

    void init(int64_t vocab);
    void add_inputs(const int32_t* tokens, int64_t n);  // ids already validated
    void add_chosen(int32_t token);
    void clear();
};

bool has_penalties(const vt_sample_options& o);
// logits[V] in place, as vt.h defines: repetition, then frequency and presence (float32).
void apply_penalties(const vt_sample_options& o, const TokenHistory& h, float* logits);

}  // namespace vt

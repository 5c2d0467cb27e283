// argmax, softmax and the seeded sampler (see vt.h for the exact algorithm).
#pragma once

#include <cstdint>

#include "vt/vt.h"

namespace vt {

int64_t argmax(const float* x, int64_t n);
void softmax(const float* x, int64_t n, float* y);
double uniform(uint64_t seed, uint64_t step);
// Validates options (throws vt::Error naming the field and value).
void check_sample_options(const vt_sample_options& o);
int64_t sample(const float* logits, int64_t n, const vt_sample_options& o, uint64_t step);

}  // namespace vt

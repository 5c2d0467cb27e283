// vt_sample's draw (sampling.cpp: select_candidates + draw, vt.h's steps 1-5) over candidates
// already sorted by (value desc, index asc), as the CUDA decode step runs it on the device
// (misc.cu's draw_kernel) so that a sampled token can feed the next step without the host
// (decode_ahead.h). The same functions compile for the host: host_check.cpp compares them with
// vt_sample on random rows and options. The arithmetic is the host's, operation for operation
// (f64 divisions, sums in candidate order, no multiply-add that a compiler could fuse), so the
// only difference left is exp: the device's exp(double) and glibc's may differ in the last
// bit, which moves a draw only when the uniform falls within ~1e-16 of a boundary of the
// cumulative distribution.
#pragma once

#include <cmath>
#include <cstdint>

#include "cuda/device_math.h"

namespace vt {
namespace cudak {

constexpr int kDrawMaxCandidates = 256;  // = VT_MAX_TOP_K = kTopK (kernels.h)

// What a draw needs of vt_sample_options, as the host gives it to the device (StepParams).
struct DrawArgs {
    double temperature;  // > 0
    double top_p;        // (0, 1]
    double log_min_p;    // std::log(min_p) when use_min_p (the host's own log)
    uint64_t seed;
    uint64_t step;       // the session's sampling step of this token
    int32_t top_k;       // 0: no cap
    int32_t use_min_p;   // min_p > 0
};

// sampling.cpp's uniform(seed, step): SplitMix64, 53 bits.
VT_HD uint64_t draw_splitmix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
VT_HD double draw_uniform(uint64_t seed, uint64_t step) {
    const uint64_t r = draw_splitmix64(seed ^ draw_splitmix64(step + 0x9E3779B97F4A7C15ULL));
    return static_cast<double>(r >> 11) * (1.0 / 9007199254740992.0);
}

// Step 1: how many of the n sorted candidates a draw weighs (top_k, capped at 256).
VT_HD int draw_considered(int n, const DrawArgs& a) {
    const int k = a.top_k > 0 && a.top_k < kDrawMaxCandidates ? a.top_k : kDrawMaxCandidates;
    return k < n ? k : n;
}

// Step 2's weight of a candidate of value v when the best is `top` (finite): e^(v/t - top/t).
// Independent per candidate (the device computes them in parallel).
VT_HD double draw_weight(float v, float top, double t) {
    return ::exp(static_cast<double>(v) / t - static_cast<double>(top) / t);
}

// Steps 2-5 given the weights p[0, k) of the k considered candidates (values v[0, k), sorted):
// normalize, min-p, top-p, the seeded inverse-CDF draw. Returns the position of the token
// drawn among the candidates, or -1 when there are none (k = 0: every logit NaN). p is
// overwritten. A +-inf best value: the first candidate (as sampling.cpp).
VT_HD int draw_pick(const float* v, double* p, int k, const DrawArgs& a) {
    if (k <= 0) return -1;
    if (v[0] > 3.40282347e38f || v[0] < -3.40282347e38f) return 0;  // +-inf
    double sum = 0.0;
    for (int j = 0; j < k; ++j) sum += p[j];
    for (int j = 0; j < k; ++j) p[j] /= sum;
    int kept = k;
    if (a.use_min_p) {
        for (int j = 1; j < k; ++j)
            if ((static_cast<double>(v[j]) - static_cast<double>(v[0])) / a.temperature < a.log_min_p) {
                kept = j;
                break;
            }
        if (kept < k) {
            double s2 = 0.0;
            for (int j = 0; j < kept; ++j) s2 += p[j];
            for (int j = 0; j < kept; ++j) p[j] /= s2;
        }
    }
    int keep = kept;
    double cum = 0.0;
    for (int j = 0; j < kept; ++j) {
        cum += p[j];
        if (cum >= a.top_p) {
            keep = j + 1;
            break;
        }
    }
    double total = 0.0;
    for (int j = 0; j < keep; ++j) total += p[j];
    const double target = draw_uniform(a.seed, a.step) * total;
    cum = 0.0;
    for (int j = 0; j < keep; ++j) {
        cum += p[j];
        if (target < cum) return j;
    }
    return keep - 1;
}

}  // namespace cudak
}  // namespace vt

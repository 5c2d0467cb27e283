#include "ops/rmsnorm.h"

#include <cmath>

#include "ops/cpu_clones.h"

namespace vt {
namespace ops {

VT_CLONES void add_rmsnorm(float* __restrict x, const float* __restrict d, const float* __restrict w, float eps,
                           int64_t n, float* __restrict out) {
    if (d)
        for (int64_t i = 0; i < n; ++i) x[i] += d[i];
    float lanes[16] = {0};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; ++j) lanes[j] += x[i + j] * x[i + j];
    float ss = 0;
    for (int j = 0; j < 16; ++j) ss += lanes[j];
    for (; i < n; ++i) ss += x[i] * x[i];
    const float r = 1.0f / std::sqrt(ss / float(n) + eps);
    for (i = 0; i < n; ++i) out[i] = (x[i] * r) * w[i];
}

VT_CLONES void rmsnorm_heads(float* x, int64_t heads, int64_t hd, const float* __restrict w, float eps) {
    for (int64_t h = 0; h < heads; ++h) {
        float* v = x + h * hd;
        float ss = 0;
        for (int64_t i = 0; i < hd; ++i) ss += v[i] * v[i];
        const float r = 1.0f / std::sqrt(ss / float(hd) + eps);
        for (int64_t i = 0; i < hd; ++i) v[i] = (v[i] * r) * w[i];
    }
}

}  // namespace ops
}  // namespace vt

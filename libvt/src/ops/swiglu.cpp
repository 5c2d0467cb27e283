#include "ops/swiglu.h"

#include <cmath>

#include "ops/cpu_clones.h"
#include "ops/exp_nonpos.h"

namespace vt {
namespace ops {

float silu(float x) {
    return static_cast<float>(static_cast<double>(x) / (1.0 + std::exp(-static_cast<double>(x))));
}

void swiglu(const float* g, const float* u, int64_t n, float* y) {
    for (int64_t i = 0; i < n; ++i) y[i] = silu(g[i]) * u[i];
}

// tanh(v) = sign(v) · (1 - e) / (1 + e) with e = e^(-2|v|) <= 1 (exp_nonpos: branch-free, so
// 8 or 16 lanes at a time; glibc's tanhf was ~17 % of a Gemma 2 prefill). Within a few ulps of
// tanhf; near 0 the quotient loses relative precision but GELU adds it to 1, where the error
// is below an ulp.
VT_CLONES void geglu_tanh(const float* g, const float* u, int64_t n, float* y) {
    typedef float V __attribute__((vector_size(32)));
    typedef float VU __attribute__((vector_size(32), aligned(4)));
    typedef int32_t VI __attribute__((vector_size(32)));
    const float beta = float(M_SQRT2 * M_2_SQRTPI * 0.5), kappa = 0.044715f;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        V x, w;
        std::memcpy(&x, g + i, sizeof x);
        std::memcpy(&w, u + i, sizeof w);
        const V inner = beta * (x + kappa * x * x * x);
        const VI sign = (VI)inner & (int32_t)0x80000000;
        V e = (V)((VI)inner | (int32_t)0x80000000) * 2.0f;  // -2|inner|
        exp_nonpos_v(e);
        const V t = (V)((VI)((1.0f - e) / (1.0f + e)) | sign);
        const VU out = 0.5f * x * (1.0f + t) * w;
        std::memcpy(y + i, &out, sizeof out);
    }
    for (; i < n; ++i) {
        const float x = g[i];
        const float inner = beta * (x + kappa * x * x * x);
        y[i] = 0.5f * x * (1.0f + std::tanh(inner)) * u[i];
    }
}

}  // namespace ops
}  // namespace vt

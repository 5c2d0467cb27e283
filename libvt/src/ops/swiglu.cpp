#include "ops/swiglu.h"

#include <cmath>

namespace vt {
namespace ops {

float silu(float x) {
    return static_cast<float>(static_cast<double>(x) / (1.0 + std::exp(-static_cast<double>(x))));
}

void swiglu(const float* g, const float* u, int64_t n, float* y) {
    for (int64_t i = 0; i < n; ++i) y[i] = silu(g[i]) * u[i];
}

void geglu_tanh(const float* g, const float* u, int64_t n, float* y) {
    const float beta = float(M_SQRT2 * M_2_SQRTPI * 0.5), kappa = 0.044715f;
    for (int64_t i = 0; i < n; ++i) {
        const float x = g[i];
        const float inner = beta * (x + kappa * x * x * x);
        y[i] = 0.5f * x * (1.0f + std::tanh(inner)) * u[i];
    }
}

}  // namespace ops
}  // namespace vt

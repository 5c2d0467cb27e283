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

}  // namespace ops
}  // namespace vt

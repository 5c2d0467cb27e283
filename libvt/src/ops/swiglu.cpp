#include "ops/swiglu.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/cpu_clones.h"
#include "ops/exp_nonpos.h"

namespace vt {
namespace ops {

float silu(float x) {
    return static_cast<float>(static_cast<double>(x) / (1.0 + std::exp(-static_cast<double>(x))));
}

float gelu_tanh(float x) {
    typedef float V1 __attribute__((vector_size(4)));
    V1 v = {x};
    gelu_tanh_v(v);
    return v[0];
}

void swiglu(const float* g, const float* u, int64_t n, float* y) {
    for (int64_t i = 0; i < n; ++i) y[i] = silu(g[i]) * u[i];
}

// 8 lanes at a time (gelu_tanh_v, ops/exp_nonpos.h: branch-free, where glibc's tanhf was ~17 %
// of a Gemma 2 prefill); the last n % 8 through the same lanes, so every element's result is
// the same wherever it lies.
VT_CLONES void geglu_tanh(const float* g, const float* u, int64_t n, float* y) {
    typedef float V __attribute__((vector_size(32)));
    for (int64_t i = 0; i < n; i += 8) {
        const size_t k = static_cast<size_t>(std::min<int64_t>(8, n - i));
        V x{}, w{};
        std::memcpy(&x, g + i, k * sizeof(float));
        std::memcpy(&w, u + i, k * sizeof(float));
        gelu_tanh_v(x);
        x *= w;
        std::memcpy(y + i, &x, k * sizeof(float));
    }
}

VT_CLONES void softcap(float* x, int64_t n, float cap) {
    typedef float V __attribute__((vector_size(32)));
    for (int64_t i = 0; i < n; i += 8) {
        const size_t k = static_cast<size_t>(std::min<int64_t>(8, n - i));
        V v{};
        std::memcpy(&v, x + i, k * sizeof(float));
        softcap_v(v, cap);
        std::memcpy(x + i, &v, k * sizeof(float));
    }
}

}  // namespace ops
}  // namespace vt

// e^x for x <= 0 on a float or a GCC vector of floats (Cephes expf, ~1 ulp), branch-free, and
// the tanh and tanh-GELU built on it: the softmax of ops/attention.cpp, the GeGLU
// and soft-cap of ops/swiglu.cpp, the fused GeGLU epilogue of cpu/kernels_*.cpp. Include after
// ops/cpu_clones.h, in .cpp files only (the functions are inlined into their callers' clones).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#ifndef VT_INLINE
#define VT_INLINE inline __attribute__((always_inline))
#endif

namespace vt {
namespace ops {
namespace {

// e^x's polynomial for x in [-87, 0] (Cephes expf, ~1 ulp), on a float or on a vector of them
// (exp_nonpos, exp_nonpos_v): y, with 2^n still to apply, and t, which holds n in its low bits
// (t = 1.5 * 2^23 + n). By reference: see VT_SPLAT.
template <class T>
inline __attribute__((always_inline)) void exp_poly(const T& x, T& t, T& y) {
    t = x * 1.44269504088896341f + 12582912.0f;  // n = round(x / ln 2) in t's low bits
    const T n = t - 12582912.0f;
    T r = x - n * 0.693359375f;
    r = r + n * 2.12194440e-4f;
    const T z = r * r;
    y = r * 1.9875691500e-4f + 1.3981999507e-3f;
    y = y * r + 8.3334519073e-3f;
    y = y * r + 4.1665795894e-2f;
    y = y * r + 1.6666665459e-1f;
    y = y * r + 5.0000001201e-1f;
    y = y * z + r + 1.0f;
}

// e^x for x <= 0 (inputs below -87 give ~1e-38, not 0). Written without branches so loops
// over it vectorize.
inline float exp_nonpos(float x) {
    x = x < -87.0f ? -87.0f : x;
    float t, y;
    exp_poly(x, t, y);
    // 2^n from t's bits: integer arithmetic, defined for any x — a NaN score (overflowing
    // activations) gives a NaN result instead of an undefined int(NaN).
    uint32_t tb;
    std::memcpy(&tb, &t, 4);
    const uint32_t bits = (tb - 0x4B400000u + 127u) << 23;
    float scale;
    std::memcpy(&scale, &bits, 4);
    return y * scale;
}

// A broadcast (x - 0 folds away; x + 0 does not, for x = -0). A macro: a function returning
// a vector by value draws GCC's ABI warning (-Wpsabi) for the widths the baseline lacks.
#define VT_SPLAT(V, x) ((x) - V{})

// exp_nonpos on each lane of x, the same operations as the scalar one (so that the loops over
// scores vectorize: GCC leaves the scalar one's clamp a branch, as a float compare may trap).
// In place; a reference, not a value: see VT_SPLAT.
template <class V>
VT_INLINE void exp_nonpos_v(V& x) {
    typedef int32_t VI __attribute__((vector_size(sizeof(V))));
    const V lo = VT_SPLAT(V, -87.0f);
    x = x < lo ? lo : x;
    V t, y;
    exp_poly(x, t, y);
    const VI bits = (((VI)t - 0x4B400000) + 127) << 23;  // (VI)t: t's bits, as in exp_nonpos
    x = y * (V)bits;
}

// tanh on each lane: sign(v) · (1 − e) / (1 + e) with e = e^(−2|v|) <= 1. Within a few ulps of
// tanhf away from 0; near 0 the quotient's cancellation leaves an absolute error of ~1e-7
// (relative: larger), which the users tolerate: GELU adds it to 1, a soft-cap multiplies it by
// its cap (scores and logits then carry ~1e-7 · cap). NaN stays NaN, ±inf gives ±1. In place.
template <class V>
VT_INLINE void tanh_v(V& v) {
    typedef int32_t VI __attribute__((vector_size(sizeof(V))));
    const VI sign = (VI)v & (int32_t)0x80000000;
    V e = (V)((VI)v | (int32_t)0x80000000) * 2.0f;  // -2|v|
    exp_nonpos_v(e);
    v = (V)((VI)((1.0f - e) / (1.0f + e)) | sign);
}

// GELU with tanh's approximation, 0.5 · x · (1 + tanh(√(2/π) · (x + 0.044715 x³))), as
// transformers' gelu_pytorch_tanh; in place.
template <class V>
VT_INLINE void gelu_tanh_v(V& x) {
    const float beta = float(M_SQRT2 * M_2_SQRTPI * 0.5), kappa = 0.044715f;
    V inner = beta * (x + kappa * x * x * x);
    tanh_v(inner);
    x = 0.5f * x * (1.0f + inner);
}

// cap · tanh(v / cap) on each lane (Gemma 2's soft-caps); in place.
template <class V>
VT_INLINE void softcap_v(V& v, float cap) {
    v = v / cap;
    tanh_v(v);
    v = v * cap;
}

}  // namespace
}  // namespace ops
}  // namespace vt

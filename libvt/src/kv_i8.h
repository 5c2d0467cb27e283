// The int8 KV cache's rounding, one definition for the CPU (ops::store_i8) and the CUDA
// backend (cuda/misc.cu, kv_store_i8), so that both caches hold the same codes and scales for
// the same keys and values. A key or value vector x of n elements (one KV head, one position)
// is stored as codes q_i = round(x_i · 127 / amax) (to nearest, ties to even; clamped to
// ±127) with one f32 scale amax / 127, amax = max |x_i|; all zeros when amax is 0 or below
// kKvI8MinAmax. A vector with a non-finite element has no scale: the caller stores zeros and
// refuses to go on.
// Inline and free of the rest of libvt: the ops build alone (tests/test_ops_cpu.py) and the
// host checks (cuda/host_check.cpp) compile it with an ordinary C++ compiler.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define VT_KV_I8_FN __host__ __device__ __forceinline__
#else
#define VT_KV_I8_FN inline
#endif

namespace vt {

// The smallest largest |x| stored with a scale: below it 127 / amax could overflow f32 (from
// amax < 127 / FLT_MAX ~ 3.7e-37), a zero element would code as 0 · inf = NaN and the rest
// as ±127. Such a vector is stored as zeros with scale 0, as a zero one is: its elements are
// below 1e-30, nothing against f32 scores and weighted sums.
constexpr float kKvI8MinAmax = 1e-30f;

// Whether a vector whose largest |x| is amax gets codes and a scale (false: zeros, scale 0;
// false for a NaN amax too — the callers refuse non-finite vectors before this).
VT_KV_I8_FN bool kv_i8_storable(float amax) { return amax >= kKvI8MinAmax; }

// The multiplier of a vector whose largest |x| is amax (kv_i8_storable, finite).
VT_KV_I8_FN float kv_i8_inv(float amax) { return 127.0f / amax; }

// The f32 scale stored beside the codes: value = code · scale.
VT_KV_I8_FN float kv_i8_scale(float amax) { return amax / 127.0f; }

// One element's code. |x| <= amax, so |x · inv| <= 127 up to the rounding of inv: clamped
// all the same. rintf rounds to nearest, ties to even, under the default rounding mode (the
// host's nearbyint; the device's cvt.rni).
VT_KV_I8_FN int8_t kv_i8_code(float x, float inv) {
    const float r = rintf(x * inv);
    return static_cast<int8_t>(r < -127.0f ? -127.0f : (r > 127.0f ? 127.0f : r));
}

}  // namespace vt

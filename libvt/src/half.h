// IEEE binary16 (f16) <-> f32 and bfloat16 <-> f32, scalar and exact: the reference of
// vt_convert, the f16 scales of the packed formats and the f16 KV cache (ops/attention.cpp). A header of its own, inline, so
// the ops build without the rest of libvt (tests/test_ops_cpu.py compiles them alone).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace vt {

// RNE, overflow (|x| >= 65520) -> inf, NaN kept.
inline uint16_t f32_to_f16(float x) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
    const uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return sign | 0x7E00 | static_cast<uint16_t>((a >> 13) & 0x3FF);
    if (a >= 0x477FF000u) return sign | 0x7C00;  // >= 65520 rounds to Inf
    if (a < 0x38800000u) {                       // < 2^-14: subnormal, multiples of 2^-24
        float m;
        std::memcpy(&m, &a, 4);
        return sign | static_cast<uint16_t>(std::nearbyint(m * 16777216.0f));
    }
    const uint32_t r = (a + 0xFFFu + ((a >> 13) & 1u)) >> 13;
    return sign | static_cast<uint16_t>(r - ((127 - 15) << 10));
}

inline float f16_to_f32(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
    const uint32_t e = (h >> 10) & 0x1F, m = h & 0x3FF;
    uint32_t u;
    if (e == 0) {
        const float v = static_cast<float>(m) * (1.0f / 16777216.0f);
        std::memcpy(&u, &v, 4);
        u |= sign;
    } else if (e == 31) {
        u = sign | 0x7F800000u | (m << 13);
    } else {
        u = sign | ((e + 112) << 23) | (m << 13);
    }
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// 2^k as f16 bits, exactly: normal for k >= -14, subnormal down to 2^-24 (-24 <= k <= 15).
inline uint16_t f16_pow2(int k) {
    return k >= -14 ? static_cast<uint16_t>((k + 15) << 10) : static_cast<uint16_t>(1u << (k + 24));
}

// RNE, NaN kept (quiet).
inline uint16_t f32_to_bf16(float x) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
    return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

inline float bf16_to_f32(uint16_t b) {
    const uint32_t u = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

}  // namespace vt

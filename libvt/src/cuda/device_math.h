// Bit-level helpers shared by the CUDA kernels and host code (the layout code and the host
// checks in tests/test_cuda_host.py compile this header with an ordinary C++ compiler, so the
// tricks below are verified on any machine, bit for bit, against vt_packed_unpack).
//
// Weight decoding in the kernels (why these tricks): a decode step streams every weight once,
// ~13 bytes per clock per SM on an H100 at full HBM speed. Turning a byte into an f32 with the
// conversion unit (I2F, 16/clk/SM) would be the bottleneck; the integer/logic pipe (PRMT, LOP3,
// SHF: 64/clk/SM) and the FMA pipe (128/clk/SM) are not. So:
//
//   INT8   stored on the device as the signed byte q (what CUTLASS's INT8 operands read too).
//          One XOR per word turns it into offset binary u = q ^ 0x80; PRMT builds the f32 with
//          bit pattern 0x4B0000uu = 2^23 + u; subtracting 2^23 + 128 gives q exactly.
//          2.25 instructions per weight (PRMT, FADD, a quarter of the LOP3) before the FMA.
//   FP8    (E4M3, stored as is). PRMT moves the byte to bits 31..24; an arithmetic shift by 4
//          and a mask leave the sign at bit 31 and the 7 magnitude bits (eeee mmm) at bits
//          26..20, i.e. the f32 whose exponent field is the E4M3 exponent and whose mantissa
//          starts with the E4M3 mantissa. That f32 is exactly 2^-120 times the E4M3 value,
//          subnormals included (both formats' subnormals line up). The kernels multiply the
//          activations by 2^64 when staging them and the result by 2^56 at the end: powers of
//          two, so every product is the same rounding of the same exact value as with the
//          true weights, and products stay far from the f32 subnormal range.
//          3 instructions per weight (PRMT, SHF, LOP3) before the FMA.
//   BF16   f32 = bits << 16: one instruction per weight.
//   INT4 / INT4_MIN  (two k per byte, u in the low nibble for even k, high for odd k). One LOP
//          (w & 0x0F0F0F0F) and one SHF + LOP (w >> 4, masked) per 8 weights split a word into
//          its even-k and odd-k nibbles, one per byte; then each is the INT8 trick: PRMT builds
//          2^23 + u, one FADD subtracts 2^23 + 8 (INT4: q = u - 8) or 2^23 (INT4_MIN: u).
//          ~2.4 instructions per weight before the FMA, exact.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define VT_HD __host__ __device__ __forceinline__
#else
#define VT_HD inline
#endif

namespace vt {
namespace cudak {

constexpr float kFp8XPre = 18446744073709551616.0f;  // 2^64: activations, FP8 formats
constexpr float kFp8Post = 72057594037927936.0f;     // 2^56: results, FP8 formats
constexpr float kFp8Unscale = 1.329227995784916e+36f;  // 2^120: decoded FP8 -> true value

VT_HD float as_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float f;
    std::memcpy(&f, &u, 4);
    return f;
#endif
}

VT_HD uint32_t as_uint(float f) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
#endif
}

// PRMT / __byte_perm without the sign-replication mode: byte n of the result is byte
// (s >> 4n) & 7 of the 8-byte value y:x.
VT_HD uint32_t byte_perm(uint32_t x, uint32_t y, uint32_t s) {
#if defined(__CUDA_ARCH__)
    return __byte_perm(x, y, s);
#else
    const uint64_t v = (static_cast<uint64_t>(y) << 32) | x;
    uint32_t r = 0;
    for (int n = 0; n < 4; ++n) {
        const uint32_t sel = (s >> (4 * n)) & 7u;
        r |= static_cast<uint32_t>((v >> (8 * sel)) & 0xFFu) << (8 * n);
    }
    return r;
#endif
}

// Byte I of w, the signed byte q, as the float q (exact). (The XOR is the same for the four
// bytes of a word: the compiler does it once.)
template <int I>
VT_HD float int8x_at(uint32_t w) {
    return as_float(byte_perm(w ^ 0x80808080u, 0x4B000000u, 0x7440u + I)) - 8388736.0f;
}

// The even-k (low) and odd-k (high) nibbles of a word of 4-bit codes, one per byte.
VT_HD uint32_t nib_lo(uint32_t w) { return w & 0x0F0F0F0Fu; }
VT_HD uint32_t nib_hi(uint32_t w) { return (w >> 4) & 0x0F0F0F0Fu; }

// Byte I (in [0, 15]) of a nib_lo / nib_hi word minus OFF (8: INT4, 0: INT4_MIN), exact.
template <int I, int OFF>
VT_HD float nib_at(uint32_t m) {
    return as_float(byte_perm(m, 0x4B000000u, 0x7440u + I)) - (8388608.0f + float(OFF));
}

// Byte I of w, an E4M3 code (not NaN), as 2^-120 times its value (exact).
template <int I>
VT_HD float fp8s_at(uint32_t w) {
    const uint32_t t = byte_perm(w, 0u, (static_cast<uint32_t>(I) << 12) | 0x444u);
    return as_float(static_cast<uint32_t>(static_cast<int32_t>(t) >> 4) & 0x87FFFFFFu);
}

// Element I (0 or 1) of a word holding two bf16 values, as f32.
template <int I>
VT_HD float bf16_at(uint32_t w) {
    return as_float(I == 0 ? (w << 16) : (w & 0xFFFF0000u));
}

VT_HD float f16_bits_to_f32(uint16_t h) {
    // Exact for every f16 (the scales are finite and >= 0; handles subnormals and zero).
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    if (e == 0) {
        const float v = static_cast<float>(m) * 5.9604644775390625e-08f;  // m * 2^-24
        return sign ? -v : v;
    }
    if (e == 31) return as_float(sign | 0x7F800000u | (m << 13));
    return as_float(sign | ((e + 112u) << 23) | (m << 13));
}

// ---- Swizzled activation staging -------------------------------------------------------------
// The GEMV stages x in shared memory as float4 units. A lane working on chunk c (16 weights
// = 4 units, or 8 bf16 weights = 2 units) reads its units j = 0.. in the same order as every
// other lane; without a swizzle the 8 lanes of one shared-memory phase would hit the same
// banks (4-way conflicts). Unit j of chunk c lives at upc*c + (j ^ ((c / (8/upc)) % upc)).
VT_HD int xs_unit(int c, int j, int upc) {
    return upc * c + (j ^ ((c / (8 / upc)) % upc));
}

// ---- Argmax / top-k keys ---------------------------------------------------------------------
// A u64 that orders (value desc, index asc) as an unsigned integer orders descending: the
// order vt_argmax and vt_sample use. NaN maps to 0 (never chosen); -0 counts as +0.
VT_HD uint64_t rank_key(float v, uint32_t idx) {
    if (v != v) return 0;
    uint32_t u = as_uint(v);
    if ((u & 0x7FFFFFFFu) == 0) u = 0;
    const uint32_t ord = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    return (static_cast<uint64_t>(ord) << 32) | (0xFFFFFFFFu - idx);
}

VT_HD float rank_key_value(uint64_t key) {
    const uint32_t ord = static_cast<uint32_t>(key >> 32);
    return as_float((ord & 0x80000000u) ? (ord & 0x7FFFFFFFu) : ~ord);
}

VT_HD uint32_t rank_key_index(uint64_t key) { return 0xFFFFFFFFu - static_cast<uint32_t>(key); }

// ---- Index math shared with the host checks ----------------------------------------------------

// Decode attention splits its keys in multiples of this many (attention.cu; the engine caps
// the number of splits at the cache capacity over it). Small, so that a short context still
// spreads over many blocks: each block's work is a few memory round trips, not a long loop.
constexpr int kAttnSplitKeys = 32;

// Decode attention: the key range [k0, k1) of split `split` of `splits` over n keys, in
// whole chunks of `tile` keys; empty (k0 >= k1) for splits past the end.
struct KeyRange {
    int k0, k1;
};
VT_HD KeyRange attn_split_range(int n, int splits, int split, int tile) {
    const int per = ((n + splits - 1) / splits + tile - 1) / tile * tile;
    const int k0 = split * per;
    return KeyRange{k0, k0 + per < n ? k0 + per : n};
}

// Sliding window: the first key a query at position `pos` sees (window 0: all keys), as the
// CPU's first_key (cpu/engine.cpp).
VT_HD int attn_first_key(int pos, int window) {
    return window > 0 && pos + 1 - window > 0 ? pos + 1 - window : 0;
}

// Decode attention of the query at position pos (keys [attn_first_key(pos, window), pos]): the
// range of split `split` of `splits`, as attn_split_range over the visible keys.
VT_HD KeyRange attn_decode_range(int pos, int window, int splits, int split, int tile) {
    const int lo = attn_first_key(pos, window);
    const KeyRange r = attn_split_range(pos + 1 - lo, splits, split, tile);
    return KeyRange{lo + r.k0, lo + r.k1};
}

// ---- Epilogue math shared with the host checks (the CPU's formulas) ----------------------------

// Gemma's soft-capping: cap · tanh(v / cap) (attention scores, final logits).
VT_HD float softcap_value(float v, float cap) { return tanhf(v / cap) * cap; }

// GELU with the tanh approximation, as ops::geglu_tanh computes it.
VT_HD float gelu_tanh(float x) {
    const float beta = 0.7978845608028654f, kappa = 0.044715f;  // sqrt(2/pi)
    const float inner = beta * (x + kappa * x * x * x);
    return 0.5f * x * (1.0f + tanhf(inner));
}

// Pair t of step (k, j) of a bitonic network that sorts descending: compare-exchange (i, l),
// the larger first when `desc`.
VT_HD void bitonic_pair(int t, int j, int k, int* i, int* l, bool* desc) {
    *i = (t / j) * 2 * j + (t % j);
    *l = *i + j;
    *desc = (*i & k) == 0;
}

}  // namespace cudak
}  // namespace vt

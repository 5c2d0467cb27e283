// Quantization of weights into the packed formats (an offline transform), and back.
//
// Scale storage, measured (bench/scale_storage.py, results in bench/results/): relative RMS
// error of the dequantized weights with textbook f32 scales vs libvt's f16 scales
//                                  INT8 blocked-32          FP8 blocked-16
//   TinyLlama-1.1B, all linears    0.005350 -> 0.005353     0.022308 -> 0.022312
//   SmolLM2-135M, all linears      0.005521 -> 0.005525     0.021876 -> 0.021875
//   N(0,1), 1% x20 outliers        0.011220 -> 0.011230     0.010850 -> 0.010859
// i.e. < 0.1 % more error, for 1.063 instead of 1.125 bytes per weight (INT8-32) and 1.126
// instead of 1.25 (FP8-16): decode reads 5.5 % / 10 % fewer bytes. So f16 it is.

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstring>
#include <vector>

#include "convert.h"
#include "cpu/kernels.h"
#include "quant.h"
#include "threadpool.h"

#if defined(__SSE2__)
#include <emmintrin.h>  // baseline on x86-64: no ISA dispatch needed
#endif

int64_t vt_packed::nbytes() const {
    if (dense())
        return ntiles * tile_bytes + static_cast<int64_t>(rowmul.size() * sizeof(float));
    return static_cast<int64_t>(q.size() + meta.size() + scales.size() * sizeof(float));
}

namespace vt {

namespace {

// Row r of w as f32.
void load_row(const void* w, vt_dtype dt, int64_t in, int64_t r, float* dst) {
    size_t off = static_cast<size_t>(r) * static_cast<size_t>(in);
    switch (dt) {
        case VT_DTYPE_F32:
            std::memcpy(dst, static_cast<const float*>(w) + off, sizeof(float) * in);
            break;
        case VT_DTYPE_BF16: {  // inline: the library call per weight was a quarter of packing
            const uint16_t* s = static_cast<const uint16_t*>(w) + off;
            uint32_t* d = reinterpret_cast<uint32_t*>(dst);
            for (int64_t k = 0; k < in; ++k) d[k] = static_cast<uint32_t>(s[k]) << 16;
            break;
        }
        default: {
            const uint16_t* s = static_cast<const uint16_t*>(w) + off;
            for (int64_t k = 0; k < in; ++k) dst[k] = f16_to_f32(s[k]);
            break;
        }
    }
}

inline uint32_t bits_of(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
inline float float_of(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// The packing loops below are written branch-free so the compiler vectorizes them even for
// the baseline x86-64 (SSE2, no roundps: std::nearbyint would be a libm call per weight).

// Round half to even for |v| < 2^22 (the quantized values are far smaller).
inline float rne(float v) {
    const float magic = 12582912.0f;  // 1.5 * 2^23
    return (v + magic) - magic;
}

// f32_to_fp8 for finite x (the packers reject non-finite weights first); same results.
inline uint8_t fp8_finite(float x) {
    const int32_t u = static_cast<int32_t>(bits_of(x));
    const int32_t sign = (u >> 24) & 0x80;
    const int32_t a = u & 0x7FFFFFFF;
    const int32_t nrm = ((a + 0x7FFFF + ((a >> 20) & 1)) >> 20) - ((127 - 7) << 3);
    const int32_t sub = static_cast<int32_t>(
        rne(float_of(static_cast<uint32_t>(a < 0x3C800000 ? a : 0)) * 512.0f));
    int32_t r = a < 0x3C800000 ? sub : nrm;
    r = a >= 0x43E00000 ? 0x7E : r;
    return static_cast<uint8_t>(sign | r);
}

// Index of the first non-finite value of x[0, n), or -1.
int64_t first_non_finite(const float* x, int64_t n) {
    uint32_t any = 0;
    for (int64_t k = 0; k < n; ++k) any |= (bits_of(x[k]) & 0x7F800000u) == 0x7F800000u;
    if (!any) return -1;
    for (int64_t k = 0; k < n; ++k)
        if ((bits_of(x[k]) & 0x7F800000u) == 0x7F800000u) return k;
    return -1;
}

// First non-finite weight (flat index), shared by the packing threads.
struct BadWeight {
    std::atomic<int64_t> first{INT64_MAX};
    bool check(const float* row, int64_t in, int64_t r) {
        int64_t k = first_non_finite(row, in);
        if (k < 0) return true;
        int64_t idx = r * in + k, cur = first.load();
        while (idx < cur && !first.compare_exchange_weak(cur, idx)) {
        }
        return false;
    }
};

// Smallest f16 >= v (v >= 0 finite, < 65504).
uint16_t f16_round_up(float v) {
    uint16_t h = f32_to_f16(v);
    if (f16_to_f32(h) < v) ++h;
    return h;
}

// max |x| of finite values.
float absmax(const float* x, int64_t n) {
    int64_t i = 0;
    float m = 0.f;
#if defined(__SSE2__)
    const __m128 absmask = _mm_castsi128_ps(_mm_set1_epi32(0x7FFFFFFF));
    __m128 m0 = _mm_setzero_ps(), m1 = _mm_setzero_ps();
    for (; i + 8 <= n; i += 8) {
        m0 = _mm_max_ps(m0, _mm_and_ps(_mm_loadu_ps(x + i), absmask));
        m1 = _mm_max_ps(m1, _mm_and_ps(_mm_loadu_ps(x + i + 4), absmask));
    }
    alignas(16) float t[4];
    _mm_store_ps(t, _mm_max_ps(m0, m1));
    m = std::max(std::max(t[0], t[1]), std::max(t[2], t[3]));
#endif
    for (; i < n; ++i) m = std::max(m, std::fabs(x[i]));
    return m;
}

#if defined(__SSE2__)
// fp8_finite on 4 lanes (int32 results 0..255).
inline __m128i fp8_finite4(__m128 x) {
    const __m128i u = _mm_castps_si128(x);
    const __m128i sign = _mm_and_si128(_mm_srli_epi32(u, 24), _mm_set1_epi32(0x80));
    const __m128i a = _mm_and_si128(u, _mm_set1_epi32(0x7FFFFFFF));
    const __m128i odd = _mm_and_si128(_mm_srli_epi32(a, 20), _mm_set1_epi32(1));
    const __m128i nrm = _mm_sub_epi32(
        _mm_srli_epi32(_mm_add_epi32(_mm_add_epi32(a, _mm_set1_epi32(0x7FFFF)), odd), 20),
        _mm_set1_epi32((127 - 7) << 3));
    const __m128i is_sub = _mm_cmplt_epi32(a, _mm_set1_epi32(0x3C800000));
    const __m128 magic = _mm_set1_ps(12582912.0f);
    __m128 v = _mm_mul_ps(_mm_castsi128_ps(_mm_and_si128(a, is_sub)), _mm_set1_ps(512.0f));
    v = _mm_sub_ps(_mm_add_ps(v, magic), magic);
    const __m128i sub = _mm_cvtps_epi32(v);  // already integral
    __m128i r = _mm_or_si128(_mm_and_si128(is_sub, sub), _mm_andnot_si128(is_sub, nrm));
    const __m128i sat = _mm_cmpgt_epi32(a, _mm_set1_epi32(0x43E00000 - 1));
    r = _mm_or_si128(_mm_and_si128(sat, _mm_set1_epi32(0x7E)), _mm_andnot_si128(sat, r));
    return _mm_or_si128(r, sign);
}
#endif

// d[k] = fp8(w[k] / s), k < n.
void quant_fp8(const float* w, int64_t n, float s, uint8_t* d) {
    int64_t k = 0;
#if defined(__SSE2__)
    const __m128 sv = _mm_set1_ps(s);
    for (; k + 16 <= n; k += 16) {
        __m128i q[4];
        for (int j = 0; j < 4; ++j) q[j] = fp8_finite4(_mm_div_ps(_mm_loadu_ps(w + k + 4 * j), sv));
        const __m128i lo = _mm_packs_epi32(q[0], q[1]), hi = _mm_packs_epi32(q[2], q[3]);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(d + k), _mm_packus_epi16(lo, hi));
    }
#endif
    for (; k < n; ++k) d[k] = fp8_finite(w[k] / s);
}

// d[k] = clamp(round_half_even(w[k] / s), -127, 127) as int8, k < n.
void quant_int8(const float* w, int64_t n, float s, uint8_t* d) {
    int64_t k = 0;
#if defined(__SSE2__)
    const __m128 sv = _mm_set1_ps(s), magic = _mm_set1_ps(12582912.0f);
    const __m128 hi = _mm_set1_ps(127.f), lo = _mm_set1_ps(-127.f);
    for (; k + 16 <= n; k += 16) {
        __m128i q[4];
        for (int j = 0; j < 4; ++j) {
            __m128 v = _mm_div_ps(_mm_loadu_ps(w + k + 4 * j), sv);
            v = _mm_sub_ps(_mm_add_ps(v, magic), magic);
            q[j] = _mm_cvtps_epi32(_mm_min_ps(_mm_max_ps(v, lo), hi));
        }
        const __m128i a = _mm_packs_epi32(q[0], q[1]), b = _mm_packs_epi32(q[2], q[3]);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(d + k), _mm_packs_epi16(a, b));
    }
#endif
    for (; k < n; ++k) {
        float v = rne(w[k] / s);
        v = v > 127.f ? 127.f : (v < -127.f ? -127.f : v);
        d[k] = static_cast<uint8_t>(static_cast<int8_t>(static_cast<int32_t>(v)));
    }
}

// ---- INT4_BLOCKED ---------------------------------------------------------------------
//
// Per block of n <= kb weights: q = clamp(rne(w / d), -8, 7), w ~ q * d. The scale is the
// best (least squared error) of a few candidates: d = m / c for c in -8 .. -7 (m: the
// weight of largest |w|, so m maps to about -8 as llama.cpp's Q4_0 does, or a little
// inside so that rounding loses less elsewhere), each refined once by least squares
// (d = sum(w q) / sum(q q) for its q). On SmolLM2's linears this cuts the relative RMS
// weight error from 0.0866 (Q4_0's d = m / -8) to 0.0803 (bench/results/int4_scales.txt).
// A per-block min (Q4_1's scale + min) measured 0.0013 there, but only because the default
// SmolLM2 is itself dequantized from a Q4_1 GGUF; it costs 2 more bytes per 32 weights (11 %
// more to read per token), so the symmetric grid stays (docs/guide.md).

constexpr int kInt4Cands = 5;  // c = -8, -7.75, -7.5, -7.25, -7

// Sum of squared errors of w[0, n) quantized with scale d (d != 0).
inline float int4_sse(const float* w, int64_t n, float d) {
    const float inv = 1.0f / d;
    float e = 0.f;
    for (int64_t k = 0; k < n; ++k) {
        float q = rne(w[k] * inv);
        q = q > 7.f ? 7.f : (q < -8.f ? -8.f : q);
        const float r = w[k] - q * d;
        e += r * r;
    }
    return e;
}

// Least-squares scale for the q that d gives (d itself when they are all zero).
inline float int4_refine(const float* w, int64_t n, float d) {
    const float inv = 1.0f / d;
    float wq = 0.f, qq = 0.f;
    for (int64_t k = 0; k < n; ++k) {
        float q = rne(w[k] * inv);
        q = q > 7.f ? 7.f : (q < -8.f ? -8.f : q);
        wq += w[k] * q;
        qq += q * q;
    }
    return qq > 0.f && wq != 0.f ? wq / qq : d;
}

// The block's scale before storage rounding (0 for an all-zero block).
float int4_block_scale(const float* w, int64_t n) {
    float m = 0.f, am = 0.f;
    for (int64_t k = 0; k < n; ++k)
        if (std::fabs(w[k]) > am) {
            am = std::fabs(w[k]);
            m = w[k];
        }
    if (!(am > 0.f)) return 0.f;
    float best = m / -8.0f, best_e = int4_sse(w, n, best);
    for (int c = 0; c < kInt4Cands; ++c) {
        const float d0 = m / (-8.0f + 0.25f * static_cast<float>(c));
        for (float d : {d0, int4_refine(w, n, d0)}) {
            if (!(std::fabs(d) > 0.f) || !std::isfinite(d)) continue;
            const float e = int4_sse(w, n, d);
            if (e < best_e) {
                best_e = e;
                best = d;
            }
        }
    }
    return best;
}

// One row of INT4_BLOCKED: q[in] int8 values in [-8, 7], f16 block scales (signed) in lane
// `lane` of tile t, rowmul = 2^e putting the largest |scale| / 2^e in [2^14, 2^15).
void pack_int4_row(Packed& p, const float* w, int64_t t, int lane, int8_t* q) {
    uint8_t* tile = p.tiles.data() + t * p.tile_bytes;
    const int64_t in = p.in, kb = p.kb, nkb = (in + kb - 1) / kb;
    uint16_t* sc = reinterpret_cast<uint16_t*>(tile + p.scale_off);
    std::vector<float> d(static_cast<size_t>(nkb));
    float smax = 0.f;
    for (int64_t b = 0; b < nkb; ++b) {
        d[b] = int4_block_scale(w + b * kb, std::min(kb, in - b * kb));
        smax = std::max(smax, std::fabs(d[b]));
    }
    int e = smax > 0.f ? std::ilogb(smax) - 14 : 0;
    e = std::max(e, -126);
    const float pow2 = std::ldexp(1.0f, e);
    for (int64_t b = 0; b < nkb; ++b) {
        const int64_t n = std::min(kb, in - b * kb);
        // Nearest f16 (|d| / 2^e < 2^15: no overflow), then q against the stored scale.
        const uint16_t h = f32_to_f16(d[b] / pow2);
        const float se = f16_to_f32(h) * pow2;
        sc[b * kTileRows + lane] = h;
        int8_t* qb = q + b * kb;
        if (!(std::fabs(se) > 0.f)) {
            std::memset(qb, 0, static_cast<size_t>(n));
            continue;
        }
        const float inv = 1.0f / se;
        for (int64_t k = 0; k < n; ++k) {
            float v = rne(w[b * kb + k] * inv);
            v = v > 7.f ? 7.f : (v < -8.f ? -8.f : v);
            qb[k] = static_cast<int8_t>(static_cast<int32_t>(v));
        }
    }
    p.rowmul[t * kTileRows + lane] = pow2;
}

// q rows [16][in] -> tile nibbles [ceil(in/2)][16]: byte (j, r) holds q[r][2j] + off in its
// low nibble and q[r][2j + 1] + off in its high one (off, i.e. q = 0, past in). INT4_BLOCKED:
// q in [-8, 7], off 8; INT4_MIN_BLOCKED: q = u in [0, 15], off 0.
void scatter_tile_int4(const int8_t* q, int64_t in, uint8_t* tile, int off) {
    for (int64_t j = 0; 2 * j < in; ++j)
        for (int r = 0; r < kTileRows; ++r) {
            const int lo = q[r * in + 2 * j] + off;
            const int hi = 2 * j + 1 < in ? q[r * in + 2 * j + 1] + off : off;
            tile[j * kTileRows + r] = static_cast<uint8_t>(lo | (hi << 4));
        }
}

// ---- INT4_MIN_BLOCKED ------------------------------------------------------------------
//
// llama.cpp Q4_1's rule per block of n <= kb weights: min = min(w), scale = (max(w) - min) /
// 15, u = clamp(round((w - min) / scale), 0, 15), w ~ u * scale + min. Storage: f16 times
// the row's power of two 2^e (e puts the row's largest scale or |min| in [2^14, 2^15), as for
// INT4_BLOCKED), the min rounded *down* to that grid and the scale then rounded *up* from
// (max - stored min) / 15, so every weight of the block lies in [min, min + 15 * scale] of
// the stored pair and |error| <= scale / 2 (u is quantized against the stored pair). A block
// with max == min stores its nearest f16 min and scale 0 (u = 0).
// Measured (numpy, blocks of 32, relative RMS weight error): N(0,1) 0.0783 with this storage
// rounding against 0.0782 with nearest-f16 scale and min (Q4_1's ggml packer, whose pair is
// not self-consistent); SmolLM2's linears (a Q4_1 GGUF dequantized to bf16) 0.0017 vs 0.0013.
// A least-squares refit of (scale, min) for the chosen u, kept when it lowers the block's
// error, measured 0.0749 on N(0,1) (3 rounds 0.0728; Student-t4 0.0936 -> 0.0898) but lets
// weights fall outside the stored grid (max error no longer <= scale / 2) and leaves Q4_1's
// rule; not done: int4-min is Q4_1's grid and rule as documented (vt.h).

// Largest f16 <= v (v finite, |v| < 65504).
uint16_t f16_round_down(float v) {
    uint16_t h = f32_to_f16(v);
    if (f16_to_f32(h) > v) {
        if (h & 0x8000u) ++h;           // negative: one step away from 0
        else if (h == 0) h = 0x8001u;   // +0 > v: the smallest negative subnormal
        else --h;                       // positive: one step toward 0
    }
    return h;
}

// One row of INT4_MIN_BLOCKED: u[in] in [0, 15] (as int8), f16 scales and mins in lane `lane`
// of tile t, rowmul = 2^e.
void pack_int4_min_row(Packed& p, const float* w, int64_t t, int lane, int8_t* u) {
    uint8_t* tile = p.tiles.data() + t * p.tile_bytes;
    const int64_t in = p.in, kb = p.kb, nkb = (in + kb - 1) / kb;
    uint16_t* sc = reinterpret_cast<uint16_t*>(tile + p.scale_off);
    uint16_t* mn = reinterpret_cast<uint16_t*>(tile + p.min_off);
    std::vector<float> lo(static_cast<size_t>(nkb)), hi(static_cast<size_t>(nkb));
    float big = 0.f;
    for (int64_t b = 0; b < nkb; ++b) {
        const float* wb = w + b * kb;
        const int64_t n = std::min(kb, in - b * kb);
        float a = wb[0], z = wb[0];
        for (int64_t k = 1; k < n; ++k) {
            a = std::min(a, wb[k]);
            z = std::max(z, wb[k]);
        }
        lo[b] = a;
        hi[b] = z;
        // (z - a) / 15 may round up past the f32 range only for |w| near FLT_MAX; the scale
        // bound below keeps the f16 finite for any finite weights.
        big = std::max(big, std::max(std::fabs(a), (z - a) / 15.0f));
    }
    int e = big > 0.f && std::isfinite(big) ? std::ilogb(big) - 14 : 0;
    if (std::isinf(big)) e = 128 - 15;  // (z - a) overflowed: a row of huge weights
    e = std::max(e, -126);
    const float pow2 = std::ldexp(1.0f, e);
    for (int64_t b = 0; b < nkb; ++b) {
        const int64_t n = std::min(kb, in - b * kb);
        const float* wb = w + b * kb;
        int8_t* ub = u + b * kb;
        uint16_t hm, hs;
        if (lo[b] == hi[b]) {
            hm = f32_to_f16(lo[b] / pow2);
            hs = 0;
        } else {
            hm = f16_round_down(lo[b] / pow2);
            const float me = f16_to_f32(hm) * pow2;
            hs = f16_round_up((hi[b] / pow2 - me / pow2) / 15.0f);
            // f32 rounding of the difference: make sure the top of the grid reaches max.
            while (std::fma(15.0f, f16_to_f32(hs), f16_to_f32(hm)) < hi[b] / pow2 && hs < 0x7BFFu) ++hs;
        }
        sc[b * kTileRows + lane] = hs;
        mn[b * kTileRows + lane] = hm;
        const float se = f16_to_f32(hs) * pow2, me = f16_to_f32(hm) * pow2;
        if (!(se > 0.f)) {
            std::memset(ub, 0, static_cast<size_t>(n));
            continue;
        }
        const float inv = 1.0f / se;
        for (int64_t k = 0; k < n; ++k) {
            float v = rne((wb[k] - me) * inv);
            v = v > 15.f ? 15.f : (v < 0.f ? 0.f : v);
            ub[k] = static_cast<int8_t>(static_cast<int32_t>(v));
        }
    }
    p.rowmul[t * kTileRows + lane] = pow2;
}

// ---- MXFP4 ------------------------------------------------------------------------------
//
// The OCP MX rule per block of n <= 32 weights: e = floor(log2(max |w|)) - 2 (E2M1's largest
// exponent), each w / 2^e rounded to the nearest E2M1 value, ties to the even code (the one
// whose mantissa bit is 0), and clamped to ±6 (w / 2^e < 8). A block of zeros stores code 0
// and the smallest scale. Storage (quant.h): the code u, kMxfp4Values[u] = twice its value,
// and the f16 scale 2^(e - 1 - r) with rowmul 2^r, r putting the row's largest block scale
// at 2^14; a block more than 38 binades below it is quantized against 2^-24 (the smallest
// f16), i.e. 2^(r - 23) for its e. So a weight the rule maps to itself (any MXFP4 block, e.g.
// gpt-oss's) comes back exactly.

// The E2M1 code of y (|y| < 8, finite): nearest value, ties to the even code, clamped to 6.
uint8_t e2m1_code(float y) {
    const float a = std::fabs(y);
    // Midpoints between consecutive E2M1 values 0 0.5 1 1.5 2 3 4 6; at a tie the even code
    // (0, 2, 4, 6 for 0, 1, 2, 4) wins: <= where the lower neighbour is even, < where the upper.
    uint8_t c;
    if (a <= 0.25f) c = 0;
    else if (a < 0.75f) c = 1;
    else if (a <= 1.25f) c = 2;
    else if (a < 1.75f) c = 3;
    else if (a <= 2.5f) c = 4;
    else if (a < 3.5f) c = 5;
    else if (a <= 5.0f) c = 6;
    else c = 7;
    return c != 0 && y < 0.f ? uint8_t(c | 8) : c;
}

// One row of MXFP4: codes u[in] (as int8), f16 scales in lane `lane` of tile t, rowmul = 2^r.
void pack_mxfp4_row(Packed& p, const float* w, int64_t t, int lane, int8_t* u) {
    uint8_t* tile = p.tiles.data() + t * p.tile_bytes;
    const int64_t in = p.in, kb = p.kb, nkb = (in + kb - 1) / kb;
    uint16_t* sc = reinterpret_cast<uint16_t*>(tile + p.scale_off);
    std::vector<int> ex(static_cast<size_t>(nkb));
    int emax = INT_MIN;
    for (int64_t b = 0; b < nkb; ++b) {
        const float a = absmax(w + b * kb, std::min(kb, in - b * kb));
        ex[b] = a > 0.f ? std::ilogb(a) - 2 : INT_MIN;  // ilogb: subnormals too
        emax = std::max(emax, ex[b]);
    }
    // rowmul 2^r with r = emax - 15: the largest scale 2^(emax - 1 - r) = 2^14. rowmul stays a
    // normal f32 (r >= -126; a row that tiny has its largest scale below 2^14). A row of zeros:
    // r = 0.
    const int r = emax == INT_MIN ? 0 : std::max(emax - 15, -126);
    const float pow2 = std::ldexp(1.0f, r);
    for (int64_t b = 0; b < nkb; ++b) {
        const int64_t n = std::min(kb, in - b * kb);
        int8_t* ub = u + b * kb;
        int s = ex[b] == INT_MIN ? -24 : std::max(ex[b] - 1 - r, -24);  // f16 scale 2^s
        s = std::min(s, 15);
        sc[b * kTileRows + lane] = f16_pow2(s);
        // w / 2^e with e = s + 1 + r, in two power-of-two steps: exact unless the result is
        // an f32 subnormal, i.e. far below 0.25, where the code is 0 either way.
        const float inv_r = std::ldexp(1.0f, -r), inv_b = std::ldexp(1.0f, -(s + 1));
        for (int64_t k = 0; k < n; ++k) ub[k] = static_cast<int8_t>(e2m1_code(w[b * kb + k] * inv_r * inv_b));
    }
    p.rowmul[t * kTileRows + lane] = pow2;
}

// Quantize one row into q (contiguous: [in] bytes, BF16 [in] uint16) and write its block
// scales (tile lane `lane`) and row multiplier (dense formats).
void pack_dense_row(Packed& p, const float* w, int64_t t, int lane, uint8_t* q) {
    uint8_t* tile = p.tiles.data() + t * p.tile_bytes;
    float& rowmul = p.rowmul[t * kTileRows + lane];
    const int64_t in = p.in;
    switch (p.format) {
        case VT_FORMAT_BF16: {
            uint16_t* d = reinterpret_cast<uint16_t*>(q);
            for (int64_t k = 0; k < in; ++k) {
                const uint32_t u = bits_of(w[k]);  // finite: plain RNE
                d[k] = static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
            }
            rowmul = 1.f;
            return;
        }
        case VT_FORMAT_INT4_BLOCKED:
            pack_int4_row(p, w, t, lane, reinterpret_cast<int8_t*>(q));
            return;
        case VT_FORMAT_INT4_MIN_BLOCKED:
            pack_int4_min_row(p, w, t, lane, reinterpret_cast<int8_t*>(q));
            return;
        case VT_FORMAT_MXFP4:
            pack_mxfp4_row(p, w, t, lane, reinterpret_cast<int8_t*>(q));
            return;
        case VT_FORMAT_FP8_CHANNEL: {
            float s = absmax(w, in) / 448.0f;
            if (!(s > 0.f)) s = 0.f;  // all zero (or only subnormal-tiny weights)
            if (s > 0.f) {
                quant_fp8(w, in, s, q);
            } else {
                std::memset(q, 0, static_cast<size_t>(in));
            }
            rowmul = s * 256.0f;
            return;
        }
        default: break;
    }
    // Blocked INT8 / FP8.
    const bool fp8 = p.format == VT_FORMAT_FP8_BLOCKED;
    const float div = fp8 ? 448.0f : 127.0f;
    const int64_t kb = p.kb, nkb = in / kb;
    uint16_t* sc = reinterpret_cast<uint16_t*>(tile + p.scale_off);
    float smax = 0.f;
    for (int64_t b = 0; b < nkb; ++b) smax = std::max(smax, absmax(w + b * kb, kb) / div);
    // Row multiplier 2^e puts smax/2^e in [2^14, 2^15): full f16 precision, no overflow.
    int e = smax > 0.f ? std::ilogb(smax) - 14 : 0;
    e = std::max(e, -126);
    const float pow2 = std::ldexp(1.0f, e);
    for (int64_t b = 0; b < nkb; ++b) {
        const float* wb = w + b * kb;
        uint8_t* d = q + b * kb;
        float s = absmax(wb, kb) / div;
        uint16_t h = s > 0.f ? f16_round_up(s / pow2) : 0;
        float se = f16_to_f32(h) * pow2;  // exact: 11-bit significand times a power of two
        sc[b * kTileRows + lane] = h;
        if (!(se > 0.f)) {
            std::memset(d, 0, static_cast<size_t>(kb));
        } else if (fp8) {
            quant_fp8(wb, kb, se, d);
        } else {
            quant_int8(wb, kb, se, d);
        }
    }
    rowmul = fp8 ? pow2 * 256.0f : pow2;
}

// q rows [16][in] (elements of T) -> tile weights [in][16].
template <class T>
void scatter_tile(const T* q, int64_t in, T* tile) {
    for (int64_t k = 0; k < in; ++k)
        for (int r = 0; r < kTileRows; ++r) tile[k * kTileRows + r] = q[r * in + k];
}

void pack_sparse_row(Packed& p, const float* w, int64_t r) {
    const bool int4 = p.format == VT_FORMAT_INT4_SPARSE24;
    const float qmax = int4 ? 7.f : 127.f;
    const int64_t in = p.in, ng = in / 4;
    float s = absmax(w, in) / qmax;
    if (!(s > 0.f)) s = 0.f;
    p.scales[r] = s;
    uint8_t* meta = p.meta.data() + r * ng;
    auto quant = [&](float v) -> int {
        if (s == 0.f) return 0;
        float q = rne(v / s);
        return static_cast<int>(std::min(qmax, std::max(-qmax, q)));
    };
    for (int64_t g = 0; g < ng; ++g) {
        const float* v = w + 4 * g;
        // The two largest |w|; on ties the lower index wins (strict > keeps the earlier).
        int i0 = 0;
        for (int i = 1; i < 4; ++i)
            if (std::fabs(v[i]) > std::fabs(v[i0])) i0 = i;
        int i1 = -1;
        for (int i = 0; i < 4; ++i)
            if (i != i0 && (i1 < 0 || std::fabs(v[i]) > std::fabs(v[i1]))) i1 = i;
        if (i1 < i0) std::swap(i0, i1);
        meta[g] = static_cast<uint8_t>(i0 | (i1 << 2));
        int q0 = quant(v[i0]), q1 = quant(v[i1]);
        if (int4) {
            p.q[r * (in / 4) + g] = static_cast<int8_t>((q0 & 0xF) | ((q1 & 0xF) << 4));
        } else {
            p.q[r * (in / 2) + 2 * g] = static_cast<int8_t>(q0);
            p.q[r * (in / 2) + 2 * g + 1] = static_cast<int8_t>(q1);
        }
    }
}

inline int int4_at(const int8_t* q, int64_t j) {  // j-th int4 value of a packed row
    int b = static_cast<uint8_t>(q[j >> 1]);
    int v = (j & 1) ? (b >> 4) : (b & 0xF);
    return v >= 8 ? v - 16 : v;
}

void unpack_row(const Packed& p, int64_t r, float* dst) {
    const int64_t in = p.in;
    if (p.dense()) {
        const int64_t t = r / kTileRows;
        const int lane = static_cast<int>(r % kTileRows);
        const uint8_t* tile = p.tiles.data() + t * p.tile_bytes;
        const float rm = p.rowmul[r];
        switch (p.format) {
            case VT_FORMAT_BF16: {
                const uint16_t* d = reinterpret_cast<const uint16_t*>(tile);
                for (int64_t k = 0; k < in; ++k) dst[k] = bf16_to_f32(d[k * kTileRows + lane]);
                return;
            }
            case VT_FORMAT_INT4_BLOCKED: {
                const uint16_t* sc = reinterpret_cast<const uint16_t*>(tile + p.scale_off);
                for (int64_t k = 0; k < in; ++k) {
                    const float se = f16_to_f32(sc[(k / p.kb) * kTileRows + lane]) * rm;
                    const uint8_t b = tile[(k / 2) * kTileRows + lane];
                    const int q = ((k & 1) ? (b >> 4) : (b & 0xF)) - 8;
                    dst[k] = static_cast<float>(q) * se;
                }
                return;
            }
            case VT_FORMAT_MXFP4: {
                const uint16_t* sc = reinterpret_cast<const uint16_t*>(tile + p.scale_off);
                for (int64_t k = 0; k < in; ++k) {
                    const float se = f16_to_f32(sc[(k / p.kb) * kTileRows + lane]) * rm;
                    const uint8_t b = tile[(k / 2) * kTileRows + lane];
                    dst[k] = static_cast<float>(cpu::kMxfp4Values[(k & 1) ? (b >> 4) : (b & 0xF)]) * se;
                }
                return;
            }
            case VT_FORMAT_INT4_MIN_BLOCKED: {  // (u * s + m) * rowmul: rowmul is 2^e or 1
                const uint16_t* sc = reinterpret_cast<const uint16_t*>(tile + p.scale_off);
                const uint16_t* mn = reinterpret_cast<const uint16_t*>(tile + p.min_off);
                for (int64_t k = 0; k < in; ++k) {
                    const int64_t bi = (k / p.kb) * kTileRows + lane;
                    const uint8_t b = tile[(k / 2) * kTileRows + lane];
                    const float u = static_cast<float>((k & 1) ? (b >> 4) : (b & 0xF));
                    // u * s is exact (4 by 11 bits), so this rounds once, as ggml's Q4_1.
                    dst[k] = (u * f16_to_f32(sc[bi]) + f16_to_f32(mn[bi])) * rm;
                }
                return;
            }
            case VT_FORMAT_FP8_CHANNEL: {
                const float s = rm / 256.0f;
                for (int64_t k = 0; k < in; ++k) dst[k] = fp8_to_f32(tile[k * kTileRows + lane]) * s;
                return;
            }
            default: {
                const bool fp8 = p.format == VT_FORMAT_FP8_BLOCKED;
                const float pow2 = fp8 ? rm / 256.0f : rm;
                const uint16_t* sc = reinterpret_cast<const uint16_t*>(tile + p.scale_off);
                for (int64_t k = 0; k < in; ++k) {
                    float se = f16_to_f32(sc[(k / p.kb) * kTileRows + lane]) * pow2;
                    uint8_t b = tile[k * kTileRows + lane];
                    float q = fp8 ? fp8_to_f32(b) : static_cast<float>(static_cast<int8_t>(b));
                    dst[k] = q * se;
                }
                return;
            }
        }
    }
    const int64_t ng = in / 4;
    const uint8_t* meta = p.meta.data() + r * ng;
    const float s = p.scales[r];
    std::fill(dst, dst + in, 0.f);
    for (int64_t g = 0; g < ng; ++g) {
        int i0 = meta[g] & 3, i1 = (meta[g] >> 2) & 3;
        int q0, q1;
        if (p.format == VT_FORMAT_INT4_SPARSE24) {
            const int8_t* qr = p.q.data() + r * (in / 4);
            q0 = int4_at(qr, 2 * g);
            q1 = int4_at(qr, 2 * g + 1);
        } else {
            q0 = p.q[r * (in / 2) + 2 * g];
            q1 = p.q[r * (in / 2) + 2 * g + 1];
        }
        dst[4 * g + i0] = static_cast<float>(q0) * s;
        dst[4 * g + i1] = static_cast<float>(q1) * s;
    }
}

}  // namespace

int64_t layout_dense_tiles(Packed& p, int64_t wbytes, int64_t nkb, bool mins) {
    p.ntiles = (p.out + kTileRows - 1) / kTileRows;
    p.scale_off = nkb > 0 ? (wbytes + 63) / 64 * 64 : 0;
    p.min_off = nkb > 0 && mins ? p.scale_off + nkb * kTileRows * 2 : 0;
    const int64_t end = nkb > 0 ? p.scale_off + nkb * kTileRows * 2 * (mins ? 2 : 1) : wbytes;
    p.tile_bytes = (end + 63) / 64 * 64;
    p.tiles.allocate(static_cast<size_t>(p.ntiles * p.tile_bytes));
    p.rowmul.assign(static_cast<size_t>(p.ntiles * kTileRows), 0.f);
    return end;
}

std::unique_ptr<Packed> pack_mxfp4_blocks(const uint8_t* blocks, const uint8_t* scales, int64_t rows, int64_t cols) {
    VT_CHECK_ARG(blocks != nullptr && scales != nullptr, "pack_mxfp4_blocks: NULL data");
    VT_CHECK_ARG(rows > 0 && cols > 0 && cols % 32 == 0 && rows <= (INT64_C(1) << 31) && cols <= (INT64_C(1) << 31),
                 "pack_mxfp4_blocks: shape [%lld, %lld] is not whole blocks of 32", static_cast<long long>(rows),
                 static_cast<long long>(cols));
    const int64_t nb = cols / 32;
    for (int64_t r = 0; r < rows; ++r) {
        int lo = 255, hi = 0;
        for (int64_t b = 0; b < nb; ++b) {
            const int e = scales[r * nb + b];
            VT_CHECK_ARG(e != 0xFF, "pack_mxfp4_blocks: row %lld block %lld has the NaN scale 0xFF",
                         static_cast<long long>(r), static_cast<long long>(b));
            lo = std::min(lo, e);
            hi = std::max(hi, e);
        }
        if (hi - lo > 38) return nullptr;  // beyond the f16 scales' reach under one row multiplier
    }
    auto p = std::make_unique<Packed>();
    p->format = VT_FORMAT_MXFP4;
    p->out = rows;
    p->in = cols;
    p->block = p->kb = 32;
    layout_dense_tiles(*p, cols / 2 * kTileRows, nb, false);
    Packed& pr = *p;
    parallel_for(p->ntiles, 1, [&](int64_t t0, int64_t t1, int) {
        for (int64_t t = t0; t < t1; ++t) {
            uint8_t* tile = pr.tiles.data() + t * pr.tile_bytes;
            std::memset(tile, 0, static_cast<size_t>(pr.tile_bytes));  // padding rows: code 0, scale 0
            uint16_t* sc = reinterpret_cast<uint16_t*>(tile + pr.scale_off);
            for (int lane = 0; lane < kTileRows; ++lane) {
                const int64_t r = t * kTileRows + lane;
                if (r >= rows) break;
                const uint8_t* s = scales + r * nb;
                const uint8_t* q = blocks + r * nb * 16;
                int hi = 0;
                for (int64_t b = 0; b < nb; ++b) hi = std::max<int>(hi, s[b]);
                // w = E2M1(u) 2^(S - 127) = kMxfp4Values[u] 2^(S - 128): the f16 scale
                // 2^(S - 128 - m) with rowmul 2^m, m putting the row's largest at 2^14 (a normal
                // f32 multiplier: m >= -126; then every exponent lies in [-24, 14]).
                const int m = std::max(hi - 128 - 14, -126);
                pr.rowmul[t * kTileRows + lane] = std::ldexp(1.0f, m);
                for (int64_t b = 0; b < nb; ++b) {
                    sc[b * kTileRows + lane] = f16_pow2(s[b] - 128 - m);
                    // byte j of a block: k = 2j in its low nibble, 2j + 1 in its high one — the
                    // tile's own pairing (quant.h), so the codes are copied as they are
                    for (int j = 0; j < 16; ++j) tile[(b * 16 + j) * kTileRows + lane] = q[b * 16 + j];
                }
            }
        }
    });
    return p;
}

int32_t default_block_size(vt_format format) {
    switch (format) {
        case VT_FORMAT_FP8_BLOCKED: return 16;
        case VT_FORMAT_INT8_BLOCKED: return 32;
        case VT_FORMAT_INT4_BLOCKED: return 32;
        case VT_FORMAT_INT4_MIN_BLOCKED: return 32;
        case VT_FORMAT_MXFP4: return 32;
        default: return 0;
    }
}

std::unique_ptr<Packed> prepack(const void* w, vt_dtype dtype, int64_t out, int64_t in,
                                vt_format format, int32_t block_size) {
    const int f = static_cast<int>(format);
    VT_CHECK_ARG(f >= VT_FORMAT_FP8_CHANNEL && f <= VT_FORMAT_MXFP4,
                 "prepack: unknown format %d (expected 1..9: FP8_CHANNEL, FP8_BLOCKED, "
                 "INT8_BLOCKED, INT8_SPARSE24, INT4_SPARSE24, BF16, INT4_BLOCKED, "
                 "INT4_MIN_BLOCKED, MXFP4)", f);
    VT_CHECK_ARG(dtype == VT_DTYPE_F32 || dtype == VT_DTYPE_F16 || dtype == VT_DTYPE_BF16,
                 "prepack: weight dtype %d is not F32 (0), F16 (1) or BF16 (2)",
                 static_cast<int>(dtype));
    VT_CHECK_ARG(out > 0 && in > 0, "prepack: weight shape [%lld, %lld] is empty (out_features "
                 "and in_features must be >= 1)", static_cast<long long>(out),
                 static_cast<long long>(in));
    VT_CHECK_ARG(out <= (INT64_C(1) << 31) && in <= (INT64_C(1) << 31) && out * in <= (INT64_C(1) << 40),
                 "prepack: weight shape [%lld, %lld] is too large", static_cast<long long>(out),
                 static_cast<long long>(in));
    VT_CHECK_ARG(w != nullptr, "prepack: weight pointer is NULL");
    check_array(w, out * in, vt_dtype_size(dtype), "prepack: w");

    auto p = std::make_unique<Packed>();
    p->format = format;
    p->out = out;
    p->in = in;
    const bool int4m = format == VT_FORMAT_INT4_MIN_BLOCKED;
    // 4-bit dense: two k per byte, and the last K-block may be short.
    const bool int4b = format == VT_FORMAT_INT4_BLOCKED || int4m || format == VT_FORMAT_MXFP4;
    const bool blocked = format == VT_FORMAT_FP8_BLOCKED || format == VT_FORMAT_INT8_BLOCKED || int4b;
    if (blocked) {
        int32_t b = block_size == 0 ? default_block_size(format) : block_size;
        VT_CHECK_ARG(b == 16 || b == 32 || b == 64 || b == 128,
                     "prepack: block_size %d is not one of 16, 32, 64, 128", b);
        VT_CHECK_ARG(format != VT_FORMAT_MXFP4 || b == 32,
                     "prepack: block_size %d is not MXFP4's block (32 weights per scale)", b);
        VT_CHECK_ARG(int4b || in % b == 0, "prepack: in_features (%lld) is not a multiple of block_size (%d)",
                     static_cast<long long>(in), b);
        p->block = b;
        p->kb = b;
    } else {
        // block_size is ignored by the per-channel, sparse and bf16 formats.
        p->block = static_cast<int32_t>(std::min<int64_t>(in, INT32_MAX));
        p->kb = static_cast<int32_t>(std::min<int64_t>(in, INT32_MAX));
    }

    BadWeight bad;
    if (p->dense()) {
        const int64_t eb = format == VT_FORMAT_BF16 ? 2 : 1;
        const int64_t wbytes = int4b ? (in + 1) / 2 * kTileRows : in * kTileRows * eb;
        // INT4_MIN_BLOCKED: the mins follow the scales (the layout ggml_import.cpp packs).
        const int64_t end = layout_dense_tiles(*p, wbytes, blocked ? (in + p->kb - 1) / p->kb : 0, int4m);
        Packed& pr = *p;
        parallel_for(p->ntiles, 1, [&](int64_t t0, int64_t t1, int) {
            std::vector<float> row(static_cast<size_t>(in));
            AlignedVec<uint8_t> q(static_cast<size_t>(kTileRows * in * eb));
            for (int64_t t = t0; t < t1; ++t) {
                uint8_t* tile = pr.tiles.data() + t * pr.tile_bytes;
                // Padding (rows past out, alignment) is zero, for determinism.
                std::memset(q.data(), 0, q.size());
                if (pr.scale_off) std::memset(tile + wbytes, 0, static_cast<size_t>(pr.tile_bytes - wbytes));
                else std::memset(tile + end, 0, static_cast<size_t>(pr.tile_bytes - end));
                for (int lane = 0; lane < kTileRows; ++lane) {
                    int64_t r = t * kTileRows + lane;
                    pr.rowmul[t * kTileRows + lane] = 0.f;
                    if (r >= out) continue;
                    load_row(w, dtype, in, r, row.data());
                    if (!bad.check(row.data(), in, r)) continue;
                    pack_dense_row(pr, row.data(), t, lane, q.data() + lane * in * eb);
                }
                if (int4b) {
                    scatter_tile_int4(reinterpret_cast<const int8_t*>(q.data()), in, tile,
                                      int4m || format == VT_FORMAT_MXFP4 ? 0 : 8);
                } else if (eb == 2) {
                    scatter_tile(reinterpret_cast<const uint16_t*>(q.data()), in,
                                 reinterpret_cast<uint16_t*>(tile));
                } else {
                    scatter_tile(q.data(), in, tile);
                }
            }
        });
    } else {
        VT_CHECK_ARG(in % 4 == 0, "prepack: in_features (%lld) of a 2:4 sparse format must be a "
                     "multiple of 4", static_cast<long long>(in));
        // int32 accumulation: in/2 products of at most 127*127 must fit.
        VT_CHECK_ARG(in <= 262144, "prepack: in_features (%lld) exceeds 262144, the limit of "
                     "int32 accumulation for 2:4 sparse formats", static_cast<long long>(in));
        const bool int4 = format == VT_FORMAT_INT4_SPARSE24;
        p->q.resize(static_cast<size_t>(out * (int4 ? in / 4 : in / 2)));
        p->meta.resize(static_cast<size_t>(out * (in / 4)));
        p->scales.resize(static_cast<size_t>(out));
        Packed& pr = *p;
        parallel_for(out, 16, [&](int64_t r0, int64_t r1, int) {
            std::vector<float> row(static_cast<size_t>(in));
            for (int64_t r = r0; r < r1; ++r) {
                load_row(w, dtype, in, r, row.data());
                if (!bad.check(row.data(), in, r)) continue;
                pack_sparse_row(pr, row.data(), r);
            }
        });
    }
    int64_t first = bad.first.load();
    if (first != INT64_MAX) {
        int64_t r = first / in, c = first % in;
        std::vector<float> row(static_cast<size_t>(in));
        load_row(w, dtype, in, r, row.data());
        fail(VT_STATUS_INVALID_ARGUMENT, "prepack: weight at row %lld, column %lld is %s "
             "(weights must be finite)", static_cast<long long>(r), static_cast<long long>(c),
             std::isnan(row[c]) ? "NaN" : (row[c] > 0 ? "+Inf" : "-Inf"));
    }
    return p;
}

void unpack(const Packed& p, float* dst) {
    VT_CHECK_ARG(dst != nullptr, "unpack: dst is NULL");
    parallel_for(p.out, 16, [&](int64_t r0, int64_t r1, int) {
        for (int64_t r = r0; r < r1; ++r) unpack_row(p, r, dst + r * p.in);
    });
}

void unpack_rows(const Packed& p, int64_t row0, int64_t nrows, float* dst) {
    VT_CHECK_ARG(dst != nullptr, "unpack_rows: dst is NULL");
    VT_CHECK_ARG(row0 >= 0 && nrows >= 0 && row0 + nrows <= p.out,
                 "unpack_rows: rows [%lld, %lld) are outside [0, %lld)",
                 static_cast<long long>(row0), static_cast<long long>(row0 + nrows),
                 static_cast<long long>(p.out));
    for (int64_t r = 0; r < nrows; ++r) unpack_row(p, row0 + r, dst + r * p.in);
}

}  // namespace vt

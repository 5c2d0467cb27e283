// AVX2 + FMA + F16C kernels. Compiled with those flags; called when cpu_level() == 1, and for
// int4 at cpu_level() == 2 too (linear.cpp, integer_kernels), where gemv_int4_vnni, below, also
// uses AVX-512 VNNI + VBMI (target attributes of its own).
// A tile's 16 rows at one k are two ymm (rows 0-7, 8-15); otherwise the same scheme as
// kernels_avx512.cpp, with a 6 x 16 GEMM microkernel (12 accumulators of 16 registers).

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels.h"
#include "../ops/exp_nonpos.h"

namespace vt {
namespace cpu {
namespace {

constexpr int L = 16;

inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

struct V2 {
    __m256 lo, hi;
};

template <int Kind>
inline V2 dec(const uint8_t* p) {
    if constexpr (Kind == kInt8Blocked) {
        __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        return {_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)),
                _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(q, q)))};
    } else if constexpr (Kind == kBf16) {
        __m256i a = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        __m256i b = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16)));
        return {_mm256_castsi256_ps(_mm256_slli_epi32(a, 16)), _mm256_castsi256_ps(_mm256_slli_epi32(b, 16))};
    } else {
        // E4M3 -> f16 bit pattern (2^-8 times the value; see kernels_avx512.cpp).
        __m256i h = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        h = _mm256_and_si256(_mm256_slli_epi16(h, 7), _mm256_set1_epi16(static_cast<short>(0xBFFF)));
        return {_mm256_cvtph_ps(_mm256_castsi256_si128(h)), _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1))};
    }
}

template <int Kind>
constexpr int elem_bytes() { return Kind == kBf16 ? 2 : 1; }
template <int Kind>
constexpr bool scaled() { return Kind == kInt8Blocked || Kind == kFp8Blocked; }

inline V2 load_f16x16(const uint16_t* p) {
    __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return {_mm256_cvtph_ps(_mm256_castsi256_si128(h)), _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1))};
}

// ---- vector math for the epilogues ----------------------------------------------------

inline __m256 exp8(__m256 x) {
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.3f));
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 y = _mm256_set1_ps(1.9875691500e-4f);
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.3981999507e-3f));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(8.3334519073e-3f));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(4.1665795894e-2f));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.6666665459e-1f));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(5.0000001201e-1f));
    y = _mm256_fmadd_ps(y, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    // n in [-126, 127] after the clamp: 2^n built directly in the exponent field.
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

inline __m256 silu8(__m256 g) {
    __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), g));
    return _mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

inline __m256 gelu8(__m256 x) {
    const __m256 ax = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
    const __m256 z = _mm256_mul_ps(ax, _mm256_set1_ps(0.70710678118654752f));
    const __m256 t = _mm256_div_ps(_mm256_set1_ps(1.0f),
                                   _mm256_fmadd_ps(z, _mm256_set1_ps(0.5f), _mm256_set1_ps(1.0f)));
    __m256 p = _mm256_set1_ps(0.17087277f);
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.82215223f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.48851587f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.13520398f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.27886807f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.18628806f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.09678418f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.37409196f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.00002368f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.26551223f));
    p = _mm256_fnmadd_ps(z, z, p);
    const __m256 erfc = _mm256_mul_ps(t, exp8(p));
    const __m256 pos = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GE_OQ);
    const __m256 f = _mm256_blendv_ps(erfc, _mm256_sub_ps(_mm256_set1_ps(2.0f), erfc), pos);
    return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), f);
}

// Lane masks (all ones = valid) for the two halves of a tile.
inline void tile_masks(const DenseW& w, int64_t t, __m256i& mlo, __m256i& mhi, bool& full) {
    const int64_t valid = w.out - t * L;
    full = valid >= L;
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i v = _mm256_set1_epi32(static_cast<int>(valid < L ? valid : L));
    mlo = _mm256_cmpgt_epi32(v, idx);
    mhi = _mm256_cmpgt_epi32(v, _mm256_add_epi32(idx, _mm256_set1_epi32(8)));
}

inline __m256 half_epi(const LinearJob& job, int64_t c, __m256i mask, bool full, __m256 g, __m256 u) {
    if (job.bias) g = _mm256_add_ps(g, full ? _mm256_loadu_ps(job.bias + c) : _mm256_maskload_ps(job.bias + c, mask));
    if (job.act == kActGelu) {
        g = gelu8(g);
    } else if (gated(job.act)) {
        if (job.bias2)
            u = _mm256_add_ps(u, full ? _mm256_loadu_ps(job.bias2 + c) : _mm256_maskload_ps(job.bias2 + c, mask));
        if (job.act == kActGeglu)
            ops::gelu_tanh_v(g);
        else
            g = silu8(g);
        g = _mm256_mul_ps(g, u);
    }
    return g;
}

inline void epilogue(const LinearJob& job, int64_t t, V2 g, V2 u, float* yrow) {
    __m256i mlo, mhi;
    bool full;
    tile_masks(job.w, t, mlo, mhi, full);
    const int64_t c = t * L;
    __m256 lo = half_epi(job, c, mlo, full, g.lo, u.lo);
    __m256 hi = half_epi(job, c + 8, mhi, full, g.hi, u.hi);
    if (full) {
        _mm256_storeu_ps(yrow + c, lo);
        _mm256_storeu_ps(yrow + c + 8, hi);
    } else {
        _mm256_maskstore_ps(yrow + c, mlo, lo);
        _mm256_maskstore_ps(yrow + c + 8, mhi, hi);
    }
}

// ---- GEMV ----------------------------------------------------------------------------------

// Asks for the same 64-byte line of the next tile (see kernels_avx512.cpp: the hardware
// prefetchers alone leave the GEMV far below the DRAM bandwidth).
inline void prefetch_next_tile(const uint8_t* line, const DenseW& w) {
    const char* p = reinterpret_cast<const char*>(line + w.tile_bytes);
    if (w.prefetch_l2) _mm_prefetch(p, _MM_HINT_T1);
    else _mm_prefetch(p, _MM_HINT_T0);
}

// ---- INT4_BLOCKED (quant.h): one 16-byte load is k and k + 1 of the tile's 16 rows; the
// nibbles index a 16-byte table of q = u - 8 (vpshufb), then widen to f32.

inline V2 int4_widen(__m128i q8) {
    return {_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8)),
            _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(q8, q8)))};
}

inline __m128i int4_lut() { return _mm_setr_epi8(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7); }
// INT4_MIN_BLOCKED: u as it is (the identity table; the nibble needs no shuffle).
inline __m128i int4_min_lut() { return _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15); }

// MXFP4: twice the E2M1 values (kMxfp4Values), as bytes.
inline __m128i mxfp4_lut() { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4Values)); }
// The byte table of a nibble kind (kernels.h nibble_kind).
template <int Kind>
inline __m128i nibble_lut() {
    if constexpr (Kind == kInt4Min) return int4_min_lut();
    else if constexpr (Kind == kMxfp4) return mxfp4_lut();
    else return int4_lut();
}

template <bool Min>
inline __m128i int4_map(__m128i lut, __m128i nib) {
    if constexpr (Min) {
        (void)lut;
        return nib;
    } else {
        return _mm_shuffle_epi8(lut, nib);
    }
}

// q (Min: u) of the 16 rows at k and k + 1.
template <bool Min = false>
inline void dec_int4_pair(const uint8_t* p, __m128i lut, V2& lo, V2& hi) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i m4 = _mm_set1_epi8(0x0F);
    lo = int4_widen(int4_map<Min>(lut, _mm_and_si128(b, m4)));
    hi = int4_widen(int4_map<Min>(lut, _mm_and_si128(_mm_srli_epi16(b, 4), m4)));
}

template <bool Min = false>
inline V2 dec_int4(const uint8_t* tile, int64_t k, __m128i lut) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(tile + (k >> 1) * L));
    const __m128i n = _mm_and_si128((k & 1) ? _mm_srli_epi16(b, 4) : b, _mm_set1_epi8(0x0F));
    return int4_widen(int4_map<Min>(lut, n));
}

inline void fma2(V2& acc, const V2& w, __m256 xv) {
    acc.lo = _mm256_fmadd_ps(w.lo, xv, acc.lo);
    acc.hi = _mm256_fmadd_ps(w.hi, xv, acc.hi);
}

// As kernels_avx512.cpp's gemv_tile_int4: per block, two chains per row (k, k + 1), a
// short last block and an odd last k after the full pairs. Min (INT4_MIN_BLOCKED): u as it
// is, and per block acc += scale * sum(u x) + min * xsum[i][block]. MXFP4: the E2M1 table.
template <int M, int Kind>
inline void gemv_tile_int4(const DenseW& w, int64_t t, const float* x, const float* xsum, V2* out) {
    constexpr bool Min = Kind == kInt4Min;
    const uint8_t* tile = w.tiles + t * w.tile_bytes;
    const uint16_t* sc = reinterpret_cast<const uint16_t*>(tile + w.scale_off);
    const uint16_t* mn = reinterpret_cast<const uint16_t*>(tile + w.min_off);
    const int64_t in = w.in, kb = w.kb, nkb = Min ? num_kblocks(w) : 0;
    const __m128i lut = nibble_lut<Kind>();
    V2 acc[M];
    for (int i = 0; i < M; ++i) acc[i] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t k0 = 0, bi = 0; k0 < in; k0 += kb, ++bi) {
        const int64_t n = min64(kb, in - k0), np = n / 2;
        V2 part[2][M];
        for (int c = 0; c < 2; ++c)
            for (int i = 0; i < M; ++i) part[c][i] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
        const uint8_t* q = tile + (k0 / 2) * L;
        const float* xk = x + k0;
        for (int64_t j = 0; j < np; ++j) {
            if (((j * L) & 63) == 0) prefetch_next_tile(q + j * L, w);
            V2 lo, hi;
            dec_int4_pair<Min>(q + j * L, lut, lo, hi);
#pragma GCC unroll 4
            for (int i = 0; i < M; ++i) {
                fma2(part[0][i], lo, _mm256_set1_ps(*(xk + i * in + 2 * j)));
                fma2(part[1][i], hi, _mm256_set1_ps(*(xk + i * in + 2 * j + 1)));
            }
        }
        if (n & 1) {
            const V2 lo = dec_int4<Min>(q, 2 * np, lut);
            for (int i = 0; i < M; ++i) fma2(part[0][i], lo, _mm256_set1_ps(*(xk + i * in + 2 * np)));
        }
        if (((bi * L * 2) & 63) == 0) prefetch_next_tile(reinterpret_cast<const uint8_t*>(sc + bi * L), w);
        const V2 s = load_f16x16(sc + bi * L);
        for (int i = 0; i < M; ++i) {
            acc[i].lo = _mm256_fmadd_ps(_mm256_add_ps(part[0][i].lo, part[1][i].lo), s.lo, acc[i].lo);
            acc[i].hi = _mm256_fmadd_ps(_mm256_add_ps(part[0][i].hi, part[1][i].hi), s.hi, acc[i].hi);
        }
        if constexpr (Min) {
            if (((bi * L * 2) & 63) == 0) prefetch_next_tile(reinterpret_cast<const uint8_t*>(mn + bi * L), w);
            const V2 mv = load_f16x16(mn + bi * L);
            for (int i = 0; i < M; ++i) {
                const __m256 xs = _mm256_set1_ps(*(xsum + i * nkb + bi));
                fma2(acc[i], mv, xs);
            }
        }
    }
    const __m256 rlo = _mm256_loadu_ps(w.rowmul + t * L), rhi = _mm256_loadu_ps(w.rowmul + t * L + 8);
    for (int i = 0; i < M; ++i) out[i] = {_mm256_mul_ps(acc[i].lo, rlo), _mm256_mul_ps(acc[i].hi, rhi)};
}

template <int Kind, int M>
inline void gemv_tile(const DenseW& w, int64_t t, const float* x, const float* xsum, V2* out) {
    if constexpr (Kind == kInt4Blocked || Kind == kInt4Min || Kind == kMxfp4) {
        gemv_tile_int4<M, Kind>(w, t, x, xsum, out);
        return;
    }
    constexpr int C = M == 1 ? 2 : 1;
    constexpr int EB = elem_bytes<Kind>();
    const uint8_t* tile = w.tiles + t * w.tile_bytes;
    const int64_t in = w.in;
    V2 acc[M];
    for (int i = 0; i < M; ++i) acc[i] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    if constexpr (scaled<Kind>()) {
        const uint16_t* sc = reinterpret_cast<const uint16_t*>(tile + w.scale_off);
        const int64_t kb = w.kb;
        for (int64_t k0 = 0, bi = 0; k0 < in; k0 += kb, ++bi) {
            V2 part[C][M];
            for (int c = 0; c < C; ++c)
                for (int i = 0; i < M; ++i) part[c][i] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
            const uint8_t* q = tile + k0 * L;
            const float* xk = x + k0;
            for (int64_t k = 0; k < kb; k += C) {
                if (((k * L) & 63) == 0) prefetch_next_tile(q + k * L, w);
#pragma GCC unroll 2
                for (int c = 0; c < C; ++c) {
                    const V2 wv = dec<Kind>(q + (k + c) * L);
#pragma GCC unroll 4
                    for (int i = 0; i < M; ++i) {
                        const __m256 xv = _mm256_set1_ps(*(xk + i * in + k + c));
                        part[c][i].lo = _mm256_fmadd_ps(wv.lo, xv, part[c][i].lo);
                        part[c][i].hi = _mm256_fmadd_ps(wv.hi, xv, part[c][i].hi);
                    }
                }
            }
            if (((bi * L * 2) & 63) == 0) prefetch_next_tile(reinterpret_cast<const uint8_t*>(sc + bi * L), w);
            const V2 s = load_f16x16(sc + bi * L);
            for (int i = 0; i < M; ++i) {
                V2 sum = part[0][i];
                for (int c = 1; c < C; ++c) {
                    sum.lo = _mm256_add_ps(sum.lo, part[c][i].lo);
                    sum.hi = _mm256_add_ps(sum.hi, part[c][i].hi);
                }
                acc[i].lo = _mm256_fmadd_ps(sum.lo, s.lo, acc[i].lo);
                acc[i].hi = _mm256_fmadd_ps(sum.hi, s.hi, acc[i].hi);
            }
        }
    } else {
        for (int64_t k = 0; k < in; ++k) {
            if (((k * L * EB) & 63) == 0) prefetch_next_tile(tile + k * L * EB, w);
            const V2 wv = dec<Kind>(tile + k * L * EB);
            for (int i = 0; i < M; ++i) {
                const __m256 xv = _mm256_set1_ps(*(x + i * in + k));
                acc[i].lo = _mm256_fmadd_ps(wv.lo, xv, acc[i].lo);
                acc[i].hi = _mm256_fmadd_ps(wv.hi, xv, acc[i].hi);
            }
        }
    }
    const __m256 rlo = _mm256_loadu_ps(w.rowmul + t * L), rhi = _mm256_loadu_ps(w.rowmul + t * L + 8);
    for (int i = 0; i < M; ++i) out[i] = {_mm256_mul_ps(acc[i].lo, rlo), _mm256_mul_ps(acc[i].hi, rhi)};
}

template <int Kind, int M>
void gemv_range(const LinearJob& job, int64_t t0, int64_t t1) {
    const int64_t out = job.w.out;
    for (int64_t t = t0; t < t1; ++t) {
        V2 g[M], u[M];
        gemv_tile<Kind, M>(job.w, t, job.x, job.xsum, g);
        if (gated(job.act)) gemv_tile<Kind, M>(job.w2, t, job.x, job.xsum, u);
        for (int i = 0; i < M; ++i) epilogue(job, t, g[i], gated(job.act) ? u[i] : g[i], job.y + i * out);
    }
}

template <int Kind>
void gemv_kind(const LinearJob& job, int64_t t0, int64_t t1) {
    switch (job.m) {
        case 1: gemv_range<Kind, 1>(job, t0, t1); break;
        case 2: gemv_range<Kind, 2>(job, t0, t1); break;
        case 3: gemv_range<Kind, 3>(job, t0, t1); break;
        default: gemv_range<Kind, 4>(job, t0, t1); break;
    }
}

// ---- 4-bit GEMV in integers (AVX2; int16_gemv_ok, LinearJob::xp) --------------------------
//
// acc += vpmaddwd(x, w), in place. Written as asm because GCC 12, given the intrinsics,
// computed each sum into a fresh register and copied it back, or rewrote a run of
// accumulations into an add tree whose products it spilled to the stack (at 5-6 rows of the
// GEMM; in the unrolled GEMV loops): with the accumulate tied to its register, they fit.
inline void madd_acc(__m256i& acc, __m256i x, __m256i w) {
    __m256i t;
    __asm__("vpmaddwd %2, %3, %1\n\tvpaddd %1, %0, %0" : "+x"(acc), "=&x"(t) : "x"(w), "x"(x));
}

// acc += vpmaddubsw(u, x) (u unsigned bytes, x signed), in int16, in place (as madd_acc).
inline void maddubs_acc(__m256i& acc, __m256i u, __m256i x) {
    __m256i t;
    __asm__("vpmaddubsw %3, %2, %1\n\tvpaddw %1, %0, %0" : "+x"(acc), "=&x"(t) : "x"(u), "x"(x));
}

// The f32 4-bit GEMV spends ~17 instructions per 32 weights widening nibbles to f32 and is
// bound by that, not by memory. Here x is rounded to int16 as for the integer GEMM and each
// value split into two signed bytes, q = 256 h + l; a 16-byte row of the tile (the pair k,
// k + 1 of 16 rows) becomes 16 byte pairs (u_k, u_k+1) in 4 instructions, and vpmaddubsw
// multiplies them by the broadcast pairs (h_k, h_k+1) and (l_k, l_k+1): one int16 sum per
// row, exact (|sum| <= 2 * 15 * 128). Eight pairs add up in int16 (<= 30720), then
// vpmaddwd with (1, 256) joins l and h into int32 — the block's exact sum of u * q. Each
// block then adds into f32 with the weight and x scales and int4-min's min * xs * sum(xq)
// (LinearJob::xqsum). int4 rounds x to one byte instead (gemv_tile_i4a8, below).

// Two 16-byte rows of a tile (the pairs p and p + 1 of 16 rows, 32 bytes at q) as byte pairs
// (u, u') of one k pair for vpmaddubsw: a[0] = rows 0-7, a[1] = rows 8-15, pair p in the low
// 128-bit lane and p + 1 in the high one (unpack works within lanes). 5 instructions for 64
// weights (widening each 16-byte row to 16-bit lanes first took 4 for 32).
inline void nibble_pairs(__m256i v, __m256i* a) {
    const __m256i m = _mm256_set1_epi8(0x0F);
    const __m256i lo = _mm256_and_si256(v, m), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m);
    a[0] = _mm256_unpacklo_epi8(lo, hi);
    a[1] = _mm256_unpackhi_epi8(lo, hi);
}

// The int32 word index in a row of xp of pair p's h word (its l word follows): groups of 4
// pairs are laid out h(p), l(p), h(p+2), l(p+2) | h(p+1), l(p+1), h(p+3), l(p+3), so one
// 256-bit load and a vpshufd give the h (or l) words of pairs p and p + 1 in the two lanes
// nibble_pairs puts them in (split_x16_avx2).
inline int64_t xp_word(int64_t p) {
    constexpr int8_t pos[4] = {0, 4, 2, 6};
    return (p & ~int64_t(3)) * 2 + pos[p & 3];
}

// int4-min (int4 has gemv_tile_i4a8): rows i < R of x (R <= 2) against tile t: out[i] = sum
// over blocks (block sum of u * q) * scale * xs + the min term. xp rows at stride ldp (int32
// words, as split_x16_avx2 lays them out; each word a byte pair (h_2p, h_2p+1) or (l_2p, l_2p+1)
// twice).
// Fp4 (MXFP4): the nibble bytes through a table of v + 12 (v the E2M1 code's doubled value,
// 0 .. 24) for vpmaddubsw, no mins, 12 * sum(xq) off each block's int32 sum (the exact sum of
// v * xq, as the int16 GEMM's); the int16 lanes are joined every 4 pairs instead of 8
// (4 * 2 * 24 * 128 = 24576).
template <int R, bool Fp4 = false>
inline void gemv_tile_i4x8(const DenseW& w, int64_t t, const int32_t* xp, int64_t ldp, const float* xs,
                           const float* xsum, int64_t nkb, V2* out) {
    const __m256i fp4 = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4Plus12)));
    const auto decode = [&](__m256i v, __m256i* a) {
        nibble_pairs(v, a);
        if constexpr (Fp4) {
            a[0] = _mm256_shuffle_epi8(fp4, a[0]);
            a[1] = _mm256_shuffle_epi8(fp4, a[1]);
        }
    };
    const uint8_t* tile = w.tiles + t * w.tile_bytes;
    const uint16_t* sc = reinterpret_cast<const uint16_t*>(tile + w.scale_off);
    const uint16_t* mn = reinterpret_cast<const uint16_t*>(tile + w.min_off);
    const int64_t kb = w.kb, np_all = (w.in + 1) / 2;
    const __m256 rlo = _mm256_loadu_ps(w.rowmul + t * L), rhi = _mm256_loadu_ps(w.rowmul + t * L + 8);
    const __m256i join = _mm256_set1_epi32(0x01000001);  // (l, h) -> l + 256 h
    __m256 flo[R], fhi[R];
    for (int i = 0; i < R; ++i) flo[i] = fhi[i] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nkb; ++b) {
        const int64_t p0 = b * kb / 2, p1 = min64(p0 + kb / 2, np_all);  // p0: a multiple of 8
        __m256i slo[R], shi[R];  // int32 block sums of rows 0-7 and 8-15
        for (int i = 0; i < R; ++i) slo[i] = shi[i] = _mm256_setzero_si256();
        for (int64_t c0 = p0; c0 < p1; c0 += 16) {  // a chunk of 16 pairs: a whole block of 32
            const int64_t c1 = min64(c0 + 16, p1);
            // int16 sums of u * h and u * l: [g] = rows 0-7 (g = 0) or 8-15, both lanes the
            // same rows over alternate pairs; each lane adds at most 8 products of at most
            // 2 * 15 * 128 before it is joined (flush): <= 30720, no overflow (Fp4: 4 of 2 * 24 * 128).
            __m256i ah[R][2], al[R][2];
            for (int i = 0; i < R; ++i) ah[i][0] = ah[i][1] = al[i][0] = al[i][1] = _mm256_setzero_si256();
            const auto madd = [&](const __m256i* a, int i, __m256i xh, __m256i xl) {
                for (int g = 0; g < 2; ++g) {
                    maddubs_acc(ah[i][g], a[g], xh);
                    maddubs_acc(al[i][g], a[g], xl);
                }
            };
            // Join l + 256 h in int32 (once per block of 32 where the bound allows: this took
            // ~30 % of the time once per 8 pairs): rows 0-3 | 0-3 and 4-7 | 4-7 (alternate
            // pairs in the two lanes), then the lanes added in row order; the int16 sums restart.
            const auto flush = [&] {
                for (int i = 0; i < R; ++i)
                    for (int g = 0; g < 2; ++g) {
                        const __m256i t0 = _mm256_madd_epi16(_mm256_unpacklo_epi16(al[i][g], ah[i][g]), join);
                        const __m256i t1 = _mm256_madd_epi16(_mm256_unpackhi_epi16(al[i][g], ah[i][g]), join);
                        const __m256i r = _mm256_add_epi32(_mm256_permute2x128_si256(t0, t1, 0x20),
                                                           _mm256_permute2x128_si256(t0, t1, 0x31));
                        if (g == 0) slo[i] = _mm256_add_epi32(slo[i], r);
                        else shi[i] = _mm256_add_epi32(shi[i], r);
                        ah[i][g] = al[i][g] = _mm256_setzero_si256();
                    }
            };
            if (c1 - c0 == 16) {  // whole chunks unrolled: the loop's own instructions cost ~40 %
                const uint8_t* q = tile + c0 * L;
                for (int e = 0; e < 4; ++e) prefetch_next_tile(q + 64 * e, w);  // the chunk's lines
#pragma GCC unroll 4
                for (int e = 0; e < 4; ++e) {  // 4 pairs: c0 + 4e ..
                    __m256i xv[R];
                    for (int i = 0; i < R; ++i)
                        xv[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xp + i * ldp + 2 * (c0 + 4 * e)));
                    __m256i a[2];
                    decode(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 4 * e * L)), a);
                    for (int i = 0; i < R; ++i)
                        madd(a, i, _mm256_shuffle_epi32(xv[i], 0x00), _mm256_shuffle_epi32(xv[i], 0x55));
                    decode(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + (4 * e + 2) * L)), a);
                    for (int i = 0; i < R; ++i)
                        madd(a, i, _mm256_shuffle_epi32(xv[i], 0xAA), _mm256_shuffle_epi32(xv[i], 0xFF));
                    if (Fp4 && e == 1) flush();  // 4 pairs a lane so far
                }
            } else {  // the end of a short last block: one pair at a time, all in the low lane
                for (int64_t p = c0; p < c1; ++p) {
                    __m256i a[2];
                    const __m128i row = _mm_loadu_si128(reinterpret_cast<const __m128i*>(tile + p * L));
                    decode(_mm256_inserti128_si256(_mm256_setzero_si256(), row, 0), a);
                    if constexpr (Fp4) {  // the high lane's zero codes became v + 12: zero them again
                        a[0] = _mm256_blend_epi32(_mm256_setzero_si256(), a[0], 0x0F);
                        a[1] = _mm256_blend_epi32(_mm256_setzero_si256(), a[1], 0x0F);
                    }
                    for (int i = 0; i < R; ++i) {
                        const int32_t* xw = xp + i * ldp + xp_word(p);
                        madd(a, i, _mm256_set1_epi32(xw[0]), _mm256_set1_epi32(xw[1]));
                    }
                    if ((p - c0) % (Fp4 ? 4 : 8) == (Fp4 ? 3 : 7)) flush();  // the low lane's bound
                }
            }
            flush();
        }
        if (((b * L * 2) & 63) == 0) prefetch_next_tile(reinterpret_cast<const uint8_t*>(sc + b * L), w);
        // Scale (and min) times rowmul first, as the GEMM's panel does: the GEMV then gives the
        // GEMM's results bit for bit, so a row decoded alone equals the same row in a batch.
        V2 s = load_f16x16(sc + b * L);
        s = {_mm256_mul_ps(s.lo, rlo), _mm256_mul_ps(s.hi, rhi)};
        V2 mv{};  // int4-min's mins times rowmul (MXFP4 has none)
        if constexpr (!Fp4) {
            mv = load_f16x16(mn + b * L);
            mv = {_mm256_mul_ps(mv.lo, rlo), _mm256_mul_ps(mv.hi, rhi)};
        }
        for (int i = 0; i < R; ++i) {
            const float xsv = xs[i * nkb + b], sq = xsum[i * nkb + b];
            const __m256 x8 = _mm256_set1_ps(xsv);
            if constexpr (Fp4) {  // v = (v + 12) - 12
                const __m256i off = _mm256_set1_epi32(12 * static_cast<int32_t>(sq));
                slo[i] = _mm256_sub_epi32(slo[i], off);
                shi[i] = _mm256_sub_epi32(shi[i], off);
            }
            flo[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(slo[i]), _mm256_mul_ps(s.lo, x8), flo[i]);
            fhi[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(shi[i]), _mm256_mul_ps(s.hi, x8), fhi[i]);
            if constexpr (!Fp4) {
                const __m256 sm = _mm256_set1_ps(sq * xsv);
                flo[i] = _mm256_fmadd_ps(mv.lo, sm, flo[i]);
                fhi[i] = _mm256_fmadd_ps(mv.hi, sm, fhi[i]);
            }
        }
    }
    for (int i = 0; i < R; ++i) out[i] = {flo[i], fhi[i]};
}

// int4 (kInt4Blocked) with x rounded to |q| <= 127 (kXq8Max: one signed byte, as llama.cpp's
// Q4_0 x Q8_0 dot product) instead of splitting int16 x into two bytes: one vpmaddubsw per
// 32 weights instead of two, and no l + 256 h join (~1/3 fewer instructions per block; this
// kernel is bound by them, not by memory, on 2 AVX2 cores). int4-min keeps int16 x: on
// SmolLM2's Q4_1 grid x's rounding was its largest error (docs/fidelity.md). The block
// sums are exact integers as before, and the GEMM reads the same xq (its int16 lanes hold
// the bytes' values): GEMV and GEMM still agree bit for bit.
//
// The dword of xp (LinearJob::xp, split_x8_avx2) holding pair p's bytes (x_2p, x_2p+1) twice:
// groups of 8 pairs, lane 0 the even pairs and lane 1 the odd ones, so one load per group
// and a vpshufd give the words of pairs p (lane 0) and p + 1 (lane 1) as nibble_pairs wants.
inline int64_t xp8_word(int64_t p) { return (p & ~int64_t(7)) + (p & 1) * 4 + ((p & 7) >> 1); }

template <int R>
inline void gemv_tile_i4a8(const DenseW& w, int64_t t, const int32_t* xp, int64_t ldp, const float* xs,
                           const float* xsum, int64_t nkb, V2* out) {
    const uint8_t* tile = w.tiles + t * w.tile_bytes;
    const uint16_t* sc = reinterpret_cast<const uint16_t*>(tile + w.scale_off);
    const int64_t kb = w.kb, np_all = (w.in + 1) / 2;
    const __m256 rlo = _mm256_loadu_ps(w.rowmul + t * L), rhi = _mm256_loadu_ps(w.rowmul + t * L + 8);
    __m256 flo[R], fhi[R];
    for (int i = 0; i < R; ++i) flo[i] = fhi[i] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nkb; ++b) {
        const int64_t p0 = b * kb / 2, p1 = min64(p0 + kb / 2, np_all);
        __m256i slo[R], shi[R];  // int32 block sums of rows 0-7 and 8-15
        for (int i = 0; i < R; ++i) slo[i] = shi[i] = _mm256_setzero_si256();
        for (int64_t c0 = p0; c0 < p1; c0 += 16) {  // a chunk of 16 pairs: a whole block of 32
            const int64_t c1 = min64(c0 + 16, p1);
            // int16 sums of u * x: [g] = rows 0-7 (g = 0) or 8-15, the two lanes the same rows
            // over alternate pairs; at most 8 products of at most 2 * 15 * 127 per lane in a
            // chunk: <= 30480, no overflow.
            __m256i acc[R][2];
            for (int i = 0; i < R; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_si256();
            // To int32 rows 0-7 (8-15): each lane widened, the two lanes added; the int16 sums restart.
            const auto widen = [&] {
                for (int i = 0; i < R; ++i)
                    for (int g = 0; g < 2; ++g) {
                        const __m256i r =
                            _mm256_add_epi32(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(acc[i][g])),
                                             _mm256_cvtepi16_epi32(_mm256_extracti128_si256(acc[i][g], 1)));
                        if (g == 0) slo[i] = _mm256_add_epi32(slo[i], r);
                        else shi[i] = _mm256_add_epi32(shi[i], r);
                        acc[i][g] = _mm256_setzero_si256();
                    }
            };
            if (c1 - c0 == 16 && (c0 & 7) == 0) {  // whole chunks (two groups of 8 pairs), unrolled
                const uint8_t* q = tile + c0 * L;
                for (int e = 0; e < 4; ++e) prefetch_next_tile(q + 64 * e, w);
#pragma GCC unroll 2
                for (int h = 0; h < 2; ++h) {  // a group of 8 pairs: c0 + 8h ..
                    __m256i xv[R];
                    for (int i = 0; i < R; ++i)
                        xv[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xp + i * ldp + c0 + 8 * h));
                    __m256i a[2];
#define VT_I4A8_STEP(j, imm)                                                                         \
    nibble_pairs(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + (8 * h + 2 * (j)) * L)), a); \
    for (int i = 0; i < R; ++i) {                                                                    \
        const __m256i xw = _mm256_shuffle_epi32(xv[i], imm);                                         \
        maddubs_acc(acc[i][0], a[0], xw);                                                            \
        maddubs_acc(acc[i][1], a[1], xw);                                                            \
    }
                    VT_I4A8_STEP(0, 0x00)
                    VT_I4A8_STEP(1, 0x55)
                    VT_I4A8_STEP(2, 0xAA)
                    VT_I4A8_STEP(3, 0xFF)
#undef VT_I4A8_STEP
                }
            } else {  // a short last block (or odd block sizes): one pair at a time, all in the low lane
                for (int64_t p = c0; p < c1; ++p) {
                    __m256i a[2];
                    const __m128i row = _mm_loadu_si128(reinterpret_cast<const __m128i*>(tile + p * L));
                    nibble_pairs(_mm256_inserti128_si256(_mm256_setzero_si256(), row, 0), a);
                    for (int i = 0; i < R; ++i) {
                        const __m256i xw = _mm256_set1_epi32(xp[i * ldp + xp8_word(p)]);
                        maddubs_acc(acc[i][0], a[0], xw);
                        maddubs_acc(acc[i][1], a[1], xw);
                    }
                    if ((p - c0) % 8 == 7) widen();  // the low lane's 8 products' bound
                }
            }
            widen();
        }
        if (((b * L * 2) & 63) == 0) prefetch_next_tile(reinterpret_cast<const uint8_t*>(sc + b * L), w);
        V2 s = load_f16x16(sc + b * L);  // times rowmul first, as gemv_tile_i4x8 (the GEMM's bits)
        s = {_mm256_mul_ps(s.lo, rlo), _mm256_mul_ps(s.hi, rhi)};
        for (int i = 0; i < R; ++i) {
            const float xsv = xs[i * nkb + b];
            const __m256i m8 = _mm256_set1_epi32(8 * static_cast<int32_t>(xsum[i * nkb + b]));  // q = u - 8
            const __m256 x8 = _mm256_set1_ps(xsv);
            flo[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(slo[i], m8)), _mm256_mul_ps(s.lo, x8), flo[i]);
            fhi[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(shi[i], m8)), _mm256_mul_ps(s.hi, x8), fhi[i]);
        }
    }
    for (int i = 0; i < R; ++i) out[i] = {flo[i], fhi[i]};
}

// 4 bytes of x (a pair of int16 k, or a quad of int8 k) as one 32-bit lane, for a broadcast.
inline int32_t load_i32(const void* p) {
    int32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// ---- int8 GEMV in integers (AVX2; LinearJob::xq) ------------------------------------------
//
// The f32 int8 GEMV ran at ~12 Gweights/s per core (4 FMA chains of 4 cycles' latency, 12
// vector instructions per 32 weights): below the DRAM bandwidth of two cores. Here the
// pairs (k, k + 1) of 16 rows are widened to int16 exactly as the GEMM's panel (2 shuffles
// and 2 sign extensions per 32 weights) and multiplied with the broadcast int16 pair of x by
// vpmaddwd into int32 (exact), scaled into f32 once per block.
template <int R>
inline void gemv_tile_i8x16(const DenseW& w, int64_t t, const int16_t* xq, int64_t ldq, const float* xs,
                            int64_t nkb, V2* out) {
    const uint8_t* tile = w.tiles + t * w.tile_bytes;
    const uint16_t* sc = reinterpret_cast<const uint16_t*>(tile + w.scale_off);
    const int64_t kbh = w.kb / 2;
    const __m256 rlo = _mm256_loadu_ps(w.rowmul + t * L), rhi = _mm256_loadu_ps(w.rowmul + t * L + 8);
    __m256 flo[R], fhi[R];
    for (int i = 0; i < R; ++i) flo[i] = fhi[i] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nkb; ++b) {
        __m256i alo[R], ahi[R];
        for (int i = 0; i < R; ++i) alo[i] = ahi[i] = _mm256_setzero_si256();
        const uint8_t* q = tile + b * kbh * 2 * L;
        const int16_t* xb = xq + b * kbh * 2;
        const auto pair = [&](int64_t j) {
            const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 2 * j * L));
            const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + (2 * j + 1) * L));
            const __m256i wlo = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(a, c));  // rows 0-7
            const __m256i whi = _mm256_cvtepi8_epi16(_mm_unpackhi_epi8(a, c));  // rows 8-15
#pragma GCC unroll 2
            for (int i = 0; i < R; ++i) {  // madd_acc: GCC's add tree over the unrolled pairs spilled
                const __m256i xv = _mm256_set1_epi32(load_i32(xb + i * ldq + 2 * j));
                madd_acc(alo[i], xv, wlo);
                madd_acc(ahi[i], xv, whi);
            }
        };
        if (kbh == 16) {  // kb = 32, unrolled whole
#pragma GCC unroll 16
            for (int j = 0; j < 16; ++j) {
                if ((j & 1) == 0) prefetch_next_tile(q + 2 * j * L, w);
                pair(j);
            }
        } else {
            for (int64_t j = 0; j < kbh; ++j) {
                if ((j & 1) == 0) prefetch_next_tile(q + 2 * j * L, w);
                pair(j);
            }
        }
        if (((b * L * 2) & 63) == 0) prefetch_next_tile(reinterpret_cast<const uint8_t*>(sc + b * L), w);
        V2 s = load_f16x16(sc + b * L);
        s = {_mm256_mul_ps(s.lo, rlo), _mm256_mul_ps(s.hi, rhi)};  // as the GEMM's panel: same bits
        for (int i = 0; i < R; ++i) {
            const __m256 x8 = _mm256_set1_ps(xs[i * nkb + b]);
            flo[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(alo[i]), _mm256_mul_ps(s.lo, x8), flo[i]);
            fhi[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ahi[i]), _mm256_mul_ps(s.hi, x8), fhi[i]);
        }
    }
    for (int i = 0; i < R; ++i) out[i] = {flo[i], fhi[i]};
}

// One row group's tile for either integer GEMV.
template <int Kind, int R>
inline void gemv_tile_int(const LinearJob& job, const DenseW& w, int64_t t, int64_t i0, int64_t nkb, V2* out) {
    if constexpr (Kind == kInt8Blocked) {
        gemv_tile_i8x16<R>(w, t, job.xq + i0 * job.xq_ld, job.xq_ld, job.xqs + i0 * nkb, nkb, out);
    } else if constexpr (Kind == kInt4Blocked) {
        gemv_tile_i4a8<R>(w, t, job.xp + i0 * job.xp_ld, job.xp_ld, job.xqs + i0 * nkb, job.xqsum + i0 * nkb, nkb,
                          out);
    } else {  // int4-min, MXFP4
        gemv_tile_i4x8<R, Kind == kMxfp4>(w, t, job.xp + i0 * job.xp_ld, job.xp_ld, job.xqs + i0 * nkb,
                                          job.xqsum + i0 * nkb, nkb, out);
    }
}

// Rows in groups of at most two (the registers of two rows' sums; a tile's weights are read
// again from L1/L2 for rows 3-4).
template <int Kind>
void gemv_range_int(const LinearJob& job, int64_t t0, int64_t t1) {
    const int64_t out = job.w.out, nkb = num_kblocks(job.w);
    const bool swiglu = gated(job.act);
    for (int64_t t = t0; t < t1; ++t) {
        for (int64_t i0 = 0; i0 < job.m; i0 += 2) {
            const int64_t r = min64(2, job.m - i0);
            V2 g[2], u[2];
            if (r == 2) {
                gemv_tile_int<Kind, 2>(job, job.w, t, i0, nkb, g);
                if (swiglu) gemv_tile_int<Kind, 2>(job, job.w2, t, i0, nkb, u);
            } else {
                gemv_tile_int<Kind, 1>(job, job.w, t, i0, nkb, g);
                if (swiglu) gemv_tile_int<Kind, 1>(job, job.w2, t, i0, nkb, u);
            }
            for (int64_t i = 0; i < r; ++i) epilogue(job, t, g[i], swiglu ? u[i] : g[i], job.y + (i0 + i) * out);
        }
    }
}

// ---- int4 GEMV with AVX-512 VNNI + VBMI (AVX-512 CPUs that have both) -------------------
//
// gemv_tile_i4a8's block sums, 64 weights per instruction: two 16-byte rows of a tile (pairs p
// and p + 1 of 16 rows, 32 bytes) become, for each row r, the dword (u_2p, u_2p+1, u_2p+2,
// u_2p+3) — one vpermb puts row r's two bytes side by side, one vpmultishiftqb moves each
// nibble to a byte of its own, a mask clears the high halves — and vpdpbusd multiplies them by
// x's four bytes of those k (LinearJob::xb, broadcast) into one int32 lane per row. The block
// sums are the same exact integers as gemv_tile_i4a8's, and the f32 steps after them the same
// operations in the same order on each row (16 lanes at once rather than 8), so this GEMV, the
// AVX2 one and the AVX2 GEMM give a row the same bits (tests/test_int4.py,
// test_avx512_gives_the_avx2_bits). Compiled here, with AVX-512 targets of its own, to share the
// AVX2 epilogue. SmolLM2's gate/up shape in cache, one thread: 19.9 us per call against the
// AVX2 GEMV's 23.7 (bench/results/int4-avx512-integer-ab-vm-20261127.md).
#define VT_VNNI4_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi,avx512vnni")))

// 16 f16 block scales (or mins) times rowmul, as the AVX2 kernels compute them.
VT_VNNI4_TARGET inline __m512 scaled16(const uint16_t* p, __m512 rm) {
    return _mm512_mul_ps(_mm512_maskz_cvtph_ps(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), rm);
}

// A tile's 16 f32 results as the AVX2 epilogue's two halves.
VT_VNNI4_TARGET inline V2 halves(__m512 f) {
    const __m512i fi = _mm512_castps_si512(f);
    return {_mm256_castsi256_ps(_mm512_maskz_extracti64x4_epi64(0xFF, fi, 0)),
            _mm256_castsi256_ps(_mm512_maskz_extracti64x4_epi64(0xFF, fi, 1))};
}

// The dwords (u_2p .. u_2p+3) of the 16 rows from the 32 bytes at p (pairs p, p + 1; the
// bytes past `bytes` read as zero). Made once per tile, outside the loops. The maskz forms:
// GCC 12's unmasked ones read an undefined register it warns about.
struct VnniNibbles {
    // dword r <- (byte r, byte 16 + r): row r of pair p, row r of pair p + 1
    __m512i perm;
    // per qword (rows r, r + 1): the nibbles at bits 0, 4, 8, 12 and 32, 36, 40, 44, one per byte
    __m512i shifts;
    __m512i nib;
    VT_VNNI4_TARGET VnniNibbles()
        : perm(_mm512_setr_epi32(0x1000, 0x1101, 0x1202, 0x1303, 0x1404, 0x1505, 0x1606, 0x1707, 0x1808, 0x1909,
                                 0x1A0A, 0x1B0B, 0x1C0C, 0x1D0D, 0x1E0E, 0x1F0F)),
          shifts(_mm512_set1_epi64(0x2C2824200C080400LL)),
          nib(_mm512_set1_epi8(0x0F)) {}
    VT_VNNI4_TARGET __m512i operator()(const uint8_t* p, __mmask64 bytes) const {
        const __m512i side = _mm512_maskz_permutexvar_epi8(~0ull, perm, _mm512_maskz_loadu_epi8(bytes, p));
        return _mm512_and_si512(_mm512_maskz_multishift_epi64_epi8(~0ull, shifts, side), nib);
    }
};

// The nibble dwords u of pairs p, p + 1 (32 bytes) times x's bytes of rows i < R (ah: x's
// bytes, Min: its high bytes; al: its low bytes).
template <int R, bool Min>
VT_VNNI4_TARGET inline void i4_vnni_pairs(__m512i u, const int8_t* xb, const int8_t* xl, int64_t ldb, int64_t p,
                                          __m512i* ah, __m512i* al) {
    for (int i = 0; i < R; ++i) {
        ah[i] = _mm512_dpbusd_epi32(ah[i], u, _mm512_set1_epi32(load_i32(xb + i * ldb + 2 * p)));
        if constexpr (Min) al[i] = _mm512_dpbusd_epi32(al[i], u, _mm512_set1_epi32(load_i32(xl + i * ldb + 2 * p)));
    }
}

// Min = false: int4, x as one signed byte per k (xb; xl unused), q = u - 8 through xsum.
// Min = true: int4-min, gemv_tile_i4x8's block sums, 64 weights per two vpdpbusd: the nibble
// dwords times x's high bytes h into one sum and its low bytes l into another (xq = 256 h + l,
// split_x16_bytes_avx2: both signed bytes, as vpdpbusd's second operand wants), joined
// l + 256 h in int32 once per block (|sums| <= 512 * 15 * 128: exact) — the exact block sum of
// u * q that gemv_tile_i4x8 and the AVX2 integer GEMM compute; the f32 steps after it are
// theirs, in the same order on each lane: a row gets the AVX2 bits, alone or in a batch. Its
// GEMM is this kernel on groups of up to 8 rows (linear_rows_vnni: a tile's nibbles decoded once
// per group; 16 vpdpbusd per 64 weights against 3 instructions of decoding). SmolLM2's
// 512-token prefill: groups of 6 rows 551-552 ms, 8 rows 493-516, 12 rows 498-511 (2 rounds
// each, alternating), AVX-512's f32 GEMM 500-527.
// Fp4 (MXFP4, with Min: x as int4-min's two bytes, no mins): the nibble bytes through a table
// of v + 12 (v the E2M1 code's doubled value, so 0 .. 24, unsigned as vpdpbusd wants), and
// 12 * sum(xq) off each block's int32 sum: the exact sum of v * xq, as the int16 GEMM's.
template <int R, bool Min, bool Fp4 = false>
VT_VNNI4_TARGET inline void gemv_tile_i4_vnni(const DenseW& w, int64_t t, const int8_t* xb, const int8_t* xl,
                                              int64_t ldb, const float* xs, const float* xsum, int64_t nkb, V2* out) {
    const uint8_t* tile = w.tiles + t * w.tile_bytes;
    const uint16_t* sc = reinterpret_cast<const uint16_t*>(tile + w.scale_off);
    const uint16_t* mn = reinterpret_cast<const uint16_t*>(tile + w.min_off);  // Min only
    const int64_t kbh = w.kb / 2, np_all = (w.in + 1) / 2;
    const __m512 rm = _mm512_loadu_ps(w.rowmul + t * L);
    const VnniNibbles nib4;
    const __m512i fp4 =
        _mm512_maskz_broadcast_i32x4(0xFFFF, _mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4Plus12)));
    const auto nibbles = [&](const uint8_t* p, __mmask64 bytes) VT_VNNI4_TARGET {
        const __m512i u = nib4(p, bytes);
        if constexpr (Fp4) return _mm512_maskz_shuffle_epi8(~0ull, fp4, u);
        else return u;
    };
    __m512 f[R];
    for (int i = 0; i < R; ++i) f[i] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nkb; ++b) {
        const int64_t p0 = b * kbh, p1 = min64(p0 + kbh, np_all);
        __m512i ah[R], al[R];  // sums with x's bytes (Min: its high bytes), and its low bytes
        for (int i = 0; i < R; ++i) ah[i] = al[i] = _mm512_setzero_si512();
        const uint8_t* q = tile + p0 * L;
        int64_t p = p0;
        if (p1 - p0 == 16) {  // a whole block of 32, the usual size: constant trip counts
            for (int e = 0; e < 4; ++e) prefetch_next_tile(q + 64 * e, w);
#pragma GCC unroll 8
            for (int j = 0; j < 8; ++j) i4_vnni_pairs<R, Min>(nibbles(q + 2 * j * L, ~0u), xb, xl, ldb, p0 + 2 * j, ah, al);
            p = p1;
        } else {
            for (int64_t e = 0; e < (p1 - p0) * L; e += 64) prefetch_next_tile(q + e, w);
        }
#pragma GCC unroll 8
        for (; p + 2 <= p1; p += 2) i4_vnni_pairs<R, Min>(nibbles(tile + p * L, ~0u), xb, xl, ldb, p, ah, al);
        if (p < p1) {  // a short block's last pair alone: x's bytes of the next pair read as zero
            const __m512i u = nibbles(tile + p * L, 0xFFFFull);  // 16 bytes, zero above
            for (int i = 0; i < R; ++i) {
                uint16_t h2, l2 = 0;
                std::memcpy(&h2, xb + i * ldb + 2 * p, sizeof h2);
                if constexpr (Min) std::memcpy(&l2, xl + i * ldb + 2 * p, sizeof l2);
                ah[i] = _mm512_dpbusd_epi32(ah[i], u, _mm512_set1_epi32(h2));
                if constexpr (Min) al[i] = _mm512_dpbusd_epi32(al[i], u, _mm512_set1_epi32(l2));
            }
        }
        // From here on gemv_tile_i4a8's (Min: gemv_tile_i4x8's) steps, on all 16 rows at once
        // (the same operations on each lane: the same bits).
        if (((b * L * 2) & 63) == 0) {
            prefetch_next_tile(reinterpret_cast<const uint8_t*>(sc + b * L), w);
            if constexpr (Min && !Fp4) prefetch_next_tile(reinterpret_cast<const uint8_t*>(mn + b * L), w);
        }
        const __m512 s = scaled16(sc + b * L, rm);
        if constexpr (Min) {
            const __m512 mv = Fp4 ? _mm512_setzero_ps() : scaled16(mn + b * L, rm);  // (MXFP4: no mins)
            for (int i = 0; i < R; ++i) {
                const float xsv = xs[i * nkb + b], sq = xsum[i * nkb + b];
                __m512i sum = _mm512_add_epi32(al[i], _mm512_maskz_slli_epi32(0xFFFF, ah[i], 8));
                if constexpr (Fp4) sum = _mm512_sub_epi32(sum, _mm512_set1_epi32(12 * static_cast<int32_t>(sq)));
                f[i] = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(0xFFFF, sum), _mm512_mul_ps(s, _mm512_set1_ps(xsv)),
                                       f[i]);
                if constexpr (!Fp4) f[i] = _mm512_fmadd_ps(mv, _mm512_set1_ps(sq * xsv), f[i]);
            }
        } else {
            for (int i = 0; i < R; ++i) {
                const __m512i m8 = _mm512_set1_epi32(8 * static_cast<int32_t>(xsum[i * nkb + b]));  // q = u - 8
                const __m512 x8 = _mm512_set1_ps(xs[i * nkb + b]);
                const __m512 sum = _mm512_maskz_cvtepi32_ps(0xFFFF, _mm512_sub_epi32(ah[i], m8));
                f[i] = _mm512_fmadd_ps(sum, _mm512_mul_ps(s, x8), f[i]);
            }
        }
    }
    for (int i = 0; i < R; ++i) out[i] = halves(f[i]);
}

// ---- int8 with AVX-512 VNNI + VBMI, GEMV and GEMM -----------------------------------------
//
// gemv_tile_i8x16's block sums with vpdpbusd, which multiplies unsigned bytes by signed ones: x
// is split as xq + 32768 = 256 H + L (H, L unsigned bytes, split_x16_bytes_avx2, biased), so a block's
// sum of w * q is 256 * sum(w H) + sum(w L) - 32768 * sum(w), three vpdpbusd sums (the last with
// bytes of 1, shared by the rows), combined in int32 modulo 2^32 — exact, as the true sum fits
// (kb * 127 * 32639 < 2^31). A 64-byte line of the tile (k .. k + 3 of its 16 rows) becomes the
// 16 rows' dwords of those 4 k by one vpermb. The f32 steps after the sums are
// gemv_tile_i8x16's, in the same order on each lane: a row gets the AVX2 bits, alone or in a
// batch (the GEMM is this kernel on groups of up to 8 rows).
template <int R>
VT_VNNI4_TARGET inline void gemv_tile_i8_vnni(const DenseW& w, int64_t t, const int8_t* xh, const int8_t* xl,
                                              int64_t ldb, const float* xs, int64_t nkb, V2* out) {
    const uint8_t* tile = w.tiles + t * w.tile_bytes;
    const uint16_t* sc = reinterpret_cast<const uint16_t*>(tile + w.scale_off);
    const int64_t kb = w.kb;  // 16, 32, 64 or 128, dividing in (prepack)
    const __m512 rm = _mm512_loadu_ps(w.rowmul + t * L);
    // output byte 4r + j <- input byte 16j + r: row r's weights at k + j, j < 4
    alignas(64) static constexpr uint8_t kTranspose[64] = {
        0, 16, 32, 48, 1, 17, 33, 49, 2, 18, 34, 50, 3, 19, 35, 51, 4, 20, 36, 52, 5, 21, 37, 53,
        6, 22, 38, 54, 7, 23, 39, 55, 8, 24, 40, 56, 9, 25, 41, 57, 10, 26, 42, 58, 11, 27, 43, 59,
        12, 28, 44, 60, 13, 29, 45, 61, 14, 30, 46, 62, 15, 31, 47, 63};
    const __m512i perm = _mm512_load_si512(kTranspose);
    const __m512i ones = _mm512_set1_epi8(1);
    __m512 f[R];
    for (int i = 0; i < R; ++i) f[i] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nkb; ++b) {
        __m512i ah[R], al[R], sw = _mm512_setzero_si512();
        for (int i = 0; i < R; ++i) ah[i] = al[i] = _mm512_setzero_si512();
        const uint8_t* q = tile + b * kb * L;
        const int64_t k0 = b * kb;
#pragma GCC unroll 4
        for (int64_t k = 0; k < kb; k += 4) {
            prefetch_next_tile(q + k * L, w);
            const __m512i wv = _mm512_maskz_permutexvar_epi8(~0ull, perm, _mm512_loadu_si512(q + k * L));
            sw = _mm512_dpbusd_epi32(sw, ones, wv);
            for (int i = 0; i < R; ++i) {
                ah[i] = _mm512_dpbusd_epi32(ah[i], _mm512_set1_epi32(load_i32(xh + i * ldb + k0 + k)), wv);
                al[i] = _mm512_dpbusd_epi32(al[i], _mm512_set1_epi32(load_i32(xl + i * ldb + k0 + k)), wv);
            }
        }
        if (((b * L * 2) & 63) == 0) prefetch_next_tile(reinterpret_cast<const uint8_t*>(sc + b * L), w);
        const __m512 s = scaled16(sc + b * L, rm);
        const __m512i off = _mm512_maskz_slli_epi32(0xFFFF, sw, 15);  // 32768 * sum(w)
        for (int i = 0; i < R; ++i) {
            const __m512i sum =
                _mm512_sub_epi32(_mm512_add_epi32(_mm512_maskz_slli_epi32(0xFFFF, ah[i], 8), al[i]), off);
            const __m512 x8 = _mm512_set1_ps(xs[i * nkb + b]);
            f[i] = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(0xFFFF, sum), _mm512_mul_ps(s, x8), f[i]);
        }
    }
    for (int i = 0; i < R; ++i) out[i] = halves(f[i]);
}

// Rows i0 .. i0 + R - 1 of x against tile t, any VNNI kernel (int4: x as one byte per k, no
// low bytes), and their epilogue.
template <int Kind, int R>
VT_VNNI4_TARGET inline void tile_rows_vnni(const LinearJob& job, int64_t t, int64_t i0, int64_t nkb) {
    const int64_t out = job.w.out, ld = job.xb_ld;
    const bool swiglu = gated(job.act);
    V2 g[R], u[R];
    const auto tile = [&](const DenseW& w, V2* o) {
        if constexpr (Kind == kInt8Blocked)
            gemv_tile_i8_vnni<R>(w, t, job.xb + i0 * ld, job.xbl + i0 * ld, ld, job.xqs + i0 * nkb, nkb, o);
        else if constexpr (Kind == kInt4Blocked)
            gemv_tile_i4_vnni<R, false>(w, t, job.xb + i0 * ld, nullptr, ld, job.xqs + i0 * nkb,
                                        job.xqsum + i0 * nkb, nkb, o);
        else  // int4-min, MXFP4: x in two bytes
            gemv_tile_i4_vnni<R, true, Kind == kMxfp4>(w, t, job.xb + i0 * ld, job.xbl + i0 * ld, ld,
                                                       job.xqs + i0 * nkb, job.xqsum + i0 * nkb, nkb, o);
    };
    tile(job.w, g);
    if (swiglu) tile(job.w2, u);
    for (int i = 0; i < R; ++i) epilogue(job, t, g[i], swiglu ? u[i] : g[i], job.y + (i0 + i) * out);
}

// Rows [i0, i1) of x against tile t, in groups of up to 8.
template <int Kind>
VT_VNNI4_TARGET inline void tile_groups_vnni(const LinearJob& job, int64_t t, int64_t i0, int64_t i1, int64_t nkb) {
    for (; i0 < i1; i0 += 8) {
        switch (min64(8, i1 - i0)) {
            case 1: tile_rows_vnni<Kind, 1>(job, t, i0, nkb); break;
            case 2: tile_rows_vnni<Kind, 2>(job, t, i0, nkb); break;
            case 3: tile_rows_vnni<Kind, 3>(job, t, i0, nkb); break;
            case 4: tile_rows_vnni<Kind, 4>(job, t, i0, nkb); break;
            case 5: tile_rows_vnni<Kind, 5>(job, t, i0, nkb); break;
            case 6: tile_rows_vnni<Kind, 6>(job, t, i0, nkb); break;
            case 7: tile_rows_vnni<Kind, 7>(job, t, i0, nkb); break;
            default: tile_rows_vnni<Kind, 8>(job, t, i0, nkb); break;
        }
    }
}

template <int Kind>
VT_VNNI4_TARGET inline void linear_rows_vnni(const LinearJob& job, int64_t t0, int64_t t1) {
    const int64_t nkb = num_kblocks(job.w);
    for (int64_t t = t0; t < t1; ++t) tile_groups_vnni<Kind>(job, t, 0, job.m, nkb);
}

// ---- GEMMs of 16 rows with VNNI (AVX-512 CPUs with VNNI + VBMI, m >= kVnniMinM) -------------
//
// gemv_tile_i8_vnni spends two vpdpbusd per row and 4 k (x's high and low bytes) plus one for
// the weights' sum, and six more operations per row and block to join them; in a GEMM of many
// rows that is most of its time. Here x stays int16 and the weights are widened to int16 once
// per 4 k for 16 rows of x: one vpdpwssd per row and 2 k (x's pair broadcast from memory),
// the block sum exact in int32 as there (|sum| <= kb * 127 * 32639 < 2^31), then the same f32
// steps in the same order — the same bits. x comes packed per group of 16 rows
// (pack_x16_groups_avx2): a step's 16 pairs are one 64-byte line at fixed offsets, which
// leaves the general registers free. The vpdpwssd is written in assembly: GCC 12 does not fold
// the broadcast into it, and its separate vpbroadcastd and register copies made the loop
// front-end bound (bench/results/int8-gemm-wssd-vm-20261129.md).

// Tile t of w: its bytes, f16 block scales and rowmul (16 lanes).
struct TileRef {
    const uint8_t* bytes;
    const uint16_t* scales;
    __m512 rm;
};
VT_VNNI4_TARGET inline TileRef tile_ref(const DenseW& w, int64_t t) {
    const uint8_t* tile = w.tiles + t * w.tile_bytes;
    return {tile, reinterpret_cast<const uint16_t*>(tile + w.scale_off), _mm512_loadu_ps(w.rowmul + t * L)};
}

// Sum the 16 x rows of one group against a tile's 16 columns over all K-blocks: facc[16 * i + c]
// = row i's result for column c (before the epilogue). KB = w.kb, a constant so that the step
// loop has no remainder. (xm8: int4's; unused.)
template <int KB>
VT_VNNI4_TARGET inline void tile_i8_wssd(const DenseW& w, int64_t t, const int32_t* xw, const float* xws,
                                         const void* /*aux*/, int64_t nkb, float* facc) {
    const TileRef tr = tile_ref(w, t);
    const uint8_t* tile = tr.bytes;
    const uint16_t* sc = tr.scales;
    const __m512 rm = tr.rm;
    constexpr int64_t kb = KB;
    // A 64-byte line holds k .. k + 3 of the 16 columns (byte 16 j + c). Bytes 2c, 2c + 1 <- k, k + 1 of
    // column c; 32 + 2c, 33 + 2c <- k + 2, k + 3: widened, the int16 pairs vpdpwssd takes.
    alignas(64) static constexpr uint8_t kPairs[64] = {
        0,  16, 1,  17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23, 8,  24, 9,  25, 10, 26,
        11, 27, 12, 28, 13, 29, 14, 30, 15, 31, 32, 48, 33, 49, 34, 50, 35, 51, 36, 52, 37, 53,
        38, 54, 39, 55, 40, 56, 41, 57, 42, 58, 43, 59, 44, 60, 45, 61, 46, 62, 47, 63};
    const __m512i perm = _mm512_load_si512(kPairs);
    for (int i = 0; i < 16; ++i) _mm512_store_ps(facc + 16 * i, _mm512_setzero_ps());
    for (int64_t b = 0; b < nkb; ++b) {
        __m512i acc[16];
        for (int i = 0; i < 16; ++i) acc[i] = _mm512_setzero_si512();
        const uint8_t* q = tile + b * kb * L;
        const int32_t* xb = xw + b * kb / 2 * 16;
#pragma GCC unroll 8
        for (int64_t k = 0; k < kb; k += 4) {
            const __m512i pb = _mm512_maskz_permutexvar_epi8(~0ull, perm, _mm512_loadu_si512(q + k * L));
            const __m512i lo = _mm512_maskz_cvtepi8_epi16(~0u, _mm512_maskz_extracti64x4_epi64(0xFF, pb, 0));
            const __m512i hi = _mm512_maskz_cvtepi8_epi16(~0u, _mm512_maskz_extracti64x4_epi64(0xFF, pb, 1));
            const int32_t* xk = xb + k / 2 * 16;  // pairs k / 2 (16 rows), then k / 2 + 1
            for (int i = 0; i < 16; ++i) {
                __asm__("vpdpwssd %2%{1to16%}, %1, %0" : "+v"(acc[i]) : "v"(lo), "m"(xk[i]));
                __asm__("vpdpwssd %2%{1to16%}, %1, %0" : "+v"(acc[i]) : "v"(hi), "m"(xk[16 + i]));
            }
        }
        const __m512 s = scaled16(sc + b * L, rm);
        for (int i = 0; i < 16; ++i) {  // gemv_tile_i8_vnni's f32 steps
            const __m512 x8 = _mm512_set1_ps(xws[b * 16 + i]);
            _mm512_store_ps(facc + 16 * i, _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(0xFFFF, acc[i]),
                                                           _mm512_mul_ps(s, x8), _mm512_load_ps(facc + 16 * i)));
        }
    }
}

// The 16-row 4-bit kernels' pieces: 16 rows' f32 results and int32 block sums set to zero, and
// K-block b of a tile (16 pairs of k a block; the last may have fewer of the np_all).
VT_VNNI4_TARGET inline void zero_rows16(float* facc) {
    for (int i = 0; i < 16; ++i) _mm512_store_ps(facc + 16 * i, _mm512_setzero_ps());
}
VT_VNNI4_TARGET inline void zero_sums16(__m512i* acc) {
    for (int i = 0; i < 16; ++i) acc[i] = _mm512_setzero_si512();
}
struct NibbleBlock {
    const uint8_t* q;  // its first pair's 16 bytes
    int64_t np;        // its pairs
};
inline NibbleBlock nibble_block(const uint8_t* tile, int64_t np_all, int64_t b) {
    return {tile + b * 16 * L, min64(16, np_all - b * 16)};
}

// int4 (K-blocks of 32): gemv_tile_i4_vnni's block sums (Min = false) on 16 rows — the nibbles
// of 4 k decoded once (vpermb + vpmultishiftqb) for 16 vpdpbusd with x's bytes, packed per group
// (pack_x8_groups_avx2) — and its f32 steps. Written with intrinsics: here the separate
// vpbroadcastd measured faster than the broadcast folded into vpdpbusd.
VT_VNNI4_TARGET inline void tile_i4_vnni16(const DenseW& w, int64_t t, const int32_t* xw, const float* xws,
                                           const void* aux, int64_t nkb, float* facc) {
    const int32_t* xm8 = static_cast<const int32_t*>(aux);
    const TileRef tr = tile_ref(w, t);
    const uint16_t* sc = tr.scales;
    const __m512 rm = tr.rm;
    const uint8_t* tile = tr.bytes;
    const int64_t np_all = (w.in + 1) / 2;  // pairs of k; 16 a block
    const VnniNibbles nib4;
    zero_rows16(facc);
    for (int64_t b = 0; b < nkb; ++b) {
        __m512i acc[16];
        zero_sums16(acc);
        const auto [q, np] = nibble_block(tile, np_all, b);
        const int32_t* xb = xw + b * 8 * 16;  // 8 dwords of x (32 k) per row and block
        const auto step = [&](__m512i u, const int32_t* xk) VT_VNNI4_TARGET {
            for (int i = 0; i < 16; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], u, _mm512_set1_epi32(xk[i]));
        };
        if (np == 16) {
#pragma GCC unroll 8
            for (int j = 0; j < 8; ++j) step(nib4(q + 2 * j * L, ~0u), xb + j * 16);
        } else {  // a short last block: the nibbles past it read as zero, as x's bytes there are
            for (int64_t j = 0; 2 * j < np; ++j) {
                const int64_t bytes = min64(32, (np - 2 * j) * L);
                step(nib4(q + 2 * j * L, bytes == 32 ? 0xFFFFFFFFull : (1ull << bytes) - 1), xb + j * 16);
            }
        }
        const __m512 s = scaled16(sc + b * L, rm);
        for (int i = 0; i < 16; ++i) {  // gemv_tile_i4_vnni's f32 steps (q = u - 8)
            const __m512i m8 = _mm512_set1_epi32(xm8[b * 16 + i]);
            const __m512 x8 = _mm512_set1_ps(xws[b * 16 + i]);
            const __m512 sum = _mm512_maskz_cvtepi32_ps(0xFFFF, _mm512_sub_epi32(acc[i], m8));
            _mm512_store_ps(facc + 16 * i, _mm512_fmadd_ps(sum, _mm512_mul_ps(s, x8), _mm512_load_ps(facc + 16 * i)));
        }
    }
}

// int4-min (K-blocks of 32): gemv_tile_i4_vnni's block sums (Min) as vpdpwssd of x's int16 pairs
// (packed as int8's) with the nibbles widened to int16 pairs — per 4 k, one vpermb puts rows 2q,
// 2q + 1 of pairs p and p + 1 in qword q, and two vpmultishiftqb + vpand make the words
// (u_2p, u_2p+1) and (u_2p+2, u_2p+3) of each row — and its f32 steps (aux = xsq: the packed
// sq * xs). With intrinsics (measured faster here than the broadcast folded into vpdpwssd).
// Fp4 (MXFP4, K-blocks of 32): each word's nibble through the table of v + 12 (vpshufb on the
// words' low bytes, their high bytes zeroed by the mask), so the block sum is gemv_tile_i4_vnni's
// (Fp4) exact sum of (v + 12) * xq, then its f32 steps: 12 * sum(xq) off (aux = xm8: the packed
// 12 * xqsum, an integer), no mins.
template <bool Fp4>
VT_VNNI4_TARGET inline void tile_i4m_vnni16(const DenseW& w, int64_t t, const int32_t* xw, const float* xws,
                                            const void* aux, int64_t nkb, float* facc) {
    const float* xsq = static_cast<const float*>(aux);          // int4-min
    const int32_t* xm12 = static_cast<const int32_t*>(aux);     // MXFP4
    const TileRef tr = tile_ref(w, t);
    const uint16_t* sc = tr.scales;
    const uint16_t* mn = reinterpret_cast<const uint16_t*>(tr.bytes + w.min_off);
    const __m512 rm = tr.rm;
    const uint8_t* tile = tr.bytes;
    const int64_t np_all = (w.in + 1) / 2;  // pairs of k; 16 a block
    // qword q <- bytes 2q, 2q + 1 (rows 2q, 2q + 1 of pair p), 16 + 2q, 17 + 2q (pair p + 1)
    alignas(64) static constexpr uint8_t kRows[64] = {
        0,  1,  16, 17, 0, 0, 0, 0, 2,  3,  18, 19, 0, 0, 0, 0, 4,  5,  20, 21, 0, 0, 0, 0,
        6,  7,  22, 23, 0, 0, 0, 0, 8,  9,  24, 25, 0, 0, 0, 0, 10, 11, 26, 27, 0, 0, 0, 0,
        12, 13, 28, 29, 0, 0, 0, 0, 14, 15, 30, 31, 0, 0, 0, 0};
    const __m512i perm = _mm512_load_si512(kRows);
    // the words' low bytes take the nibbles at bits 0, 4 (row 2q), 8, 12 (row 2q + 1); pair p + 1 at 16 .. 28
    const __m512i sh_lo = _mm512_set1_epi64(0x000C000800040000LL), sh_hi = _mm512_set1_epi64(0x001C001800140010LL);
    const __m512i nib = _mm512_set1_epi16(0x0F);
    const __m512i fp4 =
        _mm512_maskz_broadcast_i32x4(0xFFFF, _mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4Plus12)));
    const auto words = [&](__m512i shifted) VT_VNNI4_TARGET {  // the words' nibbles, or v + 12 (Fp4)
        const __m512i u = _mm512_and_si512(shifted, nib);
        if constexpr (Fp4) return _mm512_maskz_shuffle_epi8(0x5555555555555555ull, fp4, u);
        else return u;
    };
    zero_rows16(facc);
    for (int64_t b = 0; b < nkb; ++b) {
        __m512i acc[16];
        zero_sums16(acc);
        const auto [q, np] = nibble_block(tile, np_all, b);
        const int32_t* xb = xw + b * 16 * 16;  // the pairs of this block, 16 rows each
        const auto step = [&](const uint8_t* src, __mmask64 bytes, const int32_t* xk) VT_VNNI4_TARGET {
            const __m512i v = _mm512_maskz_permutexvar_epi8(~0ull, perm, _mm512_maskz_loadu_epi8(bytes, src));
            const __m512i lo = words(_mm512_maskz_multishift_epi64_epi8(~0ull, sh_lo, v));
            const __m512i hi = words(_mm512_maskz_multishift_epi64_epi8(~0ull, sh_hi, v));
            for (int i = 0; i < 16; ++i) {
                acc[i] = _mm512_dpwssd_epi32(acc[i], lo, _mm512_set1_epi32(xk[i]));
                acc[i] = _mm512_dpwssd_epi32(acc[i], hi, _mm512_set1_epi32(xk[16 + i]));
            }
        };
        if (np == 16) {
#pragma GCC unroll 8
            for (int j = 0; j < 8; ++j) step(q + 2 * j * L, 0xFFFFFFFFull, xb + 2 * j * 16);
        } else {  // a short last block: the nibbles past it read as zero, as x is there
            for (int64_t j = 0; 2 * j < np; ++j) {
                const int64_t bytes = min64(32, (np - 2 * j) * L);
                step(q + 2 * j * L, bytes == 32 ? 0xFFFFFFFFull : (1ull << bytes) - 1, xb + 2 * j * 16);
            }
        }
        const __m512 s = scaled16(sc + b * L, rm);
        if constexpr (Fp4) {
            for (int i = 0; i < 16; ++i) {  // gemv_tile_i4_vnni's f32 steps (Fp4)
                const __m512i sum = _mm512_sub_epi32(acc[i], _mm512_set1_epi32(xm12[b * 16 + i]));
                _mm512_store_ps(facc + 16 * i,
                                _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(0xFFFF, sum),
                                                _mm512_mul_ps(s, _mm512_set1_ps(xws[b * 16 + i])), _mm512_load_ps(facc + 16 * i)));
            }
        } else {
            const __m512 mv = scaled16(mn + b * L, rm);
            for (int i = 0; i < 16; ++i) {  // gemv_tile_i4_vnni's f32 steps (Min)
                const __m512 f = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(0xFFFF, acc[i]),
                                                 _mm512_mul_ps(s, _mm512_set1_ps(xws[b * 16 + i])), _mm512_load_ps(facc + 16 * i));
                _mm512_store_ps(facc + 16 * i, _mm512_fmadd_ps(mv, _mm512_set1_ps(xsq[b * 16 + i]), f));
            }
        }
    }
}

// The tile kernels' common signature: aux = int4's xm8 or int4-min's xsq (int8: unused).
using Tile16Fn = void (*)(const DenseW&, int64_t, const int32_t*, const float*, const void*, int64_t, float*);

// Rows [0, m / 16 * 16) of x in groups of 16 against tiles [t0, t1) with tile_fn (x packed as
// LinearJob::xw describes, xw_row int32 words per row), then the last rows with Kind's kernel of
// up to 8 rows, and every row's epilogue.
template <int Kind>
VT_VNNI4_TARGET inline void gemm_vnni16(const LinearJob& job, int64_t t0, int64_t t1, Tile16Fn tile_fn,
                                        int64_t xw_row) {
    const int64_t nkb = num_kblocks(job.w), out = job.w.out;
    const int64_t m16 = job.m / kVnniRows * kVnniRows;
    const bool swiglu = gated(job.act);
    alignas(64) float g[16 * 16], u[16 * 16];
    // Panels of groups whose packed x fits in about 1 MiB (of a 2 MiB L2): every tile of this
    // thread's range against one panel, then the next (a 5632-wide int8 x is 5.8 MB at 512 rows).
    const int64_t panel = std::max<int64_t>(kVnniRows, (int64_t(1) << 20) / (xw_row * 4) / kVnniRows * kVnniRows);
    for (int64_t p0 = 0; p0 < m16; p0 += panel) {
        const int64_t p1 = std::min(m16, p0 + panel);
        for (int64_t t = t0; t < t1; ++t)
            for (int64_t i0 = p0; i0 < p1; i0 += kVnniRows) {
                const int32_t* xw = job.xw + i0 * xw_row;
                const float* xws = job.xws + i0 * nkb;
                const void* aux = job.xm8 ? static_cast<const void*>(job.xm8 + i0 * nkb)
                                  : job.xsq ? static_cast<const void*>(job.xsq + i0 * nkb)
                                            : nullptr;
                tile_fn(job.w, t, xw, xws, aux, nkb, g);
                if (swiglu) tile_fn(job.w2, t, xw, xws, aux, nkb, u);
                for (int64_t i = 0; i < kVnniRows; ++i) {
                    const V2 gg = halves(_mm512_load_ps(g + 16 * i));
                    epilogue(job, t, gg, swiglu ? halves(_mm512_load_ps(u + 16 * i)) : gg, job.y + (i0 + i) * out);
                }
            }
    }
    if (m16 == job.m) return;
    for (int64_t t = t0; t < t1; ++t) tile_groups_vnni<Kind>(job, t, m16, job.m, nkb);  // the last rows
}

// ---- GEMM --------------------------------------------------------------------------------

constexpr int MR = 6;
// Up to this many rows the GEMM walks tiles outermost (see gemm_kind).
constexpr int64_t kSmallM = 32;

template <int Kind>
void dequant_panel(const DenseW& w, int64_t t, int64_t k0, int64_t kc, float* dst) {
    constexpr int EB = elem_bytes<Kind>();
    const uint8_t* tile = w.tiles + t * w.tile_bytes;
    const __m256 rlo = _mm256_loadu_ps(w.rowmul + t * L), rhi = _mm256_loadu_ps(w.rowmul + t * L + 8);
    if constexpr (Kind == kInt4Blocked || Kind == kMxfp4) {
        const uint16_t* sc = reinterpret_cast<const uint16_t*>(tile + w.scale_off);
        const __m128i lut = nibble_lut<Kind>();
        for (int64_t k = k0; k < k0 + kc;) {  // k0 starts a block; the last may be short
            const int64_t bi = k / w.kb, kend = min64(k0 + kc, (bi + 1) * w.kb);
            V2 s = load_f16x16(sc + bi * L);
            s.lo = _mm256_mul_ps(s.lo, rlo);
            s.hi = _mm256_mul_ps(s.hi, rhi);
            for (; k < kend; ++k) {
                const V2 v = dec_int4(tile, k, lut);
                _mm256_storeu_ps(dst + (k - k0) * L, _mm256_mul_ps(v.lo, s.lo));
                _mm256_storeu_ps(dst + (k - k0) * L + 8, _mm256_mul_ps(v.hi, s.hi));
            }
        }
    } else if constexpr (Kind == kInt4Min) {  // w = u * (s * rm) + m * rm
        const uint16_t* sc = reinterpret_cast<const uint16_t*>(tile + w.scale_off);
        const uint16_t* mn = reinterpret_cast<const uint16_t*>(tile + w.min_off);
        const __m128i lut = int4_min_lut();
        for (int64_t k = k0; k < k0 + kc;) {
            const int64_t bi = k / w.kb, kend = min64(k0 + kc, (bi + 1) * w.kb);
            V2 s = load_f16x16(sc + bi * L), mv = load_f16x16(mn + bi * L);
            s = {_mm256_mul_ps(s.lo, rlo), _mm256_mul_ps(s.hi, rhi)};
            mv = {_mm256_mul_ps(mv.lo, rlo), _mm256_mul_ps(mv.hi, rhi)};
            for (; k < kend; ++k) {
                const V2 v = dec_int4<true>(tile, k, lut);
                _mm256_storeu_ps(dst + (k - k0) * L, _mm256_fmadd_ps(v.lo, s.lo, mv.lo));
                _mm256_storeu_ps(dst + (k - k0) * L + 8, _mm256_fmadd_ps(v.hi, s.hi, mv.hi));
            }
        }
    } else if constexpr (scaled<Kind>()) {
        const uint16_t* sc = reinterpret_cast<const uint16_t*>(tile + w.scale_off);
        const int64_t kb = w.kb;
        for (int64_t b = k0, bi = k0 / kb; b < k0 + kc; b += kb, ++bi) {
            V2 s = load_f16x16(sc + bi * L);
            s.lo = _mm256_mul_ps(s.lo, rlo);
            s.hi = _mm256_mul_ps(s.hi, rhi);
            for (int64_t k = b; k < b + kb; ++k) {
                const V2 v = dec<Kind>(tile + k * L);
                _mm256_storeu_ps(dst + (k - k0) * L, _mm256_mul_ps(v.lo, s.lo));
                _mm256_storeu_ps(dst + (k - k0) * L + 8, _mm256_mul_ps(v.hi, s.hi));
            }
        }
    } else {
        for (int64_t k = k0; k < k0 + kc; ++k) {
            const V2 v = dec<Kind>(tile + k * L * EB);
            _mm256_storeu_ps(dst + (k - k0) * L, _mm256_mul_ps(v.lo, rlo));
            _mm256_storeu_ps(dst + (k - k0) * L + 8, _mm256_mul_ps(v.hi, rhi));
        }
    }
}

// C[i][0..15] (+)= sum_k A[i][k] * B[k][0..15], i < R. Written like the AVX-512 kernel (one
// 2-D accumulator array, the zero/load choice hoisted out of the loops) so that GCC keeps all
// 2R accumulators in registers: the earlier form (c0[R], c1[R], `first ? zero : load` per
// element) compiled to a store of every accumulator to the stack on every k, which bounded
// this kernel by the store port at about a third of the FMA peak.
template <int R>
void micro(const float* A, int64_t lda, const float* B, int64_t kc, float* C, int64_t ldc, bool first) {
    __m256 c[R][2];
    if (first) {
        for (int i = 0; i < R; ++i) c[i][0] = c[i][1] = _mm256_setzero_ps();
    } else {
        for (int i = 0; i < R; ++i) {
            c[i][0] = _mm256_loadu_ps(C + i * ldc);
            c[i][1] = _mm256_loadu_ps(C + i * ldc + 8);
        }
    }
    for (int64_t k = 0; k < kc; ++k) {
        const __m256 b0 = _mm256_loadu_ps(B + k * L), b1 = _mm256_loadu_ps(B + k * L + 8);
#pragma GCC unroll 6
        for (int i = 0; i < R; ++i) {
            const __m256 a = _mm256_set1_ps(A[i * lda + k]);
            c[i][0] = _mm256_fmadd_ps(a, b0, c[i][0]);
            c[i][1] = _mm256_fmadd_ps(a, b1, c[i][1]);
        }
    }
    for (int i = 0; i < R; ++i) {
        _mm256_storeu_ps(C + i * ldc, c[i][0]);
        _mm256_storeu_ps(C + i * ldc + 8, c[i][1]);
    }
}

using MicroFn = void (*)(const float*, int64_t, const float*, int64_t, float*, int64_t, bool);
const MicroFn kMicro[MR] = {micro<1>, micro<2>, micro<3>, micro<4>, micro<5>, micro<6>};

// The epilogue of tiles [jt, jt + nt) for all rows, from the GEMM accumulator
// acc [m][W] (W = nt * 16, times 2 for swiglu: gate and up of a tile side by side).
void finish_tiles(const LinearJob& job, int64_t jt, int64_t nt, const float* acc, int64_t W) {
    const bool swiglu = gated(job.act);
    const int64_t per = swiglu ? 2 : 1;
    for (int64_t i = 0; i < job.m; ++i) {
        for (int64_t j = 0; j < nt; ++j) {
            const float* a = acc + i * W + j * per * L;
            const V2 g = {_mm256_loadu_ps(a), _mm256_loadu_ps(a + 8)};
            const V2 u = swiglu ? V2{_mm256_loadu_ps(a + L), _mm256_loadu_ps(a + L + 8)} : g;
            epilogue(job, jt + j, g, u, job.y + i * job.w.out);
        }
    }
}

// Calls f(i0, rows) for m rows in ceil(m / mr) groups of near-equal size (8 rows with mr = 6:
// 4 + 4, not 6 + 2): a group of R rows has 2R independent accumulator chains, and fewer than
// ~8 leave the FMA units waiting on latency.
template <class F>
inline void row_groups(int64_t m, int64_t mr, F&& f) {
    const int64_t ng = (m + mr - 1) / mr;
    for (int64_t g = 0, i0 = 0; g < ng; ++g) {
        const int64_t rows = (m - i0) / (ng - g);
        f(i0, rows);
        i0 += rows;
    }
}

template <int Kind>
void gemm_kind(const LinearJob& job, int64_t t0, int64_t t1, float* scratch) {
    const bool swiglu = gated(job.act);
    const int64_t m = job.m, in = job.w.in;
    const int64_t per = swiglu ? 2 : 1;
    float* panel = scratch;
    float* acc = scratch + kGemmPanelFloats;
    for (int64_t jt = t0; jt < t1; jt += kGemmTiles) {
        const int64_t nt = min64(kGemmTiles, t1 - jt);
        const int64_t nv = nt * per;
        const int64_t W = nv * L;
        for (int64_t k0 = 0; k0 < in; k0 += kGemmKc) {
            const int64_t kc = min64(kGemmKc, in - k0);
            if (m <= kSmallM) {
                // Few rows: decode one tile's panel (kc x 16 floats, in L1) and use it for
                // every row group at once, so the panel never goes to L2 and back.
                for (int64_t v = 0; v < nv; ++v) {
                    const DenseW& w = (swiglu && (v & 1)) ? job.w2 : job.w;
                    dequant_panel<Kind>(w, jt + v / per, k0, kc, panel);
                    row_groups(m, MR, [&](int64_t i0, int64_t mr) {
                        kMicro[mr - 1](job.x + i0 * in + k0, in, panel, kc, acc + i0 * W + v * L, W, k0 == 0);
                    });
                }
                continue;
            }
            for (int64_t v = 0; v < nv; ++v) {
                const DenseW& w = (swiglu && (v & 1)) ? job.w2 : job.w;
                dequant_panel<Kind>(w, jt + v / per, k0, kc, panel + v * kc * L);
            }
            for (int64_t i0 = 0; i0 < m; i0 += MR) {
                const int64_t mr = min64(MR, m - i0);
                for (int64_t v = 0; v < nv; ++v)
                    kMicro[mr - 1](job.x + i0 * in + k0, in, panel + v * kc * L, kc, acc + i0 * W + v * L, W, k0 == 0);
            }
        }
        finish_tiles(job, jt, nt, acc, W);
    }
}

// ---- integer GEMM: int8 / int4 weights x int16 activations (int16_gemm_ok) --------------
//
// Per tile and chunk of K-blocks the weights are widened once into a panel of k pairs,
// [k/2][16 rows][2] int16 (two ymm per pair: rows 0-7, rows 8-15): int8 as it is, int4 as
// q = u - 8, int4-min as u. The block scales (f16 scale * rowmul) go to f32 [block][16], and
// for int4-min the block mins (f16 min * rowmul) after them. A row of x contributes one
// 32-bit broadcast of its (k, k+1) int16 pair per k pair; vpmaddwd multiplies it with 8
// rows' pairs and adds each lane's two products exactly in int32. After each K-block the
// int32 sums go to f32 and are added to C with weight scale * x scale (int4-min: plus
// min * xs * sum(xq) of the block). 6 rows x 16 columns: 12 int32 accumulators.

// A prefetch GCC keeps even in a loop that does nothing else (it deletes _mm_prefetch there).
inline void prefetch_t0(const void* p) { __asm__ volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p))); }

template <int Kind>
void panel_scales(const DenseW& w, int64_t t, int64_t b0, int64_t nb, float* sc);

// Panel of tile t for K-blocks [b0, b0 + nb): pairs (nb*kb*16 int16), then the f32 scales
// sc [nb][16], then (int4-min) the f32 mins at sc + nb*16.
template <int Kind>
void int16_panel(const DenseW& w, int64_t t, int64_t b0, int64_t nb, int16_t* pan, float* sc) {
    const uint8_t* tile = w.tiles + t * w.tile_bytes;
    const int64_t kb = w.kb, k0 = b0 * kb, np = nb * kb / 2;
    if constexpr (Kind == kInt8Blocked) {
        for (int64_t j = 0; j < np; ++j) {
            const int64_t k = k0 + 2 * j;
            const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(tile + k * L));
            const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(tile + (k + 1) * L));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(pan + j * 32), _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(a, b)));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(pan + j * 32 + 16), _mm256_cvtepi8_epi16(_mm_unpackhi_epi8(a, b)));
        }
    } else {
        // One 16-byte row of the tile holds the pair (k, k + 1) of all 16 rows as nibbles. A
        // short last block stores fewer pairs than kb / 2: the rest of its panel is zeros
        // (and so is xq there).
        const int64_t have = min64(np, (w.in + 1) / 2 - k0 / 2);
        const __m128i m4 = _mm_set1_epi8(0x0F), off = _mm_set1_epi8(Kind == kInt4Blocked ? 8 : 0);
        const __m128i vals = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4Values));
        const auto value = [&](__m128i u) {  // q = u - 8, int4-min's u, MXFP4's v
            return Kind == kMxfp4 ? _mm_shuffle_epi8(vals, u) : _mm_sub_epi8(u, off);
        };
        const uint8_t* q = tile + (k0 / 2) * L;
        for (int64_t j = 0; j < have; ++j) {
            const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + j * L));
            const __m128i lo = value(_mm_and_si128(b, m4));
            const __m128i hi = value(_mm_and_si128(_mm_srli_epi16(b, 4), m4));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(pan + j * 32), _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(lo, hi)));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(pan + j * 32 + 16), _mm256_cvtepi8_epi16(_mm_unpackhi_epi8(lo, hi)));
        }
        if (have < np) std::memset(pan + have * 32, 0, sizeof(int16_t) * static_cast<size_t>((np - have) * 32));
    }
    panel_scales<Kind>(w, t, b0, nb, sc);
}

// The f32 scales of tile t's K-blocks [b0, b0 + nb) times rowmul, sc [nb][16], then (int4-min)
// the mins likewise at sc + nb*16.
template <int Kind>
void panel_scales(const DenseW& w, int64_t t, int64_t b0, int64_t nb, float* sc) {
    const uint8_t* tile = w.tiles + t * w.tile_bytes;
    const uint16_t* s16 = reinterpret_cast<const uint16_t*>(tile + w.scale_off);
    const uint16_t* m16 = reinterpret_cast<const uint16_t*>(tile + w.min_off);
    const __m256 rlo = _mm256_loadu_ps(w.rowmul + t * L), rhi = _mm256_loadu_ps(w.rowmul + t * L + 8);
    for (int64_t b = 0; b < nb; ++b) {
        const V2 v = load_f16x16(s16 + (b0 + b) * L);
        _mm256_storeu_ps(sc + b * L, _mm256_mul_ps(v.lo, rlo));
        _mm256_storeu_ps(sc + b * L + 8, _mm256_mul_ps(v.hi, rhi));
        if constexpr (Kind == kInt4Min) {
            const V2 mv = load_f16x16(m16 + (b0 + b) * L);
            _mm256_storeu_ps(sc + (nb + b) * L, _mm256_mul_ps(mv.lo, rlo));
            _mm256_storeu_ps(sc + (nb + b) * L + 8, _mm256_mul_ps(mv.hi, rhi));
        }
    }
}

// The GEMM microkernels' k loop over one K-block, rows i < R: s[i][0] (columns 0-7) and
// s[i][1] (8-15) accumulate Op over nj steps (J > 0: nj = J, unrolled whole), each step 64
// bytes of panel (two vectors) against 4 bytes of each row of x (rows lda bytes apart),
// broadcast: an int16 pair of k for vpmaddwd (MaddI16) or a byte quad for vpmaddubsw (MaddU8).
struct MaddI16 {
    static void acc(__m256i& a, __m256i w, __m256i x) { madd_acc(a, x, w); }
};
struct MaddU8 {
    static void acc(__m256i& a, __m256i w, __m256i x) { maddubs_acc(a, w, x); }
};
template <int R, int J, class Op>
inline void block_sums(const uint8_t* x, int64_t lda, const uint8_t* pb, int64_t nj, __m256i (&s)[6][2]) {
    const int64_t n = J > 0 ? J : nj;
    __m256i a00 = _mm256_setzero_si256(), a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00, a30 = a00,
            a31 = a00, a40 = a00, a41 = a00, a50 = a00, a51 = a00;
    // One pointer per row: with x + i * lda + 4 * j, GCC kept a precomputed address per
    // (row, j) of the unrolled loop on the stack and reloaded it before each broadcast.
    const uint8_t *x0 = x, *x1 = x0 + lda, *x2 = x1 + lda, *x3 = x2 + lda, *x4 = x3 + lda, *x5 = x4 + lda;
#pragma GCC unroll 16
    for (int64_t j = 0; j < n; ++j) {
        const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb + j * 64));
        const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb + j * 64 + 32));
#define VT_ROW(i)                                                    \
    if constexpr (R > i) {                                           \
        const __m256i xv = _mm256_set1_epi32(load_i32(x##i + 4 * j)); \
        Op::acc(a##i##0, w0, xv);                                    \
        Op::acc(a##i##1, w1, xv);                                    \
    }
        VT_ROW(0) VT_ROW(1) VT_ROW(2) VT_ROW(3) VT_ROW(4) VT_ROW(5)
#undef VT_ROW
    }
    s[0][0] = a00, s[0][1] = a01, s[1][0] = a10, s[1][1] = a11, s[2][0] = a20, s[2][1] = a21;
    s[3][0] = a30, s[3][1] = a31, s[4][0] = a40, s[4][1] = a41, s[5][0] = a50, s[5][1] = a51;
}

// The GEMM microkernels' block epilogue, rows i < R: C[i] += f32(sums[i]) * sc[b] * xs[i][b]
// (Min: + mn[b] * xsum[i][b] * xs[i][b]), the same float operations as the GEMVs'.
template <int R, bool Min>
inline void add_block(const __m256i (&sums)[6][2], const float* sc, const float* mn, const float* xs,
                      const float* xsum, int64_t lds, int64_t b, float* C, int64_t ldc) {
    const __m256 slo = _mm256_loadu_ps(sc + b * L), shi = _mm256_loadu_ps(sc + b * L + 8);
    for (int i = 0; i < R; ++i) {
        const __m256 xsv = _mm256_set1_ps(xs[i * lds + b]);
        float* c = C + i * ldc;
        __m256 clo = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums[i][0]), _mm256_mul_ps(slo, xsv), _mm256_loadu_ps(c));
        __m256 chi = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums[i][1]), _mm256_mul_ps(shi, xsv), _mm256_loadu_ps(c + 8));
        if constexpr (Min) {
            const __m256 sv = _mm256_set1_ps(xsum[i * lds + b] * xs[i * lds + b]);
            clo = _mm256_fmadd_ps(_mm256_loadu_ps(mn + b * L), sv, clo);
            chi = _mm256_fmadd_ps(_mm256_loadu_ps(mn + b * L + 8), sv, chi);
        }
        _mm256_storeu_ps(c, clo);
        _mm256_storeu_ps(c + 8, chi);
    }
}

// C[i][0..15] += sum over blocks b of xs[i][b] * sc[b][.] * sum_{k in b} xq[i][k] * w[k][.]
// (Min: + xsum[i][b] * mn[b][.]), i < R. xq rows at stride lda (int16), xs and xsum rows at
// stride lds; all start at the chunk (block_sums with MaddI16, then add_block).

// KBH > 0: kb = 2 * KBH known at compile time (the common kb = 32), so the k-pair loop is
// unrolled whole: with 16 trips per block, its exit branch alone cost ~10 %.
template <int R, int KBH, bool Min>
void micro_i16(const int16_t* xq, int64_t lda, const float* xs, const float* xsum, int64_t lds, const int16_t* pan,
               const float* sc, int64_t nb, int64_t kb, float* C, int64_t ldc) {
    const int64_t kbh = KBH > 0 ? KBH : kb / 2;
    const float* mn = sc + nb * L;
    for (int64_t b = 0; b < nb; ++b) {
        __m256i sums[6][2];
        block_sums<R, KBH, MaddI16>(reinterpret_cast<const uint8_t*>(xq + b * 2 * kbh), 2 * lda,
                                    reinterpret_cast<const uint8_t*>(pan + b * kbh * 32), kbh, sums);
        add_block<R, Min>(sums, sc, mn, xs, xsum, lds, b, C, ldc);
    }
}

using MicroI16Fn = void (*)(const int16_t*, int64_t, const float*, const float*, int64_t, const int16_t*,
                            const float*, int64_t, int64_t, float*, int64_t);
// 6 rows: 12 accumulators, two weight vectors, the broadcast and vpmaddwd's product.
constexpr int MRI = 6;
template <int KBH, bool Min>
struct MicroI16Set {
    static constexpr MicroI16Fn fns[MRI] = {micro_i16<1, KBH, Min>, micro_i16<2, KBH, Min>, micro_i16<3, KBH, Min>,
                                            micro_i16<4, KBH, Min>, micro_i16<5, KBH, Min>, micro_i16<6, KBH, Min>};
};

// ---- int4 GEMM against x in bytes (kInt4Blocked, kb = 32; LinearJob::xb) ------------------
//
// int4 rounds x to one signed byte (kXq8Max), so its GEMM can multiply bytes as its GEMV
// does: vpmaddubsw of the nibbles u (unsigned) and x, 32 products per instruction into int16
// lanes, where the int16 GEMM's vpmaddwd did 16 and needed an add per 16. A panel vector
// holds 8 columns x 4 k (a column's u_k .. u_k+3 in one dword) and the broadcast x dword
// (x_k .. x_k+3) multiplies all 8: each int16 lane sums two products per quad, at most
// 8 quads per block of 32: <= 8 * 2 * 15 * 127 = 30480, no overflow. vpmaddwd with ones
// then joins a column's two lanes in int32: the block's exact sum of u * x; minus 8 * sum(x)
// for q = u - 8, scaled as micro_i16 does, so the bits equal the int16 GEMM's and the GEMV's.

// Panel of tile t for K-blocks [b0, b0 + nb) (kb = 32): per block 8 quads of 64 bytes
// (columns 0-7, then 8-15; each a dword of 4 k), zeros past the end of K.
void quad_panel(const DenseW& w, int64_t t, int64_t b0, int64_t nb, uint8_t* pan) {
    const uint8_t* tile = w.tiles + t * w.tile_bytes;
    const int64_t p0 = b0 * 16, np = nb * 16;             // pairs of k
    const int64_t have = min64(np, (w.in + 1) / 2 - p0);  // pairs the tile holds from p0 on
    const __m128i m4 = _mm_set1_epi8(0x0F), zero = _mm_setzero_si128();
    const uint8_t* q = tile + p0 * L;
    for (int64_t j = 0; j < np; j += 2) {  // the quad of pairs j, j + 1
        const __m128i r0 = j < have ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + j * L)) : zero;
        const __m128i r1 = j + 1 < have ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + (j + 1) * L)) : zero;
        const __m128i l0 = _mm_and_si128(r0, m4), h0 = _mm_and_si128(_mm_srli_epi16(r0, 4), m4);
        const __m128i l1 = _mm_and_si128(r1, m4), h1 = _mm_and_si128(_mm_srli_epi16(r1, 4), m4);
        const __m128i a = _mm_unpacklo_epi8(l0, h0), a8 = _mm_unpackhi_epi8(l0, h0);  // (u_4j', u_4j'+1) per column
        const __m128i c = _mm_unpacklo_epi8(l1, h1), c8 = _mm_unpackhi_epi8(l1, h1);  // (u_4j'+2, u_4j'+3)
        uint8_t* d = pan + j * 32;
        _mm_storeu_si128(reinterpret_cast<__m128i*>(d), _mm_unpacklo_epi16(a, c));         // columns 0-3
        _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 16), _mm_unpackhi_epi16(a, c));    // 4-7
        _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 32), _mm_unpacklo_epi16(a8, c8));  // 8-11
        _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 48), _mm_unpackhi_epi16(a8, c8));  // 12-15
    }
}

// C[i][0..15] += sum over blocks b of xs[i][b] * sc[b][.] * sum_{k in b} (u - 8) x[i][k], i < R
// (as micro_i16<R, 16, false>). x rows (bytes) at stride lda, xs and xsum rows at stride lds.
template <int R>
void micro_q4(const int8_t* xb, int64_t lda, const float* xs, const float* xsum, int64_t lds, const uint8_t* pan,
              const float* sc, int64_t nb, float* C, int64_t ldc) {
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t b = 0; b < nb; ++b) {
        __m256i sums[6][2];
        block_sums<R, 8, MaddU8>(reinterpret_cast<const uint8_t*>(xb + b * 32), lda, pan + b * 512, 8, sums);
        for (int i = 0; i < R; ++i) {  // a column's two int16 lanes joined in int32, minus 8 * sum(x): q = u - 8
            const __m256i m8 = _mm256_set1_epi32(8 * static_cast<int32_t>(xsum[i * lds + b]));
            sums[i][0] = _mm256_sub_epi32(_mm256_madd_epi16(sums[i][0], ones), m8);
            sums[i][1] = _mm256_sub_epi32(_mm256_madd_epi16(sums[i][1], ones), m8);
        }
        add_block<R, false>(sums, sc, nullptr, xs, nullptr, lds, b, C, ldc);
    }
}

using MicroQ4Fn = void (*)(const int8_t*, int64_t, const float*, const float*, int64_t, const uint8_t*, const float*,
                           int64_t, float*, int64_t);
constexpr MicroQ4Fn kMicroQ4[MRI] = {micro_q4<1>, micro_q4<2>, micro_q4<3>, micro_q4<4>, micro_q4<5>, micro_q4<6>};

// The lines of the chunk that follows one in a thread's weight stream (the same tile's next
// K chunk, else the next tile's first; for swiglu the gate's and the up weight's tiles
// alternate): its codes and its f16 scales (and mins), which sit at the end of their tile,
// away from the codes. gemm_int16 requests them while the rows of the current chunk are
// multiplied, a share before each row group: packing the chunk then reads L1, where asking
// for the whole next chunk during the packing (the earlier scheme) queued its misses behind
// the packing's own, and the first read of each chunk's scales missed to DRAM (a perf
// annotate of the 16-row SmolLM2 step put ~19 % of gemm_avx2's own time on that load).
struct NextChunk {
    const uint8_t* codes = nullptr;
    int64_t code_bytes = 0;
    const uint8_t* scales = nullptr;  // and, int4-min, the mins at the same offset from min_off
    const uint8_t* mins = nullptr;
    int64_t scale_bytes = 0;

    // The lines of the codes that rows [i0, i0 + rows) of m stand for (their share of the
    // group's compute), and with the first group all of the scales.
    void request(int64_t i0, int64_t rows, int64_t m) const {
        if (codes == nullptr) return;
        if (i0 == 0) {
            for (int64_t o = 0; o < scale_bytes; o += 64) prefetch_t0(scales + o);
            prefetch_t0(scales + scale_bytes - 1);
            if (mins != nullptr) {
                for (int64_t o = 0; o < scale_bytes; o += 64) prefetch_t0(mins + o);
                prefetch_t0(mins + scale_bytes - 1);
            }
        }
        const int64_t e = (i0 + rows) * code_bytes / m;
        for (int64_t o = (i0 * code_bytes / m) & ~int64_t(63); o < e; o += 64) prefetch_t0(codes + o);
    }
};

// The chunk after (v, b0) of gemm_int16's tile group [jt, jt + nt) within [jt, t1).
template <int Kind>
NextChunk next_chunk(const LinearJob& job, int64_t jt, int64_t nt, int64_t t1, int64_t v, int64_t b0, int64_t bpc) {
    const bool swiglu = gated(job.act);
    const int64_t per = swiglu ? 2 : 1, nkb = num_kblocks(job.w);
    int64_t nv = v, nb0 = b0 + bpc, t = 0;
    if (nb0 >= nkb) nb0 = 0, ++nv;
    const DenseW* w = &job.w;
    if (nv < nt * per) {
        w = (swiglu && (nv & 1)) ? &job.w2 : &job.w;
        t = jt + nv / per;
    } else {
        t = jt + nt;  // the next group's first tile
    }
    NextChunk n;
    if (t >= t1) return n;
    const int64_t nb = min64(bpc, nkb - nb0);
    const int64_t per_k = Kind == kInt8Blocked ? L : L / 2;  // code bytes per k of a tile
    const uint8_t* tile = w->tiles + t * w->tile_bytes;
    n.codes = tile + nb0 * w->kb * per_k;
    n.code_bytes = min64(nb * w->kb, w->in - nb0 * w->kb) * per_k;  // a short last block
    n.scales = tile + w->scale_off + nb0 * L * 2;
    n.mins = Kind == kInt4Min ? tile + w->min_off + nb0 * L * 2 : nullptr;
    n.scale_bytes = nb * L * 2;
    return n;
}

// Scratch: the panel (kGemmKc int16 pairs per tile at most, its scales and mins) fits in the
// kGemmPanelFloats the float GEMM uses; the accumulator follows it as there.
template <int Kind>
void gemm_int16(const LinearJob& job, int64_t t0, int64_t t1, float* scratch) {
    constexpr bool Min = Kind == kInt4Min;
    const bool swiglu = gated(job.act);
    const int64_t m = job.m, kb = job.w.kb;
    const int64_t nkb = num_kblocks(job.w);
    const MicroI16Fn* micro = kb == 32 ? MicroI16Set<16, Min>::fns : MicroI16Set<0, Min>::fns;
    const int64_t per = swiglu ? 2 : 1;
    const int64_t bpc = kb >= kGemmKc ? 1 : kGemmKc / kb;  // K-blocks per chunk
    int16_t* pan = reinterpret_cast<int16_t*>(scratch);
    uint8_t* pan8 = reinterpret_cast<uint8_t*>(scratch);  // quad_panel's (bpc * 512 bytes: smaller)
    // int4 with x in bytes (round_x_int16 gives them for kb = 32 only): the vpmaddubsw kernel.
    const bool q4 = Kind == kInt4Blocked && job.xb != nullptr;
    float* sc = scratch + (bpc * kb * L) / 2;  // after bpc*kb*16 int16
    float* acc = scratch + kGemmPanelFloats;
    for (int64_t jt = t0; jt < t1; jt += kGemmTiles) {
        const int64_t nt = min64(kGemmTiles, t1 - jt);
        const int64_t nv = nt * per;
        const int64_t W = nv * L;
        std::memset(acc, 0, sizeof(float) * static_cast<size_t>(m * W));
        // Tile by tile, each tile's K in chunks: the weights are read as one sequential
        // stream per thread (chunk-major over 8 tiles made 8 streams 10 KB apart, which the
        // hardware prefetchers followed badly); the xq rows come from L2 instead of L1.
        for (int64_t v = 0; v < nv; ++v) {
            const DenseW& w = (swiglu && (v & 1)) ? job.w2 : job.w;
            for (int64_t b0 = 0; b0 < nkb; b0 += bpc) {
                const int64_t nb = min64(bpc, nkb - b0);
                const NextChunk next = next_chunk<Kind>(job, jt, nt, t1, v, b0, bpc);
                if (q4) {
                    quad_panel(w, jt + v / per, b0, nb, pan8);
                    panel_scales<Kind>(w, jt + v / per, b0, nb, sc);
                    row_groups(m, MRI, [&](int64_t i0, int64_t mr) {
                        next.request(i0, mr, m);
                        kMicroQ4[mr - 1](job.xb + i0 * job.xb_ld + b0 * kb, job.xb_ld, job.xqs + i0 * nkb + b0,
                                         job.xqsum + i0 * nkb + b0, nkb, pan8, sc, nb, acc + i0 * W + v * L, W);
                    });
                    continue;
                }
                int16_panel<Kind>(w, jt + v / per, b0, nb, pan, sc);
                row_groups(m, MRI, [&](int64_t i0, int64_t mr) {
                    next.request(i0, mr, m);
                    micro[mr - 1](job.xq + i0 * job.xq_ld + b0 * kb, job.xq_ld, job.xqs + i0 * nkb + b0,
                                  Min ? job.xqsum + i0 * nkb + b0 : nullptr, nkb, pan, sc, nb, kb,
                                  acc + i0 * W + v * L, W);
                });
            }
        }
        finish_tiles(job, jt, nt, acc, W);
    }
}

}  // namespace

void quantize_x16_avx2(const float* x, int64_t m, int64_t in, int64_t kb, int16_t* xq, int64_t ld, float* xs,
                       float* xsum, int16_t qmax) {
    const int64_t nkb = (in + kb - 1) / kb;
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256 inf = _mm256_set1_ps(std::numeric_limits<float>::infinity());
    for (int64_t i = 0; i < m; ++i) {
        for (int64_t b = 0; b < nkb; ++b) {
            const float* xb = x + i * in + b * kb;
            int16_t* qb = xq + i * ld + b * kb;
            const int64_t n = min64(kb, in - b * kb);
            std::memset(qb + n, 0, sizeof(int16_t) * static_cast<size_t>(kb - n));  // a short last block
            __m256 amax = _mm256_setzero_ps(), bad = _mm256_setzero_ps();
            int64_t k = 0;
            for (; k + 8 <= n; k += 8) {
                const __m256 ax = _mm256_and_ps(_mm256_loadu_ps(xb + k), absmask);
                amax = _mm256_max_ps(amax, ax);
                bad = _mm256_or_ps(bad, _mm256_cmp_ps(ax, inf, _CMP_NLT_UQ));  // inf or NaN
            }
            alignas(32) float lanes[8];
            _mm256_store_ps(lanes, amax);
            float am = 0.f;
            for (float v : lanes) am = v > am ? v : am;
            bool nonfinite = _mm256_movemask_ps(bad) != 0;
            x16_absmax(xb, k, n, am, nonfinite);
            float inv;
            if (!x16_block_scale(am, nonfinite, qmax, qb, n, xs + i * nkb + b, xsum ? xsum + i * nkb + b : nullptr, &inv))
                continue;
            const __m256 iv = _mm256_set1_ps(inv);
            __m256i sum8 = _mm256_setzero_si256();
            k = 0;
            for (; k + 8 <= n; k += 8) {  // round to nearest even (MXCSR default), saturating pack
                const __m256i q = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xb + k), iv));
                sum8 = _mm256_add_epi32(sum8, q);
                _mm_storeu_si128(reinterpret_cast<__m128i*>(qb + k),
                                 _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1)));
            }
            alignas(32) int32_t s8[8];
            _mm256_store_si256(reinterpret_cast<__m256i*>(s8), sum8);
            int64_t sum = 0;  // |q| <= qmax (|x| <= am), so each lane of sum8 is exact
            for (int32_t v : s8) sum += v;
            for (; k < n; ++k) {
                const float q = std::nearbyint(xb[k] * inv);
                qb[k] = static_cast<int16_t>(q > qmax ? qmax : (q < -qmax ? -qmax : q));
                sum += qb[k];
            }
            if (xsum) xsum[i * nkb + b] = static_cast<float>(sum);
        }
    }
}

void split_x16_avx2(const int16_t* xq, int64_t m, int64_t n, int64_t ld, int32_t* xp, int64_t ldp) {
    const __m128i c128 = _mm_set1_epi16(128);
    for (int64_t i = 0; i < m; ++i) {
        const int16_t* q = xq + i * ld;
        int32_t* d = xp + i * ldp;
        int64_t k = 0;
        for (; k + 8 <= n; k += 8) {  // 4 pairs: h = (q + 128) >> 8, l = q - 256 h
            const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + k));
            const __m128i h = _mm_srai_epi16(_mm_add_epi16(v, c128), 8);
            const __m128i l = _mm_sub_epi16(v, _mm_slli_epi16(h, 8));
            const __m128i hb = _mm_packs_epi16(h, h), lb = _mm_packs_epi16(l, l);  // in range: exact
            const __m128i hw = _mm_unpacklo_epi16(hb, hb), lw = _mm_unpacklo_epi16(lb, lb);
            const __m128i a = _mm_unpacklo_epi32(hw, lw), c = _mm_unpackhi_epi32(hw, lw);  // pairs 0 1 | 2 3
            _mm_storeu_si128(reinterpret_cast<__m128i*>(d + k), _mm_unpacklo_epi64(a, c));      // h0 l0 h2 l2
            _mm_storeu_si128(reinterpret_cast<__m128i*>(d + k + 4), _mm_unpackhi_epi64(a, c));  // h1 l1 h3 l3
        }
        for (; k < n; k += 2) {
            uint8_t hb[2], lb[2];
            for (int e = 0; e < 2; ++e) {
                const int32_t h = (q[k + e] + 128) >> 8;
                hb[e] = static_cast<uint8_t>(h);
                lb[e] = static_cast<uint8_t>(q[k + e] - 256 * h);
            }
            const uint32_t hw = hb[0] | (uint32_t(hb[1]) << 8), lw = lb[0] | (uint32_t(lb[1]) << 8);
            const int64_t o = xp_word(k / 2);
            d[o] = static_cast<int32_t>(hw | (hw << 16));
            d[o + 1] = static_cast<int32_t>(lw | (lw << 16));
        }
    }
}

void split_x8_avx2(const int16_t* xq, int64_t m, int64_t n, int64_t ld, int32_t* xp, int64_t ldp) {
    // Bytes of 16 x (8 pairs, words w0..w7) -> w0 w0 w2 w2 w4 w4 w6 w6 | w1 w1 w3 w3 ...
    const __m128i even = _mm_setr_epi8(0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13);
    const __m128i odd = _mm_setr_epi8(2, 3, 2, 3, 6, 7, 6, 7, 10, 11, 10, 11, 14, 15, 14, 15);
    for (int64_t i = 0; i < m; ++i) {
        const int16_t* q = xq + i * ld;
        int32_t* d = xp + i * ldp;
        int64_t k = 0;
        for (; k + 16 <= n; k += 16) {
            const __m128i b = _mm_packs_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + k)),
                                              _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + k + 8)));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(d + k / 2), _mm_shuffle_epi8(b, even));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(d + k / 2 + 4), _mm_shuffle_epi8(b, odd));
        }
        for (; k < n; k += 2) {
            const uint32_t wv = static_cast<uint8_t>(q[k]) | (uint32_t(static_cast<uint8_t>(q[k + 1])) << 8);
            d[xp8_word(k / 2)] = static_cast<int32_t>(wv | (wv << 16));
        }
    }
}

void narrow_x8_avx2(const int16_t* xq, int64_t m, int64_t n, int64_t ld, int8_t* xb, int64_t ldb) {
    for (int64_t i = 0; i < m; ++i) {
        const int16_t* q = xq + i * ld;
        int8_t* d = xb + i * ldb;
        int64_t k = 0;
        for (; k + 16 <= n; k += 16)
            _mm_storeu_si128(reinterpret_cast<__m128i*>(d + k),
                             _mm_packs_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + k)),
                                             _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + k + 8))));
        for (; k < n; ++k) d[k] = static_cast<int8_t>(q[k]);
    }
}

void split_x16_bytes_avx2(const int16_t* xq, int64_t m, int64_t n, int64_t ld, int8_t* xh, int8_t* xl, int64_t ldb,
                          bool biased) {
    const __m256i c128 = _mm256_set1_epi16(128), flip = _mm256_set1_epi16(static_cast<short>(0x8000)),
                  lo = _mm256_set1_epi16(0xFF);
    for (int64_t i = 0; i < m; ++i) {
        const int16_t* q = xq + i * ld;
        int8_t* dh = xh + i * ldb;
        int8_t* dl = xl + i * ldb;
        int64_t k = 0;
        for (; k + 16 <= n; k += 16) {
            const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + k));
            __m128i hb, lb;
            if (biased) {  // u = q + 32768 = 256 h + l, h and l in [0, 255]
                const __m256i u = _mm256_xor_si256(v, flip);
                const __m256i h = _mm256_srli_epi16(u, 8), l = _mm256_and_si256(u, lo);
                hb = _mm_packus_epi16(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
                lb = _mm_packus_epi16(_mm256_castsi256_si128(l), _mm256_extracti128_si256(l, 1));
            } else {  // h = (q + 128) >> 8, l = q - 256 h, both in [-128, 127]
                const __m256i h = _mm256_srai_epi16(_mm256_add_epi16(v, c128), 8);
                const __m256i l = _mm256_sub_epi16(v, _mm256_slli_epi16(h, 8));
                hb = _mm_packs_epi16(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
                lb = _mm_packs_epi16(_mm256_castsi256_si128(l), _mm256_extracti128_si256(l, 1));
            }
            _mm_storeu_si128(reinterpret_cast<__m128i*>(dh + k), hb);
            _mm_storeu_si128(reinterpret_cast<__m128i*>(dl + k), lb);
        }
        for (; k < n; ++k) {
            const int32_t v = biased ? q[k] + 32768 : q[k];
            const int32_t h = biased ? v >> 8 : (v + 128) >> 8;
            dh[k] = static_cast<int8_t>(static_cast<uint8_t>(h));
            dl[k] = static_cast<int8_t>(static_cast<uint8_t>(v - 256 * h));
        }
    }
}

void gemv_avx2(const LinearJob& job, int64_t t0, int64_t t1) {
    if (job.xq != nullptr && int16_gemm_ok(job.w)) {
        switch (job.w.kind) {
            case kInt4Blocked: gemv_range_int<kInt4Blocked>(job, t0, t1); break;
            case kInt4Min: gemv_range_int<kInt4Min>(job, t0, t1); break;
            case kMxfp4: gemv_range_int<kMxfp4>(job, t0, t1); break;
            default: gemv_range_int<kInt8Blocked>(job, t0, t1); break;
        }
        return;
    }
    switch (job.w.kind) {
        case kInt8Blocked: gemv_kind<kInt8Blocked>(job, t0, t1); break;
        case kFp8Blocked: gemv_kind<kFp8Blocked>(job, t0, t1); break;
        case kFp8Channel: gemv_kind<kFp8Channel>(job, t0, t1); break;
        case kInt4Blocked: gemv_kind<kInt4Blocked>(job, t0, t1); break;
        case kInt4Min: gemv_kind<kInt4Min>(job, t0, t1); break;
        case kMxfp4: gemv_kind<kMxfp4>(job, t0, t1); break;
        default: gemv_kind<kBf16>(job, t0, t1); break;
    }
}

VT_VNNI4_TARGET void linear_int4_min_vnni(const LinearJob& job, int64_t t0, int64_t t1) {
    linear_rows_vnni<kInt4Min>(job, t0, t1);
}

VT_VNNI4_TARGET void linear_int8_vnni(const LinearJob& job, int64_t t0, int64_t t1) {
    linear_rows_vnni<kInt8Blocked>(job, t0, t1);
}

VT_VNNI4_TARGET void gemm_int8_vnni(const LinearJob& job, int64_t t0, int64_t t1) {
    // vnni_gemm_int8: K-blocks of 16, 32, 64 or 128 (prepack's), dividing in
    const Tile16Fn tile_fn = job.w.kb == 16   ? tile_i8_wssd<16>
                             : job.w.kb == 32 ? tile_i8_wssd<32>
                             : job.w.kb == 64 ? tile_i8_wssd<64>
                                              : tile_i8_wssd<128>;
    gemm_vnni16<kInt8Blocked>(job, t0, t1, tile_fn, num_kblocks(job.w) * job.w.kb / 2);
}

VT_VNNI4_TARGET void gemm_int4_min_vnni(const LinearJob& job, int64_t t0, int64_t t1) {
    gemm_vnni16<kInt4Min>(job, t0, t1, tile_i4m_vnni16<false>, num_kblocks(job.w) * job.w.kb / 2);  // x as int8's
}

VT_VNNI4_TARGET void gemm_mxfp4_vnni(const LinearJob& job, int64_t t0, int64_t t1) {
    gemm_vnni16<kMxfp4>(job, t0, t1, tile_i4m_vnni16<true>, num_kblocks(job.w) * job.w.kb / 2);  // x as int8's
}

VT_VNNI4_TARGET void gemm_int4_vnni(const LinearJob& job, int64_t t0, int64_t t1) {
    gemm_vnni16<kInt4Blocked>(job, t0, t1, tile_i4_vnni16, num_kblocks(job.w) * job.w.kb / 4);  // kb = 32
}

namespace {
// Groups [g0, g1) of rows of x (row_bytes apart) as dwords: d[(g * nw + j) * 16 + i] = dword j of
// row 16 g + i (nw dwords a row), 64 dwords of the 16 rows (4 KiB) at a time.
void pack_dwords16(const uint8_t* x, int64_t row_bytes, int64_t g0, int64_t g1, int64_t nw, int32_t* d) {
    for (int64_t g = g0; g < g1; ++g)
        for (int64_t j0 = 0; j0 < nw; j0 += 64)
            for (int64_t i = 0; i < kVnniRows; ++i) {
                const uint8_t* s = x + (g * kVnniRows + i) * row_bytes;
                for (int64_t j = j0; j < std::min(nw, j0 + 64); ++j) d[(g * nw + j) * kVnniRows + i] = load_i32(s + 4 * j);
            }
}
}  // namespace

void pack_x16_groups_avx2(const int16_t* xq, const float* xs, const float* xsum, int64_t g0, int64_t g1,
                          int64_t nkb, int64_t kb, int64_t ld, int32_t* xw, float* xws, float* xsq, int32_t* xm12) {
    pack_dwords16(reinterpret_cast<const uint8_t*>(xq), ld * 2, g0, g1, nkb * kb / 2, xw);
    for (int64_t g = g0; g < g1; ++g)
        for (int64_t i = 0; i < kVnniRows; ++i)
            for (int64_t b = 0; b < nkb; ++b) {
                const int64_t r = (g * kVnniRows + i) * nkb + b, o = (g * nkb + b) * kVnniRows + i;
                xws[o] = xs[r];
                if (xsq) xsq[o] = xsum[r] * xs[r];  // gemv_tile_i4_vnni's sq * xsv
                // its 12 * sum(xq) (Fp4): an integer, |xsum| <= 32 * 32639
                if (xm12) xm12[o] = 12 * static_cast<int32_t>(xsum[r]);
            }
}

void pack_x8_groups_avx2(const int8_t* xb, const float* xs, const float* xsum, int64_t g0, int64_t g1, int64_t nkb,
                         int64_t kb, int64_t ld, int32_t* xw, float* xws, int32_t* xm8) {
    pack_dwords16(reinterpret_cast<const uint8_t*>(xb), ld, g0, g1, nkb * kb / 4, xw);
    for (int64_t g = g0; g < g1; ++g)
        for (int64_t i = 0; i < kVnniRows; ++i)
            for (int64_t b = 0; b < nkb; ++b) {
                const int64_t r = (g * kVnniRows + i) * nkb + b, o = (g * nkb + b) * kVnniRows + i;
                xws[o] = xs[r];
                xm8[o] = 8 * static_cast<int32_t>(xsum[r]);  // an integer, |xsum| <= 32 * 127
            }
}

VT_VNNI4_TARGET void linear_mxfp4_vnni(const LinearJob& job, int64_t t0, int64_t t1) {
    linear_rows_vnni<kMxfp4>(job, t0, t1);
}

VT_VNNI4_TARGET void gemv_int4_vnni(const LinearJob& job, int64_t t0, int64_t t1) {
    linear_rows_vnni<kInt4Blocked>(job, t0, t1);  // m <= kGemvMaxM: one group of rows
}

void gemm_avx2(const LinearJob& job, int64_t t0, int64_t t1, float* scratch) {
    if (job.xq != nullptr && int16_gemm_ok(job.w)) {
        switch (job.w.kind) {
            case kInt4Blocked: gemm_int16<kInt4Blocked>(job, t0, t1, scratch); break;
            case kInt4Min: gemm_int16<kInt4Min>(job, t0, t1, scratch); break;
            case kMxfp4: gemm_int16<kMxfp4>(job, t0, t1, scratch); break;
            default: gemm_int16<kInt8Blocked>(job, t0, t1, scratch); break;
        }
        return;
    }
    switch (job.w.kind) {
        case kInt8Blocked: gemm_kind<kInt8Blocked>(job, t0, t1, scratch); break;
        case kFp8Blocked: gemm_kind<kFp8Blocked>(job, t0, t1, scratch); break;
        case kFp8Channel: gemm_kind<kFp8Channel>(job, t0, t1, scratch); break;
        case kInt4Blocked: gemm_kind<kInt4Blocked>(job, t0, t1, scratch); break;
        case kInt4Min: gemm_kind<kInt4Min>(job, t0, t1, scratch); break;
        case kMxfp4: gemm_kind<kMxfp4>(job, t0, t1, scratch); break;
        default: gemm_kind<kBf16>(job, t0, t1, scratch); break;
    }
}

}  // namespace cpu
}  // namespace vt

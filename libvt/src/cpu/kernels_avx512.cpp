// AVX-512 (F/BW/VL/DQ + FMA + F16C) kernels. Compiled with those flags; called only when
// cpu_level() == 2. One zmm holds the 16 rows of a tile at one k, so the GEMV needs no
// horizontal sums and the GEMM's B panel is the tile layout itself, dequantized.

// GCC 12 warns "__Y may be used uninitialized" inside its own AVX-512 headers (a known
// false positive around _mm512_undefined_*); keep real warnings visible elsewhere.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "kernels.h"
#include "../ops/exp_nonpos.h"

namespace vt {
namespace cpu {
namespace {

constexpr int L = 16;

// The GEMV streams weights tile after tile; the hardware prefetchers alone leave it at about
// half the DRAM bandwidth (measured: SmolLM2 decode 13.2 -> 5.0 ms/token on one Zen 4 core).
// So for every 64-byte line it reads, it asks for the same line of the next tile: a
// distance of one tile (16·K bytes + scales), which measured best against fixed distances
// of 8, 12 and 32 KiB and against an L2-only hint (bench/linear.py, bench/decode.py) on Zen 4.
// On Intel the L2 hint streams faster (w.prefetch_l2, cpu_features.h; an L1 prefetch holds
// one of the core's few line-fill buffers until DRAM answers): a TinyLlama-shape int8 GEMV
// from DRAM, 2 threads of a Xeon (Emerald Rapids) VM, 26.5-27.7 -> 29-31 GB/s, where
// distances of 4-16 KiB or two tiles with either hint gained nothing more (2026-11-28).
// A prefetch past the end of the weights is harmless (prefetches never fault).
inline void prefetch_next_tile(const uint8_t* line, const DenseW& w) {
    const char* p = reinterpret_cast<const char*>(line + w.tile_bytes);
    if (w.prefetch_l2) _mm_prefetch(p, _MM_HINT_T1);
    else _mm_prefetch(p, _MM_HINT_T0);
}

inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

// ---- decoding one k of a tile (16 weights) -------------------------------------------

template <int Kind>
inline __m512 dec(const uint8_t* p) {
    if constexpr (Kind == kInt8Blocked) {
        return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
    } else if constexpr (Kind == kBf16) {
        __m512i v = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
        return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
    } else {
        // E4M3 byte -> the f16 with bits (sign << 15) | (byte & 0x7F) << 7, which is exactly
        // 2^-8 times the E4M3 value, subnormals included; the 2^8 is in rowmul.
        __m256i h = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        h = _mm256_and_si256(_mm256_slli_epi16(h, 7), _mm256_set1_epi16(static_cast<short>(0xBFFF)));
        return _mm512_cvtph_ps(h);
    }
}

// The GEMV's decode. With Den (FP8 only, and only while the thread's MXCSR has neither DAZ
// nor FTZ set) an E4M3 byte becomes the f32 with bits sign << 31 | (byte & 0x7F) << 20,
// exactly 2^-120 times its value: 3 integer ops and no vcvtph2ps, which measured 1.5x faster
// in-cache. E4M3 subnormals become f32 denormals, which Zen 4 / recent Intel multiply at full
// speed; the block scale carries the 2^112 (kDenScale) that, with rowmul's 2^8, undoes it.
constexpr float kDenScale = 5192296858534827628530496329220096.0f;  // 2^112
template <int Kind, bool Den>
inline __m512 decv(const uint8_t* p) {
    if constexpr (Den && (Kind == kFp8Blocked || Kind == kFp8Channel)) {
        const __m512i v = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        return _mm512_castsi512_ps(_mm512_and_si512(_mm512_slli_epi32(v, 20),
                                                    _mm512_set1_epi32(static_cast<int>(0x87F00000u))));
    } else {
        return dec<Kind>(p);
    }
}

inline bool denormals_honoured() { return (_mm_getcsr() & 0x8040) == 0; }  // no DAZ, no FTZ

template <int Kind>
constexpr int elem_bytes() { return Kind == kBf16 ? 2 : 1; }
template <int Kind>
constexpr bool scaled() { return Kind == kInt8Blocked || Kind == kFp8Blocked; }

// ---- vector math for the epilogues ----------------------------------------------------

// exp(x), Cephes expf polynomial (~1 ulp), inputs clamped to the finite range.
inline __m512 exp16(__m512 x) {
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3f)), _mm512_set1_ps(88.7f));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 y = _mm512_set1_ps(1.9875691500e-4f);
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.3981999507e-3f));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(8.3334519073e-3f));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(4.1665795894e-2f));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.6666665459e-1f));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(5.0000001201e-1f));
    y = _mm512_fmadd_ps(y, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_scalef_ps(y, n);
}

inline __m512 silu16(__m512 g) {
    __m512 e = exp16(_mm512_sub_ps(_mm512_setzero_ps(), g));
    return _mm512_div_ps(g, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

// Exact-erf GELU through erfc (Numerical Recipes' erfcc, relative error < 1.2e-7), so the
// negative tail keeps its relative accuracy instead of cancelling in 1 + erf.
inline __m512 gelu16(__m512 x) {
    const __m512 z = _mm512_mul_ps(_mm512_abs_ps(x), _mm512_set1_ps(0.70710678118654752f));
    const __m512 t = _mm512_div_ps(_mm512_set1_ps(1.0f),
                                   _mm512_fmadd_ps(z, _mm512_set1_ps(0.5f), _mm512_set1_ps(1.0f)));
    __m512 p = _mm512_set1_ps(0.17087277f);
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.82215223f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.48851587f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.13520398f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.27886807f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.18628806f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.09678418f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.37409196f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.00002368f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.26551223f));
    p = _mm512_fnmadd_ps(z, z, p);
    const __m512 erfc = _mm512_mul_ps(t, exp16(p));
    const __mmask16 pos = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ);
    const __m512 f = _mm512_mask_sub_ps(erfc, pos, _mm512_set1_ps(2.0f), erfc);
    return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), x), f);
}

inline __mmask16 tile_mask(const DenseW& w, int64_t t) {
    const int64_t valid = w.out - t * L;
    return valid >= L ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << valid) - 1);
}

// y[16t .. 16t+15] of one output row from raw dot products (gate g, up u).
inline void epilogue(const LinearJob& job, int64_t t, __mmask16 mask, __m512 g, __m512 u,
                     float* yrow) {
    const int64_t c = t * L;
    if (job.bias) g = _mm512_add_ps(g, _mm512_maskz_loadu_ps(mask, job.bias + c));
    if (job.act == kActGelu) {
        g = gelu16(g);
    } else if (gated(job.act)) {
        if (job.bias2) u = _mm512_add_ps(u, _mm512_maskz_loadu_ps(mask, job.bias2 + c));
        if (job.act == kActGeglu)
            ops::gelu_tanh_v(g);
        else
            g = silu16(g);
        g = _mm512_mul_ps(g, u);
    }
    _mm512_mask_storeu_ps(yrow + c, mask, g);
}

// ---- INT4_BLOCKED decode ---------------------------------------------------------------
//
// One 16-byte load holds k and k + 1 of the tile's 16 rows (quant.h). vpmovzxbd spreads the
// bytes to dwords; vpermps reads only the low 4 bits of each index, so the byte itself
// indexes a 16-entry table of q = u - 8 as f32 (the low nibble: k), and the byte >> 4 the
// high one (k + 1): 4 instructions for 32 weights, no conversion, no subtraction.
inline __m512 int4_table() {
    return _mm512_setr_ps(-8.f, -7.f, -6.f, -5.f, -4.f, -3.f, -2.f, -1.f, 0.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f);
}
// INT4_MIN_BLOCKED: u as it is (0 .. 15).
inline __m512 int4_min_table() {
    return _mm512_setr_ps(0.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 10.f, 11.f, 12.f, 13.f, 14.f, 15.f);
}

// MXFP4: twice the E2M1 values (kMxfp4Values).
inline __m512 mxfp4_table() {
    // (the maskz forms: GCC 12's unmasked ones read an undefined register it warns about)
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4Values));
    return _mm512_maskz_cvtepi32_ps(0xFFFF, _mm512_maskz_cvtepi8_epi32(0xFFFF, v));
}
// The table of a nibble kind (kernels.h nibble_kind).
template <int Kind>
inline __m512 nibble_table() {
    if constexpr (Kind == kInt4Min) return int4_min_table();
    else if constexpr (Kind == kMxfp4) return mxfp4_table();
    else return int4_table();
}

inline __m512i int4_bytes(const uint8_t* p) {
    return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// q of the 16 rows at k (the final weight is q * scale * rowmul).
inline __m512 dec_int4(const uint8_t* tile, int64_t k, __m512 tab) {
    const __m512i v = int4_bytes(tile + (k >> 1) * L);
    return _mm512_permutexvar_ps((k & 1) ? _mm512_srli_epi32(v, 4) : v, tab);
}

// The GEMV over one tile: per block, 2P independent FMA chains per row of x (P pairs of k
// per step), then one FMA with the block scale. A short last block (in % kb) and an odd
// last k (the low nibble alone) are handled after the full pairs. Min (INT4_MIN_BLOCKED):
// the table is u itself, and each block adds min * xsum[i][block] (one more FMA per row).
// MXFP4: the table is twice the E2M1 values, otherwise as INT4_BLOCKED.
template <int M, int Kind>
inline void gemv_tile_int4(const DenseW& w, int64_t t, const float* x, const float* xsum, __m512* out) {
    constexpr bool Min = Kind == kInt4Min;
    constexpr int P = M == 1 ? 2 : 1;
    const uint8_t* tile = w.tiles + t * w.tile_bytes;
    const uint16_t* sc = reinterpret_cast<const uint16_t*>(tile + w.scale_off);
    const uint16_t* mn = reinterpret_cast<const uint16_t*>(tile + w.min_off);
    const int64_t in = w.in, kb = w.kb, nkb = Min ? num_kblocks(w) : 0;
    const __m512 tab = nibble_table<Kind>();
    __m512 acc[M];
    for (int i = 0; i < M; ++i) acc[i] = _mm512_setzero_ps();
    for (int64_t k0 = 0, b = 0; k0 < in; k0 += kb, ++b) {
        const int64_t n = min64(kb, in - k0), np = n / 2;
        __m512 part[2 * P][M];
        for (int c = 0; c < 2 * P; ++c)
            for (int i = 0; i < M; ++i) part[c][i] = _mm512_setzero_ps();
        const uint8_t* q = tile + (k0 / 2) * L;  // kb is even: k0 starts a byte
        const float* xk = x + k0;
        int64_t j = 0;
        for (; j + P <= np; j += P) {
            if (((j * L) & 63) == 0) prefetch_next_tile(q + j * L, w);
#pragma GCC unroll 2
            for (int c = 0; c < P; ++c) {
                const __m512i v = int4_bytes(q + (j + c) * L);
                const __m512 lo = _mm512_permutexvar_ps(v, tab);
                const __m512 hi = _mm512_permutexvar_ps(_mm512_srli_epi32(v, 4), tab);
#pragma GCC unroll 8
                for (int i = 0; i < M; ++i) {
                    const float* xi = xk + i * in + 2 * (j + c);
                    part[2 * c][i] = _mm512_fmadd_ps(lo, _mm512_set1_ps(xi[0]), part[2 * c][i]);
                    part[2 * c + 1][i] = _mm512_fmadd_ps(hi, _mm512_set1_ps(xi[1]), part[2 * c + 1][i]);
                }
            }
        }
        for (; j < np; ++j) {
            const __m512i v = int4_bytes(q + j * L);
            const __m512 lo = _mm512_permutexvar_ps(v, tab);
            const __m512 hi = _mm512_permutexvar_ps(_mm512_srli_epi32(v, 4), tab);
            for (int i = 0; i < M; ++i) {
                const float* xi = xk + i * in + 2 * j;
                part[0][i] = _mm512_fmadd_ps(lo, _mm512_set1_ps(xi[0]), part[0][i]);
                part[1][i] = _mm512_fmadd_ps(hi, _mm512_set1_ps(xi[1]), part[1][i]);
            }
        }
        if (n & 1) {
            const __m512 lo = _mm512_permutexvar_ps(int4_bytes(q + np * L), tab);
            for (int i = 0; i < M; ++i)
                part[0][i] = _mm512_fmadd_ps(lo, _mm512_set1_ps(xk[i * in + 2 * np]), part[0][i]);
        }
        if (((b * L * 2) & 63) == 0) prefetch_next_tile(reinterpret_cast<const uint8_t*>(sc + b * L), w);
        const __m512 s = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sc + b * L)));
        for (int i = 0; i < M; ++i) {
            __m512 sum = part[0][i];
            for (int c = 1; c < 2 * P; ++c) sum = _mm512_add_ps(sum, part[c][i]);
            acc[i] = _mm512_fmadd_ps(sum, s, acc[i]);
        }
        if constexpr (Min) {
            if (((b * L * 2) & 63) == 0) prefetch_next_tile(reinterpret_cast<const uint8_t*>(mn + b * L), w);
            const __m512 mv = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(mn + b * L)));
            for (int i = 0; i < M; ++i) acc[i] = _mm512_fmadd_ps(mv, _mm512_set1_ps(xsum[i * nkb + b]), acc[i]);
        }
    }
    const __m512 rm = _mm512_loadu_ps(w.rowmul + t * L);
    for (int i = 0; i < M; ++i) out[i] = _mm512_mul_ps(acc[i], rm);
}

// ---- GEMV: m <= 4 rows of x, one tile at a time ----------------------------------------

// out[i] = rows 16t..16t+15 of W times x row i, i < M. C independent FMA chains per row
// hide the FMA latency (4 cycles) when M is small.
template <int Kind, int M, bool Den>
inline void gemv_tile(const DenseW& w, int64_t t, const float* x, const float* xsum, __m512* out) {
    if constexpr (Kind == kInt4Blocked || Kind == kInt4Min || Kind == kMxfp4) {
        gemv_tile_int4<M, Kind>(w, t, x, xsum, out);
        return;
    }
    constexpr int C = M == 1 ? 4 : (M == 2 ? 2 : 1);  // chains x rows <= 8: no spills
    constexpr int EB = elem_bytes<Kind>();
    const uint8_t* tile = w.tiles + t * w.tile_bytes;
    const int64_t in = w.in;
    __m512 acc[M];
    for (int i = 0; i < M; ++i) acc[i] = _mm512_setzero_ps();
    if constexpr (scaled<Kind>()) {
        const uint16_t* sc = reinterpret_cast<const uint16_t*>(tile + w.scale_off);
        const int64_t kb = w.kb;
        for (int64_t k0 = 0, b = 0; k0 < in; k0 += kb, ++b) {
            __m512 part[C][M];
            for (int c = 0; c < C; ++c)
                for (int i = 0; i < M; ++i) part[c][i] = _mm512_setzero_ps();
            const uint8_t* q = tile + k0 * L;
            const float* xk = x + k0;
            for (int64_t k = 0; k < kb; k += C) {
                if (((k * L) & 63) == 0) prefetch_next_tile(q + k * L, w);
#pragma GCC unroll 4
                for (int c = 0; c < C; ++c) {
                    const __m512 wv = decv<Kind, Den>(q + (k + c) * L);
#pragma GCC unroll 8
                    for (int i = 0; i < M; ++i)
                        part[c][i] = _mm512_fmadd_ps(wv, _mm512_set1_ps(xk[i * in + k + c]), part[c][i]);
                }
            }
            // The next tile's scales too (they sit after its weights, one 64-byte line
            // per 2 blocks): unprefetched, they cost fp8-16 about a tenth of its speed.
            if (((b * L * 2) & 63) == 0) prefetch_next_tile(reinterpret_cast<const uint8_t*>(sc + b * L), w);
            __m512 s = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sc + b * L)));
            if constexpr (Den && Kind == kFp8Blocked) s = _mm512_mul_ps(s, _mm512_set1_ps(kDenScale));
            for (int i = 0; i < M; ++i) {
                __m512 sum = part[0][i];
                for (int c = 1; c < C; ++c) sum = _mm512_add_ps(sum, part[c][i]);
                acc[i] = _mm512_fmadd_ps(sum, s, acc[i]);
            }
        }
    } else {
        __m512 part[C][M];
        for (int c = 0; c < C; ++c)
            for (int i = 0; i < M; ++i) part[c][i] = _mm512_setzero_ps();
        int64_t k = 0;
        for (; k + C <= in; k += C) {
            for (int64_t o = k * L * EB; o < (k + C) * L * EB; o += L * EB)
                if ((o & 63) == 0) prefetch_next_tile(tile + o, w);
#pragma GCC unroll 4
            for (int c = 0; c < C; ++c) {
                const __m512 wv = decv<Kind, Den>(tile + (k + c) * L * EB);
#pragma GCC unroll 8
                for (int i = 0; i < M; ++i)
                    part[c][i] = _mm512_fmadd_ps(wv, _mm512_set1_ps(x[i * in + k + c]), part[c][i]);
            }
        }
        for (; k < in; ++k) {
            const __m512 wv = decv<Kind, Den>(tile + k * L * EB);
            for (int i = 0; i < M; ++i)
                part[0][i] = _mm512_fmadd_ps(wv, _mm512_set1_ps(x[i * in + k]), part[0][i]);
        }
        for (int i = 0; i < M; ++i) {
            acc[i] = part[0][i];
            for (int c = 1; c < C; ++c) acc[i] = _mm512_add_ps(acc[i], part[c][i]);
            if constexpr (Den && Kind == kFp8Channel) acc[i] = _mm512_mul_ps(acc[i], _mm512_set1_ps(kDenScale));
        }
    }
    const __m512 rm = _mm512_loadu_ps(w.rowmul + t * L);
    for (int i = 0; i < M; ++i) out[i] = _mm512_mul_ps(acc[i], rm);
}

template <int Kind, int M, bool Den>
void gemv_range(const LinearJob& job, int64_t t0, int64_t t1) {
    const int64_t out = job.w.out;
    for (int64_t t = t0; t < t1; ++t) {
        __m512 g[M], u[M];
        gemv_tile<Kind, M, Den>(job.w, t, job.x, job.xsum, g);
        if (gated(job.act)) gemv_tile<Kind, M, Den>(job.w2, t, job.x, job.xsum, u);
        const __mmask16 mask = tile_mask(job.w, t);
        for (int i = 0; i < M; ++i)
            epilogue(job, t, mask, g[i], gated(job.act) ? u[i] : g[i], job.y + i * out);
    }
}

template <int Kind, bool Den>
void gemv_m(const LinearJob& job, int64_t t0, int64_t t1) {
    switch (job.m) {
        case 1: gemv_range<Kind, 1, Den>(job, t0, t1); break;
        case 2: gemv_range<Kind, 2, Den>(job, t0, t1); break;
        case 3: gemv_range<Kind, 3, Den>(job, t0, t1); break;
        case 4: gemv_range<Kind, 4, Den>(job, t0, t1); break;
        case 5: gemv_range<Kind, 5, Den>(job, t0, t1); break;
        case 6: gemv_range<Kind, 6, Den>(job, t0, t1); break;
        case 7: gemv_range<Kind, 7, Den>(job, t0, t1); break;
        default: gemv_range<Kind, 8, Den>(job, t0, t1); break;
    }
}

template <int Kind>
void gemv_kind(const LinearJob& job, int64_t t0, int64_t t1) {
    if (Kind == kFp8Blocked || Kind == kFp8Channel) {
        if (denormals_honoured()) gemv_m<Kind, true>(job, t0, t1);
        else gemv_m<Kind, false>(job, t0, t1);
    } else {
        gemv_m<Kind, false>(job, t0, t1);
    }
}

// ---- GEMM: dequantized f32 panel x register-blocked microkernel -------------------------

constexpr int MR = 6;   // rows of x per microkernel
constexpr int NTM = 4;  // tiles (16 columns each) per microkernel: a 6 x 64 block of C

// dst[k * ld + r] = W[16t + r][k0 + k] for k < kc (the final f32 weight).
template <int Kind>
void dequant_panel(const DenseW& w, int64_t t, int64_t k0, int64_t kc, float* dst, int64_t ld) {
    constexpr int EB = elem_bytes<Kind>();
    const uint8_t* tile = w.tiles + t * w.tile_bytes;
    const __m512 rm = _mm512_loadu_ps(w.rowmul + t * L);
    if constexpr (Kind == kInt4Blocked || Kind == kMxfp4) {
        const uint16_t* sc = reinterpret_cast<const uint16_t*>(tile + w.scale_off);
        const __m512 tab = nibble_table<Kind>();
        for (int64_t k = k0; k < k0 + kc;) {  // k0 starts a block; the last may be short
            const int64_t bi = k / w.kb, kend = min64(k0 + kc, (bi + 1) * w.kb);
            const __m512 s = _mm512_mul_ps(
                _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sc + bi * L))), rm);
            for (; k < kend; ++k) _mm512_storeu_ps(dst + (k - k0) * ld, _mm512_mul_ps(dec_int4(tile, k, tab), s));
        }
    } else if constexpr (Kind == kInt4Min) {  // w = u * (s * rm) + m * rm
        const uint16_t* sc = reinterpret_cast<const uint16_t*>(tile + w.scale_off);
        const uint16_t* mn = reinterpret_cast<const uint16_t*>(tile + w.min_off);
        const __m512 tab = int4_min_table();
        for (int64_t k = k0; k < k0 + kc;) {
            const int64_t bi = k / w.kb, kend = min64(k0 + kc, (bi + 1) * w.kb);
            const __m512 s = _mm512_mul_ps(
                _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sc + bi * L))), rm);
            const __m512 mv = _mm512_mul_ps(
                _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(mn + bi * L))), rm);
            for (; k < kend; ++k)
                _mm512_storeu_ps(dst + (k - k0) * ld, _mm512_fmadd_ps(dec_int4(tile, k, tab), s, mv));
        }
    } else if constexpr (scaled<Kind>()) {
        const uint16_t* sc = reinterpret_cast<const uint16_t*>(tile + w.scale_off);
        const int64_t kb = w.kb;
        const int64_t bi0 = k0 / kb;  // k0 and kc are multiples of kb
        for (int64_t b = k0, bi = bi0; b < k0 + kc; b += kb, ++bi) {
            const __m512 s = _mm512_mul_ps(
                _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sc + bi * L))), rm);
            for (int64_t k = b; k < b + kb; ++k)
                _mm512_storeu_ps(dst + (k - k0) * ld, _mm512_mul_ps(dec<Kind>(tile + k * L), s));
        }
    } else {
        for (int64_t k = k0; k < k0 + kc; ++k)
            _mm512_storeu_ps(dst + (k - k0) * ld, _mm512_mul_ps(dec<Kind>(tile + k * L * EB), rm));
    }
}

// C[i][16j + r] (+)= sum_k A[i][k] * B[k][16j + r], i < R, j < N. B rows are N*16 floats.
template <int R, int N>
void micro(const float* A, int64_t lda, const float* B, int64_t kc, float* C, int64_t ldc, bool first) {
    __m512 c[R][N];
    if (first) {
        for (int i = 0; i < R; ++i)
            for (int j = 0; j < N; ++j) c[i][j] = _mm512_setzero_ps();
    } else {
        for (int i = 0; i < R; ++i)
            for (int j = 0; j < N; ++j) c[i][j] = _mm512_loadu_ps(C + i * ldc + j * L);
    }
    for (int64_t k = 0; k < kc; ++k) {
        __m512 b[N];
#pragma GCC unroll 4
        for (int j = 0; j < N; ++j) b[j] = _mm512_loadu_ps(B + k * N * L + j * L);
#pragma GCC unroll 6
        for (int i = 0; i < R; ++i) {
            const __m512 a = _mm512_set1_ps(A[i * lda + k]);
#pragma GCC unroll 4
            for (int j = 0; j < N; ++j) c[i][j] = _mm512_fmadd_ps(a, b[j], c[i][j]);
        }
    }
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < N; ++j) _mm512_storeu_ps(C + i * ldc + j * L, c[i][j]);
}

using MicroFn = void (*)(const float*, int64_t, const float*, int64_t, float*, int64_t, bool);

template <int R>
struct MicroRow {
    static constexpr MicroFn fns[NTM] = {micro<R, 1>, micro<R, 2>, micro<R, 3>, micro<R, 4>};
};
const MicroFn* const kMicro[MR] = {MicroRow<1>::fns, MicroRow<2>::fns, MicroRow<3>::fns,
                                   MicroRow<4>::fns, MicroRow<5>::fns, MicroRow<6>::fns};

template <int Kind>
void gemm_kind(const LinearJob& job, int64_t t0, int64_t t1, float* scratch) {
    const bool swiglu = gated(job.act);
    const int64_t m = job.m, in = job.w.in, out = job.w.out;
    const int64_t per = swiglu ? 2 : 1;  // virtual tiles per output tile (gate, up)
    float* panel = scratch;
    float* acc = scratch + kGemmPanelFloats;
    for (int64_t jt = t0; jt < t1; jt += kGemmTiles) {
        const int64_t nt = min64(kGemmTiles, t1 - jt);
        const int64_t nv = nt * per;
        const int64_t W = nv * L;
        for (int64_t k0 = 0; k0 < in; k0 += kGemmKc) {
            const int64_t kc = min64(kGemmKc, in - k0);
            // Panel: strips of up to NTM virtual tiles, each strip [kc][ns*16].
            for (int64_t v = 0; v < nv; ++v) {
                const int64_t s = v / NTM, pos = v % NTM, ns = min64(NTM, nv - s * NTM);
                const DenseW& w = (swiglu && (v & 1)) ? job.w2 : job.w;
                dequant_panel<Kind>(w, jt + v / per, k0, kc, panel + s * kc * NTM * L + pos * L, ns * L);
            }
            for (int64_t i0 = 0; i0 < m; i0 += MR) {
                const int64_t mr = min64(MR, m - i0);
                for (int64_t s = 0; s * NTM < nv; ++s) {
                    const int64_t ns = min64(NTM, nv - s * NTM);
                    kMicro[mr - 1][ns - 1](job.x + i0 * in + k0, in, panel + s * kc * NTM * L, kc,
                                           acc + i0 * W + s * NTM * L, W, k0 == 0);
                }
            }
        }
        for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < nt; ++j) {
                const int64_t t = jt + j;
                const float* a = acc + i * W + j * per * L;
                epilogue(job, t, tile_mask(job.w, t), _mm512_loadu_ps(a),
                         swiglu ? _mm512_loadu_ps(a + L) : _mm512_setzero_ps(), job.y + i * out);
            }
        }
    }
}

// ---- 2:4 sparse integer linears (VBMI vpermi2b gathers x, VNNI vpdpbusd multiplies) ------
//
// 32 groups of 4 along K (128 values of x, 64 kept weights) per step: the metadata bytes
// become byte indices into two 64-byte slices of the quantized x row, one vpermi2b gathers
// the 64 x values the kept weights meet, and one vpdpbusd accumulates the 64 products. It
// wants unsigned x: x ^ 0x80 = x + 128, corrected by 128 * sum(w) per row.

#define VT_SPARSE_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi,avx512vnni")))

VT_SPARSE_TARGET inline __m512i sparse_index(const uint8_t* meta, __m512i base) {
    const __m512i w = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(meta)));
    const __m512i lo = _mm512_and_si512(w, _mm512_set1_epi16(3));                           // idx0
    const __m512i hi = _mm512_and_si512(_mm512_slli_epi16(w, 6), _mm512_set1_epi16(0x0300));  // idx1 << 8
    return _mm512_add_epi8(_mm512_or_si512(lo, hi), base);
}

// 64 int4 values (32 bytes, low nibble first) as int8.
VT_SPARSE_TARGET inline __m512i int4x64(const int8_t* p) {
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i lo = _mm256_and_si256(b, m4), hi = _mm256_and_si256(_mm256_srli_epi16(b, 4), m4);
    // unpack works per 128-bit lane: lane 0 -> values 0..31, lane 1 -> values 32..63
    const __m256i a = _mm256_unpacklo_epi8(lo, hi), c = _mm256_unpackhi_epi8(lo, hi);
    __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_permute2x128_si256(a, c, 0x20)),
                                   _mm256_permute2x128_si256(a, c, 0x31), 1);
    const __m512i eight = _mm512_set1_epi8(8);
    return _mm512_sub_epi8(_mm512_xor_si512(v, eight), eight);  // sign-extend the nibbles
}

template <bool Int4, int MI>
VT_SPARSE_TARGET void sparse_block(const SparseJob& job, int64_t r, int64_t i0) {
    const int64_t in = job.in, ng = in / 4, nstep = ng / 32;
    const uint8_t* meta = job.meta + r * ng;
    const int8_t* q = job.q + r * (Int4 ? in / 4 : in / 2);
    alignas(64) static const uint8_t kBase[64] = {
        0,  0,  4,  4,  8,  8,  12, 12, 16, 16, 20, 20, 24, 24, 28, 28,
        32, 32, 36, 36, 40, 40, 44, 44, 48, 48, 52, 52, 56, 56, 60, 60,
        64, 64, 68, 68, 72, 72, 76, 76, 80, 80, 84, 84, 88, 88, 92, 92,
        96, 96, 100, 100, 104, 104, 108, 108, 112, 112, 116, 116, 120, 120, 124, 124};
    const __m512i base = _mm512_load_si512(kBase);
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80)), ones = _mm512_set1_epi8(1);
    __m512i acc[MI], accw = _mm512_setzero_si512();
    for (int i = 0; i < MI; ++i) acc[i] = _mm512_setzero_si512();
    for (int64_t c = 0; c < nstep; ++c) {
        const __m512i idx = sparse_index(meta + 32 * c, base);
        const __m512i wv = Int4 ? int4x64(q + 32 * c)
                                : _mm512_loadu_si512(q + 64 * c);
        accw = _mm512_dpbusd_epi32(accw, ones, wv);
        for (int i = 0; i < MI; ++i) {
            const int8_t* x = job.xq + (i0 + i) * in + 128 * c;
            const __m512i g = _mm512_permutex2var_epi8(_mm512_loadu_si512(x), idx, _mm512_loadu_si512(x + 64));
            acc[i] = _mm512_dpbusd_epi32(acc[i], _mm512_xor_si512(g, flip), wv);
        }
    }
    const int32_t wsum = _mm512_reduce_add_epi32(accw);
    for (int i = 0; i < MI; ++i) {
        int32_t a = _mm512_reduce_add_epi32(acc[i]) - 128 * wsum;
        const int8_t* x = job.xq + (i0 + i) * in;
        for (int64_t g = nstep * 32; g < ng; ++g) {  // the last < 32 groups
            int q0, q1;
            if (Int4) {
                const int b = static_cast<uint8_t>(q[g]);
                q0 = (b & 0xF) >= 8 ? (b & 0xF) - 16 : (b & 0xF);
                q1 = (b >> 4) >= 8 ? (b >> 4) - 16 : (b >> 4);
            } else {
                q0 = q[2 * g];
                q1 = q[2 * g + 1];
            }
            a += q0 * x[4 * g + (meta[g] & 3)] + q1 * x[4 * g + (meta[g] >> 2)];
        }
        float v = static_cast<float>(a) * (job.xscale[i0 + i] * job.wscale[r]);
        if (job.bias) v += job.bias[r];
        job.y[(i0 + i) * job.out + r] = v;
    }
}

template <bool Int4>
VT_SPARSE_TARGET void sparse_rows(const SparseJob& job, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
        for (int64_t i0 = 0; i0 < job.m; i0 += 4) {
            switch (min64(4, job.m - i0)) {
                case 1: sparse_block<Int4, 1>(job, r, i0); break;
                case 2: sparse_block<Int4, 2>(job, r, i0); break;
                case 3: sparse_block<Int4, 3>(job, r, i0); break;
                default: sparse_block<Int4, 4>(job, r, i0); break;
            }
        }
    }
}

}  // namespace

void sparse_avx512(const SparseJob& job, int64_t r0, int64_t r1) {
    if (job.int4) sparse_rows<true>(job, r0, r1);
    else sparse_rows<false>(job, r0, r1);
}

void gemv_avx512(const LinearJob& job, int64_t t0, int64_t t1) {
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

void gemm_avx512(const LinearJob& job, int64_t t0, int64_t t1, float* scratch) {
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

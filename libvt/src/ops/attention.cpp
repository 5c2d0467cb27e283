#include "ops/attention.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "half.h"
#include "kv_i8.h"
#include "cpu_features.h"
#include "ops/cpu_clones.h"
#include "ops/exp_nonpos.h"
#include "ops/swiglu.h"

namespace vt {
namespace ops {

namespace {

// Register-blocked pieces of attend(), written with GCC vector extensions so the
// accumulators stay in registers. They are always inlined into attend()'s per-ISA bodies,
// whose vector type is the register's width: "wide" (AVX-512: 16 floats, 32 registers) keeps
// 4 x 16 keys of up to 4 heads, or 4 x 16 value columns of up to 4 heads, in registers;
// "narrow" (AVX2: 8 floats, 16 registers) 2 x 8 keys of up to 4 heads, or 4 x 8 value
// columns of 2 heads. (The wide code compiled for AVX2 moved its 16-float vectors through
// the stack: SmolLM2 decoded at 14.8-15.6 ms/token at a 512-token context against 8.8-9.6
// with this blocking; bench/results/attention-avx2-20261125.md.)
typedef float v16 __attribute__((vector_size(64)));
typedef float v16u __attribute__((vector_size(64), aligned(4)));  // unaligned access
typedef float v8 __attribute__((vector_size(32)));
typedef float v8u __attribute__((vector_size(32), aligned(4)));
#define VT_INLINE inline __attribute__((always_inline))

template <bool Wide>
struct Vec {
    using V = v16;
    using U = v16u;
};
template <>
struct Vec<false> {
    using V = v8;
    using U = v8u;
};
template <class V>
constexpr int kLanes = int(sizeof(V) / sizeof(float));

// The bodies' instruction sets, numbered as cpu_level() numbers them.
enum Isa { kGeneric = 0, kAvx2 = 1, kAvx512 = 2 };
template <int I>
constexpr bool kWide = I == kAvx512;

#if defined(__x86_64__) && defined(__GNUC__)
// The per-ISA bodies' targets. Clang (zig, which builds the manylinux CPU wheel) takes no
// "arch=x86-64-v3" in a target attribute, so it gets the levels' feature lists; GCC keeps the
// levels (their tuning included), as measured.
#if defined(__clang__)
#define VT_TARGET_V3 "avx,avx2,fma,f16c,bmi,bmi2,lzcnt,popcnt,movbe"
#define VT_TARGET_V4 "avx,avx2,fma,f16c,bmi,bmi2,lzcnt,popcnt,movbe,avx512f,avx512bw,avx512vl,avx512dq,avx512cd"
#else
#define VT_TARGET_V3 "arch=x86-64-v3"
#define VT_TARGET_V4 "arch=x86-64-v4"
#endif
// F16C conversions of 8 / 16 halves. Plain `inline`, not always_inline: GCC refuses to
// always-inline a function with a target attribute into the ISA-neutral templates below, but
// inlines these into the per-ISA bodies they end up in (objdump shows vcvtph2ps with a
// memory operand in attend_avx2 / attend_avx512). maskz: the unmasked AVX-512 form reads an
// undefined register GCC 12 warns about.
__attribute__((target("avx,f16c"))) inline void cvt_h8(v8& out, const half* p) {
    out = (v8)_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
__attribute__((target("avx512f"))) inline void cvt_h16(v16& out, const half* p) {
    out = (v16)_mm512_maskz_cvtph_ps(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
// *p in every lane, as one broadcast load (a splat of p[g][j] for three heads at once let
// GCC's SLP vectorizer load the three as a vector and shuffle them apart).
__attribute__((target("avx"))) inline void splat8(v8& out, const float* p) { out = (v8)_mm256_broadcast_ss(p); }
// The same for 8 / 16 int8 elements (sign-extended to int32, then converted: exact).
__attribute__((target("avx2"))) inline void cvt_b8(v8& out, const int8_t* p) {
    out = (v8)_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}
__attribute__((target("avx512f"))) inline void cvt_b16(v16& out, const int8_t* p) {
    const __m512i i = _mm512_maskz_cvtepi8_epi32(0xFFFF, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    out = (v16)_mm512_maskz_cvtepi32_ps(0xFFFF, i);
}
#endif

// out = the kLanes<V> cache elements at p (any alignment) as floats.
template <int I, class V>
VT_INLINE void load(V& out, const float* p) {
    out = *reinterpret_cast<const typename Vec<kWide<I>>::U*>(p);
}
// One f16 or int8 cache element as a float.
VT_INLINE float to_f32(half x) { return f16_to_f32(x); }
VT_INLINE float to_f32(int8_t x) { return float(x); }
// An f16 or int8 cache's elements: converted with F16C / sign extension where the level has it.
template <int I, class V, class T>
VT_INLINE void load(V& out, const T* p) {
#if defined(__x86_64__) && defined(__GNUC__)
    constexpr bool h = std::is_same<T, half>::value;
    if constexpr (I == kAvx512) return h ? cvt_h16(out, reinterpret_cast<const half*>(p))
                                         : cvt_b16(out, reinterpret_cast<const int8_t*>(p));
    if constexpr (I == kAvx2) return h ? cvt_h8(out, reinterpret_cast<const half*>(p))
                                       : cvt_b8(out, reinterpret_cast<const int8_t*>(p));
#endif
    for (int i = 0; i < kLanes<V>; ++i) out[i] = to_f32(p[i]);
}

// n cache elements at p as floats: p itself for an f32 cache, else converted into buf.
template <int I>
VT_INLINE const float* as_floats(const float* p, int64_t, float*) {
    return p;
}
template <int I, class T>
VT_INLINE const float* as_floats(const T* p, int64_t n, float* buf) {
    using V = typename Vec<kWide<I>>::V;
    using U = typename Vec<kWide<I>>::U;
    constexpr int N = kLanes<V>;
    int64_t i = 0;
    for (; i + N <= n; i += N) {
        V x;
        load<I>(x, p + i);
        *reinterpret_cast<U*>(buf + i) = x;
    }
    for (; i < n; ++i) buf[i] = to_f32(p[i]);
    return buf;
}


// The largest of s[0 : n) (n >= 1).
template <int I>
VT_INLINE float block_max(const float* s, int64_t n) {
    using V = typename Vec<kWide<I>>::V;
    using U = typename Vec<kWide<I>>::U;
    constexpr int N = kLanes<V>;
    float mx = s[0];
    int64_t j = 0;
    if (n >= N) {
        V m = *reinterpret_cast<const U*>(s);
        for (j = N; j + N <= n; j += N) {
            const V x = *reinterpret_cast<const U*>(s + j);
            m = x > m ? x : m;
        }
        for (int t = 0; t < N; ++t) mx = m[t] > mx ? m[t] : mx;
    }
    for (; j < n; ++j) mx = s[j] > mx ? s[j] : mx;
    return mx;
}

// s[j] = e^(s[j] - m) for j < n; returns their sum, added in 16 lanes (lane j % 16) then in
// lane order, whatever the vector width.
template <int I>
VT_INLINE float exp_sum(float* s, int64_t n, float m) {
    using V = typename Vec<kWide<I>>::V;
    using U = typename Vec<kWide<I>>::U;
    constexpr int N = kLanes<V>;
    int64_t j = 0;
    const V mv = VT_SPLAT(V, m);
    for (; j + N <= n; j += N) {
        U* p = reinterpret_cast<U*>(s + j);
        V x = *p - mv;
        exp_nonpos_v(x);
        *p = x;
    }
    for (; j < n; ++j) s[j] = exp_nonpos(s[j] - m);
    float lanes[16] = {0};
    for (j = 0; j + 16 <= n; j += 16)
        for (int t = 0; t < 16; ++t) lanes[t] += s[j + t];
    for (; j < n; ++j) lanes[j % 16] += s[j];
    float sum = 0.0f;
    for (int t = 0; t < 16; ++t) sum += lanes[t];
    return sum;
}

// Rows d of a key tile (kKeyTile values each) per 64-byte line: 2 for f16, 4 for int8, 1 for f32.
template <class T>
constexpr int64_t kTileDPerLine = 64 / int64_t(kKeyTile * sizeof(T)) > 0 ? 64 / int64_t(kKeyTile * sizeof(T)) : 1;

// s[g][j1 : j1 + NV·lanes] = q_g · k_j for the NV·lanes keys starting at j0 + j1 (a multiple of
// the vector width, which divides kKeyTile: each vector lies inside one tile), NG heads at once.
template <int I, int NG, int NV, class T>
VT_INLINE void scores_block(const float* const* q, const T* kt, int64_t j0, int64_t j1,
                            int64_t hd, float (*s)[kKeyBlock]) {
    using V = typename Vec<kWide<I>>::V;
    using U = typename Vec<kWide<I>>::U;
    constexpr int N = kLanes<V>;
    static_assert(kKeyTile % N == 0, "a vector of keys must lie inside one tile");
    // P sets of accumulators (even / odd d) where the registers allow: NG·NV chains of
    // FMAs with a latency of 4 cycles leave half of AVX2's FMA throughput unused at NG·NV = 6.
    constexpr int P = (!kWide<I> && NG * NV <= 6) ? 2 : 1;
    V a[P][NG][NV];
    for (int p = 0; p < P; ++p)
        for (int g = 0; g < NG; ++g)
            for (int i = 0; i < NV; ++i) a[p][g][i] = V{};
    const T* kv[NV];
    for (int i = 0; i < NV; ++i) kv[i] = kt + key_index(j0 + j1 + N * i, 0, hd);
    int64_t d = 0;
    for (; d + P <= hd; d += P)
        for (int p = 0; p < P; ++p) {
            V k[NV];
            // The same line of the next block's tile (kKeyBlock keys on: kKeyBlock · hd values),
            // one request per 64-byte line read here, spread over the loop, into L2 (the block
            // being read, its scores and the accumulators fill much of L1): the hardware
            // prefetchers alone left decode attention at about half the bandwidth the GEMVs
            // reach; with these requests SmolLM2's decode attention took 20-25 % less time
            // (instrumented build, 4 alternating rounds; requests for a whole block at once had
            // been 30 % slower). A request past the cache's end is harmless: prefetches never
            // fault.
            if ((d + p) % kTileDPerLine<T> == 0) __builtin_prefetch(kv[0] + (d + p) * kKeyTile + kKeyBlock * hd, 0, 2);
            for (int i = 0; i < NV; ++i) load<I>(k[i], kv[i] + (d + p) * kKeyTile);
            for (int g = 0; g < NG; ++g) {
                const V qd = VT_SPLAT(V, q[g][d + p]);
                for (int i = 0; i < NV; ++i) a[p][g][i] += qd * k[i];
            }
        }
    for (; d < hd; ++d) {
        V k[NV];
        for (int i = 0; i < NV; ++i) load<I>(k[i], kv[i] + d * kKeyTile);
        for (int g = 0; g < NG; ++g) {
            const V qd = VT_SPLAT(V, q[g][d]);
            for (int i = 0; i < NV; ++i) a[0][g][i] += qd * k[i];
        }
    }
    for (int g = 0; g < NG; ++g)
        for (int i = 0; i < NV; ++i) {
            if constexpr (P == 2) a[0][g][i] += a[1][g][i];
            *reinterpret_cast<U*>(&s[g][j1 + N * i]) = a[0][g][i];
        }
}

// Scores of a full block of 64 keys for ng heads, up to 4 heads per pass.
template <int I, class T>
VT_INLINE void scores_full(const float* const* q, int64_t ng, const T* kt, int64_t j0, int64_t hd,
                           float (*s)[kKeyBlock]) {
    constexpr int NV = kWide<I> ? 4 : 2;
    constexpr int64_t step = NV * kLanes<typename Vec<kWide<I>>::V>;
    for (int64_t j1 = 0; j1 < kKeyBlock; j1 += step)
        for (int64_t g0 = 0; g0 < ng; g0 += 4) {
            switch (std::min<int64_t>(4, ng - g0)) {
                case 1: scores_block<I, 1, NV>(q + g0, kt, j0, j1, hd, s + g0); break;
                case 2: scores_block<I, 2, NV>(q + g0, kt, j0, j1, hd, s + g0); break;
                case 3: scores_block<I, 3, NV>(q + g0, kt, j0, j1, hd, s + g0); break;
                default: scores_block<I, 4, NV>(q + g0, kt, j0, j1, hd, s + g0); break;
            }
        }
}

// acc[g][0 : HV·lanes] += Σ_{j<nb} p[g][j] · v_j, NG heads at once.
template <int I, int HV, int NG, class T>
VT_INLINE void pv_block(const float (*p)[kKeyBlock], int64_t nb, const T* v, int64_t hd, float* acc) {
    using V = typename Vec<kWide<I>>::V;
    using U = typename Vec<kWide<I>>::U;
    constexpr int N = kLanes<V>;
    V a[NG][HV];
    for (int g = 0; g < NG; ++g)
        for (int h = 0; h < HV; ++h) a[g][h] = *reinterpret_cast<const U*>(acc + g * hd + N * h);
    for (int64_t j = 0; j < nb; ++j) {
        // This pass's columns of the value row kKeyBlock keys on (see scores_block).
        for (int64_t o = 0; o < int64_t(N * HV * sizeof(T)); o += 64)
            __builtin_prefetch(reinterpret_cast<const char*>(v + (j + kKeyBlock) * hd) + o, 0, 2);
#if defined(__x86_64__) && defined(__GNUC__)
        if constexpr (I == kAvx2) {
            // AVX2: the weights first, then each value vector just before its NG products:
            // 3 heads x 4 vectors is then 12 accumulators + 3 weights + 1 value = 16 registers.
            // Loading the 4 values first (17) made GCC keep one accumulator on the stack, a
            // store-to-load round trip in every key's chain (perf annotate of SmolLM2's decode put
            // a third of attend_avx2's samples there, 2026-11-27). The weights as broadcast
            // loads: GCC's SLP vectorizer loaded three splats' floats as one vector and
            // shuffled them apart (and spilled again).
            V pj[NG];
            for (int g = 0; g < NG; ++g) splat8(pj[g], &p[g][j]);
            for (int h = 0; h < HV; ++h) {
                V vv;
                load<I>(vv, v + j * hd + N * h);
                for (int g = 0; g < NG; ++g) a[g][h] += pj[g] * vv;
            }
            continue;
        }
#endif
        V vv[HV];
        for (int h = 0; h < HV; ++h) load<I>(vv[h], v + j * hd + N * h);
        for (int g = 0; g < NG; ++g) {
            const V pj = VT_SPLAT(V, p[g][j]);
            for (int h = 0; h < HV; ++h) a[g][h] += pj * vv[h];
        }
    }
    for (int g = 0; g < NG; ++g)
        for (int h = 0; h < HV; ++h) *reinterpret_cast<U*>(acc + g * hd + N * h) = a[g][h];
}

// hd = 16·H16 columns (H16 = 2, 4, 6, 8).
template <int H16, int I, class T>
VT_INLINE void pv_heads(const float (*p)[kKeyBlock], int64_t ng, int64_t nb, const T* v, int64_t hd,
                        float* acc) {
    if constexpr (!kWide<I>) {
        // 32 value columns of 3 heads per pass where 3 are left (12 accumulators, each value
        // vector converted once for all three), else of 2: AVX2 has 16 registers.
        for (int64_t g0 = 0; g0 < ng;) {
            const int64_t n = ng - g0 == 3 ? 3 : std::min<int64_t>(2, ng - g0);
            for (int64_t c = 0; c < H16 / 2; ++c) {
                float* a = acc + g0 * hd + 32 * c;
                if (n == 3) pv_block<I, 4, 3>(p + g0, nb, v + 32 * c, hd, a);
                else if (n == 2) pv_block<I, 4, 2>(p + g0, nb, v + 32 * c, hd, a);
                else pv_block<I, 4, 1>(p + g0, nb, v + 32 * c, hd, a);
            }
            g0 += n;
        }
        return;
    } else {
        constexpr int64_t C = H16 <= 4 ? 4 : 2;  // heads per pass: accumulators + values fit 32 registers
        for (int64_t g0 = 0; g0 < ng; g0 += C) {
            float* a = acc + g0 * hd;
            switch (std::min(C, ng - g0)) {
                case 1: pv_block<I, H16, 1>(p + g0, nb, v, hd, a); break;
                case 2: pv_block<I, H16, 2>(p + g0, nb, v, hd, a); break;
                case 3: pv_block<I, H16, 3>(p + g0, nb, v, hd, a); break;
                default: pv_block<I, H16, (C > 3 ? 4 : 1)>(p + g0, nb, v, hd, a); break;
            }
        }
    }
}

// ks, vs: an int8 cache's per-position key and value scales (null for f32 and f16).
template <int I, class T>
VT_INLINE void attend_body(const float* const* q, int64_t ng, const T* __restrict kt, const T* __restrict v,
                           const float* __restrict ks, const float* __restrict vs, int64_t k0, int64_t k1,
                           int64_t hd, Partial out, float softcap, const float* __restrict alibi) {
    constexpr bool kScaled = std::is_same<T, int8_t>::value;
    alignas(64) float s[kMaxGroup][kKeyBlock];
    // An f16 or int8 cache's keys / values converted (partial blocks, hd without a blocked kernel).
    alignas(64) float buf[std::is_same<T, float>::value ? 1 : kAccFloats];
    float* acc = out.acc;
    for (int64_t g = 0; g < ng; ++g) {
        out.m[g] = -std::numeric_limits<float>::infinity();
        out.l[g] = 0.0f;
        for (int64_t d = 0; d < hd; ++d) acc[g * hd + d] = 0.0f;
    }
    // Blocks of keys [j0, j0 + nb) end at multiples of kKeyBlock (the first may start inside
    // one, the last may be short): a full block is 4 whole tiles.
    for (int64_t j0 = k0, nb; j0 < k1; j0 += nb) {
        nb = std::min(kKeyBlock - j0 % kKeyBlock, k1 - j0);
        // Scores s[g][j] = q_g · k_j (q is pre-scaled by 1/sqrt(hd)).
        if (nb == kKeyBlock) {
            scores_full<I>(q, ng, kt, j0, hd, s);
        } else if (j0 % kKeyBlock == 0) {
            // A short block from a block's start (the last of a prefill row or a decode
            // split): whole vectors of keys, as for a full block. A vector lies inside one
            // tile and the cache holds whole tiles, so the lanes past nb read cache memory
            // that no position uses yet; their scores are never read.
            constexpr int64_t N = kLanes<typename Vec<kWide<I>>::V>;
            for (int64_t j1 = 0; j1 < nb; j1 += N)
                for (int64_t g0 = 0; g0 < ng; g0 += 4) {
                    switch (std::min<int64_t>(4, ng - g0)) {
                        case 1: scores_block<I, 1, 1>(q + g0, kt, j0, j1, hd, s + g0); break;
                        case 2: scores_block<I, 2, 1>(q + g0, kt, j0, j1, hd, s + g0); break;
                        case 3: scores_block<I, 3, 1>(q + g0, kt, j0, j1, hd, s + g0); break;
                        default: scores_block<I, 4, 1>(q + g0, kt, j0, j1, hd, s + g0); break;
                    }
                }
        } else {  // a block starting inside one (a sliding window's first keys)
            for (int64_t g = 0; g < ng; ++g)
                for (int64_t j = 0; j < kKeyBlock; ++j) s[g][j] = 0.0f;
            for (int64_t t0 = j0; t0 < j0 + nb;) {  // the tiles the block touches
                const int64_t t1 = std::min(j0 + nb, (t0 / kKeyTile + 1) * kKeyTile);
                const T* __restrict kr = kt + key_index(t0, 0, hd);
                for (int64_t d = 0; d < hd; ++d) {
                    // Keys t0 .. t1 - 1 of row d only: kr starts at t0 inside its tile, and the
                    // cache ends with the last tile.
                    const float* __restrict kd = as_floats<I>(kr + d * kKeyTile, t1 - t0, buf);
                    for (int64_t g = 0; g < ng; ++g) {
                        const float qd = q[g][d];
                        for (int64_t j = t0; j < t1; ++j) s[g][j - j0] += qd * kd[j - t0];
                    }
                }
                t0 = t1;
            }
        }
        if constexpr (kScaled)  // int8 keys: q · k_j = ks[j] · (q · kq_j)
            for (int64_t g = 0; g < ng; ++g)
                for (int64_t j = 0; j < nb; ++j) s[g][j] *= ks[j0 + j];
        // ALiBi: each head's slope times the key's position (Bloom: added to q·k / sqrt(hd)).
        if (alibi)
            for (int64_t g = 0; g < ng; ++g)
                for (int64_t j = 0; j < nb; ++j) s[g][j] += alibi[g] * float(j0 + j);
        // Gemma 2's soft-capping of the scores: cap · tanh(s / cap), as transformers computes it.
        if (softcap > 0.0f)
            for (int64_t g = 0; g < ng; ++g) ops::softcap(s[g], nb, softcap);
        // Online softmax: rescale what was accumulated when the running max grows.
        for (int64_t g = 0; g < ng; ++g) {
            const float m_new = std::max(out.m[g], block_max<I>(s[g], nb));
            const float corr = std::exp(out.m[g] - m_new);  // 0 on the first block
            const float sum = exp_sum<I>(s[g], nb, m_new);
            out.l[g] = out.l[g] * corr + sum;
            out.m[g] = m_new;
            if (corr != 1.0f)
                for (int64_t d = 0; d < hd; ++d) acc[g * hd + d] *= corr;
        }
        if constexpr (kScaled)  // int8 values: p_j · v_j = (p_j · vs[j]) · vq_j (l keeps p_j)
            for (int64_t g = 0; g < ng; ++g)
                for (int64_t j = 0; j < nb; ++j) s[g][j] *= vs[j0 + j];
        // acc[g] += Σ_j p[g][j] · v_j
        const T* vb = v + j0 * hd;
        switch (hd) {
            case 32: pv_heads<2, I>(s, ng, nb, vb, hd, acc); break;
            case 64: pv_heads<4, I>(s, ng, nb, vb, hd, acc); break;
            case 96: pv_heads<6, I>(s, ng, nb, vb, hd, acc); break;
            case 128: pv_heads<8, I>(s, ng, nb, vb, hd, acc); break;
            default:
                for (int64_t j = 0; j < nb; ++j) {
                    const float* __restrict vr = as_floats<I>(vb + j * hd, hd, buf);
                    for (int64_t g = 0; g < ng; ++g) {
                        const float p = s[g][j];
                        float* __restrict a = acc + g * hd;
                        for (int64_t d = 0; d < hd; ++d) a[d] += p * vr[d];
                    }
                }
        }
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
// One body per instruction set and cache type, chosen by cpu_level() (so VT_ISA can force the
// narrow blocking on an AVX-512 machine: tests/test_ops_cpu.py checks both against a reference).
template <class T>
__attribute__((target(VT_TARGET_V4))) void attend_avx512(const float* const* q, int64_t ng, const T* kt,
                                                             const T* v, const float* ks, const float* vs,
                                                             int64_t k0, int64_t k1, int64_t hd, Partial out,
                                                             float softcap, const float* alibi) {
    attend_body<kAvx512>(q, ng, kt, v, ks, vs, k0, k1, hd, out, softcap, alibi);
}
template <class T>
__attribute__((target(VT_TARGET_V3))) void attend_avx2(const float* const* q, int64_t ng, const T* kt,
                                                           const T* v, const float* ks, const float* vs,
                                                           int64_t k0, int64_t k1, int64_t hd, Partial out,
                                                           float softcap, const float* alibi) {
    attend_body<kAvx2>(q, ng, kt, v, ks, vs, k0, k1, hd, out, softcap, alibi);
}

// store_f16 with F16C (RNE whatever MXCSR says); AVX-512 machines use it too.
__attribute__((target(VT_TARGET_V3))) bool store_f16_avx2(const float* src, int64_t n, half* dst,
                                                              int64_t stride) {
    const __m256 lim = _mm256_set1_ps(65520.0f), inf = _mm256_set1_ps(std::numeric_limits<float>::infinity());
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    __m256 over = _mm256_setzero_ps();
    alignas(16) half h[8];
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 x = _mm256_loadu_ps(src + i), a = _mm256_and_ps(x, abs_mask);
        over = _mm256_or_ps(over, _mm256_and_ps(_mm256_cmp_ps(a, lim, _CMP_GE_OQ), _mm256_cmp_ps(a, inf, _CMP_LT_OQ)));
        const __m128i r = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        if (stride == 1) {
            _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), r);
        } else {
            _mm_store_si128(reinterpret_cast<__m128i*>(h), r);
            for (int t = 0; t < 8; ++t) dst[(i + t) * stride] = h[t];
        }
    }
    bool ok = _mm256_movemask_ps(over) == 0;
    for (; i < n; ++i) {
        dst[i * stride] = f32_to_f16(src[i]);
        ok = ok && !(std::fabs(src[i]) >= 65520.0f && std::isfinite(src[i]));
    }
    return ok;
}
#define VT_ATTEND_LEVELS 1
#endif

template <class T>
void attend_t(const float* const* q, int64_t ng, const T* kt, const T* v, const float* ks, const float* vs,
              int64_t k0, int64_t k1, int64_t hd, Partial out, float softcap, const float* alibi) {
#if defined(VT_ATTEND_LEVELS)
    switch (cpu_level()) {
        case 2: return attend_avx512(q, ng, kt, v, ks, vs, k0, k1, hd, out, softcap, alibi);
        case 1: return attend_avx2(q, ng, kt, v, ks, vs, k0, k1, hd, out, softcap, alibi);
        default: break;
    }
#endif
    attend_body<kGeneric>(q, ng, kt, v, ks, vs, k0, k1, hd, out, softcap, alibi);
}

template <class T>
void attend_normalized_t(const float* const* q, int64_t ng, const T* kt, const T* v, const float* ks,
                         const float* vs, int64_t k0, int64_t k1, int64_t hd, float* const* out, float softcap,
                         const float* alibi) {
    alignas(64) float acc[kAccFloats];
    float mm[kMaxGroup], ll[kMaxGroup];
    attend_t(q, ng, kt, v, ks, vs, k0, k1, hd, Partial{acc, mm, ll}, softcap, alibi);
    for (int64_t g = 0; g < ng; ++g) {
        const float f = 1.0f / ll[g];
        const float* __restrict a = acc + g * hd;
        float* __restrict o = out[g];
        for (int64_t d = 0; d < hd; ++d) o[d] = a[d] * f;
    }
}

}  // namespace

void attend(const float* const* q, int64_t ng, const float* kt, const float* v, int64_t k0, int64_t k1,
            int64_t hd, Partial out, float softcap, const float* alibi) {
    attend_t(q, ng, kt, v, nullptr, nullptr, k0, k1, hd, out, softcap, alibi);
}

void attend(const float* const* q, int64_t ng, const half* kt, const half* v, int64_t k0, int64_t k1,
            int64_t hd, Partial out, float softcap, const float* alibi) {
    attend_t(q, ng, kt, v, nullptr, nullptr, k0, k1, hd, out, softcap, alibi);
}

void attend(const float* const* q, int64_t ng, const int8_t* kt, const int8_t* v, const float* ks, const float* vs,
            int64_t k0, int64_t k1, int64_t hd, Partial out, float softcap, const float* alibi) {
    attend_t(q, ng, kt, v, ks, vs, k0, k1, hd, out, softcap, alibi);
}

void attend_normalized(const float* const* q, int64_t ng, const float* kt, const float* v, int64_t k0, int64_t k1,
                       int64_t hd, float* const* out, float softcap, const float* alibi) {
    attend_normalized_t(q, ng, kt, v, nullptr, nullptr, k0, k1, hd, out, softcap, alibi);
}

void attend_normalized(const float* const* q, int64_t ng, const half* kt, const half* v, int64_t k0, int64_t k1,
                       int64_t hd, float* const* out, float softcap, const float* alibi) {
    attend_normalized_t(q, ng, kt, v, nullptr, nullptr, k0, k1, hd, out, softcap, alibi);
}

void attend_normalized(const float* const* q, int64_t ng, const int8_t* kt, const int8_t* v, const float* ks,
                       const float* vs, int64_t k0, int64_t k1, int64_t hd, float* const* out, float softcap, const float* alibi) {
    attend_normalized_t(q, ng, kt, v, ks, vs, k0, k1, hd, out, softcap, alibi);
}

bool store_i8(const float* src, int64_t n, int8_t* dst, int64_t stride, float* scale) {
    float amax = 0.0f;
    bool finite = true;
    for (int64_t i = 0; i < n; ++i) {
        finite = finite && std::isfinite(src[i]);
        amax = std::max(amax, std::fabs(src[i]));
    }
    if (!finite || !kv_i8_storable(amax)) {
        for (int64_t i = 0; i < n; ++i) dst[i * stride] = 0;
        *scale = 0.0f;
        return finite;
    }
    const float inv = kv_i8_inv(amax);  // kv_i8.h: the CUDA backend's codes are the same
    for (int64_t i = 0; i < n; ++i) dst[i * stride] = kv_i8_code(src[i], inv);
    *scale = kv_i8_scale(amax);
    return true;
}

bool store_f16(const float* src, int64_t n, half* dst, int64_t stride) {
#if defined(VT_ATTEND_LEVELS)
    if (cpu_level() >= 1) return store_f16_avx2(src, n, dst, stride);
#endif
    bool ok = true;
    for (int64_t i = 0; i < n; ++i) {
        dst[i * stride] = f32_to_f16(src[i]);
        ok = ok && !(std::fabs(src[i]) >= 65520.0f && std::isfinite(src[i]));
    }
    return ok;
}

}  // namespace ops
}  // namespace vt

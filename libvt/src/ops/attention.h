// Attention, the CPU implementation (the reference the CUDA kernels are tested against).
//
// One kernel for prefill and decode: `ng` query heads that share one KV head and one causal
// range attend keys [k0, k1) with an online (flash-style) softmax. Keys are stored in tiles of
// kKeyTile positions, each tile transposed (key_index: kt[(j/16)·hd·16 + d·16 + j%16]), so
// scores vectorize over positions and a tile is one contiguous run of 4·hd·16 bytes: with the
// plain transposed layout (kt[d·cap + j]) a block of keys was hd separate short runs, more
// streams than the hardware prefetchers follow, and long-context decode waited on them.
// Values are row-major (v[j * hd + d]). cpu/engine.cpp schedules it: which heads, which key
// ranges, which thread.
//
// The cache holds f32, f16 (`half`: IEEE binary16 bits) or int8, the session's
// kv_cache_dtype: an f16 key tile is one 32-byte row of 16 halves per d, converted to f32 on
// load (F16C on AVX2 / AVX-512, a scalar conversion at the generic level). An int8 cache
// (store_i8) keeps one f32 scale per position and KV head for its key and one for its value:
// key j is ks[j] · kt[key_index(j, ·)], value j is vs[j] · v[j · hd + ·]; the scores of a block
// are multiplied by ks after the dot products, and the softmax weights by vs before the
// weighted sum. Scores, softmax and the weighted sum of values are f32 in every case.
#pragma once

#include <algorithm>
#include <cstdint>

namespace vt {
namespace ops {

using half = uint16_t;  // an IEEE binary16 number's bits (the f16 KV cache)

constexpr int64_t kKeyBlock = 64;     // keys per attention block
constexpr int64_t kKeyTile = 16;      // keys per stored tile (a KV head holds cap / 16 tiles)

// Offset of key j, dimension d in a KV head's key tiles.
inline int64_t key_index(int64_t j, int64_t d, int64_t hd) {
    return (j / kKeyTile) * hd * kKeyTile + d * kKeyTile + j % kKeyTile;
}
constexpr int64_t kMaxGroup = 8;      // query heads attended together (GQA group): ng <= kMaxGroup
constexpr int64_t kAccFloats = 4096;  // accumulator budget of one call: ng × hd <= kAccFloats

// How the nh query heads of a layer are grouped for attend(): the G = nh / nkv heads of one
// KV head, in groups of at most gb; a "unit" is one group of one KV head.
struct HeadGroups {
    int64_t G, gb, ngroups, units;

    HeadGroups(int64_t nh, int64_t nkv, int64_t hd)
        : G(nh / nkv),
          gb(std::max<int64_t>(1, std::min({nh / nkv, kMaxGroup, kAccFloats / hd}))),
          ngroups((G + gb - 1) / gb),
          units(nkv * ngroups) {}

    struct Unit {
        int64_t kvh, head0, ng;  // KV head; query heads head0 .. head0 + ng - 1
    };
    Unit unit(int64_t u) const {
        const int64_t kvh = u / ngroups, g0 = (u % ngroups) * gb;
        return {kvh, kvh * G + g0, std::min(gb, G - g0)};
    }
};

// The unnormalized result of attend() for ng heads.
struct Partial {
    float* acc;  // [ng, hd]  Σ_j e^(s_j - m_g) v_j
    float* m;    // [ng]      running max of the scores
    float* l;    // [ng]      Σ_j e^(s_j - m_g)
};

// q[g]: [hd] query of head g (pre-scaled by 1/sqrt(hd)), g < ng <= kMaxGroup, ng·hd <= kAccFloats;
// kt: the KV head's key tiles (key_index); v: [positions, hd] its values; keys [k0, k1), k0 < k1.
// softcap > 0: each score s becomes softcap · tanh(s / softcap) before the softmax (Gemma 2).
// alibi (null: none): alibi[g] · j added to head g's score of key j before that (ALiBi's
// linear position bias: Bloom).
void attend(const float* const* q, int64_t ng, const float* kt, const float* v, int64_t k0, int64_t k1,
            int64_t hd, Partial out, float softcap = 0.0f,
            const float* alibi = nullptr);
void attend(const float* const* q, int64_t ng, const half* kt, const half* v, int64_t k0, int64_t k1,
            int64_t hd, Partial out, float softcap = 0.0f,
            const float* alibi = nullptr);

// The same over an int8 cache: ks, vs are the KV head's per-position key and value scales.
void attend(const float* const* q, int64_t ng, const int8_t* kt, const int8_t* v, const float* ks, const float* vs,
            int64_t k0, int64_t k1, int64_t hd, Partial out, float softcap = 0.0f,
            const float* alibi = nullptr);

// attend() normalized: out[g] = softmax_j(q_g · k_j) v_j over keys [k0, k1). out[g]: [hd].
void attend_normalized(const float* const* q, int64_t ng, const float* kt, const float* v, int64_t k0, int64_t k1,
                       int64_t hd, float* const* out, float softcap = 0.0f,
            const float* alibi = nullptr);
void attend_normalized(const float* const* q, int64_t ng, const half* kt, const half* v, int64_t k0, int64_t k1,
                       int64_t hd, float* const* out, float softcap = 0.0f,
            const float* alibi = nullptr);

void attend_normalized(const float* const* q, int64_t ng, const int8_t* kt, const int8_t* v, const float* ks,
                       const float* vs, int64_t k0, int64_t k1, int64_t hd, float* const* out, float softcap = 0.0f,
            const float* alibi = nullptr);

// dst[i · stride] = src[i] rounded to f16 (to nearest, ties to even), i < n: how keys
// (stride kKeyTile) and values (stride 1) enter an f16 cache. Returns false when a finite
// src value is beyond f16's range (|x| >= 65520 rounds to infinity; it is stored as such):
// the caller refuses to go on rather than attend over an infinite key or value.
bool store_f16(const float* src, int64_t n, half* dst, int64_t stride);

// dst[i · stride] = src[i] / *scale rounded to the nearest integer (ties to even), with
// *scale = max |src[i]| / 127 (0 when all are 0): how a key (stride kKeyTile) or a value
// (stride 1) enters an int8 cache. Returns false, storing zeros, when a src value is not
// finite: the caller refuses to go on, as for f16.
bool store_i8(const float* src, int64_t n, int8_t* dst, int64_t stride, float* scale);

}  // namespace ops
}  // namespace vt

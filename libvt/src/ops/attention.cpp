#include "ops/attention.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "ops/cpu_clones.h"

namespace vt {
namespace ops {

namespace {

// e^x for x <= 0 (Cephes expf polynomial, ~1 ulp; inputs below -87 give ~1e-38, not 0).
// Written without branches so loops over it vectorize.
inline float exp_nonpos(float x) {
    x = x < -87.0f ? -87.0f : x;
    const float t = x * 1.44269504088896341f + 12582912.0f;  // n = round(x / ln 2) in t's low bits
    const float n = t - 12582912.0f;
    float r = x - n * 0.693359375f;
    r = r + n * 2.12194440e-4f;
    const float z = r * r;
    float y = 1.9875691500e-4f;
    y = y * r + 1.3981999507e-3f;
    y = y * r + 8.3334519073e-3f;
    y = y * r + 4.1665795894e-2f;
    y = y * r + 1.6666665459e-1f;
    y = y * r + 5.0000001201e-1f;
    y = y * z + r + 1.0f;
    // 2^n from t's bits (t = 1.5 * 2^23 + n): integer arithmetic, defined for any x — a NaN
    // score (overflowing activations) gives a NaN result instead of an undefined int(NaN).
    uint32_t tb;
    std::memcpy(&tb, &t, 4);
    const uint32_t bits = (tb - 0x4B400000u + 127u) << 23;
    float scale;
    std::memcpy(&scale, &bits, 4);
    return y * scale;
}

// Register-blocked pieces of attend(), written with GCC vector extensions so the
// accumulators stay in registers (16 floats = one AVX-512 register, two AVX2 ones). They
// are always inlined into attend(), whose clones pick the instruction set.
typedef float v16 __attribute__((vector_size(64)));
typedef float v16u __attribute__((vector_size(64), aligned(4)));  // unaligned access
#define VT_INLINE inline __attribute__((always_inline))

#define VT_SPLAT(x) ((x) - v16{})  // a broadcast (x - 0 folds away; x + 0 does not, for x = -0)

// s[g][0:64] = q_g · k_j for a full block of 64 keys starting at j0, NG heads at once.
template <int NG>
VT_INLINE void scores_block(const float* const* q, const float* kt, int64_t cap, int64_t j0, int64_t hd,
                            float (*s)[kKeyBlock]) {
    v16 a[NG][4];
    for (int g = 0; g < NG; ++g)
        for (int i = 0; i < 4; ++i) a[g][i] = v16{};
    for (int64_t d = 0; d < hd; ++d) {
        const v16u* kr = reinterpret_cast<const v16u*>(kt + d * cap + j0);
        const v16 k0 = kr[0], k1 = kr[1], k2 = kr[2], k3 = kr[3];
        for (int g = 0; g < NG; ++g) {
            const v16 qd = VT_SPLAT(q[g][d]);
            a[g][0] += qd * k0;
            a[g][1] += qd * k1;
            a[g][2] += qd * k2;
            a[g][3] += qd * k3;
        }
    }
    for (int g = 0; g < NG; ++g)
        for (int i = 0; i < 4; ++i) *reinterpret_cast<v16u*>(&s[g][16 * i]) = a[g][i];
}

// acc[g][0:16·HV] += Σ_{j<nb} p[g][j] · v_j, NG heads at once.
template <int HV, int NG>
VT_INLINE void pv_block(const float (*p)[kKeyBlock], int64_t nb, const float* v, int64_t hd, float* acc) {
    v16 a[NG][HV];
    for (int g = 0; g < NG; ++g)
        for (int h = 0; h < HV; ++h) a[g][h] = *reinterpret_cast<const v16u*>(acc + g * hd + 16 * h);
    for (int64_t j = 0; j < nb; ++j) {
        const v16u* vr = reinterpret_cast<const v16u*>(v + j * hd);
        v16 vv[HV];
        for (int h = 0; h < HV; ++h) vv[h] = vr[h];
        for (int g = 0; g < NG; ++g) {
            const v16 pj = VT_SPLAT(p[g][j]);
            for (int h = 0; h < HV; ++h) a[g][h] += pj * vv[h];
        }
    }
    for (int g = 0; g < NG; ++g)
        for (int h = 0; h < HV; ++h) *reinterpret_cast<v16u*>(acc + g * hd + 16 * h) = a[g][h];
}

template <int HV>
VT_INLINE void pv_heads(const float (*p)[kKeyBlock], int64_t ng, int64_t nb, const float* v, int64_t hd,
                        float* acc) {
    constexpr int64_t C = HV <= 4 ? 4 : 2;  // heads per pass: accumulators + values fit 32 registers
    for (int64_t g0 = 0; g0 < ng; g0 += C) {
        float* a = acc + g0 * hd;
        switch (std::min(C, ng - g0)) {
            case 1: pv_block<HV, 1>(p + g0, nb, v, hd, a); break;
            case 2: pv_block<HV, 2>(p + g0, nb, v, hd, a); break;
            case 3: pv_block<HV, 3>(p + g0, nb, v, hd, a); break;
            default: pv_block<HV, (C > 3 ? 4 : 1)>(p + g0, nb, v, hd, a); break;
        }
    }
}

}  // namespace

VT_CLONES void attend(const float* const* q, int64_t ng, const float* __restrict kt, const float* __restrict v,
                      int64_t cap, int64_t k0, int64_t k1, int64_t hd, Partial out, float softcap) {
    alignas(64) float s[kMaxGroup][kKeyBlock];
    float* acc = out.acc;
    for (int64_t g = 0; g < ng; ++g) {
        out.m[g] = -std::numeric_limits<float>::infinity();
        out.l[g] = 0.0f;
        for (int64_t d = 0; d < hd; ++d) acc[g * hd + d] = 0.0f;
    }
    for (int64_t j0 = k0; j0 < k1; j0 += kKeyBlock) {
        const int64_t nb = std::min(kKeyBlock, k1 - j0);
        // Scores s[g][j] = q_g · k_j (q is pre-scaled by 1/sqrt(hd)).
        if (nb == kKeyBlock) {
            for (int64_t g0 = 0; g0 < ng; g0 += 4) {
                switch (std::min<int64_t>(4, ng - g0)) {
                    case 1: scores_block<1>(q + g0, kt, cap, j0, hd, s + g0); break;
                    case 2: scores_block<2>(q + g0, kt, cap, j0, hd, s + g0); break;
                    case 3: scores_block<3>(q + g0, kt, cap, j0, hd, s + g0); break;
                    default: scores_block<4>(q + g0, kt, cap, j0, hd, s + g0); break;
                }
            }
        } else {
            for (int64_t g = 0; g < ng; ++g)
                for (int64_t j = 0; j < kKeyBlock; ++j) s[g][j] = 0.0f;
            for (int64_t d = 0; d < hd; ++d) {
                const float* __restrict kr = kt + d * cap + j0;
                for (int64_t g = 0; g < ng; ++g) {
                    const float qd = q[g][d];
                    for (int64_t j = 0; j < nb; ++j) s[g][j] += qd * kr[j];
                }
            }
        }
        // Gemma 2's soft-capping of the scores: cap · tanh(s / cap), as transformers computes it.
        if (softcap > 0.0f)
            for (int64_t g = 0; g < ng; ++g)
                for (int64_t j = 0; j < nb; ++j) s[g][j] = std::tanh(s[g][j] / softcap) * softcap;
        // Online softmax: rescale what was accumulated when the running max grows.
        for (int64_t g = 0; g < ng; ++g) {
            float mx = s[g][0];
            for (int64_t j = 1; j < nb; ++j) mx = s[g][j] > mx ? s[g][j] : mx;
            const float m_new = std::max(out.m[g], mx);
            const float corr = std::exp(out.m[g] - m_new);  // 0 on the first block
            float lanes[16] = {0};
            for (int64_t j = 0; j < nb; ++j) s[g][j] = exp_nonpos(s[g][j] - m_new);
            for (int64_t j = 0; j < kKeyBlock; j += 16)
                for (int64_t t = 0; t < 16; ++t) lanes[t] += (j + t < nb) ? s[g][j + t] : 0.0f;
            float sum = 0.0f;
            for (int t = 0; t < 16; ++t) sum += lanes[t];
            out.l[g] = out.l[g] * corr + sum;
            out.m[g] = m_new;
            if (corr != 1.0f)
                for (int64_t d = 0; d < hd; ++d) acc[g * hd + d] *= corr;
        }
        // acc[g] += Σ_j p[g][j] · v_j
        const float* vb = v + j0 * hd;
        switch (hd) {
            case 32: pv_heads<2>(s, ng, nb, vb, hd, acc); break;
            case 64: pv_heads<4>(s, ng, nb, vb, hd, acc); break;
            case 96: pv_heads<6>(s, ng, nb, vb, hd, acc); break;
            case 128: pv_heads<8>(s, ng, nb, vb, hd, acc); break;
            default:
                for (int64_t j = 0; j < nb; ++j) {
                    const float* __restrict vr = vb + j * hd;
                    for (int64_t g = 0; g < ng; ++g) {
                        const float p = s[g][j];
                        float* __restrict a = acc + g * hd;
                        for (int64_t d = 0; d < hd; ++d) a[d] += p * vr[d];
                    }
                }
        }
    }
}


VT_CLONES void attend_normalized(const float* const* q, int64_t ng, const float* __restrict kt,
                                 const float* __restrict v, int64_t cap, int64_t k0, int64_t k1, int64_t hd,
                                 float* const* out, float softcap) {
    alignas(64) float acc[kAccFloats];
    float mm[kMaxGroup], ll[kMaxGroup];
    attend(q, ng, kt, v, cap, k0, k1, hd, Partial{acc, mm, ll}, softcap);
    for (int64_t g = 0; g < ng; ++g) {
        const float f = 1.0f / ll[g];
        const float* __restrict a = acc + g * hd;
        float* __restrict o = out[g];
        for (int64_t d = 0; d < hd; ++d) o[d] = a[d] * f;
    }
}

}  // namespace ops
}  // namespace vt

// int8, int4-min and int4 linears on 64-bit ARM (NEON, the baseline of every aarch64 CPU): the
// arithmetic of the x86 integer kernels, so their linears give the same bits on ARM as on x86.
//
// x is rounded per row and K-block to int16 as quantize_x16_avx2 rounds it (scale = max |x| /
// 32639, round to nearest even; a block holding a NaN or infinity gives NaN), each block's sum
// over k of weight (int8) times x (int16) is formed exactly in int32 by widening multiply-adds
// (smlal: |sum| <= kb * 127 * 32639 < 2^31 for kb <= 512), and the f32 steps after it are
// gemv_tile_i8x16's, operation for operation: scale = f16(block scale) * rowmul, then
// acc = fma(float(sum), scale * xs, acc) block after block. int4-min (gemv_tile_i4x8's steps):
// the nibbles u (0..15) times x's int16 likewise exact in int32 (15 * 32639 * kb < 2^31), then
// acc = fma(float(sum), scale * xs, acc) and acc = fma(min * rowmul, xqsum * xs, acc), xqsum
// being the block's sum of the rounded x. int4 (gemv_tile_i4a8's steps): x rounded to |q| <= 127,
// acc = fma(float(sum - 8 * xqsum), scale * xs, acc). The epilogue (bias, GELU, SwiGLU, GeGLU) is
// kernels_avx2.cpp's with the same polynomial, fused multiply-adds and divisions.
// The compiled int8 loop takes 12 instructions per k of a tile (16 weights, one row: a load,
// x's broadcast, two sign extensions, two ext, four smlal, the loop's two), where the generic
// kernels call a decode function per k and keep their sums in memory. Speed on an ARM CPU is
// unmeasured: the runs so far are emulated (bench/results/aarch64-qemu-neon-20261129.md).

#include <arm_neon.h>

#include <cmath>
#include <cstring>

#include "../ops/cpu_clones.h"
#include "../ops/exp_nonpos.h"
#include "kernels.h"

namespace vt {
namespace cpu {
namespace {

constexpr int L = 16;  // rows (output columns) per tile

// x86's max_ps / min_ps: the second operand unless the first is greater (less): NaN gives the
// second, as there.
inline float32x4_t max_x86(float32x4_t a, float32x4_t b) { return vbslq_f32(vcgtq_f32(a, b), a, b); }
inline float32x4_t min_x86(float32x4_t a, float32x4_t b) { return vbslq_f32(vcltq_f32(a, b), a, b); }
inline float32x4_t splat(float v) { return vdupq_n_f32(v); }

// kernels_avx2.cpp's exp8, 4 lanes.
inline float32x4_t exp4(float32x4_t x) {
    x = min_x86(max_x86(x, splat(-87.3f)), splat(88.3f));
    const float32x4_t n = vrndnq_f32(vmulq_f32(x, splat(1.44269504088896341f)));
    float32x4_t r = vfmsq_f32(x, n, splat(0.693359375f));     // x - n c1, fused
    r = vfmsq_f32(r, n, splat(-2.12194440e-4f));              // r - n c2, fused
    float32x4_t y = splat(1.9875691500e-4f);
    y = vfmaq_f32(splat(1.3981999507e-3f), y, r);
    y = vfmaq_f32(splat(8.3334519073e-3f), y, r);
    y = vfmaq_f32(splat(4.1665795894e-2f), y, r);
    y = vfmaq_f32(splat(1.6666665459e-1f), y, r);
    y = vfmaq_f32(splat(5.0000001201e-1f), y, r);
    y = vfmaq_f32(vaddq_f32(r, splat(1.0f)), y, vmulq_f32(r, r));
    const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);  // n is integral
    return vmulq_f32(y, vreinterpretq_f32_s32(e));
}

inline float32x4_t silu4(float32x4_t g) {
    return vdivq_f32(g, vaddq_f32(splat(1.0f), exp4(vsubq_f32(splat(0.0f), g))));
}

// kernels_avx2.cpp's gelu8 (erf GELU), 4 lanes.
inline float32x4_t gelu4(float32x4_t x) {
    const float32x4_t z = vmulq_f32(vabsq_f32(x), splat(0.70710678118654752f));
    const float32x4_t t = vdivq_f32(splat(1.0f), vfmaq_f32(splat(1.0f), z, splat(0.5f)));
    float32x4_t p = splat(0.17087277f);
    p = vfmaq_f32(splat(-0.82215223f), p, t);
    p = vfmaq_f32(splat(1.48851587f), p, t);
    p = vfmaq_f32(splat(-1.13520398f), p, t);
    p = vfmaq_f32(splat(0.27886807f), p, t);
    p = vfmaq_f32(splat(-0.18628806f), p, t);
    p = vfmaq_f32(splat(0.09678418f), p, t);
    p = vfmaq_f32(splat(0.37409196f), p, t);
    p = vfmaq_f32(splat(1.00002368f), p, t);
    p = vfmaq_f32(splat(-1.26551223f), p, t);
    p = vfmsq_f32(p, z, z);  // p - z z, fused
    const float32x4_t erfc = vmulq_f32(t, exp4(p));
    const uint32x4_t pos = vcgeq_f32(x, splat(0.0f));
    const float32x4_t f = vbslq_f32(pos, vsubq_f32(splat(2.0f), erfc), erfc);
    return vmulq_f32(vmulq_f32(splat(0.5f), x), f);
}

// A tile's 16 results of one row.
struct Row16 {
    float32x4_t v[4];
};

// Rows i < R of x against tile t of w: out[i] = sum over K-blocks of the exact int32 block sum
// times scale and xs, as gemv_tile_i8x16.
template <int R>
inline void tile_i8(const DenseW& w, int64_t t, const int16_t* xq, int64_t ldq, const float* xs, int64_t nkb,
                    Row16* out) {
    const uint8_t* tile = w.tiles + t * w.tile_bytes;
    const uint16_t* sc = reinterpret_cast<const uint16_t*>(tile + w.scale_off);
    const int64_t kb = w.kb;
    float32x4_t rm[4];
    for (int j = 0; j < 4; ++j) rm[j] = vld1q_f32(w.rowmul + t * L + 4 * j);
    float32x4_t f[R][4];
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < 4; ++j) f[i][j] = splat(0.0f);
    for (int64_t b = 0; b < nkb; ++b) {
        int32x4_t a[R][4];
        for (int i = 0; i < R; ++i)
            for (int j = 0; j < 4; ++j) a[i][j] = vdupq_n_s32(0);
        const int8_t* q = reinterpret_cast<const int8_t*>(tile) + b * kb * L;
        const int16_t* xb = xq + b * kb;
        for (int64_t k = 0; k < kb; ++k) {
            const int8x16_t wk = vld1q_s8(q + k * L);
            const int16x8_t lo = vmovl_s8(vget_low_s8(wk));  // rows 0-7
            const int16x8_t hi = vmovl_high_s8(wk);          // rows 8-15
            for (int i = 0; i < R; ++i) {
                const int16_t xk = xb[i * ldq + k];
                a[i][0] = vmlal_n_s16(a[i][0], vget_low_s16(lo), xk);
                a[i][1] = vmlal_high_n_s16(a[i][1], lo, xk);
                a[i][2] = vmlal_n_s16(a[i][2], vget_low_s16(hi), xk);
                a[i][3] = vmlal_high_n_s16(a[i][3], hi, xk);
            }
        }
        float32x4_t s[4];
        for (int j = 0; j < 4; ++j)
            s[j] = vmulq_f32(vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(sc + b * L + 4 * j))), rm[j]);
        for (int i = 0; i < R; ++i) {
            const float32x4_t x8 = splat(xs[i * nkb + b]);
            for (int j = 0; j < 4; ++j) f[i][j] = vfmaq_f32(f[i][j], vcvtq_f32_s32(a[i][j]), vmulq_f32(s[j], x8));
        }
    }
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < 4; ++j) out[i].v[j] = f[i][j];
}

// int4-min (Min) and int4: rows i < R of x against tile t: the block sums of u * xq (u the
// nibble: low for even k, high for odd k of each pair's byte), then gemv_tile_i4x8's (Min) or
// gemv_tile_i4a8's (int4: q = u - 8, so 8 * xsum off the sum) f32 steps. xsum: the rounded x's
// block sums (exact integers in f32).
template <int R, bool Min>
inline void tile_i4(const DenseW& w, int64_t t, const int16_t* xq, int64_t ldq, const float* xs, const float* xsum,
                    int64_t nkb, Row16* out) {
    const uint8_t* tile = w.tiles + t * w.tile_bytes;
    const uint16_t* sc = reinterpret_cast<const uint16_t*>(tile + w.scale_off);
    const uint16_t* mn = reinterpret_cast<const uint16_t*>(tile + w.min_off);  // (Min only)
    const int64_t kb = w.kb, np_all = (w.in + 1) / 2;
    float32x4_t rm[4];
    for (int j = 0; j < 4; ++j) rm[j] = vld1q_f32(w.rowmul + t * L + 4 * j);
    const uint8x16_t low4 = vdupq_n_u8(0x0F);
    float32x4_t f[R][4];
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < 4; ++j) f[i][j] = splat(0.0f);
    for (int64_t b = 0; b < nkb; ++b) {
        const int64_t p0 = b * kb / 2, p1 = p0 + kb / 2 < np_all ? p0 + kb / 2 : np_all;
        int32x4_t a[R][4];
        for (int i = 0; i < R; ++i)
            for (int j = 0; j < 4; ++j) a[i][j] = vdupq_n_s32(0);
        for (int64_t p = p0; p < p1; ++p) {
            const uint8x16_t v = vld1q_u8(tile + p * L);
            const uint8x16_t ue = vandq_u8(v, low4), uo = vshrq_n_u8(v, 4);  // k = 2p, 2p + 1
            const int16x8_t e_lo = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(ue)));
            const int16x8_t e_hi = vreinterpretq_s16_u16(vmovl_high_u8(ue));
            const int16x8_t o_lo = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(uo)));
            const int16x8_t o_hi = vreinterpretq_s16_u16(vmovl_high_u8(uo));
            for (int i = 0; i < R; ++i) {
                const int16_t x0 = xq[i * ldq + 2 * p], x1 = xq[i * ldq + 2 * p + 1];
                a[i][0] = vmlal_n_s16(vmlal_n_s16(a[i][0], vget_low_s16(e_lo), x0), vget_low_s16(o_lo), x1);
                a[i][1] = vmlal_high_n_s16(vmlal_high_n_s16(a[i][1], e_lo, x0), o_lo, x1);
                a[i][2] = vmlal_n_s16(vmlal_n_s16(a[i][2], vget_low_s16(e_hi), x0), vget_low_s16(o_hi), x1);
                a[i][3] = vmlal_high_n_s16(vmlal_high_n_s16(a[i][3], e_hi, x0), o_hi, x1);
            }
        }
        float32x4_t s[4], mv[4];
        for (int j = 0; j < 4; ++j) {
            s[j] = vmulq_f32(vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(sc + b * L + 4 * j))), rm[j]);
            if (Min) mv[j] = vmulq_f32(vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(mn + b * L + 4 * j))), rm[j]);
        }
        for (int i = 0; i < R; ++i) {
            const float xsv = xs[i * nkb + b], sq = xsum[i * nkb + b];
            const float32x4_t x8 = splat(xsv), sm = splat(sq * xsv);
            const int32x4_t m8 = vdupq_n_s32(8 * static_cast<int32_t>(sq));
            for (int j = 0; j < 4; ++j) {
                if constexpr (Min) {
                    f[i][j] = vfmaq_f32(f[i][j], vcvtq_f32_s32(a[i][j]), vmulq_f32(s[j], x8));
                    f[i][j] = vfmaq_f32(f[i][j], mv[j], sm);
                } else {
                    f[i][j] = vfmaq_f32(f[i][j], vcvtq_f32_s32(vsubq_s32(a[i][j], m8)), vmulq_f32(s[j], x8));
                }
            }
        }
    }
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < 4; ++j) out[i].v[j] = f[i][j];
}

// kernels_avx2.cpp's epilogue on one row's tile: bias, the activation, the valid columns stored.
void epilogue(const LinearJob& job, int64_t t, const Row16& g0, const Row16& u0, float* yrow) {
    const int64_t c0 = t * L, valid = job.w.out - c0 < L ? job.w.out - c0 : L;
    alignas(16) float b1[L] = {}, b2[L] = {};
    if (job.bias) std::memcpy(b1, job.bias + c0, sizeof(float) * static_cast<size_t>(valid));
    if (job.bias2) std::memcpy(b2, job.bias2 + c0, sizeof(float) * static_cast<size_t>(valid));
    alignas(16) float res[L];
    for (int j = 0; j < 4; ++j) {
        float32x4_t g = g0.v[j];
        if (job.bias) g = vaddq_f32(g, vld1q_f32(b1 + 4 * j));
        if (job.act == kActGelu) {
            g = gelu4(g);
        } else if (gated(job.act)) {
            float32x4_t u = u0.v[j];
            if (job.bias2) u = vaddq_f32(u, vld1q_f32(b2 + 4 * j));
            if (job.act == kActGeglu) {
                typedef float V4 __attribute__((vector_size(16)));
                V4 gv;
                std::memcpy(&gv, &g, sizeof gv);
                ops::gelu_tanh_v(gv);
                std::memcpy(&g, &gv, sizeof gv);
            } else {
                g = silu4(g);
            }
            g = vmulq_f32(g, u);
        }
        vst1q_f32(res + 4 * j, g);
    }
    std::memcpy(yrow + c0, res, sizeof(float) * static_cast<size_t>(valid));
}

}  // namespace

void quantize_x16_portable(const float* x, int64_t m, int64_t in, int64_t kb, int16_t* xq, int64_t ld, float* xs,
                           float* xsum, int16_t qmax) {
    const int64_t nkb = (in + kb - 1) / kb;
    for (int64_t i = 0; i < m; ++i) {
        for (int64_t b = 0; b < nkb; ++b) {
            const float* xb = x + i * in + b * kb;
            int16_t* qb = xq + i * ld + b * kb;
            const int64_t n = kb < in - b * kb ? kb : in - b * kb;
            std::memset(qb + n, 0, sizeof(int16_t) * static_cast<size_t>(kb - n));  // a short last block
            float am = 0.f, inv;
            bool nonfinite = false;
            x16_absmax(xb, 0, n, am, nonfinite);
            if (!x16_block_scale(am, nonfinite, qmax, qb, n, xs + i * nkb + b, xsum ? xsum + i * nkb + b : nullptr, &inv))
                continue;
            int64_t sum = 0;
            for (int64_t k = 0; k < n; ++k) {  // |x inv| <= qmax (to the last ulp): no clamp reached
                const float q = std::nearbyint(xb[k] * inv);
                qb[k] = static_cast<int16_t>(q > qmax ? qmax : (q < -qmax ? -qmax : q));
                sum += qb[k];
            }
            if (xsum) xsum[i * nkb + b] = static_cast<float>(sum);
        }
    }
}

void linear_neon(const LinearJob& job, int64_t t0, int64_t t1) {
    const int64_t out = job.w.out, nkb = num_kblocks(job.w);
    const bool two = gated(job.act);
    const int kind = job.w.kind;
    const auto tile = [&](const DenseW& w, int64_t t, int64_t i0, int64_t r, Row16* o) {
        const int16_t* xq = job.xq + i0 * job.xq_ld;
        const float* xs = job.xqs + i0 * nkb;
        const float* xsum = job.xqsum ? job.xqsum + i0 * nkb : nullptr;
        if (kind == kInt4Min) {
            if (r == 2) tile_i4<2, true>(w, t, xq, job.xq_ld, xs, xsum, nkb, o);
            else tile_i4<1, true>(w, t, xq, job.xq_ld, xs, xsum, nkb, o);
        } else if (kind == kInt4Blocked) {
            if (r == 2) tile_i4<2, false>(w, t, xq, job.xq_ld, xs, xsum, nkb, o);
            else tile_i4<1, false>(w, t, xq, job.xq_ld, xs, xsum, nkb, o);
        } else if (r == 2) {
            tile_i8<2>(w, t, xq, job.xq_ld, xs, nkb, o);
        } else {
            tile_i8<1>(w, t, xq, job.xq_ld, xs, nkb, o);
        }
    };
    for (int64_t t = t0; t < t1; ++t) {
        for (int64_t i0 = 0; i0 < job.m; i0 += 2) {  // rows in pairs: two rows' sums fill the registers
            const int64_t r = job.m - i0 < 2 ? job.m - i0 : 2;
            Row16 g[2], u[2];
            tile(job.w, t, i0, r, g);
            if (two) tile(job.w2, t, i0, r, u);
            for (int64_t i = 0; i < r; ++i) epilogue(job, t, g[i], two ? u[i] : g[i], job.y + (i0 + i) * out);
        }
    }
}

}  // namespace cpu
}  // namespace vt

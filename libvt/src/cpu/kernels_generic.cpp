// Portable kernels (baseline x86-64 / any CPU): the reference the SIMD levels are tested
// against, written so the compiler can vectorize the 16-lane loops.

#include <cmath>
#include <cstring>

#include "../convert.h"
#include "kernels.h"
#include "../ops/swiglu.h"

namespace vt {
namespace cpu {

float gelu_ref(float x) {
    return static_cast<float>(0.5 * x * std::erfc(-static_cast<double>(x) * 0.70710678118654752440));
}

namespace {

constexpr int L = 16;  // lanes (rows) per tile

// Decode the 16 weights of one k of a tile (without block scale or row multiplier; FP8
// values come out exactly, and the row multiplier's factor 256 is removed at the end).
inline void decode16(const DenseW& w, const uint8_t* tile, int64_t k, float* o) {
    switch (w.kind) {
        case kInt8Blocked: {
            const int8_t* q = reinterpret_cast<const int8_t*>(tile) + k * L;
            for (int r = 0; r < L; ++r) o[r] = static_cast<float>(q[r]);
            break;
        }
        case kBf16: {
            const uint16_t* q = reinterpret_cast<const uint16_t*>(tile) + k * L;
            for (int r = 0; r < L; ++r) o[r] = bf16_to_f32(q[r]);
            break;
        }
        case kInt4Blocked: {  // two k per byte, u - 8 (quant.h)
            const uint8_t* q = tile + (k >> 1) * L;
            const int sh = static_cast<int>(k & 1) * 4;
            for (int r = 0; r < L; ++r) o[r] = static_cast<float>(((q[r] >> sh) & 0xF) - 8);
            break;
        }
        case kInt4Min: {  // two k per byte, u as it is
            const uint8_t* q = tile + (k >> 1) * L;
            const int sh = static_cast<int>(k & 1) * 4;
            for (int r = 0; r < L; ++r) o[r] = static_cast<float>((q[r] >> sh) & 0xF);
            break;
        }
        case kMxfp4: {  // two k per byte, twice the E2M1 value
            const uint8_t* q = tile + (k >> 1) * L;
            const int sh = static_cast<int>(k & 1) * 4;
            for (int r = 0; r < L; ++r) o[r] = static_cast<float>(kMxfp4Values[(q[r] >> sh) & 0xF]);
            break;
        }
        default: {
            const float* tab = fp8_table();
            const uint8_t* q = tile + k * L;
            for (int r = 0; r < L; ++r) o[r] = tab[q[r]];
            break;
        }
    }
}

inline bool has_scales(const DenseW& w) {
    return w.kind == kInt8Blocked || w.kind == kFp8Blocked || nibble_kind(w.kind);
}

inline float final_mul(const DenseW& w, int64_t t, int r) {
    float rm = w.rowmul[t * L + r];
    return (w.kind == kFp8Blocked || w.kind == kFp8Channel) ? rm * (1.0f / 256.0f) : rm;
}

// acc[i][r] = sum_k x[i][k] * W[16t + r][k] for rows i < m of x (no bias / activation).
// xsum: kInt4Min's block sums of these rows of x ([m][nkb], LinearJob::xsum), else unused.
void tile_dot(const DenseW& w, int64_t t, const float* x, int64_t m, float* acc /*[m][16]*/,
              const float* xsum) {
    const uint8_t* tile = w.tiles + t * w.tile_bytes;
    const int64_t in = w.in;
    std::memset(acc, 0, sizeof(float) * L * m);
    float wk[L];
    if (!has_scales(w)) {
        for (int64_t k = 0; k < in; ++k) {
            decode16(w, tile, k, wk);
            for (int64_t i = 0; i < m; ++i) {
                const float xv = x[i * in + k];
                for (int r = 0; r < L; ++r) acc[i * L + r] += wk[r] * xv;
            }
        }
    } else {
        const uint16_t* sc = reinterpret_cast<const uint16_t*>(tile + w.scale_off);
        float part[kGemvMaxM * L];
        for (int64_t k0 = 0, bi = 0; k0 < in; k0 += w.kb, ++bi) {
            for (int64_t i0 = 0; i0 < m; i0 += kGemvMaxM) {
                const int64_t mi = m - i0 < kGemvMaxM ? m - i0 : kGemvMaxM;
                std::memset(part, 0, sizeof(part));
                const int64_t k1 = k0 + w.kb < in ? k0 + w.kb : in;  // INT4: a short last block
                for (int64_t k = k0; k < k1; ++k) {
                    decode16(w, tile, k, wk);
                    for (int64_t i = 0; i < mi; ++i) {
                        const float xv = x[(i0 + i) * in + k];
                        for (int r = 0; r < L; ++r) part[i * L + r] += wk[r] * xv;
                    }
                }
                float s[L];
                for (int r = 0; r < L; ++r) s[r] = f16_to_f32(sc[bi * L + r]);
                for (int64_t i = 0; i < mi; ++i)
                    for (int r = 0; r < L; ++r) acc[(i0 + i) * L + r] += part[i * L + r] * s[r];
                if (w.kind == kInt4Min) {  // + min * sum(x) over the block
                    const uint16_t* mn = reinterpret_cast<const uint16_t*>(tile + w.min_off) + bi * L;
                    const int64_t nkb = num_kblocks(w);
                    for (int64_t i = 0; i < mi; ++i) {
                        const float xs = xsum[(i0 + i) * nkb + bi];
                        for (int r = 0; r < L; ++r) acc[(i0 + i) * L + r] += f16_to_f32(mn[r]) * xs;
                    }
                }
            }
        }
    }
    for (int r = 0; r < L; ++r) {
        const float f = final_mul(w, t, r);
        for (int64_t i = 0; i < m; ++i) acc[i * L + r] *= f;
    }
}

// y[i][16t + r] = epilogue(acc...) for the valid columns of tile t.
void store_tile(const LinearJob& job, int64_t t, int64_t m, const float* acc, const float* acc2,
                int64_t row0) {
    const int64_t out = job.w.out;
    for (int64_t i = 0; i < m; ++i) {
        for (int r = 0; r < L; ++r) {
            const int64_t c = t * L + r;
            if (c >= out) break;
            float v = acc[i * L + r] + (job.bias ? job.bias[c] : 0.f);
            if (job.act == kActGelu) {
                v = gelu_ref(v);
            } else if (gated(job.act)) {
                float u = acc2[i * L + r] + (job.bias2 ? job.bias2[c] : 0.f);
                v = (job.act == kActGeglu ? ops::gelu_tanh(v) : ops::silu(v)) * u;
            }
            job.y[(row0 + i) * out + c] = v;
        }
    }
}

}  // namespace

void gemv_generic(const LinearJob& job, int64_t t0, int64_t t1) {
    float acc[kGemvMaxM * L], acc2[kGemvMaxM * L];
    for (int64_t t = t0; t < t1; ++t) {
        for (int64_t i0 = 0; i0 < job.m; i0 += kGemvMaxM) {
            const int64_t mi = job.m - i0 < kGemvMaxM ? job.m - i0 : kGemvMaxM;
            const float* xs = job.xsum ? job.xsum + i0 * num_kblocks(job.w) : nullptr;
            tile_dot(job.w, t, job.x + i0 * job.w.in, mi, acc, xs);
            if (gated(job.act)) tile_dot(job.w2, t, job.x + i0 * job.w.in, mi, acc2, xs);
            store_tile(job, t, mi, acc, acc2, i0);
        }
    }
}

void gemm_generic(const LinearJob& job, int64_t t0, int64_t t1, float* scratch) {
    // The generic level has no register-blocked microkernel: a tile's dot products for all
    // m rows at once (each weight decoded once per row block of kGemvMaxM) are its GEMM.
    const int64_t m = job.m;
    float* acc = scratch;
    float* acc2 = scratch + m * L;
    for (int64_t t = t0; t < t1; ++t) {
        tile_dot(job.w, t, job.x, m, acc, job.xsum);
        if (gated(job.act)) tile_dot(job.w2, t, job.x, m, acc2, job.xsum);
        store_tile(job, t, m, acc, acc2, 0);
    }
}

void sparse_generic(const SparseJob& job, int64_t r0, int64_t r1) {
    const int64_t in = job.in, ng = in / 4;
    for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* meta = job.meta + r * ng;
        for (int64_t i = 0; i < job.m; ++i) {
            const int8_t* xq = job.xq + i * in;
            int32_t acc = 0;
            if (job.int4) {
                const uint8_t* q = reinterpret_cast<const uint8_t*>(job.q) + r * (in / 4);
                for (int64_t g = 0; g < ng; ++g) {
                    const int b = q[g];
                    const int q0 = (b & 0xF) >= 8 ? (b & 0xF) - 16 : (b & 0xF);
                    const int q1 = (b >> 4) >= 8 ? (b >> 4) - 16 : (b >> 4);
                    acc += q0 * xq[4 * g + (meta[g] & 3)] + q1 * xq[4 * g + (meta[g] >> 2)];
                }
            } else {
                const int8_t* q = job.q + r * (in / 2);
                for (int64_t g = 0; g < ng; ++g)
                    acc += q[2 * g] * xq[4 * g + (meta[g] & 3)] + q[2 * g + 1] * xq[4 * g + (meta[g] >> 2)];
            }
            float v = static_cast<float>(acc) * (job.xscale[i] * job.wscale[r]);
            if (job.bias) v += job.bias[r];
            job.y[i * job.out + r] = v;
        }
    }
}

}  // namespace cpu
}  // namespace vt

// Tensor-core GEMM for prefill (and any m > 8): y = epilogue(x · Wᵀ), x [m][K] f32.
//
// Prefill is matrix work: a 64-token tile reuses every weight 64 times, so the kernel is
// bound by the tensor cores, not by HBM. mma.sync.m16n8k16 BF16 (sm_80+, also the portable
// path on sm_89 / sm_90; no cuBLAS, no CUTLASS):
//   * weights are dequantized to BF16 *codes*: an INT8 code (|q| <= 127), a 4-bit code (q in
//     [-8, 7] or u in [0, 15]) and an E4M3 value are BF16 numbers exactly, so the only weight
//     scaling is the f16 block scale, applied in FP32 once per K-block to a per-block partial
//     sum (two mma k-steps per block of 32); INT4_MIN's min · Σx is added in FP32 per mma
//     k-step, with the Σx of each A row over those 16 k summed from the f32 inputs when the
//     tile is stored (a 4-bit thread loads 8 bytes, 16 codes, where an 8-bit one loads 16);
//   * activations are split x = hi + lo, both BF16, and both multiplied (two MMAs): ~16
//     significant bits, so prefill agrees with the CPU's FP32 path far better than a plain BF16
//     GEMM would (~8 bits), at twice the MMA work, which prefill can afford;
//   * 64×64 block tile, BK = 32, 4 warps of 32×32, shared-memory tiles double-buffered with the
//     next tile's global loads in registers during the MMAs; rows padded to 80 bytes so the
//     fragment loads are bank-conflict-free;
//   * the same fused epilogues as the GEMV (epilogue.cuh): C fragments hold output-row pairs.
// (A wgmma/TMA kernel for sm_90a would be faster on Hopper; see docs/cuda.md.)
#include <cuda_bf16.h>

#include <algorithm>

#include "cuda/epilogue.cuh"

namespace vt {
namespace cudak {
namespace {

constexpr int BM = 64, BN = 64, BK = 32;
constexpr int kStride = BK + 8;  // bf16 elements per shared row (80 bytes)
constexpr int kThreads = 128;

struct GemmParams {
    DevLinear w;
    const float* x;
    int64_t ldx;
    int32_t m;
    int32_t x_vec4;
    int32_t row0;  // first row of this launch (a launch covers at most kMaxGridY row tiles)
    Epilogue e;
};

__device__ __forceinline__ uint32_t pack_bf16(float a, float b) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    return *reinterpret_cast<const uint32_t*>(&h);
}

// hi = bf16(a), lo = bf16(a - hi), for two values at once.
__device__ __forceinline__ void split_bf16(float a, float b, uint32_t& hi, uint32_t& lo) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    const float2 hf = __bfloat1622float2(h);
    hi = *reinterpret_cast<const uint32_t*>(&h);
    lo = pack_bf16(a - hf.x, b - hf.y);
}

__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Decodes the 16 codes of one 16-byte word group into 8 packed BF16 pairs (exact values).
template <int FMT>
__device__ __forceinline__ void decode16(const uint4& c, uint32_t (&out)[8]) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const uint32_t w = (&c.x)[j];
        float f0, f1, f2, f3;
        if constexpr (FMT == kDevInt8) {
            f0 = int8x_at<0>(w);
            f1 = int8x_at<1>(w);
            f2 = int8x_at<2>(w);
            f3 = int8x_at<3>(w);
        } else {
            f0 = fp8s_at<0>(w) * kFp8Unscale;
            f1 = fp8s_at<1>(w) * kFp8Unscale;
            f2 = fp8s_at<2>(w) * kFp8Unscale;
            f3 = fp8s_at<3>(w) * kFp8Unscale;
        }
        out[2 * j] = pack_bf16(f0, f1);
        out[2 * j + 1] = pack_bf16(f2, f3);
    }
}

// The 16 4-bit codes of 8 bytes (k .. k + 15; byte b: k + 2b low nibble, k + 2b + 1 high) as 8
// packed BF16 pairs (exact values: q = u - OFF).
template <int OFF>
__device__ __forceinline__ void decode16_4bit(const uint4& c, uint32_t (&out)[8]) {
#pragma unroll
    for (int j = 0; j < 2; ++j) {
        const uint32_t w = (&c.x)[j];
        const uint32_t lo = nib_lo(w), hi = nib_hi(w);
        out[4 * j] = pack_bf16(nib_at<0, OFF>(lo), nib_at<0, OFF>(hi));
        out[4 * j + 1] = pack_bf16(nib_at<1, OFF>(lo), nib_at<1, OFF>(hi));
        out[4 * j + 2] = pack_bf16(nib_at<2, OFF>(lo), nib_at<2, OFF>(hi));
        out[4 * j + 3] = pack_bf16(nib_at<3, OFF>(lo), nib_at<3, OFF>(hi));
    }
}

template <int FMT>
__global__ void __launch_bounds__(kThreads) gemm_kernel(const GemmParams p) {
    constexpr bool kFour = FMT == kDevInt4 || FMT == kDevInt4Min;
    constexpr bool kMins = FMT == kDevInt4Min;
    constexpr bool kScales = FMT == kDevInt8 || FMT == kDevFp8 || kFour;
    constexpr int kEsize = FMT == kDevBf16 ? 2 : 1;
    __shared__ __align__(16) uint16_t a_hi[2][BM][kStride];
    __shared__ __align__(16) uint16_t a_lo[2][BM][kStride];
    __shared__ __align__(16) uint16_t w_s[2][BN][kStride];
    __shared__ float sc_s[2][BN][2];
    __shared__ float mn_s[2][kMins ? BN : 1][2];   // INT4_MIN: the block mins, as sc_s
    __shared__ float xsum_s[2][kMins ? BM : 1][2];  // INT4_MIN: Σx of each A row per 16 k

    pdl_launch_dependents();
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp >> 1, wn = warp & 1, g = lane >> 2, q = lane & 3;
    const LinearShape& s = p.w.s;
    const int n0 = blockIdx.x * BN, m0 = p.row0 + int(blockIdx.y) * BM;
    const int ntiles = s.k_pad / BK;
    const int64_t rowbytes = kFour ? int64_t(s.k_pad) / 2 : int64_t(s.k_pad) * kEsize;

    // Global -> register staging of one tile.
    const int a_row = tid >> 3, a_col = (tid & 7) * 4;                       // A: 4 rows × 4 floats
    const int w_row = tid >> 1, w_col = (tid & 1) * 16;                      // W: 16 codes of a row
    const uint8_t* wptr = p.w.w + int64_t(n0 + w_row) * rowbytes + (kFour ? w_col / 2 : w_col * kEsize);
    float4 ar[4];
    uint4 wr[kEsize];
    float sr[2] = {0.f, 0.f}, mr[2] = {0.f, 0.f};

    auto load_w = [&](int t) {
        const int k0 = t * BK;
        if constexpr (kFour) {
            const uint2 v = ld_stream8(wptr + k0 / 2);
            wr[0] = make_uint4(v.x, v.y, 0u, 0u);
        } else {
#pragma unroll
            for (int e = 0; e < kEsize; ++e) wr[e] = ld_stream16(wptr + int64_t(k0) * kEsize + 16 * e);
        }
        if constexpr (kScales) {
            if (tid < BN) {
                const int64_t b = int64_t(n0 + tid) * s.nkb + k0 / s.kb;
                const uint16_t* sp = p.w.scales + b;
                sr[0] = h2f(sp[0]);
                sr[1] = s.kb == 16 ? h2f(sp[1]) : sr[0];
                if constexpr (kMins) {
                    const uint16_t* mp = p.w.mins + b;
                    mr[0] = h2f(mp[0]);
                    mr[1] = s.kb == 16 ? h2f(mp[1]) : mr[0];
                }
            }
        }
    };
    auto load_a = [&](int t) {
        const int k = t * BK + a_col;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int row = m0 + a_row + 16 * i;
            float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
            if (row < p.m && k < s.k) {
                const float* xr = p.x + int64_t(row) * p.ldx + k;
                if (p.x_vec4 && k + 4 <= s.k) {
                    v = *reinterpret_cast<const float4*>(xr);
                } else {
                    v.x = xr[0];
                    v.y = k + 1 < s.k ? xr[1] : 0.f;
                    v.z = k + 2 < s.k ? xr[2] : 0.f;
                    v.w = k + 3 < s.k ? xr[3] : 0.f;
                }
            }
            ar[i] = v;
        }
    };
    auto store = [&](int buf) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            uint2 hi, lo;
            split_bf16(ar[i].x, ar[i].y, hi.x, lo.x);
            split_bf16(ar[i].z, ar[i].w, hi.y, lo.y);
            *reinterpret_cast<uint2*>(&a_hi[buf][a_row + 16 * i][a_col]) = hi;
            *reinterpret_cast<uint2*>(&a_lo[buf][a_row + 16 * i][a_col]) = lo;
            if constexpr (kMins) {
                // Σx over 16 k: the 4 threads tid & 7 = 0..3 (4..7) hold k 0..15 (16..31) of
                // the row, in adjacent lanes.
                float t = (ar[i].x + ar[i].y) + (ar[i].z + ar[i].w);
                t += __shfl_xor_sync(0xffffffffu, t, 1);
                t += __shfl_xor_sync(0xffffffffu, t, 2);
                if ((tid & 3) == 0) xsum_s[buf][a_row + 16 * i][(tid & 7) >> 2] = t;
            }
        }
        uint4* wd = reinterpret_cast<uint4*>(&w_s[buf][w_row][w_col]);
        if constexpr (FMT == kDevBf16) {
            wd[0] = wr[0];
            wd[1] = wr[1];
        } else {
            uint32_t d[8];
            if constexpr (kFour) decode16_4bit<FMT == kDevInt4 ? 8 : 0>(wr[0], d);
            else decode16<FMT>(wr[0], d);
            wd[0] = make_uint4(d[0], d[1], d[2], d[3]);
            wd[1] = make_uint4(d[4], d[5], d[6], d[7]);
        }
        if constexpr (kScales) {
            if (tid < BN) {
                sc_s[buf][tid][0] = sr[0];
                sc_s[buf][tid][1] = sr[1];
                if constexpr (kMins) {
                    mn_s[buf][tid][0] = mr[0];
                    mn_s[buf][tid][1] = mr[1];
                }
            }
        }
    };

    float acc[2][4][4], blk[2][4][4];
#pragma unroll
    for (int a = 0; a < 2; ++a)
#pragma unroll
        for (int b = 0; b < 4; ++b)
#pragma unroll
            for (int c = 0; c < 4; ++c) acc[a][b][c] = blk[a][b][c] = 0.0f;

    auto compute = [&](int buf, int k0) {
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            uint32_t ah[2][4], al[2][4], b[4][2];
#pragma unroll
            for (int mt = 0; mt < 2; ++mt) {
                const int r = wm * 32 + mt * 16 + g;
                ah[mt][0] = *reinterpret_cast<const uint32_t*>(&a_hi[buf][r][kk + 2 * q]);
                ah[mt][1] = *reinterpret_cast<const uint32_t*>(&a_hi[buf][r + 8][kk + 2 * q]);
                ah[mt][2] = *reinterpret_cast<const uint32_t*>(&a_hi[buf][r][kk + 2 * q + 8]);
                ah[mt][3] = *reinterpret_cast<const uint32_t*>(&a_hi[buf][r + 8][kk + 2 * q + 8]);
                al[mt][0] = *reinterpret_cast<const uint32_t*>(&a_lo[buf][r][kk + 2 * q]);
                al[mt][1] = *reinterpret_cast<const uint32_t*>(&a_lo[buf][r + 8][kk + 2 * q]);
                al[mt][2] = *reinterpret_cast<const uint32_t*>(&a_lo[buf][r][kk + 2 * q + 8]);
                al[mt][3] = *reinterpret_cast<const uint32_t*>(&a_lo[buf][r + 8][kk + 2 * q + 8]);
            }
#pragma unroll
            for (int nt = 0; nt < 4; ++nt) {
                const int n = wn * 32 + nt * 8 + g;
                b[nt][0] = *reinterpret_cast<const uint32_t*>(&w_s[buf][n][kk + 2 * q]);
                b[nt][1] = *reinterpret_cast<const uint32_t*>(&w_s[buf][n][kk + 2 * q + 8]);
            }
#pragma unroll
            for (int mt = 0; mt < 2; ++mt)
#pragma unroll
                for (int nt = 0; nt < 4; ++nt) {
                    float(&c)[4] = kScales ? blk[mt][nt] : acc[mt][nt];
                    mma_bf16(c, ah[mt], b[nt]);
                    mma_bf16(c, al[mt], b[nt]);
                }
            if constexpr (kMins) {  // + min · Σx over these 16 k, straight into acc
                const int sel = s.kb == 16 ? (kk >> 4) : 0, h = kk >> 4;
#pragma unroll
                for (int nt = 0; nt < 4; ++nt) {
                    const int n = wn * 32 + nt * 8 + 2 * q;
                    const float m0 = mn_s[buf][n][sel], m1 = mn_s[buf][n + 1][sel];
#pragma unroll
                    for (int mt = 0; mt < 2; ++mt) {
                        const int r = wm * 32 + mt * 16 + g;
                        const float x0 = xsum_s[buf][r][h], x1 = xsum_s[buf][r + 8][h];
                        acc[mt][nt][0] = fmaf(x0, m0, acc[mt][nt][0]);
                        acc[mt][nt][1] = fmaf(x0, m1, acc[mt][nt][1]);
                        acc[mt][nt][2] = fmaf(x1, m0, acc[mt][nt][2]);
                        acc[mt][nt][3] = fmaf(x1, m1, acc[mt][nt][3]);
                    }
                }
            }
            if constexpr (kScales) {
                if ((k0 + kk + 16) % s.kb == 0) {  // a scale block ends: fold it in
                    const int sel = s.kb == 16 ? (kk >> 4) : 0;
#pragma unroll
                    for (int nt = 0; nt < 4; ++nt) {
                        const int n = wn * 32 + nt * 8 + 2 * q;
                        const float s0 = sc_s[buf][n][sel], s1 = sc_s[buf][n + 1][sel];
#pragma unroll
                        for (int mt = 0; mt < 2; ++mt) {
                            acc[mt][nt][0] = fmaf(blk[mt][nt][0], s0, acc[mt][nt][0]);
                            acc[mt][nt][1] = fmaf(blk[mt][nt][1], s1, acc[mt][nt][1]);
                            acc[mt][nt][2] = fmaf(blk[mt][nt][2], s0, acc[mt][nt][2]);
                            acc[mt][nt][3] = fmaf(blk[mt][nt][3], s1, acc[mt][nt][3]);
                            blk[mt][nt][0] = blk[mt][nt][1] = blk[mt][nt][2] = blk[mt][nt][3] = 0.0f;
                        }
                    }
                }
            }
        }
    };

    load_w(0);  // weights do not depend on the previous kernel
    pdl_wait_after(wr[0].x);
    load_a(0);
    store(0);
    __syncthreads();
    for (int t = 0; t < ntiles; ++t) {
        const bool more = t + 1 < ntiles;
        if (more) {
            load_w(t + 1);
            load_a(t + 1);
        }
        compute(t & 1, t * BK);
        if (more) store((t + 1) & 1);
        __syncthreads();
    }

    // Epilogue. The GEMM decodes true FP8 values, so no `post` factor here.
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) {
        const int n = n0 + wn * 32 + nt * 8 + 2 * q;
        const float rm0 = p.w.rowmul[n], rm1 = p.w.rowmul[n + 1];
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) {
            const int i0 = m0 + wm * 32 + mt * 16 + g;
            if (i0 < p.m) epi_pair(p.e, i0, n, s.n, acc[mt][nt][0] * rm0, acc[mt][nt][1] * rm1);
            if (i0 + 8 < p.m) epi_pair(p.e, i0 + 8, n, s.n, acc[mt][nt][2] * rm0, acc[mt][nt][3] * rm1);
        }
    }
}

// xb[b][i][k] = bf16(x[i][k]) where (k / kb) % phases == b and k < k, else 0; one thread per
// pair of k (kb is even: a pair never straddles two blocks), writing it into every pass.
__global__ void to_bf16_kernel(const float* x, int64_t ldx, int m, int k, int k_pad, int phases, int kb,
                               uint32_t* xb) {
    pdl_launch_dependents();
    pdl_wait();
    const int64_t pairs = k_pad / 2;
    const int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (t >= int64_t(m) * pairs) return;
    const int64_t i = t / pairs;
    const int j = int(t % pairs) * 2;
    const float* xr = x + i * ldx;
    const float a = j < k ? xr[j] : 0.0f, b = j + 1 < k ? xr[j + 1] : 0.0f;
    const uint32_t v = pack_bf16(a, b);
    const int mine = phases > 1 ? (j / kb) % phases : 0;
    for (int ph = 0; ph < phases; ++ph) xb[int64_t(ph) * m * pairs + t] = ph == mine ? v : 0u;
}

// The epilogue of d = x · Wᵀ (f32, pitch ldd, the passes' partial products added in pass
// order): one thread per output pair, as gemm_kernel's.
__global__ void gemm_finish_kernel(const DevLinear w, const float* d, int64_t ldd, int m, int phases,
                                   int64_t d_phase, const Epilogue e) {
    pdl_launch_dependents();
    pdl_wait();
    const int64_t pairs = w.s.n_pad / 2;
    const int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (t >= int64_t(m) * pairs) return;
    const int i = int(t / pairs);
    const int n = int(t % pairs) * 2;
    const float* dr = d + int64_t(i) * ldd + n;
    float v0 = dr[0], v1 = dr[1];
    for (int ph = 1; ph < phases; ++ph) {
        v0 += dr[int64_t(ph) * d_phase];
        v1 += dr[int64_t(ph) * d_phase + 1];
    }
    epi_pair(e, i, n, w.s.n, v0 * w.rowmul[n], v1 * w.rowmul[n + 1]);
}

}  // namespace

void to_bf16_rows(const LaunchCfg& cfg, const float* x, int64_t ldx, int m, int k, int k_pad, int phases, int kb,
                  uint16_t* xb) {
    if (m < 1 || k < 1 || k_pad < k || k_pad % 2 != 0 || phases < 1 || kb < 2 || kb % 2 != 0)
        throw Error(VT_STATUS_INTERNAL, "to_bf16_rows: bad shape");
    const int64_t threads = int64_t(m) * (k_pad / 2);
    launch(cfg, "to_bf16_rows", to_bf16_kernel, dim3(unsigned((threads + 255) / 256)), dim3(256), 0, x, ldx, m, k,
           k_pad, phases, kb, reinterpret_cast<uint32_t*>(xb));
}

void gemm_finish(const LaunchCfg& cfg, const DevLinear& w, const float* d, int64_t ldd, int m, int phases,
                 int64_t d_phase, const Epilogue& e) {
    if (m < 1 || phases < 1) fail(VT_STATUS_INTERNAL, "gemm_finish: m %d, passes %d", m, phases);
    if (e.argmax) throw Error(VT_STATUS_INTERNAL, "gemm_finish: the argmax epilogue is GEMV-only");
    const int64_t threads = int64_t(m) * (w.s.n_pad / 2);
    launch(cfg, "gemm_finish", gemm_finish_kernel, dim3(unsigned((threads + 255) / 256)), dim3(256), 0, w, d, ldd, m,
           phases, d_phase, e);
}

void gemm(const LaunchCfg& cfg, const DevLinear& w, const float* x, int64_t ldx, int m, const Epilogue& e) {
    if (m < 1) throw Error(VT_STATUS_INTERNAL, "gemm: m < 1");
    if (e.argmax) throw Error(VT_STATUS_INTERNAL, "gemm: the argmax epilogue is GEMV-only");
    GemmParams p;
    p.w = w;
    p.x = x;
    p.ldx = ldx;
    p.m = m;
    p.x_vec4 = (ldx % 4 == 0) && (reinterpret_cast<uintptr_t>(x) % 16 == 0);
    p.e = e;
    // Row tiles go on the grid's y dimension (at most kMaxGridY): more than ~4.19M rows take
    // several launches, each starting at p.row0; rows stay absolute inside the kernel.
    const int64_t tiles = (int64_t(m) + BM - 1) / BM;
    for (int64_t t0 = 0; t0 < tiles; t0 += kMaxGridY) {
        p.row0 = int32_t(t0 * BM);
        const dim3 grid(unsigned(w.s.n_pad / BN), unsigned(std::min<int64_t>(kMaxGridY, tiles - t0)));
        switch (w.s.fmt) {
            case kDevInt8: launch(cfg, "gemm", gemm_kernel<kDevInt8>, grid, dim3(kThreads), 0, p); break;
            case kDevFp8: launch(cfg, "gemm", gemm_kernel<kDevFp8>, grid, dim3(kThreads), 0, p); break;
            case kDevFp8Channel: launch(cfg, "gemm", gemm_kernel<kDevFp8Channel>, grid, dim3(kThreads), 0, p); break;
            case kDevInt4: launch(cfg, "gemm", gemm_kernel<kDevInt4>, grid, dim3(kThreads), 0, p); break;
            case kDevInt4Min: launch(cfg, "gemm", gemm_kernel<kDevInt4Min>, grid, dim3(kThreads), 0, p); break;
            default: launch(cfg, "gemm", gemm_kernel<kDevBf16>, grid, dim3(kThreads), 0, p); break;
        }
    }
}

}  // namespace cudak
}  // namespace vt

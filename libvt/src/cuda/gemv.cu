// W8A16 / W4A16 GEMV for decode (m <= 8 input rows): y = epilogue(x · Wᵀ).
//
// Bandwidth reasoning. At batch 1 every weight byte is read once per token and nothing else
// is comparable in size, so the kernel's job is to keep HBM busy: on an H100 (~3.3 TB/s, 132
// SMs, ~1.7 GHz) that is ~14 bytes per clock per SM, and by Little's law ~20-25 KB of loads
// in flight per SM (latency ~1 µs under load). Hence:
//   * each lane loads 16 bytes (16 INT8/FP8 weights or 8 BF16) of one row per instruction, the
//     32 lanes of a warp 512 contiguous bytes (layout.h: rows are contiguous on the device);
//   * a warp owns 2 rows; each lane keeps 2 rows × U chunks in flight and, double-buffered,
//     issues the next U chunks before it computes the current ones (no register moves between
//     the buffers: the loop is unrolled by two), so loads never wait on arithmetic;
//   * the first chunks are requested before pdl_wait(): with programmatic dependent launch the
//     weight stream of this kernel starts while the previous kernel finishes;
//   * decoding is PRMT/LOP/FADD work (device_math.h), not the slow conversion pipe; 16 products
//     of one 16-weight chunk share one block scale, so a scale costs one FMA per 16 weights;
//   * the activations (f32, the CPU's precision) are staged in shared memory, swizzled so that
//     the 4 float4 reads per chunk are conflict-free; a fused RMSNorm stages x · norm_w and sums
//     x² in the same pass, and rstd scales each row's result at the end (no separate pass
//     over x before the staging);
//   * where all of K fits one staging, a block takes several row groups in turn (the grid is
//     at most the blocks resident at once): x is staged once per block instead of once per 8
//     rows, and the next group's weights are loaded while the last chunks of this one are
//     computed and stored, so a big matrix is one weight stream per warp, not thousands of
//     short blocks each paying the staging's round trips;
//   * FP32 accumulation, one warp reduction per row at the end, fused epilogue per row pair.
// The 4-bit formats (INT4, INT4_MIN) run the same kernel: a 16-byte chunk is 32 weights, whose
// two halves of 16 each lie in one scale block (layout.h: kb >= 16, K padded to whole blocks),
// so a chunk costs two scale FMAs (kb 16: two scales in one 4-byte load; else one scale). The
// INT4_MIN term min · Σx is per half too: the staging writes the sums of x over each 16 k to
// shared memory (xsum), and a half adds min · xsum with one more FMA per row, as the CPU adds
// min · (its block sum of x) once per block. Fewer chunks per lane are in flight for m > 1
// than at 8 bits (the staged x covers twice the K per chunk), but as many bytes for m = 1.
// Blocks of 4 warps (8 rows, a "row group"). VT_CUDA_LEGACY_KERNELS=1 runs the kernel as before
// 2026-11-26 (one row group per block, a separate RMSNorm pass, scalar staging).
// VT_CUDA_INT4_FOUR_ROWS=1 (2026-11-27, opt-in until timed on a GPU): the 4-bit formats at
// m = 1 give each warp 4 rows with half as many chunks of each in flight (16-row groups): at
// K = 2048 a two-row 4-bit iteration found half its chunks past the end of the rows, so it
// moved half the bytes of an 8-bit one in the same time.
#include <atomic>
#include <type_traits>

#include "cuda/epilogue.cuh"

namespace vt {
namespace cudak {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
// A warp takes RPW rows (2; the 4-bit formats at m = 1 take 4 with VT_CUDA_INT4_FOUR_ROWS):
// a block's row group is kWarps · RPW rows.
constexpr int rows_per_block(int rpw) { return kWarps * rpw; }
constexpr int kSmemFloats = 8192;  // 32 KB of staged activations
// At least 3 blocks per SM for the current kernels (a cap of 168 registers): without it ptxas
// gave INT4_MIN m = 1 203; with 4 (128) every variant spilled.
constexpr int kGemvMinBlocks = 3;

struct GemvParams {
    DevLinear w;
    const float* x;
    int64_t ldx;
    int32_t m;
    int32_t x_vec4;  // x rows are 16-byte aligned: the stagings use float4 loads
    int32_t nw_vec4; // norm_w is 16-byte aligned
    int32_t nrg;     // row groups (rows_per_block(RPW) rows each): n_pad / rows_per_block(RPW)
    int32_t evict_first;  // weights and scales streamed with an L2 evict-first policy (l2_evict_first())
    const float* norm_w;
    float eps;
    Epilogue e;
};

template <int FMT>
struct FmtTraits {
    static constexpr bool kFour = FMT == kDevInt4 || FMT == kDevInt4Min;
    static constexpr int kEpc = FMT == kDevBf16 ? 8 : kFour ? 32 : 16;  // weights per 16-byte chunk
    static constexpr bool kScales = FMT == kDevInt8 || FMT == kDevFp8 || kFour;
    static constexpr bool kMins = FMT == kDevInt4Min;
    static constexpr bool kPrescale = FMT == kDevFp8 || FMT == kDevFp8Channel;
    // Per chunk and row: one f16 scale, or for 4-bit the two halves' f16 scales (low, high).
    using Sc = typename std::conditional<kFour, uint32_t, uint16_t>::type;
};

// The loop's shape for a format and m (the host reads KC: a block may take several row groups
// only if all of K fits one staging). U: chunks per lane and row per iteration, 4 (2 for m = 8),
// fewer where one iteration's x would not fit the staging buffer (4-bit chunks cover 32 k);
// IC: chunks per iteration (per row); KC: k staged at a time, a multiple of IC chunks. With
// four rows per warp (RPW 4) half as many chunks per row, so as many loads are in flight.
template <int FMT, int M, int RPW = 2>
struct GemvTile {
    static constexpr int EPC = FmtTraits<FMT>::kEpc;
    static constexpr int U0 = (M >= 8 ? 2 : 4) * 2 / RPW, UF = kSmemFloats / (M * 32 * EPC);
    static constexpr int U = UF < 1 ? 1 : UF < U0 ? UF : U0;
    static constexpr int IC = 32 * U;
    static constexpr int KC = IC * EPC * (kSmemFloats / (M * IC * EPC) > 0 ? kSmemFloats / (M * IC * EPC) : 1);
};

// Four weights of 32-bit word j of a chunk times x[0..3], accumulated into acc.
template <int FMT>
__device__ __forceinline__ float dot4(const uint4& c, int j, const float4& x, float acc) {
    if constexpr (FMT == kDevBf16) {
        const uint32_t w0 = (&c.x)[2 * j], w1 = (&c.x)[2 * j + 1];
        acc = fmaf(bf16_at<0>(w0), x.x, acc);
        acc = fmaf(bf16_at<1>(w0), x.y, acc);
        acc = fmaf(bf16_at<0>(w1), x.z, acc);
        acc = fmaf(bf16_at<1>(w1), x.w, acc);
    } else if constexpr (FMT == kDevInt8) {
        const uint32_t w = (&c.x)[j];
        acc = fmaf(int8x_at<0>(w), x.x, acc);
        acc = fmaf(int8x_at<1>(w), x.y, acc);
        acc = fmaf(int8x_at<2>(w), x.z, acc);
        acc = fmaf(int8x_at<3>(w), x.w, acc);
    } else {
        const uint32_t w = (&c.x)[j];
        acc = fmaf(fp8s_at<0>(w), x.x, acc);
        acc = fmaf(fp8s_at<1>(w), x.y, acc);
        acc = fmaf(fp8s_at<2>(w), x.z, acc);
        acc = fmaf(fp8s_at<3>(w), x.w, acc);
    }
    return acc;
}

// The 8 weights of a word of 4-bit codes (k, ..., k + 7), decoded: byte b holds k + 2b in its
// low nibble and k + 2b + 1 in its high one.
template <int OFF>
__device__ __forceinline__ void decode8(uint32_t w, float (&f)[8]) {
    const uint32_t lo = nib_lo(w), hi = nib_hi(w);
    f[0] = nib_at<0, OFF>(lo);
    f[1] = nib_at<0, OFF>(hi);
    f[2] = nib_at<1, OFF>(lo);
    f[3] = nib_at<1, OFF>(hi);
    f[4] = nib_at<2, OFF>(lo);
    f[5] = nib_at<2, OFF>(hi);
    f[6] = nib_at<3, OFF>(lo);
    f[7] = nib_at<3, OFF>(hi);
}

__device__ __forceinline__ float dot8(const float (&f)[8], const float4& a, const float4& b, float acc) {
    acc = fmaf(f[0], a.x, acc);
    acc = fmaf(f[1], a.y, acc);
    acc = fmaf(f[2], a.z, acc);
    acc = fmaf(f[3], a.w, acc);
    acc = fmaf(f[4], b.x, acc);
    acc = fmaf(f[5], b.y, acc);
    acc = fmaf(f[6], b.z, acc);
    acc = fmaf(f[7], b.w, acc);
    return acc;
}

// The f16 pair (half 0, half 1) of chunk c of a 4-bit row's scales or mins: kb 16 gives each
// half its own block (one aligned 4-byte load: nkb is even); a larger kb one block for both.
__device__ __forceinline__ uint32_t ld_half_pair(const uint16_t* row, int c, bool kb16, int cshift, uint64_t pol) {
    if (kb16) return ld_stream4(row + 2 * c, pol);
    const uint32_t v = ld_stream2(row + (c >> cshift), pol);
    return v | (v << 16);
}

// LEGACY: x staged as before 2026-11-26 (VT_CUDA_LEGACY_KERNELS=1, see kernels.h). RPW: rows
// per warp (2; 4 for the 4-bit formats with VT_CUDA_INT4_FOUR_ROWS, see launch_fmt).
template <int FMT, int M, bool LEGACY, int RPW = 2>
__global__ void __launch_bounds__(kThreads, LEGACY ? 1 : kGemvMinBlocks) gemv_kernel(const GemvParams p) {
    using T = FmtTraits<FMT>;
    using Sc = typename T::Sc;
    constexpr int EPC = T::kEpc, UPC = EPC / 4;
    static_assert(RPW == 2 || RPW == 4, "rows per warp");
    using Tile = GemvTile<FMT, M, RPW>;
    constexpr int U = Tile::U, IC = Tile::IC, KC = Tile::KC;
    static_assert(M * KC <= kSmemFloats, "staging buffer too small");
    constexpr int KH = KC / 32;        // 4-bit: chunks per stage, i.e. halves of each parity
    __shared__ __align__(16) float4 xs[kSmemFloats / 4];  // [M][KC/4], swizzled units
    __shared__ float xsum[T::kMins ? M * KC / 16 : 1];    // INT4_MIN: [M][2][KH] Σx per 16 k
    __shared__ float red[kWarps][M];
    __shared__ float rstd[M];
    __shared__ unsigned long long best_s[kWarps];

    pdl_launch_dependents();
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const LinearShape& s = p.w.s;
    const int64_t rowbytes = T::kFour ? int64_t(s.k_pad) / 2 : int64_t(s.k_pad) * (FMT == kDevBf16 ? 2 : 1);
    const int nchunks = s.k_pad / EPC;
    // chunk -> scale block: kb is 2^i · EPC (8-bit), or 16 or 2^i · 32 (4-bit, per half).
    const bool kb16 = T::kFour && s.kb == 16;
    const int kb_shift = (T::kScales && !kb16) ? __ffs(s.kb / EPC) - 1 : 0;
    const uint64_t pol = l2_policy(p.evict_first != 0);

    // Iterations: a row group (the block's rows_per_block(RPW) rows, RPW per warp) takes ipr iterations
    // of IC chunks per row; the block takes row groups blockIdx.x, blockIdx.x + gridDim.x, ...
    // as one sequence of iterations, so the next group's weights are in flight while this
    // one's last chunks are computed and its results stored. The host launches fewer blocks
    // than row groups only where all of K fits one staging (x is staged once per block) and
    // never for LEGACY (one group per block, as before 2026-11-26).
    const int ipr = (nchunks + IC - 1) / IC;
    const int ngroups = (p.nrg - int(blockIdx.x) + int(gridDim.x) - 1) / int(gridDim.x);
    const int niter = ngroups * ipr;
    auto group_row0 = [&](int t) { return ((int(blockIdx.x) + (t / ipr) * int(gridDim.x)) * kWarps + warp) * RPW; };

    uint4 wa[RPW][U], wb[RPW][U];
    Sc sa[RPW][U], sb[RPW][U];
    uint32_t ma[RPW][U], mb[RPW][U];  // INT4_MIN: f16 pairs of the halves' mins (unused otherwise)
    // The weights (and scales, mins) of iteration t.
    auto load = [&](uint4 (&w)[RPW][U], Sc (&sc)[RPW][U], uint32_t (&mn)[RPW][U], int t) {
        const int row0 = group_row0(t), c0 = (t % ipr) * IC;
        const uint8_t* wrow[RPW];
        const uint16_t* srow[RPW];
        const uint16_t* mrow[RPW];
#pragma unroll
        for (int r = 0; r < RPW; ++r) {
            wrow[r] = p.w.w + int64_t(row0 + r) * rowbytes;
            srow[r] = T::kScales ? p.w.scales + int64_t(row0 + r) * s.nkb : nullptr;
            mrow[r] = T::kMins ? p.w.mins + int64_t(row0 + r) * s.nkb : nullptr;
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int c = c0 + u * 32 + lane;
            const bool ok = c < nchunks;
#pragma unroll
            for (int r = 0; r < RPW; ++r) {
                w[r][u] = ok ? ld_stream16(wrow[r] + int64_t(c) * 16, pol) : make_uint4(0, 0, 0, 0);
                if constexpr (T::kFour) {
                    sc[r][u] = ok ? ld_half_pair(srow[r], c, kb16, kb_shift, pol) : 0u;
                    if constexpr (T::kMins) mn[r][u] = ok ? ld_half_pair(mrow[r], c, kb16, kb_shift, pol) : 0u;
                } else if constexpr (T::kScales) {
                    sc[r][u] = ok ? ld_stream2(srow[r] + (c >> kb_shift), pol) : uint16_t(0);
                }
            }
        }
    };

    // The first weights are requested before waiting for the previous kernel (see common.cuh).
    load(wa, sa, ma, 0);
    pdl_wait_after(wa[0][0].x);

    // LEGACY RMSNorm prologue: rstd of each input row over the full K, applied in the staging.
    // The new staging instead sums the squares of x as it loads it, stages x · norm_w, and the
    // rstd multiplies each row's result at the end (a scalar per input row): one pass over x.
    if (LEGACY && p.norm_w) {
#pragma unroll
        for (int mi = 0; mi < M; ++mi) {
            float ss = 0.0f;
            if (mi < p.m) {
                const float* xr = p.x + int64_t(mi) * p.ldx;
                for (int k = tid; k < s.k; k += kThreads) ss = fmaf(xr[k], xr[k], ss);
            }
            ss = warp_sum(ss);
            if (lane == 0) red[warp][mi] = ss;
        }
        __syncthreads();
        if (tid < M) {
            float t = 0.0f;
#pragma unroll
            for (int w = 0; w < kWarps; ++w) t += red[w][tid];
            rstd[tid] = 1.0f / sqrtf(t / float(s.k) + p.eps);
        }
    }

    // Unit u (4 k) of input row mi into the staging buffer (swizzled); for INT4_MIN also the sum
    // over its 16-k group (4 consecutive units = 4 adjacent lanes: every lane of the warp calls
    // this together, as both stagings below do).
    auto put = [&](int mi, int u, const float4& v) {
        constexpr int units = KC / 4;
        xs[mi * units + xs_unit(u / UPC, u % UPC, UPC)] = v;
        if constexpr (T::kMins) {
            float t = (v.x + v.y) + (v.z + v.w);
            t += __shfl_xor_sync(0xffffffffu, t, 1);
            t += __shfl_xor_sync(0xffffffffu, t, 2);
            const int h = u >> 2;  // 16-k group in the stage: chunk h / 2, half h % 2
            if ((u & 3) == 0) xsum[mi * 2 * KH + (h & 1) * KH + (h >> 1)] = t;
        }
    };

    // Stages x[:, k0 .. k0 + KC) (times norm_w, pre-scaled, zero past K) into xs; with norm_w,
    // also the sums of squares of x (ssq, this thread's, over every stage so far) and their
    // warp sums in red (read at the end of a row group: rstd). A thread takes SU units (4 k
    // each) at a time and issues all their loads (x and the norm weights; float4 where x and
    // norm_w are 16-byte aligned and K % 4 == 0) before using any: for K = 2048 one memory
    // round trip. The loads are unconditional, at indices clamped into the row and to the
    // last input row (always in bounds), and what lies past K or past m is masked to 0
    // afterwards: a branch between the loads would keep the compiler from issuing them
    // together.
    float ssq[M];
#pragma unroll
    for (int mi = 0; mi < M; ++mi) ssq[mi] = 0.0f;
    auto stage_batched = [&](int k0) {
        __syncthreads();
        constexpr int units = KC / 4;
        constexpr int SU = 2;  // 4 raised int8 m = 1 to 200 registers (2 blocks per SM)
        const int klast = s.k - 1;
        const bool v4 = p.x_vec4 && s.k % 4 == 0 && (!p.norm_w || p.nw_vec4);  // uniform
        const int ulast = s.k / 4 - 1;  // the last unit of x (v4)
        // Units the compute reads (chunks below k_pad), rounded up to whole warps: the rest of
        // the buffer is never read, and the loops below stay uniform per warp.
        const int need = min(units, ((s.k_pad - k0) / 4 + 31) / 32 * 32);
#pragma unroll
        for (int mi = 0; mi < M; ++mi) {
            const bool live = mi < p.m;
            const float* xr = p.x + int64_t(live ? mi : p.m - 1) * p.ldx;
            for (int u0 = tid; u0 < need; u0 += SU * kThreads) {
                float xv[SU][4], nv[SU][4];
                if (v4) {
#pragma unroll
                    for (int i = 0; i < SU; ++i) {
                        const int ux = min(k0 / 4 + u0 + i * kThreads, ulast);
                        const float4 t = *reinterpret_cast<const float4*>(xr + 4 * ux);
                        xv[i][0] = t.x, xv[i][1] = t.y, xv[i][2] = t.z, xv[i][3] = t.w;
                    }
                    if (p.norm_w) {
#pragma unroll
                        for (int i = 0; i < SU; ++i) {
                            const int ux = min(k0 / 4 + u0 + i * kThreads, ulast);
                            const float4 t = *reinterpret_cast<const float4*>(p.norm_w + 4 * ux);
                            nv[i][0] = t.x, nv[i][1] = t.y, nv[i][2] = t.z, nv[i][3] = t.w;
                        }
                    }
                } else {
#pragma unroll
                    for (int i = 0; i < SU; ++i)
#pragma unroll
                        for (int e = 0; e < 4; ++e) xv[i][e] = xr[min(k0 + 4 * (u0 + i * kThreads) + e, klast)];
                    if (p.norm_w) {
#pragma unroll
                        for (int i = 0; i < SU; ++i)
#pragma unroll
                            for (int e = 0; e < 4; ++e)
                                nv[i][e] = p.norm_w[min(k0 + 4 * (u0 + i * kThreads) + e, klast)];
                    }
                }
#pragma unroll
                for (int i = 0; i < SU; ++i) {
                    const int u = u0 + i * kThreads;
                    if (u >= need) break;  // uniform per warp: need is a multiple of 32
                    const int k = k0 + 4 * u;
                    float f[4];
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const bool keep = live && k + e < s.k;
                        float t = xv[i][e];
                        if (p.norm_w) {
                            ssq[mi] = fmaf(keep ? t : 0.0f, t, ssq[mi]);
                            t *= nv[i][e];
                        }
                        if constexpr (T::kPrescale) t *= kFp8XPre;
                        f[e] = keep ? t : 0.0f;
                    }
                    put(mi, u, make_float4(f[0], f[1], f[2], f[3]));
                }
            }
        }
        if (p.norm_w) {
#pragma unroll
            for (int mi = 0; mi < M; ++mi) {
                const float w = warp_sum(ssq[mi]);
                if (lane == 0) red[warp][mi] = w;
            }
        }
        __syncthreads();
    };

    // The staging as it was before 2026-11-26 (VT_CUDA_LEGACY_KERNELS=1): one unit's loads per
    // round trip, over the whole buffer.
    auto stage_legacy = [&](int k0) {
        __syncthreads();
        constexpr int units = KC / 4;
#pragma unroll
        for (int mi = 0; mi < M; ++mi) {
            const float* xr = p.x + int64_t(mi) * p.ldx;
            const float rs = p.norm_w ? rstd[mi] : 1.0f;
            for (int u = tid; u < units; u += kThreads) {
                const int k = k0 + 4 * u;
                float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
                if (mi < p.m && k < s.k) {
                    if (p.x_vec4 && k + 4 <= s.k) {
                        v = *reinterpret_cast<const float4*>(xr + k);
                    } else {
                        v.x = xr[k];
                        v.y = k + 1 < s.k ? xr[k + 1] : 0.f;
                        v.z = k + 2 < s.k ? xr[k + 2] : 0.f;
                        v.w = k + 3 < s.k ? xr[k + 3] : 0.f;
                    }
                    if (p.norm_w) {
                        const float* nw = p.norm_w + k;
                        v.x = v.x * rs * nw[0];
                        v.y = k + 1 < s.k ? v.y * rs * nw[1] : 0.f;
                        v.z = k + 2 < s.k ? v.z * rs * nw[2] : 0.f;
                        v.w = k + 3 < s.k ? v.w * rs * nw[3] : 0.f;
                    }
                    if constexpr (T::kPrescale) {
                        v.x *= kFp8XPre;
                        v.y *= kFp8XPre;
                        v.z *= kFp8XPre;
                        v.w *= kFp8XPre;
                    }
                }
                put(mi, u, v);
            }
        }
        __syncthreads();
    };

    auto stage = [&](int k0) {
        if constexpr (LEGACY) stage_legacy(k0);
        else stage_batched(k0);
    };

    float acc[RPW][M];
#pragma unroll
    for (int r = 0; r < RPW; ++r)
#pragma unroll
        for (int mi = 0; mi < M; ++mi) acc[r][mi] = 0.0f;

    auto compute = [&](const uint4 (&w)[RPW][U], const Sc (&sc)[RPW][U], const uint32_t (&mn)[RPW][U], int c0,
                       int cbase) {
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int c = c0 + u * 32 + lane;
            if (c >= nchunks) break;
            const int cr = c - cbase;  // chunk index inside the staged range
            if constexpr (T::kFour) {
#pragma unroll
                for (int h = 0; h < 2; ++h) {  // the chunk's two halves of 16 weights
                    float part[RPW][M];
#pragma unroll
                    for (int r = 0; r < RPW; ++r)
#pragma unroll
                        for (int mi = 0; mi < M; ++mi) part[r][mi] = 0.0f;
#pragma unroll
                    for (int j = 2 * h; j < 2 * h + 2; ++j) {  // word j: x units 2j, 2j + 1
                        float f[RPW][8];  // decoded once, used by every input row
#pragma unroll
                        for (int r = 0; r < RPW; ++r) decode8<FMT == kDevInt4 ? 8 : 0>((&w[r][u].x)[j], f[r]);
#pragma unroll
                        for (int mi = 0; mi < M; ++mi) {
                            const float4 xa = xs[mi * (KC / 4) + xs_unit(cr, 2 * j, UPC)];
                            const float4 xb = xs[mi * (KC / 4) + xs_unit(cr, 2 * j + 1, UPC)];
#pragma unroll
                            for (int r = 0; r < RPW; ++r) part[r][mi] = dot8(f[r], xa, xb, part[r][mi]);
                        }
                    }
#pragma unroll
                    for (int r = 0; r < RPW; ++r) {
                        const float scale = h2f(uint16_t(sc[r][u] >> (16 * h)));
#pragma unroll
                        for (int mi = 0; mi < M; ++mi) acc[r][mi] = fmaf(part[r][mi], scale, acc[r][mi]);
                        if constexpr (T::kMins) {
                            const float mv = h2f(uint16_t(mn[r][u] >> (16 * h)));
#pragma unroll
                            for (int mi = 0; mi < M; ++mi)
                                acc[r][mi] = fmaf(xsum[mi * 2 * KH + h * KH + cr], mv, acc[r][mi]);
                        }
                    }
                }
            } else {
                float part[RPW][M];
#pragma unroll
                for (int r = 0; r < RPW; ++r)
#pragma unroll
                    for (int mi = 0; mi < M; ++mi) part[r][mi] = T::kScales ? 0.0f : acc[r][mi];
#pragma unroll
                for (int j = 0; j < UPC; ++j) {
                    float4 xv[M];
#pragma unroll
                    for (int mi = 0; mi < M; ++mi) xv[mi] = xs[mi * (KC / 4) + xs_unit(cr, j, UPC)];
#pragma unroll
                    for (int r = 0; r < RPW; ++r)
#pragma unroll
                        for (int mi = 0; mi < M; ++mi) part[r][mi] = dot4<FMT>(w[r][u], j, xv[mi], part[r][mi]);
                }
#pragma unroll
                for (int r = 0; r < RPW; ++r) {
                    if constexpr (T::kScales) {
                        const float scale = h2f(sc[r][u]);
#pragma unroll
                        for (int mi = 0; mi < M; ++mi) acc[r][mi] = fmaf(part[r][mi], scale, acc[r][mi]);
                    } else {
#pragma unroll
                        for (int mi = 0; mi < M; ++mi) acc[r][mi] = part[r][mi];
                    }
                }
            }
        }
    };

    // The end of a row group: each row's sum over its lanes, times rstd (new staging with
    // norm_w), the epilogue; acc restarts for the next group.
    unsigned long long best = 0;
    auto finish = [&](int t) {
        const int row0 = group_row0(t);
#pragma unroll
        for (int r = 0; r < RPW; ++r)
#pragma unroll
            for (int mi = 0; mi < M; ++mi) acc[r][mi] = warp_sum(acc[r][mi]);
        float rm[RPW];
#pragma unroll
        for (int r = 0; r < RPW; ++r) rm[r] = p.w.rowmul[row0 + r];
#pragma unroll
        for (int mi = 0; mi < M; ++mi) {
            if (lane == mi && mi < p.m) {
                float rs = 1.0f;
                if (!LEGACY && p.norm_w) {
                    float t2 = 0.0f;
#pragma unroll
                    for (int w = 0; w < kWarps; ++w) t2 += red[w][mi];
                    rs = 1.0f / sqrtf(t2 / float(s.k) + p.eps);
                }
#pragma unroll
                for (int q = 0; q < RPW; q += 2) {  // the warp's row pairs, each one epilogue call
                    const float v0 = (acc[q][mi] * rs * s.post) * rm[q];
                    const float v1 = (acc[q + 1][mi] * rs * s.post) * rm[q + 1];
                    const unsigned long long k = epi_pair(p.e, mi, row0 + q, s.n, v0, v1);
                    best = k > best ? k : best;
                }
            }
        }
#pragma unroll
        for (int r = 0; r < RPW; ++r)
#pragma unroll
            for (int mi = 0; mi < M; ++mi) acc[r][mi] = 0.0f;
    };

    // Main loop over the block's iterations, unrolled by two so the two register buffers
    // alternate without copies. x is staged at the start of each KC of K in the first row
    // group (the only one where K needs several stagings: see above).
    int cbase = 0;
    auto maybe_stage = [&](int t) {
        const int c0 = (t % ipr) * IC;
        if (t < ipr && (c0 * EPC) % KC == 0) {
            cbase = c0;
            stage(c0 * EPC);
        }
    };
    for (int t = 0; t < niter; t += 2) {
        maybe_stage(t);
        if (t + 1 < niter) load(wb, sb, mb, t + 1);
        compute(wa, sa, ma, (t % ipr) * IC, cbase);
        if (t % ipr == ipr - 1) finish(t);
        if (t + 1 >= niter) break;
        maybe_stage(t + 1);
        if (t + 2 < niter) load(wa, sa, ma, t + 2);
        compute(wb, sb, mb, ((t + 1) % ipr) * IC, cbase);
        if ((t + 1) % ipr == ipr - 1) finish(t + 1);
    }

    if (p.e.argmax) {  // uniform: one atomic per block
        best = warp_max_u64(best);
        if (lane == 0) best_s[warp] = best;
        __syncthreads();
        if (tid == 0) {
            unsigned long long b = best_s[0];
#pragma unroll
            for (int w = 1; w < kWarps; ++w) b = best_s[w] > b ? best_s[w] : b;
            if (b) atomicMax(p.e.argmax, b);
        }
    }
}

// Blocks of this kernel resident on the current device at once (SMs × blocks per SM), found
// once per device; 0 if the runtime cannot say.
template <int FMT, int M, bool LEGACY, int RPW>
int resident_blocks() {
    constexpr int kDevs = 64;
    static std::atomic<int> cache[kDevs];
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0) return 0;
    if (dev < kDevs) {
        const int c = cache[dev].load(std::memory_order_relaxed);
        if (c > 0) return c;
    }
    int sms = 0, per_sm = 0;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gemv_kernel<FMT, M, LEGACY, RPW>, kThreads, 0) !=
            cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    const int n = sms * per_sm;
    if (dev < kDevs && n > 0) cache[dev].store(n, std::memory_order_relaxed);
    return n;
}

template <int FMT, int M, bool LEGACY, int RPW = 2>
void launch_m(const LaunchCfg& cfg, GemvParams p) {
    // One block per row group, or (all of K in one staging) at most as many as are resident
    // at once, each taking several groups: x is staged and normalized once per block, and the
    // weight stream of a block does not stop between its groups. (n_pad is a multiple of
    // kRowPad = 64: whole groups of 8 or 16 rows.)
    p.nrg = int32_t(p.w.s.n_pad / rows_per_block(RPW));
    int blocks = p.nrg;
    if (!LEGACY && p.w.s.k_pad <= GemvTile<FMT, M, RPW>::KC) {
        const int r = resident_blocks<FMT, M, LEGACY, RPW>();
        if (r > 0 && r < blocks) blocks = r;
    }
    launch(cfg, "gemv", gemv_kernel<FMT, M, LEGACY, RPW>, dim3(unsigned(blocks)), dim3(kThreads), 0, p);
}

template <int FMT>
void launch_fmt(const LaunchCfg& cfg, const GemvParams& p) {
    if constexpr (FmtTraits<FMT>::kFour) {
        // VT_CUDA_INT4_FOUR_ROWS: four rows per warp at m = 1 (single-session decode), two
        // chunks of each per lane and iteration — as many bytes per iteration as 8-bit weights
        // move (at K = 2048 a 4-bit iteration of two rows found only half its chunks inside the
        // rows). m = 4 with four rows spilled (INT4_MIN 248 bytes on sm_90): m > 1 keeps two.
        // Opt-in until a GPU has timed it against the two-row form (issue 15; docs/cuda.md).
        if (p.m <= 1 && !legacy_kernels() && int4_four_rows()) {
            launch_m<FMT, 1, false, 4>(cfg, p);
            return;
        }
    }
    if (legacy_kernels()) {
        if (p.m <= 1) launch_m<FMT, 1, true>(cfg, p);
        else if (p.m <= 4) launch_m<FMT, 4, true>(cfg, p);
        else launch_m<FMT, 8, true>(cfg, p);
        return;
    }
    if (p.m <= 1) launch_m<FMT, 1, false>(cfg, p);
    else if (p.m <= 4) launch_m<FMT, 4, false>(cfg, p);
    else launch_m<FMT, 8, false>(cfg, p);
}

}  // namespace

void gemv(const LaunchCfg& cfg, const DevLinear& w, const float* x, int64_t ldx, int m, const float* norm_w,
          float eps, const Epilogue& e) {
    if (m < 1 || m > kGemvMaxM) throw Error(VT_STATUS_INTERNAL, "gemv: m out of range");
    GemvParams p;
    p.w = w;
    p.x = x;
    p.ldx = ldx;
    p.m = m;
    p.x_vec4 = (ldx % 4 == 0) && (reinterpret_cast<uintptr_t>(x) % 16 == 0);
    p.nw_vec4 = reinterpret_cast<uintptr_t>(norm_w) % 16 == 0;
    p.evict_first = l2_evict_first() ? 1 : 0;
    p.norm_w = norm_w;
    p.eps = eps;
    p.e = e;
    switch (w.s.fmt) {
        case kDevInt8: launch_fmt<kDevInt8>(cfg, p); break;
        case kDevFp8: launch_fmt<kDevFp8>(cfg, p); break;
        case kDevFp8Channel: launch_fmt<kDevFp8Channel>(cfg, p); break;
        case kDevInt4: launch_fmt<kDevInt4>(cfg, p); break;
        case kDevInt4Min: launch_fmt<kDevInt4Min>(cfg, p); break;
        default: launch_fmt<kDevBf16>(cfg, p); break;
    }
}

}  // namespace cudak
}  // namespace vt

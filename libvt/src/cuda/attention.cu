// Attention over the device KV cache (f16 by default, as the CPU's; f32 with kv_cache "f32";
// int8 codes with a scale per key and per value (kv_i8.h) with kv_cache "int8": the kernels
// are compiled for each, T = float, uint16_t f16 bits or int8_t codes, converted to f32 on
// load, all arithmetic in f32): keys transposed [kv_head][hd][cap] so that consecutive threads read
// consecutive positions of one dim (coalesced), values row-major [kv_head][cap][hd].
//
// head_dim: the kernels are compiled for HDP = 64, 128 and 256 and run any hd that is a
// multiple of 4 up to HDP (Phi-3's 96, the tiny test models' 8..32): dims past hd are zero in
// the staged queries and keys and are neither read nor written in the caches.
//
// Decode (one query row): flash-decoding. The visible key range (all keys, or the sliding
// window's last `window`) is cut into `splits` pieces so that kv_heads × head_groups × splits
// blocks fill the GPU even for 4 KV heads; each block runs an online softmax over its piece
// for up to 8 query heads of one GQA group (each key is read once for the whole group),
// writes an unnormalized partial (acc, max, sum), and the last block of the group to arrive
// (a per-group counter) merges the partials — no second kernel, which matters at ~100
// launches per token. Position and length come from device memory, so a captured graph
// replays for every token; blocks past the current length do nothing. A split's keys are a
// multiple of kAttnSplitKeys (32), so even a short context spreads over many blocks, and the
// loops load a chunk (up to 64 dims of a key, 32 keys' values of a dim) before using any of it:
// each block's work is a few memory round trips, not one per four loads.
//
// Prefill (m query rows, causal, optionally windowed): one block per (KV head, run of query
// rows); every thread owns one (query row, head) vector (HDP/64 threads for one vector, 64
// dims each), keys and values are staged in shared memory KT at a time and shared by all the
// block's queries.
//
// Scores are q·k with q pre-scaled, then soft-capped (cap · tanh(s / cap)) when a.softcap > 0,
// as the CPU's attend does.
#include <type_traits>

#include "cuda/common.cuh"

namespace vt {
namespace cudak {
namespace {

constexpr int kThreads = 128;
constexpr float kNegInf = -__builtin_huge_valf();

// ---- Decode ------------------------------------------------------------------------------------

// LEGACY: the kernel as it was before 2026-11-26 (128-key splits, loads four at a time), run
// when VT_CUDA_LEGACY_KERNELS=1 until a GPU has validated and timed the new form (issue 15).
// BATCH: the rows of a batched decode step (AttnArgs::rows, grid z), each over its own cache; a
// separate instantiation, so that the single step's kernel keeps its registers (the row
// arithmetic in it spilled on sm_80 / sm_89 and for head_dim 64 on sm_90).
template <int HDP, class T, bool LEGACY, bool BATCH = false>
// At least 3 blocks per SM (2 for head_dim 256): caps registers at 170 (255). With no minimum
// ptxas chose 72 registers for hd 64 with the f16 cache and spilled in the key loop; a cap of
// 128 spilled elsewhere, and 170 in the merge for head_dim 256 on sm_80 / sm_89.
__global__ void __launch_bounds__(kThreads, HDP == 256 ? 2 : 3) attn_decode_kernel(const AttnArgs a) {
    constexpr int G8 = kAttnMaxGroup;
    constexpr int DW = HDP < kThreads ? HDP : kThreads;  // dims one pass of the threads covers
    constexpr int DPT = HDP / DW;                          // dims per thread in the V phase
    constexpr int NP = kThreads / DW;                      // thread groups over the heads
    constexpr int GPT = G8 / NP;                           // heads per thread in the V phase
    constexpr int KC = HDP < 64 ? HDP : 64;                // key dims loaded before use
    constexpr int VC = 32;                                 // values (keys) loaded before use
    __shared__ __align__(16) float q_s[G8][HDP];
    __shared__ float p_s[G8][kAttnTile];
    __shared__ float red[G8][kThreads / 32];
    // Online-softmax state per head, kept by thread g (not in every thread's registers).
    __shared__ float m_s[G8], l_s[G8], corr_s[G8];
    __shared__ int last_s;

    pdl_launch_dependents();
    pdl_wait();
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int hd = a.hd, pstride = hd + 2;
    const int G = a.nh / a.nkv, gb = G < G8 ? G : G8, ngroups = (G + gb - 1) / gb;
    const int unit = blockIdx.x, kvh = unit / ngroups, grp = unit - kvh * ngroups;
    const int h0 = kvh * G + grp * gb, ng = min(gb, G - grp * gb);
    const int S = gridDim.y, split = blockIdx.y;
    // A batched step's row (a.rows: grid z): its position, query, output, partials, counters.
    const int row = BATCH ? int(blockIdx.z) : 0;
    const int64_t qoff = int64_t(row) * a.nh * hd;
    const KeyRange kr = attn_decode_range(a.pos[row], a.window, S, split, LEGACY ? kAttnTile : kAttnSplitKeys);
    const int k0 = kr.k0, k1 = kr.k1;
    const float cap_s = a.softcap;

    for (int i = tid; i < G8 * HDP; i += kThreads) {
        const int g = i / HDP, d = i - g * HDP;
        q_s[g][d] = g < ng && d < hd ? a.q[qoff + int64_t(h0 + g) * hd + d] : 0.0f;
    }
    if (tid < G8) {
        m_s[tid] = kNegInf;
        l_s[tid] = 0.0f;
    }
    __syncthreads();

    const int64_t cap = BATCH ? a.rows[row].cap : a.cap;
    const void* kbase = BATCH ? kv_layer_k(a.rows[row].kv, cap, a.layer, a.nkv, hd, int(sizeof(T))) : a.kcache;
    const void* vbase = BATCH ? kv_layer_v(a.rows[row].kv, cap, a.layer, a.layers, a.nkv, hd, int(sizeof(T)))
                              : a.vcache;
    const T* kt = static_cast<const T*>(kbase) + int64_t(kvh) * hd * cap;
    const T* vv = static_cast<const T*>(vbase) + int64_t(kvh) * cap * hd;
    // An int8 cache: each key's scale multiplies its scores (after the dot products over its
    // codes), each value's its softmax weight in the weighted sum (p_s; not in the sum l), as
    // the CPU's attend does.
    constexpr bool kI8 = std::is_same<T, int8_t>::value;
    const float2* ksv = nullptr;  // [cap] (key scale, value scale) of this KV head
    if constexpr (kI8)
        ksv = reinterpret_cast<const float2*>(BATCH ? kv_layer_scales(a.rows[row].kv, cap, a.layer, a.layers, a.nkv, hd)
                                                    : a.kv_scales) +
              int64_t(kvh) * cap;
    const int dt = tid % DW, gp = tid / DW;
    float acc[GPT][DPT];
#pragma unroll
    for (int i = 0; i < GPT; ++i)
#pragma unroll
        for (int u = 0; u < DPT; ++u) acc[i][u] = 0.0f;

    for (int j0 = k0; j0 < k1; j0 += kAttnTile) {
        const int j = j0 + tid;
        const bool valid = j < k1;
        float ksj = 1.0f, vsj = 1.0f;  // int8: key j's and value j's scales, loaded with the keys
        if constexpr (kI8) {
            if (valid) {
                const float2 t = ksv[j];
                ksj = t.x;
                vsj = t.y;
            }
        }
        float sc[G8];
#pragma unroll
        for (int g = 0; g < G8; ++g) sc[g] = 0.0f;
        if (valid && LEGACY) {
            const T* kc = kt + j;
#pragma unroll 4
            for (int d0 = 0; d0 < hd; d0 += 4) {
                const float x0 = kv_get(kc + int64_t(d0) * cap), x1 = kv_get(kc + int64_t(d0 + 1) * cap);
                const float x2 = kv_get(kc + int64_t(d0 + 2) * cap), x3 = kv_get(kc + int64_t(d0 + 3) * cap);
#pragma unroll
                for (int g = 0; g < G8; ++g) {
                    if (g >= ng) break;
                    const float4 qv = *reinterpret_cast<const float4*>(&q_s[g][d0]);
                    sc[g] = fmaf(qv.x, x0, fmaf(qv.y, x1, fmaf(qv.z, x2, fmaf(qv.w, x3, sc[g]))));
                }
            }
            if constexpr (kI8)
#pragma unroll
                for (int g = 0; g < G8; ++g) sc[g] *= ksj;
            if (cap_s > 0.0f)
#pragma unroll
                for (int g = 0; g < G8; ++g) sc[g] = softcap_value(sc[g], cap_s);
        } else if (valid) {
            // KC dims of this key loaded before any is used, so their loads are in flight
            // together: one memory round trip per KC dims (all of head_dim 64; 32 gave two). The loads are unconditional (a dim
            // past hd reads dim hd - 1, then counts as 0) and every head of the block's 8 is
            // computed (rows of q_s past ng are zeros): predicates or a branch per head made
            // the compiler issue the loads four at a time, each group waiting on the last.
            const T* kc = kt + j;
            for (int d0 = 0; d0 < hd; d0 += KC) {
                T raw[KC];
#pragma unroll
                for (int u = 0; u < KC; ++u) raw[u] = kc[int64_t(min(d0 + u, hd - 1)) * cap];
                float x[KC];
#pragma unroll
                for (int u = 0; u < KC; ++u) x[u] = d0 + u < hd ? kv_val(raw[u]) : 0.0f;
#pragma unroll
                for (int u = 0; u < KC; u += 4)
#pragma unroll
                    for (int g = 0; g < G8; ++g) {
                        const float4 qv = *reinterpret_cast<const float4*>(&q_s[g][d0 + u]);
                        sc[g] = fmaf(qv.x, x[u], fmaf(qv.y, x[u + 1], fmaf(qv.z, x[u + 2], fmaf(qv.w, x[u + 3], sc[g]))));
                    }
            }
            if constexpr (kI8)
#pragma unroll
                for (int g = 0; g < G8; ++g) sc[g] *= ksj;
            if (cap_s > 0.0f)
#pragma unroll
                for (int g = 0; g < G8; ++g) sc[g] = softcap_value(sc[g], cap_s);
        }
        // Online softmax over this tile: block max, rescale, exponentials, block sum.
#pragma unroll
        for (int g = 0; g < G8; ++g) {
            const float v = warp_max(valid ? sc[g] : kNegInf);
            if (lane == 0) red[g][warp] = v;
        }
        __syncthreads();
        if (tid < G8) {
            float tm = red[tid][0];
#pragma unroll
            for (int w = 1; w < kThreads / 32; ++w) tm = fmaxf(tm, red[tid][w]);
            const float mold = m_s[tid], mnew = fmaxf(mold, tm);
            corr_s[tid] = mold == kNegInf ? 0.0f : expf(mold - mnew);
            m_s[tid] = mnew;
        }
        __syncthreads();
#pragma unroll
        for (int g = 0; g < G8; ++g) {
            const float pv = valid && g < ng ? expf(sc[g] - m_s[g]) : 0.0f;
            p_s[g][tid] = kI8 ? pv * vsj : pv;
            const float ps = warp_sum(pv);
            if (lane == 0) red[g][warp] = ps;
        }
        __syncthreads();
        if (tid < G8) {
            float ts = 0.0f;
#pragma unroll
            for (int w = 0; w < kThreads / 32; ++w) ts += red[tid][w];
            l_s[tid] = l_s[tid] * corr_s[tid] + ts;
        }
        // acc[g][d] = acc·corr + Σ_t p[g][t] · v[t][d]
        const int nt = min(kAttnTile, k1 - j0);
        const T* vt = vv + int64_t(j0) * hd;
#pragma unroll
        for (int i = 0; i < GPT; ++i)
#pragma unroll
            for (int u = 0; u < DPT; ++u) acc[i][u] *= corr_s[gp + NP * i];
        // VC keys' values loaded before any is used (one round trip per VC keys: a whole
        // 32-key split; 16 gave two); every head
        // accumulated (p is 0 for heads past ng), no branch between the loads.
#pragma unroll
        for (int u = 0; u < DPT && LEGACY; ++u) {
            const int d = dt + DW * u;
            if (d >= hd) break;
            int t = 0;
            for (; t + 4 <= nt; t += 4) {
                const float v0 = kv_get(vt + int64_t(t) * hd + d), v1 = kv_get(vt + int64_t(t + 1) * hd + d);
                const float v2 = kv_get(vt + int64_t(t + 2) * hd + d), v3 = kv_get(vt + int64_t(t + 3) * hd + d);
#pragma unroll
                for (int i = 0; i < GPT; ++i) {
                    if (gp + NP * i >= ng) break;
                    const float* pr = &p_s[gp + NP * i][t];
                    acc[i][u] = fmaf(pr[0], v0, fmaf(pr[1], v1, fmaf(pr[2], v2, fmaf(pr[3], v3, acc[i][u]))));
                }
            }
            for (; t < nt; ++t) {
                const float v0 = kv_get(vt + int64_t(t) * hd + d);
#pragma unroll
                for (int i = 0; i < GPT; ++i) {
                    if (gp + NP * i >= ng) break;
                    acc[i][u] = fmaf(p_s[gp + NP * i][t], v0, acc[i][u]);
                }
            }
        }
#pragma unroll
        for (int u = 0; u < DPT && !LEGACY; ++u) {
            const int d = dt + DW * u;
            if (d < hd) {
                const T* vd = vt + d;
                int t = 0;
                for (; t + VC <= nt; t += VC) {
                    float v[VC];
#pragma unroll
                    for (int k = 0; k < VC; ++k) v[k] = kv_get(vd + int64_t(t + k) * hd);
#pragma unroll
                    for (int i = 0; i < GPT; ++i) {
                        const float* pr = &p_s[gp + NP * i][t];
                        float s = acc[i][u];
#pragma unroll
                        for (int k = 0; k < VC; k += 4)
                            s = fmaf(pr[k], v[k], fmaf(pr[k + 1], v[k + 1], fmaf(pr[k + 2], v[k + 2], fmaf(pr[k + 3], v[k + 3], s))));
                        acc[i][u] = s;
                    }
                }
                for (; t < nt; ++t) {
                    const float v0 = kv_get(vd + int64_t(t) * hd);
#pragma unroll
                    for (int i = 0; i < GPT; ++i) acc[i][u] = fmaf(p_s[gp + NP * i][t], v0, acc[i][u]);
                }
            }
        }
        __syncthreads();  // p_s, red, corr_s and the state are rewritten by the next tile
    }

    // Partial result of this split: acc [G8][hd], then max and sum.
    float* part = a.partial + ((int64_t(row) * gridDim.x + unit) * S + split) * G8 * pstride;
#pragma unroll
    for (int i = 0; i < GPT; ++i)
#pragma unroll
        for (int u = 0; u < DPT; ++u) {
            const int d = dt + DW * u;
            if (d < hd) part[(gp + NP * i) * pstride + d] = acc[i][u];
        }
    if (tid < G8) {
        part[tid * pstride + hd] = m_s[tid];
        part[tid * pstride + hd + 1] = l_s[tid];
    }
    __threadfence();
    __syncthreads();
    if (tid == 0) last_s = atomicAdd(&a.counters[row * int(gridDim.x) + unit], 1) == S - 1;
    __syncthreads();
    if (!last_s) return;
    __threadfence();

    // The last block merges: o = Σ_s e^(m_s - M) acc_s / Σ_s e^(m_s - M) l_s.
    const float* p0 = a.partial + (int64_t(row) * gridDim.x + unit) * S * G8 * pstride;
    if constexpr (LEGACY) {
        for (int i = tid; i < ng * hd; i += kThreads) {
            const int g = i / hd, dd = i - g * hd;
            float M = kNegInf;
            for (int sp = 0; sp < S; ++sp) M = fmaxf(M, __ldcg(p0 + (int64_t(sp) * G8 + g) * pstride + hd));
            float L = 0.0f, o = 0.0f;
            for (int sp = 0; sp < S; ++sp) {
                const float* ps = p0 + (int64_t(sp) * G8 + g) * pstride;
                const float ms = __ldcg(ps + hd);
                if (ms == kNegInf) continue;  // an empty split
                const float w = expf(ms - M);
                L = fmaf(w, __ldcg(ps + hd + 1), L);
                o = fmaf(w, __ldcg(ps + dd), o);
            }
            a.out[qoff + int64_t(h0 + g) * hd + dd] = o / L;
        }
    } else {
        // The same sums in the same order, as a few memory round trips instead of two passes of
        // S dependent loads per output element (S is up to 64 now that splits are 32-key
        // chunks): (1) every split's max and sum into shared memory, all loads at once; (2) per
        // head, M, the weights e^(m_s - M) (0 for an empty split) and L = Σ w_s l_s there;
        // (3) each thread's EPT output elements, SPI splits' partials in flight per element
        // (indices clamped, weight 0 past S).
        __shared__ float mw_s[G8][kAttnMaxSplits];  // m_s, then the weights
        __shared__ float ls_s[G8][kAttnMaxSplits];
        __shared__ float lsum_s[G8];
#pragma unroll 4
        for (int i = tid; i < ng * S; i += kThreads) {
            const int g = i / S, sp = i - g * S;
            const float* ps = p0 + (int64_t(sp) * G8 + g) * pstride + hd;
            mw_s[g][sp] = __ldcg(ps);
            ls_s[g][sp] = __ldcg(ps + 1);
        }
        __syncthreads();
        if (tid < ng) {
            float M = kNegInf;
            for (int sp = 0; sp < S; ++sp) M = fmaxf(M, mw_s[tid][sp]);
            float L = 0.0f;
            for (int sp = 0; sp < S; ++sp) {
                const float ms = mw_s[tid][sp];
                const float w = ms == kNegInf ? 0.0f : expf(ms - M);  // 0: an empty split
                L = fmaf(w, ls_s[tid][sp], L);
                mw_s[tid][sp] = w;
            }
            lsum_s[tid] = L;
        }
        __syncthreads();
        constexpr int EPT = (G8 * HDP + kThreads - 1) / kThreads;  // output elements per thread
        constexpr int SPI = EPT >= 16 ? 1 : 16 / EPT;               // splits in flight per element
        const int ne = ng * hd;
        int ge[EPT], de[EPT];
        float o[EPT];
#pragma unroll
        for (int e = 0; e < EPT; ++e) {
            const int i = min(tid + e * kThreads, ne - 1);
            ge[e] = i / hd;
            de[e] = i - ge[e] * hd;
            o[e] = 0.0f;
        }
        for (int sp0 = 0; sp0 < S; sp0 += SPI) {
            float v[EPT][SPI];
#pragma unroll
            for (int e = 0; e < EPT; ++e)
#pragma unroll
                for (int k = 0; k < SPI; ++k)
                    v[e][k] = __ldcg(p0 + (int64_t(min(sp0 + k, S - 1)) * G8 + ge[e]) * pstride + de[e]);
#pragma unroll
            for (int e = 0; e < EPT; ++e)
#pragma unroll
                for (int k = 0; k < SPI; ++k)
                    o[e] = fmaf(sp0 + k < S ? mw_s[ge[e]][sp0 + k] : 0.0f, v[e][k], o[e]);
        }
#pragma unroll
        for (int e = 0; e < EPT; ++e)
            if (tid + e * kThreads < ne) a.out[qoff + int64_t(h0 + ge[e]) * hd + de[e]] = o[e] / lsum_s[ge[e]];
    }
    if (tid == 0) a.counters[row * int(gridDim.x) + unit] = 0;  // ready for the next launch
}

// ---- Prefill -----------------------------------------------------------------------------------

template <int HDP, class T>
__global__ void __launch_bounds__(kThreads) attn_prefill_kernel(const AttnArgs a) {
    constexpr int LPQ = HDP / 64;        // threads per query vector (each owns 64 dims)
    constexpr int QV = kThreads / LPQ;   // query vectors per block
    constexpr int KT = HDP > 128 ? 16 : 32;  // keys per shared tile (48 KB of static shared memory)
    constexpr int KS = HDP + 4 * LPQ;    // shared row stride; the 64-dim quarters of a row are
                                         // 4 floats apart in bank order (no 2-way conflict)
    __shared__ __align__(16) float k_s[KT][KS];
    __shared__ __align__(16) float v_s[KT][KS];

    pdl_launch_dependents();
    pdl_wait();
    const int tid = threadIdx.x;
    const int hd = a.hd;
    const int G = a.nh / a.nkv, QR = QV / G;  // query rows per block (G <= QV: attn_max_group)
    const int kvh = blockIdx.x;
    const int qv = tid / LPQ, dp = tid - qv * LPQ;
    const int qi = qv / G, g = qv - qi * G;
    const int i = blockIdx.y * QR + qi;
    const bool active = qi < QR && i < a.m;
    const int h = kvh * G + g;
    const int pos0 = *a.pos;
    const int pos_i = pos0 + i;
    const int lo_i = attn_first_key(pos_i, a.window);
    const int last_row = min(a.m, (blockIdx.y + 1) * QR) - 1;
    const int kend = pos0 + last_row + 1;  // keys this block needs
    const int kbeg = attn_first_key(pos0 + int(blockIdx.y) * QR, a.window) / KT * KT;
    const int64_t ldq = int64_t(a.nh) * hd;
    const int col0 = dp * (64 + 4);        // this thread's 64 dims inside a shared row
    const float cap_s = a.softcap;

    float q[64], acc[64];
#pragma unroll
    for (int t = 0; t < 64; ++t) {
        q[t] = active && dp * 64 + t < hd ? a.q[int64_t(i) * ldq + int64_t(h) * hd + dp * 64 + t] : 0.0f;
        acc[t] = 0.0f;
    }
    float m_run = kNegInf, l_run = 0.0f;

    const int64_t cap = a.cap;
    const T* kt = static_cast<const T*>(a.kcache) + int64_t(kvh) * hd * cap;
    const T* vv = static_cast<const T*>(a.vcache) + int64_t(kvh) * cap * hd;
    // An int8 cache: keys and values staged as their codes times their scales.
    constexpr bool kI8 = std::is_same<T, int8_t>::value;
    const float2* ksv = kI8 ? reinterpret_cast<const float2*>(a.kv_scales) + int64_t(kvh) * cap : nullptr;
    for (int j0 = kbeg; j0 < kend; j0 += KT) {
        __syncthreads();
        for (int idx = tid; idx < KT * HDP; idx += kThreads) {  // K^T -> rows, coalesced along j
            const int d = idx / KT, jj = idx - d * KT, j = j0 + jj;
            float kv = 0.0f;
            if (j < kend && d < hd) {
                kv = kv_get(kt + int64_t(d) * cap + j);
                if constexpr (kI8) kv *= ksv[j].x;
            }
            k_s[jj][d + 4 * (d >> 6)] = kv;
        }
        for (int idx = tid; idx < KT * (HDP / 4); idx += kThreads) {
            const int jj = idx / (HDP / 4), d = 4 * (idx - jj * (HDP / 4)), j = j0 + jj;
            float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
            if (j < kend && d < hd) {
                v = kv_get4(vv + int64_t(j) * hd + d);
                if constexpr (kI8) {
                    const float sv = ksv[j].y;
                    v = make_float4(v.x * sv, v.y * sv, v.z * sv, v.w * sv);
                }
            }
            *reinterpret_cast<float4*>(&v_s[jj][d + 4 * (d >> 6)]) = v;
        }
        __syncthreads();
        // Every thread runs every sub-tile (the shuffles below need the whole warp); masked
        // keys score -inf. The rows of one block are consecutive, so little is wasted.
#pragma unroll 1
        for (int sub = 0; sub < KT; sub += 8) {
            float sc[8];
            float smax = kNegInf;
#pragma unroll
            for (int jj = 0; jj < 8; ++jj) {
                const float* kr = &k_s[sub + jj][col0];
                float s = 0.0f;
#pragma unroll
                for (int t = 0; t < 64; t += 4) {
                    const float4 kv = *reinterpret_cast<const float4*>(kr + t);
                    s = fmaf(q[t], kv.x, fmaf(q[t + 1], kv.y, fmaf(q[t + 2], kv.z, fmaf(q[t + 3], kv.w, s))));
                }
                if constexpr (LPQ >= 2) s += __shfl_xor_sync(0xFFFFFFFFu, s, 1);
                if constexpr (LPQ >= 4) s += __shfl_xor_sync(0xFFFFFFFFu, s, 2);
                if (cap_s > 0.0f) s = softcap_value(s, cap_s);
                const int j = j0 + sub + jj;
                sc[jj] = j <= pos_i && j >= lo_i ? s : kNegInf;
                smax = fmaxf(smax, sc[jj]);
            }
            if (smax == kNegInf) continue;  // no visible key here for this query
            const float mnew = fmaxf(m_run, smax);
            const float corr = m_run == kNegInf ? 0.0f : expf(m_run - mnew);
            m_run = mnew;
            float p[8], ps = 0.0f;
#pragma unroll
            for (int jj = 0; jj < 8; ++jj) {
                p[jj] = expf(sc[jj] - mnew);
                ps += p[jj];
            }
            l_run = l_run * corr + ps;
#pragma unroll
            for (int t = 0; t < 64; t += 4) {
                float4 o = make_float4(acc[t] * corr, acc[t + 1] * corr, acc[t + 2] * corr, acc[t + 3] * corr);
#pragma unroll
                for (int jj = 0; jj < 8; ++jj) {
                    const float4 vv4 = *reinterpret_cast<const float4*>(&v_s[sub + jj][col0 + t]);
                    o.x = fmaf(p[jj], vv4.x, o.x);
                    o.y = fmaf(p[jj], vv4.y, o.y);
                    o.z = fmaf(p[jj], vv4.z, o.z);
                    o.w = fmaf(p[jj], vv4.w, o.w);
                }
                acc[t] = o.x;
                acc[t + 1] = o.y;
                acc[t + 2] = o.z;
                acc[t + 3] = o.w;
            }
        }
    }
    if (active) {
        const float inv = 1.0f / l_run;
        float* out = a.out + int64_t(i) * ldq + int64_t(h) * hd + dp * 64;
#pragma unroll
        for (int t = 0; t < 64; ++t)
            if (dp * 64 + t < hd) out[t] = acc[t] * inv;
    }
}

// The HDP a head_dim runs with.
int attn_hdp(int hd) { return hd <= 64 ? 64 : hd <= 128 ? 128 : 256; }

}  // namespace

int attn_max_group(int hd) { return kThreads / (attn_hdp(hd) / 64); }

template <class T>
void launch_decode(const LaunchCfg& cfg, const AttnArgs& a, dim3 grid) {
    if (a.rows) {  // a batched step: the current kernel, whatever VT_CUDA_LEGACY_KERNELS says
        switch (attn_hdp(a.hd)) {
            case 64: launch(cfg, "attention (batched decode)", attn_decode_kernel<64, T, false, true>, grid,
                            dim3(kThreads), 0, a);
                break;
            case 128: launch(cfg, "attention (batched decode)", attn_decode_kernel<128, T, false, true>, grid,
                             dim3(kThreads), 0, a);
                break;
            default: launch(cfg, "attention (batched decode)", attn_decode_kernel<256, T, false, true>, grid,
                            dim3(kThreads), 0, a);
                break;
        }
        return;
    }
    if constexpr (std::is_same<T, int8_t>::value) {
        // The int8 cache came after the legacy kernel: the current one whatever
        // VT_CUDA_LEGACY_KERNELS says (no legacy instantiation for it).
        switch (attn_hdp(a.hd)) {
            case 64: launch(cfg, "attention (decode)", attn_decode_kernel<64, T, false>, grid, dim3(kThreads), 0, a); break;
            case 128: launch(cfg, "attention (decode)", attn_decode_kernel<128, T, false>, grid, dim3(kThreads), 0, a); break;
            default: launch(cfg, "attention (decode)", attn_decode_kernel<256, T, false>, grid, dim3(kThreads), 0, a); break;
        }
    } else {
        const bool legacy = legacy_kernels();
        switch (attn_hdp(a.hd)) {
            case 64: legacy ? launch(cfg, "attention (decode)", attn_decode_kernel<64, T, true>, grid, dim3(kThreads), 0, a)
                            : launch(cfg, "attention (decode)", attn_decode_kernel<64, T, false>, grid, dim3(kThreads), 0, a);
                break;
            case 128: legacy ? launch(cfg, "attention (decode)", attn_decode_kernel<128, T, true>, grid, dim3(kThreads), 0, a)
                             : launch(cfg, "attention (decode)", attn_decode_kernel<128, T, false>, grid, dim3(kThreads), 0, a);
                break;
            default: legacy ? launch(cfg, "attention (decode)", attn_decode_kernel<256, T, true>, grid, dim3(kThreads), 0, a)
                            : launch(cfg, "attention (decode)", attn_decode_kernel<256, T, false>, grid, dim3(kThreads), 0, a);
                break;
        }
    }
}

template <class T>
void launch_prefill(const LaunchCfg& cfg, const AttnArgs& a, dim3 grid) {
    switch (attn_hdp(a.hd)) {
        case 64: launch(cfg, "attention (prefill)", attn_prefill_kernel<64, T>, grid, dim3(kThreads), 0, a); break;
        case 128: launch(cfg, "attention (prefill)", attn_prefill_kernel<128, T>, grid, dim3(kThreads), 0, a); break;
        default: launch(cfg, "attention (prefill)", attn_prefill_kernel<256, T>, grid, dim3(kThreads), 0, a); break;
    }
}

void attention_decode(const LaunchCfg& cfg, const AttnArgs& a) {
    const int G = a.nh / a.nkv, gb = G < kAttnMaxGroup ? G : kAttnMaxGroup;
    const dim3 grid(unsigned(a.nkv * ((G + gb - 1) / gb)), unsigned(a.splits), unsigned(a.rows ? a.nrows : 1));
    if (a.kv_i8) launch_decode<int8_t>(cfg, a, grid);
    else if (a.kv_f16) launch_decode<uint16_t>(cfg, a, grid);
    else launch_decode<float>(cfg, a, grid);
}

void attention_prefill(const LaunchCfg& cfg, const AttnArgs& a) {
    const int G = a.nh / a.nkv;
    const int qr = attn_max_group(a.hd) / G;
    const dim3 grid(unsigned(a.nkv), unsigned((a.m + qr - 1) / qr));
    if (a.kv_i8) launch_prefill<int8_t>(cfg, a, grid);
    else if (a.kv_f16) launch_prefill<uint16_t>(cfg, a, grid);
    else launch_prefill<float>(cfg, a, grid);
}

}  // namespace cudak
}  // namespace vt

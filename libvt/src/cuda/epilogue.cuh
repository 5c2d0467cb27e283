// The fused epilogues of the linears (GEMV and GEMM share them): one call per pair of
// adjacent output rows (n, n+1), n even, for one input row i. v0, v1 are final values
// (accumulator × rowmul × post).
#pragma once

#include "cuda/common.cuh"

namespace vt {
namespace cudak {

// v has its bias added (epi_pair).
// One key or value into the cache at element offset `at` (f32, or f16 as kv_f16 says), the
// out-of-range report for f16 (kernels.h, Epilogue::kv_bad); pos is the position.
__device__ __forceinline__ void kv_put(const Epilogue& e, void* cache, int64_t at, float v, int64_t pos) {
    if (!e.kv_f16) {
        static_cast<float*>(cache)[at] = v;
        return;
    }
    static_cast<uint16_t*>(cache)[at] = f2h_bits(v);
    if (fabsf(v) >= 65520.0f && fabsf(v) < __builtin_huge_valf() && e.kv_bad)
        atomicMin(e.kv_bad, (static_cast<unsigned long long>(e.layer) << 32) | static_cast<unsigned long long>(pos));
}

// Row i's key (kv 0) or value (kv 1) vector of KV head kvh in an int8 cache's staging
// (Epilogue::kv_stage, [m][2][nkv][hd]).
__device__ __forceinline__ float* kv_stage_at(const Epilogue& e, int i, int kv, int kvh) {
    return e.kv_stage + ((int64_t(i) * 2 + kv) * e.nkv + kvh) * e.hd;
}

// Dims d0 and d1 of Q or K head `head` of row i: q scaled into e.out, or k into the cache at
// `pos` (an int8 cache: into the staging).
__device__ __forceinline__ void qk_out(const Epilogue& e, int i, int head, int d0, int d1, float a, float b,
                                       int64_t pos) {
    const int hd = e.hd;
    if (head < e.nh) {
        float* q = e.out + int64_t(i) * e.ld + int64_t(head) * hd;
        q[d0] = a * e.qscale;
        q[d1] = b * e.qscale;
    } else if (e.kv_stage) {
        float* k = kv_stage_at(e, i, 0, head - e.nh);
        k[d0] = a;
        k[d1] = b;
    } else {
        const int64_t kt = int64_t(head - e.nh) * hd * e.cap + pos;
        kv_put(e, e.kcache, kt + int64_t(d0) * e.cap, a, pos);
        kv_put(e, e.kcache, kt + int64_t(d1) * e.cap, b, pos);
    }
}

// RoPE of the pair (dims j, j + rot/2) of Q or K head `head` of row i (values v0, v1; rope:
// that row's cos | sin table of rot/2 angles), then out as qk_out.
__device__ __forceinline__ void rope_pair_out(const Epilogue& e, int i, int head, int j, float v0, float v1,
                                              const float* rope, int64_t pos) {
    const int half = (e.rot > 0 ? e.rot : e.hd) >> 1;
    const float c = rope[j], s = rope[half + j];
    qk_out(e, i, head, j, j + half, v0 * c - v1 * s, v1 * c + v0 * s, pos);
}

__device__ __forceinline__ float epi_store1(const Epilogue& e, int i, int n, float v) {
    if (e.gelu) v = gelu(v);
    if (e.softcap > 0.0f) v = softcap_value(v, e.softcap);
    e.out[int64_t(i) * e.ld + n] = v;
    return v;
}

// nvalid: logical output rows (n + 1 may be padding). Returns the rank key of the pair's best
// output of row 0 for the argmax (0 otherwise).
__device__ __forceinline__ unsigned long long epi_pair(const Epilogue& e, int i, int n, int nvalid, float v0,
                                                       float v1) {
    if (n >= nvalid) return 0;
    const bool has1 = n + 1 < nvalid;
    if (e.bias) {  // [nvalid] at least (rows past it are never read)
        v0 += e.bias[n];
        if (has1) v1 += e.bias[n + 1];
    }
    switch (e.kind) {
        case kEpiStore: {
            const float s0 = epi_store1(e, i, n, v0);
            const float s1 = has1 ? epi_store1(e, i, n + 1, v1) : 0.0f;
            if (e.argmax && i == 0) {  // ranks the stored values, as argmax(logits) would
                const unsigned long long k0 = rank_key(s0, uint32_t(n));
                const unsigned long long k1 = has1 ? rank_key(s1, uint32_t(n + 1)) : 0ull;
                return k0 > k1 ? k0 : k1;
            }
            return 0;
        }
        case kEpiAdd: {
            float* o = e.out + int64_t(i) * e.ld + n;
            o[0] += v0;
            if (has1) o[1] += v1;
            return 0;
        }
        case kEpiSwiglu:
            e.out[int64_t(i) * e.ld + (n >> 1)] = (e.act == kActGeluTanh ? gelu_tanh(v0) : silu(v0)) * v1;
            return 0;
        default: {  // kEpiQkv
            const int hd = e.hd;
            const int qd = e.nh * hd, kd = e.nkv * hd;
            const int64_t pos = int64_t(*e.pos) + i;
            if (n < qd + kd) {
                // Rows n, n+1 are dims j and j + rot/2 of one head, or past the rotary dims
                // (partial rotary) dims r and r + 1 as they are (layout.h rows_qkv).
                const int head = n / hd, r = n - head * hd;
                if (r < (e.rot > 0 ? e.rot : hd)) rope_pair_out(e, i, head, r >> 1, v0, v1, e.rope + int64_t(i) * hd, pos);
                else qk_out(e, i, head, r, r + 1, v0, v1, pos);
            } else {
                const int r = n - qd - kd, kh = r / hd, d = r - kh * hd;
                if (e.kv_stage) {  // hd is even: d and d + 1 are in the same head
                    float* vs = kv_stage_at(e, i, 1, kh) + d;
                    vs[0] = v0;
                    vs[1] = v1;
                    return 0;
                }
                const int64_t v = (int64_t(kh) * e.cap + pos) * hd + d;
                kv_put(e, e.vcache, v, v0, pos);
                kv_put(e, e.vcache, v + 1, v1, pos);  // hd is even: d and d + 1 are in the same head
            }
            return 0;
        }
    }
}

}  // namespace cudak
}  // namespace vt

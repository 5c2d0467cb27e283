// Small ops: embedding lookup, RMSNorm (prefill; decode fuses it into the GEMV), the
// normalize-and-add of Gemma's post norms, the q/k-norm + RoPE + KV-write step (Qwen3, Gemma 3),
// SiLU·up (for the separate gate/up linears of the inference API), top-k sampling candidates.
#include "cuda/common.cuh"
#include "cuda/draw.h"
#include "cuda/epilogue.cuh"
#include "cuda/runtime.h"
#include "kv_i8.h"

namespace vt {
namespace cudak {
namespace {

__global__ void __launch_bounds__(256) embed_kernel(const void* table, int32_t dtype, int64_t h,
                                                    const int32_t* tokens, float* x, float scale,
                                                    unsigned long long* argmax_reset, const int32_t* feedback,
                                                    const unsigned long long* feedback_key) {
    pdl_launch_dependents();
    pdl_wait();
    if (argmax_reset && blockIdx.x == 0 && threadIdx.x == 0) *argmax_reset = 0;
    int32_t token;
    if (feedback && *feedback) {
        // The previous step's choice, decoded as the host's read_pick does (0 when every logit was NaN).
        const unsigned long long key = *feedback_key;
        token = key ? int32_t(rank_key_index(key)) : 0;
    } else {
        token = tokens[blockIdx.x];
    }
    const int64_t row = int64_t(token) * h;
    float* out = x + int64_t(blockIdx.x) * h;
    for (int64_t k = threadIdx.x; k < h; k += blockDim.x) {
        float v;
        if (dtype == VT_DTYPE_F32) {
            v = static_cast<const float*>(table)[row + k];
        } else {
            const uint16_t b = static_cast<const uint16_t*>(table)[row + k];
            v = dtype == VT_DTYPE_BF16 ? as_float(uint32_t(b) << 16) : h2f(b);
        }
        out[k] = scale > 0.0f ? v * scale : v;
    }
}

// out[row] = x[row] · rsqrt(mean(x[row]²) + eps) · w, or (add) out[row] += that: rmsnorm, and
// Gemma's post norms before the residual add (add_rmsnorm).
__global__ void __launch_bounds__(256) rmsnorm_kernel(const float* x, const float* w, float eps, int64_t h,
                                                      float* out, int add) {
    __shared__ float red[32];
    pdl_launch_dependents();
    pdl_wait();
    const float* xr = x + int64_t(blockIdx.x) * h;
    float ss = 0.0f;
    for (int64_t k = threadIdx.x; k < h; k += blockDim.x) ss = fmaf(xr[k], xr[k], ss);
    ss = block_sum(ss, red);
    const float r = 1.0f / sqrtf(ss / float(h) + eps);
    float* o = out + int64_t(blockIdx.x) * h;
    for (int64_t k = threadIdx.x; k < h; k += blockDim.x) {
        const float v = (xr[k] * r) * w[k];
        o[k] = add ? o[k] + v : v;
    }
}

// One warp per (row, head) of the QKV output in rows_qkv order: a Q or K head's device rows
// 2j, 2j + 1 are its dims j and j + hd/2 (the RoPE pair), V heads keep their order.
constexpr int kNormRopeWarps = 8;
__global__ void __launch_bounds__(kNormRopeWarps * 32) qkv_norm_rope_kernel(const float* raw, int64_t ldr,
                                                                           const float* q_norm,
                                                                           const float* k_norm, float eps,
                                                                           const Epilogue e0) {
    pdl_launch_dependents();
    pdl_wait();
    const int lane = threadIdx.x & 31;
    const int hh = int(blockIdx.y) * kNormRopeWarps + int(threadIdx.x >> 5);
    const int i = blockIdx.x, hd = e0.hd;
    if (hh >= e0.nh + 2 * e0.nkv) return;
    const float* row = raw + int64_t(i) * ldr;
    const int64_t pos = e0.rows ? int64_t(e0.pos[i]) : int64_t(*e0.pos) + i;
    Epilogue e = e0;
    if (e0.rows && !e0.kv_stage) {  // a batched decode step: this row's session's cache
        const KvRow kr = e0.rows[i];
        const int eb = e0.kv_f16 ? 2 : 4;
        e.kcache = kv_layer_k(kr.kv, kr.cap, e0.layer, e0.nkv, e0.hd, eb);
        e.vcache = kv_layer_v(kr.kv, kr.cap, e0.layer, e0.layers, e0.nkv, e0.hd, eb);
        e.cap = kr.cap;
    }
    if (hh >= e.nh + e.nkv) {  // a V head: into the cache as it is (an int8 cache: the staging)
        const int vh = hh - e.nh - e.nkv;
        const float* src = row + int64_t(e.nh + e.nkv) * hd + int64_t(vh) * hd;
        if (e.kv_stage) {
            float* dst = kv_stage_at(e, i, 1, vh);
            for (int d = lane; d < hd; d += 32) dst[d] = src[d];
            return;
        }
        const int64_t dst = (int64_t(vh) * e.cap + pos) * hd;
        for (int d = lane; d < hd; d += 32) kv_put(e, e.vcache, dst + d, src[d], pos);
        return;
    }
    const float* src = row + int64_t(hh) * hd;
    const bool is_q = hh < e.nh;
    const float* w = is_q ? q_norm : k_norm;
    if (!w) {  // no q/k norm (the batched decode step's per-row RoPE + KV write): the values as stored
        const float* rope = e.rope + int64_t(i) * hd;
        const int rot = e.rot > 0 ? e.rot : hd, rhalf = rot >> 1;
        for (int j = lane; j < rhalf; j += 32) rope_pair_out(e, i, hh, j, src[2 * j], src[2 * j + 1], rope, pos);
        for (int d = rot + 2 * lane; d < hd; d += 64) qk_out(e, i, hh, d, d + 1, src[d], src[d + 1], pos);
        return;
    }
    float ss = 0.0f;
    for (int d = lane; d < hd; d += 32) ss = fmaf(src[d], src[d], ss);
    ss = warp_sum(ss);
    const float r = 1.0f / sqrtf(ss / float(hd) + eps);
    const float* rope = e.rope + int64_t(i) * hd;
    const int rot = e.rot > 0 ? e.rot : hd, rhalf = rot >> 1;
    for (int j = lane; j < rhalf; j += 32)  // rows 2j, 2j + 1: dims j, j + rot/2
        rope_pair_out(e, i, hh, j, (src[2 * j] * r) * w[j], (src[2 * j + 1] * r) * w[j + rhalf], rope, pos);
    for (int d = rot + 2 * lane; d < hd; d += 64)  // partial rotary: the other dims as they are
        qk_out(e, i, hh, d, d + 1, (src[d] * r) * w[d], (src[d + 1] * r) * w[d + 1], pos);
}

// One warp per key or value vector of a row (kv_store_i8): kv_i8.h's codes and scale, the
// same as the CPU's ops::store_i8 for the same f32 values.
constexpr int kKvStoreWarps = 8;
__global__ void __launch_bounds__(kKvStoreWarps * 32) kv_store_i8_kernel(const float* stage, const Epilogue e0) {
    pdl_launch_dependents();
    pdl_wait();
    const int lane = threadIdx.x & 31;
    const int vec = int(blockIdx.y) * kKvStoreWarps + int(threadIdx.x >> 5);  // [2][nkv]: K heads, then V heads
    const int i = blockIdx.x, hd = e0.hd, nkv = e0.nkv;
    if (vec >= 2 * nkv) return;
    const bool is_v = vec >= nkv;
    const int kvh = is_v ? vec - nkv : vec;
    const int64_t pos = e0.rows ? int64_t(e0.pos[i]) : int64_t(*e0.pos) + i;
    int64_t cap = e0.cap;
    int8_t* kc = static_cast<int8_t*>(e0.kcache);
    int8_t* vc = static_cast<int8_t*>(e0.vcache);
    float* sc = e0.kv_scales;
    if (e0.rows) {  // a batched decode step: this row's session's cache
        const KvRow kr = e0.rows[i];
        cap = kr.cap;
        kc = reinterpret_cast<int8_t*>(kv_layer_k(kr.kv, cap, e0.layer, nkv, hd, 1));
        vc = reinterpret_cast<int8_t*>(kv_layer_v(kr.kv, cap, e0.layer, e0.layers, nkv, hd, 1));
        sc = kv_layer_scales(kr.kv, cap, e0.layer, e0.layers, nkv, hd);
    }
    const float* src = stage + ((int64_t(i) * 2 + (is_v ? 1 : 0)) * nkv + kvh) * hd;
    float amax = 0.0f;
    bool finite = true;
    for (int d = lane; d < hd; d += 32) {
        const float v = src[d];
        finite = finite && isfinite(v);
        amax = fmaxf(amax, fabsf(v));
    }
    amax = warp_max(amax);
    finite = __all_sync(0xFFFFFFFFu, finite);
    const bool zero = !finite || !kv_i8_storable(amax);
    const float inv = zero ? 0.0f : kv_i8_inv(amax);
    // Keys transposed [nkv][hd][cap], values [nkv][cap][hd] (as the other caches).
    for (int d = lane; d < hd; d += 32) {
        const int8_t q = zero ? int8_t(0) : kv_i8_code(src[d], inv);
        if (is_v) vc[(int64_t(kvh) * cap + pos) * hd + d] = q;
        else kc[(int64_t(kvh) * hd + d) * cap + pos] = q;
    }
    if (lane == 0) {
        sc[(int64_t(kvh) * cap + pos) * 2 + (is_v ? 1 : 0)] = zero ? 0.0f : kv_i8_scale(amax);
        if (!finite && e0.kv_bad)
            atomicMin(e0.kv_bad, (static_cast<unsigned long long>(e0.layer) << 32) | static_cast<unsigned long long>(pos));
    }
}

__global__ void __launch_bounds__(256) silu_mul_kernel(const float* g, const float* u, int64_t n, float* y) {
    pdl_launch_dependents();
    pdl_wait();
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
        y[i] = silu(g[i]) * u[i];
}

// One block sorts kTopKSlice keys (rank_key of logits, or keys of a previous round) with a
// bitonic network in shared memory and keeps the best kTopK. Rounds shrink the candidate
// set 8× until one block remains: vocab 128k takes three rounds.
__global__ void __launch_bounds__(1024) topk_kernel(const float* logits, const unsigned long long* keys_in,
                                                   int64_t n, unsigned long long* out) {
    __shared__ unsigned long long k_s[kTopKSlice];
    pdl_launch_dependents();
    pdl_wait();
    const int tid = threadIdx.x;
    const int64_t base = int64_t(blockIdx.x) * kTopKSlice;
    for (int i = tid; i < kTopKSlice; i += blockDim.x) {
        const int64_t idx = base + i;
        unsigned long long k = 0;
        if (idx < n) k = logits ? rank_key(logits[idx], uint32_t(idx)) : keys_in[idx];
        k_s[i] = k;
    }
    __syncthreads();
    for (int k = 2; k <= kTopKSlice; k <<= 1) {
        for (int j = k >> 1; j > 0; j >>= 1) {
            for (int t = tid; t < kTopKSlice / 2; t += blockDim.x) {
                int i, l;
                bool desc;
                bitonic_pair(t, j, k, &i, &l, &desc);
                const unsigned long long x = k_s[i], y = k_s[l];
                if ((x < y) == desc) {
                    k_s[i] = y;
                    k_s[l] = x;
                }
            }
            __syncthreads();
        }
    }
    for (int i = tid; i < kTopK; i += blockDim.x) out[int64_t(blockIdx.x) * kTopK + i] = k_s[i];
}

// vt_sample's draw over the sorted candidate keys cand[kTopK] (0 = none) with *args: one
// block of kTopK threads; the weights in parallel, the sums in candidate order by thread 0
// (draw.h: the host's arithmetic). The token drawn goes out as its rank key (0 if none).
__global__ void __launch_bounds__(kTopK) draw_kernel(const unsigned long long* cand, const DrawArgs* args,
                                                     unsigned long long* out) {
    __shared__ float v[kTopK];
    __shared__ double p[kTopK];
    pdl_launch_dependents();
    pdl_wait();
    const int j = threadIdx.x;
    const unsigned long long key = cand[j];
    const int n = __syncthreads_count(key != 0ull);  // the keys are sorted: the nonzero ones come first
    const DrawArgs a = *args;
    v[j] = rank_key_value(key);
    __syncthreads();
    const int k = draw_considered(n, a);
    if (j < k) p[j] = draw_weight(v[j], v[0], a.temperature);
    __syncthreads();
    if (j == 0) {
        const int at = draw_pick(v, p, k, a);
        *out = at < 0 ? 0ull : cand[at];
    }
}

}  // namespace

void draw(const LaunchCfg& cfg, const unsigned long long* cand, const DrawArgs* args, unsigned long long* out) {
    static_assert(kDrawMaxCandidates == kTopK, "the draw weighs every top-k candidate");
    launch(cfg, "draw", draw_kernel, dim3(1), dim3(kTopK), 0, cand, args, out);
}

void embed(const LaunchCfg& cfg, const void* table, int32_t dtype, int64_t h, const int32_t* tokens, int m,
           float* x, float scale, unsigned long long* argmax_reset, const int32_t* feedback,
           const unsigned long long* feedback_key) {
    launch(cfg, "embedding", embed_kernel, dim3(unsigned(m)), dim3(256), 0, table, dtype, h, tokens, x, scale,
           argmax_reset, feedback, feedback_key);
}

void add_rmsnorm(const LaunchCfg& cfg, float* x, const float* t, const float* w, float eps, int64_t h, int m) {
    launch(cfg, "add_rmsnorm", rmsnorm_kernel, dim3(unsigned(m)), dim3(256), 0, t, w, eps, h, x, 1);
}

void qkv_norm_rope(const LaunchCfg& cfg, const float* raw, int64_t ldr, int m, const float* q_norm,
                   const float* k_norm, float eps, const Epilogue& e) {
    const int heads = e.nh + 2 * e.nkv;
    launch(cfg, "q/k norm + RoPE", qkv_norm_rope_kernel, dim3(unsigned(m), unsigned((heads + kNormRopeWarps - 1) / kNormRopeWarps)),
           dim3(kNormRopeWarps * 32), 0, raw, ldr, q_norm, k_norm, eps, e);
}

void kv_store_i8(const LaunchCfg& cfg, const float* stage, int m, const Epilogue& e) {
    launch(cfg, "int8 KV cache store", kv_store_i8_kernel,
           dim3(unsigned(m), unsigned((2 * e.nkv + kKvStoreWarps - 1) / kKvStoreWarps)), dim3(kKvStoreWarps * 32), 0,
           stage, e);
}

void rmsnorm(const LaunchCfg& cfg, const float* x, const float* w, float eps, int64_t h, int m, float* out) {
    launch(cfg, "rmsnorm", rmsnorm_kernel, dim3(unsigned(m)), dim3(256), 0, x, w, eps, h, out, 0);
}

void silu_mul(const LaunchCfg& cfg, const float* g, const float* u, int64_t n, float* y) {
    const int64_t blocks = (n + 255) / 256;
    launch(cfg, "silu_mul", silu_mul_kernel, dim3(unsigned(blocks < 4096 ? blocks : 4096)), dim3(256), 0, g, u, n,
           y);
}

bool kernels_loadable(std::string* why) {
    cudaFuncAttributes attr;
    const cudaError_t e = cudaFuncGetAttributes(&attr, embed_kernel);
    if (e == cudaSuccess) return true;
    cudaGetLastError();
    if (why) *why = std::string("its kernels cannot be loaded: ") + cudaGetErrorString(e) + " (" + cudaGetErrorName(e) + ")";
    return false;
}

size_t topk_scratch_keys(int64_t n) {
    const int64_t blocks = (n + kTopKSlice - 1) / kTopKSlice;
    return size_t(2 * blocks * kTopK);
}

void topk(const LaunchCfg& cfg, const float* logits, int64_t n, unsigned long long* scratch,
          unsigned long long* out) {
    const int64_t half = int64_t(topk_scratch_keys(n) / 2);
    const float* lg = logits;
    const unsigned long long* in = nullptr;
    int64_t count = n;
    for (int round = 0;; ++round) {
        const int64_t blocks = (count + kTopKSlice - 1) / kTopKSlice;
        unsigned long long* dst = blocks == 1 ? out : scratch + (round & 1) * half;
        launch(cfg, "top-k", topk_kernel, dim3(unsigned(blocks)), dim3(1024), 0, lg, in, count, dst);
        if (blocks == 1) return;
        lg = nullptr;
        in = dst;
        count = blocks * kTopK;
    }
}

}  // namespace cudak
}  // namespace vt

// Small ops: embedding lookup, RMSNorm (prefill; decode fuses it into the GEMV), SiLU·up
// (for the separate gate/up linears of the inference API), top-k sampling candidates.
#include "cuda/common.cuh"
#include "cuda/runtime.h"

namespace vt {
namespace cudak {
namespace {

__global__ void __launch_bounds__(256) embed_kernel(const void* table, int32_t dtype, int64_t h,
                                                    const int32_t* tokens, float* x,
                                                    unsigned long long* argmax_reset) {
    pdl_launch_dependents();
    pdl_wait();
    if (argmax_reset && blockIdx.x == 0 && threadIdx.x == 0) *argmax_reset = 0;
    const int64_t row = int64_t(tokens[blockIdx.x]) * h;
    float* out = x + int64_t(blockIdx.x) * h;
    for (int64_t k = threadIdx.x; k < h; k += blockDim.x) {
        float v;
        if (dtype == VT_DTYPE_F32) {
            v = static_cast<const float*>(table)[row + k];
        } else {
            const uint16_t b = static_cast<const uint16_t*>(table)[row + k];
            v = dtype == VT_DTYPE_BF16 ? as_float(uint32_t(b) << 16) : h2f(b);
        }
        out[k] = v;
    }
}

__global__ void __launch_bounds__(256) rmsnorm_kernel(const float* x, const float* w, float eps, int64_t h,
                                                      float* out) {
    __shared__ float red[32];
    pdl_launch_dependents();
    pdl_wait();
    const float* xr = x + int64_t(blockIdx.x) * h;
    float ss = 0.0f;
    for (int64_t k = threadIdx.x; k < h; k += blockDim.x) ss = fmaf(xr[k], xr[k], ss);
    ss = block_sum(ss, red);
    const float r = 1.0f / sqrtf(ss / float(h) + eps);
    float* o = out + int64_t(blockIdx.x) * h;
    for (int64_t k = threadIdx.x; k < h; k += blockDim.x) o[k] = (xr[k] * r) * w[k];
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

}  // namespace

void embed(const LaunchCfg& cfg, const void* table, int32_t dtype, int64_t h, const int32_t* tokens, int m,
           float* x, unsigned long long* argmax_reset) {
    launch(cfg, "embedding", embed_kernel, dim3(unsigned(m)), dim3(256), 0, table, dtype, h, tokens, x,
           argmax_reset);
}

void rmsnorm(const LaunchCfg& cfg, const float* x, const float* w, float eps, int64_t h, int m, float* out) {
    launch(cfg, "rmsnorm", rmsnorm_kernel, dim3(unsigned(m)), dim3(256), 0, x, w, eps, h, out);
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

// Device-side helpers shared by the .cu files: loads, warp reductions, programmatic dependent
// launch, the launch wrapper.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "common.h"
#include "cuda/device_math.h"
#include "cuda/kernels.h"

namespace vt {
namespace cudak {

// ---- Programmatic dependent launch (PDL) ------------------------------------------------------
// On sm_90 a kernel launched with cudaLaunchAttributeProgrammaticStreamSerialization may start
// while the previous kernel in the stream is still running. Everything before pdl_wait() must
// not touch memory the previous kernels write, nor write memory they read: the GEMVs only load
// their weights there (constant), which hides the launch gap behind the previous kernel's tail.
// Every block of every kernel must execute pdl_wait() before it exits, even one with no work:
// completion of kernel N then implies completion of N-1, N-2, ... (transitivity), which the
// fused ops rely on (e.g. the o_proj epilogue writes the residual stream that the next layer's
// QKV kernel reads three launches later). Without the attribute both are no-ops.
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
// pdl_wait() that cannot be scheduled before the load producing `v` has returned: ptxas
// otherwise hoists griddepcontrol.wait above the weight prefetch (seen in the sm_90 SASS),
// and the prefetch no longer overlaps the previous kernel. Both predicated copies wait; the
// predicate only carries the dependency.
__device__ __forceinline__ void pdl_wait_after(uint32_t v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile(
        "{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %0, 0x7FC00001;\n\t@p griddepcontrol.wait;\n\t"
        "@!p griddepcontrol.wait;\n\t}" ::"r"(v)
        : "memory");
#else
    (void)v;
#endif
}
__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// ---- Loads -----------------------------------------------------------------------------------
// Weights are read once per token: bypass L1 (no reuse) and read through the non-coherent path.
// volatile: issued where written, i.e. the first ones before pdl_wait() (a plain asm was sunk
// below griddepcontrol.wait by the compiler, which cost the prefetch).
__device__ __forceinline__ uint4 ld_stream16(const void* p) {
    uint4 r;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                 : "l"(p));
    return r;
}
__device__ __forceinline__ uint16_t ld_stream2(const uint16_t* p) {
    unsigned short r;
    asm volatile("ld.global.nc.L1::no_allocate.u16 %0, [%1];" : "=h"(r) : "l"(p));
    return r;
}

// The same with an L2 cache policy (l2_policy): the GEMV's weight streams.
__device__ __forceinline__ uint4 ld_stream16(const void* p, uint64_t policy) {
    uint4 r;
    asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                 : "l"(p), "l"(policy));
    return r;
}
__device__ __forceinline__ uint16_t ld_stream2(const uint16_t* p, uint64_t policy) {
    unsigned short r;
    asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.u16 %0, [%1], %2;" : "=h"(r) : "l"(p), "l"(policy));
    return r;
}
__device__ __forceinline__ uint32_t ld_stream4(const void* p, uint64_t policy) {
    uint32_t r;
    asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.u32 %0, [%1], %2;" : "=r"(r) : "l"(p), "l"(policy));
    return r;
}
// An L2 cache policy for all of a load's lines: evict first (data read once: a token's
// weights), or normal (as without a hint). sm_80 and newer.
__device__ __forceinline__ uint64_t l2_policy(bool evict_first) {
    uint64_t first, normal;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(first));
    asm("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(normal));
    return evict_first ? first : normal;
}

__device__ __forceinline__ uint2 ld_stream8(const void* p) {
    uint2 r;
    asm volatile("ld.global.nc.L1::no_allocate.v2.u32 {%0, %1}, [%2];" : "=r"(r.x), "=r"(r.y) : "l"(p));
    return r;
}
__device__ __forceinline__ uint32_t ld_stream4(const void* p) {
    uint32_t r;
    asm volatile("ld.global.nc.L1::no_allocate.u32 %0, [%1];" : "=r"(r) : "l"(p));
    return r;
}

__device__ __forceinline__ float h2f(uint16_t h) {
    float f;
    asm("{ .reg .f16 t; mov.b16 t, %1; cvt.f32.f16 %0, t; }" : "=f"(f) : "h"(h));
    return f;
}
// f32 -> f16 bits, rounded to nearest even (beyond the range: infinity), as the CPU's store.
__device__ __forceinline__ uint16_t f2h_bits(float f) {
    uint16_t h;
    asm("{ .reg .f16 t; cvt.rn.f16.f32 t, %1; mov.b16 %0, t; }" : "=h"(h) : "f"(f));
    return h;
}

// A KV cache element as f32 (the cache holds f32 or f16 bits).
__device__ __forceinline__ float kv_get(const float* p) { return *p; }
__device__ __forceinline__ float kv_get(const uint16_t* p) { return h2f(*p); }
__device__ __forceinline__ float kv_get(const int8_t* p) { return float(*p); }  // an int8 code (unscaled)
// An element already loaded, as f32.
__device__ __forceinline__ float kv_val(float v) { return v; }
__device__ __forceinline__ float kv_val(uint16_t v) { return h2f(v); }
__device__ __forceinline__ float kv_val(int8_t v) { return float(v); }
// Four consecutive elements (16-byte / 8-byte aligned).
__device__ __forceinline__ float4 kv_get4(const float* p) { return *reinterpret_cast<const float4*>(p); }
__device__ __forceinline__ float4 kv_get4(const uint16_t* p) {
    const uint2 u = *reinterpret_cast<const uint2*>(p);
    return make_float4(h2f(uint16_t(u.x)), h2f(uint16_t(u.x >> 16)), h2f(uint16_t(u.y)), h2f(uint16_t(u.y >> 16)));
}
__device__ __forceinline__ float4 kv_get4(const int8_t* p) {  // 4-byte aligned; codes, unscaled
    const uint32_t u = *reinterpret_cast<const uint32_t*>(p);
    return make_float4(float(int8_t(u)), float(int8_t(u >> 8)), float(int8_t(u >> 16)), float(int8_t(u >> 24)));
}

// ---- Warp / block reductions -----------------------------------------------------------------
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, o));
    return v;
}
__device__ __forceinline__ unsigned long long warp_max_u64(unsigned long long v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const unsigned long long w = __shfl_xor_sync(0xFFFFFFFFu, v, o);
        v = w > v ? w : v;
    }
    return v;
}

// Sum over the block (blockDim.x a multiple of 32, <= 1024); every thread gets the result.
// `red` is __shared__ float[32]. Contains __syncthreads().
__device__ __forceinline__ float block_sum(float v, float* red) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = warp_sum(v);
    __syncthreads();  // red may still be read by a previous call
    if (lane == 0) red[warp] = v;
    __syncthreads();
    float t = lane < nw ? red[lane] : 0.0f;
    return warp_sum(t);
}

// Maximum over the block, as block_sum (fmaxf: NaN is ignored like std::max(amax, NaN)).
__device__ __forceinline__ float block_max(float v, float* red) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) red[warp] = v;
    __syncthreads();
    float t = lane < nw ? red[lane] : 0.0f;
    return warp_max(t);
}

// ---- Epilogue math (the CPU's formulas) -------------------------------------------------------
__device__ __forceinline__ float silu(float x) { return x / (1.0f + expf(-x)); }
__device__ __forceinline__ float gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752440f)); }

// ---- Launch ----------------------------------------------------------------------------------
[[noreturn]] void launch_failed(const char* what, cudaError_t err);
[[noreturn]] void launch_grid_invalid(const char* what, unsigned x, unsigned y, unsigned z);

// Launches kernel<<<grid, block, smem, cfg.stream>>>(args...) with the PDL attribute when
// cfg.pdl; throws vt::Error naming `what` when the launch is refused.
// The grid's y and z dimensions hold at most 65535 blocks (x: 2^31 - 1). Launches whose y
// extent grows with the rows (GEMM, sparse epilogue) split into several launches.
constexpr int64_t kMaxGridY = 65535;
constexpr int64_t kMaxGridX = 2147483647;

template <class... KArgs, class... Args>
void launch(const LaunchCfg& cfg, const char* what, void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem,
            Args&&... args) {
    if (grid.x < 1 || grid.y < 1 || grid.z < 1 || int64_t(grid.x) > kMaxGridX || grid.y > kMaxGridY ||
        grid.z > kMaxGridY)
        launch_grid_invalid(what, grid.x, grid.y, grid.z);
    cudaLaunchConfig_t lc = {};
    lc.gridDim = grid;
    lc.blockDim = block;
    lc.dynamicSmemBytes = smem;
    lc.stream = cfg.stream;
    cudaLaunchAttribute attr[1];
    if (cfg.pdl) {
        attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[0].val.programmaticStreamSerializationAllowed = 1;
        lc.attrs = attr;
        lc.numAttrs = 1;
    }
    const cudaError_t err = cudaLaunchKernelEx(&lc, kernel, std::forward<Args>(args)...);
    if (err != cudaSuccess) launch_failed(what, err);
}

}  // namespace cudak
}  // namespace vt

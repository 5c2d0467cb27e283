// FP8 E4M3 W8A8 dense GEMM (mma.sync e4m3, sm_89 and sm_90) for FP8_CHANNEL weights:
// cutlass::gemm::device::GemmUniversal. On an sm_90 device, m >= kFp8Sm90MinM goes to the
// Hopper kernel instead (cutlass_fp8_sm90.cu: wgmma, the epilogue fused) unless the caller
// says otherwise (VT_CUDA_FP8_GEMM=sm89, engine.cpp). x is quantized per row on the GPU (absmax / 448),
// E4M3 × E4M3 products accumulate in FP32, and one epilogue kernel applies x scale · w scale,
// bias, GELU or SiLU·up (cutlass_gemm.h says why that is not the CUTLASS epilogue).
//
// Operands: A = xq [m][k_pad] E4M3 row-major, B = W as stored by layout.h ([n_pad][k_pad]
// E4M3 codes row-major = K×n column-major, no repack), D = [m][n_pad] f32 row-major (= y's
// layout with a padded pitch). SwiGLU: gate and up are batch entries 0 and 1 of one batched
// launch (batch stride of B = the distance between the two weights' codes, which live in
// separate allocations on the same device: CUTLASS adds it to a pointer, the flat device
// address space makes that valid), then one epilogue pass writes silu(gate)·up.
#include <cuda_fp8.h>

#include <cstdio>

#include <cutlass/cutlass.h>
#include <cutlass/epilogue/thread/linear_combination.h>
#include <cutlass/gemm/device/gemm_universal.h>

#include "cuda/common.cuh"
#include "cuda/cutlass_gemm.h"
#include "cuda/cutlass_run.cuh"

namespace vt {
namespace cudak {
namespace {

using Fp8Gemm = cutlass::gemm::device::GemmUniversal<
    cutlass::float_e4m3_t, cutlass::layout::RowMajor,     // A: xq [m][k_pad]
    cutlass::float_e4m3_t, cutlass::layout::ColumnMajor,  // B: W [n_pad][k_pad]
    float, cutlass::layout::RowMajor,                     // D: [m][n_pad]
    float, cutlass::arch::OpClassTensorOp, cutlass::arch::Sm89,
    cutlass::gemm::GemmShape<128, 128, 64>, cutlass::gemm::GemmShape<64, 32, 64>,
    cutlass::gemm::GemmShape<16, 8, 32>,
    cutlass::epilogue::thread::LinearCombination<float, 4, float, float>,
    cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<>, 3, 16, 16, cutlass::arch::OpMultiplyAdd>;

size_t align256(size_t b) { return (b + 255) / 256 * 256; }
size_t xq_bytes(const LinearShape& s, int64_t m) { return align256(size_t(m) * size_t(s.k_pad)); }
size_t xs_bytes(int64_t m) { return align256(size_t(m) * 4); }
size_t d_bytes(const LinearShape& s, int64_t m) { return align256(size_t(m) * size_t(s.n_pad) * 4); }

// One block per row: s = absmax / 448, code = E4M3(x / s) (round to nearest even, saturating
// to ±448 as the CPU's f32_to_fp8), exactly linear.cpp's quantize_rows; K padding is zero.
// A zero row gets s = 0 and zero codes. (A row with inf has s = inf: its outputs are NaN;
// the CPU path keeps such a row unquantized and gets ±inf or NaN.)
__global__ void __launch_bounds__(256) quantize_fp8_kernel(const float* x, int64_t k, int64_t k_pad, uint8_t* xq,
                                                           float* xs) {
    __shared__ float red[32];
    const int64_t i = blockIdx.x;
    const float* xr = x + i * k;
    uint8_t* d = xq + i * k_pad;
    float amax = 0.0f;
    for (int64_t c = threadIdx.x; c < k; c += blockDim.x) amax = fmaxf(amax, fabsf(xr[c]));
    amax = block_max(amax, red);
    const float s = amax / 448.0f;
    const bool zero = !(s > 0.0f);
    for (int64_t c = threadIdx.x; c < k_pad; c += blockDim.x)
        d[c] = (c < k && !zero) ? uint8_t(__nv_cvt_float_to_fp8(xr[c] / s, __NV_SATFINITE, __NV_E4M3)) : uint8_t(0);
    if (threadIdx.x == 0) xs[i] = zero ? 0.0f : s;
}

// y[i][r] = (d[i][r] · xs[i]) · ws[r] + bias[r], then GELU; with an up weight silu(gate)·up.
// The row multiplier of FP8_CHANNEL is absmax/448 of the weight row (layout.h's rowmul).
// xs null: d already holds the scaled products (the sm_90a GEMM applied xs and ws in its
// epilogue), so only the bias and the activation remain — the same f32 operations after it.
__global__ void __launch_bounds__(256) fp8_epilogue_kernel(const float* d, const float* d_up, int64_t n_pad, int64_t m,
                                                           int64_t n, const float* xs, const float* ws,
                                                           const float* bias, const float* ws_up,
                                                           const float* bias_up, int act_gelu, float* y) {
    const int64_t total = m * n;
    for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
        const int64_t i = t / n, r = t - i * n;
        float v = xs ? d[i * n_pad + r] * xs[i] * ws[r] : d[i * n_pad + r];
        if (bias) v += bias[r];
        if (d_up) {
            float u = xs ? d_up[i * n_pad + r] * xs[i] * ws_up[r] : d_up[i * n_pad + r];
            if (bias_up) u += bias_up[r];
            v = silu(v) * u;
        } else if (act_gelu) {
            v = gelu(v);
        }
        y[t] = v;
    }
}

dim3 elementwise_grid(int64_t total) {
    const int64_t blocks = (total + 255) / 256;
    return dim3(unsigned(blocks < 65536 ? blocks : 65536));
}

}  // namespace

size_t fp8_workspace_bytes(const LinearShape& s, int64_t m, int outputs) {
    return xq_bytes(s, m) + xs_bytes(m) + size_t(outputs) * d_bytes(s, m);
}

bool fp8_gemm_supported(int cc_major, int cc_minor) {
    if (cc_major * 10 + cc_minor < 89) return false;
    cudaFuncAttributes attr;
    if (cudaFuncGetAttributes(&attr, cutlass::Kernel2<Fp8Gemm::GemmKernel>) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return true;
}

void fp8_linear(const LaunchCfg& cfg, const DevLinear& w, const float* x, int64_t m, const float* bias, int gelu,
                float* y, void* ws, const DevLinear* up, const float* up_bias, bool hopper) {
    const LinearShape& s = w.s;
    VT_CHECK_ARG(s.fmt == kDevFp8Channel, "fp8_linear: the weight is not FP8_CHANNEL");
    VT_CHECK_ARG(m <= INT32_MAX, "fp8_linear: m = %lld is too large", (long long)m);
    char* p = static_cast<char*>(ws);
    uint8_t* xq = reinterpret_cast<uint8_t*>(p);
    float* xs = reinterpret_cast<float*>(p + xq_bytes(s, m));
    float* d = reinterpret_cast<float*>(p + xq_bytes(s, m) + xs_bytes(m));
    float* d_up = up ? reinterpret_cast<float*>(p + xq_bytes(s, m) + xs_bytes(m) + d_bytes(s, m)) : nullptr;
    const LaunchCfg plain{cfg.stream, false};
    launch(plain, "FP8 input quantization", quantize_fp8_kernel, dim3(unsigned(m)), dim3(256), 0, x, int64_t(s.k),
           int64_t(s.k_pad), xq, xs);

    const int64_t total = m * int64_t(s.n);
#if defined(VT_HAVE_CUTLASS_FP8_SM90)
    if (hopper && m >= kFp8Sm90MinM) {  // the sm_90a kernel: scales, bias, GELU in its epilogue
        bool finish = false;
        const Fp8Sm90Problem p = fp8_sm90_plan(m, s.n, s.n_pad, s.k_pad, xq, xs, w.w, w.rowmul, up ? up->w : nullptr,
                                               up ? up->rowmul : nullptr, bias, gelu, y, d, d_up, &finish);
        int device = 0;
        const cudaError_t derr = cudaGetDevice(&device);
        if (derr != cudaSuccess) launch_failed("FP8 GEMM (sm_90a): cudaGetDevice", derr);
        fp8_gemm_sm90(cfg.stream, p, device);
        if (finish)
            launch(plain, "FP8 finish", fp8_epilogue_kernel, elementwise_grid(total), dim3(256), 0, d, d_up,
                   int64_t(s.n_pad), m, int64_t(s.n), nullptr, nullptr, bias, nullptr, up_bias, gelu, y);
        return;
    }
#endif
    (void)hopper;
    using G = Fp8Gemm;
    const int batch = up ? 2 : 1;
    const int64_t b_stride = up ? elems_between(w.w, up->w) : 0;  // elements (bytes: E4M3)
    const int64_t d_stride = up ? elems_between(d, d_up) : 0;
    typename G::Arguments args(up ? cutlass::gemm::GemmUniversalMode::kBatched : cutlass::gemm::GemmUniversalMode::kGemm,
                               cutlass::gemm::GemmCoord(int(m), s.n_pad, s.k_pad), batch, {1.0f, 0.0f}, xq, w.w, d, d,
                               0, b_stride, d_stride, d_stride, int64_t(s.k_pad), int64_t(s.k_pad), int64_t(s.n_pad),
                               int64_t(s.n_pad));
    char shape[96];
    std::snprintf(shape, sizeof shape, "m = %lld [%d, %d]", (long long)m, s.n_pad, s.k_pad);
    run_cutlass<G>(args, cfg.stream, "FP8 GEMM (CUTLASS)", shape);

    launch(plain, "FP8 epilogue", fp8_epilogue_kernel, elementwise_grid(total), dim3(256), 0, d,
           d_up, int64_t(s.n_pad), m, int64_t(s.n), xs, w.rowmul, bias, up ? up->rowmul : nullptr, up_bias, gelu, y);
}

}  // namespace cudak
}  // namespace vt

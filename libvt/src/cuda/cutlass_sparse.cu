// 2:4 sparse INT8 GEMM on sparse tensor cores (mma.sp, sm_80; the same SASS family runs on
// sm_86/89, own SASS for sm_90): cutlass::gemm::device::SparseGemm. INT8_SPARSE24 and
// INT4_SPARSE24 both run here: INT4 values are widened to int8 at upload and x is quantized
// to [-7, 7], so the integer products and sums are exactly the CPU's (layout.h says why the
// INT4 sparse tensor-core path does not apply). cutlass_gemm.h describes the three launches.
#include <algorithm>

#include <cstdio>

#include <cutlass/cutlass.h>
#include <cutlass/epilogue/thread/linear_combination.h>
#include <cutlass/gemm/device/gemm_sparse.h>

#include "cuda/common.cuh"
#include "cuda/cutlass_gemm.h"
#include "cuda/cutlass_run.cuh"

namespace vt {
namespace cudak {
namespace {

using SparseGemmI8 = cutlass::gemm::device::SparseGemm<
    int8_t, cutlass::layout::RowMajor,     // A: W kept values [n_pad][k_pad/2]
    int8_t, cutlass::layout::ColumnMajor,  // B: xq [m_pad][k_pad] (K contiguous)
    int32_t, cutlass::layout::RowMajor,    // C/D: acc [n_pad][m_pad]
    int32_t, cutlass::arch::OpClassTensorOp, cutlass::arch::Sm80,
    cutlass::gemm::GemmShape<128, 128, 128>, cutlass::gemm::GemmShape<64, 64, 128>,
    cutlass::gemm::GemmShape<16, 8, 64>,
    cutlass::epilogue::thread::LinearCombination<int32_t, 4, int32_t, int32_t>,
    cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<>, 3>;

static_assert(SparseGemmI8::kElementsPerElementE == 16 && SparseGemmI8::kSparse == 2,
              "layout.h assumes one 32-bit metadata word per 32 logical K");
static_assert(sizeof(SparseGemmI8::ElementE) == 4, "layout.h reorders 32-bit metadata");

// ---- Workspace: xq [m_pad][k_pad] int8 | xs [m_pad] f32 | acc [n_pad][m_pad] i32 (×2: swiglu) --
size_t align256(size_t b) { return (b + 255) / 256 * 256; }
size_t xq_bytes(const SparseShape& s, int64_t m) { return align256(size_t(sparse_m_pad(m)) * size_t(s.k_pad)); }
size_t xs_bytes(int64_t m) { return align256(size_t(sparse_m_pad(m)) * 4); }
size_t acc_bytes(const SparseShape& s, int64_t m) { return align256(size_t(s.n_pad) * size_t(sparse_m_pad(m)) * 4); }

// One block per row of xq (rows m .. m_pad-1 are zeros): s = absmax / qmax, q = rint(x / s)
// clamped to ±qmax, exactly linear.cpp's run_sparse (IEEE division: no fast math here). As
// there, a row holding a NaN / Inf gets a NaN scale: its outputs are NaN, as the dense
// linears' are, not the finite result of the row quantized without that value.
__global__ void __launch_bounds__(256) quantize_i8_kernel(const float* x, int64_t k, int64_t k_pad, int64_t m,
                                                          float qmax, int8_t* xq, float* xs) {
    __shared__ float red[32];
    const int64_t i = blockIdx.x;
    int8_t* d = xq + i * k_pad;
    if (i >= m) {
        for (int64_t c = threadIdx.x; c < k_pad; c += blockDim.x) d[c] = 0;
        if (threadIdx.x == 0) xs[i] = 0.0f;
        return;
    }
    const float* xr = x + i * k;
    float amax = 0.0f, bad = 0.0f;
    for (int64_t c = threadIdx.x; c < k; c += blockDim.x) {
        amax = fmaxf(amax, fabsf(xr[c]));  // NaN ignored, as std::max: checked apart
        if (!isfinite(xr[c])) bad = 1.0f;
    }
    amax = block_max(amax, red);
    bad = block_max(bad, red);
    float s = amax / qmax;
    if (!(s > 0.0f) || !isfinite(s)) s = 0.0f;
    for (int64_t c = threadIdx.x; c < k_pad; c += blockDim.x) {
        float q = 0.0f;
        if (c < k && s > 0.0f) q = fminf(qmax, fmaxf(-qmax, rintf(xr[c] / s)));
        d[c] = int8_t(q);
    }
    if (threadIdx.x == 0) xs[i] = bad > 0.0f ? __int_as_float(0x7fc00000) : s;  // quiet NaN
}

// y[i][r] = acc[r][i] · (xs[i] · ws[r]) + bias[r] (then GELU), or with an up weight
// silu(gate) · up. A 32×32 tile goes through shared memory: acc is read along i, y written
// along r, both coalesced. The multiply and add are separately rounded, as on the CPU.
__global__ void __launch_bounds__(256) sparse_epilogue_kernel(const int32_t* acc, const int32_t* acc_up, int64_t m_pad,
                                                              int64_t m, int64_t n, const float* xs,
                                                              const float* ws, const float* bias, const float* ws_up,
                                                              const float* bias_up, int act_gelu, int64_t row0,
                                                              float* y) {
    __shared__ float t[32][33];
    const int64_t r0 = int64_t(blockIdx.x) * 32, i0 = row0 + int64_t(blockIdx.y) * 32;
    const int tx = threadIdx.x, ty = threadIdx.y;  // 32 × 8
    for (int j = ty; j < 32; j += 8) {
        const int64_t r = r0 + j, i = i0 + tx;
        float v = 0.0f;
        if (r < n && i < m) {
            v = __fmul_rn(__int2float_rn(acc[r * m_pad + i]), __fmul_rn(xs[i], ws[r]));
            if (bias) v = __fadd_rn(v, bias[r]);
            if (acc_up) {
                float u = __fmul_rn(__int2float_rn(acc_up[r * m_pad + i]), __fmul_rn(xs[i], ws_up[r]));
                if (bias_up) u = __fadd_rn(u, bias_up[r]);
                v = silu(v) * u;
            } else if (act_gelu) {
                v = gelu(v);
            }
        }
        t[j][tx] = v;
    }
    __syncthreads();
    for (int j = ty; j < 32; j += 8) {
        const int64_t i = i0 + j, r = r0 + tx;
        if (i < m && r < n) y[i * n + r] = t[tx][j];
    }
}

// acc[:, c0 : c0 + cols] = W · xq[c0 : c0 + cols]ᵀ: one CUTLASS launch.
void run_gemm_cols(const DevSparse& w, const int8_t* xq, int64_t m_pad, int64_t c0, int64_t cols, int32_t* acc,
                   cudaStream_t st) {
    const SparseShape& s = w.s;
    using G = SparseGemmI8;
    xq += c0 * s.k_pad;  // B is column-major with ld k_pad: column c starts at c * k_pad
    acc += c0;           // C is row-major with ld m_pad
    const cutlass::gemm::GemmCoord size(s.n_pad, int(cols), s.k_pad);
    const auto le = G::LayoutE::packed(cutlass::make_Coord(s.n_pad, s.k_pad / G::kSparse / G::kElementsPerElementE));
    typename G::Arguments args(size, {w.a, G::LayoutA(s.k_pad / 2)}, {xq, G::LayoutB(s.k_pad)},
                               {acc, G::LayoutC(m_pad)}, {acc, G::LayoutC(m_pad)},
                               {const_cast<uint32_t*>(w.e), le}, {1, 0});
    char shape[96];
    std::snprintf(shape, sizeof shape, "[%d, %d] x m = %lld", s.n_pad, s.k_pad, (long long)m_pad);
    run_cutlass<G>(args, st, "2:4 sparse GEMM (CUTLASS)", shape);
}

// CUTLASS puts the GEMM's N tiles (the rows of x here) on the grid's y dimension, at most
// 65535 tiles of 128: more rows than kColsPerLaunch take several launches.
constexpr int64_t kColsPerLaunch = int64_t(1) << 22;  // 32768 tiles of 128, a multiple of 16
static_assert(kColsPerLaunch / SparseGemmI8::ThreadblockShape::kN <= kMaxGridY, "sparse GEMM grid y");

void run_gemm(const DevSparse& w, const int8_t* xq, int64_t m_pad, int32_t* acc, cudaStream_t st) {
    for (int64_t c0 = 0; c0 < m_pad; c0 += kColsPerLaunch)
        run_gemm_cols(w, xq, m_pad, c0, std::min(kColsPerLaunch, m_pad - c0), acc, st);
}

}  // namespace

size_t sparse_workspace_bytes(const SparseShape& s, int64_t m) { return xq_bytes(s, m) + xs_bytes(m) + acc_bytes(s, m); }

void sparse_linear(const LaunchCfg& cfg, const DevSparse& w, const float* x, int64_t m, const float* bias, int gelu,
                   float* y, void* ws, const DevSparse* up, const float* up_bias) {
    const SparseShape& s = w.s;
    const int64_t m_pad = sparse_m_pad(m);
    char* p = static_cast<char*>(ws);
    int8_t* xq = reinterpret_cast<int8_t*>(p);
    float* xs = reinterpret_cast<float*>(p + xq_bytes(s, m));
    int32_t* acc = reinterpret_cast<int32_t*>(p + xq_bytes(s, m) + xs_bytes(m));
    int32_t* acc_up = up ? reinterpret_cast<int32_t*>(p + sparse_workspace_bytes(s, m)) : nullptr;
    const LaunchCfg plain{cfg.stream, false};  // CUTLASS launches without PDL: keep the order simple
    launch(plain, "2:4 sparse input quantization", quantize_i8_kernel, dim3(unsigned(m_pad)), dim3(256), 0, x,
           int64_t(s.k), int64_t(s.k_pad), m, s.int4 ? 7.0f : 127.0f, xq, xs);
    run_gemm(w, xq, m_pad, acc, cfg.stream);
    if (up) run_gemm(*up, xq, m_pad, acc_up, cfg.stream);
    // Row tiles of 32 on the grid's y dimension: more than ~2.1M rows take several launches.
    const int64_t tiles = (m + 31) / 32;
    for (int64_t t0 = 0; t0 < tiles; t0 += kMaxGridY) {
        const dim3 grid(unsigned((s.n + 31) / 32), unsigned(std::min(kMaxGridY, tiles - t0)));
        launch(plain, "2:4 sparse epilogue", sparse_epilogue_kernel, grid, dim3(32, 8), 0, acc, acc_up, m_pad, m,
               int64_t(s.n), xs, w.wscale, bias, up ? up->wscale : nullptr, up_bias, gelu, t0 * 32, y);
    }
}

}  // namespace cudak
}  // namespace vt

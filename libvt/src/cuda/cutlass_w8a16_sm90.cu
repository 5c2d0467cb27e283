// INT8 blocked-scale weights × BF16 activations for Hopper (sm_90a): CUTLASS 3.x's mixed-input
// GEMM — TMA loads, the INT8 tile converted to BF16 in registers and multiplied by its block's
// scale there, warpgroup MMA (wgmma) with FP32 accumulation, warp-specialized and persistent
// (the "cooperative" schedule: two consumer warpgroups share a 128 × 128 tile). The prefill's
// W8A16 linears on sm_90 when VT_CUDA_PREFILL_GEMM=wgmma (engine.cpp; docs/cuda.md "Prefill").
//
// The problem is run transposed, as CUTLASS's mixed-input kernels want the converted operand
// first and K-major: D' = W · xᵀ with
//   A' = W      [n_pad][k_pad]   signed INT8 codes (layout.h), K-major;
//   S  = scales [groups][n_pad]  BF16 scales, N-major (w8a16_plan.h `w8a16_scales`);
//   B' = x      [m][k_pad]       BF16 (zero past K), K-major;
//   D' = [n_pad] × [m] stored column-major with pitch ldd = y [m][ldd] f32 row-major.
// Each weight becomes bf16(bf16(q) · s) before the MMA (q is exact in BF16; the product is
// rounded to BF16): the numerics of a BF16 GEMM over the dequantized weight, ~8 significant
// bits per product, not the ~16 of gemm.cu's hi + lo split. The scale group is the weight's
// block where that is a multiple of the 64-wide K tile; blocks of 32 and 16 run as 2 or 4
// passes, each with its own scales and its own x (w8a16_plan.h), one launch per pass.
// This file is compiled for sm_90a only and only when the build targets sm_90.
#include <cuda_runtime.h>

#include <atomic>
#include <cstdio>

#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/gemm/kernel/gemm_universal.hpp>

#include "cuda/common.cuh"
#include "cuda/cutlass_gemm.h"
#include "cuda/cutlass_run.cuh"

namespace vt {
namespace cudak {
namespace {

using namespace cute;

using ElementW = int8_t;
using ElementScale = cutlass::bfloat16_t;
using ElementX = cutlass::bfloat16_t;
using ElementD = float;
using LayoutW = cutlass::layout::RowMajor;     // A' = W: [n_pad][k_pad]
using LayoutX = cutlass::layout::ColumnMajor;  // B' = x: K × m column-major = [m][k_pad]
using LayoutD = cutlass::layout::ColumnMajor;  // D' = n × m column-major = y [m][ldd]
constexpr int kAlignW = 16, kAlignX = 8;       // elements: 16-byte TMA rows
constexpr int kAlignD = 4;

using TileShape = Shape<_128, _128, Int<kW8a16TileK>>;
using ClusterShape = Shape<_1, _1, _1>;
using MainloopSchedule = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecializedCooperative;

using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, float, float,  // accumulator, compute
    void, LayoutD, kAlignD,                                         // no C operand
    ElementD, LayoutD, kAlignD, EpilogueSchedule>::CollectiveOp;

using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, cute::tuple<ElementW, ElementScale>, LayoutW, kAlignW,
    ElementX, LayoutX, kAlignX, float, TileShape, ClusterShape,
    cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
        sizeof(typename CollectiveEpilogue::SharedStorage))>,
    MainloopSchedule>::CollectiveOp;

using GemmKernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, CollectiveMainloop,
                                                        CollectiveEpilogue>;
using Gemm = cutlass::gemm::device::GemmUniversalAdapter<GemmKernel>;

// SM counts per device, queried once (the persistent tile scheduler sizes its grid by them).
constexpr int kMaxDevices = 64;
std::atomic<int> g_sm_count[kMaxDevices];

int sm_count(int device) {
    if (device < 0 || device >= kMaxDevices) return 0;
    int c = g_sm_count[device].load(std::memory_order_relaxed);
    if (c > 0) return c;
    if (cudaDeviceGetAttribute(&c, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
        cudaGetLastError();
        return 0;  // CUTLASS queries it itself
    }
    g_sm_count[device].store(c, std::memory_order_relaxed);
    return c;
}

typename Gemm::Arguments make_args(const W8a16Sm90Problem& p, int device) {
    using StrideA = typename Gemm::GemmKernel::StrideA;
    using StrideB = typename Gemm::GemmKernel::StrideB;
    using StrideD = typename Gemm::GemmKernel::StrideD;
    using StrideS = typename CollectiveMainloop::StrideScale;
    // Batch strides (one batch) are the packed sizes, not 0: TMA descriptors are built over
    // all three modes.
    const int groups = w8a16_groups(p.block, p.k_pad);
    const StrideA sa = make_stride(int64_t(p.k_pad), Int<1>{}, int64_t(p.n_pad) * p.k_pad);
    const StrideB sb = make_stride(int64_t(p.ldx), Int<1>{}, int64_t(p.m) * p.ldx);
    const StrideD sd = make_stride(Int<1>{}, p.ldd, int64_t(p.m) * p.ldd);
    const StrideS ss = make_stride(Int<1>{}, int64_t(p.n_pad), int64_t(groups) * p.n_pad);
    typename Gemm::Arguments args{
        cutlass::gemm::GemmUniversalMode::kGemm,
        {p.n_pad, p.m, p.k_pad, 1},
        {reinterpret_cast<const ElementW*>(p.w), sa, reinterpret_cast<const ElementX*>(p.x), sb,
         reinterpret_cast<const ElementScale*>(p.scales), ss, w8a16_group(p.block)},
        {{1.0f, 0.0f}, nullptr, sd, p.d, sd}};
    args.hw_info.device_id = device;
    args.hw_info.sm_count = sm_count(device);
    return args;
}

}  // namespace

bool w8a16_sm90_supported(int cc_major, int cc_minor) {
    if (cc_major != 9 || cc_minor != 0) return false;  // sm_90a SASS runs on sm_90 only
    cudaFuncAttributes attr;
    if (cudaFuncGetAttributes(&attr, cutlass::device_kernel<GemmKernel>) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return true;
}

void w8a16_gemm_sm90(cudaStream_t stream, const W8a16Sm90Problem& p, int device) {
    const char* bad = w8a16_sm90_problem_error(p);
    VT_CHECK_ARG(bad == nullptr, "w8a16_gemm_sm90: %s", bad ? bad : "");
    const int phases = w8a16_phases(p.block);
    const size_t table = size_t(w8a16_groups(p.block, p.k_pad)) * size_t(p.n_pad);
    char shape[96];
    std::snprintf(shape, sizeof shape, "m = %d [%d, %d] block %d", p.m, p.n_pad, p.k_pad, p.block);
    for (int b = 0; b < phases; ++b) {
        W8a16Sm90Problem q = p;
        q.scales = p.scales + size_t(b) * table;
        q.x = p.x + b * p.x_phase;
        q.d = p.d + b * p.d_phase;
        run_cutlass<Gemm>(make_args(q, device), stream, "INT8 W8A16 GEMM (CUTLASS, sm_90a)", shape);
    }
}

}  // namespace cudak
}  // namespace vt

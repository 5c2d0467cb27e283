// 8- and 4-bit weights × BF16 activations for Hopper (sm_90a): CUTLASS 3.x's mixed-input GEMM —
// TMA loads, the weight tile converted to BF16 in registers and scaled there (INT8 / E4M3:
// q · s; the 4-bit formats' nibbles: u · s + z), warpgroup MMA (wgmma) with FP32 accumulation,
// warp-specialized and persistent (the "cooperative" schedule: two consumer warpgroups share a
// 128 × 128 tile). The prefill's linears on sm_90 when VT_CUDA_PREFILL_GEMM=wgmma (engine.cpp;
// docs/cuda.md "Prefill").
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

using ElementScale = cutlass::bfloat16_t;
using ElementX = cutlass::bfloat16_t;
using ElementD = float;
using LayoutW = cutlass::layout::RowMajor;     // A' = W: [n_pad][k_pad]
using LayoutX = cutlass::layout::ColumnMajor;  // B' = x: K × m column-major = [m][k_pad]
using LayoutD = cutlass::layout::ColumnMajor;  // D' = n × m column-major = y [m][ldd]
constexpr int kAlignX = 8;                     // elements: 16-byte TMA rows
constexpr int kAlignD = 4;

using TileShape = Shape<_128, _128, Int<kW8a16TileK>>;
using ClusterShape = Shape<_1, _1, _1>;
using MainloopSchedule = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecializedCooperative;

using W8a16Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, float, float,  // accumulator, compute
    void, LayoutD, kAlignD,                                         // no C operand
    ElementD, LayoutD, kAlignD, EpilogueSchedule>::CollectiveOp;
// The epilogue's shared memory, left out of the mainloop's stages (a constant here: written as
// a sizeof inside the class template below, the host compiler misreads nvcc's output of it).
constexpr int kEpilogueSmem = static_cast<int>(sizeof(typename W8a16Epilogue::SharedStorage));

// The weight codes as CUTLASS reads them (layout.h's device codes, unchanged): INT8 signed
// bytes and E4M3 scaled per group; 4-bit unsigned nibbles u (k even in the low nibble, as
// CUTLASS packs sub-byte elements) scaled and shifted: u · s + z.
template <int WT>
struct WeightOf;
template <>
struct WeightOf<kW8a16Int8> {
    using type = int8_t;
    static constexpr bool zero = false;
};
template <>
struct WeightOf<kW8a16Fp8> {
    using type = cutlass::float_e4m3_t;
    static constexpr bool zero = false;
};
template <>
struct WeightOf<kW8a16U4> {
    using type = cutlass::uint4b_t;
    static constexpr bool zero = true;
};

template <int WT>
struct W8a16 {
    using ElementW = typename WeightOf<WT>::type;
    static constexpr bool kZero = WeightOf<WT>::zero;
    static constexpr int kAlignW = 128 / cutlass::sizeof_bits<ElementW>::value;  // 16-byte TMA rows
    using MainloopA = cute::conditional_t<kZero, cute::tuple<ElementW, ElementScale, ElementScale>,
                                          cute::tuple<ElementW, ElementScale>>;
    using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
        cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, MainloopA, LayoutW, kAlignW, ElementX, LayoutX, kAlignX,
        float, TileShape, ClusterShape,
        cutlass::gemm::collective::StageCountAutoCarveout<kEpilogueSmem>, MainloopSchedule>::CollectiveOp;
    using GemmKernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, CollectiveMainloop,
                                                            W8a16Epilogue>;
    using Gemm = cutlass::gemm::device::GemmUniversalAdapter<GemmKernel>;
};

// One pass's arguments (p.scales, p.zeros, p.x and p.d already that pass's).
template <int WT>
typename W8a16<WT>::Gemm::Arguments make_args(const W8a16Sm90Problem& p, int device) {
    using K = W8a16<WT>;
    using Gemm = typename K::Gemm;
    using StrideA = typename Gemm::GemmKernel::StrideA;
    using StrideB = typename Gemm::GemmKernel::StrideB;
    using StrideD = typename Gemm::GemmKernel::StrideD;
    using StrideS = typename K::CollectiveMainloop::StrideScale;
    // Batch strides (one batch) are the packed sizes, not 0: TMA descriptors are built over
    // all three modes.
    const int groups = w8a16_groups(p.block, p.k_pad);
    const StrideA sa = make_stride(int64_t(p.k_pad), Int<1>{}, int64_t(p.n_pad) * p.k_pad);
    const StrideB sb = make_stride(int64_t(p.ldx), Int<1>{}, int64_t(p.m) * p.ldx);
    const StrideD sd = make_stride(Int<1>{}, p.ldd, int64_t(p.m) * p.ldd);
    const StrideS ss = make_stride(Int<1>{}, int64_t(p.n_pad), int64_t(groups) * p.n_pad);
    typename Gemm::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm,
                                  {p.n_pad, p.m, p.k_pad, 1},
                                  {},
                                  {{1.0f, 0.0f}, nullptr, sd, p.d, sd}};
    args.mainloop.ptr_A = reinterpret_cast<const typename K::ElementW*>(p.w);
    args.mainloop.dA = sa;
    args.mainloop.ptr_B = reinterpret_cast<const ElementX*>(p.x);
    args.mainloop.dB = sb;
    args.mainloop.ptr_S = reinterpret_cast<const ElementScale*>(p.scales);
    args.mainloop.dS = ss;
    args.mainloop.group_size = w8a16_group(p.block, p.k_pad);
    if constexpr (K::kZero) args.mainloop.ptr_Z = reinterpret_cast<const ElementScale*>(p.zeros);
    args.hw_info.device_id = device;
    args.hw_info.sm_count = cutlass_sm_count(device);
    return args;
}

template <int WT>
void run_passes(cudaStream_t stream, const W8a16Sm90Problem& p, int device) {
    const int phases = w8a16_phases(p.block, p.k_pad);
    static const char* const kWhat[] = {"INT8 W8A16 GEMM (CUTLASS, sm_90a)", "FP8 W8A16 GEMM (CUTLASS, sm_90a)",
                                        "4-bit W4A16 GEMM (CUTLASS, sm_90a)"};
    char shape[96];
    std::snprintf(shape, sizeof shape, "m = %d [%d, %d] block %d", p.m, p.n_pad, p.k_pad, p.block);
    for (int b = 0; b < phases; ++b)
        run_cutlass<typename W8a16<WT>::Gemm>(make_args<WT>(w8a16_pass(p, b), device), stream, kWhat[WT], shape);
}

template <int WT>
bool image_loads() {
    cudaFuncAttributes attr;
    if (cudaFuncGetAttributes(&attr, cutlass::device_kernel<typename W8a16<WT>::GemmKernel>) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return true;
}

}  // namespace

bool w8a16_sm90_supported(int cc_major, int cc_minor) {
    if (cc_major != 9 || cc_minor != 0) return false;  // sm_90a SASS runs on sm_90 only
    return image_loads<kW8a16Int8>() && image_loads<kW8a16Fp8>() && image_loads<kW8a16U4>();
}

void w8a16_gemm_sm90(cudaStream_t stream, const W8a16Sm90Problem& p, int device) {
    const char* bad = w8a16_sm90_problem_error(p);
    VT_CHECK_ARG(bad == nullptr, "w8a16_gemm_sm90: %s", bad ? bad : "");
    switch (p.wtype) {
        case kW8a16Int8: run_passes<kW8a16Int8>(stream, p, device); break;
        case kW8a16Fp8: run_passes<kW8a16Fp8>(stream, p, device); break;
        default: run_passes<kW8a16U4>(stream, p, device); break;
    }
}

}  // namespace cudak
}  // namespace vt

// FP8 E4M3 W8A8 dense GEMM for Hopper (sm_90a): CUTLASS 3.x, TMA loads and warpgroup MMA
// (wgmma) with FP32 accumulation, warp-specialized and persistent (the "cooperative" schedule:
// two consumer warpgroups share a 128 × 128 tile), with the scales, the bias and GELU fused
// into the epilogue through an epilogue visitor tree (EVT):
//
//     D[l][i][r] = act((acc · xs[i]) · ws[l][r] + bias[r])      act: GELU when asked, else none
//
// — the same order of f32 operations as the sm_89 path's epilogue kernel (cutlass_fp8.cu). The
// CUTLASS 2.x kernel of cutlass_fp8.cu, compiled for sm_89/sm_90 with the sm_89 tag, runs
// mma.sync on E4M3 operands, which on sm_90 the compiler lowers to FP16 HMMA after a conversion
// (no FP8 tensor-core instruction in its SASS); wgmma reads E4M3 from shared memory directly.
// This file is compiled for sm_90a only (wgmma and TMA are "a" features: no PTX for later
// GPUs), and only when the build targets sm_90 (libvt/meson.build).
//
// Operands as in cutlass_fp8.cu: A = x quantized per row ([m][k_pad] E4M3, K-major), B = the
// weight as layout.h stores it ([n_pad][k_pad] E4M3 = K-major), D f32 row-major with pitch ldd.
// Batch L = 2 runs SwiGLU's gate and up in one launch (B, ws and D advance by their batch
// strides; CUTLASS adds them to the pointers, valid in the flat device address space).
#include <cuda_runtime.h>

#include <cstdio>

#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/epilogue/fusion/operations.hpp>
#include <cutlass/epilogue/fusion/sm90_callbacks_tma_warpspecialized.hpp>
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

// GELU when Arguments::gelu, else the value as it is: one kernel for both (a run-time flag in
// the epilogue's parameters instead of a second instantiation; the branch is uniform).
// Sm90Compute looks up Arguments on the scalar instantiation and calls the Array one.
// (Sm90Compute takes Arguments from MaybeGelu<float> and passes them to MaybeGelu<Array<...>>:
// one type for all instantiations.)
struct MaybeGeluArgs {
    int gelu = 0;
};
template <class T>
struct MaybeGelu {
    using Arguments = MaybeGeluArgs;
    template <int N>
    CUTLASS_DEVICE cutlass::Array<float, N> operator()(cutlass::Array<float, N> const& v, Arguments const& a) const {
        cutlass::Array<float, N> r;
        if (a.gelu) {
            CUTLASS_PRAGMA_UNROLL
            for (int i = 0; i < N; ++i) r[i] = gelu(v[i]);  // common.cuh: the CPU's exact GELU
        } else {
            r = v;
        }
        return r;
    }
};

using ElementA = cutlass::float_e4m3_t;
using ElementB = cutlass::float_e4m3_t;
using ElementD = float;
using LayoutA = cutlass::layout::RowMajor;     // x: [m][k_pad]
using LayoutB = cutlass::layout::ColumnMajor;  // W: [n_pad][k_pad] = K × n column-major
using LayoutD = cutlass::layout::RowMajor;     // D: [m][ldd]
constexpr int kAlignA = 16, kAlignB = 16;      // elements: 16-byte TMA rows
constexpr int kAlignD = 4;

using TileShape = Shape<_128, _128, _128>;
using ClusterShape = Shape<_1, _1, _1>;
// FP32 accumulation: the non-"FastAccum" schedule promotes the tensor core's partial sums into
// FP32 registers every few MMAs (the FastAccum one keeps them in the MMA's own accumulator,
// which loses low bits over a long K; torch._scaled_mm's default does not use it either).
using MainloopSchedule = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecializedCooperative;

namespace fus = cutlass::epilogue::fusion;
constexpr auto kRound = cutlass::FloatRoundStyle::round_to_nearest;
using Acc = fus::Sm90AccFetch;
// xs[i] along M (a column vector), no batch stride; ws[r] along N with a batch stride (gate,
// up); bias along N, any alignment (a caller's pointer), null = 0.
using XScale = fus::Sm90ColBroadcast<0, TileShape, float, float, Stride<_1, _0, int64_t>>;
using WScale = fus::Sm90RowBroadcast<0, TileShape, float, float, Stride<_0, _1, int64_t>>;
using Bias = fus::Sm90RowBroadcast<0, TileShape, float, float, Stride<_0, _1, int64_t>, 1>;
using Mul = fus::Sm90Compute<cutlass::multiplies, float, float, kRound>;
using Add = fus::Sm90Compute<cutlass::plus, float, float, kRound>;
using Act = fus::Sm90Compute<MaybeGelu, float, float, kRound>;
using Evt = fus::Sm90EVT<Act, fus::Sm90EVT<Add, fus::Sm90EVT<Mul, fus::Sm90EVT<Mul, Acc, XScale>, WScale>, Bias>>;

using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, float, float,  // accumulator, compute
    void, LayoutD, kAlignD,                                         // no C operand
    ElementD, LayoutD, kAlignD, EpilogueSchedule, Evt>::CollectiveOp;

using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, ElementA, LayoutA, kAlignA, ElementB, LayoutB, kAlignB, float,
    TileShape, ClusterShape,
    cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
        sizeof(typename CollectiveEpilogue::SharedStorage))>,
    MainloopSchedule>::CollectiveOp;

using GemmKernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, CollectiveMainloop,
                                                        CollectiveEpilogue>;
using Gemm = cutlass::gemm::device::GemmUniversalAdapter<GemmKernel>;

typename Gemm::Arguments make_args(const Fp8Sm90Problem& p, int device) {
    using StrideA = typename Gemm::GemmKernel::StrideA;
    using StrideB = typename Gemm::GemmKernel::StrideB;
    using StrideD = typename Gemm::GemmKernel::StrideD;
    // One batch: the packed sizes as batch strides rather than 0 (TMA descriptors are built
    // over all three modes). SwiGLU's pair shares x through a zero batch stride of A.
    const StrideA sa = make_stride(int64_t(p.k_pad), Int<1>{}, p.batch > 1 ? int64_t(0) : int64_t(p.m) * p.k_pad);
    const StrideB sb = make_stride(int64_t(p.k_pad), Int<1>{},
                                   p.batch > 1 ? p.w_batch_stride : int64_t(p.n) * p.k_pad);
    const StrideD sd = make_stride(p.ldd, Int<1>{}, p.batch > 1 ? p.d_batch_stride : int64_t(p.m) * p.ldd);
    typename Gemm::Arguments args{
        cutlass::gemm::GemmUniversalMode::kGemm,
        {p.m, p.n, p.k_pad, p.batch},
        {reinterpret_cast<const ElementA*>(p.xq), sa, reinterpret_cast<const ElementB*>(p.w), sb},
        {{}, nullptr, sd, p.d, sd}};
    // Evt's arguments, innermost first: {{{{acc, xs}, mul}, ws}, mul}, bias}, add}, act.
    args.epilogue.thread = {
        {
            {
                {{}, {p.xs, 0.0f, make_stride(Int<1>{}, Int<0>{}, int64_t(0))}, {}},
                {p.wscale, 0.0f, make_stride(Int<0>{}, Int<1>{}, p.wscale_batch_stride)},
                {},
            },
            {p.bias, 0.0f, make_stride(Int<0>{}, Int<1>{}, int64_t(0))},
            {},
        },
        {p.gelu},
    };
    args.hw_info.device_id = device;
    args.hw_info.sm_count = cutlass_sm_count(device);
    return args;
}

}  // namespace

bool fp8_sm90_supported(int cc_major, int cc_minor) {
    if (cc_major != 9 || cc_minor != 0) return false;  // sm_90a SASS runs on sm_90 only
    cudaFuncAttributes attr;
    if (cudaFuncGetAttributes(&attr, cutlass::device_kernel<GemmKernel>) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return true;
}

void fp8_gemm_sm90(cudaStream_t stream, const Fp8Sm90Problem& p, int device) {
    VT_CHECK_ARG(p.batch == 1 || p.batch == 2, "fp8_gemm_sm90: batch %d", p.batch);
    VT_CHECK_ARG(p.bias == nullptr || p.batch == 1, "fp8_gemm_sm90: a bias with a batch of two");
    const typename Gemm::Arguments args = make_args(p, device);
    char shape[96];
    std::snprintf(shape, sizeof shape, "m = %d [%d, %d] x %d", p.m, p.n, p.k_pad, p.batch);
    run_cutlass<Gemm>(args, stream, "FP8 GEMM (CUTLASS, sm_90a)", shape);
}

}  // namespace cudak
}  // namespace vt

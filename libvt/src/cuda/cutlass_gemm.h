// The CUTLASS GEMMs of the CUDA backend as the host code sees them (no CUTLASS or CUDA header
// here): the 2:4 sparse INT8 GEMM (cutlass_sparse.cu, INT8_SPARSE24 and INT4_SPARSE24) and the
// FP8 E4M3 W8A8 GEMM (cutlass_fp8.cu, FP8_CHANNEL with quantize_input). Built only when meson
// finds the CUTLASS headers (VT_HAVE_CUTLASS; FP8 also needs an sm_89+ target,
// VT_HAVE_CUTLASS_FP8); engine.cpp calls these under those macros. Launchers only enqueue on
// cfg.stream (graph-capturable) and throw vt::Error when CUTLASS refuses a problem or a launch
// fails.
//
// Both compute in three launches: (1) quantize x per row on the GPU (the CPU's arithmetic:
// IEEE division by s = absmax / qmax, round to nearest even), (2) the CUTLASS GEMM with a plain
// store epilogue (INT32 for the sparse GEMM, FP32 for FP8), (3) one fused epilogue kernel:
// acc · (x scale[i] · w scale[n]) + bias[n], then GELU or SiLU·up. Why not the CUTLASS epilogue:
// a CUTLASS 2.x LinearCombination takes scalar alpha/beta; a per-row *and* per-column scale
// needs an epilogue visitor (Sm80EVT row/column broadcasts), which SparseGemm does not take,
// and for the sparse GEMM the output is the transpose of y (the sparse operand must be A = W,
// so D = W·xᵀ is [n][m]; CUTLASS 2.x epilogues write row-major only). The extra pass reads and
// writes m·n·4 bytes: small next to the GEMM for the prefill shapes it serves; docs/cuda.md.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda/fp8_sm90_plan.h"
#include "cuda/w8a16_plan.h"
#include "cuda/kernels.h"
#include "cuda/layout.h"

namespace vt {
namespace cudak {

// A 2:4 sparse linear in device memory (layout.h "2:4 sparse formats").
struct DevSparse {
    SparseShape s;
    const int8_t* a = nullptr;        // [n_pad][k_pad/2] kept values
    const uint32_t* e = nullptr;      // [n_pad·k_pad/32] metadata, reordered
    const float* wscale = nullptr;    // [n_pad]
};

// Rows of x the sparse GEMM's B operand holds: m rounded up to 16 (the epilogue's 128-bit
// stores of the INT32 result need a row pitch that is a multiple of 4; 16 keeps the
// quantized rows 16-byte aligned too).
inline int64_t sparse_m_pad(int64_t m) { return (m + 15) / 16 * 16; }

// Device scratch the sparse linear needs for m rows (xq, row scales, INT32 accumulators).
size_t sparse_workspace_bytes(const SparseShape& s, int64_t m);

// y[m][n] = act(x[m][k] · Wᵀ + bias) with W 2:4 sparse: x (f32, device, row stride k) is
// quantized per row to [-qmax, qmax] (qmax 127, or 7 for INT4_SPARSE24: linear.cpp's
// run_sparse), multiplied on sparse tensor cores with INT32 accumulation, dequantized with
// x scale · w scale, bias added (null: none), GELU when gelu. swiglu_up: when not null, the
// sparse linear of the up weight with the same x (same quantized x, its own accumulators), and
// y = silu(gate) · up (y = act(...) of `w` as gate; gelu must be 0). ws: sparse_workspace_bytes
// (twice that with swiglu_up).
void sparse_linear(const LaunchCfg& cfg, const DevSparse& w, const float* x, int64_t m, const float* bias, int gelu,
                   float* y, void* ws, const DevSparse* swiglu_up = nullptr, const float* up_bias = nullptr);

// Device scratch the FP8 W8A8 linear needs for m rows (E4M3 x, row scales, FP32 products;
// `outputs` = 1, or 2 for the SwiGLU pair).
size_t fp8_workspace_bytes(const LinearShape& s, int64_t m, int outputs);

// Whether the FP8 W8A8 GEMM can run on device `cc_major.cc_minor` (sm_89 and newer, and a
// kernel image for it in this build).
bool fp8_gemm_supported(int cc_major, int cc_minor);

// y[m][n] = act(x · Wᵀ + bias) for an FP8_CHANNEL linear (w.s.fmt == kDevFp8Channel): x
// quantized per row to E4M3 (absmax / 448, linear.cpp's quantize_rows), E4M3 × E4M3 on tensor
// cores with FP32 accumulation, then x scale · w.rowmul[n], bias, GELU when gelu.
// swiglu_up: as for sparse_linear, the up weight (same shape): both GEMMs run as one batched
// CUTLASS launch (batch 2) and the epilogue writes silu(gate) · up.
// hopper: the device is sm_90 and fp8_sm90_supported said yes: m >= kFp8Sm90MinM then runs on
// the sm_90a kernel (scales, bias, GELU in its epilogue; SwiGLU's product in a finishing pass).
void fp8_linear(const LaunchCfg& cfg, const DevLinear& w, const float* x, int64_t m, const float* bias, int gelu,
                float* y, void* ws, const DevLinear* swiglu_up = nullptr, const float* up_bias = nullptr,
                bool hopper = false);

// ---- FP8 W8A8 on Hopper (cutlass_fp8_sm90.cu; built when the targets include sm_90:
// VT_HAVE_CUTLASS_FP8_SM90). The problem and its planning: fp8_sm90_plan.h (plain C++).

// Whether the sm_90a kernel can run on device cc_major.cc_minor (exactly sm_90, and an image
// of it in this build).
bool fp8_sm90_supported(int cc_major, int cc_minor);
// Enqueues the GEMM on stream (graph-capturable); throws vt::Error when CUTLASS refuses the
// problem or the launch fails.
void fp8_gemm_sm90(cudaStream_t stream, const Fp8Sm90Problem& p, int device);

// ---- 8- and 4-bit weights x BF16 on Hopper, the prefill's GEMM (cutlass_w8a16_sm90.cu; built
// when the targets include sm_90: VT_HAVE_CUTLASS_W8A16_SM90). The problem, its passes and
// checks: w8a16_plan.h (plain C++).

// Whether the sm_90a mixed-input kernels can run on device cc_major.cc_minor.
bool w8a16_sm90_supported(int cc_major, int cc_minor);
// Enqueues y = x · dequant(W)ᵀ (f32, no epilogue) on stream (graph-capturable); throws
// vt::Error naming what is wrong when the problem is not one it takes, CUTLASS refuses it, or
// the launch fails.
void w8a16_gemm_sm90(cudaStream_t stream, const W8a16Sm90Problem& p, int device);

}  // namespace cudak
}  // namespace vt

// The INT8 W8A16 GEMM for Hopper (cutlass_w8a16_sm90.cu) as the prefill uses it: the problem,
// its checks, which linears it takes, and the BF16 scale table it reads. Plain C++ (no CUDA
// header) so that tests/test_cuda_host.py checks them on any machine (host_check.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "half.h"

namespace vt {
namespace cudak {

// The kernel's K tile: a weight's scale block must be a whole number of tiles (CUTLASS's
// mixed-input GEMM reads one scale per row and group of K tiles), and CUTLASS wants at least
// four BF16 MMAs (k 16 each) per tile, so blocks of 64 and 128 run on it; blocks of 16 and 32
// (INT8's default) stay on gemm.cu's kernel.
constexpr int kW8a16TileK = 64;
// Rows of x below which the prefill keeps gemm.cu's kernel (the tile holds 128 rows of x).
constexpr int64_t kW8a16MinM = 64;

// y[i][r] (f32, row i at d + i·ldd) = Σ_k bf16(x[i][k]) · bf16(bf16(q[r][k]) · s[k / group][r])
// for i < m, r < n_pad, k < k_pad, accumulated in FP32.
struct W8a16Sm90Problem {
    int m = 0, n_pad = 0, k_pad = 0;
    int group = 0;                    // the weight's scale block (K per scale)
    const int8_t* w = nullptr;        // [n_pad][k_pad] signed codes, 16-byte aligned
    const uint16_t* scales = nullptr; // [k_pad / group][n_pad] BF16, 16-byte aligned
    const uint16_t* x = nullptr;      // [m][ldx] BF16, zeros in k >= K, 16-byte aligned
    int64_t ldx = 0;                  // >= k_pad, a multiple of 8
    float* d = nullptr;               // [m][ldd] f32, 16-byte aligned
    int64_t ldd = 0;                  // >= n_pad, a multiple of 4
};

// Whether a weight of this shape can run on the kernel: blocked INT8 with a block that is a
// multiple of the K tile and K padded to whole blocks (TMA rows of 16 bytes follow).
inline bool w8a16_shape_ok(int kb, int k_pad, int n_pad) {
    return kb > 0 && kb % kW8a16TileK == 0 && k_pad % kb == 0 && n_pad % 8 == 0 && n_pad > 0;
}

// Null when the problem is one the kernel takes, else what is wrong with it.
inline const char* w8a16_sm90_problem_error(const W8a16Sm90Problem& p) {
    const auto misaligned = [](const void* q) { return reinterpret_cast<uintptr_t>(q) % 16 != 0; };
    if (p.m < 1) return "m < 1";
    if (!w8a16_shape_ok(p.group, p.k_pad, p.n_pad)) return "the weight's block, K or n padding";
    if (!p.w || !p.scales || !p.x || !p.d) return "a null operand";
    if (misaligned(p.w) || misaligned(p.scales) || misaligned(p.x) || misaligned(p.d))
        return "an operand not 16-byte aligned";
    if (p.ldx < p.k_pad || p.ldx % 8 != 0) return "the row pitch of x";
    if (p.ldd < p.n_pad || p.ldd % 4 != 0) return "the row pitch of d";
    return nullptr;
}

// The BF16 scale table the kernel reads, from layout.h's f16 scales [n_pad][nkb]: entry
// (b, r) at out[b · n_pad + r] = bf16(f16 scale of row r, block b), round to nearest even
// (a NaN stays a NaN). `out` has nkb · n_pad entries.
inline void w8a16_scales(const uint16_t* f16_scales, int n_pad, int nkb, uint16_t* out) {
    for (int r = 0; r < n_pad; ++r)
        for (int b = 0; b < nkb; ++b)
            out[size_t(b) * size_t(n_pad) + size_t(r)] = f32_to_bf16(f16_to_f32(f16_scales[size_t(r) * size_t(nkb) + size_t(b)]));
}

}  // namespace cudak
}  // namespace vt

// The INT8 W8A16 GEMM for Hopper (cutlass_w8a16_sm90.cu) as the prefill uses it: the problem,
// its checks, which linears it takes, and the BF16 scale tables it reads. Plain C++ (no CUDA
// header) so that tests/test_cuda_host.py checks them on any machine (host_check.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "half.h"

namespace vt {
namespace cudak {

// The kernel's K tile. CUTLASS's mixed-input GEMM reads one scale per weight row and *group*
// of K, a whole number of K tiles, and wants at least four BF16 MMAs (k 16 each) per tile, so
// its smallest group is 64. Blocks of 64 and 128 are their own groups. Smaller blocks (INT8's
// default 32, or 16) run in `phases` = 64 / block passes over the same weight: pass b reads,
// for each group of 64, the scale of its block b (the b-th block of 32 or 16 inside it) and
// an x whose other blocks are zero, so pass b sums exactly the products of blocks b, b + P,
// ...; the passes' sums added give every block with its own scale (P times the MMA work).
constexpr int kW8a16TileK = 64;
// Rows of x below which the prefill keeps gemm.cu's kernel (the tile holds 128 rows of x).
constexpr int64_t kW8a16MinM = 64;

// Passes for a weight with blocks of kb: 1 (kb a multiple of 64), 2 (32), 4 (16); 0 when the
// kernel cannot take it.
inline int w8a16_phases(int kb) {
    if (kb > 0 && kb % kW8a16TileK == 0) return 1;
    if (kb == 32) return 2;
    if (kb == 16) return 4;
    return 0;
}
// K per scale as CUTLASS reads it.
inline int w8a16_group(int kb) { return kb >= kW8a16TileK ? kb : kW8a16TileK; }
// Scale groups along K (CUTLASS: ceil(K / group)).
inline int w8a16_groups(int kb, int k_pad) { return (k_pad + w8a16_group(kb) - 1) / w8a16_group(kb); }

// Whether a weight of this shape can run on the kernel: blocked INT8 with a block it takes, K
// padded to whole blocks, rows padded to 8 (16-byte TMA rows of BF16 scales).
inline bool w8a16_shape_ok(int kb, int k_pad, int n_pad) {
    return w8a16_phases(kb) > 0 && k_pad > 0 && k_pad % kb == 0 && n_pad % 8 == 0 && n_pad > 0;
}

// Entries of the scale tables of a weight (all passes): phases · groups · n_pad.
inline size_t w8a16_scale_entries(int kb, int k_pad, int n_pad) {
    return size_t(w8a16_phases(kb)) * size_t(w8a16_groups(kb, k_pad)) * size_t(n_pad);
}

// For each pass b < phases: d_b[i][r] (f32, row i at d + b·d_phase + i·ldd) =
//   Σ_k bf16(x_b[i][k]) · bf16(bf16(q[r][k]) · s_b[k / group][r])
// for i < m, r < n_pad, k < k_pad, accumulated in FP32; x_b at x + b·x_phase, s_b at
// scales + b·groups·n_pad (w8a16_scales), each pass one CUTLASS launch.
struct W8a16Sm90Problem {
    int m = 0, n_pad = 0, k_pad = 0;
    int block = 0;                    // the weight's scale block (K per scale)
    const int8_t* w = nullptr;        // [n_pad][k_pad] signed codes, 16-byte aligned
    const uint16_t* scales = nullptr; // [phases][groups][n_pad] BF16, 16-byte aligned
    const uint16_t* x = nullptr;      // [phases][m][ldx] BF16 (to_bf16_rows), 16-byte aligned
    int64_t ldx = 0;                  // >= k_pad, a multiple of 8
    int64_t x_phase = 0;              // elements between the passes' x, a multiple of 8
    float* d = nullptr;               // [phases][m][ldd] f32, 16-byte aligned
    int64_t ldd = 0;                  // >= n_pad, a multiple of 4
    int64_t d_phase = 0;              // elements between the passes' d, a multiple of 4
};

// Null when the problem is one the kernel takes, else what is wrong with it.
inline const char* w8a16_sm90_problem_error(const W8a16Sm90Problem& p) {
    const auto misaligned = [](const void* q) { return reinterpret_cast<uintptr_t>(q) % 16 != 0; };
    if (p.m < 1) return "m < 1";
    if (!w8a16_shape_ok(p.block, p.k_pad, p.n_pad)) return "the weight's block, K or n padding";
    if (!p.w || !p.scales || !p.x || !p.d) return "a null operand";
    if (misaligned(p.w) || misaligned(p.scales) || misaligned(p.x) || misaligned(p.d))
        return "an operand not 16-byte aligned";
    if (p.ldx < p.k_pad || p.ldx % 8 != 0) return "the row pitch of x";
    if (p.ldd < p.n_pad || p.ldd % 4 != 0) return "the row pitch of d";
    if (w8a16_phases(p.block) > 1 && (p.x_phase < int64_t(p.m) * p.ldx || p.x_phase % 8 != 0 ||
                                      p.d_phase < int64_t(p.m) * p.ldd || p.d_phase % 4 != 0))
        return "the distance between the passes' x or d";
    return nullptr;
}

// The BF16 scale tables the kernel reads, from layout.h's f16 scales [n_pad][nkb] (nkb =
// k_pad / kb): pass b, group g, row r at out[(b · groups + g) · n_pad + r] = bf16 of the f16
// scale of row r, block g · phases + b (0 past the last block), round to nearest even (a NaN
// stays a NaN). `out` has w8a16_scale_entries entries.
inline void w8a16_scales(const uint16_t* f16_scales, int n_pad, int k_pad, int kb, uint16_t* out) {
    const int nkb = k_pad / kb, phases = w8a16_phases(kb), groups = w8a16_groups(kb, k_pad);
    for (int b = 0; b < phases; ++b)
        for (int g = 0; g < groups; ++g) {
            const int blk = g * phases + b;
            uint16_t* o = out + (size_t(b) * size_t(groups) + size_t(g)) * size_t(n_pad);
            for (int r = 0; r < n_pad; ++r)
                o[r] = blk < nkb ? f32_to_bf16(f16_to_f32(f16_scales[size_t(r) * size_t(nkb) + size_t(blk)])) : 0;
        }
}

}  // namespace cudak
}  // namespace vt

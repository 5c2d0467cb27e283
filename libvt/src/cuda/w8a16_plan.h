// The INT8 W8A16 GEMM for Hopper (cutlass_w8a16_sm90.cu) as the prefill uses it: the problem,
// its checks, which linears it takes, and the BF16 scale tables it reads. Plain C++ (no CUDA
// header) so that tests/test_cuda_host.py checks them on any machine (host_check.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "half.h"

namespace vt {
namespace cudak {

// VT_CUDA_PREFILL_GEMM's value (null: unset): true for `wgmma`, false for `mma`, unset or
// empty; anything else is refused with *error = the one-line message naming it (runtime.cpp's
// prefill_wgmma throws it).
inline bool prefill_gemm_wgmma(const char* v, std::string* error) {
    error->clear();
    if (!v || !*v || std::strcmp(v, "mma") == 0) return false;
    if (std::strcmp(v, "wgmma") == 0) return true;
    *error = "VT_CUDA_PREFILL_GEMM=" + std::string(v).substr(0, 40) + ": expected mma (the default) or wgmma";
    return false;
}

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

// The weight codes the kernel reads (cutlass_w8a16_sm90.cu): INT8 (signed bytes) and E4M3 as
// q · s, the two 4-bit formats as unsigned nibbles u · s + z (INT4: z = -8 s; INT4_MIN: z = min).
enum W8a16Weight : int { kW8a16Int8 = 0, kW8a16Fp8 = 1, kW8a16U4 = 2 };

// Passes for a weight with blocks of kb along k_pad (kb = k_pad: one block per row, FP8's
// per-channel format): 1 (one block, or kb a multiple of 64), 2 (32), 4 (16); 0 when the kernel
// cannot take it.
inline int w8a16_phases(int kb, int k_pad) {
    if (kb > 0 && (kb == k_pad || kb % kW8a16TileK == 0)) return 1;
    if (kb == 32) return 2;
    if (kb == 16) return 4;
    return 0;
}
// K per scale as CUTLASS reads it (one pass: the block itself; CUTLASS also takes a group of K).
inline int w8a16_group(int kb, int k_pad) { return w8a16_phases(kb, k_pad) == 1 ? kb : kW8a16TileK; }
// Scale groups along K (CUTLASS: ceil(K / group)).
inline int w8a16_groups(int kb, int k_pad) {
    const int g = w8a16_group(kb, k_pad);
    return g > 0 ? (k_pad + g - 1) / g : 0;
}

// Whether a weight of this shape can run on the kernel: a block it takes, K padded to whole
// blocks and to 16-byte TMA rows of the weights (16 for the 8-bit formats, 32 for the 4-bit
// ones: with one scale per row the block alone does not say so), rows padded to 8 (16-byte
// TMA rows of the BF16 tables). A shape that fails here takes the mma path; CUTLASS's own
// check failing later would stop the prefill instead.
inline bool w8a16_shape_ok(int kb, int k_pad, int n_pad, int wtype = kW8a16Int8) {
    return w8a16_phases(kb, k_pad) > 0 && k_pad > 0 && k_pad % kb == 0 && n_pad % 8 == 0 && n_pad > 0 &&
           k_pad % (wtype == kW8a16U4 ? 32 : 16) == 0;
}

// Entries of a weight's scale tables (all passes), and of its zero tables (4-bit): phases ·
// groups · n_pad.
inline size_t w8a16_scale_entries(int kb, int k_pad, int n_pad) {
    return size_t(w8a16_phases(kb, k_pad)) * size_t(w8a16_groups(kb, k_pad)) * size_t(n_pad);
}

// For each pass b < phases: d_b[i][r] (f32, row i at d + b·d_phase + i·ldd) =
//   Σ_k bf16(x_b[i][k]) · bf16(bf16(q[r][k]) · s_b[k / group][r])
// for i < m, r < n_pad, k < k_pad, accumulated in FP32; x_b at x + b·x_phase, s_b at
// scales + b·groups·n_pad (w8a16_scales), each pass one CUTLASS launch.
struct W8a16Sm90Problem {
    int m = 0, n_pad = 0, k_pad = 0;
    int block = 0;                    // the weight's scale block (K per scale; k_pad: per channel)
    int wtype = kW8a16Int8;           // W8a16Weight
    const void* w = nullptr;          // [n_pad][k_pad] codes (4-bit: two per byte), 16-byte aligned
    const uint16_t* scales = nullptr; // [phases][groups][n_pad] BF16, 16-byte aligned
    const uint16_t* zeros = nullptr;  // the same for z (kW8a16U4 only, else null)
    const uint16_t* x = nullptr;      // [phases][m][ldx] BF16 (to_bf16_rows), 16-byte aligned
    int64_t ldx = 0;                  // >= k_pad, a multiple of 8
    int64_t x_phase = 0;              // elements between the passes' x, a multiple of 8
    float* d = nullptr;               // [phases][m][ldd] f32, 16-byte aligned
    int64_t ldd = 0;                  // >= n_pad, a multiple of 4
    int64_t d_phase = 0;              // elements between the passes' d, a multiple of 4
};

// The problem of m rows through a weight as the engine lays out its scratch: x and d with the
// weight's pitches (k_pad, n_pad), the passes' copies one after the other (m · pitch apart).
inline W8a16Sm90Problem w8a16_problem(int m, int n_pad, int k_pad, int block, int wtype, const void* w,
                                      const uint16_t* scales, const uint16_t* zeros, const uint16_t* x, float* d) {
    W8a16Sm90Problem p;
    p.m = m;
    p.n_pad = n_pad;
    p.k_pad = k_pad;
    p.block = block;
    p.wtype = wtype;
    p.w = w;
    p.scales = scales;
    p.zeros = zeros;
    p.x = x;
    p.ldx = k_pad;
    p.x_phase = int64_t(m) * k_pad;
    p.d = d;
    p.ldd = n_pad;
    p.d_phase = int64_t(m) * n_pad;
    return p;
}

// Pass b's problem: its tables, its x, its d (one CUTLASS launch each).
inline W8a16Sm90Problem w8a16_pass(const W8a16Sm90Problem& p, int b) {
    const size_t table = size_t(w8a16_groups(p.block, p.k_pad)) * size_t(p.n_pad);
    W8a16Sm90Problem q = p;
    q.scales = p.scales + size_t(b) * table;
    if (p.zeros) q.zeros = p.zeros + size_t(b) * table;
    q.x = p.x + b * p.x_phase;
    q.d = p.d + b * p.d_phase;
    return q;
}

// Null when the problem is one the kernel takes, else what is wrong with it.
inline const char* w8a16_sm90_problem_error(const W8a16Sm90Problem& p) {
    const auto misaligned = [](const void* q) { return reinterpret_cast<uintptr_t>(q) % 16 != 0; };
    if (p.m < 1) return "m < 1";
    if (p.wtype != kW8a16Int8 && p.wtype != kW8a16Fp8 && p.wtype != kW8a16U4) return "the weight type";
    if (!w8a16_shape_ok(p.block, p.k_pad, p.n_pad, p.wtype)) return "the weight's block, K or n padding";
    if (!p.w || !p.scales || !p.x || !p.d || (p.wtype == kW8a16U4) != (p.zeros != nullptr))
        return "a null operand (or zeros where the weight type has none)";
    if (misaligned(p.w) || misaligned(p.scales) || misaligned(p.x) || misaligned(p.d) ||
        (p.zeros && misaligned(p.zeros)))
        return "an operand not 16-byte aligned";
    if (p.ldx < p.k_pad || p.ldx % 8 != 0) return "the row pitch of x";
    if (p.ldd < p.n_pad || p.ldd % 4 != 0) return "the row pitch of d";
    if (w8a16_phases(p.block, p.k_pad) > 1 && (p.x_phase < int64_t(p.m) * p.ldx || p.x_phase % 8 != 0 ||
                                      p.d_phase < int64_t(p.m) * p.ldd || p.d_phase % 4 != 0))
        return "the distance between the passes' x or d";
    return nullptr;
}

// The BF16 tables the kernel reads, from layout.h's f16 scales (and mins) [n_pad][nkb], nkb =
// k_pad / kb: pass b, group g, row r at out[(b · groups + g) · n_pad + r] is, for row r's block
// g · phases + b (0 past the last block), round to nearest even (a NaN stays a NaN):
//   w8a16_scales: bf16(scale), or 1 where f16_scales is null (a per-channel weight: its scale
//                 is the row multiplier, applied after the GEMM);
//   w8a16_zeros:  bf16(min) (INT4_MIN), or bf16(-8 · scale) where f16_mins is null (INT4,
//                 whose codes are u = q + 8).
// `out` has w8a16_scale_entries entries.
template <class F>
inline void w8a16_table(int n_pad, int k_pad, int kb, uint16_t* out, F value) {
    const int nkb = k_pad / kb, phases = w8a16_phases(kb, k_pad), groups = w8a16_groups(kb, k_pad);
    for (int b = 0; b < phases; ++b)
        for (int g = 0; g < groups; ++g) {
            const int blk = g * phases + b;
            uint16_t* o = out + (size_t(b) * size_t(groups) + size_t(g)) * size_t(n_pad);
            for (int r = 0; r < n_pad; ++r) o[r] = blk < nkb ? f32_to_bf16(value(size_t(r) * size_t(nkb) + size_t(blk))) : 0;
        }
}

inline void w8a16_scales(const uint16_t* f16_scales, int n_pad, int k_pad, int kb, uint16_t* out) {
    w8a16_table(n_pad, k_pad, kb, out, [&](size_t i) { return f16_scales ? f16_to_f32(f16_scales[i]) : 1.0f; });
}

inline void w8a16_zeros(const uint16_t* f16_scales, const uint16_t* f16_mins, int n_pad, int k_pad, int kb,
                        uint16_t* out) {
    w8a16_table(n_pad, k_pad, kb, out,
                [&](size_t i) { return f16_mins ? f16_to_f32(f16_mins[i]) : -8.0f * f16_to_f32(f16_scales[i]); });
}

}  // namespace cudak
}  // namespace vt

// The device layout of a packed linear, and the host-side repack from the CPU's row tiles
// (quant.h) into it. Plain C++ (no CUDA): the engine fills host staging buffers with it and
// copies them to the device; tests/test_cuda_host.py compiles it with the host checks.
//
// Device layout of one linear with n logical output rows and K inputs:
//   w       [n_pad][row_bytes()] row-major codes: INT8 as the signed byte q, FP8 E4M3 as is (1 byte),
//                                BF16 (2 bytes); the two 4-bit formats two k per byte as the
//                                CPU stores them (k = 2j in the low nibble of byte j, 2j + 1 in
//                                the high one; u = q + 8 for INT4, u for INT4_MIN). Rows past n
//                                and columns past K hold zero weights (INT4: u = 8; INT4_MIN:
//                                u = 0, see below).
//   scales  [n_pad][nkb]         f16 block scales, unchanged from the CPU packer (blocked
//                                formats only; blocks past K are 0).
//   mins    [n_pad][nkb]         f16 block minimums (INT4_MIN only; blocks past K are 0).
//   rowmul  [n_pad]              f32 per-row multiplier: INT8 / INT4 / INT4_MIN 2^e (or 1 from
//                                GGUF), FP8 blocked 2^e (the CPU's rowmul / 256), FP8 channel
//                                absmax/448, BF16 1; pads 0.
// Weight (r, k) = code(r, k) · f16(scales[r][k / kb]) · rowmul[r], for INT4_MIN
// (u · f16(scale) + f16(min)) · rowmul[r] — the same f32 as vt_packed_unpack, bit for bit
// (dev_weight() below computes it that way; the host check compares). INT4_MIN columns past K
// inside the last real block decode to that block's min, not 0: the kernels multiply them by
// inputs that are zero past K (staged so), as the CPU's block sums of x stop at K. Rows may be reordered relative to the CPU matrix (RowSource): Q and K rows are
// paired for RoPE, gate and up rows are interleaved, so a warp's two rows are the two inputs of
// one fused epilogue.
//
// Why row-major and not the CPU's 16-row tiles: a GPU thread loads 16 consecutive bytes of one
// row (16 weights of one output, all in one scale block; 32 4-bit weights, two halves of 16
// that each lie in one block), so it can sum 16 products before it touches a scale, and 32
// lanes cover 512 contiguous bytes per load instruction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common.h"
#include "quant.h"

namespace vt {
namespace cudak {

enum DevFormat : int32_t { kDevInt8 = 0, kDevFp8 = 1, kDevFp8Channel = 2, kDevBf16 = 3, kDevInt4 = 4, kDevInt4Min = 5 };

// The two 4-bit formats: two k per byte.
inline bool dev_fmt_4bit(int32_t fmt) { return fmt == kDevInt4 || fmt == kDevInt4Min; }

constexpr int kRowPad = 64;  // n_pad multiple: GEMM tiles are 64 rows
constexpr int kColPad = 32;  // k_pad multiple: GEMM k-step

struct LinearShape {
    int32_t fmt = kDevInt8;
    int32_t n = 0, k = 0;      // logical output rows, inputs
    int32_t n_pad = 0;         // multiple of kRowPad
    int32_t k_pad = 0;         // multiple of kColPad (4-bit formats: also of kb)
    int32_t kb = 0;            // K per scale block (blocked formats), else k_pad
    int32_t nkb = 0;           // scale blocks per row (k_pad / kb), 0 without block scales
    int32_t esize = 1;         // bytes per weight code (1 for the 4-bit formats too: row_bytes)
    float post = 1.0f;         // constant factor of the FP8 formats' decoding (2^56), else 1
    int64_t row_bytes() const { return dev_fmt_4bit(fmt) ? int64_t(k_pad) / 2 : int64_t(k_pad) * esize; }
    bool has_mins() const { return fmt == kDevInt4Min; }
    size_t w_bytes() const { return size_t(n_pad) * size_t(row_bytes()); }
    size_t scale_bytes() const { return size_t(n_pad) * size_t(nkb) * 2; }
    size_t min_bytes() const { return has_mins() ? scale_bytes() : 0; }
    size_t rowmul_bytes() const { return size_t(n_pad) * 4; }
};

// Device row r is row `row` of *p (row < 0 or p null: a zero row).
struct RowSource {
    const vt_packed* p = nullptr;
    int64_t row = -1;
};

// Shape of a device linear with `n` rows taken from packed weights like p (format, K, block).
// Throws VT_STATUS_UNSUPPORTED for the 2:4 sparse formats (they have their own layout, below).
// The 4-bit formats pad K to a multiple of their block too (their last CPU block may be short).
LinearShape linear_shape(const vt_packed& p, int64_t n);

// Row orders. Each returns n_pad entries (the tail padded with zero rows).
std::vector<RowSource> rows_plain(const vt_packed& p);
// Fused QKV [(nh + 2·nkv)·hd, K]: inside each Q and K head, device rows 2j and 2j + 1 are
// head dims j and j + rot/2 (the two halves RoPE rotates together; rot = hd unless partial
// rotary embeddings rotate fewer), then dims rot .. hd - 1 in order; V rows keep their order.
std::vector<RowSource> rows_qkv(const vt_packed& qkv, int64_t nh, int64_t nkv, int64_t hd, int64_t rot = 0);
// Rows a0 b0 a1 b1 ... (gate/up: the SwiGLU epilogue gets silu(a_i) · b_i from one warp).
std::vector<RowSource> rows_interleave(const vt_packed& a, const vt_packed& b);

// Per-row values of the checkpoint (a linear's bias) in a device row order: entry r is
// values[rows[r].row] of the RowValues whose p is rows[r].p; 0 for padding rows and for rows
// of a source with no values (v null). One entry per row of `rows`.
struct RowValues {
    const vt_packed* p = nullptr;
    const float* v = nullptr;  // [p->out] or null
};
std::vector<float> row_values(const std::vector<RowSource>& rows, const std::vector<RowValues>& src);

// Fills device rows [r0, r1) of the host staging buffers w [w_bytes()], scales [n_pad·nkb]
// (null when nkb is 0), mins [n_pad·nkb] (INT4_MIN only, else null) and rowmul [n_pad].
// Thread-safe for disjoint row ranges.
void repack_rows(const LinearShape& s, const RowSource* rows, int64_t r0, int64_t r1, uint8_t* w,
                 uint16_t* scales, uint16_t* mins, float* rowmul);

// Weight (r, k) of a repacked linear, computed exactly as vt_packed_unpack does (the host check
// compares the two bit for bit; the kernels compute the same products in another order).
float dev_weight(const LinearShape& s, const uint8_t* w, const uint16_t* scales, const uint16_t* mins,
                 const float* rowmul, int64_t r, int64_t k);

// ---- 2:4 sparse formats: the layout of CUTLASS's SparseGemm (sm_80 mma.sp, INT8) ---------------
//
// The GEMM computes accᵀ[n][m] = W[n][K] · xq[m][K]ᵀ with W as the sparse operand A (row-major)
// and the quantized input as B (column-major, i.e. xq row-major). Device buffers, for n rows
// padded to n_pad and K padded to k_pad with zero groups:
//   a      [n_pad][k_pad/2] int8  the kept values of each group of 4 along K, in K order: the
//                                 CPU's q row as it is (INT8) or each INT4 nibble sign-extended
//                                 to a byte (INT4_SPARSE24 runs on the INT8 kernel, exactly:
//                                 |q| ≤ 7 and the input is quantized to [-7, 7] too; INT4 sparse
//                                 tensor cores need 4:8 *pair* sparsity, which 2:4 is not).
//   e      [n_pad·k_pad/32] u32   metadata: logical word (r, c) holds, in nibble j (bits 4j..4j+3),
//                                 the CPU's meta byte of group 8c + j (idx0 | idx1 << 2, idx0 <
//                                 idx1; a zero group is 0x4). The words are stored reordered as
//                                 cutlass::reorder_meta does for a 32-bit ElementE (rows permuted
//                                 within groups of 16 for ldmatrix, 2×2 blocks swapped Z → N) into
//                                 layout::ColumnMajorInterleaved<2> with ldm 2·n_pad:
//                                 sparse_meta_index() below.
//   wscale [n_pad] f32            the CPU's per-channel scale (pads 0).
// Weight (r, k) = a[r][2g + i] · wscale[r] where g = k / 4 and k % 4 is the i-th kept index of
// group g: exactly vt_packed_unpack's value (sparse_dev_weight() decodes it that way; the host
// check compares).
constexpr int kSparseRowPad = 128;  // n_pad multiple: the sparse GEMM's M tile
constexpr int kSparseColPad = 128;  // k_pad multiple: its K tile (the metadata needs 64)

struct SparseShape {
    int32_t n = 0, k = 0, n_pad = 0, k_pad = 0;
    bool int4 = false;  // INT4_SPARSE24 (values widened to int8 here)
    int64_t meta_cols() const { return int64_t(k_pad) / 32; }
    size_t a_bytes() const { return size_t(n_pad) * size_t(k_pad / 2); }
    size_t e_bytes() const { return size_t(n_pad) * size_t(meta_cols()) * 4; }
    size_t scale_bytes() const { return size_t(n_pad) * 4; }
};

// Shape of the device copy of a 2:4 sparse packed weight. Throws VT_STATUS_UNSUPPORTED for a
// dense format or sizes past 32-bit indexing.
SparseShape sparse_shape(const vt_packed& p);

// Position of logical metadata word (r, c) (r < n_pad, c < k_pad/32) in the stored buffer.
int64_t sparse_meta_index(const SparseShape& s, int64_t r, int64_t c);

// Fills a [a_bytes], e [e_bytes / 4] and wscale [n_pad] from p's CPU storage.
void repack_sparse(const SparseShape& s, const vt_packed& p, int8_t* a, uint32_t* e, float* wscale);

// Weight (r, k) of a repacked sparse linear, decoded from a / e / wscale (for the host check).
float sparse_dev_weight(const SparseShape& s, const int8_t* a, const uint32_t* e, const float* wscale, int64_t r,
                        int64_t k);

}  // namespace cudak
}  // namespace vt

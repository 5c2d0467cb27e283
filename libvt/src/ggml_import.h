// GGUF quantized blocks kept as they are (issue 18). pyvt's GGUF conversion (pyvt/convert.py)
// names each Q8_0, Q4_0 and Q4_1 tensor under the pyvt-private dtypes GGML_Q8_0 / GGML_Q4_0 /
// GGML_Q4_1 — written into its SafeTensors file unchanged, or left in the GGUF and referred to
// (safetensors.h, kGgufRefsName) — : the shape is the logical [rows, cols] (cols a multiple of
// 32) and the data is the rows * cols / 32 blocks of ggml, row-major, each block 32
// consecutive weights of a row:
//   Q8_0  f16 d | int8 q[32]           w = q · d
//   Q4_0  f16 d | u8 qs[16]            w = (u - 8) · d      u of k = j: qs[j] & 15,
//   Q4_1  f16 d | f16 m | u8 qs[16]    w = u · d + m        u of k = j + 16: qs[j] >> 4
// pack_ggml repacks such rows into the libvt format that holds the same numbers exactly (no
// second quantization): Q8_0 -> INT8_BLOCKED-32, Q4_0 -> INT4_BLOCKED-32, Q4_1 ->
// INT4_MIN_BLOCKED-32, each with the block's f16 scale (and min) as stored and rowmul 1.
// GGML_Q4_K / GGML_Q5_0 / GGML_Q6_K / GGML_IQ4_NL / GGML_IQ4_XS (a GGUF's own bytes, referred to) are converted row by row
// into the blocks of their carrier type below as they are packed.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "quant.h"

namespace vt {

constexpr int kGgmlBlock = 32;  // weights per block of the types libvt packs (Q8_0, Q4_0, Q4_1)
// ggml_type ids (ggml.h).
constexpr int kGgmlQ4_0 = 2;
constexpr int kGgmlQ4_1 = 3;
constexpr int kGgmlQ5_0 = 6;
constexpr int kGgmlQ8_0 = 8;
constexpr int kGgmlQ4_K = 12;
constexpr int kGgmlQ6_K = 14;
constexpr int kGgmlIQ4_NL = 20;
constexpr int kGgmlIQ4_XS = 23;

// Types carried by another (pyvt/convert.py writes the same blocks when it copies them; here
// they are converted row by row as they are packed, so a folder may refer to a GGUF's own
// bytes): Q4_K superblocks of 256 as the Q4_1 blocks of their eight sub-blocks (the codes as
// they are, each sub-block's scale d·sc and min −dmin·m rounded to f16); Q5_0 as Q8_0 blocks of
// the same numbers (exact); Q6_K as Q8_0 blocks of its values rounded as ggml's
// quantize_row_q8_0_ref does (8.5 bits for 6.56: a 4-bit format would drop the bits a Q4_K_M
// file gives its Q6_K tensors); IQ4_NL as the Q8_0 blocks of the same numbers (its 16 levels are
// int8 codes: exact) and IQ4_XS likewise, each sub-block's scale d·(ls − 32) rounded to f16.
//   Q5_0    f16 d | u32 qh | u8 qs[16]                    w = d · (u + 16·hbit − 16)
//   Q4_K    f16 d | f16 dmin | u8 scales[12] | u8 qs[128]   sub-block s: w = d·sc_s·u − dmin·m_s
//   Q6_K    u8 ql[128] | u8 qh[64] | i8 scales[16] | f16 d   w = d · sc · (q − 32)
//   IQ4_NL  f16 d | u8 qs[16]                              w = d · kvalues[u]
//   IQ4_XS  f16 d | u16 scales_h | u8 scales_l[4] | u8 qs[128]   sub-block s: w = d·(ls_s − 32)·kvalues[u]
int ggml_carrier(int type);        // Q4_K -> Q4_1; Q5_0, Q6_K, IQ4_NL, IQ4_XS -> Q8_0; Q8_0 / Q4_0 / Q4_1 themselves; else -1
int ggml_block_weights(int type);  // 32, or 256 (Q4_K, Q6_K, IQ4_XS); 0 for another type
size_t ggml_block_bytes(int type);  // 34, 18, 20, 22, 144, 210, 18, 136; 0 for another type
const char* ggml_type_name(int type);  // "Q8_0", ...
// Whether pack_ggml takes `type` (its carrier's format has CPU kernels in this build).
bool ggml_packable(int type);
// The format pack_ggml produces for `type` (its carrier's).
vt_format ggml_native_format(int type);

// Consecutive rows of one block tensor (several parts are stacked: q | k | v).
struct GgmlRows {
    const uint8_t* data;  // rows * cols / ggml_block_weights(type) blocks (any alignment)
    int64_t rows;
    int type = -1;        // this part's type when not pack_ggml's `type` (one carrier for all)
};

// The stacked rows of `parts` (of `type`, or each of its own type: all with one carrier, `cols`
// columns, a multiple of ggml_block_weights) in ggml_native_format(type), bit-exact with the
// carrier's blocks. A non-finite block scale or min (a carried type's: one that rounds to an
// f16 infinity) throws FORMAT_ERROR naming the row and block.
std::unique_ptr<Packed> pack_ggml(const std::vector<GgmlRows>& parts, int type, int64_t cols);

// dst[rows, cols] = the weights as f32: the carrier's blocks' values (exact: every value is a
// product of an f16 and a small integer, plus an f16). Throws like pack_ggml.
void dequantize_ggml(const uint8_t* data, int type, int64_t rows, int64_t cols, float* dst);

// Bytes of one row of `cols` weights of `type`.
inline size_t ggml_row_bytes(int type, int64_t cols) {
    return size_t(cols / ggml_block_weights(type)) * ggml_block_bytes(type);
}

}  // namespace vt

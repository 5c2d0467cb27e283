// GGUF quantized blocks kept as they are (issue 18). pyvt's GGUF conversion (pyvt/convert.py)
// writes each Q8_0, Q4_0 and Q4_1 tensor into its SafeTensors file unchanged, under the
// pyvt-private dtypes GGML_Q8_0 / GGML_Q4_0 / GGML_Q4_1: the header's shape is the logical
// [rows, cols] (cols a multiple of 32) and the data is the rows * cols / 32 blocks of ggml,
// row-major, each block 32 consecutive weights of a row:
//   Q8_0  f16 d | int8 q[32]           w = q · d
//   Q4_0  f16 d | u8 qs[16]            w = (u - 8) · d      u of k = j: qs[j] & 15,
//   Q4_1  f16 d | f16 m | u8 qs[16]    w = u · d + m        u of k = j + 16: qs[j] >> 4
// pack_ggml repacks such rows into the libvt format that holds the same numbers exactly (no
// second quantization): Q8_0 -> INT8_BLOCKED-32, Q4_0 -> INT4_BLOCKED-32, Q4_1 ->
// INT4_MIN_BLOCKED-32, each with the block's f16 scale (and min) as stored and rowmul 1.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "quant.h"

namespace vt {

constexpr int kGgmlBlock = 32;  // weights per block of every type here
// ggml_type ids (ggml.h).
constexpr int kGgmlQ4_0 = 2;
constexpr int kGgmlQ4_1 = 3;
constexpr int kGgmlQ8_0 = 8;

size_t ggml_block_bytes(int type);  // 34, 18, 20; 0 for another type
const char* ggml_type_name(int type);  // "Q8_0", ...
// Whether pack_ggml takes `type` (its format has CPU kernels in this build).
bool ggml_packable(int type);
// The format pack_ggml produces for `type`.
vt_format ggml_native_format(int type);

// Consecutive rows of one block tensor (several parts are stacked: q | k | v).
struct GgmlRows {
    const uint8_t* data;  // rows * cols / 32 blocks (any alignment)
    int64_t rows;
};

// The stacked rows of `parts` (all of `type`, `cols` columns) in ggml_native_format(type),
// bit-exact. A non-finite block scale or min throws FORMAT_ERROR naming the row and block.
std::unique_ptr<Packed> pack_ggml(const std::vector<GgmlRows>& parts, int type, int64_t cols);

// dst[rows, cols] = the weights as f32 (exact: every value is a product of an f16 and a small
// integer, plus an f16). Throws like pack_ggml.
void dequantize_ggml(const uint8_t* data, int type, int64_t rows, int64_t cols, float* dst);

}  // namespace vt

// Element conversions (FP8 E4M3, BF16, F16, F32, F64) and transpose.
#pragma once

#include <cstddef>
#include <cstdint>

#include "half.h"  // f32_to_f16, f16_to_f32, f32_to_bf16, bf16_to_f32
#include "vt/vt.h"

namespace vt {

// Exact OCP e4m3fn: round-to-nearest-even, saturate finite/inf to ±448, NaN -> 0x7F|sign.
uint8_t f32_to_fp8(float x);
float fp8_to_f32(uint8_t b);
const float* fp8_table();  // 256 decoded values

// Bulk conversion between any two of F32, F64, F16, BF16, F8_E4M3 (throws vt::Error).
void convert(const void* src, vt_dtype src_dtype, void* dst, vt_dtype dst_dtype, size_t n);

// Any supported float dtype (F32, F16, BF16, F64) -> f32, n elements, multithreaded.
void to_f32(const void* src, vt_dtype dtype, float* dst, size_t n);

void transpose(const void* src, void* dst, size_t rows, size_t cols, size_t elem_size);

}  // namespace vt

// Packed (quantized) weights and the linears over them. Layout details of each format are
// private to pack.cpp / linear.cpp / cpu/kernels_*.cpp; everything else goes through the
// functions below (prepack, unpack, unpack_rows, linear, linear_swiglu).
#pragma once

#include <cstdint>
#include <memory>

#include "common.h"
#include "backend.h"
#include "memory.h"

namespace vt {
// Owning, *uninitialized* array: packing a 1 GB model must not first zero 1 GB on one
// thread (std::vector value-initializes); the packing threads touch the pages.
template <class T>
class RawBuf {
public:
    RawBuf() = default;
    RawBuf(const RawBuf&) = delete;
    RawBuf& operator=(const RawBuf&) = delete;
    ~RawBuf() { free_weights(p_); }
    void allocate(size_t n) {
        free_weights(p_);
        p_ = nullptr;
        n_ = 0;
        if (n > (SIZE_MAX - (4u << 20)) / sizeof(T)) throw std::bad_alloc();
        p_ = static_cast<T*>(alloc_weights(n * sizeof(T)));
        n_ = n;
    }
    T* data() { return p_; }
    const T* data() const { return p_; }
    size_t size() const { return n_; }

private:
    T* p_ = nullptr;
    size_t n_ = 0;
};
}  // namespace vt

// The opaque C handle is this struct.
//
// Dense formats (FP8_CHANNEL, FP8_BLOCKED, INT8_BLOCKED, BF16) are stored as row tiles:
// 16 consecutive output rows interleaved along K, so the m == 1 GEMV loads one 16-lane
// vector per k (one weight of each of 16 rows), keeps 16 outputs in one register, and
// streams each tile as one contiguous run of memory. Tile t (rows 16t .. 16t+15, the last
// one zero-padded) starts at tiles.data() + t * tile_bytes and holds
//   weights  [in][16]        1 byte each (int8, or FP8 E4M3 codes), 2 bytes for BF16
//   scales   [in/kb][16]     f16 block scales, at byte scale_off (blocked formats only)
// Per row there is one f32 multiplier rowmul[row] (padding rows: 0):
//   INT8_BLOCKED  w = q          * f16(scale[k/kb]) * rowmul          (rowmul = 2^e)
//   FP8_BLOCKED   w = e4m3(q)    * f16(scale[k/kb]) * rowmul / 256    (rowmul = 2^e * 256)
//   FP8_CHANNEL   w = e4m3(q)    * rowmul / 256                       (rowmul = absmax/448*256)
//   BF16          w = bf16(q)                                         (rowmul = 1)
//   INT4_BLOCKED  w = (u - 8)    * f16(scale[k/kb]) * rowmul          (rowmul = 2^e)
//   INT4_MIN_BLOCKED
//                 w = (u * f16(scale[k/kb]) + f16(min[k/kb])) * rowmul  (rowmul = 2^e;
//                                                       GGUF Q4_1 imports: rowmul = 1)
//   MXFP4         w = e2m1x2(u) * f16(scale[k/kb]) * rowmul       (rowmul = 2^e, kb = 32)
// INT4_BLOCKED packs two k per byte: weights [ceil(in/2)][16] bytes, byte (j, r) holds u of
// row r at k = 2j in its low nibble and at k = 2j + 1 in its high nibble (u = q + 8 in
// [0, 15]; 8 past in). So one 16-byte load gives two k of a tile, and a nibble is a 4-bit
// index into a 16-entry table of q (vpermps). Its scales are signed f16 (the sign of the
// weight that maps to -8), [ceil(in/kb)][16]: the last block may be shorter than kb.
// INT4_MIN_BLOCKED is the same tile with u used as it is (no -8; 0 past in), scales >= 0,
// and f16 block minimums [ceil(in/kb)][16] right after the scales, at byte
// min_off = scale_off + ceil(in/kb) * 16 * 2 (ggml_import.cpp packs GGUF Q4_1 so too).
// MXFP4 is INT4_BLOCKED's tile with u the FP4 E2M1 code (bit 3 the sign; 0 past in) and
// e2m1x2(u) twice its value — the integers 0, 1, 2, 3, 4, 6, 8, 12 and their negatives —
// so the f16 block scale is the block's 2^(e-1) over the row's power of two: exact down to
// 2^-24 (f16 subnormals), 38 binades below the row's largest block (cpu::kMxfp4Values).
// Why f16 block scales: they cost 2 bytes per block instead of 4 (INT8-32: 1.0625 bytes per
// weight instead of 1.125; FP8-16: 1.125 instead of 1.25), and decode is bandwidth-bound.
// The per-row power of two 2^e puts the row's largest block scale in [2^14, 2^15), so every
// block scale that matters keeps the full 11-bit f16 precision; each scale is rounded *up*
// to the f16 grid and the weights are quantized against the rounded scale, so the stored
// (q, scale) pair is self-consistent and |q| never exceeds 127 / 448 (pack.cpp measures the
// cost: see the comment there). The factor 256 in the FP8 multipliers lets the kernels
// decode an E4M3 byte as the f16 number with the same bit pattern shifted by 7, which is
// exactly 2^-8 times its value (subnormals included).
//
// Sparse formats (INT8_SPARSE24, INT4_SPARSE24) use the storage vt.h documents:
//   q      [out, in/2] int8   (INT4: [out, in/4] bytes, two values per byte, low nibble first)
//   meta   [out, in/4] uint8  (idx0 | idx1 << 2 of the kept pair of each group of 4)
//   scales [out] f32          (absmax/127 or absmax/7 of the row)
struct vt_packed {
    vt_format format = VT_FORMAT_INT8_BLOCKED;
    int32_t block = 0;         // reported block size: K-block (blocked), in_features otherwise
    int64_t out = 0, in = 0;   // [out_features, in_features]
    int32_t device = VT_DEVICE_CPU;  // VT_DEVICE_CPU, or VT_DEVICE_CUDA when `cuda` is set
    int32_t device_index = 0;

    // Device copy (vt_prepack with VT_DEVICE_CUDA): the linears run on it. The host fields
    // below stay filled: vt_packed_unpack and the swiglu pair checks read them, and they are
    // bit-identical to the device copy (same codes, scales, multipliers; host_check.cpp).
    vt::CudaPackedPtr cuda;

    // ---- dense (tiled) formats
    int32_t kb = 0;            // K per scale block inside a tile (block, or in when no scales)
    int64_t ntiles = 0;        // ceil(out / 16)
    int64_t tile_bytes = 0;    // stride between tiles (multiple of 64)
    int64_t scale_off = 0;     // byte offset of the f16 scales inside a tile (0: none)
    int64_t min_off = 0;       // byte offset of the f16 block minimums (INT4_MIN_BLOCKED only)
    vt::RawBuf<uint8_t> tiles;       // [ntiles][tile_bytes]
    vt::AlignedVec<float> rowmul;    // [ntiles * 16]

    // ---- sparse formats
    vt::AlignedVec<int8_t> q;        // [out, in/2] int8 or [out, in/4] int4 pairs
    vt::AlignedVec<uint8_t> meta;    // [out, in/4]
    vt::AlignedVec<float> scales;    // [out]

    bool dense() const { return format != VT_FORMAT_INT8_SPARSE24 && format != VT_FORMAT_INT4_SPARSE24; }
    int64_t nbytes() const;
};

namespace vt {

using Packed = vt_packed;

constexpr int kTileRows = 16;  // output rows per dense tile

// Default K-block of a format (FP8_BLOCKED 16, INT8_BLOCKED / INT4_BLOCKED / INT4_MIN_BLOCKED
// / MXFP4 32; 0 for the others).
int32_t default_block_size(vt_format format);

// The dense tile layout (above) for p->out rows: per tile of kTileRows rows `wbytes` of weights,
// then, where nkb > 0, the f16 block scales from the next 64-byte boundary (nkb per row) and,
// with `mins`, as many f16 mins after them; each tile 64-byte aligned. Sets ntiles, scale_off,
// min_off and tile_bytes, allocates the tiles (not cleared) and a zero rowmul; returns the
// bytes of a tile that hold data (the rest is padding).
int64_t layout_dense_tiles(Packed& p, int64_t wbytes, int64_t nkb, bool mins);

// Quantize w[out, in] (F32/F16/BF16) into `format`. Validates everything (throws vt::Error):
// format, block size (16/32/64/128, in % block == 0), sizes, dtype, non-finite weights
// (naming the first bad row/column). Multithreaded.
std::unique_ptr<Packed> prepack(const void* w, vt_dtype dtype, int64_t out, int64_t in,
                                vt_format format, int32_t block_size);

void unpack(const Packed& p, float* dst);  // [out, in] f32, pruned entries 0

// MXFP4 weights [rows, cols] as OCP / the Hub's gpt-oss files hold them — blocks [rows,
// cols/32, 16] bytes (E2M1 codes, k = 2j in the low nibble of byte j), scales [rows, cols/32]
// e8m0 (2^(S - 127)) — in VT_FORMAT_MXFP4 with the same codes (no decoding): exact. Null when
// a row's scales span more than 38 binades (the caller packs the decoded values instead);
// a NaN scale (0xFF) throws.
std::unique_ptr<Packed> pack_mxfp4_blocks(const uint8_t* blocks, const uint8_t* scales, int64_t rows, int64_t cols);

// Dequantize rows [row0, row0 + nrows) into dst[nrows, in] (e.g. an embedding lookup from a
// packed tied lm_head). Throws on a bad range.
void unpack_rows(const Packed& p, int64_t row0, int64_t nrows, float* dst);

// y[m, out] = act(x[m, in]·Wᵀ + bias); validates arguments. m == 1 is the fast GEMV, m > 1
// a cache-blocked GEMM. x, y f32 row-major contiguous host arrays, y must not overlap x.
// Thread-safe on the same Packed (const). Uses the thread pool (vt::parallel_for). A weight
// with a device copy (w.cuda) runs on the device (vt::cuda_linear: x and y are copied).
void linear(const Packed& w, const float* x, int64_t m, const float* bias,
            const vt_linear_options& opt, float* y);

// y[m, out] = silu(x·gateᵀ + gb) ⊙ (x·upᵀ + ub), fused for dense formats: one kernel reads
// a tile of gate and the same tile of up and writes the product (no [m, 2*out] temporary).
// Both weights on the CPU, or both on the same CUDA device (else VT_STATUS_INVALID_ARGUMENT).
void linear_swiglu(const Packed& gate, const Packed& up, const float* x, int64_t m,
                   const float* gate_bias, const float* up_bias, const vt_linear_options& opt,
                   float* y);
// The same with Gemma's GeGLU, gelu_tanh(gate + gb) · (up + ub): the CPU engine's Gemma MLP
// (CPU weights only; not in the C ABI).
void linear_geglu_tanh(const Packed& gate, const Packed& up, const float* x, int64_t m,
                       const float* gate_bias, const float* up_bias, const vt_linear_options& opt,
                       float* y);

// vt_linear_device / vt_linear_swiglu_device (vt.h): x, bias, y are device pointers on the
// weight's device, the work is enqueued on `stream` (a cudaStream_t; NULL = the legacy
// default stream). The weights must have a device copy, else VT_STATUS_INVALID_ARGUMENT.
void linear_device(const Packed& w, const float* x, int64_t m, const float* bias,
                   const vt_linear_options& opt, float* y, void* stream);
void linear_swiglu_device(const Packed& gate, const Packed& up, const float* x, int64_t m,
                          const float* gate_bias, const float* up_bias,
                          const vt_linear_options& opt, float* y, void* stream);

}  // namespace vt

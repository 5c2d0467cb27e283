// CPU kernel entry points, one set per instruction-set level (kernels_generic.cpp,
// kernels_avx2.cpp, kernels_avx512.cpp — the last two compiled with their ISA flags and
// only called when cpu_level() says the CPU has them). linear.cpp validates arguments,
// splits the output tiles across threads and calls one of these with a plain switch.
//
// Everything here works on the tiled dense layout described in quant.h (16 output rows per
// tile, k-major inside a tile) or on the documented 2:4 sparse layout. Kernels never
// allocate and never throw: scratch comes from the caller.
//
// ODR note: the ISA files must not define external-linkage inline functions or template
// instantiations shared with other files (the linker could keep an AVX-512 copy for
// everyone). They keep their helpers in anonymous namespaces and export only the
// *_generic / *_avx2 / *_avx512 functions below.
#pragma once

#include <cstddef>
#include <cstdint>

namespace vt {
namespace cpu {

enum Act : int {
    kActNone = 0,
    kActGelu = 1,    // exact GELU 0.5·x·(1 + erf(x/√2)) after the bias
    kActSwiglu = 2,  // silu(gate + gb) · (up + ub), w = gate, w2 = up
    kActGeglu = 3,   // gelu_tanh(gate + gb) · (up + ub) (Gemma's GeGLU), w = gate, w2 = up
};

// Two weights (gate and up) and a product: SwiGLU or GeGLU.
inline bool gated(int act) { return act == kActSwiglu || act == kActGeglu; }

enum DenseKind : int {
    kInt8Blocked = 0,  // int8, f16 block scales
    kFp8Blocked = 1,   // e4m3, f16 block scales
    kFp8Channel = 2,   // e4m3, no block scales (rowmul only)
    kBf16 = 3,         // bf16, no scales
    kInt4Blocked = 4,  // int4 nibble pairs (two k per byte), signed f16 block scales; the
                       // last block may be short (quant.h)
    kInt4Min = 5,      // as kInt4Blocked with u in [0, 15] as it is and f16 block mins:
                       // w = (u * scale + min) * rowmul (INT4_MIN_BLOCKED, quant.h)
    kMxfp4 = 6,        // as kInt4Blocked with u an E2M1 code: w = kMxfp4Values[u] * scale *
                       // rowmul (MXFP4, quant.h; kb = 32); integer kernels as int4's
};

// MXFP4: twice the value of each E2M1 code (quant.h's layout comment; code 8 is -0).
constexpr int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
// The same plus 12 (0 .. 24): unsigned, as the integer kernels' vpmaddubsw / vpdpbusd take the
// nibbles' side; each block's sum then loses 12 * sum(x).
constexpr uint8_t kMxfp4Plus12[16] = {12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0};
constexpr bool mxfp4_plus12_ok() {
    for (int i = 0; i < 16; ++i)
        if (kMxfp4Plus12[i] != kMxfp4Values[i] + 12) return false;
    return true;
}
static_assert(mxfp4_plus12_ok(), "kMxfp4Plus12 is kMxfp4Values + 12");

// A read-only view of one dense packed weight (see quant.h for the layout).
struct DenseW {
    int kind = kInt8Blocked;
    int64_t out = 0, in = 0;  // [out_features, in_features]
    int64_t ntiles = 0;       // ceil(out / 16)
    int32_t kb = 0;           // K per scale block (in when the kind has no block scales)
    int64_t tile_bytes = 0;
    int64_t scale_off = 0;
    int64_t min_off = 0;      // f16 block mins (kInt4Min only)
    const uint8_t* tiles = nullptr;
    const float* rowmul = nullptr;  // [ntiles * 16]
    bool prefetch_l2 = false;       // the GEMVs prefetch the next tile into L2, not L1 (prefetch_to_l2)
};

struct LinearJob {
    DenseW w;                  // weights; the gate for swiglu
    DenseW w2;                 // up weights (swiglu only)
    const float* x = nullptr;  // [m, in]
    int64_t m = 0;
    const float* bias = nullptr;   // [out] or null (gate bias for swiglu)
    const float* bias2 = nullptr;  // [out] or null (up bias)
    int act = kActNone;
    float* y = nullptr;        // [m, out]
    // kInt4Min only: xsum[i * nkb + b] = sum of x[i][k] over K-block b (nkb = ceil(in/kb)),
    // so a block's dot product is scale * sum(u x) + min * xsum (linear.cpp fills it).
    const float* xsum = nullptr;
    // AVX2 integer GEMM and GEMV (int16_gemm_ok kinds): x rounded per row and K-block
    // to int16, xq[i * xq_ld + k] = rne(x[i][k] / xs[i * nkb + b]) with xs = max |x| over the
    // block / 32767 (NaN for a block holding a NaN or infinity, so the output is NaN as the
    // float path's would be); zeros from in up to the end of the last (short) block.
    // Null: the float path.
    const int16_t* xq = nullptr;
    const float* xqs = nullptr;
    int64_t xq_ld = 0;  // row stride of xq (int16): xq_stride
    // kInt4Min with xq, and the 4-bit integer GEMV: the sum of xq[i] over block b, at
    // [i * nkb + b], an integer (|sum| <= 512 * 32639 < 2^24: exact in f32; 0 where xs is NaN).
    // Times xs it is the block's sum of the rounded x, for the min (or int4's -8) term.
    const float* xqsum = nullptr;
    // AVX2 4-bit GEMV (int16_gemm_ok 4-bit kinds, m <= gemv_max_m): int4-min's xq split into
    // signed bytes, xq = 256 h + l, as split_x16_avx2 writes them (two int32 words per pair of
    // k); int4's bytes (xq_max 127) as split_x8_avx2 lays them out (one word per pair). Null:
    // the float path.
    const int32_t* xp = nullptr;
    int64_t xp_ld = 0;  // row stride of xp (int32 words)
    // AVX2 int4 GEMM (kInt4Blocked, kb = 32, m > gemv_max_m): xq as bytes (|xq| <= kXq8Max),
    // narrow_x8_avx2. Null: the int16 GEMM.
    const int8_t* xb = nullptr;
    int64_t xb_ld = 0;  // row stride of xb (bytes)
    // int4-min with AVX-512 VNNI + VBMI (linear_int4_min_vnni): xq split into signed bytes in k
    // order, xq = 256 h + l, h in xb and l in xbl (split_x16_bytes_avx2; row stride xb_ld);
    // int8 likewise (linear_int8_vnni): xq + 32768 = 256 H + L, unsigned (split_x16_bytes_avx2, biased).
    const int8_t* xbl = nullptr;
    // The VNNI GEMMs of 16 rows at a time (gemm_int8_vnni, gemm_int4_vnni): the first
    // m / kVnniRows * kVnniRows rows of x in groups of kVnniRows. int8 (pack_x16_groups_avx2):
    // xw[(g * kp + p) * 16 + i] = the int16 pair (xq[k], xq[k + 1]), k = 2p, of row 16 g + i
    // (kp = nkb * kb / 2); int4 (pack_x8_groups_avx2): xw[(g * kq + j) * 16 + i] = the bytes
    // xb[4j .. 4j + 3] of that row (kq = nkb * kb / 4). Both: xws[(g * nkb + b) * 16 + i] = xqs
    // of that row and block; int4: xm8 likewise = 8 * xqsum (an exact integer), MXFP4 (x as
    // int8's): xm8 = 12 * xqsum; int4-min (x as int8's): xsq likewise = xqsum * xqs (the f32
    // product its GEMV forms).
    const int32_t* xw = nullptr;
    const float* xws = nullptr;
    const int32_t* xm8 = nullptr;
    const float* xsq = nullptr;
};

// The AVX2 integer GEMM multiplies 8- or 4-bit weights widened to int16 by int16 activations
// with vpmaddwd (two k per 32-bit lane, exact) and adds each K-block's int32 sums into f32
// with the block's weight and x scales: about twice the f32 FMA rate. A block's int32 sum
// must not overflow: kb * 127 * 32767 < 2^31 holds for kb <= 512 (4-bit: |q| <= 15); k pairs
// need an even kb. int4 (kInt4Blocked) with kb = 32 multiplies bytes instead (x rounded to
// one byte, LinearJob::xb; micro_q4 in kernels_avx2.cpp), to the same int32 sums.
// x is rounded to |q| <= 32639 = 127 * 257 rather than 32767 so that every q splits into two
// signed bytes, q = 256 h + l (h, l in [-128, 127]), for the 4-bit GEMV below.
constexpr int16_t kXq16Max = 32639;
inline bool int16_gemm_ok(const DenseW& w) {
    return (w.kind == kInt8Blocked || w.kind == kInt4Blocked || w.kind == kInt4Min || w.kind == kMxfp4) &&
           w.kb % 2 == 0 && w.kb <= 512;
}
// Row stride of xq: in rounded up to whole K-blocks (4-bit weights may end in a short block,
// which the kernel reads whole), plus 32 int16 so that rows of a power-of-two width do not sit
// 4 KiB apart (the 6 rows the microkernel reads at once would share L1 sets and alias).
inline int64_t xq_stride(int64_t in, int64_t kb) { return (in + kb - 1) / kb * kb + 32; }
// The pieces of x's rounding that quantize_x16_avx2 and the portable quantize_x16_portable
// share (one rounding, two instruction sets). Internal linkage: each kernel library keeps its
// own copy, compiled with its own flags (no inline function shared across them).
namespace {
// |x[k]| of k in [k0, n) into the block's running max am, nonfinite set by a NaN or infinity.
inline void x16_absmax(const float* x, int64_t k0, int64_t n, float& am, bool& nonfinite) {
    for (int64_t k = k0; k < n; ++k) {
        const float ax = __builtin_fabsf(x[k]);
        nonfinite = nonfinite || !(ax < __builtin_huge_valf());
        am = ax > am ? ax : am;
    }
}
// The block's scale xs = am / qmax and the factor qmax / am that rounds it (true), or, for a
// block of zeros or one holding a NaN or infinity, xs = 0 or NaN, its sum 0 and its n values
// of qb zero (false: nothing left to round).
inline bool x16_block_scale(float am, bool nonfinite, int16_t qmax, int16_t* qb, int64_t n, float* xs, float* xsum,
                            float* inv) {
    if (nonfinite || !(am > 0.f)) {
        *xs = nonfinite ? __builtin_nanf("") : 0.f;
        if (xsum) *xsum = 0.f;
        for (int64_t k = 0; k < n; ++k) qb[k] = 0;
        return false;
    }
    *xs = am / qmax;
    *inv = qmax / am;
    return true;
}
}  // namespace
// Fills xq [m * ld], xs [m * nkb] and, when not null, xsum [m * nkb] as LinearJob::xq and
// LinearJob::xqsum describe (AVX2 code).
void quantize_x16_avx2(const float* x, int64_t m, int64_t in, int64_t kb, int16_t* xq, int64_t ld, float* xs,
                       float* xsum, int16_t qmax = kXq16Max);
// x's rounding bound for w: kXq8Max for int4 (kInt4Blocked: one signed byte, the 4-bit GEMV's
// vpmaddubsw operand, split_x8_avx2), kXq16Max for the other integer kinds.
constexpr int16_t kXq8Max = 127;
inline int16_t xq_max(const DenseW& w) { return w.kind == kInt4Blocked ? kXq8Max : kXq16Max; }

// The AVX2 GEMV (m <= gemv_max_m) in integers, x rounded as for the integer GEMM: int8
// weights widened to int16 pairs for vpmaddwd as the GEMM's panel does, 4-bit weights
// against x split into signed bytes (split_x16_avx2) for vpmaddubsw (kernels_avx2.cpp). The
// f32 GEMVs were bound by widening the weights to f32 (and int8's by its FMA latency
// chains), not by memory, on 2 AVX2 cores.
inline bool int4_kind(const DenseW& w) { return w.kind == kInt4Blocked || w.kind == kInt4Min || w.kind == kMxfp4; }
// The kinds with INT4_BLOCKED's nibble tile (two k per byte, a short last block allowed).
inline bool nibble_kind(int kind) { return kind == kInt4Blocked || kind == kInt4Min || kind == kMxfp4; }
// For the pairs p < n / 2 of row i of xq (n even, rows at stride ld): the words (h_2p, h_2p+1,
// h_2p, h_2p+1) and the same of l, in groups of 4 pairs h(p) l(p) h(p+2) l(p+2) h(p+1) l(p+1)
// h(p+3) l(p+3) from xp[i * ldp] on (ldp >= n rounded up to 8).
void split_x16_avx2(const int16_t* xq, int64_t m, int64_t n, int64_t ld, int32_t* xp, int64_t ldp);
// int4 (xq_max 127): for the pairs p < n / 2 of row i, the dword (x_2p, x_2p+1, x_2p, x_2p+1) as
// bytes, in groups of 8 pairs with the even pairs' dwords first, then the odd ones'
// (xp[i * ldp] on; ldp >= n / 2 rounded up to 8).
void split_x8_avx2(const int16_t* xq, int64_t m, int64_t n, int64_t ld, int32_t* xp, int64_t ldp);
// xb[i * ldb + k] = xq[i * ld + k] for k < n, rows i < m (values within a byte: kXq8Max).
void narrow_x8_avx2(const int16_t* xq, int64_t m, int64_t n, int64_t ld, int8_t* xb, int64_t ldb);
// xh[i * ldb + k] = h, xl[i * ldb + k] = l for k < n, rows i < m: signed bytes with
// xq[i * ld + k] = 256 h + l, h = (xq + 128) >> 8 (|xq| <= kXq16Max: both within a signed byte);
// with biased, unsigned bytes (stored in int8_t) with xq + 32768 = 256 h + l.
void split_x16_bytes_avx2(const int16_t* xq, int64_t m, int64_t n, int64_t ld, int8_t* xh, int8_t* xl, int64_t ldb,
                          bool biased);

// K-blocks per row of a blocked weight (the last may be short).
inline int64_t num_kblocks(const DenseW& w) { return (w.in + w.kb - 1) / w.kb; }

// GEMM blocking shared by all levels: the weights of kGemmTiles tiles (x2 for swiglu) and
// kGemmKc values of K are dequantized to an f32 panel once, then multiplied with every row
// of x; partial sums live in a [m, kGemmTiles*16 (x2)] f32 accumulator.
constexpr int64_t kGemmTiles = 8;
constexpr int64_t kGemmKc = 256;
// m at or below which the GEMV-style kernel (decode each weight once, m FMAs) is used:
// faster than dequantizing panels for small m. AVX-512 has the registers for 8 rows.
constexpr int64_t kGemvMaxM = 4;

#if defined(VT_HAVE_NEON_KERNELS)
// 64-bit ARM (kernels_neon.cpp): x rounded to int16 per row and K-block as quantize_x16_avx2
// rounds it (xs NaN for a block holding a NaN or infinity; xsum, when not null, the blocks'
// sums of the rounded x), and the int8 / int4-min / int4 linear on it for every m
// (int16_gemm_ok weights of those kinds; swiglu's up weight of the same kind and block) —
// gemv_tile_i8x16's / gemv_tile_i4x8's / gemv_tile_i4a8's integers, f32 steps and epilogue:
// the x86 integer kernels' bits.
void quantize_x16_portable(const float* x, int64_t m, int64_t in, int64_t kb, int16_t* xq, int64_t ld, float* xs,
                           float* xsum, int16_t qmax);
void linear_neon(const LinearJob& job, int64_t t0, int64_t t1);
#endif
constexpr int64_t kGemvMaxMAvx512 = 8;
inline int64_t gemv_max_m(int level) { return level == 2 ? kGemvMaxMAvx512 : kGemvMaxM; }

// Layout: panel [kGemmKc * kGemmTiles * 32] (room for swiglu's two weights), then the
// accumulator [m][kGemmTiles * 16 (x2 for swiglu)].
constexpr int64_t kGemmPanelFloats = kGemmKc * kGemmTiles * 16 * 2;
inline size_t gemm_scratch_floats(int64_t m, bool swiglu) {
    size_t w = static_cast<size_t>(kGemmTiles * 16 * (swiglu ? 2 : 1));
    return static_cast<size_t>(kGemmPanelFloats) + w * static_cast<size_t>(m) + 64;
}

// Output tiles [t0, t1) of job, for all m rows. gemv_*: m <= gemv_max_m(level). gemm_*: any m,
// scratch of gemm_scratch_floats(m, swiglu) floats, 64-byte aligned.
void gemv_generic(const LinearJob& job, int64_t t0, int64_t t1);
void gemm_generic(const LinearJob& job, int64_t t0, int64_t t1, float* scratch);
void gemv_avx2(const LinearJob& job, int64_t t0, int64_t t1);
void gemm_avx2(const LinearJob& job, int64_t t0, int64_t t1, float* scratch);
void gemv_avx512(const LinearJob& job, int64_t t0, int64_t t1);
// int4 (kInt4Blocked, kb = 32) GEMV, m <= kGemvMaxM, on x as bytes (LinearJob::xb, xqs, xqsum)
// with AVX-512 VNNI + VBMI (call only where cpu_features() has avx512vnni and avx512vbmi): the
// same bits as gemv_avx2's integer int4 GEMV (kernels_avx2.cpp).
void gemv_int4_vnni(const LinearJob& job, int64_t t0, int64_t t1);
// int4-min (int16_gemm_ok) linear for any m, on x split into bytes (LinearJob::xb, xbl, xqs,
// xqsum) with AVX-512 VNNI + VBMI (same condition): the same bits as the AVX2 integer GEMV and
// GEMM, for a row alone or in a batch (kernels_avx2.cpp).
void linear_int4_min_vnni(const LinearJob& job, int64_t t0, int64_t t1);
// MXFP4 likewise (x split as for int4-min; the nibbles through a table of v + 12).
void linear_mxfp4_vnni(const LinearJob& job, int64_t t0, int64_t t1);
// int8 (int16_gemm_ok) linear for any m, likewise, on x split as xq + 32768 = 256 H + L into
// unsigned bytes (LinearJob::xb = H, xbl = L, split_x16_bytes_avx2): the AVX2 integer bits.
void linear_int8_vnni(const LinearJob& job, int64_t t0, int64_t t1);
// GEMMs of 16 rows at a time with VNNI + VBMI (m >= kVnniMinM; LinearJob::xw, xws, xm8), the
// rows past the last whole group by linear_int8_vnni's / gemv_int4_vnni's kernel (as those take
// x; none when m is a multiple of 16). The same exact int32 block sums and the same f32 steps as
// those kernels: the same bits. int8 (vnni_gemm_int8): x's int16 pairs times the weights widened
// to int16 (vpdpwssd); int4 (vnni_gemm_int4, K-blocks of 32): x's bytes times the nibbles
// (vpdpbusd), as gemv_int4_vnni but on 16 rows; int4-min (vnni_gemm_int4_min, K-blocks of 32):
// x's int16 pairs times the nibbles widened to int16 pairs (vpdpwssd); MXFP4 (vnni_gemm_mxfp4):
// as int4-min with the nibbles' v + 12 (linear_mxfp4_vnni's table) for the nibbles.
constexpr int64_t kVnniRows = 16;
constexpr int64_t kVnniMinM = 16;
inline bool vnni_gemm_int8(const DenseW& w) {
    return w.kind == kInt8Blocked && (w.kb == 16 || w.kb == 32 || w.kb == 64 || w.kb == 128);
}
inline bool vnni_gemm_int4(const DenseW& w) { return w.kind == kInt4Blocked && w.kb == 32; }
inline bool vnni_gemm_int4_min(const DenseW& w) { return w.kind == kInt4Min && w.kb == 32; }
inline bool vnni_gemm_mxfp4(const DenseW& w) { return w.kind == kMxfp4 && w.kb == 32; }
void gemm_int8_vnni(const LinearJob& job, int64_t t0, int64_t t1);
void gemm_int4_vnni(const LinearJob& job, int64_t t0, int64_t t1);
void gemm_int4_min_vnni(const LinearJob& job, int64_t t0, int64_t t1);
void gemm_mxfp4_vnni(const LinearJob& job, int64_t t0, int64_t t1);
// Groups [g0, g1) of x into LinearJob::xw / xws (/ xm8, xsq) as described there: int8,
// int4-min and MXFP4 from xq (rows of stride ld, kb even; int4-min: xsq from xsum, MXFP4: xm12
// = its xm8 from xsum; null where not wanted), int4 from xb (bytes, rows of stride ld) and xsum.
void pack_x16_groups_avx2(const int16_t* xq, const float* xs, const float* xsum, int64_t g0, int64_t g1,
                          int64_t nkb, int64_t kb, int64_t ld, int32_t* xw, float* xws, float* xsq, int32_t* xm12);
void pack_x8_groups_avx2(const int8_t* xb, const float* xs, const float* xsum, int64_t g0, int64_t g1, int64_t nkb,
                         int64_t kb, int64_t ld, int32_t* xw, float* xws, int32_t* xm8);
void gemm_avx512(const LinearJob& job, int64_t t0, int64_t t1, float* scratch);

// ---- 2:4 sparse (integer) linears ------------------------------------------------------

struct SparseJob {
    bool int4 = false;
    int64_t out = 0, in = 0;
    const int8_t* q = nullptr;      // [out, in/2] int8 or [out, in/4] int4 pairs
    const uint8_t* meta = nullptr;  // [out, in/4]
    const float* wscale = nullptr;  // [out]
    const int8_t* xq = nullptr;     // [m, in] quantized input (int8, or int4 values in int8)
    const float* xscale = nullptr;  // [m]
    int64_t m = 0;
    const float* bias = nullptr;
    float* y = nullptr;             // [m, out]
};

// Output rows [r0, r1) for all m input rows. sparse_avx512 additionally needs AVX512-VBMI and
// AVX512-VNNI (cpu_features()); linear.cpp falls back to sparse_generic without them.
void sparse_generic(const SparseJob& job, int64_t r0, int64_t r1);
void sparse_avx512(const SparseJob& job, int64_t r0, int64_t r1);

// Scalar reference epilogue helper (also used by the generic kernels); SiLU is ops::silu.
float gelu_ref(float x);

}  // namespace cpu
}  // namespace vt

#include "convert.h"

#include <cstdint>

#include <cfloat>
#include <cmath>
#include <cstring>

#include "common.h"
#include "threadpool.h"

namespace vt {
namespace {

inline uint32_t f2u(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
inline float u2f(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// Round a double to float with round-to-odd. A second RNE rounding of the result to any
// format with <= 21 mantissa bits is then the correctly rounded result of the double:
// this is how F64 -> F16/BF16/FP8 avoid double rounding.
inline float f64_to_f32_odd(double d) {
    float f = static_cast<float>(d);
    if (std::isnan(d) || static_cast<double>(f) == d) return f;
    if (std::isinf(f)) return std::copysign(FLT_MAX, f);  // finite d beyond FLT_MAX: odd LSB
    uint32_t u = f2u(f);
    if (std::fabs(static_cast<double>(f)) > std::fabs(d)) u -= 1;  // toward zero
    return u2f(u | 1u);
}

struct Fp8Table {
    float v[256];
    Fp8Table() {
        for (int b = 0; b < 256; ++b) {
            int s = b >> 7, e = (b >> 3) & 0xF, m = b & 7;
            float x;
            if (e == 15 && m == 7) x = NAN;
            else if (e == 0) x = std::ldexp(static_cast<float>(m), -9);
            else x = std::ldexp(1.0f + m / 8.0f, e - 7);
            v[b] = s ? -x : x;
        }
    }
};
const Fp8Table g_fp8;

template <class S, class D>
void loop(const void* src, void* dst, size_t n, D (*f)(S)) {
    const S* s = static_cast<const S*>(src);
    D* d = static_cast<D*>(dst);
    parallel_for(static_cast<int64_t>(n), 1 << 16, [&](int64_t b, int64_t e, int) {
        for (int64_t i = b; i < e; ++i) d[i] = f(s[i]);
    });
}

// Every source through one of two "wide" forms: f32 (exact for F16/BF16/F8/F32) or f64.
float id_f32(float x) { return x; }
double id_f64(double x) { return x; }
float f16_f32(uint16_t h) { return f16_to_f32(h); }
float bf16_f32(uint16_t h) { return bf16_to_f32(h); }
float fp8_f32(uint8_t b) { return fp8_to_f32(b); }
double f32_f64(float x) { return x; }
double f16_f64(uint16_t h) { return f16_to_f32(h); }
double bf16_f64(uint16_t h) { return bf16_to_f32(h); }
double fp8_f64(uint8_t b) { return fp8_to_f32(b); }
float f64_f32(double d) { return static_cast<float>(d); }
uint16_t f32_f16(float x) { return f32_to_f16(x); }
uint16_t f32_bf16(float x) { return f32_to_bf16(x); }
uint8_t f32_fp8(float x) { return f32_to_fp8(x); }
uint16_t f64_f16(double d) { return f32_to_f16(f64_to_f32_odd(d)); }
uint16_t f64_bf16(double d) { return f32_to_bf16(f64_to_f32_odd(d)); }
uint8_t f64_fp8(double d) { return f32_to_fp8(f64_to_f32_odd(d)); }
uint16_t id_u16(uint16_t x) { return x; }
uint8_t id_u8(uint8_t x) { return x; }
uint16_t f16_bf16(uint16_t h) { return f32_to_bf16(f16_to_f32(h)); }
uint16_t bf16_f16(uint16_t h) { return f32_to_f16(bf16_to_f32(h)); }
uint8_t f16_fp8(uint16_t h) { return f32_to_fp8(f16_to_f32(h)); }
uint8_t bf16_fp8(uint16_t h) { return f32_to_fp8(bf16_to_f32(h)); }
uint16_t fp8_f16(uint8_t b) { return f32_to_f16(fp8_to_f32(b)); }
uint16_t fp8_bf16(uint8_t b) { return f32_to_bf16(fp8_to_f32(b)); }

bool is_float_dtype(vt_dtype d) {
    return d == VT_DTYPE_F32 || d == VT_DTYPE_F64 || d == VT_DTYPE_F16 || d == VT_DTYPE_BF16 ||
           d == VT_DTYPE_F8_E4M3;
}

const char* dtype_name(vt_dtype d) {
    switch (d) {
        case VT_DTYPE_F32: return "F32";
        case VT_DTYPE_F16: return "F16";
        case VT_DTYPE_BF16: return "BF16";
        case VT_DTYPE_F8_E4M3: return "F8_E4M3";
        case VT_DTYPE_I8: return "I8";
        case VT_DTYPE_I32: return "I32";
        case VT_DTYPE_U8: return "U8";
        case VT_DTYPE_F64: return "F64";
        case VT_DTYPE_I64: return "I64";
    }
    return "unknown";
}

template <class T>
void transpose_t(const T* src, T* dst, size_t rows, size_t cols) {
    // 32x32 tiles: a tile of either side fits L1; rows of tiles are split across threads.
    constexpr size_t TB = 32;
    int64_t nrb = static_cast<int64_t>((rows + TB - 1) / TB);
    parallel_for(nrb, 1, [&](int64_t b, int64_t e, int) {
        for (int64_t rb = b; rb < e; ++rb) {
            size_t i0 = static_cast<size_t>(rb) * TB, i1 = i0 + TB < rows ? i0 + TB : rows;
            for (size_t j0 = 0; j0 < cols; j0 += TB) {
                size_t j1 = j0 + TB < cols ? j0 + TB : cols;
                for (size_t i = i0; i < i1; ++i)
                    for (size_t j = j0; j < j1; ++j) dst[j * rows + i] = src[i * cols + j];
            }
        }
    });
}

}  // namespace

// ---- scalar codecs ---------------------------------------------------------------------

const float* fp8_table() { return g_fp8.v; }
float fp8_to_f32(uint8_t b) { return g_fp8.v[b]; }

uint8_t f32_to_fp8(float x) {
    uint32_t u = f2u(x);
    uint8_t sign = static_cast<uint8_t>((u >> 24) & 0x80);
    uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return sign | 0x7F;   // NaN
    if (a >= 0x43E00000u) return sign | 0x7E;  // |x| >= 448 (and Inf): saturate
    if (a < 0x3C800000u) {                     // |x| < 2^-6: subnormal, multiples of 2^-9
        // |x|*2^9 < 8 is exact; RNE to an integer gives the code (8 = the smallest normal).
        float v = u2f(a) * 512.0f;
        return sign | static_cast<uint8_t>(std::nearbyint(v));
    }
    // Normal: RNE to 3 mantissa bits (a carry into the exponent is the right answer).
    uint32_t r = (a + 0x7FFFFu + ((a >> 20) & 1u)) >> 20;
    return sign | static_cast<uint8_t>(r - ((127 - 7) << 3));
}

// ---- bulk ------------------------------------------------------------------------------

void convert(const void* src, vt_dtype sd, void* dst, vt_dtype dd, size_t n) {
    VT_CHECK_ARG(is_float_dtype(sd), "vt_convert: source dtype %s (%d) is not one of F32, F64, "
                 "F16, BF16, F8_E4M3", dtype_name(sd), static_cast<int>(sd));
    VT_CHECK_ARG(is_float_dtype(dd), "vt_convert: destination dtype %s (%d) is not one of F32, "
                 "F64, F16, BF16, F8_E4M3", dtype_name(dd), static_cast<int>(dd));
    if (n == 0) return;
    VT_CHECK_ARG(src && dst, "vt_convert: %s is NULL", src ? "dst" : "src");
    // n elements must fit an object: their byte count must neither wrap size_t nor run past
    // the end of the address space (a wrapped size once passed the overlap check below).
    const size_t es = vt_dtype_size(sd) > vt_dtype_size(dd) ? vt_dtype_size(sd) : vt_dtype_size(dd);
    VT_CHECK_ARG(n <= static_cast<size_t>(PTRDIFF_MAX) / es,
                 "vt_convert: n = %zu elements is more than any buffer can hold", n);
    const size_t sb = vt_dtype_size(sd) * n, db = vt_dtype_size(dd) * n;
    const uintptr_t s0 = reinterpret_cast<uintptr_t>(src), d0 = reinterpret_cast<uintptr_t>(dst);
    VT_CHECK_ARG(s0 <= UINTPTR_MAX - sb && d0 <= UINTPTR_MAX - db,
                 "vt_convert: n = %zu elements from %s run past the end of memory", n, s0 > UINTPTR_MAX - sb ? "src" : "dst");
    VT_CHECK_ARG(s0 + sb <= d0 || d0 + db <= s0, "vt_convert: src and dst overlap");
    switch (dd) {
        case VT_DTYPE_F32:
            switch (sd) {
                case VT_DTYPE_F32: loop(src, dst, n, id_f32); return;
                case VT_DTYPE_F64: loop(src, dst, n, f64_f32); return;
                case VT_DTYPE_F16: loop(src, dst, n, f16_f32); return;
                case VT_DTYPE_BF16: loop(src, dst, n, bf16_f32); return;
                default: loop(src, dst, n, fp8_f32); return;
            }
        case VT_DTYPE_F64:
            switch (sd) {
                case VT_DTYPE_F32: loop(src, dst, n, f32_f64); return;
                case VT_DTYPE_F64: loop(src, dst, n, id_f64); return;
                case VT_DTYPE_F16: loop(src, dst, n, f16_f64); return;
                case VT_DTYPE_BF16: loop(src, dst, n, bf16_f64); return;
                default: loop(src, dst, n, fp8_f64); return;
            }
        case VT_DTYPE_F16:
            switch (sd) {
                case VT_DTYPE_F32: loop(src, dst, n, f32_f16); return;
                case VT_DTYPE_F64: loop(src, dst, n, f64_f16); return;
                case VT_DTYPE_F16: loop(src, dst, n, id_u16); return;
                case VT_DTYPE_BF16: loop(src, dst, n, bf16_f16); return;
                default: loop(src, dst, n, fp8_f16); return;
            }
        case VT_DTYPE_BF16:
            switch (sd) {
                case VT_DTYPE_F32: loop(src, dst, n, f32_bf16); return;
                case VT_DTYPE_F64: loop(src, dst, n, f64_bf16); return;
                case VT_DTYPE_F16: loop(src, dst, n, f16_bf16); return;
                case VT_DTYPE_BF16: loop(src, dst, n, id_u16); return;
                default: loop(src, dst, n, fp8_bf16); return;
            }
        default:
            switch (sd) {
                case VT_DTYPE_F32: loop(src, dst, n, f32_fp8); return;
                case VT_DTYPE_F64: loop(src, dst, n, f64_fp8); return;
                case VT_DTYPE_F16: loop(src, dst, n, f16_fp8); return;
                case VT_DTYPE_BF16: loop(src, dst, n, bf16_fp8); return;
                default: loop(src, dst, n, id_u8); return;
            }
    }
}

void to_f32(const void* src, vt_dtype dtype, float* dst, size_t n) {
    VT_CHECK_ARG(dtype == VT_DTYPE_F32 || dtype == VT_DTYPE_F16 || dtype == VT_DTYPE_BF16 ||
                 dtype == VT_DTYPE_F64 || dtype == VT_DTYPE_F8_E4M3,
                 "to_f32: dtype %s (%d) is not a float type", dtype_name(dtype),
                 static_cast<int>(dtype));
    convert(src, dtype, dst, VT_DTYPE_F32, n);
}

void transpose(const void* src, void* dst, size_t rows, size_t cols, size_t elem_size) {
    VT_CHECK_ARG(elem_size == 1 || elem_size == 2 || elem_size == 4 || elem_size == 8,
                 "vt_transpose: elem_size must be 1, 2, 4 or 8 (got %zu)", elem_size);
    if (rows == 0 || cols == 0) return;
    VT_CHECK_ARG(src && dst, "vt_transpose: %s is NULL", src ? "dst" : "src");
    VT_CHECK_ARG(rows <= static_cast<size_t>(PTRDIFF_MAX) / cols / elem_size, "vt_transpose: %zu x %zu is too large",
                 rows, cols);
    size_t bytes = rows * cols * elem_size;
    const uintptr_t s0 = reinterpret_cast<uintptr_t>(src), d0 = reinterpret_cast<uintptr_t>(dst);
    VT_CHECK_ARG(s0 <= UINTPTR_MAX - bytes && d0 <= UINTPTR_MAX - bytes,
                 "vt_transpose: %zu x %zu elements from %s run past the end of memory", rows, cols,
                 s0 > UINTPTR_MAX - bytes ? "src" : "dst");
    VT_CHECK_ARG(s0 + bytes <= d0 || d0 + bytes <= s0, "vt_transpose: src and dst overlap");
    switch (elem_size) {
        case 1: transpose_t(static_cast<const uint8_t*>(src), static_cast<uint8_t*>(dst), rows, cols); break;
        case 2: transpose_t(static_cast<const uint16_t*>(src), static_cast<uint16_t*>(dst), rows, cols); break;
        case 4: transpose_t(static_cast<const uint32_t*>(src), static_cast<uint32_t*>(dst), rows, cols); break;
        default: transpose_t(static_cast<const uint64_t*>(src), static_cast<uint64_t*>(dst), rows, cols); break;
    }
}

}  // namespace vt

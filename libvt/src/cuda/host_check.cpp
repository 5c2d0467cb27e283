// Host checks of the CUDA backend's bit-level work, runnable on any machine (no GPU, no CUDA
// toolkit): tests/test_cuda_host.py compiles this file with layout.cpp against the installed
// libvt and runs it. It checks
//   * the kernels' weight decoding (device_math.h: INT8 via XOR + PRMT, E4M3 via the
//     f32 exponent trick, BF16, f16 scales, 4-bit nibbles) against vt_convert / the integers,
//     for every code;
//   * the device layout (layout.cpp): every weight of every dense format and block size,
//     repacked and decoded as the kernels decode it, equals vt_packed_unpack bit for bit; the
//     QKV / gate-up row orders map every device row to the right source row;
//   * an emulation of the GEMV's arithmetic (16-weight chunks, block scales, the FP8 2^64 /
//     2^56 scaling; 4-bit: halves of 16 weights, INT4_MIN's min · Σx per half) against a
//     double-precision reference;
//   * the argmax / top-k rank keys against vt_argmax; the staging swizzle is conflict-free;
//   * the family features' host-side parts: biases in device row order (row_values), the
//     decode attention's splits of a sliding window, the soft-cap and tanh-GELU formulas;
//   * the 2:4 sparse layout of the CUTLASS SparseGemm (layout.h): repack_sparse decodes to
//     vt_packed_unpack bit for bit, the metadata is valid and its reordering a bijection, and
//     the kernel's integer math done from the device buffers equals vt_linear bit for bit.
// Output ends with "N passed, M failed"; exit status 0 when nothing failed.
#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <memory>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#if defined(VT_CHECK_CUTLASS_REORDER)
// CUTLASS's own host reorder (tools/util), when tests/test_cuda_host.py finds the headers.
#include <cutlass/layout/matrix.h>
#include <cutlass/tensor_ref.h>
#include <cutlass/util/host_reorder.h>
#endif

#include "cuda/decode_ahead.h"
#include "cuda/device_math.h"
#include "cuda/draw.h"
#include "cuda/fp8_sm90_plan.h"
#include "cuda/w8a16_plan.h"
#include "cuda/kv_layout.h"
#include "kv_i8.h"
#include "cuda/layout.h"
#include "quant.h"
#include "vt/vt.h"

using namespace vt::cudak;

namespace {

int g_pass = 0, g_fail = 0;

void expect(bool ok, const std::string& what) {
    if (ok) {
        ++g_pass;
    } else {
        ++g_fail;
        std::printf("FAIL: %s\n", what.c_str());
    }
}

uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

// ---- Decoding of single codes ------------------------------------------------------------------

void check_codes() {
    // INT8: the signed byte q at every position of a word, the other three bytes other codes.
    bool ok = true;
    const auto code = [](int q) { return int8_t(uint8_t(q & 0xFF)); };
    for (int q = -128; q <= 127; ++q) {
        const int8_t c[4] = {code(q), code(q + 1), code(q + 77), code(q - 5)};
        uint32_t w = 0;
        for (int j = 0; j < 4; ++j) w |= uint32_t(uint8_t(c[j])) << (8 * j);
        ok = ok && int8x_at<0>(w) == float(c[0]) && int8x_at<1>(w) == float(c[1]) &&
             int8x_at<2>(w) == float(c[2]) && int8x_at<3>(w) == float(c[3]);
    }
    expect(ok, "int8x_at decodes every code at every byte position");

    // E4M3: 2^-120 × value, exactly, subnormals and -0 included (NaN codes excluded).
    ok = true;
    for (int c = 0; c < 256; ++c) {
        if ((c & 0x7F) == 0x7F) continue;
        const uint8_t code = uint8_t(c);
        float ref;
        vt_convert(&code, VT_DTYPE_F8_E4M3, &ref, VT_DTYPE_F32, 1);
        const uint32_t w = uint32_t(c) << 16;  // byte 2
        const float got = fp8s_at<2>(w) * kFp8Unscale;
        if (bits(got) != bits(ref)) {
            ok = false;
            std::printf("  e4m3 0x%02x: got %g want %g\n", c, double(got), double(ref));
        }
        ok = ok && bits(fp8s_at<0>(uint32_t(c)) * kFp8Unscale) == bits(ref) &&
             bits(fp8s_at<3>(uint32_t(c) << 24) * kFp8Unscale) == bits(ref);
    }
    expect(ok, "fp8s_at decodes every E4M3 code (x 2^120) bit for bit");

    // f16 scales, all 65536 codes (NaNs compared as NaN).
    ok = true;
    for (uint32_t h = 0; h < 65536; ++h) {
        const uint16_t hv = uint16_t(h);
        float ref;
        vt_convert(&hv, VT_DTYPE_F16, &ref, VT_DTYPE_F32, 1);
        const float got = f16_bits_to_f32(hv);
        if (std::isnan(ref) ? !std::isnan(got) : bits(got) != bits(ref)) ok = false;
    }
    expect(ok, "f16_bits_to_f32 matches vt_convert for every f16");

    // BF16 pairs.
    ok = true;
    std::mt19937 rng(7);
    for (int i = 0; i < 10000; ++i) {
        const uint32_t w = rng();
        ok = ok && bits(bf16_at<0>(w)) == (w << 16) && bits(bf16_at<1>(w)) == (w & 0xFFFF0000u);
    }
    expect(ok, "bf16_at");

    // 4-bit: every pair of nibbles in every byte of a word, split into even (low) and odd (high)
    // k and decoded as q = u - 8 (INT4) and u (INT4_MIN).
    ok = true;
    for (uint32_t b = 0; b < 256; ++b)
        for (int pos = 0; pos < 4; ++pos) {
            const uint32_t w = (b << (8 * pos)) | (0xA5u & ~(0xFFu << (8 * pos)));
            const uint32_t lo = nib_lo(w), hi = nib_hi(w);
            float f8lo, f8hi, f0lo, f0hi;
            switch (pos) {
                case 0: f8lo = nib_at<0, 8>(lo); f8hi = nib_at<0, 8>(hi); f0lo = nib_at<0, 0>(lo); f0hi = nib_at<0, 0>(hi); break;
                case 1: f8lo = nib_at<1, 8>(lo); f8hi = nib_at<1, 8>(hi); f0lo = nib_at<1, 0>(lo); f0hi = nib_at<1, 0>(hi); break;
                case 2: f8lo = nib_at<2, 8>(lo); f8hi = nib_at<2, 8>(hi); f0lo = nib_at<2, 0>(lo); f0hi = nib_at<2, 0>(hi); break;
                default: f8lo = nib_at<3, 8>(lo); f8hi = nib_at<3, 8>(hi); f0lo = nib_at<3, 0>(lo); f0hi = nib_at<3, 0>(hi); break;
            }
            ok = ok && f8lo == float(int(b & 15) - 8) && f8hi == float(int(b >> 4) - 8) && f0lo == float(b & 15) &&
                 f0hi == float(b >> 4);
        }
    expect(ok, "nib_lo / nib_hi / nib_at decode every 4-bit pair at every byte position");
}

// ---- Layout and decoding of whole matrices ------------------------------------------------------

struct Packed {
    vt_packed* p = nullptr;
    explicit Packed(vt_packed* q) : p(q) {}
    ~Packed() { vt_packed_free(p); }
    Packed(const Packed&) = delete;
    Packed& operator=(const Packed&) = delete;
};

std::vector<float> random_weights(int64_t out, int64_t in, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 0.02f);
    std::uniform_real_distribution<float> ud(0.0f, 1.0f);
    std::vector<float> w(size_t(out * in));
    for (auto& v : w) {
        v = nd(rng);
        if (ud(rng) < 0.01f) v *= 20.0f;  // outliers
    }
    // A zero row and a row of tiny values (subnormal block scales in FP8).
    if (out > 3) {
        for (int64_t k = 0; k < in; ++k) w[size_t(1 * in + k)] = 0.0f;
        for (int64_t k = 0; k < in; ++k) w[size_t(2 * in + k)] *= 1e-30f;
    }
    return w;
}

const char* fmt_name(vt_format f) {
    switch (f) {
        case VT_FORMAT_INT8_BLOCKED: return "int8";
        case VT_FORMAT_FP8_BLOCKED: return "fp8";
        case VT_FORMAT_FP8_CHANNEL: return "fp8-channel";
        case VT_FORMAT_INT4_BLOCKED: return "int4";
        case VT_FORMAT_INT4_MIN_BLOCKED: return "int4-min";
        case VT_FORMAT_MXFP4: return "mxfp4";
        default: return "bf16";
    }
}

struct Repacked {
    LinearShape s;
    std::vector<uint8_t> w;
    std::vector<uint16_t> sc;
    std::vector<uint16_t> mn;  // INT4_MIN only
    std::vector<float> rm;
};

Repacked repack(const vt_packed& p, int64_t n, const std::vector<RowSource>& rows) {
    Repacked r;
    r.s = linear_shape(p, n);
    r.w.assign(r.s.w_bytes(), 0xEE);
    r.sc.assign(size_t(r.s.n_pad) * size_t(r.s.nkb), 0xEEEE);
    r.mn.assign(r.s.min_bytes() / 2, 0xEEEE);
    r.rm.assign(size_t(r.s.n_pad), -1.0f);
    repack_rows(r.s, rows.data(), 0, r.s.n_pad, r.w.data(), r.s.nkb ? r.sc.data() : nullptr,
                r.s.has_mins() ? r.mn.data() : nullptr, r.rm.data());
    return r;
}

float dev_weight(const Repacked& r, int64_t row, int64_t k) {
    return dev_weight(r.s, r.w.data(), r.sc.data(), r.mn.data(), r.rm.data(), row, k);
}

// The 4-bit GEMV's arithmetic for one row: 16-byte chunks of 32 weights, each half of 16 summed
// in f32, then · its block scale, plus (INT4_MIN) min · the half's Σx, as gemv.cu does it.
double emulate_row_4bit(const Repacked& r, int64_t row, const std::vector<float>& x) {
    const LinearShape& s = r.s;
    const bool mins = s.has_mins();
    float acc = 0.0f;
    const uint8_t* wr = r.w.data() + size_t(row) * size_t(s.row_bytes());
    for (int64_t h = 0; h < s.k_pad / 16; ++h) {  // halves of chunks
        float part = 0.0f, xsum = 0.0f;
        for (int j = 0; j < 2; ++j) {
            uint32_t w;
            std::memcpy(&w, wr + h * 8 + 4 * j, 4);
            const uint32_t lo = nib_lo(w), hi = nib_hi(w);
            float f[8];
            if (mins) {
                f[0] = nib_at<0, 0>(lo); f[1] = nib_at<0, 0>(hi); f[2] = nib_at<1, 0>(lo); f[3] = nib_at<1, 0>(hi);
                f[4] = nib_at<2, 0>(lo); f[5] = nib_at<2, 0>(hi); f[6] = nib_at<3, 0>(lo); f[7] = nib_at<3, 0>(hi);
            } else {
                f[0] = nib_at<0, 8>(lo); f[1] = nib_at<0, 8>(hi); f[2] = nib_at<1, 8>(lo); f[3] = nib_at<1, 8>(hi);
                f[4] = nib_at<2, 8>(lo); f[5] = nib_at<2, 8>(hi); f[6] = nib_at<3, 8>(lo); f[7] = nib_at<3, 8>(hi);
            }
            for (int b = 0; b < 8; ++b) {
                const int64_t k = h * 16 + j * 8 + b;
                const float xv = k < s.k ? x[size_t(k)] : 0.0f;
                part = std::fma(f[b], xv, part);
                xsum += xv;
            }
        }
        const size_t bi = size_t(row * s.nkb + h * 16 / s.kb);
        acc = std::fma(part, f16_bits_to_f32(r.sc[bi]), acc);
        if (mins) acc = std::fma(xsum, f16_bits_to_f32(r.mn[bi]), acc);
    }
    return double(acc * r.rm[size_t(row)]);
}

// The GEMV's arithmetic for one row, in f32, as gemv.cu does it (order of the sums aside).
double emulate_row(const Repacked& r, int64_t row, const std::vector<float>& x) {
    const LinearShape& s = r.s;
    if (dev_fmt_4bit(s.fmt)) return emulate_row_4bit(r, row, x);
    const bool fp8 = s.fmt == kDevFp8 || s.fmt == kDevFp8Channel;
    const int epc = s.fmt == kDevBf16 ? 8 : 16;
    const float pre = fp8 ? kFp8XPre : 1.0f;
    float acc = 0.0f;
    const uint8_t* wr = r.w.data() + size_t(row) * size_t(s.k_pad) * size_t(s.esize);
    for (int64_t c = 0; c < s.k_pad / epc; ++c) {
        float part = 0.0f;
        for (int j = 0; j < 4; ++j) {
            uint32_t w;
            std::memcpy(&w, wr + c * 16 + 4 * j, 4);
            float f[4];
            int per = 4;
            switch (s.fmt) {
                case kDevInt8: f[0] = int8x_at<0>(w); f[1] = int8x_at<1>(w); f[2] = int8x_at<2>(w); f[3] = int8x_at<3>(w); break;
                case kDevBf16: f[0] = bf16_at<0>(w); f[1] = bf16_at<1>(w); per = 2; break;
                default: f[0] = fp8s_at<0>(w); f[1] = fp8s_at<1>(w); f[2] = fp8s_at<2>(w); f[3] = fp8s_at<3>(w); break;
            }
            for (int b = 0; b < per; ++b) {
                const int64_t k = c * epc + j * per + b;
                const float xv = k < s.k ? x[size_t(k)] * pre : 0.0f;
                part = std::fma(f[b], xv, part);
            }
        }
        if (s.nkb) acc = std::fma(part, f16_bits_to_f32(r.sc[size_t(row * s.nkb + c * epc / s.kb)]), acc);
        else acc += part;
    }
    return double((acc * s.post) * r.rm[size_t(row)]);
}

// w packed as format f (block 0: its default) into *pk, with its dequantized values in ref
// (vt_packed_unpack); false, reported under tag, when vt_prepack refuses.
bool pack_checked(const std::vector<float>& w, vt_format f, int32_t block, int64_t out, int64_t in,
                  const std::string& tag, std::unique_ptr<Packed>* pk, std::vector<float>* ref) {
    vt_prepack_options o = vt_prepack_default_options();
    o.format = f;
    o.block_size = block;
    vt_packed* raw = nullptr;
    if (vt_prepack(w.data(), VT_DTYPE_F32, out, in, &o, &raw) != VT_OK) {
        expect(false, tag + ": vt_prepack: " + vt_last_error());
        return false;
    }
    pk->reset(new Packed(raw));
    ref->resize(size_t(out * in));
    vt_packed_unpack(raw, ref->data());
    return true;
}

void check_format(vt_format f, int32_t block, int64_t out, int64_t in) {
    const std::string tag = std::string(fmt_name(f)) + " block " + std::to_string(block) + " [" +
                            std::to_string(out) + ", " + std::to_string(in) + "]";
    std::unique_ptr<Packed> pk;
    std::vector<float> ref;
    if (!pack_checked(random_weights(out, in, uint32_t(out * 131 + in + block)), f, block, out, in, tag, &pk, &ref))
        return;

    const Repacked r = repack(*pk->p, out, rows_plain(*pk->p));
    expect(r.s.n_pad % kRowPad == 0 && r.s.n_pad >= out && r.s.k_pad % kColPad == 0 && r.s.k_pad >= in,
           tag + ": padded shape");
    bool exact = true;
    for (int64_t row = 0; row < out && exact; ++row)
        for (int64_t k = 0; k < in; ++k) {
            const float got = dev_weight(r, row, k);
            if (bits(got) != bits(ref[size_t(row * in + k)])) {
                std::printf("  %s (%lld, %lld): device %.9g, CPU %.9g\n", tag.c_str(), (long long)row, (long long)k,
                            double(got), double(ref[size_t(row * in + k)]));
                exact = false;
                break;
            }
        }
    expect(exact, tag + ": device weights equal vt_packed_unpack bit for bit");
    bool pads = true;
    for (int64_t row = out; row < r.s.n_pad; ++row) pads = pads && r.rm[size_t(row)] == 0.0f;
    for (int64_t row = 0; row < out; ++row)
        for (int64_t k = in; k < r.s.k_pad; ++k) {
            if (r.s.has_mins() && k / r.s.kb == (in - 1) / r.s.kb) {
                // INT4_MIN inside the last real block: the code is u = 0, so the weight is the
                // block's min; the kernels multiply it by x = 0 there (layout.h).
                const uint8_t b = r.w[size_t(row * r.s.row_bytes() + k / 2)];
                pads = pads && ((k & 1) ? (b >> 4) : (b & 15)) == 0;
            } else {
                pads = pads && dev_weight(r, row, k) == 0.0f;
            }
        }
    if (dev_fmt_4bit(r.s.fmt))  // padding rows: zero codes (INT4 u = 8), scales and mins
        for (int64_t row = out; row < r.s.n_pad; ++row)
            for (int64_t k = 0; k < r.s.k_pad; ++k) pads = pads && dev_weight(r, row, k) == 0.0f;
    expect(pads, tag + ": padding rows and columns are zero");

    // GEMV arithmetic vs double reference.
    std::mt19937 rng{uint32_t(in)};
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(in));
    for (auto& v : x) v = nd(rng);
    double err = 0.0, norm = 0.0;
    for (int64_t row = 0; row < out; ++row) {
        double yr = 0.0, mag = 0.0;
        for (int64_t k = 0; k < in; ++k) {
            yr += double(ref[size_t(row * in + k)]) * double(x[size_t(k)]);
            mag += std::fabs(double(ref[size_t(row * in + k)]) * double(x[size_t(k)]));
        }
        const double ye = emulate_row(r, row, x);
        err = std::max(err, std::fabs(ye - yr) / (mag + 1e-30));
        norm += mag;
    }
    expect(err < 2e-6, tag + ": emulated GEMV within 2e-6 of the double reference (got " + std::to_string(err) + ")");
}

// ---- 2:4 sparse layout (the CUTLASS SparseGemm's operands) ------------------------------------

// Repacks a sparse weight as the upload does and checks, for every (r, k), that the device
// buffers decode to vt_packed_unpack's value bit for bit; that padding is zero (values, scales)
// with valid metadata (0x4); that every metadata nibble is a valid 2:4 pair (idx0 < idx1); that
// sparse_meta_index is a bijection onto the buffer; and that the kernel's integer math done
// from the device buffers (x quantized as the GPU kernel does, INT32 sums over the kept values
// selected by the metadata, x scale · w scale, bias) equals vt_linear exactly.
void check_sparse(vt_format f, int64_t out, int64_t in) {
    const std::string tag = std::string(f == VT_FORMAT_INT4_SPARSE24 ? "int4-2:4" : "int8-2:4") + " [" +
                            std::to_string(out) + ", " + std::to_string(in) + "]";
    std::unique_ptr<Packed> pk;
    std::vector<float> ref;
    if (!pack_checked(random_weights(out, in, uint32_t(out * 7 + in)), f, 0, out, in, tag, &pk, &ref)) return;

    const SparseShape s = sparse_shape(*pk->p);
    expect(s.n_pad % kSparseRowPad == 0 && s.n_pad >= out && s.k_pad % kSparseColPad == 0 && s.k_pad >= in &&
               s.int4 == (f == VT_FORMAT_INT4_SPARSE24),
           tag + ": padded shape");
    std::vector<int8_t> a(s.a_bytes(), int8_t(0x55));
    std::vector<uint32_t> e(s.e_bytes() / 4, 0xEEEEEEEEu);
    std::vector<float> ws(size_t(s.n_pad), -1.0f);
    repack_sparse(s, *pk->p, a.data(), e.data(), ws.data());

    // The metadata index is a bijection onto [0, n_pad · k_pad/32).
    std::vector<uint8_t> hit(e.size(), 0);
    bool bij = true;
    for (int64_t r = 0; r < s.n_pad && bij; ++r)
        for (int64_t c = 0; c < s.meta_cols(); ++c) {
            const int64_t i = sparse_meta_index(s, r, c);
            if (i < 0 || i >= int64_t(e.size()) || hit[size_t(i)]) {
                bij = false;
                break;
            }
            hit[size_t(i)] = 1;
        }
    expect(bij, tag + ": sparse_meta_index is a bijection onto the metadata buffer");

    bool exact = true;
    for (int64_t r = 0; r < out && exact; ++r)
        for (int64_t k = 0; k < in; ++k) {
            const float got = sparse_dev_weight(s, a.data(), e.data(), ws.data(), r, k);
            if (bits(got) != bits(ref[size_t(r * in + k)])) {
                std::printf("  %s (%lld, %lld): device %.9g, CPU %.9g\n", tag.c_str(), (long long)r, (long long)k,
                            double(got), double(ref[size_t(r * in + k)]));
                exact = false;
                break;
            }
        }
    expect(exact, tag + ": device weights equal vt_packed_unpack bit for bit");

    bool pads = true, valid = true;
    for (int64_t r = 0; r < s.n_pad; ++r) {
        for (int64_t c = 0; c < s.meta_cols(); ++c) {
            const uint32_t word = e[size_t(sparse_meta_index(s, r, c))];
            for (int j = 0; j < 8; ++j) {
                const uint32_t nib = (word >> (4 * j)) & 0xF;
                valid = valid && (nib & 3) < (nib >> 2);
                const bool pad = r >= out || (c * 8 + j) * 4 >= in;
                if (pad) pads = pads && nib == 0x4;
            }
        }
        for (int64_t k = 0; k < s.k_pad; ++k)
            if (r >= out || k >= in) pads = pads && sparse_dev_weight(s, a.data(), e.data(), ws.data(), r, k) == 0.0f;
        if (r >= out) pads = pads && ws[size_t(r)] == 0.0f;
        for (int64_t j = 0; j < s.k_pad / 2; ++j)
            if (r >= out || j >= in / 2) pads = pads && a[size_t(r * (s.k_pad / 2) + j)] == 0;
        if (s.int4)
            for (int64_t j = 0; j < s.k_pad / 2 && r < out; ++j) valid = valid && std::abs(a[size_t(r * (s.k_pad / 2) + j)]) <= 7;
    }
    expect(valid, tag + ": every metadata nibble is a valid 2:4 pair (and INT4 values are in [-8, 7])");
    expect(pads, tag + ": padding rows, groups and scales are zero, padding metadata 0x4");

    // The kernel's arithmetic (cutlass_sparse.cu) from the device buffers vs vt_linear, m = 3.
    const int64_t m = 3;
    std::mt19937 rng{uint32_t(in * 3 + out)};
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(m * in)), bias(static_cast<size_t>(out));
    std::vector<float> y(static_cast<size_t>(m * out)), yref(static_cast<size_t>(m * out));
    for (auto& v : x) v = nd(rng);
    for (auto& v : bias) v = nd(rng);
    for (int64_t k = 0; k < in; ++k) x[size_t(2 * in + k)] = 0.0f;  // a zero row: scale 0
    const float qmax = s.int4 ? 7.0f : 127.0f;
    for (int64_t i = 0; i < m; ++i) {
        const float* xr = x.data() + i * in;
        float amax = 0.0f;
        for (int64_t k = 0; k < in; ++k) amax = std::fmax(amax, std::fabs(xr[k]));
        float sc = amax / qmax;
        if (!(sc > 0.0f) || !std::isfinite(sc)) sc = 0.0f;
        std::vector<int8_t> xq(size_t(s.k_pad), 0);
        for (int64_t k = 0; k < in; ++k)
            xq[size_t(k)] = sc > 0.0f ? int8_t(std::fmin(qmax, std::fmax(-qmax, std::rint(xr[k] / sc)))) : 0;
        for (int64_t r = 0; r < out; ++r) {
            int32_t acc = 0;
            const int8_t* ar = a.data() + r * (s.k_pad / 2);
            for (int64_t g = 0; g < s.k_pad / 4; ++g) {
                const uint32_t nib = (e[size_t(sparse_meta_index(s, r, g / 8))] >> (4 * (g % 8))) & 0xF;
                acc += int32_t(ar[2 * g]) * xq[size_t(4 * g + (nib & 3))] + int32_t(ar[2 * g + 1]) * xq[size_t(4 * g + (nib >> 2))];
            }
            float v = float(acc) * (sc * ws[size_t(r)]);
            y[size_t(i * out + r)] = v + bias[size_t(r)];
        }
    }
    vt_linear_options lo = vt_linear_default_options();
    const vt_status st = vt_linear(pk->p, x.data(), m, bias.data(), &lo, yref.data());
    bool same = st == VT_OK;
    for (size_t i = 0; i < y.size() && same; ++i)
        if (bits(y[i]) != bits(yref[i])) {
            std::printf("  %s y[%zu]: emulated %.9g, vt_linear %.9g\n", tag.c_str(), i, double(y[i]), double(yref[i]));
            same = false;
        }
    expect(same, tag + ": the sparse GEMM's integer math from the device buffers equals vt_linear bit for bit");
}

// sparse_meta_index against cutlass::reorder_meta into layout::ColumnMajorInterleaved<2>
// (what SparseGemm's LayoutE is for 32-bit metadata), when the CUTLASS headers are at hand.
void check_meta_reorder_against_cutlass() {
#if defined(VT_CHECK_CUTLASS_REORDER)
    for (int32_t n_pad : {128, 256})
        for (int32_t k_pad : {128, 384}) {
            SparseShape s;
            s.n = s.n_pad = n_pad;
            s.k = s.k_pad = k_pad;
            const int mc = k_pad / 32;
            std::vector<uint32_t> src(size_t(n_pad) * size_t(mc)), dst(src.size(), 0);
            for (size_t i = 0; i < src.size(); ++i) src[i] = uint32_t(i) * 2654435761u + 1u;
            cutlass::TensorRef<uint32_t, cutlass::layout::RowMajor> rs(src.data(), cutlass::layout::RowMajor(mc));
            const auto le = cutlass::layout::ColumnMajorInterleaved<2>::packed({n_pad, mc});
            cutlass::TensorRef<uint32_t, cutlass::layout::ColumnMajorInterleaved<2>> rd(dst.data(), le);
            cutlass::reorder_meta(rd, rs, cutlass::gemm::GemmCoord(n_pad, 0, mc));
            bool same = true;
            for (int r = 0; r < n_pad && same; ++r)
                for (int c = 0; c < mc; ++c)
                    if (dst[size_t(sparse_meta_index(s, r, c))] != src[size_t(r) * size_t(mc) + size_t(c)]) {
                        std::printf("  meta (%d, %d) of [%d, %d]: misplaced\n", r, c, n_pad, k_pad);
                        same = false;
                        break;
                    }
            expect(same, "sparse_meta_index equals cutlass::reorder_meta for [" + std::to_string(n_pad) + ", " +
                             std::to_string(k_pad) + "]");
        }
#else
    std::printf("note: CUTLASS headers not given; sparse_meta_index not compared with cutlass::reorder_meta\n");
#endif
}

void check_row_orders() {
    const int64_t nh = 4, nkv = 2, hd = 8, h = 32;
    const int64_t rows = (nh + 2 * nkv) * hd;
    std::vector<float> w(size_t(rows * h));
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t k = 0; k < h; ++k) w[size_t(r * h + k)] = float(r + 1) * (k == 3 ? 1.0f : 0.5f);  // exact in BF16
    vt_prepack_options o = vt_prepack_default_options();
    o.format = VT_FORMAT_BF16;
    vt_packed* raw = nullptr;
    vt_prepack(w.data(), VT_DTYPE_F32, rows, h, &o, &raw);
    Packed pk(raw);
    const auto order = rows_qkv(*pk.p, nh, nkv, hd);
    bool ok = int64_t(order.size()) % kRowPad == 0;
    for (int64_t d = 0; d < rows; ++d) {
        int64_t want;
        if (d < (nh + nkv) * hd) {
            const int64_t head = d / hd, j = (d % hd) / 2;
            want = head * hd + j + ((d % 2) ? hd / 2 : 0);
        } else {
            want = d;
        }
        ok = ok && order[size_t(d)].row == want && order[size_t(d)].p == pk.p;
    }
    for (size_t d = size_t(rows); d < order.size(); ++d) ok = ok && order[d].p == nullptr;
    expect(ok, "rows_qkv pairs dims j and j + hd/2 of every Q and K head, V in order");

    // Partial rotary embeddings (rot = 4 of hd = 8): dims j and j + rot/2 paired, the other
    // dims of each Q and K head in order after them, V in order.
    const auto porder = rows_qkv(*pk.p, nh, nkv, hd, 4);
    ok = porder.size() == order.size();
    for (int64_t d = 0; d < rows && ok; ++d) {
        int64_t want = d;
        if (d < (nh + nkv) * hd) {
            const int64_t head = d / hd, r = d % hd;
            want = r < 4 ? head * hd + r / 2 + ((r % 2) ? 2 : 0) : d;
        }
        ok = porder[size_t(d)].row == want && porder[size_t(d)].p == pk.p;
    }
    expect(ok, "rows_qkv with partial rotary: the rotary pairs, then the other dims in order");

    const Repacked r = repack(*pk.p, rows, order);
    bool vals = true;
    for (int64_t d = 0; d < rows; ++d)
        vals = vals && dev_weight(r, d, 3) == w[size_t(order[size_t(d)].row * h + 3)];
    expect(vals, "repacked QKV rows hold their source rows");

    const auto inter = rows_interleave(*pk.p, *pk.p);
    ok = int64_t(inter.size()) >= 2 * rows;
    for (int64_t i = 0; i < rows; ++i) ok = ok && inter[size_t(2 * i)].row == i && inter[size_t(2 * i + 1)].row == i;
    expect(ok, "rows_interleave alternates gate and up rows");

    // Biases in device row order (row_values): entry d is the bias of the checkpoint row the
    // device row computes (the formula above, independently of order[]), 0 for padding.
    std::vector<float> bias(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) bias[size_t(r)] = 0.25f * float(r + 1);
    const std::vector<float> bq = row_values(order, {{pk.p, bias.data()}});
    ok = bq.size() == order.size();
    for (int64_t d = 0; d < rows && ok; ++d) {
        const int64_t head = d / hd, j = (d % hd) / 2;
        const int64_t src = d < (nh + nkv) * hd ? head * hd + j + ((d % 2) ? hd / 2 : 0) : d;
        ok = bq[size_t(d)] == bias[size_t(src)];
    }
    for (size_t d = size_t(rows); d < bq.size() && ok; ++d) ok = bq[d] == 0.0f;
    expect(ok, "row_values puts the q/k/v biases in rows_qkv order, zero padding");

    // Gate/up biases: two sources in one interleaved order; a source without values gives 0.
    vt_packed* raw2 = nullptr;
    vt_prepack(w.data(), VT_DTYPE_F32, rows, h, &o, &raw2);
    Packed pk2(raw2);
    const auto gu = rows_interleave(*pk.p, *pk2.p);
    std::vector<float> ub(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) ub[size_t(r)] = -float(r) - 0.5f;
    const std::vector<float> bgu = row_values(gu, {{pk.p, bias.data()}, {pk2.p, ub.data()}});
    const std::vector<float> bg0 = row_values(gu, {{pk.p, bias.data()}, {pk2.p, nullptr}});
    ok = bgu.size() == gu.size() && bg0.size() == gu.size();
    for (int64_t i = 0; i < rows && ok; ++i)
        ok = bgu[size_t(2 * i)] == bias[size_t(i)] && bgu[size_t(2 * i + 1)] == ub[size_t(i)] &&
             bg0[size_t(2 * i)] == bias[size_t(i)] && bg0[size_t(2 * i + 1)] == 0.0f;
    for (size_t d = size_t(2 * rows); d < bgu.size() && ok; ++d) ok = bgu[d] == 0.0f;
    expect(ok, "row_values interleaves gate and up biases as rows_interleave orders the rows");
}

// ---- Keys and swizzle -------------------------------------------------------------------------

void check_keys() {
    std::mt19937 rng(11);
    std::uniform_int_distribution<int> pick(0, 9);
    bool ok = true;
    for (int trial = 0; trial < 2000; ++trial) {
        const int n = 1 + int(rng() % 300);
        std::vector<float> v(static_cast<size_t>(n));
        for (auto& x : v) {
            switch (pick(rng)) {
                case 0: x = NAN; break;
                case 1: x = -0.0f; break;
                case 2: x = 0.0f; break;
                case 3: x = -INFINITY; break;
                case 4: x = float(int(rng() % 5)) - 2.0f; break;  // ties
                default: x = std::ldexp(float(int(rng() % 2001)) - 1000.0f, int(rng() % 40) - 20); break;
            }
        }
        uint64_t best = 0;
        for (int i = 0; i < n; ++i) {
            const uint64_t k = rank_key(v[size_t(i)], uint32_t(i));
            best = k > best ? k : best;
        }
        const int64_t got = best ? int64_t(rank_key_index(best)) : 0;
        int64_t want = -1;
        vt_argmax(v.data(), n, &want);
        if (got != want) {
            ok = false;
            std::printf("  argmax via keys %lld, vt_argmax %lld (n %d)\n", (long long)got, (long long)want, n);
            break;
        }
        if (best && !(rank_key_value(best) == v[size_t(got)])) ok = false;
    }
    expect(ok, "rank keys order like vt_argmax (NaN, -0, ties, -inf)");
}

void check_swizzle() {
    bool ok = true;
    for (int upc : {2, 4}) {
        // Units of chunks 0..63 form a permutation of 0..upc*64-1.
        std::vector<int> seen(size_t(upc * 64), 0);
        for (int c = 0; c < 64; ++c)
            for (int j = 0; j < upc; ++j) ++seen[size_t(xs_unit(c, j, upc))];
        for (int s : seen) ok = ok && s == 1;
        // 8 consecutive lanes reading unit j hit 8 distinct 16-byte bank groups.
        for (int c0 = 0; c0 < 64; c0 += 8)
            for (int j = 0; j < upc; ++j) {
                int mask = 0;
                for (int c = c0; c < c0 + 8; ++c) mask |= 1 << (xs_unit(c, j, upc) % 8);
                ok = ok && mask == 0xFF;
            }
    }
    expect(ok, "activation staging swizzle is a permutation and bank-conflict-free");
}

// The top-k kernel's network (misc.cu) on kTopKSlice keys, emulated with the same index math.
void check_sorting_network() {
    constexpr int kSlice = 2048;
    std::mt19937_64 rng(3);
    bool ok = true;
    for (int trial = 0; trial < 20 && ok; ++trial) {
        std::vector<uint64_t> keys(kSlice);
        for (auto& k : keys) k = trial % 3 == 0 ? rng() % 50 : rng();  // duplicates too
        std::vector<uint64_t> want = keys;
        std::sort(want.begin(), want.end(), std::greater<uint64_t>());
        for (int k = 2; k <= kSlice; k <<= 1)
            for (int j = k >> 1; j > 0; j >>= 1)
                for (int t = 0; t < kSlice / 2; ++t) {
                    int i, l;
                    bool desc;
                    bitonic_pair(t, j, k, &i, &l, &desc);
                    if ((keys[size_t(i)] < keys[size_t(l)]) == desc) std::swap(keys[size_t(i)], keys[size_t(l)]);
                }
        ok = keys == want;
    }
    expect(ok, "top-k bitonic network sorts 2048 keys descending");
}

// Decode attention splits cover [0, n) exactly once, in whole chunks of kAttnSplitKeys (and of
// 128 keys, the legacy kernel's: VT_CUDA_LEGACY_KERNELS=1).
void check_attention_splits() {
    bool ok = true;
    for (int chunk : {kAttnSplitKeys, 128})
    for (int n = 1; n <= 5000 && ok; n += (n < 300 ? 1 : 37))
        for (int splits : {1, 2, 3, 7, 16, 32, 64}) {
            int next = 0;
            for (int sp = 0; sp < splits; ++sp) {
                const KeyRange r = attn_split_range(n, splits, sp, chunk);
                if (r.k0 >= r.k1) continue;  // empty split
                ok = ok && r.k0 == next && r.k0 % chunk == 0;
                next = r.k1;
            }
            ok = ok && next == n;
        }
    expect(ok, "decode attention splits cover every key exactly once");

    // With a sliding window: the splits cover [max(0, pos + 1 - window), pos] exactly once,
    // and every split starts on a chunk boundary counted from the window's first key.
    ok = true;
    for (int chunk : {kAttnSplitKeys, 128})
    for (int pos = 0; pos <= 3000 && ok; pos += (pos < 300 ? 1 : 41))
        for (int window : {0, 1, 2, 6, 127, 128, 129, 1000, 4096})
            for (int splits : {1, 3, 7, 64}) {
                const int lo = attn_first_key(pos, window);
                ok = ok && lo == (window > 0 ? std::max(0, pos + 1 - window) : 0);
                int next = lo;
                for (int sp = 0; sp < splits; ++sp) {
                    const KeyRange r = attn_decode_range(pos, window, splits, sp, chunk);
                    if (r.k0 >= r.k1) continue;
                    ok = ok && r.k0 == next && (r.k0 - lo) % chunk == 0;
                    next = r.k1;
                }
                ok = ok && next == pos + 1;
            }
    expect(ok, "windowed decode attention splits cover the window's keys exactly once");
}

// fp8_linear's plan for the sm_90a FP8 GEMM (fp8_sm90_plan.h): y written by the GEMM only when
// TMA can store it (one output, n % 4 == 0, y 16-byte aligned), else the scratch at the padded
// pitch and a finishing pass; SwiGLU as a batch of two whose strides reach up's codes, scales
// and scratch, with its biases and activation left to the finishing pass.
void check_fp8_sm90_plan() {
    alignas(16) static uint8_t xq[64], wg[64], wu[64];
    alignas(16) static float xs[4], sg[8], su[8], bias[8], y[64], dg[64], du[64];
    bool fin = false;
    Fp8Sm90Problem p = fp8_sm90_plan(20, 256, 320, 576, xq, xs, wg, sg, nullptr, nullptr, bias, 1, y, dg, du, &fin);
    expect(!fin && p.d == y && p.ldd == 256 && p.batch == 1 && p.bias == bias && p.gelu == 1 && p.m == 20 &&
               p.n == 256 && p.k_pad == 576 && p.xq == xq && p.xs == xs && p.w == wg && p.wscale == sg,
           "fp8 sm90 plan: n % 4 == 0, aligned y: the GEMM writes y with bias and GELU");
    for (auto c : {std::pair<int, float*>{130, y}, {37, y}, {256, y + 1}}) {
        p = fp8_sm90_plan(17, c.first, 320, 1056, xq, xs, wg, sg, nullptr, nullptr, bias, 1, c.second, dg, du, &fin);
        expect(fin && p.d == dg && p.ldd == 320 && p.n % 4 == 0 && p.n >= c.first && p.n < c.first + 4 &&
                   p.bias == nullptr && p.gelu == 0 && p.batch == 1,
               "fp8 sm90 plan: n = " + std::to_string(c.first) + (c.second == y ? "" : ", y misaligned") +
                   ": the scratch at the padded pitch over n rounded up to 4, bias and GELU in the finish pass");
    }
    p = fp8_sm90_plan(100, 254, 256, 128, xq, xs, wg, sg, wu, su, bias, 0, y, dg, du, &fin);
    // (addresses compared as integers: gate's pointer plus the stride lands in another object)
    const auto at = [](const void* base, int64_t stride, size_t esize) {
        return reinterpret_cast<uintptr_t>(base) + uintptr_t(stride * int64_t(esize));
    };
    expect(fin && p.batch == 2 && at(p.w, p.w_batch_stride, 1) == reinterpret_cast<uintptr_t>(wu) &&
               at(p.wscale, p.wscale_batch_stride, 4) == reinterpret_cast<uintptr_t>(su) && p.d == dg &&
               at(p.d, p.d_batch_stride, 4) == reinterpret_cast<uintptr_t>(du) && p.ldd == 256 && p.n == 256 &&
               p.bias == nullptr && p.gelu == 0,
           "fp8 sm90 plan: SwiGLU is a batch of two into the scratch, bias and product left to the finish pass");
}

// The sm_90a W8A16 prefill GEMM's host side (w8a16_plan.h): which weights it takes and in how
// many passes, the problem check, and the BF16 scale tables (per pass, [group][row], each f16
// scale rounded to the nearest BF16, ties to even, specials kept, 0 past the last block).
void check_w8a16() {
    expect(w8a16_phases(64, 2048) == 1 && w8a16_phases(128, 2048) == 1 && w8a16_phases(256, 2048) == 1 &&
               w8a16_phases(32, 2048) == 2 && w8a16_phases(16, 2048) == 4 && w8a16_phases(96, 2016) == 0 &&
               w8a16_phases(48, 2016) == 0 && w8a16_phases(0, 2048) == 0 && w8a16_phases(576, 576) == 1 &&
               w8a16_phases(32, 32) == 1 && w8a16_group(32, 2048) == 64 && w8a16_group(16, 2048) == 64 &&
               w8a16_group(128, 2048) == 128 && w8a16_group(576, 576) == 576 && w8a16_groups(32, 2080) == 33 &&
               w8a16_groups(128, 2048) == 16 && w8a16_groups(128, 128) == 1,
           "w8a16: blocks of 64 / 128 (and a per-channel scale, one block of K) in one pass as their own groups, "
           "32 in two and 16 in four (groups of 64)");
    expect(w8a16_shape_ok(64, 2048, 2560) && w8a16_shape_ok(32, 2080, 2560) && w8a16_shape_ok(16, 576, 64) &&
               w8a16_shape_ok(128, 128, 192, kW8a16Fp8) && w8a16_shape_ok(32, 384, 64, kW8a16U4) &&
               !w8a16_shape_ok(16, 400, 64, kW8a16U4) && !w8a16_shape_ok(96, 2016, 2560) &&
               !w8a16_shape_ok(64, 2080, 2560) && !w8a16_shape_ok(64, 2048, 2564) && !w8a16_shape_ok(0, 2048, 2560) &&
               w8a16_shape_ok(48, 48, 64) && !w8a16_shape_ok(40, 40, 64),
           "w8a16: whole blocks of K, K a multiple of 16 (4-bit: 32) even with one scale per row, n_pad a "
           "multiple of 8, a block the kernel takes");
    alignas(16) static int8_t w[64];
    alignas(16) static uint16_t sc[64], x[64];
    alignas(16) static float d[64];
    const W8a16Sm90Problem p = w8a16_problem(100, 2560, 2048, 32, kW8a16Int8, w, sc, nullptr, x, d);
    bool ok = p.ldx == 2048 && p.x_phase == 100 * 2048 && p.ldd == 2560 && p.d_phase == 100 * 2560 &&
              w8a16_sm90_problem_error(p) == nullptr;
    const auto refused = [&](W8a16Sm90Problem q, const char* needle) {
        const char* e = w8a16_sm90_problem_error(q);
        return e && std::strstr(e, needle);
    };
    W8a16Sm90Problem q = p;
    q.m = 0;
    ok = ok && refused(q, "m < 1");
    q = p;
    q.block = 48;
    ok = ok && refused(q, "block");
    q = p;
    q.x = x + 1;
    ok = ok && refused(q, "aligned");
    q = p;
    q.d = nullptr;
    ok = ok && refused(q, "null");
    q = p;
    q.ldx = 2040;
    ok = ok && refused(q, "pitch of x");
    q = p;
    q.ldd = 2562;
    ok = ok && refused(q, "pitch of d");
    q = p;
    q.x_phase = 99 * 2048;  // the passes' x would overlap
    ok = ok && refused(q, "between the passes");
    q = p;
    q.d_phase = 100 * 2560 + 2;
    ok = ok && refused(q, "between the passes");
    q = p;
    q.block = 64;
    q.x_phase = q.d_phase = 0;  // one pass: no distance needed
    ok = ok && w8a16_sm90_problem_error(q) == nullptr;
    q = p;
    q.wtype = kW8a16U4;  // 4-bit needs its zero tables
    ok = ok && refused(q, "null");
    q.zeros = sc;
    ok = ok && w8a16_sm90_problem_error(q) == nullptr;
    q.wtype = kW8a16Int8;  // and INT8 has none
    ok = ok && refused(q, "null");
    q.wtype = 7;
    ok = ok && refused(q, "weight type");
    expect(ok, "w8a16: the problem check accepts a prefill problem and names each broken field");
    std::string err;
    const bool picks = !prefill_gemm_wgmma(nullptr, &err) && err.empty() && !prefill_gemm_wgmma("", &err) &&
                       err.empty() && !prefill_gemm_wgmma("mma", &err) && err.empty() &&
                       prefill_gemm_wgmma("wgmma", &err) && err.empty() && !prefill_gemm_wgmma("bogus", &err) &&
                       err == "VT_CUDA_PREFILL_GEMM=bogus: expected mma (the default) or wgmma";
    expect(picks, "VT_CUDA_PREFILL_GEMM: unset / empty / mma the default kernel, wgmma the new one, anything "
                  "else refused naming the variable and the value");

    // Scale tables from f16 patterns (random normals and subnormals, zeros, infinities, NaNs, and
    // the two RNE ties 1 + 2^-8 -> 1 and 1 + 2^-7 + 2^-8 -> 1 + 2^-6), blocks 16 / 32 / 64 / 128,
    // K not a whole number of groups (a pass's last group past the blocks: 0).
    std::mt19937 rng(77);
    struct T {
        int n_pad, k_pad, kb;
    };
    for (T t : {T{64, 64, 64}, T{192, 320, 64}, T{2560, 2048, 128}, T{128, 2080, 32}, T{64, 576, 16}, T{64, 48, 16},
                T{192, 576, 576}}) {  // (the last: one block of K, FP8's per-channel format)
        const int nkb = t.k_pad / t.kb, ph = w8a16_phases(t.kb, t.k_pad), groups = w8a16_groups(t.kb, t.k_pad);
        std::vector<uint16_t> f16(size_t(t.n_pad) * size_t(nkb));
        std::vector<uint16_t> out(w8a16_scale_entries(t.kb, t.k_pad, t.n_pad), 0xDEAD);
        for (auto& h : f16) h = uint16_t(rng() & 0xFFFF);
        f16[0] = 0x3C04;                // row 0, block 0: 1 + 2^-8
        f16[f16.size() - 1] = 0x3C0C;   // the last row's last block: 1 + 2^-7 + 2^-8
        w8a16_scales(f16.data(), t.n_pad, t.k_pad, t.kb, out.data());
        // The 4-bit zero tables from the same values: as mins (INT4_MIN) they come out as the
        // scales do; as scales (INT4) -8 times them (exact in BF16 once rounded: a power of two).
        std::vector<uint16_t> zm(out.size()), zs(out.size()), ones(out.size());
        w8a16_zeros(nullptr, f16.data(), t.n_pad, t.k_pad, t.kb, zm.data());
        w8a16_zeros(f16.data(), nullptr, t.n_pad, t.k_pad, t.kb, zs.data());
        w8a16_scales(nullptr, t.n_pad, t.k_pad, t.kb, ones.data());
        bool zeros_ok = zm == out;
        for (int b = 0; b < ph; ++b)
            for (int g = 0; g < groups; ++g)
                for (int r = 0; r < t.n_pad; ++r) {
                    const size_t i = (size_t(b) * size_t(groups) + size_t(g)) * size_t(t.n_pad) + size_t(r);
                    const bool exists = g * ph + b < nkb;
                    const float o = vt::bf16_to_f32(out[i]), z = vt::bf16_to_f32(zs[i]);
                    zeros_ok = zeros_ok && (std::isnan(o) ? std::isnan(z) : z == -8.0f * o) &&
                               vt::bf16_to_f32(ones[i]) == (exists ? 1.0f : 0.0f);
                }
        bool good = out.size() == size_t(ph) * size_t(groups) * size_t(t.n_pad);
        for (int b = 0; b < ph; ++b)
            for (int g = 0; g < groups; ++g)
                for (int r = 0; r < t.n_pad; ++r) {
                    const int blk = g * ph + b;
                    const float o = vt::bf16_to_f32(out[(size_t(b) * size_t(groups) + size_t(g)) * size_t(t.n_pad) + size_t(r)]);
                    if (blk >= nkb) {
                        good = good && o == 0.0f;
                        continue;
                    }
                    const float v = vt::f16_to_f32(f16[size_t(r) * size_t(nkb) + size_t(blk)]);
                    if (std::isnan(v)) good = good && std::isnan(o);
                    else if (std::isinf(v)) good = good && o == v;
                    else good = good && std::signbit(o) == std::signbit(v) &&
                                std::fabs(o - v) <= std::ldexp(std::fabs(v), -8);  // half an ulp of 8 bits
                }
        const int lb = nkb - 1;  // the last block: pass lb % ph, group lb / ph
        good = good && vt::bf16_to_f32(out[0]) == 1.0f &&
               vt::bf16_to_f32(out[(size_t(lb % ph) * size_t(groups) + size_t(lb / ph)) * size_t(t.n_pad) +
                                   size_t(t.n_pad - 1)]) == 1.015625f;
        expect(zeros_ok, "w8a16 zero tables (INT4_MIN: the mins; INT4: -8 x the scale) and the ones of a "
                         "per-channel weight, block " + std::to_string(t.kb));
        expect(good, "w8a16 scale tables " + std::to_string(t.n_pad) + " x K " + std::to_string(t.k_pad) + ", block " +
                         std::to_string(t.kb) + ": " + std::to_string(ph) + " pass(es) of [group][row], nearest BF16 "
                         "(ties to even), zeros / infinities / NaNs kept, 0 past the last block");
    }
}

// Device-side token feedback (decode_ahead.h): when a decode call may launch the next step,
// and when the next call may use it instead of running its own.
void check_decode_ahead() {
    expect(step_slot(0) == 0 && step_slot(1) == 1 && step_slot(510) == 0 && step_slot(511) == 1,
           "decode ahead: consecutive positions alternate slots");
    expect(may_run_ahead(true, true, 0, 512) && may_run_ahead(true, true, 510, 512),
           "decode ahead: a greedy call without logits runs the next step ahead while it fits the cache");
    expect(!may_run_ahead(true, true, 511, 512) && !may_run_ahead(true, true, 600, 512),
           "decode ahead: never past the cache as allocated (it would have to grow under a running step)");
    expect(!may_run_ahead(false, true, 5, 512) && !may_run_ahead(true, false, 5, 512),
           "decode ahead: not with VT_CUDA_FEEDBACK=0, nor for a sampled call or one that wants logits");
    // Two fills of one step as fill_step makes them: zeroed, then the fields.
    const auto fill = [](int32_t token, int32_t pos, int32_t fb, float base) {
        StepParams st;
        std::memset(&st, 0, sizeof st);
        st.token = token;
        st.pos = pos;
        st.feedback = fb;
        for (int i = 0; i < 32; ++i) st.rope[i] = std::cos(base * float(pos) / float(i + 1));
        return st;
    };
    const StepParams launched = fill(0, 41, 1, 1.0f);  // the token is the device's: unknown at launch
    const StepParams want = fill(1234, 41, 0, 1.0f);   // what the next call computes
    AheadStep a;
    a.in_flight = true;
    a.pos = 41;
    a.token = 1234;
    expect(ahead_matches(a, launched, want, true), "decode ahead: the next call at its position with its token uses it");
    AheadStep b = a;
    b.token = 1235;
    expect(!ahead_matches(b, launched, want, true), "decode ahead: another token than the device fed it: dropped");
    b = a;
    b.token = -1;
    StepParams w = want;
    w.token = -1;
    expect(!ahead_matches(b, launched, w, true), "decode ahead: never used before its token is known");
    b = a;
    b.in_flight = false;
    expect(!ahead_matches(b, launched, want, true), "decode ahead: a step already used or dropped is not used again");
    expect(!ahead_matches(a, launched, want, false), "decode ahead: a sampled call or one that wants logits drops it");
    w = want;
    w.pos = 40;
    expect(!ahead_matches(a, launched, w, true), "decode ahead: a call at another position drops it");
    expect(!ahead_matches(a, launched, fill(1234, 41, 0, 1.5f), true),
           "decode ahead: other RoPE inputs (LongRoPE at another sequence length) drop it");
    StepParams l2 = launched;
    l2.rope_local[3] = 0.5f;
    expect(!ahead_matches(a, l2, want, true), "decode ahead: other local RoPE inputs drop it");
    expect(!ahead_matches(a, fill(0, 41, 0, 1.0f), want, true),
           "decode ahead: a slot whose step was not fed back is not a step launched ahead");
}

// The device's draw (draw.h) over sorted candidates = vt_sample over the same values, token for
// token: random rows (ties, -inf entries, a +inf or -inf best value, fewer candidates than
// top_k), every option, many steps.
void check_draw() {
    std::mt19937 rng(1234);
    std::normal_distribution<float> nd(0.0f, 3.0f);
    int bad = 0, total = 0, distinct = 0;
    for (int row = 0; row < 400; ++row) {
        const int n = row % 7 == 0 ? 1 + int(rng() % 40) : 256;
        std::vector<float> v(static_cast<size_t>(n));
        for (float& x : v) x = row % 5 == 0 ? float(int(nd(rng))) : nd(rng);  // integers: many ties
        if (row % 11 == 0) v[size_t(rng() % n)] = -INFINITY;
        if (row % 37 == 0) v[size_t(rng() % n)] = INFINITY;
        if (row % 41 == 0) std::fill(v.begin(), v.end(), -INFINITY);
        // Sorted as the device's top-k leaves them: (value desc, index asc).
        std::vector<int> order(static_cast<size_t>(n));
        for (int i = 0; i < n; ++i) order[size_t(i)] = i;
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return v[size_t(a)] > v[size_t(b)]; });
        std::vector<float> sv(static_cast<size_t>(n));
        for (int i = 0; i < n; ++i) sv[size_t(i)] = v[size_t(order[size_t(i)])];
        vt_sample_options o = vt_sample_default_options();
        o.temperature = std::array<float, 4>{0.3f, 0.8f, 1.0f, 2.5f}[size_t(row % 4)];
        o.top_k = std::array<int32_t, 5>{0, 1, 40, 255, 300}[size_t(row % 5)];
        o.top_p = std::array<float, 3>{1.0f, 0.9f, 0.35f}[size_t(row % 3)];
        o.min_p = std::array<float, 3>{0.0f, 0.05f, 0.5f}[size_t((row / 3) % 3)];
        o.seed = rng();
        DrawArgs a;
        std::memset(&a, 0, sizeof a);
        a.temperature = o.temperature;
        a.top_p = o.top_p;
        a.use_min_p = o.min_p > 0.0f;
        a.log_min_p = a.use_min_p ? std::log(double(o.min_p)) : 0.0;
        a.seed = o.seed;
        a.top_k = o.top_k;
        std::vector<int64_t> seen;
        for (uint64_t step = 0; step < 24; ++step) {
            a.step = step;
            int64_t want = -1;
            vt_sample(v.data(), n, &o, step, &want);
            const int k = draw_considered(n, a);
            std::vector<double> p(static_cast<size_t>(k));
            for (int j = 0; j < k; ++j) p[size_t(j)] = draw_weight(sv[size_t(j)], sv[0], a.temperature);
            const int at = draw_pick(sv.data(), p.data(), k, a);
            const int64_t got = at < 0 ? 0 : order[size_t(at)];
            bad += got != want;
            ++total;
            if (std::find(seen.begin(), seen.end(), got) == seen.end()) seen.push_back(got);
        }
        distinct += int(seen.size());
    }
    expect(bad == 0, "draw.h over sorted candidates = vt_sample (" + std::to_string(bad) + " of " +
                         std::to_string(total) + " draws differ)");
    expect(distinct > 2 * 400, "draw.h: the draws vary with the step (" + std::to_string(distinct) +
                                   " distinct tokens over 400 rows of 24 steps)");
}

// The epilogues' soft-cap and tanh GELU: the CPU's formulas (cpu/engine.cpp, ops::geglu_tanh)
// within a few float ulps of double precision.
void check_epilogue_math() {
    bool ok = true;
    double worst = 0.0;
    for (int i = -4000; i <= 4000; ++i) {
        const float x = float(i) * 0.0025f * (i % 7 == 0 ? 10.0f : 1.0f);
        const double g = 0.5 * double(x) * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (double(x) + 0.044715 * double(x) * x * x)));
        const double c = std::tanh(double(x) / 3.0) * 3.0;
        // (relative to |x|: for x << 0, 1 + tanh(inner) cancels in float on the CPU as here)
        const double eg = std::fabs(double(gelu_tanh(x)) - g) / std::max(std::fabs(g), std::fabs(double(x)));
        const double ec = std::fabs(double(softcap_value(x, 3.0f)) - c) / std::max(1e-30, std::fabs(c));
        if (x != 0.0f) worst = std::max({worst, eg, ec});
    }
    ok = worst < 2e-6;
    expect(ok, "gelu_tanh and softcap_value within 2e-6 of double precision (" + std::to_string(worst) + ")");
    expect(gelu_tanh(0.0f) == 0.0f && softcap_value(0.0f, 30.0f) == 0.0f &&
               softcap_value(1e30f, 30.0f) == 30.0f && softcap_value(-1e30f, 50.0f) == -50.0f,
           "gelu_tanh(0) = 0, soft-cap saturates at ±cap");
}

// The int8 KV cache (kv_i8.h, kv_layout.h): codes round to nearest with ties to even, within
// half a step of x, ±127 at the largest |x|; the scales region follows both code planes,
// 8-byte aligned for the attention kernel's (key, value) loads, and ends where
// kv_cache_bytes says; the other caches' sizes are their two planes.
void check_kv_i8() {
    using vt::kv_i8_code;
    using vt::kv_i8_inv;
    using vt::kv_i8_scale;
    std::mt19937 rng(7);
    std::normal_distribution<float> nd(0.0f, 3.0f);
    bool ok = true;
    for (int trial = 0; trial < 2000 && ok; ++trial) {
        const int n = 1 + trial % 256;
        std::vector<float> x(static_cast<size_t>(n));
        for (float& v : x) v = nd(rng) * (trial % 7 == 0 ? 1e-30f : trial % 11 == 0 ? 1e30f : 1.0f);
        float amax = 0.0f;
        for (float v : x) amax = std::max(amax, std::fabs(v));
        if (amax == 0.0f) continue;
        const float inv = kv_i8_inv(amax), scale = kv_i8_scale(amax);
        for (int i = 0; i < n; ++i) {
            const int8_t q = kv_i8_code(x[size_t(i)], inv);
            ok = ok && q != -128;
            // |q - x · inv| <= 1/2 (the rounding), so |q · scale - x| <= scale / 2 up to f32 error
            ok = ok && std::fabs(double(q) - double(x[size_t(i)]) * double(inv)) <= 0.5 + 1e-5;
            if (std::fabs(x[size_t(i)]) == amax) ok = ok && std::abs(int(q)) == 127;
        }
        ok = ok && std::fabs(double(scale) * 127.0 - amax) <= 1e-6 * amax;
    }
    expect(ok, "int8 KV codes: within half a step, never -128, the largest |x| at ±127");
    // amax 127: inv 1 exactly, so k + 1/2 rounds to the even neighbour.
    bool ties = kv_i8_inv(127.0f) == 1.0f;
    for (int k = -126; k < 126 && ties; ++k) {
        const int8_t q = kv_i8_code(float(k) + 0.5f, 1.0f);
        ties = q == ((k % 2 == 0) ? k : k + 1);
    }
    expect(ties, "int8 KV codes: ties to even");
    // Vectors too small for a finite 127 / amax are stored as zeros (the device's kv_store_i8
    // and ops::store_i8 both ask kv_i8_storable): the threshold's multiplier is finite.
    expect(!vt::kv_i8_storable(0.0f) && !vt::kv_i8_storable(1e-37f) && !vt::kv_i8_storable(NAN) &&
               vt::kv_i8_storable(vt::kKvI8MinAmax) && std::isfinite(kv_i8_inv(vt::kKvI8MinAmax)) &&
               kv_i8_code(0.0f, kv_i8_inv(vt::kKvI8MinAmax)) == 0,
           "int8 KV codes: a vector below kKvI8MinAmax is stored as zeros; at it the multiplier is finite");

    bool lay = true;
    for (int layers : {1, 2, 22})
        for (int nkv : {1, 4, 32})
            for (int hd : {4, 8, 12, 64, 96, 128, 256})
                for (int64_t cap : {int64_t(1), int64_t(7), int64_t(512), int64_t(4096)}) {
                    char* base = nullptr;
                    const int64_t plane = int64_t(layers) * nkv * hd * cap;  // codes of K (or V)
                    const char* s0 = reinterpret_cast<const char*>(kv_layer_scales(base, cap, 0, layers, nkv, hd));
                    const char* sl = reinterpret_cast<const char*>(kv_layer_scales(base, cap, layers - 1, layers, nkv, hd));
                    lay = lay && s0 - base == 2 * plane && (s0 - base) % 8 == 0 &&
                          kv_layer_v(base, cap, 0, layers, nkv, hd, 1) - base == plane &&
                          (sl - base) + int64_t(nkv) * cap * 8 == kv_cache_bytes(cap, layers, nkv, hd, 1) &&
                          kv_cache_bytes(cap, layers, nkv, hd, 2) == 4 * plane &&
                          kv_cache_bytes(cap, layers, nkv, hd, 4) == 8 * plane;
                }
    expect(lay, "KV cache layout: int8 scales after both planes, 8-byte aligned, sizes");
}

}  // namespace

int main() {
    check_codes();
    for (vt_format f : {VT_FORMAT_INT8_BLOCKED, VT_FORMAT_FP8_BLOCKED})
        for (int32_t block : {16, 32, 64, 128})
            for (auto shape : {std::pair<int64_t, int64_t>{37, 128}, {64, 384}, {130, 1024}}) {
                if (shape.second % block) continue;
                check_format(f, block, shape.first, shape.second);
            }
    // 4-bit: any K (odd, a short last block), every block size.
    for (vt_format f : {VT_FORMAT_INT4_BLOCKED, VT_FORMAT_INT4_MIN_BLOCKED})
        for (int32_t block : {16, 32, 64, 128})
            for (auto shape : {std::pair<int64_t, int64_t>{37, 128}, {64, 384}, {130, 1024}, {37, 100}, {5, 7}, {20, 333}})
                check_format(f, block, shape.first, shape.second);
    for (vt_format f : {VT_FORMAT_FP8_CHANNEL, VT_FORMAT_BF16})
        for (auto shape : {std::pair<int64_t, int64_t>{37, 100}, {64, 384}, {5, 7}})
            check_format(f, 0, shape.first, shape.second);
    for (vt_format f : {VT_FORMAT_INT8_SPARSE24, VT_FORMAT_INT4_SPARSE24})
        for (auto shape : {std::pair<int64_t, int64_t>{37, 100}, {5, 8}, {130, 1028}, {300, 256}, {17, 4}})
            check_sparse(f, shape.first, shape.second);
    check_meta_reorder_against_cutlass();
    check_row_orders();
    check_keys();
    check_swizzle();
    check_sorting_network();
    check_attention_splits();
    check_epilogue_math();
    check_fp8_sm90_plan();
    check_w8a16();
    check_decode_ahead();
    check_draw();
    check_kv_i8();
    std::printf("%d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}

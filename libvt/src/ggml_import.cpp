// GGUF quantized blocks -> libvt's tiled formats, exactly (ggml_import.h, quant.h).
#include "ggml_import.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#include "convert.h"
#include "half.h"
#include "threadpool.h"

namespace vt {

int ggml_carrier(int type) {
    switch (type) {
        case kGgmlQ8_0: case kGgmlQ4_0: case kGgmlQ4_1: return type;
        case kGgmlQ4_K: return kGgmlQ4_1;
        case kGgmlQ5_0: case kGgmlQ6_K: case kGgmlIQ4_NL: case kGgmlIQ4_XS: return kGgmlQ8_0;
        default: return -1;
    }
}

int ggml_block_weights(int type) {
    if (ggml_carrier(type) < 0) return 0;
    return type == kGgmlQ4_K || type == kGgmlQ6_K || type == kGgmlIQ4_XS ? 256 : kGgmlBlock;
}

size_t ggml_block_bytes(int type) {
    switch (type) {
        case kGgmlQ8_0: return 34;
        case kGgmlQ4_0: return 18;
        case kGgmlQ4_1: return 20;
        case kGgmlQ5_0: return 22;
        case kGgmlQ4_K: return 144;
        case kGgmlQ6_K: return 210;
        case kGgmlIQ4_NL: return 18;
        case kGgmlIQ4_XS: return 136;
        default: return 0;
    }
}

const char* ggml_type_name(int type) {
    switch (type) {
        case kGgmlQ8_0: return "Q8_0";
        case kGgmlQ4_0: return "Q4_0";
        case kGgmlQ4_1: return "Q4_1";
        case kGgmlQ5_0: return "Q5_0";
        case kGgmlQ4_K: return "Q4_K";
        case kGgmlQ6_K: return "Q6_K";
        case kGgmlIQ4_NL: return "IQ4_NL";
        case kGgmlIQ4_XS: return "IQ4_XS";
        default: return "?";
    }
}

bool ggml_packable(int type) { return ggml_carrier(type) >= 0; }

vt_format ggml_native_format(int type) {
    switch (ggml_carrier(type)) {
        case kGgmlQ8_0: return VT_FORMAT_INT8_BLOCKED;
        case kGgmlQ4_0: return VT_FORMAT_INT4_BLOCKED;
        default: return VT_FORMAT_INT4_MIN_BLOCKED;
    }
}

namespace {

uint16_t load_u16(const uint8_t* p) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
}

bool finite_f16(uint16_t h) { return (h & 0x7C00u) != 0x7C00u; }

void check_type(int type) {
    VT_CHECK_ARG(ggml_carrier(type) >= 0, "GGML block type %d is not Q8_0 (8), Q4_0 (2), Q4_1 (3), Q5_0 (6), "
                 "Q4_K (12), Q6_K (14), IQ4_NL (20) or IQ4_XS (23)", type);
}

// Q4_K's packed 6-bit scale and min of sub-block j (ggml's get_scale_min_k4).
void k4_scale_min(const uint8_t* q, int j, uint8_t* sc, uint8_t* m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = uint8_t((q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4));
        *m = uint8_t((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

void store_u16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

// One row of `type` blocks (cols weights) as its carrier's blocks, into dst (cols / 32 of them).
// The arithmetic is pyvt/gguf.py's (q4_k_as_q4_1, q5_0_as_q8_0, iq4_nl_as_q8_0,
// iq4_xs_as_q8_0, _deq_q6_k + quantize_q8_0), in the same float32 operations: a folder that
// refers to the GGUF packs the numbers a copied folder held.
void to_carrier(const uint8_t* src, int type, int64_t cols, uint8_t* dst) {
    if (type == kGgmlQ5_0) {
        for (int64_t b = 0; b < cols / kGgmlBlock; ++b, src += 22, dst += 34) {
            uint32_t qh;
            std::memcpy(&qh, src + 2, 4);
            dst[0] = src[0];
            dst[1] = src[1];
            for (int j = 0; j < 16; ++j) {
                dst[2 + j] = uint8_t(int8_t(int((src[6 + j] & 15) | (((qh >> j) & 1) << 4)) - 16));
                dst[2 + j + 16] = uint8_t(int8_t(int((src[6 + j] >> 4) | (((qh >> (j + 16)) & 1) << 4)) - 16));
            }
        }
        return;
    }
    if (type == kGgmlIQ4_NL || type == kGgmlIQ4_XS) {
        // ggml-common.h kvalues_iq4nl: the 16 levels, int8 codes of a Q8_0 block as they are
        static const int8_t kLevels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
        const bool xs = type == kGgmlIQ4_XS;
        const int64_t nb = xs ? cols / 256 : cols / kGgmlBlock;
        for (int64_t b = 0; b < nb; ++b) {
            const uint8_t* blk = src + size_t(b) * (xs ? 136 : 18);
            const uint16_t dh = load_u16(blk);
            for (int s = 0; s < (xs ? 8 : 1); ++s, dst += 34) {
                uint16_t scale = dh;
                const uint8_t* qs = blk + 2;
                if (xs) {  // the 6-bit ls: a nibble of scales_l, two bits of scales_h
                    const int lo = (blk[4 + s / 2] >> (4 * (s % 2))) & 15;
                    const int hi = (load_u16(blk + 2) >> (2 * s)) & 3;
                    const int ls = (lo | (hi << 4)) - 32;
                    scale = finite_f16(dh) ? f32_to_f16(f16_to_f32(dh) * float(ls)) : dh;
                    qs = blk + 8 + 16 * s;
                }
                store_u16(dst, scale);
                for (int j = 0; j < 16; ++j) {
                    dst[2 + j] = uint8_t(kLevels[qs[j] & 15]);
                    dst[2 + j + 16] = uint8_t(kLevels[qs[j] >> 4]);
                }
            }
        }
        return;
    }
    if (type == kGgmlQ4_K) {
        for (int64_t b = 0; b < cols / 256; ++b, src += 144) {
            const float d = f16_to_f32(load_u16(src)), dmin = f16_to_f32(load_u16(src + 2));
            // Sub-blocks 2p and 2p + 1 share the 32 bytes [32p, 32p + 32): 2p their low
            // nibbles, 2p + 1 their high ones (both at once: constant shifts and masks).
            for (int p = 0; p < 4; ++p, dst += 40) {
                for (int s = 0; s < 2; ++s) {
                    uint8_t sc, m;
                    k4_scale_min(src + 4, 2 * p + s, &sc, &m);
                    store_u16(dst + 20 * s, f32_to_f16(d * float(sc)));
                    store_u16(dst + 20 * s + 2, f32_to_f16(-(dmin * float(m))));
                }
                const uint8_t* q = src + 16 + 32 * p;
                for (int j = 0; j < 16; ++j) {
                    dst[4 + j] = uint8_t((q[j] & 15) | (q[j + 16] << 4));
                    dst[24 + j] = uint8_t((q[j] >> 4) | (q[j + 16] & 0xF0));
                }
            }
        }
        return;
    }
    // Q6_K: the 256 values of a superblock (ggml's dequantize_row_q6_K order: two halves of
    // 128, each from 64 bytes of ql and 32 of qh), whose 16 consecutive values at 16i have the
    // scale sc[i]; then a Q8_0 block of each 32. The codes first, as bytes, then the values
    // (gcc -O3 vectorizes the code loop and the quantizing loop at the SSE2 baseline).
    for (int64_t b = 0; b < cols / 256; ++b, src += 210) {
        if (!finite_f16(load_u16(src + 208))) {  // (pack_ggml names it: the carrier's scale is NaN)
            for (int k = 0; k < 8; ++k, dst += 34) {
                store_u16(dst, 0x7E00);
                std::memset(dst + 2, 0, 32);
            }
            continue;
        }
        const float d = f16_to_f32(load_u16(src + 208));
        const int8_t* sc = reinterpret_cast<const int8_t*>(src + 192);
        int8_t qv[256];
        for (int h = 0; h < 2; ++h) {
            const uint8_t* ql = src + 64 * h;
            const uint8_t* qh = src + 128 + 32 * h;
            int8_t* o = qv + 128 * h;
            for (int l = 0; l < 32; ++l) {
                o[l] = int8_t(((ql[l] & 15) | ((qh[l] & 3) << 4)) - 32);
                o[l + 32] = int8_t(((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4)) - 32);
                o[l + 64] = int8_t(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
                o[l + 96] = int8_t(((ql[l + 32] >> 4) | ((qh[l] >> 6) << 4)) - 32);
            }
        }
        // Each block's values and amax, then the eight scales together (their divisions in
        // vectors, off the quantizing loops' path), then the codes.
        // amax = max |x| from each half's largest |code|: |fl(s q)| = fl(|s| |q|), and
        // rounding is monotonic, so that value is the half's largest |x|, as it is.
        float x[256], amax[8], dq[8], inv[8];
        for (int k = 0; k < 8; ++k) {
            amax[k] = 0.0f;
            for (int half = 0; half < 2; ++half) {
                const float s = d * float(sc[2 * k + half]);
                const int8_t* qk = qv + 32 * k + 16 * half;
                for (int j = 0; j < 16; ++j) x[32 * k + 16 * half + j] = s * float(qk[j]);
                uint8_t qmax = 0;  // (|q| <= 32)
                for (int j = 0; j < 16; ++j) {
                    const uint8_t a = uint8_t(qk[j] < 0 ? -qk[j] : qk[j]);
                    qmax = a > qmax ? a : qmax;
                }
                const float a = std::fabs(s) * float(qmax);
                amax[k] = a > amax[k] ? a : amax[k];
            }
        }
        for (int k = 0; k < 8; ++k) {
            dq[k] = amax[k] / 127.0f;
            inv[k] = dq[k] == 0.0f ? 0.0f : 1.0f / dq[k];
        }
        for (int k = 0; k < 8; ++k, dst += 34) {
            store_u16(dst, f32_to_f16(dq[k]));
            int8_t* q = reinterpret_cast<int8_t*>(dst + 2);
            for (int j = 0; j < 32; ++j) {
                // roundf (half away from zero), exactly: |v| <= 127 (+ an ulp), so int(v)
                // truncates it and v - t is its fraction, both exact in float.
                const float v = x[32 * k + j] * inv[k];
                const int t = int(v);
                const float f = v - float(t);
                const int r = t + (f >= 0.5f) - (f <= -0.5f);
                q[j] = int8_t(r > 127 ? 127 : r < -127 ? -127 : r);
            }
        }
    }
}

// Row r of `type` (cols weights) at src as carrier blocks: src itself, or converted into buf.
const uint8_t* carrier_row(const uint8_t* src, int type, int64_t cols, std::vector<uint8_t>& buf) {
    if (ggml_carrier(type) == type) return src;
    buf.resize(size_t(cols / kGgmlBlock) * ggml_block_bytes(ggml_carrier(type)));
    to_carrier(src, type, cols, buf.data());
    return buf.data();
}

// `block`: the carrier's block (of 32 weights); named as the type's own (a superblock of 256).
[[noreturn]] void bad_scale(int type, int64_t row, int64_t block, const char* what) {
    fail(VT_STATUS_FORMAT_ERROR, "%s block %lld of row %lld has a non-finite %s (NaN or Inf%s): weights must be finite",
         ggml_type_name(type), (long long)(block * kGgmlBlock / ggml_block_weights(type)), (long long)row, what,
         ggml_carrier(type) == type ? "" : ", or too large for an f16");
}

}  // namespace

std::unique_ptr<Packed> pack_ggml(const std::vector<GgmlRows>& parts, int type, int64_t cols) {
    check_type(type);
    const int carrier = ggml_carrier(type);
    int64_t out = 0;
    for (const GgmlRows& g : parts) {
        const int t = g.type < 0 ? type : g.type;
        check_type(t);
        VT_CHECK_ARG(ggml_carrier(t) == carrier, "pack_ggml: parts of %s and %s blocks", ggml_type_name(type),
                     ggml_type_name(t));
        VT_CHECK_ARG(cols % ggml_block_weights(t) == 0, "pack_ggml: %lld columns are not whole %s blocks",
                     (long long)cols, ggml_type_name(t));
        out += g.rows;
    }
    VT_CHECK_ARG(out > 0 && cols > 0 && cols % kGgmlBlock == 0, "pack_ggml: shape [%lld, %lld] is empty or has "
                 "columns that are not a multiple of 32", (long long)out, (long long)cols);
    VT_CHECK_ARG(out <= (INT64_C(1) << 31) && cols <= (INT64_C(1) << 31) && out * cols <= (INT64_C(1) << 40),
                 "pack_ggml: shape [%lld, %lld] is too large", (long long)out, (long long)cols);
    const size_t bb = ggml_block_bytes(carrier);
    const int64_t nkb = cols / kGgmlBlock;
    const bool q8 = carrier == kGgmlQ8_0, q41 = carrier == kGgmlQ4_1;

    auto p = std::make_unique<Packed>();
    p->format = ggml_native_format(type);
    p->out = out;
    p->in = cols;
    p->block = p->kb = kGgmlBlock;
    // The layout prepack (pack.cpp) uses: weights, then scales (then mins) at 64-byte offsets.
    const int64_t wbytes = q8 ? cols * kTileRows : cols / 2 * kTileRows;
    layout_dense_tiles(*p, wbytes, nkb, q41);

    // Row r -> its bytes and type.
    auto row_data = [&](int64_t r, int* t) -> const uint8_t* {
        for (const GgmlRows& g : parts) {
            *t = g.type < 0 ? type : g.type;
            if (r < g.rows) return g.data + size_t(r) * ggml_row_bytes(*t, cols);
            r -= g.rows;
        }
        return nullptr;
    };
    Packed& pr = *p;
    std::atomic<int64_t> bad_row{INT64_MAX};
    // A tile's 16 rows are read block by block (the rows converted first where carried), so
    // its writes stay inside the 16 x 32 weights of one block (the tile is k-major).
    parallel_for(p->ntiles, 1, [&](int64_t t0, int64_t t1, int) {
        std::vector<uint8_t> conv[kTileRows];  // the rows converted (carried types)
        const uint8_t* src[kTileRows];
        for (int64_t t = t0; t < t1; ++t) {
            uint8_t* tile = pr.tiles.data() + t * pr.tile_bytes;
            std::memset(tile, 0, size_t(pr.tile_bytes));  // padding rows and alignment gaps
            uint16_t* sc = reinterpret_cast<uint16_t*>(tile + pr.scale_off);
            uint16_t* mn = q41 ? reinterpret_cast<uint16_t*>(tile + pr.min_off) : nullptr;
            const int lanes = int(std::min<int64_t>(kTileRows, out - t * kTileRows));
            for (int lane = 0; lane < lanes; ++lane) {
                int rt = type;
                const uint8_t* raw = row_data(t * kTileRows + lane, &rt);
                src[lane] = carrier_row(raw, rt, cols, conv[lane]);
                pr.rowmul[t * kTileRows + lane] = 1.0f;
            }
            for (int64_t b = 0; b < nkb; ++b) {
                const int64_t k0 = b * kGgmlBlock;
                for (int lane = 0; lane < lanes; ++lane) {
                    const uint8_t* blk = src[lane] + size_t(b) * bb;
                    const uint16_t d = load_u16(blk);
                    const uint16_t m = q41 ? load_u16(blk + 2) : 0;
                    if (!finite_f16(d) || (q41 && !finite_f16(m))) {
                        const int64_t r = t * kTileRows + lane;
                        int64_t cur = bad_row.load();
                        while (r < cur && !bad_row.compare_exchange_weak(cur, r)) {
                        }
                        continue;
                    }
                    sc[b * kTileRows + lane] = d;
                    if (q41) mn[b * kTileRows + lane] = m;
                    if (q8) {  // weights [in][16] int8: byte k * 16 + lane
                        for (int j = 0; j < kGgmlBlock; ++j) tile[(k0 + j) * kTileRows + lane] = blk[2 + j];
                        continue;
                    }
                    // Nibbles: ggml keeps k = j and j + 16 in byte j (low, high); the tile keeps
                    // k = 2i and 2i + 1 in byte (i, lane) (low, high): bytes i < 8 from the low
                    // nibbles of ggml's bytes 2i and 2i + 1, bytes 8 + i from their high ones.
                    const uint8_t* qs = blk + (q41 ? 4 : 2);
                    uint8_t* o = tile + (k0 / 2) * kTileRows + lane;
                    for (int i = 0; i < 8; ++i) {
                        o[i * kTileRows] = uint8_t((qs[2 * i] & 15) | (qs[2 * i + 1] << 4));
                        o[(8 + i) * kTileRows] = uint8_t((qs[2 * i] >> 4) | (qs[2 * i + 1] & 0xF0));
                    }
                }
            }
        }
    });
    const int64_t r = bad_row.load();
    if (r != INT64_MAX) {  // name the first bad block of the first bad row
        int rt = type;
        std::vector<uint8_t> conv;
        const uint8_t* raw = row_data(r, &rt);
        const uint8_t* src = carrier_row(raw, rt, cols, conv);
        for (int64_t b = 0; b < nkb; ++b) {
            const uint8_t* blk = src + size_t(b) * bb;
            if (!finite_f16(load_u16(blk))) bad_scale(rt, r, b, "scale");
            if (q41 && !finite_f16(load_u16(blk + 2))) bad_scale(rt, r, b, "min");
        }
    }
    return p;
}

void dequantize_ggml(const uint8_t* data, int type, int64_t rows, int64_t cols, float* dst) {
    check_type(type);
    VT_CHECK_ARG(cols % ggml_block_weights(type) == 0, "dequantize_ggml: %lld columns are not whole %s blocks",
                 (long long)cols, ggml_type_name(type));
    const int carrier = ggml_carrier(type);
    const size_t bb = ggml_block_bytes(carrier);
    const size_t row_bytes = ggml_row_bytes(type, cols);
    const int64_t nkb = cols / kGgmlBlock;
    std::atomic<int64_t> bad_row{INT64_MAX};
    parallel_for(rows, 16, [&](int64_t r0, int64_t r1, int) {
        std::vector<uint8_t> conv;
        for (int64_t r = r0; r < r1; ++r) {
            const uint8_t* src = carrier_row(data + size_t(r) * row_bytes, type, cols, conv);
            for (int64_t b = 0; b < nkb; ++b) {
                const uint8_t* blk = src + size_t(b) * bb;
                float* o = dst + r * cols + b * kGgmlBlock;
                const uint16_t dh = load_u16(blk);
                const uint16_t mh = carrier == kGgmlQ4_1 ? load_u16(blk + 2) : 0;
                if (!finite_f16(dh) || !finite_f16(mh)) {
                    int64_t cur = bad_row.load();
                    while (r < cur && !bad_row.compare_exchange_weak(cur, r)) {
                    }
                    continue;
                }
                const float d = f16_to_f32(dh), m = f16_to_f32(mh);
                if (carrier == kGgmlQ8_0) {
                    for (int j = 0; j < kGgmlBlock; ++j) o[j] = float(int8_t(blk[2 + j])) * d;
                } else {
                    const uint8_t* qs = blk + (carrier == kGgmlQ4_1 ? 4 : 2);
                    const float off = carrier == kGgmlQ4_0 ? -8.f : 0.f;
                    for (int j = 0; j < 16; ++j) {
                        const float lo = float(qs[j] & 15) + off, hi = float(qs[j] >> 4) + off;
                        o[j] = carrier == kGgmlQ4_1 ? std::fma(lo, d, m) : lo * d;
                        o[j + 16] = carrier == kGgmlQ4_1 ? std::fma(hi, d, m) : hi * d;
                    }
                }
            }
        }
    });
    const int64_t r = bad_row.load();
    if (r != INT64_MAX) {
        std::vector<uint8_t> conv;
        const uint8_t* src = carrier_row(data + size_t(r) * row_bytes, type, cols, conv);
        for (int64_t b = 0; b < nkb; ++b) {
            const uint8_t* blk = src + size_t(b) * bb;
            if (!finite_f16(load_u16(blk))) bad_scale(type, r, b, "scale");
            if (carrier == kGgmlQ4_1 && !finite_f16(load_u16(blk + 2))) bad_scale(type, r, b, "min");
        }
    }
}

}  // namespace vt

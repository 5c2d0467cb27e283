// GGUF quantized blocks -> libvt's tiled formats, exactly (ggml_import.h, quant.h).
#include "ggml_import.h"

#include <atomic>
#include <cmath>
#include <cstring>

#include "convert.h"
#include "threadpool.h"

namespace vt {

size_t ggml_block_bytes(int type) {
    switch (type) {
        case kGgmlQ8_0: return 34;
        case kGgmlQ4_0: return 18;
        case kGgmlQ4_1: return 20;
        default: return 0;
    }
}

const char* ggml_type_name(int type) {
    switch (type) {
        case kGgmlQ8_0: return "Q8_0";
        case kGgmlQ4_0: return "Q4_0";
        case kGgmlQ4_1: return "Q4_1";
        default: return "?";
    }
}

bool ggml_packable(int type) {
    return type == kGgmlQ8_0 || type == kGgmlQ4_0 || type == kGgmlQ4_1;
}

vt_format ggml_native_format(int type) {
    switch (type) {
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
    VT_CHECK_ARG(ggml_block_bytes(type) != 0, "GGML block type %d is not Q8_0 (8), Q4_0 (2) or Q4_1 (3)", type);
}

[[noreturn]] void bad_scale(int type, int64_t row, int64_t block, const char* what) {
    fail(VT_STATUS_FORMAT_ERROR, "%s block %lld of row %lld has a non-finite %s (NaN or Inf): weights must be finite",
         ggml_type_name(type), (long long)block, (long long)row, what);
}

}  // namespace

std::unique_ptr<Packed> pack_ggml(const std::vector<GgmlRows>& parts, int type, int64_t cols) {
    check_type(type);
    int64_t out = 0;
    for (const GgmlRows& g : parts) out += g.rows;
    VT_CHECK_ARG(out > 0 && cols > 0 && cols % kGgmlBlock == 0, "pack_ggml: shape [%lld, %lld] is empty or has "
                 "columns that are not a multiple of 32", (long long)out, (long long)cols);
    VT_CHECK_ARG(out <= (INT64_C(1) << 31) && cols <= (INT64_C(1) << 31) && out * cols <= (INT64_C(1) << 40),
                 "pack_ggml: shape [%lld, %lld] is too large", (long long)out, (long long)cols);
    const size_t bb = ggml_block_bytes(type);
    const int64_t nkb = cols / kGgmlBlock;
    const size_t row_bytes = size_t(nkb) * bb;
    const bool q8 = type == kGgmlQ8_0, q41 = type == kGgmlQ4_1;

    auto p = std::make_unique<Packed>();
    p->format = ggml_native_format(type);
    p->out = out;
    p->in = cols;
    p->block = p->kb = kGgmlBlock;
    // The layout prepack (pack.cpp) uses: weights, then scales (then mins) at 64-byte offsets.
    const int64_t wbytes = q8 ? cols * kTileRows : cols / 2 * kTileRows;
    layout_dense_tiles(*p, wbytes, nkb, q41);

    // Row r -> its bytes.
    auto row_data = [&](int64_t r) -> const uint8_t* {
        for (const GgmlRows& g : parts) {
            if (r < g.rows) return g.data + size_t(r) * row_bytes;
            r -= g.rows;
        }
        return nullptr;
    };
    Packed& pr = *p;
    std::atomic<int64_t> bad_row{INT64_MAX};
    parallel_for(p->ntiles, 1, [&](int64_t t0, int64_t t1, int) {
        for (int64_t t = t0; t < t1; ++t) {
            uint8_t* tile = pr.tiles.data() + t * pr.tile_bytes;
            std::memset(tile, 0, size_t(pr.tile_bytes));  // padding rows and alignment gaps
            uint16_t* sc = reinterpret_cast<uint16_t*>(tile + pr.scale_off);
            uint16_t* mn = q41 ? reinterpret_cast<uint16_t*>(tile + pr.min_off) : nullptr;
            for (int lane = 0; lane < kTileRows; ++lane) {
                const int64_t r = t * kTileRows + lane;
                if (r >= out) break;
                const uint8_t* src = row_data(r);
                for (int64_t b = 0; b < nkb; ++b) {
                    const uint8_t* blk = src + size_t(b) * bb;
                    const uint16_t d = load_u16(blk);
                    const uint16_t m = q41 ? load_u16(blk + 2) : 0;
                    if (!finite_f16(d) || (q41 && !finite_f16(m))) {
                        int64_t cur = bad_row.load();
                        while (r < cur && !bad_row.compare_exchange_weak(cur, r)) {
                        }
                        continue;
                    }
                    sc[b * kTileRows + lane] = d;
                    if (q41) mn[b * kTileRows + lane] = m;
                    const int64_t k0 = b * kGgmlBlock;
                    if (q8) {  // weights [in][16] int8: byte k * 16 + lane
                        for (int j = 0; j < kGgmlBlock; ++j) tile[(k0 + j) * kTileRows + lane] = blk[2 + j];
                        continue;
                    }
                    // Nibbles: ggml keeps k = j and j + 16 in byte j; the tile keeps k = 2i and
                    // 2i + 1 in byte (i, lane) (low, high).
                    const uint8_t* qs = blk + (q41 ? 4 : 2);
                    uint8_t u[kGgmlBlock];
                    for (int j = 0; j < 16; ++j) {
                        u[j] = qs[j] & 15;
                        u[j + 16] = qs[j] >> 4;
                    }
                    for (int i = 0; i < kGgmlBlock / 2; ++i)
                        tile[(k0 / 2 + i) * kTileRows + lane] = uint8_t(u[2 * i] | (u[2 * i + 1] << 4));
                }
                pr.rowmul[t * kTileRows + lane] = 1.0f;
            }
        }
    });
    const int64_t r = bad_row.load();
    if (r != INT64_MAX) {  // name the first bad block of the first bad row
        const uint8_t* src = row_data(r);
        for (int64_t b = 0; b < nkb; ++b) {
            const uint8_t* blk = src + size_t(b) * bb;
            if (!finite_f16(load_u16(blk))) bad_scale(type, r, b, "scale");
            if (q41 && !finite_f16(load_u16(blk + 2))) bad_scale(type, r, b, "min");
        }
    }
    return p;
}

void dequantize_ggml(const uint8_t* data, int type, int64_t rows, int64_t cols, float* dst) {
    check_type(type);
    VT_CHECK_ARG(cols % kGgmlBlock == 0, "dequantize_ggml: %lld columns are not a multiple of 32", (long long)cols);
    const size_t bb = ggml_block_bytes(type);
    const int64_t nkb = cols / kGgmlBlock;
    std::atomic<int64_t> bad_row{INT64_MAX};
    parallel_for(rows, 16, [&](int64_t r0, int64_t r1, int) {
        for (int64_t r = r0; r < r1; ++r) {
            for (int64_t b = 0; b < nkb; ++b) {
                const uint8_t* blk = data + (size_t(r) * size_t(nkb) + size_t(b)) * bb;
                float* o = dst + r * cols + b * kGgmlBlock;
                const uint16_t dh = load_u16(blk);
                const uint16_t mh = type == kGgmlQ4_1 ? load_u16(blk + 2) : 0;
                if (!finite_f16(dh) || !finite_f16(mh)) {
                    int64_t cur = bad_row.load();
                    while (r < cur && !bad_row.compare_exchange_weak(cur, r)) {
                    }
                    continue;
                }
                const float d = f16_to_f32(dh), m = f16_to_f32(mh);
                if (type == kGgmlQ8_0) {
                    for (int j = 0; j < kGgmlBlock; ++j) o[j] = float(int8_t(blk[2 + j])) * d;
                } else {
                    const uint8_t* qs = blk + (type == kGgmlQ4_1 ? 4 : 2);
                    const float off = type == kGgmlQ4_0 ? -8.f : 0.f;
                    for (int j = 0; j < 16; ++j) {
                        const float lo = float(qs[j] & 15) + off, hi = float(qs[j] >> 4) + off;
                        o[j] = type == kGgmlQ4_1 ? std::fma(lo, d, m) : lo * d;
                        o[j + 16] = type == kGgmlQ4_1 ? std::fma(hi, d, m) : hi * d;
                    }
                }
            }
        }
    });
    const int64_t r = bad_row.load();
    if (r != INT64_MAX) {
        for (int64_t b = 0; b < nkb; ++b) {
            const uint8_t* blk = data + (size_t(r) * size_t(nkb) + size_t(b)) * bb;
            if (!finite_f16(load_u16(blk))) bad_scale(type, r, b, "scale");
            if (type == kGgmlQ4_1 && !finite_f16(load_u16(blk + 2))) bad_scale(type, r, b, "min");
        }
    }
}

}  // namespace vt

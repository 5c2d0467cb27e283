// Host-side repack of CPU row tiles into the device layout (see layout.h).
//
// Self-contained on purpose: only inline code from common.h / quant.h / device_math.h, so the
// host check (tests/test_cuda_host.py) can compile this file against the installed libvt,
// whose internal symbols are hidden.
#include "cuda/layout.h"

#include <algorithm>
#include <string>

#include "cuda/device_math.h"

namespace vt {
namespace cudak {
namespace {

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

[[noreturn]] void unsupported(const std::string& msg) { throw Error(VT_STATUS_UNSUPPORTED, msg); }

std::vector<RowSource> padded(std::vector<RowSource> rows) {
    rows.resize(size_t(round_up(int64_t(rows.size()), kRowPad)));
    return rows;
}

}  // namespace

LinearShape linear_shape(const vt_packed& p, int64_t n) {
    LinearShape s;
    switch (p.format) {
        case VT_FORMAT_INT8_BLOCKED: s.fmt = kDevInt8; break;
        case VT_FORMAT_FP8_BLOCKED: s.fmt = kDevFp8; break;
        case VT_FORMAT_FP8_CHANNEL: s.fmt = kDevFp8Channel; break;
        case VT_FORMAT_BF16: s.fmt = kDevBf16; break;
        case VT_FORMAT_INT4_BLOCKED: s.fmt = kDevInt4; break;
        case VT_FORMAT_INT4_MIN_BLOCKED: s.fmt = kDevInt4Min; break;
        case VT_FORMAT_MXFP4:
            unsupported("the CUDA backend has no MXFP4 kernels (format " + std::to_string(int(p.format)) +
                        "): MXFP4 weights run on the CPU");
        default:
            unsupported("the CUDA backend has no dense layout for the 2:4 sparse formats (format " +
                        std::to_string(int(p.format)) + "; they run on CUTLASS, sparse_shape)");
    }
    if (n <= 0 || n > (int64_t(1) << 30) || p.in <= 0 || p.in > (int64_t(1) << 30))
        unsupported("weight shape [" + std::to_string(n) + ", " + std::to_string(p.in) +
                    "] is outside what the CUDA kernels index with 32-bit rows and columns");
    const bool four = dev_fmt_4bit(s.fmt);
    const bool blocked = s.fmt == kDevInt8 || s.fmt == kDevFp8 || four;
    s.n = int32_t(n);
    s.k = int32_t(p.in);
    s.n_pad = int32_t(round_up(n, kRowPad));
    // 4-bit: whole blocks on the device (the CPU's last block may be short; the GEMV's halves
    // of 16 weights and the GEMM's K tile must each lie in one block).
    s.k_pad = int32_t(round_up(p.in, four ? std::max<int64_t>(kColPad, p.kb) : kColPad));
    s.esize = s.fmt == kDevBf16 ? 2 : 1;
    s.kb = blocked ? p.kb : s.k_pad;
    s.nkb = blocked ? s.k_pad / s.kb : 0;
    s.post = (s.fmt == kDevFp8 || s.fmt == kDevFp8Channel) ? kFp8Post : 1.0f;
    if (blocked && (s.kb % 16 != 0 || s.k_pad % s.kb != 0 || (four && (s.kb & (s.kb - 1)) != 0)))
        unsupported("block size " + std::to_string(s.kb) + " does not tile K = " + std::to_string(s.k_pad));
    return s;
}

std::vector<RowSource> rows_plain(const vt_packed& p) {
    std::vector<RowSource> rows(size_t(p.out));
    for (int64_t r = 0; r < p.out; ++r) rows[size_t(r)] = {&p, r};
    return padded(std::move(rows));
}

std::vector<RowSource> rows_qkv(const vt_packed& qkv, int64_t nh, int64_t nkv, int64_t hd, int64_t rot) {
    std::vector<RowSource> rows;
    rows.reserve(size_t(qkv.out));
    if (rot <= 0) rot = hd;
    const int64_t half = rot / 2;
    for (int64_t h = 0; h < nh + nkv; ++h) {  // Q heads, then K heads: RoPE pairs
        for (int64_t j = 0; j < half; ++j) {
            rows.push_back({&qkv, h * hd + j});
            rows.push_back({&qkv, h * hd + j + half});
        }
        for (int64_t d = rot; d < hd; ++d) rows.push_back({&qkv, h * hd + d});  // not rotated
    }
    for (int64_t r = (nh + nkv) * hd; r < (nh + 2 * nkv) * hd; ++r) rows.push_back({&qkv, r});  // V
    return padded(std::move(rows));
}

std::vector<RowSource> rows_interleave(const vt_packed& a, const vt_packed& b) {
    std::vector<RowSource> rows;
    rows.reserve(size_t(2 * a.out));
    for (int64_t r = 0; r < a.out; ++r) {
        rows.push_back({&a, r});
        rows.push_back({&b, r});
    }
    return padded(std::move(rows));
}

std::vector<float> row_values(const std::vector<RowSource>& rows, const std::vector<RowValues>& src) {
    std::vector<float> out(rows.size(), 0.0f);
    for (size_t r = 0; r < rows.size(); ++r) {
        if (!rows[r].p || rows[r].row < 0) continue;
        for (const RowValues& s : src)
            if (s.p == rows[r].p && s.v) out[r] = s.v[rows[r].row];
    }
    return out;
}

void repack_rows(const LinearShape& s, const RowSource* rows, int64_t r0, int64_t r1, uint8_t* w,
                 uint16_t* scales, uint16_t* mins, float* rowmul) {
    const int64_t rowbytes = s.row_bytes();
    const bool four = dev_fmt_4bit(s.fmt);
    // The byte of a zero weight (pairs of them for 4-bit): u = 8 (0x88) in INT4's device
    // coding; everything else (INT8's signed q included) codes zero as 0.
    const uint8_t zero = s.fmt == kDevInt4 ? 0x88 : 0;
    for (int64_t r = r0; r < r1; ++r) {
        const RowSource& src = rows[r];
        uint8_t* wr = w + r * rowbytes;
        uint16_t* sr = scales ? scales + r * s.nkb : nullptr;
        uint16_t* mr = mins ? mins + r * s.nkb : nullptr;
        if (!src.p || src.row < 0) {
            for (int64_t i = 0; i < rowbytes; ++i) wr[i] = zero;
            for (int64_t b = 0; sr && b < s.nkb; ++b) sr[b] = 0;
            for (int64_t b = 0; mr && b < s.nkb; ++b) mr[b] = 0;
            rowmul[r] = 0.0f;
            continue;
        }
        const vt_packed& p = *src.p;
        const int64_t t = src.row / kTileRows;
        const int lane = int(src.row % kTileRows);
        const uint8_t* tile = p.tiles.data() + t * p.tile_bytes;
        if (s.fmt == kDevBf16) {
            const uint16_t* tw = reinterpret_cast<const uint16_t*>(tile);
            uint16_t* dr = reinterpret_cast<uint16_t*>(wr);
            for (int64_t k = 0; k < s.k; ++k) dr[k] = tw[k * kTileRows + lane];
            for (int64_t k = s.k; k < s.k_pad; ++k) dr[k] = 0;
        } else if (four) {
            // Byte j of the row is byte j of the tile's lane as it is; an odd K's last high
            // nibble is set to the zero code here whatever the CPU tile holds there.
            const int64_t nb = (int64_t(s.k) + 1) / 2;
            for (int64_t j = 0; j < nb; ++j) wr[j] = tile[j * kTileRows + lane];
            if (s.k & 1) wr[nb - 1] = uint8_t((wr[nb - 1] & 0x0F) | (zero & 0xF0));
            for (int64_t j = nb; j < rowbytes; ++j) wr[j] = zero;
        } else {
            for (int64_t k = 0; k < s.k; ++k) wr[k] = tile[k * kTileRows + lane];
            for (int64_t k = s.k; k < s.k_pad; ++k) wr[k] = 0;
        }
        // Real blocks: whole ones, and for 4-bit a short last one.
        const int64_t nb = four ? (int64_t(s.k) + s.kb - 1) / s.kb : s.k / s.kb;
        if (sr) {
            const uint16_t* ts = reinterpret_cast<const uint16_t*>(tile + p.scale_off);
            for (int64_t b = 0; b < nb; ++b) sr[b] = ts[b * kTileRows + lane];
            for (int64_t b = nb; b < s.nkb; ++b) sr[b] = 0;
        }
        if (mr) {
            const uint16_t* tm = reinterpret_cast<const uint16_t*>(tile + p.min_off);
            for (int64_t b = 0; b < nb; ++b) mr[b] = tm[b * kTileRows + lane];
            for (int64_t b = nb; b < s.nkb; ++b) mr[b] = 0;
        }
        const float rm = p.rowmul[size_t(src.row)];
        // FP8 rowmul on the CPU carries a factor 256 for its f16 decoding trick; the device
        // decoding has its own constant (post), so the factor goes (exactly: a power of two).
        rowmul[r] = (s.fmt == kDevFp8 || s.fmt == kDevFp8Channel) ? rm / 256.0f : rm;
    }
}

float dev_weight(const LinearShape& s, const uint8_t* w, const uint16_t* scales, const uint16_t* mins,
                 const float* rowmul, int64_t r, int64_t k) {
    const uint8_t* wr = w + r * s.row_bytes();
    // One 32-bit word holding the code, decoded with the kernels' own helpers.
    switch (s.fmt) {
        case kDevBf16: {
            uint16_t b;
            std::memcpy(&b, wr + 2 * k, 2);
            return bf16_at<0>(uint32_t(b));
        }
        case kDevInt8: {
            const float q = int8x_at<0>(uint32_t(wr[k]));
            const float se = f16_bits_to_f32(scales[r * s.nkb + k / s.kb]) * rowmul[r];
            return q * se;
        }
        case kDevInt4: {
            const uint32_t b = wr[k / 2];
            const float q = (k & 1) ? nib_at<0, 8>(nib_hi(b)) : nib_at<0, 8>(nib_lo(b));
            const float se = f16_bits_to_f32(scales[r * s.nkb + k / s.kb]) * rowmul[r];
            return q * se;
        }
        case kDevInt4Min: {
            const uint32_t b = wr[k / 2];
            const float u = (k & 1) ? nib_at<0, 0>(nib_hi(b)) : nib_at<0, 0>(nib_lo(b));
            const int64_t bi = r * s.nkb + k / s.kb;
            return (u * f16_bits_to_f32(scales[bi]) + f16_bits_to_f32(mins[bi])) * rowmul[r];
        }
        case kDevFp8: {
            const float v = fp8s_at<0>(uint32_t(wr[k])) * kFp8Unscale;
            const float se = f16_bits_to_f32(scales[r * s.nkb + k / s.kb]) * rowmul[r];
            return v * se;
        }
        default:  // kDevFp8Channel
            return fp8s_at<0>(uint32_t(wr[k])) * kFp8Unscale * rowmul[r];
    }
}

SparseShape sparse_shape(const vt_packed& p) {
    if (p.dense())
        unsupported("sparse_shape: format " + std::to_string(int(p.format)) + " is not a 2:4 sparse format");
    if (p.out <= 0 || p.out > (int64_t(1) << 30) || p.in <= 0 || p.in > (int64_t(1) << 30) || p.in % 4 != 0)
        unsupported("2:4 sparse weight shape [" + std::to_string(p.out) + ", " + std::to_string(p.in) +
                    "] is outside what the CUDA kernels take (K a multiple of 4, 32-bit indices)");
    SparseShape s;
    s.n = int32_t(p.out);
    s.k = int32_t(p.in);
    s.n_pad = int32_t(round_up(p.out, kSparseRowPad));
    s.k_pad = int32_t(round_up(p.in, kSparseColPad));
    s.int4 = p.format == VT_FORMAT_INT4_SPARSE24;
    return s;
}

int64_t sparse_meta_index(const SparseShape& s, int64_t r, int64_t c) {
    // cutlass::reorder_meta (tools/util/host_reorder.h) for sizeof(ElementE) == 4: group 16,
    // interweave 2 ...
    int64_t row = r / 16 * 16 + (r % 8) * 2 + (r % 16) / 8;
    int64_t col = c;
    // ... then the 2×2 blocks from Z to N order ...
    if (row % 2 == 0 && col % 2 == 1) {
        ++row;
        --col;
    } else if (row % 2 == 1 && col % 2 == 0) {
        --row;
        ++col;
    }
    // ... stored as layout::ColumnMajorInterleaved<2>::packed({n_pad, k_pad/32}).
    return (col / 2) * (int64_t(s.n_pad) * 2) + row * 2 + col % 2;
}

void repack_sparse(const SparseShape& s, const vt_packed& p, int8_t* a, uint32_t* e, float* wscale) {
    const int64_t ahalf = s.k_pad / 2, ng = s.k / 4, ngp = s.k_pad / 4, mc = s.meta_cols();
    for (int64_t r = 0; r < s.n_pad; ++r) {
        int8_t* ar = a + r * ahalf;
        const bool real = r < s.n;
        for (int64_t c = 0; c < mc; ++c) {
            uint32_t word = 0;
            for (int j = 0; j < 8; ++j) {
                const int64_t g = c * 8 + j;
                const uint32_t nib = (real && g < ng) ? uint32_t(p.meta[size_t(r * ng + g)] & 0xF) : 0x4u;
                word |= nib << (4 * j);
            }
            e[sparse_meta_index(s, r, c)] = word;
        }
        for (int64_t g = 0; g < ngp; ++g) {
            int v0 = 0, v1 = 0;
            if (real && g < ng) {
                if (s.int4) {
                    const uint8_t b = uint8_t(p.q[size_t(r * (s.k / 4) + g)]);
                    v0 = int(b & 0xF);
                    v1 = int(b >> 4);
                    v0 = v0 >= 8 ? v0 - 16 : v0;
                    v1 = v1 >= 8 ? v1 - 16 : v1;
                } else {
                    v0 = p.q[size_t(r * (s.k / 2) + 2 * g)];
                    v1 = p.q[size_t(r * (s.k / 2) + 2 * g + 1)];
                }
            }
            ar[2 * g] = int8_t(v0);
            ar[2 * g + 1] = int8_t(v1);
        }
        wscale[r] = real ? p.scales[size_t(r)] : 0.0f;
    }
}

float sparse_dev_weight(const SparseShape& s, const int8_t* a, const uint32_t* e, const float* wscale, int64_t r,
                        int64_t k) {
    const int64_t g = k / 4;
    const uint32_t word = e[sparse_meta_index(s, r, g / 8)];
    const uint32_t nib = (word >> (4 * (g % 8))) & 0xF;
    const int64_t i0 = nib & 3, i1 = nib >> 2;
    const int8_t* ar = a + r * (s.k_pad / 2);
    if (k % 4 == i0) return float(ar[2 * g]) * wscale[r];
    if (k % 4 == i1) return float(ar[2 * g + 1]) * wscale[r];
    return 0.0f;
}

}  // namespace cudak
}  // namespace vt

// Loading a Llama checkpoint: find the files, read the config, check every tensor's name,
// dtype and shape (collecting all problems into one message), then convert and prepack.
#include "model.h"
#include "packed_cache.h"

#include <algorithm>
#include <functional>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "convert.h"
#include "family.h"
#include "cpu/kernels.h"
#include "ggml_import.h"
#include "ops/rope.h"
#include "safetensors.h"
#include "threadpool.h"

namespace vt {

namespace {

// ---- Options ----------------------------------------------------------------------------

void check_options(const vt_model_options& o) {
    switch (o.weight_format) {
        case VT_FORMAT_AUTO:
        case VT_FORMAT_INT8_BLOCKED:
        case VT_FORMAT_FP8_BLOCKED:
        case VT_FORMAT_FP8_CHANNEL:
        case VT_FORMAT_BF16:
        case VT_FORMAT_INT4_BLOCKED:
        case VT_FORMAT_INT4_MIN_BLOCKED:
        case VT_FORMAT_MXFP4: break;
        default:
            fail(VT_STATUS_INVALID_ARGUMENT,
                 "weight_format %d is not a model weight format (AUTO %d, INT8_BLOCKED %d, FP8_BLOCKED %d, "
                 "FP8_CHANNEL %d, BF16 %d, INT4_BLOCKED %d, INT4_MIN_BLOCKED %d, MXFP4 %d)",
                 o.weight_format, VT_FORMAT_AUTO, VT_FORMAT_INT8_BLOCKED, VT_FORMAT_FP8_BLOCKED, VT_FORMAT_FP8_CHANNEL, VT_FORMAT_BF16,
                 VT_FORMAT_INT4_BLOCKED, VT_FORMAT_INT4_MIN_BLOCKED, VT_FORMAT_MXFP4);
    }
    VT_CHECK_ARG(o.weight_format != VT_FORMAT_MXFP4 || o.block_size == 0 || o.block_size == 32,
                 "block_size %d does not fit weight_format MXFP4 (blocks of 32 weights: 0 or 32)", o.block_size);
    VT_CHECK_ARG(o.block_size == 0 || o.block_size == 16 || o.block_size == 32 || o.block_size == 64 ||
                     o.block_size == 128,
                 "block_size %d is not supported (0 = the format's default, 16, 32, 64 or 128)", o.block_size);
    VT_CHECK_ARG(o.num_layers >= 0, "num_layers %d is negative (0 = all)", o.num_layers);
    VT_CHECK_ARG(o.num_extra_eos >= 0 && o.num_extra_eos <= VT_MAX_EOS, "num_extra_eos %d is outside [0, %d]",
                 o.num_extra_eos, VT_MAX_EOS);
    VT_CHECK_ARG(o.num_extra_eos == 0 || o.extra_eos_ids != nullptr, "extra_eos_ids is NULL but num_extra_eos is %d",
                 o.num_extra_eos);
    for (int32_t i = 0; i < o.num_extra_eos; ++i)
        VT_CHECK_ARG(o.extra_eos_ids[i] >= 0, "extra_eos_ids[%d] = %d is not a token id", i, o.extra_eos_ids[i]);
    VT_CHECK_ARG(o.max_seq_len >= 0 && o.max_seq_len <= (int64_t(1) << 24),
                 "max_seq_len %lld is out of range (0 = the config's max_position_embeddings, at most %lld)",
                 (long long)o.max_seq_len, (long long)(int64_t(1) << 24));
    VT_CHECK_ARG(o.device == VT_DEVICE_AUTO || o.device == VT_DEVICE_CPU || o.device == VT_DEVICE_CUDA,
                 "device %d is not a vt_device_kind", o.device);
    VT_CHECK_ARG(o.device_index >= 0, "device_index %d is negative", o.device_index);
    VT_CHECK_ARG(o.kv_cache_dtype == VT_DTYPE_F16 || o.kv_cache_dtype == VT_DTYPE_F32 ||
                     o.kv_cache_dtype == VT_DTYPE_I8,
                 "kv_cache_dtype %d is not a KV cache type (F16 %d, F32 %d, I8 %d)", o.kv_cache_dtype, VT_DTYPE_F16,
                 VT_DTYPE_F32, VT_DTYPE_I8);
    if (o.device == VT_DEVICE_CUDA) {
        // Before reading gigabytes: say now why the device cannot be used.
        std::string why;
        if (!cuda_device_usable(o.device_index, &why))
            fail(VT_STATUS_BACKEND_UNAVAILABLE, "device cuda:%d was requested, but %s", o.device_index, why.c_str());
    }
}

// ---- Loading helpers --------------------------------------------------------------------

// A q or k bias / norm of n floats in heads of hd, the first `rotary` of each in pair order
// (RoPE over pairs (2i, 2i + 1)), put in rotate-half order as the projection's rows are.
void unpermute_floats(float* v, int64_t n, int64_t hd, int64_t rotary) {
    std::vector<float> src(v, v + n);
    unpermute_units(reinterpret_cast<const uint8_t*>(src.data()), reinterpret_cast<uint8_t*>(v), n, sizeof(float),
                    n / hd, rotary);
}

void copy_parallel(void* dst, const void* src, size_t n) {
    const int64_t chunk = int64_t(1) << 20;
    const int64_t nchunks = int64_t((n + size_t(chunk) - 1) / size_t(chunk));
    auto* d = static_cast<uint8_t*>(dst);
    auto* s = static_cast<const uint8_t*>(src);
    parallel_for(nchunks, 1, [&](int64_t b, int64_t e, int) {
        const size_t lo = size_t(b * chunk), hi = std::min(n, size_t(e * chunk));
        std::memcpy(d + lo, s + lo, hi - lo);
    });
}

// Index of the first NaN or Inf among the n values at `data` (F32, F16 or BF16, any
// alignment), or -1. Weights that prepack does not see (the embedding table, the norms) are
// checked with this at load: a non-finite weight would only show up later as NaN logits.
int64_t first_non_finite_raw(const void* data, vt_dtype dtype, int64_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    auto bad = [&](int64_t i) -> bool {
        if (dtype == VT_DTYPE_F32) {
            uint32_t u;
            std::memcpy(&u, p + 4 * i, 4);
            return (u & 0x7F800000u) == 0x7F800000u;
        }
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        return dtype == VT_DTYPE_BF16 ? (h & 0x7F80u) == 0x7F80u : (h & 0x7C00u) == 0x7C00u;
    };
    const int64_t chunk = int64_t(1) << 16;
    std::atomic<int64_t> first{INT64_MAX};
    parallel_for((n + chunk - 1) / chunk, 1, [&](int64_t b, int64_t e, int) {
        for (int64_t c = b; c < e; ++c) {
            const int64_t lo = c * chunk, hi = std::min(n, lo + chunk);
            bool any = false;
            for (int64_t i = lo; i < hi; ++i) any |= bad(i);
            if (!any) continue;
            for (int64_t i = lo; i < hi; ++i) {
                if (!bad(i)) continue;
                int64_t cur = first.load();
                while (i < cur && !first.compare_exchange_weak(cur, i)) {
                }
                break;
            }
        }
    });
    const int64_t f = first.load();
    return f == INT64_MAX ? -1 : f;
}

class Loader {
public:
    Loader(const Checkpoint& ck, const vt_model_options& opt) : ck_(ck), opt_(opt) {}

    void set_total(int64_t total) { total_ = total; }

    // Reports `bytes` more processed; cancels when the callback asks.
    void progress(int64_t bytes) {
        ck_.check_unchanged(false);  // what was just read was not zeros from a truncated file
        done_ += bytes;
        if (opt_.progress && opt_.progress(opt_.progress_user, done_, total_) != 0)
            fail(VT_STATUS_CANCELLED, "model load cancelled by the progress callback");
    }

    const TensorView& tensor(const std::string& name) const { return *ck_.find(name); }

    // Rows in llama.cpp's Q/K order (a references file's pyvt_permuted_heads) are put in order
    // by pack_concat, the way q_proj and k_proj are packed; anything else refuses them.
    void not_permuted(const TensorView& t) const {
        if (t.permuted_heads)
            fail(VT_STATUS_FORMAT_ERROR, "tensor %s in %s: pyvt_permuted_heads is for a Q or K projection only",
                 t.name.c_str(), ck_.file_of(t).c_str());
        if (t.qkv_heads)
            fail(VT_STATUS_FORMAT_ERROR, "tensor %s in %s: pyvt_qkv_heads is for GPT-NeoX's and Falcon's "
                 "query_key_value and GPTBigCode's multi-head c_attn only", t.name.c_str(), ck_.file_of(t).c_str());
        if (t.out_in)
            fail(VT_STATUS_FORMAT_ERROR, "tensor %s in %s: pyvt_out_in is for GPT-2's Conv1D weights only",
                 t.name.c_str(), ck_.file_of(t).c_str());
    }

    // Tensor data with its dtype's alignment (a copy when the file's offset is unaligned).
    const void* aligned_data(const TensorView& t, AlignedVec<uint8_t>& tmp) const {
        not_permuted(t);
        const size_t align = t.dtype == VT_DTYPE_F32 ? 4 : 2;
        if (reinterpret_cast<uintptr_t>(t.data) % align == 0) return t.data;
        tmp.resize(t.nbytes);
        copy_parallel(tmp.data(), t.data, t.nbytes);
        return tmp.data();
    }

    // A Conv1D weight (GPT-2: [in, out], x · W) as the [out, in] a linear packs: a transposed
    // copy in tmp (float dtypes; GGUF blocks are rows of the other orientation already).
    TensorView transposed(const TensorView& t, AlignedVec<uint8_t>& tmp) const {
        not_permuted(t);
        if (!t.float_dtype || t.shape.size() != 2)
            fail(VT_STATUS_UNSUPPORTED, "tensor %s in %s: a Conv1D weight must be a 2-D F32, F16 or BF16 tensor to be "
                 "transposed, not %s %s", t.name.c_str(), ck_.file_of(t).c_str(), t.dtype_name.c_str(),
                 t.shape_str().c_str());
        const int64_t rows = t.shape[0], cols = t.shape[1];
        const size_t es = t.dtype == VT_DTYPE_F32 ? 4 : 2;
        tmp.resize(t.nbytes);
        uint8_t* dst = tmp.data();
        const uint8_t* src = t.data;
        parallel_for(cols, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, rows)), [&](int64_t b, int64_t e, int) {
            for (int64_t c = b; c < e; ++c)
                for (int64_t r = 0; r < rows; ++r)
                    std::memcpy(dst + size_t(c * rows + r) * es, src + size_t(r * cols + c) * es, es);
        });
        TensorView v = t;
        v.data = tmp.data();
        v.shape = {cols, rows};
        return v;
    }

    AlignedVec<float> to_f32_vec(const TensorView& t) const {
        AlignedVec<uint8_t> tmp;
        const void* src = aligned_data(t, tmp);
        AlignedVec<float> out(size_t(t.numel()));
        to_f32(src, t.dtype, out.data(), out.size());
        check_finite(t, out.data(), VT_DTYPE_F32);
        return out;
    }

    // FORMAT_ERROR naming the tensor and the first NaN/Inf in `data` (t's values, as dtype).
    void check_finite(const TensorView& t, const void* data, vt_dtype dtype) const {
        const int64_t i = first_non_finite_raw(data, dtype, t.numel());
        if (i < 0) return;
        const int64_t cols = t.shape.size() == 2 ? t.shape[1] : 0;
        const std::string where = cols ? format("row %lld, column %lld", (long long)(i / cols), (long long)(i % cols))
                                        : format("index %lld", (long long)i);
        fail(VT_STATUS_FORMAT_ERROR, "tensor %s in %s has a non-finite value (NaN or Inf) at %s: weights must be finite",
             t.name.c_str(), ck_.file_of(t).c_str(), where.c_str());
    }

    std::unique_ptr<Packed> pack(const std::string& what, const void* w, vt_dtype dtype, int64_t rows, int64_t cols,
                                 vt_format format, int32_t block) const {
        return wrap(what, [&] { return prepack(w, dtype, rows, cols, format, block); });
    }

    // Whether the linear stacked from `ts` is packed from its GGUF blocks as they are
    // (ggml_import.h): weight_format AUTO, every part of a block type libvt represents, all of
    // one carrier (Q4_K beside Q4_1, Q6_K beside Q8_0: the blocks a copied folder held).
    bool native(const std::vector<const TensorView*>& ts) const {
        if (opt_.weight_format != VT_FORMAT_AUTO) return false;
        for (const TensorView* t : ts)
            if (t->ggml < 0 || !ggml_packable(t->ggml) || ggml_carrier(t->ggml) != ggml_carrier(ts[0]->ggml))
                return false;
        return true;
    }
    // The format and K-block the linear stacked from `ts` gets: its blocks' own where native();
    // with an explicit weight format, that format (`fmt`); under AUTO otherwise the widest of
    // its parts' formats, a part of a block type libvt represents counting as that type's
    // format and any other part as `fmt`, the model's: a layer's v in Q8_0 blocks (a GGUF's
    // Q6_K, written as Q8_0 by pyvt) beside q and k in Q4_1 blocks makes the three int8 (block
    // 32, as the blocks were), never int4-min, which would drop the bits the file gave v.
    vt_format format_of(const std::vector<const TensorView*>& ts, vt_format fmt) const {
        if (native(ts)) return ggml_native_format(ts[0]->ggml);
        if (opt_.weight_format != VT_FORMAT_AUTO) return fmt;
        vt_format f = fmt;
        for (const TensorView* t : ts)
            if (t->ggml >= 0 && ggml_packable(t->ggml) && format_rank(ggml_native_format(t->ggml)) > format_rank(f))
                f = ggml_native_format(t->ggml);
        return f;
    }
    int32_t block_of(const std::vector<const TensorView*>& ts, vt_format fmt, int32_t block) const {
        return native(ts) || format_of(ts, fmt) != fmt ? kGgmlBlock : block;
    }
    // Whether `t` alone is packed from its GGUF blocks as a part of a linear of format `f` and
    // K-block `block` (one side of a gate|up pair whose other side is another block type).
    bool keeps(const TensorView& t, vt_format f, int32_t block) const {
        return native({&t}) && ggml_native_format(t.ggml) == f && block == kGgmlBlock;
    }
    // How many bits a weight keeps under the formats GGUF blocks load as: int8 over int4-min
    // (whose values include int4's) over int4.
    static int format_rank(vt_format f) {
        return f == VT_FORMAT_INT8_BLOCKED ? 3 : f == VT_FORMAT_INT4_MIN_BLOCKED ? 2 : f == VT_FORMAT_INT4_BLOCKED ? 1 : 0;
    }

    std::unique_ptr<Packed> pack_tensor(const TensorView& t, vt_format format, int32_t block) const {
        return pack_concat({&t}, format, block);
    }

    // Rows [row0, row0 + rows) of a 2-D tensor, prepacked (one half of a fused gate|up).
    std::unique_ptr<Packed> pack_rows(const TensorView& t, int64_t row0, int64_t rows, vt_format fmt,
                                      int32_t block) const {
        not_permuted(t);
        const std::string what = format("tensor %s rows %lld..%lld in %s", t.name.c_str(), (long long)row0,
                                        (long long)(row0 + rows - 1), ck_.file_of(t).c_str());
        if (t.ggml >= 0) {
            const size_t row_bytes = ggml_row_bytes(t.ggml, t.shape[1]);
            const uint8_t* src = t.data + size_t(row0) * row_bytes;
            if (native({&t})) return wrap(what, [&] { return pack_ggml({{src, rows}}, t.ggml, t.shape[1]); });
            AlignedVec<float> buf(size_t(rows * t.shape[1]));
            wrap(what, [&] {
                dequantize_ggml(src, t.ggml, rows, t.shape[1], buf.data());
                return nullptr;
            });
            return pack(what, buf.data(), VT_DTYPE_F32, rows, t.shape[1], fmt, block);
        }
        AlignedVec<uint8_t> tmp;
        const auto* src = static_cast<const uint8_t*>(aligned_data(t, tmp));
        const size_t row_bytes = size_t(t.shape[1]) * vt_dtype_size(t.dtype);
        return pack(what, src + size_t(row0) * row_bytes, t.dtype, rows, t.shape[1], fmt, block);
    }

    // Row-concatenation of 2-D tensors with the same column count, prepacked as one matrix:
    // from their GGUF blocks when native(), else from their values (GGUF blocks dequantized
    // exactly) in `format`.
    // keep_blocks false: GGML blocks are dequantized and packed as `format` even where native(ts)
    // (a tensor whose partner has another block type: one format for the pair, format_of's).
    std::unique_ptr<Packed> pack_concat(const std::vector<const TensorView*>& ts_in, vt_format format,
                                        int32_t block, bool keep_blocks = true) const {
        // Q / K rows a references file leaves in llama.cpp's order: put in order first, one
        // tensor at a time (the copies live until this linear is packed).
        std::vector<const TensorView*> ts = ts_in;
        std::vector<TensorView> plain;
        std::vector<std::unique_ptr<uint8_t, decltype(&std::free)>> plain_bytes;  // (uninitialized: all overwritten)
        plain.reserve(ts.size());
        plain_bytes.reserve(ts.size());
        for (auto& t : ts) {
            if (!t->permuted_heads) continue;
            plain_bytes.emplace_back(static_cast<uint8_t*>(alloc_buffer(t->nbytes)), &std::free);
            if (!plain_bytes.back()) throw std::bad_alloc();
            unpermute_rows(*t, plain_bytes.back().get());
            plain.push_back(*t);
            plain.back().data = plain_bytes.back().get();
            plain.back().permuted_heads = 0;
            t = &plain.back();
        }
        const int64_t cols = ts[0]->shape[1];
        int64_t rows = 0;
        bool same_dtype = true, any_ggml = false;
        for (const TensorView* t : ts) {
            rows += t->shape[0];
            same_dtype = same_dtype && t->dtype == ts[0]->dtype && t->ggml == ts[0]->ggml;
            any_ggml = any_ggml || t->ggml >= 0;
        }
        std::string what = ts.size() == 1 ? "tensor " : "tensors ";
        for (size_t i = 0; i < ts.size(); ++i) what += (i ? " | " : "") + ts[i]->name;
        what += " in " + ck_.file_of(*ts[0]);
        if (keep_blocks && native(ts)) {
            std::vector<GgmlRows> parts;
            for (const TensorView* t : ts) parts.push_back({t->data, t->shape[0], t->ggml});
            return wrap(what, [&] { return pack_ggml(parts, ts[0]->ggml, cols); });
        }
        if (ts.size() == 1 && !any_ggml) {
            AlignedVec<uint8_t> tmp;
            return pack(what, aligned_data(*ts[0], tmp), ts[0]->dtype, rows, cols, format, block);
        }
        if (same_dtype && !any_ggml) {
            const size_t esize = vt_dtype_size(ts[0]->dtype);
            // Uninitialized (fully overwritten below), and not alloc_weights: a temporary among
            // the packed weights would leave a hole in their arena for the model's lifetime.
            // alloc_buffer puts one of 4 MB or more in a run of its own, as alloc_weights did
            // before the arena: from glibc's heap, the TinyLlama shape's load peaked 50-85 MB higher.
            std::unique_ptr<uint8_t, decltype(&std::free)> buf(
                static_cast<uint8_t*>(alloc_buffer(size_t(rows * cols) * esize)), &std::free);
            if (!buf) throw std::bad_alloc();
            size_t off = 0;
            for (const TensorView* t : ts) {
                copy_parallel(buf.get() + off, t->data, t->nbytes);
                off += t->nbytes;
            }
            return pack(what, buf.get(), ts[0]->dtype, rows, cols, format, block);
        }
        AlignedVec<float> buf(size_t(rows * cols));
        size_t off = 0;
        for (const TensorView* t : ts) {
            if (t->ggml >= 0) {
                wrap("tensor " + t->name + " in " + ck_.file_of(*t), [&] {
                    dequantize_ggml(t->data, t->ggml, t->shape[0], cols, buf.data() + off);
                    return nullptr;
                });
            } else {
                AlignedVec<uint8_t> tmp;
                const void* src = aligned_data(*t, tmp);
                to_f32(src, t->dtype, buf.data() + off, size_t(t->numel()));
            }
            off += size_t(t->numel());
        }
        return pack(what, buf.data(), VT_DTYPE_F32, rows, cols, format, block);
    }

    // Expert e of a gpt-oss expert tensor as the linear [rows, cols] the pass multiplies by,
    // prepacked: from MXFP4 (t the blocks [E, rows, cols/32, 16], scales [E, rows, cols/32]:
    // each byte two E2M1 values, low nibble first, times 2^(scale - 127) — exactly
    // representable in float32), or from t [E, cols, rows] as transformers holds it (x · W),
    // transposed. `src` is t's data with its dtype's alignment (aligned_data).
    // MXFP4 into INT8_BLOCKED-32 (the default format) is exact: each block becomes the int8
    // block of its doubled E2M1 codes (-12..12) with the f16 scale 2^(e - 128), packed as GGUF
    // Q8_0 blocks are (pack_ggml), when every scale of the expert is one an f16 holds
    // (2^-24 .. 2^15); into MXFP4 the codes are copied as they are (pack_mxfp4_blocks) when each
    // row's scales span at most 38 binades; other formats (and scales) pack the decoded values.
    std::unique_ptr<Packed> pack_oss_expert(const TensorView& t, const void* src, const TensorView* scales, int64_t e,
                                            int64_t rows, int64_t cols, vt_format fmt, int32_t block) const {
        const std::string what = format("tensor %s expert %lld in %s", t.name.c_str(), (long long)e, ck_.file_of(t).c_str());
        if (scales) {
            const int64_t nb = cols / 32;
            const uint8_t* q = static_cast<const uint8_t*>(src) + size_t(e * rows * nb * 16);
            const uint8_t* sc = scales->data + size_t(e * rows * nb);
            bool f16_scales = true;
            for (int64_t i = 0; i < rows * nb; ++i) {
                if (sc[i] == 0xFF)  // e8m0's NaN
                    fail(VT_STATUS_FORMAT_ERROR, "%s: tensor %s expert %lld row %lld block %lld is NaN (scale 0xFF): "
                         "weights must be finite", ck_.file_of(*scales).c_str(), scales->name.c_str(), (long long)e,
                         (long long)(i / nb), (long long)(i % nb));
                f16_scales = f16_scales && sc[i] >= 128 - 24 && sc[i] <= 128 + 15;
            }
            if (fmt == VT_FORMAT_MXFP4) {  // the file's codes as they are, when its scales fit
                auto p = wrap(what, [&] { return pack_mxfp4_blocks(q, sc, rows, cols); });
                if (p) return p;
            }
            if (f16_scales && fmt == ggml_native_format(kGgmlQ8_0) && block == kGgmlBlock && ggml_packable(kGgmlQ8_0)) {
                std::vector<uint8_t> q8(size_t(rows * nb) * 34);
                for (int64_t i = 0; i < rows * nb; ++i) {
                    uint8_t* b = q8.data() + i * 34;
                    const uint16_t d = f16_pow2(int(sc[i]) - 128);  // d = 2^(e - 128), normal or subnormal
                    b[0] = uint8_t(d & 0xFF);
                    b[1] = uint8_t(d >> 8);
                    for (int j = 0; j < 16; ++j) {
                        b[2 + 2 * j] = uint8_t(cpu::kMxfp4Values[q[i * 16 + j] & 15]);  // doubled E2M1
                        b[2 + 2 * j + 1] = uint8_t(cpu::kMxfp4Values[q[i * 16 + j] >> 4]);
                    }
                }
                return wrap(what, [&] { return pack_ggml({{q8.data(), rows}}, kGgmlQ8_0, cols); });
            }
        }
        AlignedVec<float> buf(size_t(rows * cols));
        if (scales) {
            static const float kE2M1[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                            -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
            const int64_t nb = cols / 32;
            const uint8_t* q = static_cast<const uint8_t*>(src) + size_t(e * rows * nb * 16);
            const uint8_t* sc = scales->data + size_t(e * rows * nb);
            for (int64_t i = 0; i < rows * nb; ++i) {
                const float s = std::ldexp(1.0f, int(sc[i]) - 127);
                float* o = buf.data() + i * 32;
                for (int j = 0; j < 16; ++j) {
                    o[2 * j] = kE2M1[q[i * 16 + j] & 15] * s;
                    o[2 * j + 1] = kE2M1[q[i * 16 + j] >> 4] * s;
                }
            }
        } else {
            AlignedVec<float> x(size_t(rows * cols));  // [cols, rows]
            const size_t es = vt_dtype_size(t.dtype);
            to_f32(static_cast<const uint8_t*>(src) + size_t(e * rows * cols) * es, t.dtype, x.data(), x.size());
            const int64_t bad = first_non_finite_raw(x.data(), VT_DTYPE_F32, rows * cols);
            if (bad >= 0)
                fail(VT_STATUS_FORMAT_ERROR, "tensor %s in %s has a non-finite value (NaN or Inf) in expert %lld: weights "
                     "must be finite", t.name.c_str(), ck_.file_of(t).c_str(), (long long)e);
            for (int64_t r0 = 0; r0 < rows; r0 += 64)  // transposed in tiles of 64 x 64
                for (int64_t c0 = 0; c0 < cols; c0 += 64)
                    for (int64_t r = r0; r < std::min(rows, r0 + 64); ++r)
                        for (int64_t c = c0; c < std::min(cols, c0 + 64); ++c) buf[size_t(r * cols + c)] = x[size_t(c * rows + r)];
        }
        return pack(what, buf.data(), VT_DTYPE_F32, rows, cols, fmt, block);
    }

    // f(), its vt::Error prefixed with `what` (the tensor and file).
    std::unique_ptr<Packed> wrap(const std::string& what, const std::function<std::unique_ptr<Packed>()>& f) const {
        try {
            return f();
        } catch (const Error& e) {
            throw Error(e.status(), what + ": " + e.what());
        }
    }

private:
    const Checkpoint& ck_;
    const vt_model_options& opt_;
    int64_t done_ = 0, total_ = 0;
};

}  // namespace

}  // namespace vt

// ---- vt_model ---------------------------------------------------------------------------

void vt::ModelWeights::embed_row(int32_t token, float* out) const {
    if (embed_rows) {
        vt::unpack_rows(*embed_rows, token, 1, out);
        return;
    }
    const int64_t H = cfg.hidden_size;
    const size_t row = size_t(token) * size_t(H);
    switch (embed_dtype) {
        case VT_DTYPE_F32:
            std::memcpy(out, reinterpret_cast<const float*>(embed.data()) + row, size_t(H) * sizeof(float));
            break;
        case VT_DTYPE_BF16: {
            const uint16_t* src = reinterpret_cast<const uint16_t*>(embed.data()) + row;
            for (int64_t i = 0; i < H; ++i) {
                uint32_t bits = uint32_t(src[i]) << 16;
                std::memcpy(out + i, &bits, 4);
            }
            break;
        }
        default: {
            const uint16_t* src = reinterpret_cast<const uint16_t*>(embed.data()) + row;
            for (int64_t i = 0; i < H; ++i) out[i] = vt::f16_to_f32(src[i]);
        }
    }
}

namespace vt {

// A layer's experts and its shared expert (those that exist).
static std::vector<LayerWeights::Expert*> expert_list(LayerWeights& w) {
    std::vector<LayerWeights::Expert*> out;
    for (auto& e : w.experts) out.push_back(&e);
    if (w.shared.gate) out.push_back(&w.shared);
    return out;
}

// Frees the host's packed linears of a model whose sessions run on CUDA; their bytes.
static int64_t release_host_linears(vt_model& m) {
    int64_t freed = 0;
    auto drop = [&](std::unique_ptr<Packed>& p) {
        if (!p) return;
        freed += p->nbytes();
        p.reset();
    };
    for (LayerWeights& w : m.layers) {
        drop(w.qkv);
        drop(w.q_b);
        for (auto* v : {&w.uk, &w.uv})
            for (auto& x : *v) drop(x);
        drop(w.o);
        drop(w.gate);
        drop(w.up);
        drop(w.down);
        for (LayerWeights::Expert* e : expert_list(w)) {
            drop(e->gate);
            drop(e->up);
            drop(e->down);
        }
    }
    drop(m.lm_head);
    return freed;
}

std::unique_ptr<vt_model> load_model(const char* path, const vt_model_options& opt) {
    check_options(opt);
    std::unique_ptr<Checkpoint> ck = Checkpoint::open(path);
    int64_t file_layers = 0;
    LlamaConfig cfg = resolve_config(*ck, &file_layers);
    // The caller's tokenizer EOS (one not read from <dir>/tokenizer.json): the one EOS list is
    // complete from here on, for vt_generate and pyvt alike.
    for (int32_t i = 0; i < opt.num_extra_eos; ++i)
        if (std::find(cfg.eos_token_ids.begin(), cfg.eos_token_ids.end(), opt.extra_eos_ids[i]) == cfg.eos_token_ids.end())
            cfg.eos_token_ids.push_back(opt.extra_eos_ids[i]);
    // vt_model_info carries VT_MAX_EOS ids: more would make the C and Python stop sets differ.
    if (cfg.eos_token_ids.size() > VT_MAX_EOS)
        fail(VT_STATUS_UNSUPPORTED, "%s: the config's EOS ids and extra_eos_ids make %zu distinct EOS ids (libvt stops "
             "on at most %d)", path, cfg.eos_token_ids.size(), VT_MAX_EOS);

    auto m = std::make_unique<vt_model>();
    if (opt.num_layers > file_layers)
        fail(VT_STATUS_INVALID_ARGUMENT, "num_layers %d is more than the %lld blocks of the checkpoint", opt.num_layers,
             (long long)file_layers);
    m->file_layers = file_layers;
    cfg.num_layers = opt.num_layers > 0 ? opt.num_layers : file_layers;
    m->format = vt_format(opt.weight_format);
    // The family resolve_config found (family.h): its tensor names.
    const ModelFamily& F = *cfg.family;
    if (m->format == VT_FORMAT_AUTO) {  // layer 0's q_proj decides what the model reports
        // (LFM2: the first layer that attends)
        const TensorView* q0 = ck->find(layer_tensor_name(F, cfg.first_attention_layer(), T_Q));
        m->format = q0 && q0->ggml >= 0 && ggml_packable(q0->ggml) ? ggml_native_format(q0->ggml)
                                                                   : VT_FORMAT_INT8_BLOCKED;
    }
    const bool blocked = m->format == VT_FORMAT_INT8_BLOCKED || m->format == VT_FORMAT_FP8_BLOCKED ||
                         m->format == VT_FORMAT_INT4_BLOCKED || m->format == VT_FORMAT_INT4_MIN_BLOCKED ||
                         m->format == VT_FORMAT_MXFP4;
    m->block_size = blocked ? (opt.block_size ? opt.block_size : default_block_size(m->format)) : 0;
    m->device = VT_DEVICE_CPU;
    m->kv_cache_dtype = opt.kv_cache_dtype;
    m->max_seq_len = opt.max_seq_len > 0 ? opt.max_seq_len : cfg.max_position_embeddings;
    // Dynamic NTK scales RoPE for sequences past max_position_embeddings: by default the context
    // is factor times that (transformers: "a factor of x will enable the model to handle
    // sequences of length x * original maximum pre-trained length"; it sets no limit itself).
    if (opt.max_seq_len <= 0 && cfg.rope.kind == RopeScaling::DYNAMIC && !F.pos_embed && !F.alibi)
        m->max_seq_len = std::max<int64_t>(cfg.max_position_embeddings,
                                           int64_t(std::min(std::floor(cfg.rope.factor * double(cfg.max_position_embeddings)), 1e15)));
    m->max_seq_len = std::min<int64_t>(m->max_seq_len, int64_t(1) << 24);
    // Learned positions (GPT-2 lineage) end with their table.
    if (F.pos_embed && m->max_seq_len > cfg.max_position_embeddings)
        fail(VT_STATUS_INVALID_ARGUMENT, "max_seq_len %lld is more than the %lld learned positions of %s (%s: "
             "its max_position_embeddings / n_positions)", (long long)m->max_seq_len,
             (long long)cfg.max_position_embeddings, F.name, F.pos_embed);
    m->cfg = cfg;
    m->inv_freq = ops::rope_inv_freq(cfg);
    m->inv_freq_long = ops::rope_inv_freq_long(cfg);
    m->rope_long_after = cfg.rope.original_max_position_embeddings;
    m->rope_scale = ops::rope_attention_scale(cfg);
    m->rope_scale_long = cfg.rope.attention_factor_long > 0 ? float(cfg.rope.attention_factor_long) : m->rope_scale;
    if (cfg.family->local_rope) {  // the sliding layers: their own base, no scaling
        LlamaConfig local = cfg;
        local.rope_theta = cfg.rope_local_theta;
        local.rope = RopeScaling();
        m->inv_freq_local = ops::rope_inv_freq(local);
    }
    if (F.rope == ModelFamily::ROTATE_HALF_NEGATED) {  // (NanoChat: each pair turns by -θ)
        for (std::vector<float>* v : {&m->inv_freq, &m->inv_freq_long, &m->inv_freq_local})
            for (float& f : *v) f = -f;
        m->rope_negated = true;
    }

    const int64_t L = cfg.num_layers, H = cfg.hidden_size;
    const bool tied = cfg.tie_word_embeddings == 1;

    // lm_head is never FP8 (SPEC §7): with an FP8 layer format it is INT8 blocked-32 (16 when
    // hidden_size is not a multiple of 32), which measured as faithful as FP32 on SmolLM2.
    vt_format head_format = m->format;
    int32_t head_block = m->block_size;
    if (m->format == VT_FORMAT_FP8_BLOCKED || m->format == VT_FORMAT_FP8_CHANNEL) {
        head_format = VT_FORMAT_INT8_BLOCKED;
        head_block = H % 32 == 0 ? 32 : 16;
    }
    // With INT4 layers lm_head stays 8-bit (INT8 blocked-32; 16 when hidden_size is not a
    // multiple of 32): the logits feed the argmax directly (docs/guide.md, docs/fidelity.md).
    if (m->format == VT_FORMAT_INT4_BLOCKED || m->format == VT_FORMAT_INT4_MIN_BLOCKED || m->format == VT_FORMAT_MXFP4) {
        head_format = VT_FORMAT_INT8_BLOCKED;
        head_block = H % 32 == 0 ? 32 : 16;
    }

    auto layer_name = [&](int64_t layer, int which) { return layer_tensor_name(F, layer, LayerTensor(which)); };
    auto present_in = [&](int which, int64_t layer) { return layer_tensor_expected(cfg, LayerTensor(which), layer); };

    Loader ld(*ck, opt);
    // The packed-weight cache (packed_cache.h): on a hit the linears are read, not packed.
    PackedCache pc(opt.packed_cache_dir ? opt.packed_cache_dir : "", *ck, m->format, m->block_size, L);
    auto cached = [&](const std::string& name, int64_t rows, int64_t cols, vt_format fmt, int32_t block,
                      const std::function<std::unique_ptr<Packed>()>& pack) {
        return pc.get(name, rows, cols, fmt, block, pack);
    };
    const TensorView& emb = ld.tensor(F.embed);
    int64_t total = int64_t(emb.nbytes) + (F.final_norm ? int64_t(ld.tensor(F.final_norm).nbytes) : 0);
    if (!tied) total += int64_t(ld.tensor(F.lm_head).nbytes);
    for (int64_t l = 0; l < L; ++l) {
        for (int k = 0; k < T_COUNT; ++k)
            if (present_in(k, l)) total += int64_t(ld.tensor(layer_name(l, k)).nbytes);
        for (const MoeTensor& x : moe_layer_tensors(cfg, l)) total += int64_t(ld.tensor(x.name).nbytes);
    }
    ld.set_total(total);
    ld.progress(0);

    // Embedding table, kept in its stored dtype (exact row lookups); GGUF blocks packed as
    // they are, their rows dequantized per lookup (the same numbers, a quarter of the bytes).
    if (emb.ggml >= 0 && !ggml_packable(emb.ggml)) {  // dequantized (exactly) to f32
        m->embed_dtype = VT_DTYPE_F32;
        m->embed.allocate(size_t(emb.numel()) * sizeof(float));
        ld.wrap("tensor " + emb.name + " in " + ck->file_of(emb), [&] {
            dequantize_ggml(emb.data, emb.ggml, emb.shape[0], emb.shape[1], reinterpret_cast<float*>(m->embed.data()));
            return nullptr;
        });
    } else if (emb.ggml >= 0) {
        m->embed_pack = ld.wrap("tensor " + emb.name + " in " + ck->file_of(emb),
                                [&] { return pack_ggml({{emb.data, emb.shape[0]}}, emb.ggml, emb.shape[1]); });
        m->embed_rows = m->embed_pack.get();
    } else {
        m->embed_dtype = emb.dtype;
        m->embed.allocate(emb.nbytes);
        copy_parallel(m->embed.data(), emb.data, emb.nbytes);
        ld.check_finite(emb, m->embed.data(), emb.dtype);
    }
    ld.progress(int64_t(emb.nbytes));
    if (!tied) ck->release(emb);  // a tied embedding is read again for lm_head below

    // Families whose RoPE rotates pairs (2i, 2i + 1) (family.h, ModelFamily::INTERLEAVED).
    const bool interleaved = F.rope == ModelFamily::INTERLEAVED;
    if (interleaved && F.fused_qkv)
        fail(VT_STATUS_INTERNAL, "%s: pair-interleaved RoPE with a fused qkv_proj is not implemented", F.name);
    auto interleaved_view = [&](const TensorView& t, int64_t heads) {
        if (t.permuted_heads)  // (a references file's llama.cpp order: not one of these families')
            fail(VT_STATUS_FORMAT_ERROR, "tensor %s in %s: pyvt_permuted_heads is not supported for %s (its RoPE "
                 "rotates pairs (2i, 2i + 1) as the file's rows are)", t.name.c_str(), ck->file_of(t).c_str(), F.name);
        TensorView v = t;
        v.permuted_heads = heads;
        v.permuted_rotary = cfg.rotary_dim;
        return v;
    };
    m->layers.resize(size_t(L));
    for (int64_t l = 0; l < L; ++l) {
        LayerWeights& w = m->layers[size_t(l)];
        auto t = [&](int which) -> const TensorView& { return ld.tensor(layer_name(l, which)); };
        auto present = [&](int which) { return present_in(which, l); };
        for (auto [which, out] : {std::pair<int, AlignedVec<float>*>{T_ATTN_NORM, &w.attn_norm}, {T_MLP_NORM, &w.mlp_norm}})
            if (present(which)) {  // (OLMo 2 has neither: its norms come after)
                *out = ld.to_f32_vec(t(which));
                ld.progress(int64_t(t(which).nbytes));
            }
        const std::string ln = "layers." + std::to_string((long long)l) + ".";
        const vt_format fmt = m->format;
        const int32_t blk = m->block_size;
        auto one = [&](const char* name, int which) {
            const TensorView& x = t(which);
            if (F.conv1d_weights && x.out_in) {  // (GPT-2 from a GGUF: [out, in] rows already)
                TensorView v = x;
                v.out_in = false;
                return cached(ln + name, v.shape[0], v.shape[1], ld.format_of({&v}, fmt), ld.block_of({&v}, fmt, blk),
                              [&] { return ld.pack_tensor(v, fmt, blk); });
            }
            if (F.conv1d_weights)  // (GPT-2: [in, out] as stored, packed as [out, in])
                return cached(ln + name, x.shape[1], x.shape[0], ld.format_of({&x}, fmt), ld.block_of({&x}, fmt, blk), [&] {
                    AlignedVec<uint8_t> tmp;
                    const TensorView v = ld.transposed(x, tmp);
                    return ld.pack_tensor(v, fmt, blk);
                });
            return cached(ln + name, x.shape[0], x.shape[1], ld.format_of({&x}, fmt), ld.block_of({&x}, fmt, blk),
                          [&] { return ld.pack_tensor(x, fmt, blk); });
        };
        if (cfg.conv_layer(l)) {
            // LFM2's short convolution: in_proj ([B | C | x] rows) and out_proj as the layer's qkv
            // and o linears (the pass reads them so in such a layer), the kernel [H, 1, K] as
            // [H, K] floats, the biases (conv_bias: in_proj's as qkv_bias, out_proj's as o_bias).
            w.qkv = one("qkv", T_CONV_IN);
            w.o = one("o", T_CONV_OUT);
            w.conv = ld.to_f32_vec(t(T_CONV));
            ld.progress(int64_t(t(T_CONV_IN).nbytes + t(T_CONV_OUT).nbytes + t(T_CONV).nbytes));
            if (cfg.conv_bias) {
                w.qkv_bias = ld.to_f32_vec(t(T_CONV_IN_BIAS));
                w.conv_bias = ld.to_f32_vec(t(T_CONV_BIAS));
                w.o_bias = ld.to_f32_vec(t(T_CONV_OUT_BIAS));
                ld.progress(int64_t(t(T_CONV_IN_BIAS).nbytes + t(T_CONV_BIAS).nbytes + t(T_CONV_OUT_BIAS).nbytes));
            }
        } else if (F.mla) {
            // DeepSeek's latent attention: [q_a_proj or q_proj | kv_a_proj_with_mqa] as one linear
            // (both read the normed x), q_b_proj, and kv_b_proj split per head into W_uk_hᵀ (its
            // k rows transposed: q's nope part into the latent) and W_uv_h (its v rows). A linear
            // whose input width the block does not divide takes the largest block that does.
            auto fit = [&](int64_t in, const TensorView& x) -> int32_t {
                if (blk <= 0 || in % blk == 0) return blk;  // (bf16: no blocks)
                for (int32_t b : {128, 64, 32, 16})
                    if (b < blk && in % b == 0) return b;
                fail(VT_STATUS_UNSUPPORTED, "tensor %s in %s: its %lld columns are not a multiple of 16 (the "
                     "smallest block of a packed linear)", x.name.c_str(), ck->file_of(x).c_str(), (long long)in);
            };
            const TensorView& qa = t(cfg.mla_q_lora > 0 ? T_Q_A : T_Q);
            const TensorView& kva = t(T_KV_A);
            const std::vector<const TensorView*> parts = {&qa, &kva};
            const vt_format qf = ld.format_of(parts, fmt);
            const int32_t qb = ld.block_of(parts, fmt, fit(qa.shape[1], qa));
            w.qkv = cached(ln + "qkv", qa.shape[0] + kva.shape[0], qa.shape[1], qf, qb,
                           [&] { return ld.pack_concat(parts, qf, qb); });
            ld.progress(int64_t(qa.nbytes + kva.nbytes));
            if (cfg.mla_q_lora > 0) {
                const TensorView& x = t(T_Q_B);
                const vt_format f = ld.format_of({&x}, fmt);
                const int32_t b = ld.block_of({&x}, fmt, fit(x.shape[1], x));
                w.q_b = cached(ln + "q_b", x.shape[0], x.shape[1], f, b, [&] { return ld.pack_tensor(x, f, b); });
                ld.progress(int64_t(x.nbytes));
            }
            const TensorView& kb = t(T_KV_B);
            if (!kb.float_dtype)
                fail(VT_STATUS_UNSUPPORTED, "tensor %s in %s must be F32, F16 or BF16, not %s (its rows are split "
                     "per head and transposed at load)", kb.name.c_str(), ck->file_of(kb).c_str(), kb.dtype_name.c_str());
            const int64_t nope = cfg.mla_nope, vd = cfg.mla_v, R = cfg.mla_kv_lora;
            const size_t es = kb.dtype == VT_DTYPE_F32 ? 4 : 2;
            auto rows_of = [&](int64_t row0, int64_t rows) {
                TensorView v = kb;
                v.data = kb.data + size_t(row0 * R) * es;
                v.shape = {rows, R};
                v.nbytes = size_t(rows * R) * es;
                return v;
            };
            const int32_t bk = fit(nope, kb), bv = fit(R, kb);
            for (int64_t h = 0; h < cfg.num_heads; ++h) {
                const std::string hn = std::to_string((long long)h);
                const TensorView k = rows_of(h * (nope + vd), nope), v = rows_of(h * (nope + vd) + nope, vd);
                w.uk.push_back(cached(ln + "uk." + hn, R, nope, fmt, bk, [&] {
                    AlignedVec<uint8_t> tmp;
                    return ld.pack_tensor(ld.transposed(k, tmp), fmt, bk);
                }));
                w.uv.push_back(cached(ln + "uv." + hn, vd, R, fmt, bv, [&] { return ld.pack_tensor(v, fmt, bv); }));
            }
            ld.progress(int64_t(kb.nbytes));
        } else if (F.fused_qkv && F.conv1d_weights) {  // (GPT-2's c_attn: q|k|v columns)
            w.qkv = one("qkv", T_Q);
            ld.progress(int64_t(t(T_Q).nbytes));
        } else if (F.fused_qkv && F.qkv_grouped && t(T_Q).qkv_heads) {  // (GPT-NeoX, Falcon from a GGUF) q|k|v rows already
            // The marker must name the model's heads and KV heads: the rows are then the q | k | v
            // blocks the packed qkv holds (GPTBigCode multi-query with a marker of its heads, or
            // any other grouping, is refused rather than packed as another model).
            const TensorView& x = t(T_Q);
            if (x.qkv_heads != cfg.num_heads || x.qkv_kv_heads != cfg.num_kv_heads) {
                const std::string said = x.qkv_kv_heads == x.qkv_heads ? std::to_string(x.qkv_heads)
                    : "[" + std::to_string(x.qkv_heads) + ", " + std::to_string(x.qkv_kv_heads) + "]";
                const std::string kv = cfg.num_kv_heads == cfg.num_heads ? ""
                    : " with " + std::to_string(cfg.num_kv_heads) + " KV head" + (cfg.num_kv_heads == 1 ? "" : "s");
                fail(VT_STATUS_FORMAT_ERROR, "tensor %s in %s: pyvt_qkv_heads %s is not the model's %lld heads%s",
                     x.name.c_str(), ck->file_of(x).c_str(), said.c_str(), (long long)cfg.num_heads, kv.c_str());
            }
            TensorView v = x;
            v.qkv_heads = v.qkv_kv_heads = 0;
            w.qkv = cached(ln + "qkv", v.shape[0], v.shape[1], ld.format_of({&v}, fmt), ld.block_of({&v}, fmt, blk),
                           [&] { return ld.pack_tensor(v, fmt, blk); });
            ld.progress(int64_t(x.nbytes));
        } else if (F.fused_qkv && F.qkv_grouped) {  // (GPT-NeoX) rows put in q|k|v order first
            const TensorView& x = t(T_Q);
            ld.not_permuted(x);
            w.qkv = cached(ln + "qkv", x.shape[0], x.shape[1], ld.format_of({&x}, fmt), ld.block_of({&x}, fmt, blk), [&] {
                AlignedVec<uint8_t> rows(x.nbytes);
                regroup_qkv_units(x.data, rows.data(), x.nbytes / size_t(x.shape[0]), cfg.num_heads, cfg.num_kv_heads,
                                  cfg.head_dim);
                TensorView v = x;
                v.data = rows.data();
                return ld.pack_tensor(v, fmt, blk);
            });
            ld.progress(int64_t(x.nbytes));
        } else if (F.fused_qkv) {  // q|k|v rows already, as the packed qkv holds them
            w.qkv = one("qkv", T_Q);
            ld.progress(int64_t(t(T_Q).nbytes));
        } else {
            const int64_t rows = t(T_Q).shape[0] + t(T_K).shape[0] + t(T_V).shape[0];
            std::vector<const TensorView*> qkv = {&t(T_Q), &t(T_K), &t(T_V)};
            // RoPE over pairs (2i, 2i + 1): q's and k's rows put in rotate-half order (the pass's).
            TensorView qi, ki;
            if (interleaved) {
                qi = interleaved_view(t(T_Q), cfg.num_heads);
                ki = interleaved_view(t(T_K), cfg.num_kv_heads);
                qkv[0] = &qi;
                qkv[1] = &ki;
            }
            const vt_format qf = ld.format_of(qkv, fmt);
            const int32_t qb = ld.block_of(qkv, fmt, blk);
            w.qkv = cached(ln + "qkv", rows, t(T_Q).shape[1], qf, qb, [&] { return ld.pack_concat(qkv, qf, qb); });
            ld.progress(int64_t(t(T_Q).nbytes + t(T_K).nbytes + t(T_V).nbytes));
        }
        if (!cfg.conv_layer(l)) {
            w.o = one("o", T_O);
            ld.progress(int64_t(t(T_O).nbytes));
        }
        if (present(T_ATTN_GATE)) {  // (LFM3)
            w.attn_gate = one("attn_gate", T_ATTN_GATE);
            ld.progress(int64_t(t(T_ATTN_GATE).nbytes));
        }
        if (cfg.moe_layer(l)) {
            // The router and the shared gate in float32; each expert's gate / up as a pair
            // (one format, as below), its down alone.
            const std::vector<MoeTensor> mt = moe_layer_tensors(cfg, l);
            size_t i = 0;
            auto next = [&]() -> const TensorView& { return ld.tensor(mt[i++].name); };
            auto expert = [&](const std::string& name, LayerWeights::Expert& e) {
                const TensorView& g = next();
                const TensorView& u = next();
                const TensorView& d = next();
                const std::vector<const TensorView*> gu = {&g, &u};
                const vt_format gf = ld.format_of(gu, fmt);
                const int32_t gbk = ld.block_of(gu, fmt, blk);
                e.gate = cached(ln + name + ".gate", g.shape[0], g.shape[1], gf, gbk,
                                [&] { return ld.pack_concat({&g}, gf, gbk, ld.keeps(g, gf, gbk)); });
                e.up = cached(ln + name + ".up", u.shape[0], u.shape[1], gf, gbk,
                              [&] { return ld.pack_concat({&u}, gf, gbk, ld.keeps(u, gf, gbk)); });
                e.down = cached(ln + name + ".down", d.shape[0], d.shape[1], ld.format_of({&d}, fmt),
                                ld.block_of({&d}, fmt, blk), [&] { return ld.pack_tensor(d, fmt, blk); });
                ld.progress(int64_t(g.nbytes + u.nbytes + d.nbytes));
                for (const TensorView* x : {&g, &u, &d}) ck->release(*x);
            };
            const TensorView& router = next();
            w.router = ld.to_f32_vec(router);
            if (cfg.moe_choice_bias) {  // its correction bias (the choice only)
                const TensorView& cb = next();
                w.router_choice_bias = ld.to_f32_vec(cb);
                ld.progress(int64_t(cb.nbytes));
            }
            ld.progress(int64_t(router.nbytes));
            w.experts.resize(size_t(cfg.num_experts));
            if (F.gpt_oss) {  // router bias; gate_up [E, H, 2I] (or MXFP4), its bias; down [E, I, H], its bias
                const TensorView& rb = next();
                w.router_bias = ld.to_f32_vec(rb);
                const bool mx = cfg.mxfp4_experts;
                const TensorView& gu = next();
                const TensorView* gus = mx ? &next() : nullptr;
                const TensorView& gub = next();
                const TensorView& dn = next();
                const TensorView* dns = mx ? &next() : nullptr;
                const TensorView& dnb = next();
                const int64_t E = cfg.num_experts, I = cfg.moe_intermediate, Hd = cfg.hidden_size;
                const AlignedVec<float> gu_bias = ld.to_f32_vec(gub), dn_bias = ld.to_f32_vec(dnb);
                AlignedVec<uint8_t> gtmp, dtmp;
                const void* gsrc = mx ? gu.data : ld.aligned_data(gu, gtmp);
                const void* dsrc = mx ? dn.data : ld.aligned_data(dn, dtmp);
                // AUTO keeps MXFP4 experts in MXFP4 (exactly; half int8's bytes).
                const bool keep = mx && opt.weight_format == VT_FORMAT_AUTO;
                const vt_format xf = keep ? VT_FORMAT_MXFP4 : fmt;
                const int32_t xb = keep ? 32 : blk;
                for (int64_t e = 0; e < E; ++e) {
                    LayerWeights::Expert& x = w.experts[size_t(e)];
                    const std::string en = ln + "experts." + std::to_string((long long)e);
                    x.gate = cached(en + ".gate_up", 2 * I, Hd, xf, xb,
                                    [&] { return ld.pack_oss_expert(gu, gsrc, gus, e, 2 * I, Hd, xf, xb); });
                    x.down = cached(en + ".down", Hd, I, xf, xb,
                                    [&] { return ld.pack_oss_expert(dn, dsrc, dns, e, Hd, I, xf, xb); });
                    x.gate_bias.assign(gu_bias.begin() + e * 2 * I, gu_bias.begin() + (e + 1) * 2 * I);
                    x.down_bias.assign(dn_bias.begin() + e * Hd, dn_bias.begin() + (e + 1) * Hd);
                }
                for (const TensorView* x : {&rb, &gu, gus, &gub, &dn, dns, &dnb}) {
                    if (!x) continue;
                    ld.progress(int64_t(x->nbytes));
                    ck->release(*x);
                }
            } else if (F.fused_experts) {  // GraniteMoE, Mistral 4: each expert's rows of the two stacked tensors
                const TensorView& in3 = next();
                const TensorView& out3 = next();
                const int64_t E = cfg.num_experts, I = cfg.moe_intermediate, Hd = cfg.hidden_size;
                TensorView in2 = in3, out2 = out3;  // the same bytes as [E·2I, H] and [E·H, I]
                in2.shape = {E * 2 * I, Hd};
                out2.shape = {E * Hd, I};
                const vt_format gf = ld.format_of({&in2}, fmt), df = ld.format_of({&out2}, fmt);
                const int32_t gb = ld.block_of({&in2}, fmt, blk), db = ld.block_of({&out2}, fmt, blk);
                for (int64_t e = 0; e < E; ++e) {
                    LayerWeights::Expert& x = w.experts[size_t(e)];
                    const std::string en = ln + "experts." + std::to_string((long long)e);
                    x.gate = cached(en + ".gate", I, Hd, gf, gb, [&] { return ld.pack_rows(in2, e * 2 * I, I, fmt, blk); });
                    x.up = cached(en + ".up", I, Hd, gf, gb, [&] { return ld.pack_rows(in2, e * 2 * I + I, I, fmt, blk); });
                    x.down = cached(en + ".down", Hd, I, df, db, [&] { return ld.pack_rows(out2, e * Hd, Hd, fmt, blk); });
                }
                ld.progress(int64_t(in3.nbytes + out3.nbytes));
                ck->release(in3);
                ck->release(out3);
            }
            for (int64_t e = 0; e < cfg.num_experts && !F.fused_experts; ++e)
                expert("experts." + std::to_string((long long)e), w.experts[size_t(e)]);
            if (i < mt.size() && granite_shared(F)) {  // GraniteMoeShared: [2·S, H] gate|up, [H, S]
                const TensorView& in = next();
                const TensorView& out = next();
                const int64_t S = cfg.shared_intermediate, Hd = cfg.hidden_size;
                const vt_format gf = ld.format_of({&in}, fmt);
                const int32_t gb = ld.block_of({&in}, fmt, blk);
                w.shared.gate = cached(ln + "shared.gate", S, Hd, gf, gb, [&] { return ld.pack_rows(in, 0, S, fmt, blk); });
                w.shared.up = cached(ln + "shared.up", S, Hd, gf, gb, [&] { return ld.pack_rows(in, S, S, fmt, blk); });
                w.shared.down = cached(ln + "shared.down", Hd, S, ld.format_of({&out}, fmt), ld.block_of({&out}, fmt, blk),
                                       [&] { return ld.pack_tensor(out, fmt, blk); });
                ld.progress(int64_t(in.nbytes + out.nbytes));
                ck->release(in);
                ck->release(out);
            } else if (i < mt.size()) {
                expert("shared", w.shared);
                if (F.shared_gate) {
                    const TensorView& sg = next();
                    w.shared_gate = ld.to_f32_vec(sg);
                    ld.progress(int64_t(sg.nbytes));
                }
            }
            ck->release(router);
        } else if (F.fused_gate_up) {  // gate rows, then up rows
            const int64_t I = cfg.intermediate_size, K = t(T_GATE).shape[1];
            const vt_format gf = ld.format_of({&t(T_GATE)}, fmt);
            const int32_t gb = ld.block_of({&t(T_GATE)}, fmt, blk);
            w.gate = cached(ln + "gate", I, K, gf, gb, [&] { return ld.pack_rows(t(T_GATE), 0, I, fmt, blk); });
            w.up = cached(ln + "up", I, K, gf, gb, [&] { return ld.pack_rows(t(T_GATE), I, I, fmt, blk); });
            ld.progress(int64_t(t(T_GATE).nbytes));
        } else {
            // One format for the pair (the gated linears read a tile of each side by side): the
            // wider of their formats (format_of, as for q/k/v); a side whose blocks are already
            // in that format is packed from them as they are.
            std::vector<const TensorView*> gu = {&t(T_GATE)};
            if (present(T_UP)) gu.push_back(&t(T_UP));  // (Phi's MLP is not gated: fc1 alone)
            const vt_format gf = ld.format_of(gu, fmt);
            const int32_t gbk = ld.block_of(gu, fmt, blk);
            auto half = [&](const char* name, int which) {
                const TensorView& x = t(which);
                return cached(ln + name, x.shape[0], x.shape[1], gf, gbk,
                              [&] { return ld.pack_concat({&x}, gf, gbk, ld.keeps(x, gf, gbk)); });
            };
            w.gate = F.conv1d_weights ? one("gate", T_GATE) : half("gate", T_GATE);  // (GPT-2: ungated, alone)
            ld.progress(int64_t(t(T_GATE).nbytes));
            if (present(T_UP)) {
                w.up = half("up", T_UP);
                ld.progress(int64_t(t(T_UP).nbytes));
            }
        }
        if (!cfg.moe_layer(l)) {
            w.down = one("down", T_DOWN);
            ld.progress(int64_t(t(T_DOWN).nbytes));
        }
        // The family's small f32 tensors: biases, q/k norms.
        auto small = [&](int which, AlignedVec<float>& out) {
            if (!present(which)) return;
            out = ld.to_f32_vec(t(which));
            ld.progress(int64_t(t(which).nbytes));
        };
        if (cfg.qkv_bias) {
            AlignedVec<float> q, k, v;
            small(T_Q_BIAS, q);
            small(T_K_BIAS, k);
            small(T_V_BIAS, v);
            w.qkv_bias.resize(q.size() + k.size() + v.size());
            std::copy(q.begin(), q.end(), w.qkv_bias.begin());
            std::copy(k.begin(), k.end(), w.qkv_bias.begin() + std::ptrdiff_t(q.size()));
            std::copy(v.begin(), v.end(), w.qkv_bias.begin() + std::ptrdiff_t(q.size() + k.size()));
        }
        if (F.qkv_grouped && !w.qkv_bias.empty()) {  // (the fused bias, in the order of the rows)
            const AlignedVec<float> grouped = w.qkv_bias;
            regroup_qkv_units(reinterpret_cast<const uint8_t*>(grouped.data()), reinterpret_cast<uint8_t*>(w.qkv_bias.data()),
                              sizeof(float), cfg.num_heads, cfg.num_kv_heads, cfg.head_dim);
        }
        small(T_Q_A_NORM, w.q_a_norm);  // (DeepSeek's latent attention: its norms)
        small(T_KV_A_NORM, w.kv_a_norm);
        small(T_O_BIAS, w.o_bias);
        small(T_GATE_BIAS, w.gate_bias);
        small(T_UP_BIAS, w.up_bias);
        small(T_DOWN_BIAS, w.down_bias);
        small(T_Q_NORM, w.q_norm);
        small(T_K_NORM, w.k_norm);
        if (interleaved) {  // q's and k's biases and norms in the order of their rows
            const int64_t q = cfg.num_heads * cfg.head_dim;
            if (!w.qkv_bias.empty()) {
                unpermute_floats(w.qkv_bias.data(), q, cfg.head_dim, cfg.rotary_dim);
                unpermute_floats(w.qkv_bias.data() + q, cfg.num_kv_heads * cfg.head_dim, cfg.head_dim, cfg.rotary_dim);
            }
            for (AlignedVec<float>* n : {&w.q_norm, &w.k_norm})
                if (!n->empty()) unpermute_floats(n->data(), int64_t(n->size()), cfg.head_dim, cfg.rotary_dim);
        }
        small(T_POST_ATTN_NORM, w.post_attn_norm);
        small(T_POST_MLP_NORM, w.post_mlp_norm);
        small(T_SINKS, w.sinks);
        if (present(T_ACT_ALPHA_P)) {  // Apertus's xIELU (transformers: softplus in float32)
            AlignedVec<float> ap, an, beta, eps;
            small(T_ACT_ALPHA_P, ap);
            small(T_ACT_ALPHA_N, an);
            small(T_ACT_BETA, beta);
            small(T_ACT_EPS, eps);
            auto softplus = [](float v) { return v > 20.0f ? v : float(std::log1p(std::exp(double(v)))); };
            w.xielu_beta = beta[0];
            w.xielu_eps = eps[0];
            w.xielu_alpha_p = softplus(ap[0]);
            w.xielu_alpha_n = w.xielu_beta + softplus(an[0]);
        }
        small(T_ATTN_NORM_BIAS, w.attn_norm_bias);
        small(T_MLP_NORM_BIAS, w.mlp_norm_bias);
        // x·(1 + w) in float32, as transformers computes it (Gemma; Nemotron's LayerNorm1P)
        if (F.norm == ModelFamily::RMS_NORM_PLUS_ONE || F.norm_plus_one)
            for (AlignedVec<float>* n : {&w.attn_norm, &w.mlp_norm, &w.q_norm, &w.k_norm, &w.post_attn_norm,
                                         &w.post_mlp_norm})
                for (float& v : *n) v = 1.0f + v;
        if (!F.final_norm) {  // (OLMo 1, NanoChat: their norms' weights are 1)
            for (AlignedVec<float>* n : {&w.attn_norm, &w.mlp_norm}) n->assign(size_t(H), 1.0f);
            if (cfg.qk_norm && !F.layer_tensors[T_Q_NORM])  // (NanoChat's per-head q/k norms)
                for (AlignedVec<float>* n : {&w.q_norm, &w.k_norm}) n->assign(size_t(cfg.head_dim), 1.0f);
        }
        // This layer's bytes of the file are packed: let them go (peak RSS ~ packed + one layer).
        for (int k = 0; k < T_COUNT; ++k)
            if (present(k)) ck->release(t(k));
    }
    // (OLMo 1: LayerNorms without weights, each norm's weight 1)
    const TensorView* norm = F.final_norm ? &ld.tensor(F.final_norm) : nullptr;
    if (norm) m->final_norm = ld.to_f32_vec(*norm);
    else m->final_norm.assign(size_t(H), 1.0f);
    if (F.embed_norm && !*F.embed_norm) {  // (NanoChat) an RMSNorm without weights
        m->embed_norm.assign(size_t(H), 1.0f);
    } else if (F.embed_norm) {  // (Bloom) the embeddings' LayerNorm
        m->embed_norm = ld.to_f32_vec(ld.tensor(F.embed_norm));
        m->embed_norm_bias = ld.to_f32_vec(ld.tensor(std::string(F.embed_norm, std::strlen(F.embed_norm) - 6) + "bias"));
    }
    if (F.alibi == 2) {  // MPT (build_mpt_alibi_tensor): 1 / 2^(k · 8 / P), P = n rounded up to a power of 2,
        const int64_t nh = cfg.num_heads;  // then the odd k's before the even ones when P > n
        int64_t P = 1;
        while (P < nh) P *= 2;
        std::vector<float> all(static_cast<size_t>(P), 0.0f);
        for (int64_t k = 1; k <= P; ++k) all[size_t(k - 1)] = 1.0f / std::pow(2.0f, float(k) * float(8.0 / double(P)));
        std::vector<float> order;
        if (P != nh) {
            for (int64_t k = 1; k < P; k += 2) order.push_back(all[size_t(k)]);
            for (int64_t k = 0; k < P; k += 2) order.push_back(all[size_t(k)]);
        } else {
            order = all;
        }
        m->alibi_slopes.assign(order.begin(), order.begin() + nh);
    } else if (F.alibi) {  // transformers' _get_alibi_slopes: 2^(-8/n)^k for the closest power of 2 n, then odd powers
        const int64_t nh = cfg.num_heads;
        int64_t p2 = 1;
        while (p2 * 2 <= nh) p2 *= 2;
        const float base = float(std::pow(2.0, -std::pow(2.0, -(std::log2(double(p2)) - 3))));
        const float extra = float(std::pow(2.0, -std::pow(2.0, -(std::log2(double(2 * p2)) - 3))));
        m->alibi_slopes.resize(size_t(nh));
        for (int64_t h = 0; h < nh; ++h)
            m->alibi_slopes[size_t(h)] = h < p2 ? std::pow(base, float(h + 1)) : std::pow(extra, float(2 * (h - p2) + 1));
    }
    if (F.pos_embed) {  // learned positions, float32 (added to each embedding row)
        const TensorView& pe = ld.tensor(F.pos_embed);
        m->pos_embed = ld.to_f32_vec(pe);
        ck->release(pe);
    }
    if (!cfg.final_norm_bias.empty()) m->final_norm_bias = ld.to_f32_vec(ld.tensor(cfg.final_norm_bias));  // LayerNorm
    if (!cfg.lm_head_bias.empty()) m->lm_head_bias = ld.to_f32_vec(ld.tensor(cfg.lm_head_bias));
    if (F.norm == ModelFamily::RMS_NORM_PLUS_ONE || F.norm_plus_one)
        for (float& v : m->final_norm) v = 1.0f + v;
    if (norm) ld.progress(int64_t(norm->nbytes));
    if (tied && m->embed_rows) {
        // lm_head from the embedding's blocks: as they are (AUTO; then the lookups use it and
        // the separate embedding copy goes), or dequantized into the head format.
        m->lm_head = cached("lm_head", cfg.vocab_size, H, ld.format_of({&emb}, head_format),
                            ld.block_of({&emb}, head_format, head_block), [&] { return ld.pack_tensor(emb, head_format, head_block); });
        if (ld.native({&emb})) {
            m->embed_rows = m->lm_head.get();
            m->embed_pack.reset();
        }
    } else if (tied) {
        m->lm_head = cached("lm_head", cfg.vocab_size, H, head_format, head_block, [&] {
            return ld.pack(std::string("lm_head (tied to ") + F.embed + ")", m->embed.data(), m->embed_dtype,
                           cfg.vocab_size, H, head_format, head_block);
        });
    } else {
        const TensorView& head = ld.tensor(F.lm_head);
        m->lm_head = cached("lm_head", head.shape[0], head.shape[1], ld.format_of({&head}, head_format),
                            ld.block_of({&head}, head_format, head_block), [&] { return ld.pack_tensor(head, head_format, head_block); });
        ld.progress(int64_t(head.nbytes));
        ck->release(head);
    }
    if (tied) ck->release(emb);

    // Bytes read per decoded token: an MoE layer reads its router, its shared expert and
    // experts_per_tok of its experts (their average size); the others stay in memory.
    int64_t wb = m->lm_head->nbytes() +
                 int64_t((m->final_norm.size() + m->final_norm_bias.size() + m->lm_head_bias.size()) *
                         sizeof(float));
    int64_t idle_experts = 0;
    for (auto& w : m->layers) {
        wb += w.qkv->nbytes() + w.o->nbytes() + (w.attn_gate ? w.attn_gate->nbytes() : 0);
        if (w.gate) wb += w.gate->nbytes() + (w.up ? w.up->nbytes() : 0) + w.down->nbytes();
        int64_t eb = 0;
        for (const auto& e : w.experts)  // (gpt-oss: gate|up in one linear, and biases)
            eb += e.gate->nbytes() + (e.up ? e.up->nbytes() : 0) + e.down->nbytes() +
                  int64_t((e.gate_bias.size() + e.down_bias.size()) * sizeof(float));
        if (!w.experts.empty()) {
            const int64_t active = eb / int64_t(w.experts.size()) * cfg.experts_per_tok;
            wb += active;
            idle_experts += eb - active;
        }
        if (w.shared.gate) wb += w.shared.gate->nbytes() + w.shared.up->nbytes() + w.shared.down->nbytes();
        if (w.q_b) wb += w.q_b->nbytes();
        for (const auto* v : {&w.uk, &w.uv})
            for (const auto& x : *v) wb += x->nbytes();
        wb += int64_t((w.q_a_norm.size() + w.kv_a_norm.size()) * sizeof(float));
        wb += int64_t((w.router.size() + w.router_bias.size() + w.router_choice_bias.size() + w.shared_gate.size() + w.sinks.size()) * sizeof(float));
        wb += int64_t((w.attn_norm.size() + w.mlp_norm.size() + w.qkv_bias.size() + w.o_bias.size() +
                       w.gate_bias.size() + w.up_bias.size() + w.down_bias.size() + w.q_norm.size() +
                       w.k_norm.size() + w.post_attn_norm.size() + w.post_mlp_norm.size() +
                       w.attn_norm_bias.size() + w.mlp_norm_bias.size()) * sizeof(float));
    }
    // Every weight has been read from the files: were they the same files throughout?
    ck->check_unchanged(true);
    pc.finish();  // after the check: a file that changed during the load is never cached
    m->weight_bytes = wb;
    m->total_bytes = wb + idle_experts + int64_t(m->embed.size()) + (m->embed_pack ? m->embed_pack->nbytes() : 0) +
                     int64_t((m->inv_freq.size() + m->pos_embed.size()) * sizeof(float)) + int64_t(sizeof(vt_model));

    // CUDA: explicitly asked for, or AUTO with a usable device. AUTO falls back to the CPU
    // when the device cannot take this model (unsupported shape, not enough memory).
    const bool want_cuda = opt.device == VT_DEVICE_CUDA ||
                           (opt.device == VT_DEVICE_AUTO && cuda_device_usable(opt.device_index, nullptr));
    if (want_cuda) {
        // The device kernels look rows up in a plain table: GGUF blocks dequantized (exactly, f32).
        if (m->embed_rows) {
            m->embed_dtype = VT_DTYPE_F32;
            m->embed.allocate(size_t(cfg.vocab_size * H) * sizeof(float));
            unpack(*m->embed_rows, reinterpret_cast<float*>(m->embed.data()));
            m->total_bytes += int64_t(m->embed.size()) - (m->embed_pack ? m->embed_pack->nbytes() : 0);
            m->embed_rows = nullptr;
            m->embed_pack.reset();
        }
        try {
            m->backend = cuda_backend(*m, opt.device_index, m->kv_cache_dtype);
            m->device = VT_DEVICE_CUDA;
            m->device_index = opt.device_index;
            // The device holds its own copy of every linear: the host's packed copy goes (a
            // GPU model would otherwise hold its weights twice). Norms, the embedding table
            // and the RoPE table stay (small, or a view of the file); a test that needs the
            // CPU reference loads the model again on the CPU.
            m->total_bytes -= release_host_linears(*m);
        } catch (const Error& e) {
            const bool fallback = opt.device == VT_DEVICE_AUTO &&
                                  (e.status() == VT_STATUS_UNSUPPORTED || e.status() == VT_STATUS_OUT_OF_MEMORY);
            if (!fallback) throw;
        }
    }
    if (!m->backend) m->backend = cpu_backend(*m, m->kv_cache_dtype);
#if defined(__GLIBC__)
    // The conversion's temporaries (concatenated bf16 tensors, f32 rows) are freed by now, but
    // glibc keeps freed heap memory for reuse: without this, ~25 MB of them stayed in SmolLM2's
    // resident memory for the model's lifetime.
    malloc_trim(0);
#endif
    return m;
}

void get_model_info(const vt_model& m, vt_model_info* info) {
    const LlamaConfig& c = m.cfg;
    vt_model_info r;
    std::memset(&r, 0, sizeof r);
    r.vocab_size = c.vocab_size;
    r.hidden_size = c.hidden_size;
    r.intermediate_size = c.intermediate_size;
    r.num_layers = int32_t(c.num_layers);
    r.num_heads = int32_t(c.num_heads);
    r.num_kv_heads = int32_t(c.num_kv_heads);
    r.head_dim = int32_t(c.head_dim);
    r.max_seq_len = m.max_seq_len;
    r.rms_norm_eps = float(c.rms_norm_eps);
    r.rope_theta = float(c.rope_theta);
    r.tie_word_embeddings = c.tie_word_embeddings == 1 ? 1 : 0;
    r.bos_token_id = c.bos_token_id;
    r.num_eos = int32_t(std::min<size_t>(c.eos_token_ids.size(), VT_MAX_EOS));
    for (int32_t i = 0; i < r.num_eos; ++i) r.eos_token_ids[i] = c.eos_token_ids[size_t(i)];
    for (int32_t i = r.num_eos; i < VT_MAX_EOS; ++i) r.eos_token_ids[i] = -1;
    r.weight_format = m.format;
    r.block_size = m.block_size;
    r.device = m.device;
    r.device_index = m.device_index;
    r.kv_cache_dtype = m.kv_cache_dtype;
    {  // (what cpu/engine.cpp's sessions hold per position; the CUDA backend has no convolution layers)
        const int64_t per_vector = m.kv_cache_dtype == VT_DTYPE_F32 ? 4 * c.head_dim
                                   : m.kv_cache_dtype == VT_DTYPE_I8 ? c.head_dim + 4
                                                                     : 2 * c.head_dim;
        int64_t conv = 0;
        for (uint8_t x : c.layer_conv) conv += x;
        r.cache_bytes_per_token = (c.num_layers - conv) * c.num_kv_heads * 2 * per_vector +
                                  conv * c.hidden_size * (m.kv_cache_dtype == VT_DTYPE_F32 ? 4 : 2);
    }
    r.weight_bytes = m.weight_bytes;
    r.total_bytes = m.total_bytes + m.backend->device_bytes();
    std::snprintf(r.family, sizeof r.family, "%s", c.family ? c.family->name : "Llama");
    std::snprintf(r.features, sizeof r.features, "%s", feature_list(c).c_str());
    *info = r;
}

}  // namespace vt

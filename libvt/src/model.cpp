// Loading a Llama checkpoint: find the files, read the config, check every tensor's name,
// dtype and shape (collecting all problems into one message), then convert and prepack.
#include "model.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "convert.h"
#include "family.h"
#include "ops/rope.h"
#include "safetensors.h"
#include "threadpool.h"

namespace vt {

namespace {

// ---- Names ------------------------------------------------------------------------------

// The loader's family (family.h): its names and defaults. Llama, the only row so far.
const ModelFamily& F = llama_family();

std::string layer_name(int64_t layer, int which) { return layer_tensor_name(F, layer, LayerTensor(which)); }

// "model.layers.12.mlp.fc1.weight" -> layer 12, rest "mlp.fc1.weight".
bool split_layer_name(const std::string& name, int64_t* layer, std::string* rest) {
    const char* prefix = F.layer_prefix;
    const size_t plen = std::strlen(prefix);
    if (name.compare(0, plen, prefix) != 0) return false;
    size_t i = plen, j = i;
    while (j < name.size() && j - i < 9 && name[j] >= '0' && name[j] <= '9') ++j;
    if (j == i || j >= name.size() || name[j] != '.') return false;
    if (name[i] == '0' && j - i > 1) return false;  // no leading zeros
    *layer = std::stoll(name.substr(i, j - i));
    *rest = name.substr(j + 1);
    return true;
}

// Lists names compactly: per-layer names that differ only by the layer index are folded,
// e.g. "model.layers.{0..31}.mlp.fc1.weight". At most `max_items` entries.
std::string compact_names(const std::vector<std::string>& names, size_t max_items = 12) {
    std::map<std::string, std::vector<int64_t>> per_layer;  // rest -> layers
    std::vector<std::string> items;
    std::vector<std::string> order;  // first appearance of each item
    for (const auto& n : names) {
        int64_t layer;
        std::string rest;
        if (split_layer_name(n, &layer, &rest)) {
            auto& v = per_layer[rest];
            if (v.empty()) order.push_back("\x01" + rest);
            v.push_back(layer);
        } else {
            order.push_back(n);
        }
    }
    for (const auto& o : order) {
        if (o[0] != '\x01') {
            items.push_back(o);
            continue;
        }
        const std::string rest = o.substr(1);
        auto v = per_layer[rest];
        std::sort(v.begin(), v.end());
        v.erase(std::unique(v.begin(), v.end()), v.end());
        std::string layers;
        if (v.size() == 1) {
            layers = std::to_string(v[0]);
        } else if (v.back() - v.front() + 1 == int64_t(v.size())) {
            layers = "{" + std::to_string(v.front()) + ".." + std::to_string(v.back()) + "}";
        } else {
            layers = "{";
            for (size_t i = 0; i < v.size() && i < 6; ++i) layers += (i ? "," : "") + std::to_string(v[i]);
            layers += v.size() > 6 ? ",...}" : "}";
        }
        items.push_back(F.layer_prefix + layers + "." + rest);
    }
    std::string s;
    for (size_t i = 0; i < items.size() && i < max_items; ++i) s += (i ? ", " : "") + items[i];
    if (items.size() > max_items) s += format(", ... (%zu more)", items.size() - max_items);
    return s;
}

std::string shape_str(const std::vector<int64_t>& s) {
    std::string r = "[";
    for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
    return r + "]";
}

// ---- Options ----------------------------------------------------------------------------

void check_options(const vt_model_options& o) {
    switch (o.weight_format) {
        case VT_FORMAT_INT8_BLOCKED:
        case VT_FORMAT_FP8_BLOCKED:
        case VT_FORMAT_FP8_CHANNEL:
        case VT_FORMAT_BF16: break;
        default:
            fail(VT_STATUS_INVALID_ARGUMENT,
                 "weight_format %d is not a model weight format (INT8_BLOCKED %d, FP8_BLOCKED %d, FP8_CHANNEL %d, BF16 %d)",
                 o.weight_format, VT_FORMAT_INT8_BLOCKED, VT_FORMAT_FP8_BLOCKED, VT_FORMAT_FP8_CHANNEL, VT_FORMAT_BF16);
    }
    VT_CHECK_ARG(o.block_size == 0 || o.block_size == 16 || o.block_size == 32 || o.block_size == 64 ||
                     o.block_size == 128,
                 "block_size %d is not supported (0 = the format's default, 16, 32, 64 or 128)", o.block_size);
    VT_CHECK_ARG(o.num_layers >= 0, "num_layers %d is negative (0 = all)", o.num_layers);
    VT_CHECK_ARG(o.max_seq_len >= 0 && o.max_seq_len <= (int64_t(1) << 24),
                 "max_seq_len %lld is out of range (0 = the config's max_position_embeddings, at most %lld)",
                 (long long)o.max_seq_len, (long long)(int64_t(1) << 24));
    VT_CHECK_ARG(o.device == VT_DEVICE_AUTO || o.device == VT_DEVICE_CPU || o.device == VT_DEVICE_CUDA,
                 "device %d is not a vt_device_kind", o.device);
    VT_CHECK_ARG(o.device_index >= 0, "device_index %d is negative", o.device_index);
    if (o.device == VT_DEVICE_CUDA) {
        // Before reading gigabytes: say now why the device cannot be used.
        std::string why;
        if (!cuda_device_usable(o.device_index, &why))
            fail(VT_STATUS_BACKEND_UNAVAILABLE, "device cuda:%d was requested, but %s", o.device_index, why.c_str());
    }
}

// ---- Loading helpers --------------------------------------------------------------------

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
        done_ += bytes;
        if (opt_.progress && opt_.progress(opt_.progress_user, done_, total_) != 0)
            fail(VT_STATUS_CANCELLED, "model load cancelled by the progress callback");
    }

    const TensorView& tensor(const std::string& name) const { return *ck_.find(name); }

    // Tensor data with its dtype's alignment (a copy when the file's offset is unaligned).
    const void* aligned_data(const TensorView& t, AlignedVec<uint8_t>& tmp) const {
        const size_t align = t.dtype == VT_DTYPE_F32 ? 4 : 2;
        if (reinterpret_cast<uintptr_t>(t.data) % align == 0) return t.data;
        tmp.resize(t.nbytes);
        copy_parallel(tmp.data(), t.data, t.nbytes);
        return tmp.data();
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
        try {
            return prepack(w, dtype, rows, cols, format, block);
        } catch (const Error& e) {
            throw Error(e.status(), what + ": " + e.what());
        }
    }

    std::unique_ptr<Packed> pack_tensor(const TensorView& t, vt_format format, int32_t block) const {
        AlignedVec<uint8_t> tmp;
        const void* src = aligned_data(t, tmp);
        return pack("tensor " + t.name + " in " + ck_.file_of(t), src, t.dtype, t.shape[0], t.shape[1], format,
                    block);
    }

    // Row-concatenation of 2-D tensors with the same column count, prepacked as one matrix.
    std::unique_ptr<Packed> pack_concat(const std::vector<const TensorView*>& ts, vt_format format,
                                        int32_t block) const {
        const int64_t cols = ts[0]->shape[1];
        int64_t rows = 0;
        bool same_dtype = true;
        for (const TensorView* t : ts) {
            rows += t->shape[0];
            same_dtype = same_dtype && t->dtype == ts[0]->dtype;
        }
        std::string what = "tensors ";
        for (size_t i = 0; i < ts.size(); ++i) what += (i ? " | " : "") + ts[i]->name;
        what += " in " + ck_.file_of(*ts[0]);
        if (same_dtype) {
            const size_t esize = vt_dtype_size(ts[0]->dtype);
            RawBuf<uint8_t> buf;  // uninitialized: fully overwritten below
            buf.allocate(size_t(rows * cols) * esize);
            size_t off = 0;
            for (const TensorView* t : ts) {
                copy_parallel(buf.data() + off, t->data, t->nbytes);
                off += t->nbytes;
            }
            return pack(what, buf.data(), ts[0]->dtype, rows, cols, format, block);
        }
        AlignedVec<float> buf(size_t(rows * cols));
        size_t off = 0;
        for (const TensorView* t : ts) {
            AlignedVec<uint8_t> tmp;
            const void* src = aligned_data(*t, tmp);
            to_f32(src, t->dtype, buf.data() + off, size_t(t->numel()));
            off += size_t(t->numel());
        }
        return pack(what, buf.data(), VT_DTYPE_F32, rows, cols, format, block);
    }

private:
    const Checkpoint& ck_;
    const vt_model_options& opt_;
    int64_t done_ = 0, total_ = 0;
};

// ---- Structure check and config resolution -----------------------------------------------

void check_and_resolve(const Checkpoint& ck, LlamaConfig& c, int64_t* file_layers) {
    // Blocks in the checkpoint: the config's count, else the highest layer index + 1.
    int64_t max_layer = -1;
    for (const TensorView* t : ck.tensors()) {
        int64_t layer;
        std::string rest;
        if (split_layer_name(t->name, &layer, &rest)) max_layer = std::max(max_layer, layer);
    }
    const int64_t L = c.num_layers > 0 ? c.num_layers : max_layer + 1;
    const bool has_lm_head = ck.find(F.lm_head) != nullptr;
    if (c.tie_word_embeddings < 0) c.tie_word_embeddings = has_lm_head ? 0 : 1;
    const bool tied = c.tie_word_embeddings == 1;

    // Names: what is expected, what is missing, what is not ours.
    std::set<std::string> expected;
    expected.insert(F.embed);
    expected.insert(F.final_norm);
    if (!tied) expected.insert(F.lm_head);
    for (int64_t l = 0; l < L; ++l)
        for (int k = 0; k < T_COUNT; ++k) expected.insert(layer_name(l, k));
    std::vector<std::string> missing, unexpected, bad_dtype;
    for (const auto& name : expected) {
        const TensorView* t = ck.find(name);
        if (!t) missing.push_back(name);
        else if (!t->float_dtype)
            bad_dtype.push_back(name + " (" + t->dtype_name + ", in " + ck.file_of(*t) + ")");
    }
    for (const TensorView* t : ck.tensors()) {
        if (expected.count(t->name)) continue;
        if (tied && t->name == F.lm_head) continue;  // ignored, as transformers does
        int64_t layer;
        std::string rest;
        // Old conversions store the RoPE buffer; it is recomputed from the config.
        if (split_layer_name(t->name, &layer, &rest) && rest == F.ignored_layer_tensor) continue;
        unexpected.push_back(t->name);
    }
    // Keep layer order natural (layers.2 before layers.10) for messages.
    auto by_layer = [](const std::string& a, const std::string& b) {
        int64_t la, lb;
        std::string ra, rb;
        bool ia = split_layer_name(a, &la, &ra), ib = split_layer_name(b, &lb, &rb);
        if (ia != ib) return ia < ib;
        if (!ia) return a < b;
        return la != lb ? la < lb : ra < rb;
    };
    std::sort(missing.begin(), missing.end(), by_layer);
    std::sort(unexpected.begin(), unexpected.end(), by_layer);
    const bool act_ok = c.hidden_act.empty() || c.hidden_act == F.activation;
    if (family_of(c) != &F || !missing.empty() || !unexpected.empty() || !act_ok || L <= 0) {
        std::string msg = "not a Llama checkpoint this engine can run: " + ck.files()[0]->path();
        if (c.from_file) msg += " (architecture " + c.architecture_str() + ")";
        if (L <= 0) msg += "; no model.layers.N tensors";
        if (!act_ok) msg += "; hidden_act " + c.hidden_act + " (Llama uses silu)";
        if (!missing.empty()) msg += format("; missing %zu tensors: ", missing.size()) + compact_names(missing);
        if (!unexpected.empty())
            msg += format("; unexpected %zu tensors: ", unexpected.size()) + compact_names(unexpected);
        fail(VT_STATUS_UNSUPPORTED, "%s", msg.c_str());
    }
    if (!bad_dtype.empty()) {
        std::string list;
        for (size_t i = 0; i < bad_dtype.size() && i < 8; ++i) list += (i ? ", " : "") + bad_dtype[i];
        if (bad_dtype.size() > 8) list += format(", ... (%zu more)", bad_dtype.size() - 8);
        fail(VT_STATUS_UNSUPPORTED, "unsupported weight dtype (weights must be BF16, F16 or F32): %s", list.c_str());
    }

    // Resolve what config.json did not say from the shapes (TinyLlama defaults otherwise).
    const TensorView* emb = ck.find(F.embed);
    const TensorView* q0 = ck.find(layer_name(0, T_Q));
    const TensorView* k0 = ck.find(layer_name(0, T_K));
    const TensorView* g0 = ck.find(layer_name(0, T_GATE));
    std::vector<std::string> problems;
    auto dim = [](const TensorView* t, size_t i) -> int64_t { return t->shape.size() == 2 ? t->shape[i] : -1; };
    if (c.hidden_size < 0) c.hidden_size = dim(emb, 1);
    if (c.vocab_size < 0) c.vocab_size = dim(emb, 0);
    if (c.head_dim < 0) {
        if (c.num_heads > 0 && c.hidden_size > 0) {
            if (c.hidden_size % c.num_heads != 0)
                fail(VT_STATUS_FORMAT_ERROR, "%s: hidden_size %lld is not a multiple of num_attention_heads %lld "
                     "and there is no head_dim", c.path.c_str(), (long long)c.hidden_size, (long long)c.num_heads);
            c.head_dim = c.hidden_size / c.num_heads;
        } else {
            c.head_dim = F.default_head_dim;
        }
    }
    if (c.num_heads < 0) c.num_heads = dim(q0, 0) > 0 && dim(q0, 0) % c.head_dim == 0 ? dim(q0, 0) / c.head_dim : -1;
    if (c.num_kv_heads < 0) {
        if (c.from_file) c.num_kv_heads = c.num_heads;  // transformers' default
        else c.num_kv_heads = dim(k0, 0) > 0 && dim(k0, 0) % c.head_dim == 0 ? dim(k0, 0) / c.head_dim : -1;
    }
    if (c.intermediate_size < 0) c.intermediate_size = dim(g0, 0);
    if (c.rms_norm_eps < 0) c.rms_norm_eps = c.from_file ? F.default_eps_with_config : F.default_eps_without_config;
    if (c.rope_theta < 0) c.rope_theta = F.default_rope_theta;
    if (c.max_position_embeddings < 0) c.max_position_embeddings = F.default_max_positions;
    c.num_layers = L;
    const std::string src = c.from_file ? c.path : "the tensor shapes (no config.json)";
    if (c.hidden_size <= 0 || c.vocab_size <= 0)
        fail(VT_STATUS_FORMAT_ERROR, "%s in %s is %s, expected [vocab_size, hidden_size]", F.embed,
             ck.file_of(*emb).c_str(), emb->shape_str().c_str());
    if (c.num_heads <= 0 || c.num_kv_heads <= 0 || c.intermediate_size <= 0)
        fail(VT_STATUS_FORMAT_ERROR, "cannot infer the attention heads / MLP size from %s (q_proj %s, k_proj %s, "
             "gate_proj %s with head_dim %lld)", src.c_str(), q0->shape_str().c_str(), k0->shape_str().c_str(),
             g0->shape_str().c_str(), (long long)c.head_dim);
    if (c.head_dim % 2 != 0)
        fail(VT_STATUS_FORMAT_ERROR, "%s: head_dim %lld must be even (RoPE rotates pairs)", src.c_str(),
             (long long)c.head_dim);
    if (c.head_dim > 512)
        fail(VT_STATUS_UNSUPPORTED, "%s: head_dim %lld is larger than the 512 this engine supports", src.c_str(),
             (long long)c.head_dim);
    if (c.num_heads % c.num_kv_heads != 0)
        fail(VT_STATUS_FORMAT_ERROR, "%s: num_attention_heads %lld is not a multiple of num_key_value_heads %lld",
             src.c_str(), (long long)c.num_heads, (long long)c.num_kv_heads);

    // Every shape against the config.
    const int64_t H = c.hidden_size, I = c.intermediate_size, V = c.vocab_size;
    const int64_t QD = c.num_heads * c.head_dim, KVD = c.num_kv_heads * c.head_dim;
    auto want = [&](const std::string& name, std::vector<int64_t> shape) {
        const TensorView* t = ck.find(name);
        if (t->shape != shape)
            problems.push_back(name + " is " + t->shape_str() + ", expected " + shape_str(shape));
    };
    want(F.embed, {V, H});
    want(F.final_norm, {H});
    if (!tied) want(F.lm_head, {V, H});
    for (int64_t l = 0; l < L; ++l) {
        want(layer_name(l, T_Q), {QD, H});
        want(layer_name(l, T_K), {KVD, H});
        want(layer_name(l, T_V), {KVD, H});
        want(layer_name(l, T_O), {H, QD});
        want(layer_name(l, T_GATE), {I, H});
        want(layer_name(l, T_UP), {I, H});
        want(layer_name(l, T_DOWN), {H, I});
        want(layer_name(l, T_ATTN_NORM), {H});
        want(layer_name(l, T_MLP_NORM), {H});
    }
    if (!problems.empty()) {
        std::string list;
        for (size_t i = 0; i < problems.size() && i < 8; ++i) list += (i ? "; " : "") + problems[i];
        if (problems.size() > 8) list += format("; ... (%zu more)", problems.size() - 8);
        fail(VT_STATUS_FORMAT_ERROR,
             "tensor shapes in %s do not match %s (hidden_size %lld, intermediate_size %lld, vocab_size %lld, "
             "num_attention_heads %lld, num_key_value_heads %lld, head_dim %lld): %s",
             ck.files()[0]->path().c_str(), src.c_str(), (long long)H, (long long)I, (long long)V,
             (long long)c.num_heads, (long long)c.num_kv_heads, (long long)c.head_dim, list.c_str());
    }
    *file_layers = L;
}

}  // namespace

}  // namespace vt

// ---- vt_model ---------------------------------------------------------------------------

void vt::ModelWeights::embed_row(int32_t token, float* out) const {
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
        drop(w.o);
        drop(w.gate);
        drop(w.up);
        drop(w.down);
    }
    drop(m.lm_head);
    return freed;
}

std::unique_ptr<vt_model> load_model(const char* path, const vt_model_options& opt) {
    check_options(opt);
    std::unique_ptr<Checkpoint> ck = Checkpoint::open(path);
    LlamaConfig cfg = read_config(ck->dir());
    int64_t file_layers = 0;
    check_and_resolve(*ck, cfg, &file_layers);

    auto m = std::make_unique<vt_model>();
    if (opt.num_layers > file_layers)
        fail(VT_STATUS_INVALID_ARGUMENT, "num_layers %d is more than the %lld blocks of the checkpoint", opt.num_layers,
             (long long)file_layers);
    m->file_layers = file_layers;
    cfg.num_layers = opt.num_layers > 0 ? opt.num_layers : file_layers;
    m->format = vt_format(opt.weight_format);
    const bool blocked = m->format == VT_FORMAT_INT8_BLOCKED || m->format == VT_FORMAT_FP8_BLOCKED;
    m->block_size = blocked ? (opt.block_size ? opt.block_size : default_block_size(m->format)) : 0;
    m->device = VT_DEVICE_CPU;
    m->max_seq_len = opt.max_seq_len > 0 ? opt.max_seq_len : cfg.max_position_embeddings;
    m->max_seq_len = std::min<int64_t>(m->max_seq_len, int64_t(1) << 24);
    m->cfg = cfg;
    m->inv_freq = ops::rope_inv_freq(cfg);

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

    Loader ld(*ck, opt);
    const TensorView& emb = ld.tensor(F.embed);
    int64_t total = int64_t(emb.nbytes) + int64_t(ld.tensor(F.final_norm).nbytes);
    if (!tied) total += int64_t(ld.tensor(F.lm_head).nbytes);
    for (int64_t l = 0; l < L; ++l)
        for (int k = 0; k < T_COUNT; ++k) total += int64_t(ld.tensor(layer_name(l, k)).nbytes);
    ld.set_total(total);
    ld.progress(0);

    // Embedding table, kept in its stored dtype (exact row lookups).
    m->embed_dtype = emb.dtype;
    m->embed.allocate(emb.nbytes);
    copy_parallel(m->embed.data(), emb.data, emb.nbytes);
    ld.check_finite(emb, m->embed.data(), emb.dtype);
    ld.progress(int64_t(emb.nbytes));

    m->layers.resize(size_t(L));
    for (int64_t l = 0; l < L; ++l) {
        LayerWeights& w = m->layers[size_t(l)];
        auto t = [&](int which) -> const TensorView& { return ld.tensor(layer_name(l, which)); };
        w.attn_norm = ld.to_f32_vec(t(T_ATTN_NORM));
        w.mlp_norm = ld.to_f32_vec(t(T_MLP_NORM));
        ld.progress(int64_t(t(T_ATTN_NORM).nbytes + t(T_MLP_NORM).nbytes));
        w.qkv = ld.pack_concat({&t(T_Q), &t(T_K), &t(T_V)}, m->format, m->block_size);
        ld.progress(int64_t(t(T_Q).nbytes + t(T_K).nbytes + t(T_V).nbytes));
        w.o = ld.pack_tensor(t(T_O), m->format, m->block_size);
        ld.progress(int64_t(t(T_O).nbytes));
        w.gate = ld.pack_tensor(t(T_GATE), m->format, m->block_size);
        ld.progress(int64_t(t(T_GATE).nbytes));
        w.up = ld.pack_tensor(t(T_UP), m->format, m->block_size);
        ld.progress(int64_t(t(T_UP).nbytes));
        w.down = ld.pack_tensor(t(T_DOWN), m->format, m->block_size);
        ld.progress(int64_t(t(T_DOWN).nbytes));
    }
    const TensorView& norm = ld.tensor(F.final_norm);
    m->final_norm = ld.to_f32_vec(norm);
    ld.progress(int64_t(norm.nbytes));
    if (tied) {
        m->lm_head = ld.pack(std::string("lm_head (tied to ") + F.embed + ")", m->embed.data(), m->embed_dtype,
                             cfg.vocab_size, H, head_format, head_block);
    } else {
        const TensorView& head = ld.tensor(F.lm_head);
        m->lm_head = ld.pack_tensor(head, head_format, head_block);
        ld.progress(int64_t(head.nbytes));
    }

    int64_t wb = m->lm_head->nbytes() + int64_t(m->final_norm.size() * sizeof(float));
    for (const auto& w : m->layers) {
        wb += w.qkv->nbytes() + w.o->nbytes() + w.gate->nbytes() + w.up->nbytes() + w.down->nbytes();
        wb += int64_t((w.attn_norm.size() + w.mlp_norm.size()) * sizeof(float));
    }
    m->weight_bytes = wb;
    m->total_bytes = wb + int64_t(m->embed.size()) + int64_t(m->inv_freq.size() * sizeof(float)) +
                     int64_t(sizeof(vt_model));

    // CUDA: explicitly asked for, or AUTO with a usable device. AUTO falls back to the CPU
    // when the device cannot take this model (unsupported shape, not enough memory).
    const bool want_cuda = opt.device == VT_DEVICE_CUDA ||
                           (opt.device == VT_DEVICE_AUTO && cuda_device_usable(opt.device_index, nullptr));
    if (want_cuda) {
        try {
            m->backend = cuda_backend(*m, opt.device_index);
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
    if (!m->backend) m->backend = cpu_backend(*m);
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
    r.weight_bytes = m.weight_bytes;
    r.total_bytes = m.total_bytes + m.backend->device_bytes();
    *info = r;
}

}  // namespace vt

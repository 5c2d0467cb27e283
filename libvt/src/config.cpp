#include "config.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <map>
#include <set>

#include "common.h"
#include "family.h"
#include "json.h"
#include "ops/rope.h"
#include "safetensors.h"

namespace vt {

namespace {

constexpr size_t kMaxConfigBytes = size_t(16) << 20;
constexpr size_t kMaxTokenizerBytes = size_t(256) << 20;  // tokenizer.json: ~9 MB for Llama 3, 33 MB for Gemma
// Values in tokenizer.json (config files: json::ParseOptions's 4M): a vocabulary entry is one,
// a merge one or three; Gemma 3's 262k vocabulary and its merges make ~2M. At the limit the
// document costs <= 56 bytes a value (~450 MB) besides the file's text.
constexpr size_t kMaxTokenizerValues = size_t(1) << 23;
constexpr int64_t kMaxDim = int64_t(1) << 24;  // no real model has a dimension this large

std::string describe(const json::Value& v) {
    switch (v.type) {
        case json::Type::Null: return "null";
        case json::Type::Bool: return v.b ? "true" : "false";
        case json::Type::Int: return std::to_string(v.i);
        case json::Type::Double: return format("%g", v.d);
        case json::Type::String: return "\"" + (v.s.size() > 40 ? v.s.substr(0, 40) + "..." : std::string(v.s)) + "\"";
        case json::Type::Array: return "an array";
        case json::Type::Object: return "an object";
    }
    return "?";
}

class Reader {
public:
    Reader(const std::string& path, const json::Value& root) : path_(path), root_(root) {}

    [[noreturn]] void bad(const char* field, const json::Value& v, const char* want) const {
        fail(VT_STATUS_FORMAT_ERROR, "%s: field \"%s\" must be %s, got %s", path_.c_str(), field, want,
             describe(v).c_str());
    }

    const json::Value* get(const json::Value& obj, const char* key) const {
        const json::Value* v = obj.find(key);
        return (v && !v->is_null()) ? v : nullptr;
    }

    // An integer field (integral doubles such as 4096.0 accepted) in [lo, hi]; -1 if absent.
    int64_t integer(const json::Value& obj, const char* key, int64_t lo, int64_t hi, const char* field = nullptr) const {
        const json::Value* v = get(obj, key);
        if (!v) return -1;
        const char* name = field ? field : key;
        int64_t x;
        if (v->type == json::Type::Int) x = v->i;
        else if (v->type == json::Type::Double && std::floor(v->d) == v->d && std::fabs(v->d) < 9e15) x = int64_t(v->d);
        else bad(name, *v, format("an integer in [%lld, %lld]", (long long)lo, (long long)hi).c_str());
        if (x < lo || x > hi) bad(name, *v, format("an integer in [%lld, %lld]", (long long)lo, (long long)hi).c_str());
        return x;
    }

    // An integer field in [lo, hi], or a list of them (HunYuan MoE's per-layer fields: the values
    // go to *per_layer, the first is returned; an empty list is refused); -1 if absent.
    int64_t integer_or_list(const json::Value& obj, const char* key, int64_t lo, int64_t hi,
                            std::vector<int64_t>* per_layer) const {
        const json::Value* v = get(obj, key);
        if (!v || !v->is_array()) return integer(obj, key, lo, hi);
        const std::string want = format("an integer in [%lld, %lld] or a list of them", (long long)lo, (long long)hi);
        if (v->arr.empty() || v->arr.size() > 100000) bad(key, *v, want.c_str());
        for (const auto& e : v->arr) {
            const bool whole = e.type == json::Type::Int ||
                               (e.type == json::Type::Double && std::floor(e.d) == e.d && std::fabs(e.d) < 9e15);
            const int64_t x = e.type == json::Type::Int ? e.i : whole ? int64_t(e.d) : 0;
            if (!whole || x < lo || x > hi) bad(key, *v, want.c_str());
            per_layer->push_back(x);
        }
        return per_layer->front();
    }

    // A positive finite number; -1 if absent.
    double positive(const json::Value& obj, const char* key, const char* field = nullptr) const {
        const json::Value* v = get(obj, key);
        if (!v) return -1;
        if (!v->is_number() || !(v->d > 0) || !std::isfinite(v->d)) bad(field ? field : key, *v, "a positive number");
        return v->d;
    }

    int boolean(const json::Value& obj, const char* key) const {
        const json::Value* v = get(obj, key);
        if (!v) return -1;
        if (v->type != json::Type::Bool) bad(key, *v, "true or false");
        return v->b ? 1 : 0;
    }

    std::string string(const json::Value& obj, const char* key) const {
        const json::Value* v = get(obj, key);
        if (!v) return std::string();
        if (!v->is_string()) bad(key, *v, "a string");
        return v->s;
    }

    // An int, a list of ints, or null -> appended to out (no repeats, at most VT_MAX_EOS ids
    // in all: vt_model_info carries that many, and the C and Python paths stop on the same set).
    void token_ids(const json::Value& obj, const char* key, std::vector<int32_t>& out) const {
        const json::Value* v = get(obj, key);
        if (!v) return;
        auto add = [&](const json::Value& e) {
            if (e.type != json::Type::Int || e.i < 0 || e.i > INT32_MAX)
                bad(key, *v, "a token id or a list of token ids");
            int32_t id = int32_t(e.i);
            if (std::find(out.begin(), out.end(), id) != out.end()) return;  // out stays <= VT_MAX_EOS long
            if (out.size() >= VT_MAX_EOS)
                fail(VT_STATUS_UNSUPPORTED, "%s: %s lists more than %d distinct token ids (libvt stops on at most %d)",
                     path_.c_str(), key, VT_MAX_EOS, VT_MAX_EOS);
            out.push_back(id);
        };
        if (v->is_array()) {
            for (const auto& e : v->arr) add(e);
        } else {
            add(*v);
        }
    }

    const std::string& path() const { return path_; }
    const json::Value& root() const { return root_; }

private:
    const std::string& path_;
    const json::Value& root_;
};

json::Document parse_file(const std::string& path) {
    const std::string text = read_file(path, kMaxConfigBytes);
    json::Document doc = json::parse(text.data(), text.size(), path);
    if (!doc.root().is_object())
        fail(VT_STATUS_FORMAT_ERROR, "%s: expected a JSON object at the top level", path.c_str());
    return doc;
}

void read_rope(const Reader& r, const json::Value& rs, const char* field, LlamaConfig& c) {
    if (!rs.is_object()) r.bad(field, rs, "an object or null");
    std::string type;
    for (const char* key : {"rope_type", "type"}) {
        const json::Value* t = r.get(rs, key);
        if (!t) continue;
        if (!t->is_string()) r.bad(format("%s.%s", field, key).c_str(), *t, "a string");
        type = t->s;
        break;
    }
    const std::string f = field;
    c.rope.field = f;
    c.rope.deepseek_yarn = type == "deepseek_yarn";  // (the last dict read decides, as for its other keys)
    if (type.empty() || type == "default") {
        c.rope.kind = RopeScaling::NONE;
    } else if (type == "proportional") {  // (factor: 1 when left out)
        c.rope.kind = RopeScaling::PROPORTIONAL;
        const double factor = r.positive(rs, "factor", (f + ".factor").c_str());
        c.rope.factor = factor > 0 ? factor : 1.0;
    } else if (type == "linear") {
        c.rope.kind = RopeScaling::LINEAR;
        double factor = r.positive(rs, "factor", (f + ".factor").c_str());
        if (factor < 0) fail(VT_STATUS_FORMAT_ERROR, "%s: %s.factor is missing", r.path().c_str(), field);
        c.rope.factor = factor;
    } else if (type == "llama3") {
        c.rope.kind = RopeScaling::LLAMA3;
        const char* need[] = {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"};
        for (const char* k : need)
            if (!r.get(rs, k)) fail(VT_STATUS_FORMAT_ERROR, "%s: %s.%s is missing (rope type llama3)", r.path().c_str(), field, k);
        c.rope.factor = r.positive(rs, "factor", (f + ".factor").c_str());
        c.rope.low_freq_factor = r.positive(rs, "low_freq_factor", (f + ".low_freq_factor").c_str());
        c.rope.high_freq_factor = r.positive(rs, "high_freq_factor", (f + ".high_freq_factor").c_str());
        c.rope.original_max_position_embeddings =
            r.integer(rs, "original_max_position_embeddings", 1, kMaxDim, (f + ".original_max_position_embeddings").c_str());
        if (c.rope.high_freq_factor == c.rope.low_freq_factor)
            fail(VT_STATUS_FORMAT_ERROR, "%s: %s.high_freq_factor must differ from low_freq_factor (both %g)",
                 r.path().c_str(), field, c.rope.low_freq_factor);
    } else if (type == "yarn" || type == "deepseek_yarn") {
        c.rope.kind = RopeScaling::YARN;
        c.rope.factor = r.positive(rs, "factor", (f + ".factor").c_str());  // -1: max_position / original
        c.rope.original_max_position_embeddings =
            r.integer(rs, "original_max_position_embeddings", 1, kMaxDim, (f + ".original_max_position_embeddings").c_str());
        c.rope.attention_factor = r.positive(rs, "attention_factor", (f + ".attention_factor").c_str());
        const double bf = r.positive(rs, "beta_fast", (f + ".beta_fast").c_str());
        const double bs = r.positive(rs, "beta_slow", (f + ".beta_slow").c_str());
        c.rope.beta_fast = bf > 0 ? bf : 32;
        c.rope.beta_slow = bs > 0 ? bs : 1;
        c.rope.mscale = std::max(0.0, r.positive(rs, "mscale", (f + ".mscale").c_str()));
        c.rope.mscale_all_dim = std::max(0.0, r.positive(rs, "mscale_all_dim", (f + ".mscale_all_dim").c_str()));
        if (const json::Value* t = r.get(rs, "truncate")) {
            if (t->type != json::Type::Bool) r.bad((f + ".truncate").c_str(), *t, "true or false");
            c.rope.truncate = t->b;
        }
    } else if (type == "longrope" || type == "su") {
        c.rope.kind = RopeScaling::LONGROPE;
        c.rope.factor = r.positive(rs, "factor", (f + ".factor").c_str());
        c.rope.original_max_position_embeddings =
            r.integer(rs, "original_max_position_embeddings", 1, kMaxDim, (f + ".original_max_position_embeddings").c_str());
        c.rope.attention_factor = r.positive(rs, "attention_factor", (f + ".attention_factor").c_str());
        c.rope.short_mscale = r.positive(rs, "short_mscale", (f + ".short_mscale").c_str());  // (PhiMoE's)
        c.rope.long_mscale = r.positive(rs, "long_mscale", (f + ".long_mscale").c_str());
        for (auto [key, out] : {std::pair<const char*, std::vector<double>*>{"long_factor", &c.rope.long_factor},
                                {"short_factor", &c.rope.short_factor}}) {
            const json::Value* v = r.get(rs, key);
            const std::string name = f + "." + key;
            if (!v) fail(VT_STATUS_FORMAT_ERROR, "%s: %s is missing (rope type longrope)", r.path().c_str(), name.c_str());
            if (!v->is_array() || v->arr.size() > 4096) r.bad(name.c_str(), *v, "a list of positive numbers");
            for (const auto& e : v->arr) {
                if (!e.is_number() || !(e.d > 0) || !std::isfinite(e.d)) r.bad(name.c_str(), *v, "a list of positive numbers");
                out->push_back(e.d);
            }
        }
    } else if (type == "dynamic") {
        // transformers' dynamic NTK by factor, or (HunYuan, with an alpha) a fixed NTK base:
        // which one is the family's (resolve_features). The factor is checked there.
        c.rope.kind = RopeScaling::DYNAMIC;
        c.rope.ntk_alpha = std::max(0.0, r.positive(rs, "alpha", (f + ".alpha").c_str()));
        c.rope.factor = std::nan("");  // (absent)
        if (const json::Value* fv = r.get(rs, "factor")) {
            if (!fv->is_number() || !std::isfinite(fv->d)) r.bad((f + ".factor").c_str(), *fv, "a number");
            c.rope.factor = fv->d;
        }
    } else {
        fail(VT_STATUS_UNSUPPORTED,
             "%s: %s type \"%s\" is not supported (supported: default, linear, llama3, yarn, longrope, proportional, "
             "dynamic)", r.path().c_str(), field, type.c_str());
    }
    if (const json::Value* b = r.get(rs, "llama_4_scaling_beta")) {  // (Ministral 3, Mistral 4)
        if (!b->is_number() || !(b->d >= 0) || !std::isfinite(float(b->d)))
            r.bad((f + ".llama_4_scaling_beta").c_str(), *b, "a finite number >= 0");
        c.rope.llama4_beta = b->d;
        c.rope.llama4_orig = r.integer(rs, "original_max_position_embeddings", 1, kMaxDim,
                                       (f + ".original_max_position_embeddings").c_str());
    }
    if (const json::Value* prf = r.get(rs, "partial_rotary_factor")) {
        if (!prf->is_number() || !(prf->d > 0) || !(prf->d <= 1))
            r.bad((f + ".partial_rotary_factor").c_str(), *prf, "a number in (0, 1]");
        c.partial_rotary_factor = prf->d;
        c.partial_rotary_given = true;
    }
    // transformers >= 5 keeps rope_theta inside rope_parameters.
    double theta = r.positive(rs, "rope_theta", (f + ".rope_theta").c_str());
    if (theta > 0) c.rope_theta = theta;
}

// ---- Names ------------------------------------------------------------------------------

// "model.layers.12.mlp.fc1.weight" -> layer 12, rest "mlp.fc1.weight" (prefix: the family's
// layer_prefix, "model.layers." for most, "gpt_neox.layers." for GPT-NeoX).
bool split_layer_name(const std::string& name, const char* prefix, int64_t* layer, std::string* rest) {
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
std::string compact_names(const std::vector<std::string>& names, const char* prefix, size_t max_items = 12) {
    std::map<std::string, std::vector<int64_t>> per_layer;  // rest -> layers
    std::vector<std::string> items;
    std::vector<std::string> order;  // first appearance of each item
    for (const auto& n : names) {
        int64_t layer;
        std::string rest;
        if (split_layer_name(n, prefix, &layer, &rest)) {
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
        items.push_back(prefix + layers + "." + rest);
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

// ---- Structure check and config resolution -----------------------------------------------

// "x.weight" -> "x.bias".
std::string bias_name(const std::string& weight) { return weight.substr(0, weight.size() - std::strlen("weight")) + "bias"; }

// Cohere 2 MoE: whether layer l's MLP is dense (mlp_layer_types, else the first
// first_k_dense_replace, 0 when left out, as Cohere2MoeConfig).
bool cohere_dense_layer(const LlamaConfig& c, int64_t l) {
    if (!c.mlp_layer_types.empty()) return size_t(l) < c.mlp_layer_types.size() && c.mlp_layer_types[size_t(l)] == "dense";
    return l < c.first_k_dense_field;
}

// The family's features for this config (LlamaConfig's qkv_bias .. layer_window) from
// config.json's fields, for L blocks.
void resolve_features(const ModelFamily& F, LlamaConfig& c, int64_t L) {
    c.family = &F;
    // (Cohere2MoeConfig: RMSNorms instead of the LayerNorms when rms_norm_eps is not null)
    if (F.cohere_moe && c.rms_norm_eps > 0)
        fail(VT_STATUS_UNSUPPORTED, "%s: rms_norm_eps %g is not supported for %s (RMSNorms in place of its LayerNorms; "
             "rms_norm_eps null: the LayerNorms with layer_norm_eps)", c.path.c_str(), c.rms_norm_eps, F.name);
    if (F.sigmoid_router == ModelFamily::ROUTER_HY_V3 && c.mlp_bias_field == 1)  // (HYV3MLP: its dense and shared MLPs' biases)
        fail(VT_STATUS_UNSUPPORTED, "%s: mlp_bias true is not supported for %s (biases on its dense and shared MLPs)",
             c.path.c_str(), F.name);
    if (F.moe_layer_range && c.use_bias == 1)  // (its shared experts' and dense MLPs' biases)
        fail(VT_STATUS_UNSUPPORTED, "%s: use_bias true is not supported for %s (biases on the shared experts)",
             c.path.c_str(), F.name);
    const bool use_bias = (F.attn_bias == ModelFamily::CONFIG_USE_BIAS && c.use_bias != 0) ||
                          (F.attn_bias == ModelFamily::CONFIG_USE_BIAS_OFF && c.use_bias == 1);
    // (GPT-NeoX: attention_bias true when left out)
    const bool attention_bias = c.attention_bias_field == 1 || (c.attention_bias_field < 0 && F.bias_by_default);
    c.qkv_bias = F.attn_bias == ModelFamily::QKV_BIAS || F.attn_bias == ModelFamily::ALL_BIAS ||
                 (F.attn_bias == ModelFamily::CONFIG_ATTENTION_BIAS && attention_bias) ||
                 (F.attn_bias == ModelFamily::CONFIG_QKV_BIAS && c.use_qkv_bias == 1) ||
                 (F.attn_bias == ModelFamily::CONFIG_QKV_OUT_BIAS &&
                  attention_bias) ||
                 use_bias;
    c.o_bias = F.attn_bias == ModelFamily::ALL_BIAS || F.attn_bias == ModelFamily::OUT_BIAS || (F.attn_bias == ModelFamily::CONFIG_ATTENTION_BIAS && attention_bias) ||
               (F.attn_bias == ModelFamily::CONFIG_QKV_OUT_BIAS && c.attention_out_bias == 1) || use_bias;
    // (Jais2: mlp_bias true when left out)
    const bool mlp_bias = c.mlp_bias_field == 1 || (c.mlp_bias_field < 0 && F.mlp_bias_by_default);
    c.mlp_bias = (F.config_mlp_bias && mlp_bias) || use_bias || F.mlp_bias_always;
    c.qk_norm = F.qk_norm || (F.qk_norm_field && c.use_qk_norm == 1);
    auto bias_of = [](const std::string& w) { return w.substr(0, w.size() - std::strlen("weight")) + "bias"; };
    if (F.norm == ModelFamily::LAYER_NORM) {  // (Phi, StableLM) eps -1: the family's default
        if (!F.sparsemixer) c.rms_norm_eps = c.layer_norm_eps;  // (PhimoeConfig: its LayerNorms' eps is rms_norm_eps)
        if (!F.norm_without_bias) c.final_norm_bias = bias_of(F.final_norm);
        if (c.qk_layernorm == 1)
            fail(VT_STATUS_UNSUPPORTED, "%s: qk_layernorm true is not supported for %s (LayerNorm of q and k)",
                 c.path.c_str(), F.name);
        c.parallel_two_norms = F.parallel_residual_field && c.use_parallel_residual != 0;  // (GPT-NeoX)
        if (c.use_parallel_residual == 1 && !F.parallel_residual_field)
            fail(VT_STATUS_UNSUPPORTED, "%s: use_parallel_residual true is not supported for %s (its sequential "
                 "block only)", c.path.c_str(), F.name);
    }
    if (c.rope.kind == RopeScaling::DYNAMIC) {
        if (F.ntk_alpha && c.rope.ntk_alpha > 0) {
            // HunYuan's "dynamic" with an alpha: a fixed NTK base (check_and_resolve stretches
            // rope_theta), the default type's frequencies otherwise
            c.rope.kind = RopeScaling::NONE;
            c.rope.factor = 1.0;
        } else {
            // transformers' dynamic NTK (an alpha, outside HunYuan, is not read)
            c.rope.ntk_alpha = 0;
            const std::string ff = c.rope.field + ".factor";
            if (std::isnan(c.rope.factor))
                fail(VT_STATUS_FORMAT_ERROR, "%s: %s is missing (rope type dynamic)", c.path.c_str(), ff.c_str());
            if (!(c.rope.factor > 1))
                fail(VT_STATUS_UNSUPPORTED, "%s: %s = %g is not supported (rope type dynamic needs a factor above 1)",
                     c.path.c_str(), ff.c_str(), c.rope.factor);
        }
    }
    if (F.logit_scale) {  // CohereConfig's default 0.0625
        c.logit_scale = c.logit_scale_field > 0 ? c.logit_scale_field : 0.0625;
        if (c.use_qk_norm == 1)
            fail(VT_STATUS_UNSUPPORTED, "%s: use_qk_norm true is not supported for %s (a LayerNorm of q and k with "
                 "weights per head)", c.path.c_str(), F.name);
    }
    if (F.phi) {  // biases on the MLP's linears and lm_head (Phi's attention: ALL_BIAS)
        c.mlp_bias = true;
        c.lm_head_bias = bias_of(F.lm_head);
    }
    if (F.sparsemixer && c.lm_head_bias_field == 1) c.lm_head_bias = bias_of(F.lm_head);  // (PhiMoE's lm_head_bias)
    if (F.gemma_block()) {  // Gemma2Config's defaults: 256, 50, 30 (Gemma3TextConfig's: 256, none, none)
        if (c.query_pre_attn_scalar < 0) c.query_pre_attn_scalar = 256;
        c.attn_softcap = c.attn_logit_softcapping < 0 ? F.default_attn_softcap : c.attn_logit_softcapping;
        c.final_softcap = c.final_logit_softcapping < 0 ? F.default_final_softcap : c.final_logit_softcapping;
        if (c.use_bidirectional_attention == 1)
            fail(VT_STATUS_UNSUPPORTED, "%s: use_bidirectional_attention true is not supported (causal decoding only)",
                 c.path.c_str());
    } else if (F.default_final_softcap > 0) {  // (NanoChat: final_logit_softcapping alone, 15 when left out)
        c.final_softcap = c.final_logit_softcapping < 0 ? F.default_final_softcap : c.final_logit_softcapping;
    }
    // Gemma3TextConfig's default; OLMo 3's sliding layers default to rope_theta (Olmo3Config)
    if (F.local_rope && c.rope_local_theta < 0)  // (LFM3: Lfm3Config's sliding_attention default)
        c.rope_local_theta = F.gemma != ModelFamily::NOT_GEMMA || F.short_conv == 3 || is_model_type(F, {"mellum"})
                             ? 10000.0 : c.rope_theta;
    if (F.multipliers) {  // GraniteConfig's defaults: 1 each
        c.embed_scale = float(c.embedding_multiplier > 0 ? c.embedding_multiplier : 1.0);
        c.attn_scale = c.attention_multiplier > 0 ? c.attention_multiplier : 1.0;
        c.residual_scale = float(c.residual_multiplier > 0 ? c.residual_multiplier : 1.0);
        c.logits_scaling = c.logits_scaling_field > 0 ? c.logits_scaling_field : 1.0;
    }
    if (F.multipliers == 2) {  // HyperCLOVAXConfig: logits · logits_scaling; scores · 1/sqrt(head_dim) by default
        c.attn_scale = c.attention_multiplier > 0 ? c.attention_multiplier : 0.0;  // (0: the engine's 1/sqrt(head_dim))
        c.logit_scale = c.logits_scaling;
        c.logits_scaling = 1.0;
    }
    // SmolLM3: no_rope_layers (1 = rotate), else every no_rope_layer_interval-th layer is NoPE.
    c.layer_nope.assign(size_t(std::max<int64_t>(L, 0)), 0);
    if (F.nope_layers) {
        if (!c.no_rope_layers.empty() && int64_t(c.no_rope_layers.size()) < L)
            fail(VT_STATUS_FORMAT_ERROR, "%s: no_rope_layers lists %zu layers, but the model has %lld", c.path.c_str(),
                 c.no_rope_layers.size(), (long long)L);
        const int64_t every = c.no_rope_layer_interval > 0 ? c.no_rope_layer_interval : 4;  // SmolLM3Config's
        for (int64_t l = 0; l < L; ++l)
            c.layer_nope[size_t(l)] = c.no_rope_layers.empty() ? (l + 1) % every == 0 : c.no_rope_layers[size_t(l)] == 0;
    }
    // GraniteSWA: layer_rope_theta, one base per layer; 0 = NoPE, the others' one base replaces
    // rope_theta (GraniteSWAModel builds a rotary embedding per distinct base, each with
    // rope_parameters' scaling).
    if (F.layer_rope_theta && !c.layer_rope_theta.empty()) {
        if (int64_t(c.layer_rope_theta.size()) < L)
            fail(VT_STATUS_FORMAT_ERROR, "%s: layer_rope_theta lists %zu layers, but the model has %lld", c.path.c_str(),
                 c.layer_rope_theta.size(), (long long)L);
        double base = 0;
        for (int64_t l = 0; l < L; ++l) {
            const double t = c.layer_rope_theta[size_t(l)];
            c.layer_nope[size_t(l)] = t == 0;
            if (t == 0 || t == base) continue;
            if (base != 0)
                fail(VT_STATUS_UNSUPPORTED, "%s: layer_rope_theta with two RoPE bases (%g and %g) is not supported for "
                     "%s (one base beside NoPE layers, 0)", c.path.c_str(), base, t, F.name);
            base = t;
        }
        if (base > 0) c.rope_theta = base;
    }
    if (F.attention_types) {  // GPT-Neo: its layer types and window_size (GPTNeoConfig's default 256)
        c.layer_types = c.attention_types;
        c.sliding_window = c.window_size > 0 ? c.window_size : F.default_window;
    }
    // Mellum (MellumConfig): layer_types all full and mlp_layer_types all sparse when left out; its
    // RoPE only in rope_parameters' per-layer-type sets (500000 full, 10000 sliding when there are
    // none) — a top-level rope_theta is not read by it, a single set fails in its rotary embedding,
    // and so does a sliding layer without a sliding_attention set.
    if (is_model_type(F, {"mellum"})) {
        if (c.layer_types.empty()) c.layer_types.assign(size_t(std::max<int64_t>(L, 0)), "full_attention");
        if (c.mlp_layer_types.empty()) c.mlp_layer_types.assign(size_t(std::max<int64_t>(L, 0)), "sparse");
        if (c.rope_theta_top > 0)
            fail(VT_STATUS_UNSUPPORTED, "%s: field \"rope_theta\" is not supported for %s (its config class does not "
                 "read it: the bases are rope_parameters.full_attention / sliding_attention's rope_theta)",
                 c.path.c_str(), F.name);
        if (c.rope_parameters_flat)
            fail(VT_STATUS_FORMAT_ERROR, "%s: field \"rope_parameters\" must hold one set per layer type "
                 "(\"full_attention\", \"sliding_attention\") for %s", c.path.c_str(), F.name);
        if (c.rope_by_layer_type && !c.rope_local_given)
            for (int64_t l = 0; l < L && size_t(l) < c.layer_types.size(); ++l)
                if (c.layer_types[size_t(l)] == "sliding_attention")
                    fail(VT_STATUS_FORMAT_ERROR, "%s: field \"rope_parameters\" has no \"sliding_attention\" set, but "
                         "layer %lld is sliding_attention", c.path.c_str(), (long long)l);
    }
    // Flint (FlintConfig): layer_types full when l < 2, l % 4 == 1 or the last, else sliding;
    // mlp_only_layers [0, 1] when left out or null
    if (is_model_type(F, {"flint"})) {
        if (c.layer_types.empty())
            for (int64_t l = 0; l < L; ++l)
                c.layer_types.push_back(l < 2 || l % 4 == 1 || l == L - 1 ? "full_attention" : "sliding_attention");
        if (!c.mlp_only_layers_given) c.mlp_only_layers = {0, 1};
    }
    // AFMoE: AfmoeConfig's layer_types default, every global_attn_every_n_layers-th layer (4) global
    // (sliding_window_pattern is not its field)
    if (F.sigmoid_router == ModelFamily::ROUTER_AFMOE) c.sliding_window_pattern = c.global_attn_every;
    // Kolibri 1: layer_types, else every 5th layer global (Kolibri1Config's; no sliding_window_pattern)
    if (F.sigmoid_router == ModelFamily::ROUTER_KOLIBRI1) c.sliding_window_pattern = -1;
    // Cohere 2 MoE: Cohere2MoeConfig's layer_types default, every prefix_dense_sliding_window_pattern-th
    // (1) of the first_k_dense_replace dense layers global, then every sliding_window_pattern-th (4),
    // counted from the first layer after them
    if (F.cohere_moe && c.layer_types.empty()) {
        if (c.sliding_window_pattern == 0)  // (its config class divides by it)
            fail(VT_STATUS_FORMAT_ERROR, "%s: field \"sliding_window_pattern\" must be an integer in [1, 100000], got 0",
                 c.path.c_str());
        const int64_t k = std::max<int64_t>(c.first_k_dense_field, 0);
        const int64_t pp = c.prefix_dense_pattern > 0 ? c.prefix_dense_pattern : 1;
        const int64_t P = c.sliding_window_pattern > 0 ? c.sliding_window_pattern : F.default_window_pattern;
        for (int64_t l = 0; l < L; ++l)
            c.layer_types.push_back((l < k ? (l + 1) % pp : (l - k + 1) % P) != 0 ? "sliding_attention" : "full_attention");
    }
    c.layer_window.assign(size_t(std::max<int64_t>(L, 0)), 0);
    // transformers' MistralConfig / Qwen2Config / Qwen3Config: sliding_window defaults to 4096
    // when config.json leaves it out (Phi3Config: none); null turns it off.
    const int64_t window = c.sliding_window < 0 ? F.default_window : c.sliding_window;
    if (F.window == ModelFamily::WINDOW_ALL_LAYERS ||
        (F.window == ModelFamily::WINDOW_TYPES_OR_ALL && c.layer_types.empty())) {
        for (auto& w : c.layer_window) w = window;
    } else if (F.window == ModelFamily::WINDOW_ALTERNATE && c.layer_types.empty()) {
        const int64_t P = c.sliding_window_pattern > 0 ? c.sliding_window_pattern : F.default_window_pattern;
        for (int64_t l = 0; l < L; ++l)
            if ((l + 1) % P != 0) c.layer_window[size_t(l)] = window;
    } else if (F.window == ModelFamily::WINDOW_TYPES_OR_FIRST && c.layer_types.empty()) {  // (CwmConfig's)
        for (int64_t l = 0; l < L; ++l)
            if (l % F.default_window_pattern != 0) c.layer_window[size_t(l)] = window;
    } else if ((F.window == ModelFamily::WINDOW_QWEN && c.use_sliding_window == 1 && window > 0) ||
               (F.window == ModelFamily::WINDOW_TYPES_OR_FROM && window > 0) ||
               F.window == ModelFamily::WINDOW_ALTERNATE || F.window == ModelFamily::WINDOW_TYPES_OR_ALL ||
               F.window == ModelFamily::WINDOW_TYPES_OR_FIRST) {
        if (!c.layer_types.empty()) {
            if (int64_t(c.layer_types.size()) < L)
                fail(VT_STATUS_FORMAT_ERROR, "%s: layer_types lists %zu layers, but the model has %lld",
                     c.path.c_str(), c.layer_types.size(), (long long)L);
            for (int64_t l = 0; l < L; ++l) {
                const std::string& t = c.layer_types[size_t(l)];
                if (t != "full_attention" && t != "sliding_attention")
                    fail(VT_STATUS_UNSUPPORTED, "%s: layer_types[%lld] \"%s\" is not supported for %s (full_attention, "
                         "sliding_attention)", c.path.c_str(), (long long)l, t.c_str(), F.name);
                if (t == "sliding_attention") c.layer_window[size_t(l)] = window;
            }
        } else if (F.nope_layers) {  // SmolLM3Config: the NoPE layers slide
            for (int64_t l = 0; l < L; ++l)
                if (c.layer_nope[size_t(l)]) c.layer_window[size_t(l)] = window;
        } else {
            // Qwen2Config's default; Dots1Config's
            const int64_t first = c.max_window_layers >= 0 ? c.max_window_layers
                                  : F.window == ModelFamily::WINDOW_TYPES_OR_FROM ? 62 : 28;
            for (int64_t l = first; l < L; ++l) c.layer_window[size_t(l)] = window;
        }
    }
    // GraniteSWA: transformers' sliding mask needs a window (sliding_window null with a sliding
    // layer raises there), so such a config is refused rather than run with full attention.
    // (AFMoE, Kolibri 1, Mellum, Flint: the same sliding mask)
    if ((F.sigmoid_router == ModelFamily::ROUTER_AFMOE || F.sigmoid_router == ModelFamily::ROUTER_KOLIBRI1 || is_model_type(F, {"mellum", "flint"})) && window == 0)
        for (int64_t l = 0; l < L; ++l)
            if (c.layer_types.empty() ? (l + 1) % (c.sliding_window_pattern > 0 ? c.sliding_window_pattern : F.default_window_pattern) != 0
                                      : c.layer_types[size_t(l)] == "sliding_attention")
                fail(VT_STATUS_UNSUPPORTED, "%s: sliding_window null (or 0) is not supported for %s with sliding "
                     "layers (layer %lld is sliding_attention)", c.path.c_str(), F.name, (long long)l);
    if (F.layer_rope_theta && window == 0)
        for (int64_t l = 0; l < L; ++l)
            if (c.layer_types.empty() ? l % F.default_window_pattern != 0 : c.layer_types[size_t(l)] == "sliding_attention")
                fail(VT_STATUS_UNSUPPORTED, "%s: sliding_window null (or 0) is not supported for %s with sliding "
                     "layers (layer %lld is sliding_attention)", c.path.c_str(), F.name, (long long)l);
    // LFM2 (Lfm2Config): which layers convolve — layer_types "conv", else every layer not in
    // full_attn_idxs, else none —, the kernel (conv_L_cache, default 3) and its biases
    // (conv_bias), the norms' eps (norm_eps: the class reads no rms_norm_eps), tie_embedding,
    // and the MLP's width as Lfm2MLP computes it from block_ff_dim (else intermediate_size):
    // int(2·I/3), then, with a multiplier (1.0 when left out, none when null), int(m·I)
    // rounded up to a multiple of block_multiple_of (256).
    if (F.llama4_attn_scale && (c.rope.llama4_beta < 0 || c.rope.llama4_orig < 0)) {  // (transformers: a TypeError)
        const bool none = c.rope_theta < 0 && c.rope.kind == RopeScaling::NONE && c.rope.llama4_beta < 0;
        fail(VT_STATUS_FORMAT_ERROR, "%s: %s \"llama_4_scaling_beta\" and \"original_max_position_embeddings\" "
             "(%s scales each query by 1 + beta · log(1 + floor(position / original_max_position_embeddings)))",
             c.path.c_str(), none ? "field \"rope_parameters\" is missing: it needs" : (c.rope.field + " needs").c_str(),
             F.name);
    }
    c.layer_conv.assign(size_t(std::max<int64_t>(L, 0)), 0);
    // GLM-4's sandwich norms; LFM3's unless use_sandwich_norm is false. LFM3's heads' output gate
    // unless use_attention_gate is.
    c.sandwich_norms = F.sandwich_norms && !(F.short_conv == 3 && c.use_sandwich_norm == 0) &&
                       !(F.multipliers == 2 && c.use_post_norm == 0);  // (HyperCLOVA X: use_post_norm)
    c.attn_gate = F.layer_tensors[T_ATTN_GATE] && !(F.short_conv == 3 && c.use_attention_gate == 0);
    c.attn_gate_per_dim = c.attn_gate && F.sigmoid_router == ModelFamily::ROUTER_AFMOE;  // (AFMoE: [num_heads · head_dim, H])
    if (F.short_conv == 3 && c.layer_types.empty())  // (Lfm3Config's default)
        for (int64_t l = 0; l < L; ++l)
            c.layer_types.push_back(l % 4 == 2 ? "full_attention" : l % 4 == 0 && l > 0 ? "sliding_attention" : "conv");
    if (F.short_conv) {
        if (!c.layer_types.empty()) {
            if (int64_t(c.layer_types.size()) < L)
                fail(VT_STATUS_FORMAT_ERROR, "%s: layer_types lists %zu layers, but the model has %lld",
                     c.path.c_str(), c.layer_types.size(), (long long)L);
            const bool sliding = F.short_conv == 3;  // (LFM3: sliding_window, 256 when left out, null: none)
            const int64_t w = c.sliding_window >= 0 ? c.sliding_window : 256;
            for (int64_t l = 0; l < L; ++l) {
                const std::string& t = c.layer_types[size_t(l)];
                if (t != "full_attention" && t != "conv" && !(sliding && t == "sliding_attention"))
                    fail(VT_STATUS_UNSUPPORTED, "%s: layer_types[%lld] \"%s\" is not supported for %s (full_attention, "
                         "%sconv)", c.path.c_str(), (long long)l, t.c_str(), F.name, sliding ? "sliding_attention, " : "");
                c.layer_conv[size_t(l)] = t == "conv";
                if (t == "sliding_attention") c.layer_window[size_t(l)] = w;
            }
        } else if (c.full_attn_given) {  // (an index past the last layer names none, as in transformers)
            std::fill(c.layer_conv.begin(), c.layer_conv.end(), uint8_t(1));
            for (int64_t i : c.full_attn_idxs)
                if (i < L) c.layer_conv[size_t(i)] = 0;
        }
        c.conv_kernel = c.conv_kernel_field > 0 ? c.conv_kernel_field : F.short_conv == 3 ? 7 : 3;
        c.conv_bias = c.conv_bias_field == 1;
        // (LFM3's config class maps rms_norm_eps onto norm_eps; LFM2's reads norm_eps only)
        const double eps = c.norm_eps_field > 0 ? c.norm_eps_field : F.short_conv == 3 ? c.rms_norm_eps : -1;
        c.rms_norm_eps = eps > 0 ? eps : F.default_eps_with_config;
        // (LFM3's config class pops neither tie_embedding nor block_ff_dim: they are not its fields)
        if (c.tie_embedding >= 0 && F.short_conv != 3) c.tie_word_embeddings = c.tie_embedding;
        else if (c.tie_word_embeddings < 0) c.tie_word_embeddings = 1;
        int64_t I = c.block_ff_dim > 0 ? c.block_ff_dim : c.intermediate_size > 0 ? c.intermediate_size : 12288;
        if (F.short_conv == 2) I = c.intermediate_size > 0 ? c.intermediate_size : 7168;  // (Lfm2MoeConfig: as it is)
        else if (F.short_conv == 3) I = c.intermediate_size > 0 ? c.intermediate_size : 7680;  // (Lfm3Config)
        else if (c.block_auto_adjust != 0) {
            I = int64_t(2.0 * double(I) / 3.0);
            if (c.block_ffn_multiplier != -2) {
                I = int64_t((c.block_ffn_multiplier > 0 ? c.block_ffn_multiplier : 1.0) * double(I));
                const int64_t mo = c.block_multiple_of > 0 ? c.block_multiple_of : 256;
                I = (I + mo - 1) / mo * mo;
            }
        }
        if (I <= 0)
            fail(VT_STATUS_FORMAT_ERROR, "%s: block_ff_dim / intermediate_size %lld leaves the MLP no width after "
                 "block_auto_adjust_ff_dim", c.path.c_str(),
                 (long long)(c.block_ff_dim > 0 ? c.block_ff_dim : c.intermediate_size));
        c.intermediate_size = I;
    }
    // GPT-2 lineage: learned positions, no layer rotates; scores unscaled when
    // scale_attn_weights is false.
    if (F.alibi) std::fill(c.layer_nope.begin(), c.layer_nope.end(), uint8_t(1));  // (Bloom: ALiBi, no RoPE)
    if (F.alibi == 2) {  // MPT: what transformers' MptForCausalLM computes, and nothing it does not
        auto refuse = [&](const char* field, const char* why) {
            fail(VT_STATUS_UNSUPPORTED, "%s: %s is not supported for %s (%s)", c.path.c_str(), field, F.name, why);
        };
        if (c.attn_alibi == 0) refuse("attn_config.alibi false", "positions without ALiBi");
        if (c.alibi_bias_max > 0 && c.alibi_bias_max != 8) refuse("attn_config.alibi_bias_max other than 8", "other slopes");
        if (c.qk_ln == 1) refuse("attn_config.qk_ln true", "LayerNorms of q and k");
        if (c.prefix_lm == 1) refuse("attn_config.prefix_lm true", "a bidirectional prefix");
        if (c.attn_uses_sequence_id == 1) refuse("attn_config.attn_uses_sequence_id true", "attention within sequence ids");
        if (c.no_bias == 0) refuse("no_bias false", "biases");
        if (c.logit_scale_field > 0) refuse("logit_scale", "scaled logits");
        if (c.softmax_scale > 0) c.attn_scale = c.softmax_scale;
    }
    if (F.alibi && c.apply_residual_connection_post_layernorm == 1)
        fail(VT_STATUS_UNSUPPORTED, "%s: apply_residual_connection_post_layernorm true is not supported for %s (the "
             "residual taken after the norms)", c.path.c_str(), F.name);
    if (F.pos_embed) {
        std::fill(c.layer_nope.begin(), c.layer_nope.end(), uint8_t(1));
        if (c.scale_attn_weights == 0) c.attn_scale = 1.0;
        if (c.scale_attn_by_inverse_layer_idx == 1)
            fail(VT_STATUS_UNSUPPORTED, "%s: scale_attn_by_inverse_layer_idx true is not supported for %s (scores "
                 "divided by the layer index + 1)", c.path.c_str(), F.name);
    }
    if (F.attention_types) {  // GPT-Neo: windows by attention_types, unscaled scores
        if (c.attention_types.empty())
            fail(VT_STATUS_FORMAT_ERROR, "%s: field \"attention_types\" is missing (%s's global and local layers)",
                 c.path.c_str(), F.name);
        if (int64_t(c.attention_types.size()) != L)
            fail(VT_STATUS_FORMAT_ERROR, "%s: attention_types describes %zu layers, but the model has %lld",
                 c.path.c_str(), c.attention_types.size(), (long long)L);
        c.attn_scale = 1.0;
    }
    if (F.falcon_norms) {  // Falcon: the block its fields describe (FalconDecoderLayer)
        if (c.alibi == 1)
            fail(VT_STATUS_UNSUPPORTED, "%s: alibi true is not supported for %s (falcon-rw's ALiBi position biases "
                 "instead of RoPE)", c.path.c_str(), F.name);
        if (F.falcon_norms == 2) {
            c.parallel_two_norms = true;
        } else if (c.parallel_attn != 0) {
            c.parallel_one_norm = true;
        } else if (c.new_decoder_architecture == 1) {  // (transformers has no MLP input for it)
            fail(VT_STATUS_UNSUPPORTED, "%s: new_decoder_architecture with num_ln_in_parallel_attn 1 and parallel_attn "
                 "false is not supported for %s (its layer has no norm before the MLP)", c.path.c_str(), F.name);
        }
    }
    if (F.pos_embed_offset) {  // OPT: what opt-350m's and others' blocks compute otherwise
        if (c.do_layer_norm_before == 0)
            fail(VT_STATUS_UNSUPPORTED, "%s: do_layer_norm_before false is not supported for %s (opt-350m's post-norm "
                 "block)", c.path.c_str(), F.name);
        if (c.remove_final_layer_norm == 1)
            fail(VT_STATUS_UNSUPPORTED, "%s: _remove_final_layer_norm true is not supported for %s (no final norm)",
                 c.path.c_str(), F.name);
        if (c.layer_norm_elementwise_affine == 0)
            fail(VT_STATUS_UNSUPPORTED, "%s: layer_norm_elementwise_affine false is not supported for %s (LayerNorms "
                 "without weights)", c.path.c_str(), F.name);
        if (c.word_embed_proj_dim > 0 && c.word_embed_proj_dim != c.hidden_size)
            fail(VT_STATUS_UNSUPPORTED, "%s: word_embed_proj_dim %lld is not supported for %s (embeddings of another "
                 "width projected in and out; hidden_size %lld)", c.path.c_str(), (long long)c.word_embed_proj_dim,
                 F.name, (long long)c.hidden_size);
    }
    if (c.add_cross_attention == 1)
        fail(VT_STATUS_UNSUPPORTED, "%s: add_cross_attention true is not supported (a decoder attending to an "
             "encoder's states)", c.path.c_str());
    // Cohere 2: only a layer with a window rotates (none when sliding_window is null).
    if (F.rope_sliding_only)
        for (int64_t l = 0; l < L; ++l) c.layer_nope[size_t(l)] = c.layer_window[size_t(l)] == 0;
    // Cohere 2 MoE: the experts intermediate_size wide (Cohere2MoeConfig's 22528; moe_intermediate_size is
    // not its field), every dense layer prefix_dense_intermediate_size (null: intermediate_size)
    if (F.cohere_moe) {
        c.moe_intermediate_field = c.intermediate_size > 0 ? c.intermediate_size : 22528;
        c.intermediate_size = c.prefix_dense_intermediate > 0 ? c.prefix_dense_intermediate : c.moe_intermediate_field;
    }
    // (Cohere 2 MoE: with prefix_dense_sliding_window_pattern 1, every dense layer rotates: force_rope)
    if (F.cohere_moe && c.prefix_dense_pattern <= 1)
        for (int64_t l = 0; l < L; ++l)
            if (cohere_dense_layer(c, l)) c.layer_nope[size_t(l)] = 0;
    // EXAONE 4: with a window, the global layers attend without RoPE.
    if (F.nope_global && window > 0)
        for (int64_t l = 0; l < L; ++l) c.layer_nope[size_t(l)] = c.layer_window[size_t(l)] == 0;
    // Gemma 3: the sliding layers (by type, whether or not the window is null) use the local
    // RoPE base. (Until here a sliding layer's window may be 0 when sliding_window is null;
    // then its type is read again below.)
    c.layer_local_rope.assign(c.layer_window.size(), 0);
    if (F.local_rope)
        for (int64_t l = 0; l < L; ++l) {
            const int64_t P = c.sliding_window_pattern > 0 ? c.sliding_window_pattern : F.default_window_pattern;
            c.layer_local_rope[size_t(l)] = c.layer_types.empty() ? (l + 1) % P != 0
                                                                  : c.layer_types[size_t(l)] == "sliding_attention";
        }
}

// The DeepSeek lineage's routers (GLM-4 MoE, dots1, DeepSeek-V3: sigmoid_router; DeepSeek-V2's
// softmax one): what their config classes fill in when config.json leaves a field out.
struct RouterDefaults {
    int64_t first_dense, n_shared, n_group, topk_group, nextn;  // (n_shared -1: the shared rows say)
    bool norm_topk;
    double scale;
};
bool grouped_router(const ModelFamily& F) { return F.sigmoid_router || F.mla == 2 || F.mla == 4; }
RouterDefaults router_defaults(const ModelFamily& F) {
    if (F.mla == 2) return {0, 2, 1, 1, 0, false, 1.0};  // DeepseekV2Config
    if (F.mla == 4) return {0, 1, 1, 1, 0, true, 1.0};   // Mistral4Config
    switch (F.sigmoid_router) {
        case ModelFamily::ROUTER_GLM4_MOE: return {1, 1, 1, 1, 1, true, 1.0};   // Glm4MoeConfig
        case ModelFamily::ROUTER_DEEPSEEK_V3: return {3, 1, 8, 4, 1, true, 2.5};   // DeepseekV3Config
        case ModelFamily::ROUTER_MINIMAX_M2: return {0, -1, 1, 1, 0, true, 1.0};  // MiniMaxM2Config (no such fields)
        case ModelFamily::ROUTER_EXAONE_MOE: return {1, 1, 1, 1, 0, true, 2.5};   // ExaoneMoeConfig
        case ModelFamily::ROUTER_GLM4_MOE_LITE: return {1, 1, 1, 1, 1, true, 1.8};   // Glm4MoeLiteConfig
        case ModelFamily::ROUTER_LFM2_MOE: return {2, 0, 1, 1, 0, true, 1.0};   // Lfm2MoeConfig (num_dense_layers)
        case ModelFamily::ROUTER_SOLAR_OPEN: return {0, 1, 1, 1, 0, true, 1.0};   // SolarOpenConfig (no dense layers, no MTP layers)
        case ModelFamily::ROUTER_AFMOE: return {1, 2, 1, 1, 0, true, 1.0};   // AfmoeConfig (num_dense_layers, num_shared_experts, route_scale)
        case ModelFamily::ROUTER_SARVAM_MOE: return {1, 1, 1, 1, 0, true, 2.5};  // SarvamMoEConfig
        case ModelFamily::ROUTER_SARVAM_MLA: return {1, 1, 1, 1, 0, true, 2.5};  // SarvamMLAConfig
        case ModelFamily::ROUTER_KOLIBRI1: return {0, -1, 1, 1, 0, false, 1.0};  // Kolibri1Config (shared_expert_intermediate_size)
        case ModelFamily::ROUTER_HY_V3: return {1, 1, 1, 1, 1, true, 2.826};  // HYV3Config (mlp_layer_types, router_scaling_factor; layer 80: MTP)
        case ModelFamily::ROUTER_AXK1: return {1, 1, 8, 4, 0, true, 2.5};    // AXK1Config (mlp_layer_types; no MTP layers)
        default: return {0, -1, 1, 1, 0, false, 1.0};  // Dots1Config
    }
}

// Their routing: n_group groups of experts, the topk_group best of them open to the choice
// (DeepSeek-V2: with topk_method group_limited_greedy only), routed_scaling_factor; what the
// router's torch.topk calls need (a sigmoid router's group: its two best; enough experts in the
// open groups) is checked.
void resolve_grouped_router(const ModelFamily& F, LlamaConfig& c, const std::string& src) {
    const RouterDefaults d = router_defaults(F);
    c.moe_sigmoid = F.sigmoid_router != 0;
    bool grouped = true;
    if (F.mla == 2) {  // DeepseekV2's topk_method
        const std::string m = c.topk_method.empty() ? "greedy" : c.topk_method;
        if (m != "greedy" && m != "group_limited_greedy")
            fail(VT_STATUS_UNSUPPORTED, "%s: topk_method \"%s\" is not supported for %s (greedy, group_limited_greedy)",
                 src.c_str(), m.c_str(), F.name);
        grouped = m == "group_limited_greedy";
        if (grouped && (c.n_group_field < 0 || c.topk_group_field < 0))
            fail(VT_STATUS_FORMAT_ERROR, "%s: topk_method group_limited_greedy needs the fields \"n_group\" and "
                 "\"topk_group\"", src.c_str());
        if (c.norm_topk_prob_field == 1)
            fail(VT_STATUS_UNSUPPORTED, "%s: norm_topk_prob true is not supported for %s (transformers' router never "
                 "renormalizes its top weights; DeepSeek's own code does)", src.c_str(), F.name);
    }
    // (AfmoeConfig, Kolibri1Config and HYV3Config have no n_group / topk_group: not read)
    if (F.sigmoid_router == ModelFamily::ROUTER_AFMOE || F.sigmoid_router == ModelFamily::ROUTER_KOLIBRI1 || F.sigmoid_router == ModelFamily::ROUTER_HY_V3) grouped = false;
    c.moe_groups = grouped ? (c.n_group_field > 0 ? c.n_group_field : d.n_group) : 1;
    c.moe_topk_groups = grouped ? (c.topk_group_field > 0 ? c.topk_group_field : d.topk_group) : 1;
    // (DeepSeek-V3's sigmoid router and Mistral 4's softmax one score a group by its best two
    // experts, DeepSeek-V2's by its best)
    c.moe_groups_two_best = c.moe_sigmoid || F.mla == 4;
    const int64_t E = c.num_experts, G = c.moe_groups, least = c.moe_groups_two_best ? 2 : 1;
    if (E % G != 0 || E / G < least)
        fail(VT_STATUS_FORMAT_ERROR, "%s: field \"n_group\" = %lld does not split the %lld experts into groups of %lld or "
             "more%s", src.c_str(), (long long)G, (long long)E, (long long)least,
             c.moe_groups_two_best ? format(" (%s's router scores a group by its two best experts)", F.name).c_str() : "");
    if (c.moe_topk_groups > G)
        fail(VT_STATUS_FORMAT_ERROR, "%s: field \"topk_group\" = %lld is more than the %lld groups (n_group)",
             src.c_str(), (long long)c.moe_topk_groups, (long long)G);
    if (c.experts_per_tok > c.moe_topk_groups * (E / G))
        fail(VT_STATUS_FORMAT_ERROR, "%s: field \"%s\" = %lld is more than the %lld experts of the "
             "topk_group = %lld groups a token may choose from", src.c_str(), c.experts_per_tok_key.c_str(),
             (long long)c.experts_per_tok,
             (long long)(c.moe_topk_groups * (E / G)), (long long)c.moe_topk_groups);
    // (AFMoE: route_scale, its config class's name; routed_scaling_factor is not read)
    // (Kolibri 1: no scaling, routed_scaling_factor not its field; HY-V3: router_scaling_factor, its
    // config class's name)
    const bool afmoe = F.sigmoid_router == ModelFamily::ROUTER_AFMOE, hy = F.sigmoid_router == ModelFamily::ROUTER_HY_V3;
    const double scale_field = afmoe ? c.route_scale_field : hy ? c.router_scaling_field
                               : F.sigmoid_router == ModelFamily::ROUTER_KOLIBRI1 ? -1 : c.routed_scaling_field;
    c.routed_scaling = float(scale_field >= 0 ? scale_field : d.scale);
    if (!std::isfinite(c.routed_scaling))
        fail(VT_STATUS_FORMAT_ERROR, "%s: field \"%s\" = %g is not finite in float32", src.c_str(),
             afmoe ? "route_scale" : hy ? "router_scaling_factor" : "routed_scaling_factor", scale_field);
}

// DeepSeek-V2 / V3's latent attention sizes (config.json, else their config classes' defaults)
// and what the engine's absorbed form makes of them (LlamaConfig::mla_*): one KV head of
// kv_lora_rank + qk_rope_head_dim. config.json's head_dim (their classes set it to
// qk_rope_head_dim, RoPE's width) and num_key_value_heads are not the cache's.
void resolve_mla(const ModelFamily& F, LlamaConfig& c) {
    if (!F.mla) return;
    const std::string src = c.from_file ? c.path : "the defaults (no config.json)";
    c.mla = true;
    const bool lite = F.sigmoid_router == ModelFamily::ROUTER_GLM4_MOE_LITE;  // (Glm4MoeLiteConfig's defaults; Mistral4Config's; else DeepSeek's,
                                               // which YoutuConfig keeps)
    const bool m4 = F.mla == 4, cpm = F.mla == 5;  // (MiniCPM3Config's)
    const bool sarvam = F.sigmoid_router == ModelFamily::ROUTER_SARVAM_MLA;  // (SarvamMLAConfig: q_lora_rank null, q_proj whole)
    c.mla_q_lora = c.q_lora_field >= 0 ? c.q_lora_field : sarvam ? 0 : lite || cpm ? 768 : m4 ? 1024 : 1536;
    c.mla_kv_lora = c.kv_lora_field > 0 ? c.kv_lora_field : m4 || cpm ? 256 : 512;
    c.mla_nope = c.qk_nope_field > 0 ? c.qk_nope_field : lite ? 192 : m4 || cpm ? 64 : 128;
    c.mla_rope = c.qk_rope_field > 0 ? c.qk_rope_field : cpm ? 32 : 64;
    // (MiniCPM3's v_head_dim, null or left out: hidden_size / num_attention_heads)
    const int64_t v_cpm = c.hidden_size > 0 && c.num_heads > 0 ? c.hidden_size / c.num_heads : 64;
    c.mla_v = c.v_head_field > 0 ? c.v_head_field : lite ? 256 : cpm ? v_cpm : 128;
    // (V2: pairs (2i, 2i + 1) always; V3, Mistral 4, Youtu: unless rope_interleave is false; MiniCPM3: never)
    c.mla_interleaved = F.mla == 2 || (!cpm && c.rope_interleave_field != 0);
    if (F.sigmoid_router == ModelFamily::ROUTER_AXK1 && c.q_lora_field == 0)  // (AXK1Attention always has q_a_proj / q_b_proj)
        fail(VT_STATUS_UNSUPPORTED, "%s: q_lora_rank null is not supported for %s (its attention always projects q "
             "through q_a_proj and q_b_proj)", src.c_str(), F.name);
    if (c.mla_rope % 2 != 0)
        fail(VT_STATUS_FORMAT_ERROR, "%s: qk_rope_head_dim %lld must be even (RoPE rotates pairs)", src.c_str(),
             (long long)c.mla_rope);
    if (c.num_heads < 0)
        fail(VT_STATUS_FORMAT_ERROR, "%s: field \"num_attention_heads\" is missing (%s's query heads)", src.c_str(),
             F.name);
    if (c.attention_bias_field == 1)
        fail(VT_STATUS_UNSUPPORTED, "%s: attention_bias true is not supported for %s (biases on q_a_proj, "
             "kv_a_proj_with_mqa and o_proj)", src.c_str(), F.name);
    if (c.mlp_bias_field == 1)
        fail(VT_STATUS_UNSUPPORTED, "%s: mlp_bias true is not supported for %s", src.c_str(), F.name);
    c.head_dim = c.mla_kv_lora + c.mla_rope;
    c.num_kv_heads = 1;
}

// DeepSeek's softmax scale: (qk_nope + qk_rope)^-0.5, times mscale(factor, mscale_all_dim)² when
// a rope type other than default says mscale_all_dim (transformers' yarn_apply_mscale).
void resolve_mla_scale(LlamaConfig& c) {
    if (!c.mla) return;
    double s = 1.0 / std::sqrt(double(c.mla_nope + c.mla_rope));
    if (c.rope.kind != RopeScaling::NONE && c.rope.mscale_all_dim > 0 && c.rope.factor > 1)
        s *= std::pow(0.1 * c.rope.mscale_all_dim * std::log(c.rope.factor) + 1.0, 2);
    c.attn_scale = s;
}

// HunYuan MoE's per-layer MoE fields (family.h, moe_per_layer_fields): a list must give every
// one of the L layers the same value (the engine routes every layer alike; transformers reads
// entry l for layer l), and the widths must be those of transformers' model. Another family's
// config.json gets no lists. Without moe_topk, HunYuanMoEV1Config's 1.
void resolve_per_layer_moe_fields(const ModelFamily& F, LlamaConfig& c, int64_t L) {
    const std::pair<const char*, const std::vector<int64_t>*> lists[] = {
        {"num_experts", &c.num_experts_list}, {"moe_topk", &c.moe_topk_list},
        {"num_shared_expert", &c.num_shared_expert_list}, {"moe_intermediate_size", &c.moe_intermediate_list}};
    for (const auto& [key, v] : lists) {
        if (v->empty()) continue;
        if (!F.moe_per_layer_fields)
            fail(VT_STATUS_FORMAT_ERROR, "%s: field \"%s\" must be an integer for %s, got a list", c.path.c_str(), key,
                 F.name);
        if (int64_t(v->size()) < L)
            fail(VT_STATUS_FORMAT_ERROR, "%s: field \"%s\" lists %zu values, but the model has %lld layers",
                 c.path.c_str(), key, v->size(), (long long)L);
        std::string shown = "[";
        for (size_t i = 0; i < v->size() && i < 8; ++i) shown += (i ? ", " : "") + std::to_string((*v)[i]);
        shown += v->size() > 8 ? ", ...]" : "]";
        for (int64_t l = 0; l < L; ++l)
            if ((*v)[size_t(l)] != v->front())
                fail(VT_STATUS_UNSUPPORTED, "%s: %s %s differs per layer, which is not supported (the engine gives every "
                     "MoE layer the same %s)", c.path.c_str(), key, shown.c_str(),
                     std::strcmp(key, "moe_topk") == 0 ? "experts per token" : "experts");
    }
    if (!F.moe_per_layer_fields) return;
    if (c.experts_per_tok_field < 0) {  // (HunYuanMoEV1Config's default moe_topk: 1)
        c.experts_per_tok_field = 1;
        c.experts_per_tok_key = "moe_topk";
    }
    if (c.num_shared_expert_field >= 0 && c.num_shared_expert_field != 1)
        fail(VT_STATUS_UNSUPPORTED, "%s: num_shared_expert %lld is not supported for %s (transformers' model has one "
             "shared MLP, intermediate_size wide)", c.path.c_str(), (long long)c.num_shared_expert_field, F.name);
    if (c.moe_intermediate_field > 0 && c.intermediate_size > 0 && c.moe_intermediate_field != c.intermediate_size)
        fail(VT_STATUS_UNSUPPORTED, "%s: moe_intermediate_size %lld is not supported for %s (transformers' experts are "
             "intermediate_size = %lld wide)", c.path.c_str(), (long long)c.moe_intermediate_field, F.name,
             (long long)c.intermediate_size);
    if (c.use_mixed_mlp_moe == 0)
        fail(VT_STATUS_UNSUPPORTED, "%s: use_mixed_mlp_moe false is not supported for %s (transformers' model always "
             "adds its shared MLP)", c.path.c_str(), F.name);
    if (c.use_cla == 1)
        fail(VT_STATUS_UNSUPPORTED, "%s: use_cla true is not supported for %s (cross-layer attention: layers reusing "
             "another layer's keys and values)", c.path.c_str(), F.name);
    if (c.moe_layer_num_skipped > 0)
        fail(VT_STATUS_UNSUPPORTED, "%s: moe_layer_num_skipped %lld is not supported for %s (transformers' model has "
             "experts in every layer)", c.path.c_str(), (long long)c.moe_layer_num_skipped, F.name);
}

// The mixture-of-experts fields of a family with a router: which of the L layers are MoE,
// the number of experts (config.json, else counted in the checkpoint's first MoE layer), the
// top k, renormalization, and the expert / shared widths (config.json, else from the first
// MoE layer's tensors; Mixtral's experts are intermediate_size wide).
void resolve_moe(const Checkpoint& ck, const ModelFamily& F, LlamaConfig& c, int64_t L) {
    c.layer_moe.assign(size_t(std::max<int64_t>(L, 0)), 0);
    if (!F.router) return;
    const int64_t step = c.decoder_sparse_step > 0 ? c.decoder_sparse_step : 1;
    // (DeepSeek-V3-style: the first first_k_dense_replace layers dense, as their config classes)
    // (LFM2-MoE: its num_dense_layers)
    // (Solar Open's config class has no first_k_dense_replace: experts in every layer)
    // (AFMoE: its num_dense_layers too)
    // (HY-V3: mlp_layer_types, else the first layer dense; first_k_dense_replace is not its field)
    // (Cohere 2 MoE: first_k_dense_replace, 0 when left out, unless mlp_layer_types)
    const int64_t first_dense_field = F.sigmoid_router == ModelFamily::ROUTER_LFM2_MOE || F.sigmoid_router == ModelFamily::ROUTER_AFMOE ? c.num_dense_layers_field
                                      : F.sigmoid_router == ModelFamily::ROUTER_SOLAR_OPEN || F.sigmoid_router == ModelFamily::ROUTER_KOLIBRI1 ? 0
                                      : F.sigmoid_router == ModelFamily::ROUTER_HY_V3 ? -1 : c.first_k_dense_field;
    const int64_t first_dense = F.cohere_moe ? std::max<int64_t>(c.first_k_dense_field, 0)
                                : !grouped_router(F) ? 0 : first_dense_field >= 0 ? first_dense_field
                                                       : router_defaults(F).first_dense;
    c.moe_choice_bias = F.choice_bias && !(F.sigmoid_router == ModelFamily::ROUTER_LFM2_MOE && c.use_expert_bias == 0);
    c.moe_norm_eps = F.sigmoid_router == ModelFamily::ROUTER_LFM2_MOE ? 1e-6f : F.sigmoid_router == ModelFamily::ROUTER_KOLIBRI1 ? 0.0f : 1e-20f;  // (Lfm2MoeTopKRouter's + 1e-6)
    c.moe_choice_on_logits = F.sigmoid_router == ModelFamily::ROUTER_KOLIBRI1;  // (Kolibri1TopKRouter)
    // (ERNIE 4.5: from moe_layer_start_index (default 1) to moe_layer_end_index (-1, the default:
    // the last), every moe_layer_interval-th, as Ernie4_5_MoeConfig)
    const int64_t every = F.moe_layer_range && c.moe_interval_field > 0 ? c.moe_interval_field : step;
    const int64_t lo = F.moe_layer_range ? (c.moe_start_field >= 0 ? c.moe_start_field : 1) : first_dense;
    const int64_t hi = F.moe_layer_range && c.moe_end_field >= 0 ? c.moe_end_field : L - 1;
    int64_t first = -1;
    // (EXAONE MoE, GLM-4 MoE lite: they decide)
    // (A.X-K1: AXK1Config's default from first_k_dense_replace (1) and moe_layer_freq (1))
    if (F.sigmoid_router == ModelFamily::ROUTER_AXK1 && c.mlp_layer_types.empty()) {
        const int64_t k = c.first_k_dense_field >= 0 ? c.first_k_dense_field : 1;
        const int64_t freq = c.moe_layer_freq > 0 ? c.moe_layer_freq : 1;
        for (int64_t l = 0; l < L; ++l) c.mlp_layer_types.push_back(l >= k && l % freq == 0 ? "sparse" : "dense");
    }
    // (HY-V3, Cohere 2 MoE, A.X-K1, Mellum: they decide too)
    const bool by_types = (F.sigmoid_router == ModelFamily::ROUTER_EXAONE_MOE || F.sigmoid_router == ModelFamily::ROUTER_GLM4_MOE_LITE || F.sigmoid_router == ModelFamily::ROUTER_HY_V3 ||
                           F.sigmoid_router == ModelFamily::ROUTER_AXK1 || F.cohere_moe || is_model_type(F, {"mellum"})) &&
                          !c.mlp_layer_types.empty();
    if (by_types && int64_t(c.mlp_layer_types.size()) != L)
        fail(VT_STATUS_FORMAT_ERROR, "%s: mlp_layer_types lists %zu layers, but the model has %lld", c.path.c_str(),
             c.mlp_layer_types.size(), (long long)L);
    for (int64_t l = 0; l < L; ++l) {
        const bool dense = by_types ? c.mlp_layer_types[size_t(l)] == "dense" :
                           (l + 1) % every != 0 || l < lo || l > hi ||
                           std::find(c.mlp_only_layers.begin(), c.mlp_only_layers.end(), l) != c.mlp_only_layers.end();
        c.layer_moe[size_t(l)] = !dense;
        if (!dense && first < 0) first = l;
    }
    const std::string src = c.from_file ? c.path : std::string("the defaults (no config.json)");
    const std::string p = F.layer_prefix + std::to_string(first < 0 ? 0 : first) + ".";
    // (A.X-K1: the correction bias when the files hold it — the released ones do not, and
    // transformers routes with zeros then —, judged by the first MoE layer's)
    if (F.sigmoid_router == ModelFamily::ROUTER_AXK1) c.moe_choice_bias = first >= 0 && ck.find(p + F.choice_bias);
    c.moe_out_norm = F.sigmoid_router == ModelFamily::ROUTER_AXK1;
    // gpt-oss: the Hub's files hold the experts as MXFP4 blocks; dequantized ones as they are.
    c.mxfp4_experts = F.gpt_oss && ck.find(p + F.expert_tensors[0] + "_blocks");
    c.num_experts = c.num_experts_field;
    if (c.num_experts < 0 && F.fused_experts) {  // the leading dim of the stacked experts
        const TensorView* t = ck.find(p + F.expert_tensors[0] + (c.mxfp4_experts ? "_blocks" : ""));
        c.num_experts = t && t->shape.size() >= 3 ? t->shape[0] : 0;
    } else if (c.num_experts < 0) {  // count the experts of the first MoE layer
        const std::string ep = p + F.expert_prefix;
        int64_t n = 0;
        while (n < 65536 && ck.find(ep + std::to_string(n) + "." + F.expert_tensors[0])) ++n;
        c.num_experts = n;
    }
    if (c.num_experts == 0 && c.num_experts_field < 0)
        fail(VT_STATUS_UNSUPPORTED, "not a %s checkpoint this engine can run: %s has no num_experts and %s has no "
             "%s (a mixture-of-experts model needs its experts)", F.name, src.c_str(), ck.files()[0]->path().c_str(),
             (F.fused_experts ? p + F.expert_tensors[0] : p + F.expert_prefix + "0." + F.expert_tensors[0]).c_str());
    if (c.num_experts == 0) {  // num_experts 0 in config.json: every layer dense (as transformers)
        std::fill(c.layer_moe.begin(), c.layer_moe.end(), 0);
        return;
    }
    if (first < 0) return;  // every layer listed in mlp_only_layers
    if (c.experts_per_tok_field < 0)
        fail(VT_STATUS_FORMAT_ERROR, "%s: field \"num_experts_per_tok\" is missing (the experts each token uses)",
             src.c_str());
    c.experts_per_tok = c.experts_per_tok_field;
    if (c.experts_per_tok > c.num_experts)
        fail(VT_STATUS_FORMAT_ERROR, "%s: field \"%s\" = %lld is more than the %lld experts",
             src.c_str(), c.experts_per_tok_key.c_str(), (long long)c.experts_per_tok, (long long)c.num_experts);
    c.norm_topk = !F.config_norm_topk || F.sigmoid_router == ModelFamily::ROUTER_AFMOE || F.sigmoid_router == ModelFamily::ROUTER_HY_V3 ? true  // (AFMoE, HY-V3: always; not their field)
                  : c.norm_topk_prob_field >= 0 ? c.norm_topk_prob_field == 1
                  : is_model_type(F, {"mellum", "flint"}) ? true  // (MellumConfig's, FlintConfig's)
                                                : router_defaults(F).norm_topk;  // (Glm4MoeConfig's, DeepseekV3Config's: true)
    if (F.sparsemixer) {  // PhiMoE: two experts, whatever the field says; their weights not renormalized
        if (c.experts_per_tok != 2)
            fail(VT_STATUS_UNSUPPORTED, "%s: field \"%s\" = %lld is not supported for %s (its sparsemixer router "
                 "always picks 2 experts)", src.c_str(), c.experts_per_tok_key.c_str(), (long long)c.experts_per_tok,
                 F.name);
        c.norm_topk = false;
        // (PhimoeConfig's router_jitter_noise 0.01; the mask compares in float32 with 2 · eps)
        c.moe_jitter2 = float(2.0 * (c.router_jitter_field >= 0 ? c.router_jitter_field : 0.01));
    }
    if (is_model_type(F, {"flint"})) {  // FlintTopKRouter: the top k sigmoids, renormalized by their plain sum
        c.moe_sigmoid = true;
        c.moe_norm_eps = 0.0f;
    }
    if (F.cohere_moe) {  // Cohere2MoeTopKRouter: the top k logits' softmax, or their sigmoids
        const std::string fn = c.expert_selection_fn.empty() ? "softmax" : c.expert_selection_fn;
        if (fn != "softmax" && fn != "sigmoid")
            fail(VT_STATUS_UNSUPPORTED, "%s: expert_selection_fn \"%s\" is not supported for %s (softmax, sigmoid)",
                 src.c_str(), fn.c_str(), F.name);
        c.moe_sigmoid = fn == "sigmoid";
        // (the softmax of the top k logits: the top k of the softmax, renormalized; the sigmoids
        // renormalized when norm_topk_prob, true when left out, by their plain sum)
        c.norm_topk = !c.moe_sigmoid || c.norm_topk_prob_field != 0;
        c.moe_norm_eps = 0.0f;
    }
    auto rows_of = [&](const std::string& name) -> int64_t {
        const TensorView* t = ck.find(name);
        return t && t->shape.size() == 2 ? t->shape[0] : -1;
    };
    if (!F.config_norm_topk && !F.moe_layer_range && c.intermediate_size > 0) c.moe_intermediate = c.intermediate_size;  // Mixtral
    else if (c.moe_intermediate_field > 0) c.moe_intermediate = c.moe_intermediate_field;
    else if (!F.fused_experts) c.moe_intermediate = rows_of(p + F.expert_prefix + "0." + F.expert_tensors[0]);
    if (F.cohere_moe) {  // num_shared_experts (0) experts' width, added or averaged
        c.shared_intermediate = std::max<int64_t>(c.n_shared_experts_field, 0) * c.moe_intermediate;
        const std::string how = c.shared_combination.empty() ? "average" : c.shared_combination;
        if (c.shared_intermediate > 0 && how != "average" && how != "sum")  // (transformers raises only then)
            fail(VT_STATUS_UNSUPPORTED, "%s: shared_expert_combination_strategy \"%s\" is not supported for %s (average, "
                 "sum)", src.c_str(), how.c_str(), F.name);
        c.moe_shared_average = c.shared_intermediate > 0 && how == "average";
    } else if (granite_shared(F)) {  // GraniteMoeShared: 0 when left out, as GraniteMoeSharedConfig
        c.shared_intermediate = std::max<int64_t>(0, c.shared_intermediate_field);
    } else if (F.shared_prefix && F.moe_per_layer_fields) {  // HunYuan MoE: one, intermediate_size wide
        c.shared_intermediate = c.intermediate_size > 0 ? c.intermediate_size : c.moe_intermediate;
    } else if (F.shared_prefix && F.moe_layer_range) {  // ERNIE 4.5: moe_num_shared_experts (default 2) wide
        c.shared_intermediate = (c.n_shared_experts_field >= 0 ? c.n_shared_experts_field : 2) * c.moe_intermediate;
    } else if (F.shared_prefix && (F.sigmoid_router == ModelFamily::ROUTER_KOLIBRI1 || is_model_type(F, {"flint"}))) {
        // Kolibri 1, Flint: one, shared_expert_intermediate_size (512; Flint's 1024) wide
        if (c.shared_intermediate_field == 0)  // (transformers builds a zero-width shared MLP, its files [0, H] tensors)
            fail(VT_STATUS_UNSUPPORTED, "%s: shared_expert_intermediate_size 0 is not supported for %s (its model keeps "
                 "a shared MLP of width 0, whose empty tensors are not loaded)", src.c_str(), F.name);
        c.shared_intermediate = c.shared_intermediate_field >= 0 ? c.shared_intermediate_field
                                : F.sigmoid_router == ModelFamily::ROUTER_KOLIBRI1 ? 512 : 1024;
    } else if (F.shared_prefix && grouped_router(F)) {  // n_shared_experts experts' width (else the rows say)
        const int64_t n = c.n_shared_experts_field >= 0 ? c.n_shared_experts_field : router_defaults(F).n_shared;
        if (F.sigmoid_router == ModelFamily::ROUTER_AFMOE && n == 0)  // (transformers builds a zero-width shared MLP, its files [0, H] tensors)
            fail(VT_STATUS_UNSUPPORTED, "%s: num_shared_experts 0 is not supported for %s (its model keeps a shared "
                 "MLP of width 0, whose empty tensors are not loaded)", src.c_str(), F.name);
        if (F.sigmoid_router == ModelFamily::ROUTER_HY_V3 && n == 0)  // (HYV3MLP takes width 0 as intermediate_size: not what the field says)
            fail(VT_STATUS_UNSUPPORTED, "%s: num_shared_experts 0 is not supported for %s (its model then builds a "
                 "shared MLP intermediate_size wide)", src.c_str(), F.name);
        c.shared_intermediate = n >= 0 ? n * c.moe_intermediate
                                       : std::max<int64_t>(0, rows_of(p + F.shared_prefix + "gate_proj.weight"));
    } else if (F.shared_prefix) {
        c.shared_intermediate = c.shared_intermediate_field >= 0 ? c.shared_intermediate_field
                                                                 : std::max<int64_t>(0, rows_of(p + F.shared_prefix + "gate_proj.weight"));
    }
    if (c.moe_intermediate <= 0)
        fail(VT_STATUS_FORMAT_ERROR, "cannot infer the experts' width from %s (no %s)", src.c_str(),
             F.fused_experts ? "intermediate_size" : "moe_intermediate_size, no expert 0 tensors");
    if (grouped_router(F)) resolve_grouped_router(F, c, src);
}

void check_and_resolve(Checkpoint& ck, LlamaConfig& c, int64_t* file_layers) {
    const ModelFamily* fam = family_of(c);
    if (!fam) fail(VT_STATUS_UNSUPPORTED, "%s: %s", c.path.c_str(), unsupported_family_reason(c).c_str());
    // (Sarvam-MoE: transformers' own names where its files hold them instead of the Hub's)
    if (const ModelFamily* alt = alternate_layout(*fam); alt && !ck.find(fam->embed) && ck.find(alt->embed)) fam = alt;
    const ModelFamily& F = *fam;
    auto layer_name = [&](int64_t layer, int which) { return layer_tensor_name(F, layer, LayerTensor(which)); };
    // GPT-2's own files: the base model's names without "transformer." (wte.weight, h.0...).
    if (F.bare_prefix && !ck.find(F.embed) && ck.find(std::string(F.embed).substr(std::strlen(F.bare_prefix))))
        ck.add_name_prefix(F.bare_prefix, F.lm_head);
    // (Gemma 1's first releases say "gelu", which GemmaConfig takes as the tanh GELU they were
    // trained with, as transformers does.)
    if (F.gemma == ModelFamily::GEMMA1 && c.hidden_act == "gelu") c.hidden_act = F.activation;
    // A top-level clip_qkv clamps q, k and v where the family's config class reads it (OLMo,
    // OLMoE; MPT's is attn_config's); IQuestCoderConfig refuses it; any other class has no such
    // field, which transformers ignores, and so does this engine (a clamp there would be silently
    // another model).
    if (c.clip_qkv_root > 0) {
        if (is_model_type(F, {"olmo", "olmoe"}))
            c.clip_qkv = c.clip_qkv_root;
        else if (is_model_type(F, {"iquestcoder"}))
            fail(VT_STATUS_UNSUPPORTED, "%s: clip_qkv is not supported for %s (its config class refuses it)",
                 c.path.c_str(), F.name);
    }
    // The field the family's config class reads its activation from: GPT-2's lineage, GPT-Neo,
    // GPT-J and OPT activation_function, Falcon activation; Bloom and MPT none (their GELU is fixed); the
    // others hidden_act. A field the class does not read is ignored, as transformers does.
    const char* act_key = "hidden_act";
    // EXAONE 3 / 3.5's config.json names (ExaoneConfig's attribute_map): activation_function for
    // hidden_act, layer_norm_epsilon for rms_norm_eps, each winning when both are there, as in
    // transformers (num_layers: read first for it at parse time).
    const bool exaone_names = is_model_type(F, {"exaone"});
    if (exaone_names && c.layer_norm_eps > 0) c.rms_norm_eps = c.layer_norm_eps;
    if (exaone_names && !c.activation_function.empty()) {
        act_key = "activation_function";
        c.hidden_act = c.activation_function;
    } else if (F.pos_embed || F.rotary_dim_field) {
        act_key = "activation_function";
        c.hidden_act = c.activation_function;
    } else if (F.falcon_norms) {
        act_key = "activation";
        c.hidden_act = c.activation_field;
    } else if (F.alibi) {
        c.hidden_act.clear();
    }
    // InternLM3's config.json names (InternLM3Config's attribute_map): qkv_bias for
    // attention_bias, bias for mlp_bias (when both names are there, these win, as in transformers,
    // which sets the attribute_map's names after the fields).
    // transformers refuses them unequal: its remote code biased q/k/v by qkv_bias and o_proj and
    // the MLP by bias, which Llama's attention_bias (q/k/v/o) and mlp_bias cannot say otherwise.
    if (is_model_type(F, {"internlm3"})) {
        const char* attn_key = "attention_bias";
        const char* mlp_key = "mlp_bias";
        if (c.qkv_bias_field >= 0) {
            c.attention_bias_field = c.qkv_bias_field;
            attn_key = "qkv_bias";
        }
        if (c.use_bias >= 0 && c.use_bias_name == "bias") {
            c.mlp_bias_field = c.use_bias;
            mlp_key = "bias";
        }
        c.use_bias = -1;  // (read for Falcon)
        const bool attn = c.attention_bias_field == 1, mlp = c.mlp_bias_field == 1;
        if (attn != mlp)
            fail(VT_STATUS_UNSUPPORTED, "%s: %s %s with %s %s is not supported for InternLM3 (transformers' Llama "
                 "implementation biases q/k/v/o as the MLP; it refuses them unequal)", c.path.c_str(), attn_key,
                 attn ? "true" : "false", mlp_key, mlp ? "true" : "false");
    }
    // Sarvam's released config.json names (their config classes' attribute_map): num_shared_experts
    // for n_shared_experts, num_mtp_layers for num_nextn_predict_layers and, Sarvam-MoE's,
    // use_qkv_bias for attention_bias; where both are there, these win, as in transformers.
    if (is_model_type(F, {"sarvam_moe", "sarvam_mla"})) {
        if (c.num_shared_experts_alias >= 0) c.n_shared_experts_field = c.num_shared_experts_alias;
        if (c.num_mtp_layers_field >= 0) c.nextn_layers_field = c.num_mtp_layers_field;
    }
    if (is_model_type(F, {"sarvam_moe"})) {
        if (c.use_qkv_bias >= 0) c.attention_bias_field = c.use_qkv_bias;
        c.attention_out_bias = -1;  // (not SarvamMoEConfig's field: no bias on attention.dense)
        if (c.use_qk_norm < 0) c.use_qk_norm = 1;  // (SarvamMoEConfig's default)
        // (the Hub's own code biases attention.dense when use_bias; transformers' model, which
        // this engine computes, has no such bias and drops one in the files)
        if (c.use_bias == 1)
            fail(VT_STATUS_UNSUPPORTED, "%s: use_bias true is not supported for %s (a bias on attention.dense, which "
                 "transformers' Glm4MoeForCausalLM does not have)", c.path.c_str(), F.name);
    }
    // (rope_scaling type deepseek_yarn: SarvamMLAConfig reads it as yarn, in rope_scaling only)
    if (c.rope.deepseek_yarn && !(is_model_type(F, {"sarvam_mla"}) && c.rope.field == "rope_scaling"))
        fail(VT_STATUS_UNSUPPORTED, "%s: %s type \"deepseek_yarn\" is not supported for %s (SarvamMLA's legacy name "
             "for yarn, in rope_scaling)", c.path.c_str(), c.rope.field.c_str(), F.name);
    // An ungated GELU MLP (Phi, Starcoder2, GPT-NeoX) computes whichever GELU config.json
    // names, as transformers' ACT2FN: gelu exactly (erf), gelu_new / gelu_fast /
    // gelu_pytorch_tanh with tanh.
    const bool ungated = ungated_mlp(F);
    auto is_gelu = [](const std::string& a) {
        return a == "gelu" || a == "gelu_new" || a == "gelu_fast" || a == "gelu_pytorch_tanh";
    };
    const std::string act = c.hidden_act.empty() ? std::string(F.activation) : c.hidden_act;
    if (ungated && is_gelu(F.activation) && is_gelu(act)) {
        c.ungated_act = act == "gelu" ? LlamaConfig::ACT_GELU : LlamaConfig::ACT_GELU_TANH;
    } else if (act == F.activation) {
        c.ungated_act = act == "relu2"   ? LlamaConfig::ACT_RELU2
                        : act == "xielu" ? LlamaConfig::ACT_XIELU
                        : act == "relu"  ? LlamaConfig::ACT_RELU
                                         : LlamaConfig::ACT_GELU_TANH;
    }
    if (!c.hidden_act.empty() && c.hidden_act != F.activation && !(ungated && is_gelu(F.activation) && is_gelu(act)))
        fail(VT_STATUS_UNSUPPORTED, "%s: %s \"%s\" is not supported for %s (its MLP computes %s)",
             c.path.c_str(), act_key, c.hidden_act.c_str(), F.name,
             (std::string(F.activation) + (ungated ? "(fc1 · x)" : "(gate) · up") +
             (ungated && is_gelu(F.activation) ? "; gelu, gelu_new, gelu_fast or gelu_pytorch_tanh" : "")).c_str());
    // Blocks in the checkpoint: the config's count, else the highest layer index + 1.
    int64_t max_layer = -1;
    for (const TensorView* t : ck.tensors()) {
        int64_t layer;
        std::string rest;
        if (split_layer_name(t->name, F.layer_prefix, &layer, &rest)) max_layer = std::max(max_layer, layer);
    }
    const int64_t L = c.num_layers > 0 ? c.num_layers : max_layer + 1;
    // Listing what is missing costs memory per expected name: a 100-byte file naming
    // model.layers.99999999 would otherwise build 900 million names (out of memory).
    // (Every family's layer holds at least kMinLayerTensors: a mixer's in and out linears, the
    // MLP's; the bound is linear in the file's tensor count, whatever T_COUNT grows to.)
    constexpr int64_t kMinLayerTensors = 4;
    const int64_t have = int64_t(ck.tensors().size());
    if (L > 0 && L * kMinLayerTensors > have + 64)
        fail(VT_STATUS_UNSUPPORTED,
             "not a %s checkpoint this engine can run: %s; %lld layers (%s) need at least %lld layer tensors, but "
             "the checkpoint holds %lld tensors in all",
             F.name, ck.files()[0]->path().c_str(), (long long)L,
             c.num_layers > 0 ? "config.json's num_hidden_layers" : (std::string("the highest ") + F.layer_prefix + "N + 1").c_str(),
             (long long)L * kMinLayerTensors, (long long)have);
    resolve_mla(F, c);
    resolve_features(F, c, L);
    resolve_per_layer_moe_fields(F, c, L);
    resolve_moe(ck, F, c, L);
    // (the same bound for the expert tensors a config's num_experts names; stacked experts
    // are a few tensors per layer, however many experts they hold)
    int64_t moe_layers = 0;
    for (uint8_t x : c.layer_moe) moe_layers += x;
    if (moe_layers > 0 && !F.fused_experts && moe_layers * (3 * c.num_experts + 5) > 4 * have + 64)
        fail(VT_STATUS_UNSUPPORTED,
             "not a %s checkpoint this engine can run: %s; %lld mixture-of-experts layers of %lld experts need %lld "
             "expert tensors, but the checkpoint holds %lld tensors in all",
             F.name, ck.files()[0]->path().c_str(), (long long)moe_layers, (long long)c.num_experts,
             (long long)(moe_layers * 3 * c.num_experts), (long long)have);
    const bool has_lm_head = ck.find(F.lm_head) != nullptr;
    if (c.tie_word_embeddings < 0) c.tie_word_embeddings = has_lm_head ? 0 : 1;
    const bool tied = c.tie_word_embeddings == 1;

    // Names: what is expected, what is missing, what is not ours.
    std::set<std::string> expected;
    expected.insert(F.embed);
    if (F.final_norm) expected.insert(F.final_norm);  // (OLMo 1's norms have no weights)
    if (!tied) expected.insert(F.lm_head);
    if (!c.final_norm_bias.empty()) expected.insert(c.final_norm_bias);  // (Phi)
    if (!c.lm_head_bias.empty()) expected.insert(c.lm_head_bias);
    if (F.pos_embed) expected.insert(F.pos_embed);
    if (F.embed_norm && *F.embed_norm) {  // (Bloom's LayerNorm of the embeddings)
        expected.insert(F.embed_norm);
        expected.insert(bias_name(F.embed_norm));
    }
    for (int64_t l = 0; l < L; ++l) {
        for (int k = 0; k < T_COUNT; ++k)
            if (layer_tensor_expected(c, LayerTensor(k), l)) expected.insert(layer_name(l, k));
        for (const MoeTensor& t : moe_layer_tensors(c, l)) expected.insert(t.name);
    }
    // The matrices (embedding, lm_head, the layers' linears) may also be GGUF blocks kept as
    // they are (ggml_import.h); norms and biases are float.
    // (gpt-oss's MXFP4 experts: U8 blocks and scales)
    std::set<std::string> matrices = {F.embed, F.lm_head}, bytes;
    for (int64_t l = 0; l < L; ++l) {
        for (int k : {T_Q, T_K, T_V, T_O, T_GATE, T_UP, T_DOWN, T_Q_A, T_Q_B, T_KV_A, T_KV_B, T_CONV_IN, T_CONV_OUT, T_ATTN_GATE})
            if (layer_tensor_expected(c, LayerTensor(k), l)) matrices.insert(layer_name(l, k));
        for (const MoeTensor& t : moe_layer_tensors(c, l)) {
            if (t.matrix && !t.u8) matrices.insert(t.name);
            if (t.u8) bytes.insert(t.name);
        }
    }
    std::vector<std::string> missing, unexpected, bad_dtype;
    for (const auto& name : expected) {
        const TensorView* t = ck.find(name);
        if (!t) missing.push_back(name);
        else if (bytes.count(name) ? t->dtype_name != "U8"
                                   : !t->float_dtype && !(t->ggml >= 0 && matrices.count(name)))
            bad_dtype.push_back(name + " (" + t->dtype_name + ", in " + ck.file_of(*t) + ")");
    }
    for (const TensorView* t : ck.tensors()) {
        if (expected.count(t->name)) continue;
        if (tied && t->name == F.lm_head) continue;  // ignored, as transformers does
        int64_t layer;
        std::string rest;
        // Old conversions store the RoPE buffer; it is recomputed from the config.
        if (split_layer_name(t->name, F.layer_prefix, &layer, &rest) && is_ignored_layer_tensor(F, rest)) continue;
        // (A.X-K1's dense layers: their files hold a post_mlp_layernorm they do not use, ignored as transformers does)
        if (c.moe_out_norm && split_layer_name(t->name, F.layer_prefix, &layer, &rest) &&
            rest == F.layer_tensors[T_POST_MLP_NORM])
            continue;
        // (EXAONE MoE's and Mellum's multi-token-prediction module: mtp.*, as transformers ignores it)
        if ((F.sigmoid_router == ModelFamily::ROUTER_EXAONE_MOE || is_model_type(F, {"mellum"})) && t->name.compare(0, 4, "mtp.") == 0) continue;
        // GLM-4 MoE's multi-token-prediction layers, after the model's own (not used to decode)
        if (grouped_router(F) && split_layer_name(t->name, F.layer_prefix, &layer, &rest) && layer >= L &&
            layer < L + (c.nextn_layers_field >= 0 ? c.nextn_layers_field : router_defaults(F).nextn))
            continue;
        unexpected.push_back(t->name);
    }
    // Keep layer order natural (layers.2 before layers.10) for messages.
    auto by_layer = [&F](const std::string& a, const std::string& b) {
        int64_t la, lb;
        std::string ra, rb;
        bool ia = split_layer_name(a, F.layer_prefix, &la, &ra), ib = split_layer_name(b, F.layer_prefix, &lb, &rb);
        if (ia != ib) return ia < ib;
        if (!ia) return a < b;
        return la != lb ? la < lb : ra < rb;
    };
    std::sort(missing.begin(), missing.end(), by_layer);
    std::sort(unexpected.begin(), unexpected.end(), by_layer);
    if (!missing.empty() || !unexpected.empty() || L <= 0) {
        std::string msg = std::string("not a ") + F.name + " checkpoint this engine can run: " + ck.files()[0]->path();
        if (c.from_file) msg += " (architecture " + c.architecture_str() + ")";
        if (L <= 0) msg += std::string("; no ") + F.layer_prefix + "N tensors";
        if (!missing.empty()) msg += format("; missing %zu tensors: ", missing.size()) + compact_names(missing, F.layer_prefix);
        if (!unexpected.empty())
            msg += format("; unexpected %zu tensors: ", unexpected.size()) + compact_names(unexpected, F.layer_prefix);
        // Biases the config does not enable: say which field would.
        bool attn_bias = false, mlp_bias = false;
        for (const auto& n : unexpected) {
            attn_bias |= n.find("self_attn.") != std::string::npos && n.size() > 5 && n.substr(n.size() - 5) == ".bias";
            mlp_bias |= n.find("mlp.") != std::string::npos && n.size() > 5 && n.substr(n.size() - 5) == ".bias";
        }
        if (attn_bias && F.attn_bias == ModelFamily::CONFIG_ATTENTION_BIAS && !c.qkv_bias)
            msg += " (config.json's attention_bias is not true)";
        if (attn_bias && F.attn_bias == ModelFamily::CONFIG_QKV_BIAS && !c.qkv_bias)
            msg += " (config.json's use_qkv_bias is not true)";
        if ((attn_bias || mlp_bias) && F.attn_bias == ModelFamily::CONFIG_USE_BIAS && !c.qkv_bias)
            msg += " (config.json's " + c.use_bias_name + " is false)";
        if ((attn_bias || mlp_bias) && F.attn_bias == ModelFamily::CONFIG_USE_BIAS_OFF && !c.qkv_bias)
            msg += " (config.json's use_bias is not true)";
        if (attn_bias && F.attn_bias == ModelFamily::CONFIG_QKV_OUT_BIAS && !c.qkv_bias)
            msg += " (config.json's attention_bias is false)";
        else if (attn_bias && F.out_bias_field && !c.o_bias)
            msg += " (config.json's attention_out_bias is not true)";
        if (mlp_bias && F.config_mlp_bias && !c.mlp_bias) msg += " (config.json's mlp_bias is not true)";
        fail(VT_STATUS_UNSUPPORTED, "%s", msg.c_str());
    }
    if (!bad_dtype.empty()) {
        std::string list;
        for (size_t i = 0; i < bad_dtype.size() && i < 8; ++i) list += (i ? ", " : "") + bad_dtype[i];
        if (bad_dtype.size() > 8) list += format(", ... (%zu more)", bad_dtype.size() - 8);
        fail(VT_STATUS_UNSUPPORTED, "unsupported weight dtype (weights must be BF16, F16 or F32; matrices may also be GGML_Q8_0, GGML_Q4_0 or GGML_Q4_1): %s", list.c_str());
    }

    // Resolve what config.json did not say from the shapes (TinyLlama defaults otherwise).
    const TensorView* emb = ck.find(F.embed);
    // (Fused q|k|v or gate|up tensors: the config names the sizes; k0 is q0 then, and the
    // inferences below are not made from them.)
    // (LFM2: the first layer that attends)
    const int64_t attn0 = c.first_attention_layer();
    const TensorView* q0 = ck.find(layer_name(attn0, T_Q));
    const TensorView* k0 = F.fused_qkv || F.mla ? q0 : ck.find(layer_name(attn0, T_K));
    // (the first dense layer's gate_proj; an MoE model whose layers are all MoE has none)
    const TensorView* g0 = nullptr;
    for (int64_t l = 0; l < L && !g0; ++l)
        if (!c.moe_layer(l)) g0 = ck.find(layer_name(l, T_GATE));
    std::vector<std::string> problems;
    auto dim = [](const TensorView* t, size_t i) -> int64_t { return t && t->shape.size() == 2 ? t->shape[i] : -1; };
    if (c.hidden_size < 0) c.hidden_size = dim(emb, 1);
    if (c.vocab_size < 0) c.vocab_size = dim(emb, 0);
    if (c.head_dim < 0 && c.from_file && F.config_head_dim > 0) c.head_dim = F.config_head_dim;
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
    if (c.num_heads < 0 && !F.fused_qkv && !F.mla) c.num_heads = dim(q0, 0) > 0 && dim(q0, 0) % c.head_dim == 0 ? dim(q0, 0) / c.head_dim : -1;
    // (GPT-NeoX, GPT-2: multi-head attention only, their config classes read no num_key_value_heads;
    // GPTBigCode: one KV head when multi_query, true when left out)
    if (F.multi_query_field) c.num_kv_heads = c.multi_query != 0 ? 1 : c.num_heads;
    else if (F.kv_heads_are_heads) c.num_kv_heads = c.num_heads;
    // Falcon: num_kv_heads in the new decoder architecture; else one (multi_query, true when left
    // out) or one per head (its query_key_value then per-head [q, k, v]).
    if (F.falcon_norms && c.num_heads > 0) {
        if (c.new_decoder_architecture == 1) {
            c.num_kv_heads = c.falcon_num_kv_heads > 0 ? c.falcon_num_kv_heads : c.num_heads;
        } else if (c.multi_query != 0) {
            c.num_kv_heads = 1;
        } else {
            if (c.falcon_num_kv_heads > 0 && c.falcon_num_kv_heads != c.num_heads)
                fail(VT_STATUS_UNSUPPORTED, "%s: num_kv_heads %lld with multi_query false is not supported for %s "
                     "(without the new decoder architecture its query_key_value holds one key and value per head)",
                     c.path.c_str(), (long long)c.falcon_num_kv_heads, F.name);
            c.num_kv_heads = c.num_heads;
        }
    }
    if (c.num_kv_heads < 0) {
        if (c.from_file) c.num_kv_heads = c.num_heads;  // transformers' default
        else if (!F.fused_qkv) c.num_kv_heads = dim(k0, 0) > 0 && dim(k0, 0) % c.head_dim == 0 ? dim(k0, 0) / c.head_dim : -1;
    }
    // The MLP's width where the family's config class reads another field than intermediate_size
    // (one in config.json is then not theirs) or fills in 4 · hidden_size: Bloom 4 · hidden, MPT
    // expansion_ratio · d_model (as its own code: transformers' MptMLP is 4 · d_model whatever the
    // ratio, so a checkpoint with another ratio fails its shapes there), Falcon ffn_hidden_size,
    // GPT-Neo intermediate_size, GPT-2's lineage and GPT-J n_inner; each null: 4 · hidden.
    if (c.hidden_size > 0 && (c.from_file || F.alibi)) {
        const int64_t four = 4 * c.hidden_size;
        if (F.alibi) c.intermediate_size = (F.alibi == 2 && c.expansion_ratio > 0 ? c.expansion_ratio : 4) * c.hidden_size;
        else if (F.falcon_norms) c.intermediate_size = c.ffn_hidden_size > 0 ? c.ffn_hidden_size : four;
        else if (F.attention_types) c.intermediate_size = c.intermediate_size > 0 ? c.intermediate_size : four;
        else if ((F.pos_embed && !F.pos_embed_offset) || F.rotary_dim_field) c.intermediate_size = c.n_inner > 0 ? c.n_inner : four;
    }
    if (c.intermediate_size < 0)
        c.intermediate_size = !g0 ? c.moe_intermediate : F.fused_gate_up ? dim(g0, 0) / 2 : dim(g0, F.conv1d_weights ? 1 : 0);
    if (c.rms_norm_eps < 0) c.rms_norm_eps = c.from_file ? F.default_eps_with_config : F.default_eps_without_config;
    // (ApertusConfig and CwmConfig fill in llama3 scaling, Ministral3Config and Mistral4Config
    // YaRN, when config.json has no RoPE fields: not guessed here)
    // (Lfm3Config fills in proportional RoPE for the full layers and another base for the sliding
    // ones when config.json has no per-layer-type rope_parameters: not guessed either)
    if (F.short_conv == 3 && c.from_file && !c.rope_by_layer_type)
        fail(VT_STATUS_FORMAT_ERROR, "%s: field \"rope_parameters\" with \"full_attention\" and \"sliding_attention\" "
             "sets is missing (LFM3's RoPE: its config class fills them in, which a config.json of the model states)",
             c.path.c_str());
    else if (F.rope_fields_required && c.from_file && c.rope_theta < 0 && c.rope.kind == RopeScaling::NONE)
        fail(VT_STATUS_FORMAT_ERROR, "%s: field \"rope_parameters\" is missing (%s's RoPE: its config class "
             "fills in its own scaling, which a config.json of the model states)", c.path.c_str(), F.name);
    if (c.rope_theta < 0) c.rope_theta = F.default_rope_theta;
    // HunYuan's fixed NTK alpha: the base stretched as transformers' compute_ntk_alpha_rope_parameters
    // (in double, from config.json's numbers; the frequencies then as the default type's)
    if (c.rope.ntk_alpha > 0)
        c.rope_theta *= std::pow(c.rope.ntk_alpha, double(c.head_dim) / double(c.head_dim - 2));
    if (c.max_position_embeddings < 0) c.max_position_embeddings = F.default_max_positions;
    c.num_layers = L;
    if (F.gemma != ModelFamily::NOT_GEMMA) c.embed_scale = float(std::sqrt(double(c.hidden_size)));  // as transformers' normalizer
    // AFMoE: mup_enabled scales the embeddings by hidden_size ** 0.5 (false when left out)
    if (F.sigmoid_router == ModelFamily::ROUTER_AFMOE && c.mup_enabled == 1) c.embed_scale = float(std::sqrt(double(c.hidden_size)));
    if (F.minicpm_scales) {  // MiniCPM3Config's defaults: 12, 1.4, 256 (null: sqrt(layers), hidden_size)
        c.embed_scale = float(c.scale_emb > 0 ? c.scale_emb : 12.0);
        const double depth = c.scale_depth > 0 ? c.scale_depth : c.scale_depth == -2 ? std::sqrt(double(L)) : 1.4;
        c.residual_scale = float(depth / std::sqrt(double(L)));
        const int64_t base = c.dim_model_base > 0 ? c.dim_model_base : c.dim_model_base == -2 ? c.hidden_size : 256;
        c.logits_scaling = double(c.hidden_size) / double(base);
    }
    const std::string src = c.from_file ? c.path : "the tensor shapes (no config.json)";
    if (c.hidden_size <= 0 || c.vocab_size <= 0)
        fail(VT_STATUS_FORMAT_ERROR, "%s in %s is %s, expected [vocab_size, hidden_size]", F.embed,
             ck.file_of(*emb).c_str(), emb->shape_str().c_str());
    if (c.num_heads <= 0 || c.num_kv_heads <= 0 || c.intermediate_size <= 0)
        fail(VT_STATUS_FORMAT_ERROR, "cannot infer the attention heads / MLP size from %s (q_proj %s, k_proj %s, "
             "gate_proj %s with head_dim %lld)", src.c_str(), q0 ? q0->shape_str().c_str() : "(none)",
             k0 ? k0->shape_str().c_str() : "(none)",
             g0 ? g0->shape_str().c_str() : "(none: every layer is MoE)", (long long)c.head_dim);
    if (c.head_dim % 2 != 0)
        fail(VT_STATUS_FORMAT_ERROR, "%s: head_dim %lld must be even (RoPE rotates pairs)", src.c_str(),
             (long long)c.head_dim);
    // (DeepSeek's latent head: kv_lora_rank + qk_rope_head_dim, 576 as released, up to one
    // attention accumulator's floats)
    if (c.head_dim > (c.mla ? 4096 : 512))
        fail(VT_STATUS_UNSUPPORTED, "%s: %s %lld is larger than the %d this engine supports", src.c_str(),
             c.mla ? "kv_lora_rank + qk_rope_head_dim" : "head_dim", (long long)c.head_dim, c.mla ? 4096 : 512);
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
    if (c.mxfp4_experts && (H % 32 != 0 || c.moe_intermediate % 32 != 0))
        fail(VT_STATUS_FORMAT_ERROR, "%s: MXFP4 experts need hidden_size (%lld) and intermediate_size (%lld) to be "
             "multiples of 32 (its block)", src.c_str(), (long long)H, (long long)c.moe_intermediate);
    want(F.embed, {V, H});
    if (F.final_norm) want(F.final_norm, {H});
    if (!c.final_norm_bias.empty()) want(c.final_norm_bias, {H});
    if (!c.lm_head_bias.empty()) want(c.lm_head_bias, {V});
    if (!tied) want(F.lm_head, {V, H});
    if (F.pos_embed) want(F.pos_embed, {c.max_position_embeddings + F.pos_embed_offset, H});
    if (F.embed_norm && *F.embed_norm) {
        want(F.embed_norm, {H});
        want(bias_name(F.embed_norm), {H});
    }
    for (int64_t l = 0; l < L; ++l) {
        const int64_t QIN = c.mla ? c.num_heads * (c.mla_nope + c.mla_rope) : F.fused_qkv ? QD + 2 * KVD : QD;
        const std::vector<int64_t> shapes[T_COUNT] = {
            {QIN, H}, {KVD, H}, {KVD, H}, {H, c.mla ? c.num_heads * c.mla_v : QD}, {F.fused_gate_up ? 2 * I : I, H},
            {I, H}, {H, I}, {H}, {H}, {F.fused_qkv ? QD + 2 * KVD : QD}, {KVD}, {KVD}, {H}, {I}, {I}, {H},
            // (OLMo 2's and OLMoE's q/k norms span the whole projection)
            {F.qk_norm_full ? QD : c.head_dim}, {F.qk_norm_full ? KVD : c.head_dim}, {H}, {H}, {c.num_heads}, {H}, {H},
            {1}, {1}, {}, {},
            // (DeepSeek's latent attention)
            {c.mla_q_lora, H}, {c.mla_q_lora}, {c.num_heads * (c.mla_nope + c.mla_rope), c.mla_q_lora},
            {c.mla_kv_lora + c.mla_rope, H}, {c.mla_kv_lora}, {c.num_heads * (c.mla_nope + c.mla_v), c.mla_kv_lora},
            // (LFM2's short convolution)
            {3 * H, H}, {H, 1, c.conv_kernel}, {H, H}, {3 * H}, {H}, {H},
            {c.attn_gate_per_dim ? c.num_heads * c.head_dim : c.num_heads, H}};  // (LFM3's heads' gate; AFMoE's per dim)
        for (int k = 0; k < T_COUNT; ++k) {
            if (!layer_tensor_expected(c, LayerTensor(k), l)) continue;
            const TensorView* t = ck.find(layer_name(l, k));
            if (t && t->out_in && !(F.conv1d_weights && k <= T_DOWN))
                fail(VT_STATUS_FORMAT_ERROR, "tensor %s in %s: pyvt_out_in is for GPT-2's Conv1D weights only, not %s's",
                     t->name.c_str(), ck.file_of(*t).c_str(), F.name);
            if (F.conv1d_weights && k <= T_DOWN) {  // (GPT-2's Conv1D: [in, out] as stored; pyvt_out_in: [out, in])
                want(layer_name(l, k), t && t->out_in ? shapes[k] : std::vector<int64_t>{shapes[k][1], shapes[k][0]});
                continue;
            }
            // (xIELU's scalars: [] as save_pretrained writes a 0-d buffer, or [1])
            if (k >= T_ACT_ALPHA_P && k <= T_ACT_EPS && t && t->numel() == 1 && t->shape.size() <= 1) continue;
            want(layer_name(l, k), shapes[k]);
        }
        for (const MoeTensor& t : moe_layer_tensors(c, l)) want(t.name, t.shape());
    }
    if (!problems.empty()) {
        std::string list;
        for (size_t i = 0; i < problems.size() && i < 8; ++i) list += (i ? "; " : "") + problems[i];
        if (problems.size() > 8) list += format("; ... (%zu more)", problems.size() - 8);
        fail(VT_STATUS_FORMAT_ERROR,
             "tensor shapes in %s do not match %s (hidden_size %lld, intermediate_size %lld, vocab_size %lld, "
             "num_attention_heads %lld, num_key_value_heads %lld, head_dim %lld%s): %s",
             ck.files()[0]->path().c_str(), src.c_str(), (long long)H, (long long)I, (long long)V,
             (long long)c.num_heads, (long long)c.num_kv_heads, (long long)c.head_dim,
             c.num_experts > 0 ? format(", %lld experts of width %lld, shared expert %lld", (long long)c.num_experts,
                                        (long long)c.moe_intermediate, (long long)c.shared_intermediate).c_str() : "",
             list.c_str());
    }
    *file_layers = L;
}


// YaRN / LongRoPE: what config.json may leave out, as transformers fills it in
// (modeling_rope_utils: standardize_rope_params, _compute_yarn_parameters,
// _compute_longrope_parameters); the factor lists' lengths against head_dim.
void resolve_rope(LlamaConfig& c) {
    // Partial rotary embeddings (Phi-3 family: Phi-4-mini's 0.75): transformers rotates
    // int(head_dim · factor) dims; the other families' modeling code has no such path.
    c.rotary_dim = c.mla ? c.mla_rope : c.head_dim;  // (DeepSeek: the rope dims of its latent head)
    if (c.mla && c.partial_rotary_given) {  // (Mistral 4's: qk_rope / (qk_nope + qk_rope), its head's rope share)
        const int64_t rot = int64_t(double(c.mla_nope + c.mla_rope) * c.partial_rotary_factor);
        if (rot != c.mla_rope)
            fail(VT_STATUS_UNSUPPORTED, "%s: partial_rotary_factor %g rotates %lld of the query head's %lld dims, not its "
                 "qk_rope_head_dim %lld (the latent attention rotates those)", c.from_file ? c.path.c_str() : "config.json",
                 c.partial_rotary_factor, (long long)rot, (long long)(c.mla_nope + c.mla_rope), (long long)c.mla_rope);
        c.partial_rotary_factor = 1.0;
    }
    if (c.family && c.family->default_rotary_factor > 0 && !c.partial_rotary_given)
        c.partial_rotary_factor = c.family->default_rotary_factor;  // (Phi 0.5, StableLM 0.25: their configs')
    if (c.family && c.family->rotary_dim_or_factor && c.rotary_dim_field > 0) {  // (MiniMax-M2's legacy field)
        if (c.rotary_dim_field % 2 || c.rotary_dim_field > c.head_dim)
            fail(VT_STATUS_FORMAT_ERROR, "%s: rotary_dim %lld does not fit head_dim %lld (an even number of dims up to "
                 "head_dim is needed)", c.from_file ? c.path.c_str() : "config.json", (long long)c.rotary_dim_field,
                 (long long)c.head_dim);
        c.rotary_dim = c.rotary_dim_field;
    } else if (c.rope.kind == RopeScaling::PROPORTIONAL) {
        // (proportional: every dim in rotate-half pairs, int(factor · head_dim // 2) of them turning)
        c.rope_angles = int64_t(std::floor(c.partial_rotary_factor * double(c.head_dim) / 2.0));
    } else if (c.partial_rotary_factor != 1.0) {
        const std::string where = c.from_file ? c.path : "config.json";
        if (!c.family || (std::strcmp(c.family->name, "Phi3") != 0 && c.family->default_rotary_factor == 0 &&
                          !c.family->rotary_dim_or_factor))
            fail(VT_STATUS_UNSUPPORTED, "%s: partial_rotary_factor %g is not supported for %s (partial rotary "
                 "embeddings: Phi, Phi-3, StableLM, GLM, Nemotron and Sarvam-MoE families only)", where.c_str(), c.partial_rotary_factor,
                 c.family ? c.family->name : "this family");
        c.rotary_dim = int64_t(double(c.head_dim) * c.partial_rotary_factor);
        if (c.rotary_dim < 2 || c.rotary_dim % 2)
            fail(VT_STATUS_FORMAT_ERROR, "%s: partial_rotary_factor %g gives %lld rotary dims of head_dim %lld "
                 "(an even number >= 2 is needed)", where.c_str(), c.partial_rotary_factor, (long long)c.rotary_dim,
                 (long long)c.head_dim);
    }
    if (c.family && c.family->rotary_dim_field) {  // GPT-J: rotary_dim itself (GPTJConfig's default 64)
        const std::string where = c.from_file ? c.path : "config.json";
        if (c.rotary_dim_field == 0)
            fail(VT_STATUS_UNSUPPORTED, "%s: rotary_dim null is not supported for %s (transformers then rotates by "
                 "hidden_size dims, which fits one head only)", where.c_str(), c.family->name);
        const int64_t rd = c.rotary_dim_field > 0 ? c.rotary_dim_field : 64;
        if (rd % 2 || rd > c.head_dim)
            fail(VT_STATUS_FORMAT_ERROR, "%s: rotary_dim %lld does not fit head_dim %lld (an even number of dims up to "
                 "head_dim is needed)", where.c_str(), (long long)rd, (long long)c.head_dim);
        c.rotary_dim = rd;
    }
    RopeScaling& r = c.rope;
    // PhiMoE: PhimoeRotaryEmbedding scales cos / sin by short_mscale / long_mscale (both required:
    // PhimoeConfig raises without them) for any type but default; only longrope is read here.
    if (c.family && c.family->sparsemixer && r.kind != RopeScaling::NONE && r.kind != RopeScaling::LONGROPE)
        fail(VT_STATUS_UNSUPPORTED, "%s: %s of a type other than default or longrope is not supported for %s",
             c.from_file ? c.path.c_str() : "config.json", r.field.c_str(), c.family->name);
    if (r.kind != RopeScaling::YARN && r.kind != RopeScaling::LONGROPE) return;
    const std::string src = c.from_file ? c.path : "config.json";
    const char* type = r.kind == RopeScaling::YARN ? "yarn" : "longrope";
    if (r.original_max_position_embeddings < 0) r.original_max_position_embeddings = c.original_max_positions;
    if (r.original_max_position_embeddings < 0) {
        if (r.kind == RopeScaling::YARN)
            fail(VT_STATUS_FORMAT_ERROR, "%s: %s.original_max_position_embeddings is missing (rope type yarn)",
                 src.c_str(), r.field.c_str());
        r.original_max_position_embeddings = c.max_position_embeddings;
    }
    if (r.factor < 0) r.factor = double(c.max_position_embeddings) / double(r.original_max_position_embeddings);
    if (r.attention_factor < 0) {
        if (r.kind == RopeScaling::YARN) {
            auto mscale = [](double scale, double m) { return scale <= 1 ? 1.0 : 0.1 * m * std::log(scale) + 1.0; };
            r.attention_factor = r.mscale > 0 && r.mscale_all_dim > 0
                                     ? mscale(r.factor, r.mscale) / mscale(r.factor, r.mscale_all_dim)
                                     : mscale(r.factor, 1.0);
        } else {
            r.attention_factor =
                r.factor <= 1.0 ? 1.0
                                : std::sqrt(1.0 + std::log(r.factor) / std::log(double(r.original_max_position_embeddings)));
        }
    }
    if (r.kind == RopeScaling::LONGROPE)
        for (const auto* v : {&r.long_factor, &r.short_factor})
            if (int64_t(v->size()) != c.rotary_dim / 2)
                fail(VT_STATUS_FORMAT_ERROR, "%s: %s.%s has %zu entries; %lld rotary dims need %lld (rope type %s)",
                     src.c_str(), r.field.c_str(), v == &r.long_factor ? "long_factor" : "short_factor", v->size(),
                     (long long)c.rotary_dim, (long long)(c.rotary_dim / 2), type);
    if (c.family && c.family->sparsemixer) {  // (PhiMoE: its mscales replace the attention factor)
        for (auto [v, key] : {std::pair<double, const char*>{r.short_mscale, "short_mscale"}, {r.long_mscale, "long_mscale"}})
            if (v < 0)
                fail(VT_STATUS_FORMAT_ERROR, "%s: %s.%s is missing (%s's rope type longrope needs it)", src.c_str(),
                     r.field.c_str(), key, c.family->name);
        r.attention_factor = r.short_mscale;
        r.attention_factor_long = r.long_mscale;
    }
    for (double a : {r.attention_factor, r.attention_factor_long < 0 ? r.attention_factor : r.attention_factor_long}) {
        const float af = float(a);
        if (!std::isfinite(af) || !(af > 0.0f))
            fail(VT_STATUS_FORMAT_ERROR, "%s: the attention factor of %s (%g) is not a finite positive float32",
                 src.c_str(), r.field.c_str(), a);
    }
}

// The engine computes in float32: every constant derived from the config must be a finite,
// nonzero float32 (rope_theta 1e-300 rounds to 0, rms_norm_eps 1e300 to inf, a rope factor of
// 1e-300 divides the frequencies into inf). One line naming config.json and the field.
void check_float32(const LlamaConfig& c) {
    const std::string src = c.from_file ? c.path : "the defaults (no config.json)";
    auto f32_ok = [](double x) {
        const float f = float(x);
        return std::isfinite(f) && f > 0.0f;
    };
    auto refuse = [&](const std::string& field, double v, const char* why) {
        fail(VT_STATUS_FORMAT_ERROR, "%s: field \"%s\" = %g %s", src.c_str(), field.c_str(), v, why);
    };
    const char* range = "is out of range: it must be a finite positive float32 (about 1.2e-38 .. 3.4e38)";
    if (!f32_ok(c.rms_norm_eps) || float(c.rms_norm_eps) < 1.17549435e-38f) refuse("rms_norm_eps", c.rms_norm_eps, range);
    if (!f32_ok(c.rope_theta) || float(c.rope_theta) < 1.17549435e-38f) refuse("rope_theta", c.rope_theta, range);
    if (c.rope_local_theta >= 0 && (!f32_ok(c.rope_local_theta) || float(c.rope_local_theta) < 1.17549435e-38f))
        refuse("rope_local_base_freq", c.rope_local_theta, range);
    const std::string rf = c.rope.field;
    if (c.rope.kind != RopeScaling::NONE && (!f32_ok(c.rope.factor) || float(c.rope.factor) < 1.17549435e-38f))
        refuse(rf + ".factor", c.rope.factor, range);
    if (c.rope.kind == RopeScaling::LLAMA3) {
        if (!f32_ok(c.rope.low_freq_factor)) refuse(rf + ".low_freq_factor", c.rope.low_freq_factor, range);
        if (!f32_ok(c.rope.high_freq_factor)) refuse(rf + ".high_freq_factor", c.rope.high_freq_factor, range);
    }
    // Gemma 2 / 3: scores scale by query_pre_attn_scalar^-0.5 and are capped as cap·tanh(x / cap)
    // in float32; a scale or a cap of 0 or inf gives NaN logits (1e-300 or 1e300 in config.json).
    if (c.family && c.family->gemma_block()) {
        const double qscale = std::pow(c.query_pre_attn_scalar, -0.5);
        if (!f32_ok(qscale) || float(qscale) < 1.17549435e-38f)
            fail(VT_STATUS_FORMAT_ERROR, "%s: field \"query_pre_attn_scalar\" = %g is out of range: the attention "
                 "scale it gives, %g, must be a finite positive float32", src.c_str(), c.query_pre_attn_scalar, qscale);
        if (c.attn_softcap > 0 && (!f32_ok(c.attn_softcap) || float(c.attn_softcap) < 1.17549435e-38f))
            refuse("attn_logit_softcapping", c.attn_softcap, range);
        if (c.final_softcap > 0 && (!f32_ok(c.final_softcap) || float(c.final_softcap) < 1.17549435e-38f))
            refuse("final_logit_softcapping", c.final_softcap, range);
    }
    if (c.family && c.family->multipliers) {  // Granite: each a finite positive float32
        // (as config.json says them: two are kept as float32 already)
        auto given = [](double v) { return v > 0 ? v : 1.0; };
        for (auto [field, v] : {std::pair<const char*, double>{"embedding_multiplier", given(c.embedding_multiplier)},
                                {"attention_multiplier", given(c.attn_scale)},
                                {"residual_multiplier", given(c.residual_multiplier)},
                                // (HyperCLOVA X: logits_scaling, a multiplier, is kept as logit_scale)
                                {"logits_scaling", c.family->multipliers == 2 ? c.logit_scale : c.logits_scaling}})
            if (!f32_ok(v) || float(v) < 1.17549435e-38f) refuse(field, v, range);
    }
    if (c.family && c.family->logit_scale && (!f32_ok(c.logit_scale) || float(c.logit_scale) < 1.17549435e-38f))
        refuse("logit_scale", c.logit_scale, range);
    const std::vector<float> inv = ops::rope_inv_freq(c);
    // (proportional RoPE: the pairs from rope_angles on turn at frequency 0 by design)
    const size_t turning = c.rope.kind == RopeScaling::PROPORTIONAL ? std::min(inv.size(), size_t(c.rope_angles)) : inv.size();
    for (size_t k = 0; k < turning; ++k)
        if (!(std::isfinite(inv[k]) && inv[k] > 0.0f)) {
            const bool scaled = c.rope.kind != RopeScaling::NONE;
            fail(VT_STATUS_FORMAT_ERROR,
                 "%s: field \"%s\" = %g gives RoPE inverse frequency %zu of %zu = %g in float32 (it must be finite "
                 "and nonzero)", src.c_str(), scaled ? (rf + ".factor").c_str() : "rope_theta",
                 scaled ? c.rope.factor : c.rope_theta, k, inv.size(), double(inv[k]));
        }
}

}  // namespace

std::string LlamaConfig::architecture_str() const {
    std::string s;
    for (size_t i = 0; i < architectures.size(); ++i) s += (i ? ", " : "") + architectures[i];
    if (!model_type.empty()) s += (s.empty() ? "model_type " : " (model_type ") + model_type + (s.empty() ? "" : ")");
    return s.empty() ? "unknown" : s;
}

LlamaConfig read_config(const std::string& dir) {
    LlamaConfig c;
    const std::string path = join_path(dir, "config.json");
    if (entry_exists(path)) {
        c.from_file = true;
        c.path = path;
        const json::Document doc = parse_file(path);
        const json::Value& root = doc.root();
        Reader r(path, root);

        if (const json::Value* a = r.get(root, "architectures")) {
            if (!a->is_array()) r.bad("architectures", *a, "a list of strings");
            for (const auto& e : a->arr) {
                if (!e.is_string()) r.bad("architectures", *a, "a list of strings");
                c.architectures.push_back(e.s);
            }
        }
        c.model_type = r.string(root, "model_type");
        c.hidden_act = r.string(root, "hidden_act");
        if (c.hidden_act.empty()) c.hidden_act = r.string(root, "hidden_activation");

        c.hidden_size = r.integer(root, "hidden_size", 1, kMaxDim);
        c.intermediate_size = r.integer(root, "intermediate_size", 1, kMaxDim);
        // (EXAONE 3 / 3.5: ExaoneConfig's attribute_map makes num_layers, layer_norm_epsilon and
        // activation_function the fields, winning over num_hidden_layers, rms_norm_eps and hidden_act
        // when both spellings are there, as in transformers)
        const bool exaone_aliases = c.model_type == "exaone";
        if (exaone_aliases) c.num_layers = r.integer(root, "num_layers", 1, 100000);
        if (c.num_layers < 0) c.num_layers = r.integer(root, "num_hidden_layers", 1, 100000);
        c.num_heads = r.integer(root, "num_attention_heads", 1, 65536);
        c.num_kv_heads = r.integer(root, "num_key_value_heads", 1, 65536);
        c.head_dim = r.integer(root, "head_dim", 1, 65536);
        c.vocab_size = r.integer(root, "vocab_size", 1, INT32_MAX);
        c.max_position_embeddings = r.integer(root, "max_position_embeddings", 1, int64_t(1) << 40);
        c.original_max_positions = r.integer(root, "original_max_position_embeddings", 1, kMaxDim);
        c.rms_norm_eps = r.positive(root, "rms_norm_eps");
        c.layer_norm_eps = r.positive(root, "layer_norm_eps");  // (Phi's LayerNorm)
        c.qk_layernorm = r.boolean(root, "qk_layernorm");
        c.use_qkv_bias = r.boolean(root, "use_qkv_bias");
        c.use_bias = r.boolean(root, "use_bias");
        if (c.layer_norm_eps < 0) c.layer_norm_eps = r.positive(root, "norm_epsilon");  // (Starcoder2's name)
        if (c.layer_norm_eps < 0) c.layer_norm_eps = r.positive(root, "norm_eps");  // (Nemotron's)
        c.use_parallel_residual = r.boolean(root, "use_parallel_residual");
        // GPT-2's names (its config classes' attribute_map: n_embd, n_layer, n_head, n_positions,
        // n_inner; layer_norm_epsilon, activation_function)
        if (c.hidden_size < 0) c.hidden_size = r.integer(root, "n_embd", 1, kMaxDim);
        if (c.num_layers < 0) c.num_layers = r.integer(root, "n_layer", 1, 100000);
        if (c.num_heads < 0) c.num_heads = r.integer(root, "n_head", 1, 65536);
        if (c.max_position_embeddings < 0) c.max_position_embeddings = r.integer(root, "n_positions", 1, int64_t(1) << 40);
        c.n_inner = r.integer(root, "n_inner", 1, kMaxDim);
        c.rotary_dim_field = r.integer(root, "rotary_dim", 1, 65536);  // (GPT-J)
        // OPT's names (ffn_dim, enable_bias) and the fields of its variants
        if (c.intermediate_size < 0) c.intermediate_size = r.integer(root, "ffn_dim", 1, kMaxDim);
        if (c.use_bias < 0 && (c.use_bias = r.boolean(root, "enable_bias")) >= 0) c.use_bias_name = "enable_bias";
        c.do_layer_norm_before = r.boolean(root, "do_layer_norm_before");
        c.remove_final_layer_norm = r.boolean(root, "_remove_final_layer_norm");
        c.layer_norm_elementwise_affine = r.boolean(root, "layer_norm_elementwise_affine");
        c.word_embed_proj_dim = r.integer(root, "word_embed_proj_dim", 1, kMaxDim);
        // Falcon's names (num_kv_heads, ffn_hidden_size, activation, bias; n_embed: an old one)
        c.new_decoder_architecture = r.boolean(root, "new_decoder_architecture");
        c.parallel_attn = r.boolean(root, "parallel_attn");
        c.alibi = r.boolean(root, "alibi");
        c.apply_residual_connection_post_layernorm = r.boolean(root, "apply_residual_connection_post_layernorm");
        // MPT's names (d_model, n_heads, n_layers, max_seq_len, expansion_ratio) and attn_config
        if (c.hidden_size < 0) c.hidden_size = r.integer(root, "d_model", 1, kMaxDim);
        if (c.num_heads < 0) c.num_heads = r.integer(root, "n_heads", 1, 65536);
        if (c.num_layers < 0) c.num_layers = r.integer(root, "n_layers", 1, 100000);
        if (c.max_position_embeddings < 0) c.max_position_embeddings = r.integer(root, "max_seq_len", 1, int64_t(1) << 40);
        c.expansion_ratio = r.integer(root, "expansion_ratio", 1, 1024);
        c.no_bias = r.boolean(root, "no_bias");
        if (const json::Value* ac = r.get(root, "attn_config")) {
            if (!ac->is_object()) r.bad("attn_config", *ac, "an object");
            if (const json::Value* cq = ac->find("clip_qkv"); cq && !cq->is_null()) {
                if (!cq->is_number() || !(cq->d > 0) || !std::isfinite(float(cq->d)))
                    r.bad("attn_config.clip_qkv", *cq, "a finite positive number or null");
                c.clip_qkv = cq->d;
            }
            if (const json::Value* ss = ac->find("softmax_scale"); ss && !ss->is_null()) {
                if (!ss->is_number() || !(ss->d > 0) || !std::isfinite(float(ss->d)))
                    r.bad("attn_config.softmax_scale", *ss, "a finite positive number or null");
                c.softmax_scale = ss->d;
            }
            c.qk_ln = r.boolean(*ac, "qk_ln");
            c.prefix_lm = r.boolean(*ac, "prefix_lm");
            c.attn_uses_sequence_id = r.boolean(*ac, "attn_uses_sequence_id");
            c.attn_alibi = r.boolean(*ac, "alibi");
            c.alibi_bias_max = r.integer(*ac, "alibi_bias_max", 1, 1024);
        }
        c.num_ln_in_parallel_attn = r.integer(root, "num_ln_in_parallel_attn", 1, 2);
        c.falcon_num_kv_heads = r.integer(root, "num_kv_heads", 1, 65536);
        c.ffn_hidden_size = r.integer(root, "ffn_hidden_size", 1, kMaxDim);
        if (c.hidden_size < 0) c.hidden_size = r.integer(root, "n_embed", 1, kMaxDim);
        c.activation_field = r.string(root, "activation");
        if (c.use_bias < 0 && (c.use_bias = r.boolean(root, "bias")) >= 0) c.use_bias_name = "bias";
        // GPT-Neo's names (num_heads, num_layers, window_size) and attention_types, expanded into
        // layer_types: [[["global", "local"], 12]] -> global, local, ... (24 layers)
        if (c.num_heads < 0) c.num_heads = r.integer(root, "num_heads", 1, 65536);
        if (c.num_layers < 0) c.num_layers = r.integer(root, "num_layers", 1, 100000);
        c.window_size = r.integer(root, "window_size", 1, int64_t(1) << 40);
        if (const json::Value* at = r.get(root, "attention_types")) {
            const char* want = "a list of [[\"global\" | \"local\", ...], count] pairs";
            if (!at->is_array()) r.bad("attention_types", *at, want);
            for (const auto& item : at->arr) {
                if (!item.is_array() || item.arr.size() != 2 || !item.arr[0].is_array() || item.arr[1].type != json::Type::Int ||
                    item.arr[1].i < 0 || item.arr[1].i > 100000)
                    r.bad("attention_types", *at, want);
                for (int64_t n = 0; n < item.arr[1].i; ++n)
                    for (const auto& t : item.arr[0].arr) {
                        if (!t.is_string() || (t.s != "global" && t.s != "local")) r.bad("attention_types", *at, want);
                        if (c.attention_types.size() > 100000) r.bad("attention_types", *at, want);
                        c.attention_types.push_back(t.s == "local" ? "sliding_attention" : "full_attention");
                    }
            }
        }
        if (const json::Value* rd = root.find("rotary_dim"); rd && rd->is_null()) c.rotary_dim_field = 0;
        if (c.layer_norm_eps < 0) c.layer_norm_eps = r.positive(root, "layer_norm_epsilon");
        c.activation_function = r.string(root, "activation_function");
        c.multi_query = r.boolean(root, "multi_query");
        c.scale_attn_weights = r.boolean(root, "scale_attn_weights");
        c.scale_attn_by_inverse_layer_idx = r.boolean(root, "scale_attn_by_inverse_layer_idx");
        c.add_cross_attention = r.boolean(root, "add_cross_attention");
        c.rope_theta = r.positive(root, "rope_theta");
        c.rope_theta_top = c.rope_theta;
        c.tie_word_embeddings = r.boolean(root, "tie_word_embeddings");
        if (const json::Value* prf = r.get(root, "partial_rotary_factor")) {
            if (!prf->is_number() || !(prf->d > 0) || !(prf->d <= 1))
                r.bad("partial_rotary_factor", *prf, "a number in (0, 1]");
            c.partial_rotary_factor = prf->d;
            c.partial_rotary_given = true;
        }
        // GPT-NeoX's names for them (GPTNeoXConfig moves them into rope_parameters)
        if (const json::Value* rp = r.get(root, "rotary_pct"); rp && !c.partial_rotary_given) {
            if (!rp->is_number() || !(rp->d > 0) || !(rp->d <= 1)) r.bad("rotary_pct", *rp, "a number in (0, 1]");
            c.partial_rotary_factor = rp->d;
            c.partial_rotary_given = true;
        }
        if (c.rope_theta < 0) c.rope_theta = r.positive(root, "rotary_emb_base");
        c.attention_bias_field = r.boolean(root, "attention_bias");
        c.attention_out_bias = r.boolean(root, "attention_out_bias");
        c.mlp_bias_field = r.boolean(root, "mlp_bias");
        c.qkv_bias_field = r.boolean(root, "qkv_bias");
        c.use_sliding_window = r.boolean(root, "use_sliding_window");
        // (0 or null: no window — Qwen2MoeConfig writes 0 when use_sliding_window is false)
        c.sliding_window = r.integer(root, "sliding_window", 0, int64_t(1) << 40);
        if (const json::Value* sw = root.find("sliding_window"); sw && sw->is_null()) c.sliding_window = 0;
        c.max_window_layers = r.integer(root, "max_window_layers", 0, 100000);
        c.query_pre_attn_scalar = r.positive(root, "query_pre_attn_scalar");
        for (auto [key, out] : {std::pair<const char*, double*>{"attn_logit_softcapping", &c.attn_logit_softcapping},
                                {"final_logit_softcapping", &c.final_logit_softcapping}}) {
            *out = r.positive(root, key);
            if (const json::Value* v = root.find(key); v && v->is_null()) *out = 0;
        }
        if (const json::Value* lt = r.get(root, "layer_types")) {
            if (!lt->is_array()) r.bad("layer_types", *lt, "a list of strings");
            for (const auto& e : lt->arr) {
                if (!e.is_string()) r.bad("layer_types", *lt, "a list of strings");
                c.layer_types.push_back(e.s);
            }
        }
        if (const json::Value* mt = r.get(root, "mlp_layer_types")) {
            if (!mt->is_array()) r.bad("mlp_layer_types", *mt, "a list of \"dense\" / \"sparse\"");
            for (const auto& e : mt->arr) {
                if (!e.is_string() || (e.s != "dense" && e.s != "sparse"))
                    r.bad("mlp_layer_types", *mt, "a list of \"dense\" / \"sparse\"");
                c.mlp_layer_types.push_back(e.s);
            }
        }
        if (const json::Value* rs = r.get(root, "rope_scaling")) read_rope(r, *rs, "rope_scaling", c);
        if (const json::Value* rp = r.get(root, "rope_parameters")) {
            // Gemma 3 (transformers >= 5): one set per layer type.
            const json::Value* full = rp->is_object() ? rp->find("full_attention") : nullptr;
            if (full && full->is_object()) {
                c.rope_by_layer_type = true;
                read_rope(r, *full, "rope_parameters.full_attention", c);
                if (const json::Value* sl = rp->find("sliding_attention"); sl && sl->is_object()) {
                    LlamaConfig local;
                    read_rope(r, *sl, "rope_parameters.sliding_attention", local);
                    if (local.rope.kind != RopeScaling::NONE)
                        fail(VT_STATUS_UNSUPPORTED, "%s: rope_parameters.sliding_attention with a rope type other than "
                             "default is not supported", path.c_str());
                    if (local.partial_rotary_given && local.partial_rotary_factor != 1.0)
                        fail(VT_STATUS_UNSUPPORTED, "%s: rope_parameters.sliding_attention.partial_rotary_factor %g is not "
                             "supported (the sliding layers rotate every dim)", path.c_str(), local.partial_rotary_factor);
                    c.rope_local_theta = local.rope_theta;
                    c.rope_local_given = true;
                }
            } else {
                c.rope_parameters_flat = !rp->is_null();
                read_rope(r, *rp, "rope_parameters", c);
            }
        }
        if (c.rope_local_theta < 0) c.rope_local_theta = r.positive(root, "rope_local_base_freq");
        // (EXAONE 4 may write it as a string of L / G, one per layer of the pattern: its layer_types
        // say the same, and transformers computes with them)
        if (const json::Value* swp = r.get(root, "sliding_window_pattern"); swp && swp->is_string()) {
            // "LLLG": every 4th layer global, as the integer 4
            const std::string pat(swp->s);
            if (pat.empty() || pat.size() > 100000 || pat.back() != 'G' || pat.find_first_not_of('L') != pat.size() - 1)
                r.bad("sliding_window_pattern", *swp, "an integer or a string of L ending in one G");
            c.sliding_window_pattern = int64_t(pat.size());
        } else {
            // (0: EXAONE 4's "no window", which its layer_types then say)
            c.sliding_window_pattern = r.integer(root, "sliding_window_pattern", 0, 100000);
        }
        c.use_bidirectional_attention = r.boolean(root, "use_bidirectional_attention");
        c.num_experts_field = r.integer_or_list(root, "num_experts", 0, 65536, &c.num_experts_list);
        if (c.num_experts_field < 0) c.num_experts_field = r.integer(root, "num_local_experts", 0, 65536);
        c.experts_per_tok_field = r.integer(root, "num_experts_per_tok", 1, 65536);
        if (c.experts_per_tok_field < 0)  // gpt-oss's original name for it
            if ((c.experts_per_tok_field = r.integer(root, "experts_per_token", 1, 65536, "experts_per_token")) > 0)
                c.experts_per_tok_key = "experts_per_token";
        c.moe_intermediate_field = r.integer_or_list(root, "moe_intermediate_size", 1, kMaxDim, &c.moe_intermediate_list);
        c.shared_intermediate_field = r.integer(root, "shared_expert_intermediate_size", 0, kMaxDim);
        if (c.shared_intermediate_field < 0)  // GraniteMoeShared's name for it
            c.shared_intermediate_field = r.integer(root, "shared_intermediate_size", 0, kMaxDim);
        if (c.num_experts_field < 0) c.num_experts_field = r.integer(root, "n_routed_experts", 0, 65536);
        if (c.num_experts_field < 0) c.num_experts_field = r.integer(root, "moe_num_experts", 0, 65536);  // (ERNIE 4.5)
        if (c.experts_per_tok_field < 0 && (c.experts_per_tok_field = r.integer(root, "moe_k", 1, 65536, "moe_k")) > 0)
            c.experts_per_tok_key = "moe_k";
        if (c.experts_per_tok_field < 0 &&  // (HunYuan MoE: one number, or one per layer)
            (c.experts_per_tok_field = r.integer_or_list(root, "moe_topk", 1, 65536, &c.moe_topk_list)) > 0)
            c.experts_per_tok_key = "moe_topk";
        c.num_shared_expert_field = r.integer_or_list(root, "num_shared_expert", 0, 65536, &c.num_shared_expert_list);
        c.moe_layer_num_skipped = r.integer(root, "moe_layer_num_skipped", 0, 100000);
        c.use_cla = r.boolean(root, "use_cla");
        c.use_mixed_mlp_moe = r.boolean(root, "use_mixed_mlp_moe");
        c.moe_start_field = r.integer(root, "moe_layer_start_index", 0, 100000);
        if (r.get(root, "moe_layer_end_index")) c.moe_end_field = r.integer(root, "moe_layer_end_index", -1, 100000);
        c.moe_interval_field = r.integer(root, "moe_layer_interval", 1, 100000);
        c.norm_topk_prob_field = r.boolean(root, "norm_topk_prob");
        c.n_group_field = r.integer(root, "n_group", 1, 65536);
        c.topk_group_field = r.integer(root, "topk_group", 1, 65536);
        c.n_shared_experts_field = r.integer(root, "n_shared_experts", 0, 65536);
        if (c.n_shared_experts_field < 0)  // (ERNIE 4.5)
            c.n_shared_experts_field = r.integer(root, "moe_num_shared_experts", 0, 65536);
        if (c.n_shared_experts_field < 0)  // (EXAONE MoE)
            c.n_shared_experts_field = r.integer(root, "num_shared_experts", 0, 65536);
        c.first_k_dense_field = r.integer(root, "first_k_dense_replace", 0, 100000);
        c.nextn_layers_field = r.integer(root, "num_nextn_predict_layers", 0, 100000);
        c.num_shared_experts_alias = r.integer(root, "num_shared_experts", 0, 65536);  // (Sarvam's)
        c.num_mtp_layers_field = r.integer(root, "num_mtp_layers", 0, 100000);
        c.routed_scaling_field = r.positive(root, "routed_scaling_factor");
        if (const json::Value* ql = root.find("q_lora_rank"))  // (null: q_proj, no LoRA)
            c.q_lora_field = ql->is_null() ? 0 : r.integer(root, "q_lora_rank", 1, kMaxDim);
        c.kv_lora_field = r.integer(root, "kv_lora_rank", 1, kMaxDim);
        c.qk_nope_field = r.integer(root, "qk_nope_head_dim", 1, kMaxDim);
        c.qk_rope_field = r.integer(root, "qk_rope_head_dim", 1, kMaxDim);
        c.v_head_field = r.integer(root, "v_head_dim", 1, kMaxDim);
        c.rope_interleave_field = r.boolean(root, "rope_interleave");
        c.topk_method = r.string(root, "topk_method");
        c.decoder_sparse_step = r.integer(root, "decoder_sparse_step", 1, 100000);
        c.no_rope_layer_interval = r.integer(root, "no_rope_layer_interval", 1, 100000);
        c.embedding_multiplier = r.positive(root, "embedding_multiplier");
        c.attention_multiplier = r.positive(root, "attention_multiplier");
        c.residual_multiplier = r.positive(root, "residual_multiplier");
        c.logits_scaling_field = r.positive(root, "logits_scaling");
        c.logit_scale_field = r.positive(root, "logit_scale");
        c.use_qk_norm = r.boolean(root, "use_qk_norm");
        if (const json::Value* cq = root.find("clip_qkv"); cq && !cq->is_null()) {
            c.clip_qkv_root = r.positive(root, "clip_qkv");
            if (!std::isfinite(float(c.clip_qkv_root)))
                fail(VT_STATUS_FORMAT_ERROR, "%s: field \"clip_qkv\" = %g is not a finite float32", path.c_str(),
                     c.clip_qkv_root);
        }
        for (auto [key, dst] : {std::pair<const char*, double*>{"swiglu_alpha", &c.swiglu_alpha},
                                {"swiglu_limit", &c.swiglu_limit}}) {  // gpt-oss
            const double v = r.positive(root, key);
            if (v < 0) continue;
            if (!std::isfinite(float(v)) || float(v) == 0.0f)
                fail(VT_STATUS_FORMAT_ERROR, "%s: field \"%s\" = %g is out of range: it must be a finite positive float32",
                     path.c_str(), key, v);
            *dst = v;
        }
        if (const json::Value* lr = r.get(root, "layer_rope_theta")) {  // (GraniteSWA; null: rope_theta)
            const char* want = "a list of one RoPE base per layer (a number >= 0; 0: no RoPE)";
            if (!lr->is_array()) r.bad("layer_rope_theta", *lr, want);
            for (const auto& e : lr->arr) {
                if (!e.is_number() || !(e.d >= 0) || !std::isfinite(e.d) ||
                    (e.d != 0 && (!std::isfinite(float(e.d)) || float(e.d) < 1.17549435e-38f)))
                    r.bad("layer_rope_theta", *lr, want);
                c.layer_rope_theta.push_back(e.d);
            }
        }
        if (const json::Value* nr = r.get(root, "no_rope_layers")) {
            if (!nr->is_array()) r.bad("no_rope_layers", *nr, "a list of 0 / 1 per layer");
            for (const auto& e : nr->arr) {
                if (!e.is_number() || (e.d != 0 && e.d != 1)) r.bad("no_rope_layers", *nr, "a list of 0 / 1 per layer");
                c.no_rope_layers.push_back(int64_t(e.d));
            }
        }
        if (const json::Value* ml = r.get(root, "mlp_only_layers")) {
            if (!ml->is_array()) r.bad("mlp_only_layers", *ml, "a list of layer indices");
            c.mlp_only_layers_given = true;
            for (const auto& e : ml->arr) {
                if (!e.is_number() || e.d < 0 || e.d > 100000 || e.d != double(int64_t(e.d)))
                    r.bad("mlp_only_layers", *ml, "a list of layer indices");
                c.mlp_only_layers.push_back(int64_t(e.d));
            }
        }
        // LFM2's fields (Lfm2Config: block_ff_dim and tie_embedding win over intermediate_size
        // and tie_word_embeddings, as its __post_init__ pops them)
        if (const json::Value* fa = r.get(root, "full_attn_idxs")) {
            if (!fa->is_array()) r.bad("full_attn_idxs", *fa, "a list of layer indices");
            for (const auto& e : fa->arr) {
                if (!e.is_number() || e.d < 0 || e.d > 100000 || e.d != double(int64_t(e.d)))
                    r.bad("full_attn_idxs", *fa, "a list of layer indices");
                c.full_attn_idxs.push_back(int64_t(e.d));
            }
            c.full_attn_given = true;
        }
        c.conv_kernel_field = r.integer(root, "conv_L_cache", 1, 256);
        c.conv_bias_field = r.boolean(root, "conv_bias");
        c.block_ff_dim = r.integer(root, "block_ff_dim", 1, kMaxDim);
        c.block_auto_adjust = r.boolean(root, "block_auto_adjust_ff_dim");
        c.block_ffn_multiplier = r.positive(root, "block_ffn_dim_multiplier");
        if (const json::Value* bm = root.find("block_ffn_dim_multiplier"); bm && bm->is_null()) c.block_ffn_multiplier = -2;
        c.block_multiple_of = r.integer(root, "block_multiple_of", 1, kMaxDim);
        c.norm_eps_field = r.positive(root, "norm_eps");
        c.tie_embedding = r.boolean(root, "tie_embedding");
        c.num_dense_layers_field = r.integer(root, "num_dense_layers", 0, 100000);
        c.use_expert_bias = r.boolean(root, "use_expert_bias");
        c.use_sandwich_norm = r.boolean(root, "use_sandwich_norm");
        c.use_post_norm = r.boolean(root, "use_post_norm");  // (HyperCLOVA X)
        c.scale_emb = r.positive(root, "scale_emb");  // (MiniCPM3)
        c.scale_depth = r.positive(root, "scale_depth");
        if (const json::Value* v = root.find("scale_depth"); v && v->is_null()) c.scale_depth = -2;
        c.dim_model_base = r.integer(root, "dim_model_base", 1, kMaxDim);
        if (const json::Value* v = root.find("dim_model_base"); v && v->is_null()) c.dim_model_base = -2;
        c.use_attention_gate = r.boolean(root, "use_attention_gate");
        c.global_attn_every = r.integer(root, "global_attn_every_n_layers", 1, 100000);  // (AFMoE)
        c.route_scale_field = r.positive(root, "route_scale");
        c.mup_enabled = r.boolean(root, "mup_enabled");
        if (const json::Value* v = r.get(root, "router_jitter_noise")) {  // (PhiMoE's sparsemixer threshold)
            if (!v->is_number() || !(v->d >= 0) || !std::isfinite(v->d)) r.bad("router_jitter_noise", *v, "a number >= 0");
            c.router_jitter_field = v->d;
        }
        c.lm_head_bias_field = r.boolean(root, "lm_head_bias");
        c.router_scaling_field = r.positive(root, "router_scaling_factor");  // (HY-V3)
        c.expert_selection_fn = r.string(root, "expert_selection_fn");  // (Cohere 2 MoE)
        c.shared_combination = r.string(root, "shared_expert_combination_strategy");
        c.prefix_dense_pattern = r.integer(root, "prefix_dense_sliding_window_pattern", 1, 100000);
        c.prefix_dense_intermediate = r.integer(root, "prefix_dense_intermediate_size", 1, kMaxDim);
        c.moe_layer_freq = r.integer(root, "moe_layer_freq", 1, 100000);  // (A.X-K1)
        int64_t bos = r.integer(root, "bos_token_id", 0, INT32_MAX);
        c.bos_token_id = int32_t(bos);
        r.token_ids(root, "eos_token_id", c.eos_token_ids);
    }

    const std::string gpath = join_path(dir, "generation_config.json");
    if (entry_exists(gpath)) {
        const json::Document doc = parse_file(gpath);
        const json::Value& root = doc.root();
        Reader r(gpath, root);
        if (c.bos_token_id < 0) c.bos_token_id = int32_t(r.integer(root, "bos_token_id", 0, INT32_MAX));
        r.token_ids(root, "eos_token_id", c.eos_token_ids);
    }
    add_tokenizer_eos(dir, c);
    return c;
}

LlamaConfig resolve_config(Checkpoint& ck, int64_t* file_layers) {
    LlamaConfig c = read_config(ck.dir());
    check_and_resolve(ck, c, file_layers);
    resolve_rope(c);
    resolve_mla_scale(c);
    check_float32(c);
    return c;
}

namespace {

// tokenizer_config.json writes special tokens as a string or an AddedToken {"content": ...}.
const json::Str* token_text(const json::Value* v) {
    if (!v) return nullptr;
    if (v->is_string()) return &v->s;
    if (v->is_object()) {
        const json::Value* c = v->find("content");
        if (c && c->is_string()) return &c->s;
    }
    return nullptr;
}

// The id of `text` in tokenizer.json as the tokenizers library's token_to_id finds it: the
// added tokens first, then the model's vocabulary (an object for BPE / WordPiece / WordLevel,
// a list of [piece, score] for Unigram). -1 when absent.
int64_t tokenizer_id(const json::Value& tk, std::string_view text) {
    if (const json::Value* added = tk.find("added_tokens"); added && added->is_array())
        for (const json::Value& a : added->arr) {
            const json::Value* content = a.find("content");
            const json::Value* id = a.find("id");
            if (content && content->is_string() && content->s == text && id && id->type == json::Type::Int)
                return id->i;
        }
    const json::Value* model = tk.find("model");
    const json::Value* vocab = model ? model->find("vocab") : nullptr;
    if (!vocab) return -1;
    if (vocab->is_object()) {
        const json::Value* id = vocab->find(text);
        return id && id->type == json::Type::Int ? id->i : -1;
    }
    if (vocab->is_array())
        for (size_t i = 0; i < vocab->arr.size(); ++i) {
            const json::Value& e = vocab->arr[i];
            if (e.is_array() && !e.arr.empty() && e.arr[0].is_string() && e.arr[0].s == text) return int64_t(i);
        }
    return -1;
}

}  // namespace

void add_tokenizer_eos(const std::string& dir, LlamaConfig& c) {
    const std::string cpath = join_path(dir, "tokenizer_config.json");
    const std::string tpath = join_path(dir, "tokenizer.json");
    if (!entry_exists(cpath) || !entry_exists(tpath)) return;
    const json::Document cfg = parse_file(cpath);
    const json::Str* eos = token_text(cfg.root().find("eos_token"));
    if (!eos || eos->empty()) return;
    const std::string text = read_file(tpath, kMaxTokenizerBytes);
    json::ParseOptions topt;
    topt.max_values = kMaxTokenizerValues;
    const json::Document tk = json::parse(text.data(), text.size(), tpath, topt);
    const int64_t id = tokenizer_id(tk.root(), eos->view());
    if (id < 0 || id > INT32_MAX) return;  // as the tokenizer: an eos_token it does not know is no id
    if (std::find(c.eos_token_ids.begin(), c.eos_token_ids.end(), int32_t(id)) != c.eos_token_ids.end()) return;
    if (c.eos_token_ids.size() >= VT_MAX_EOS)
        fail(VT_STATUS_UNSUPPORTED, "%s: its eos_token makes a %dth EOS id beside config.json's and "
             "generation_config.json's (libvt stops on at most %d)", cpath.c_str(), VT_MAX_EOS + 1, VT_MAX_EOS);
    c.eos_token_ids.push_back(int32_t(id));
}

}  // namespace vt

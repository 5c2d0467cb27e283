#include "config.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "common.h"
#include "json.h"
#include "safetensors.h"

namespace vt {

namespace {

constexpr size_t kMaxConfigBytes = size_t(16) << 20;
constexpr size_t kMaxTokenizerBytes = size_t(256) << 20;  // tokenizer.json: ~9 MB for Llama 3, 33 MB for Gemma
constexpr int64_t kMaxDim = int64_t(1) << 24;  // no real model has a dimension this large

std::string describe(const json::Value& v) {
    switch (v.type) {
        case json::Type::Null: return "null";
        case json::Type::Bool: return v.b ? "true" : "false";
        case json::Type::Int: return std::to_string(v.i);
        case json::Type::Double: return format("%g", v.d);
        case json::Type::String: return "\"" + (v.s.size() > 40 ? v.s.substr(0, 40) + "..." : v.s) + "\"";
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

json::Value parse_file(const std::string& path) {
    const std::string text = read_file(path, kMaxConfigBytes);
    json::Value v = json::parse(text.data(), text.size(), path);
    if (!v.is_object()) fail(VT_STATUS_FORMAT_ERROR, "%s: expected a JSON object at the top level", path.c_str());
    return v;
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
    if (type.empty() || type == "default") {
        c.rope.kind = RopeScaling::NONE;
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
    } else {
        fail(VT_STATUS_UNSUPPORTED, "%s: %s type \"%s\" is not supported (supported: default, linear, llama3)",
             r.path().c_str(), field, type.c_str());
    }
    // transformers >= 5 keeps rope_theta inside rope_parameters.
    double theta = r.positive(rs, "rope_theta", (f + ".rope_theta").c_str());
    if (theta > 0) c.rope_theta = theta;
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
        json::Value root = parse_file(path);
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
        c.num_layers = r.integer(root, "num_hidden_layers", 1, 100000);
        c.num_heads = r.integer(root, "num_attention_heads", 1, 65536);
        c.num_kv_heads = r.integer(root, "num_key_value_heads", 1, 65536);
        c.head_dim = r.integer(root, "head_dim", 1, 65536);
        c.vocab_size = r.integer(root, "vocab_size", 1, INT32_MAX);
        c.max_position_embeddings = r.integer(root, "max_position_embeddings", 1, int64_t(1) << 40);
        c.rms_norm_eps = r.positive(root, "rms_norm_eps");
        c.rope_theta = r.positive(root, "rope_theta");
        c.tie_word_embeddings = r.boolean(root, "tie_word_embeddings");
        if (const json::Value* rs = r.get(root, "rope_scaling")) read_rope(r, *rs, "rope_scaling", c);
        if (const json::Value* rp = r.get(root, "rope_parameters")) read_rope(r, *rp, "rope_parameters", c);
        int64_t bos = r.integer(root, "bos_token_id", 0, INT32_MAX);
        c.bos_token_id = int32_t(bos);
        r.token_ids(root, "eos_token_id", c.eos_token_ids);
    }

    const std::string gpath = join_path(dir, "generation_config.json");
    if (entry_exists(gpath)) {
        json::Value root = parse_file(gpath);
        Reader r(gpath, root);
        if (c.bos_token_id < 0) c.bos_token_id = int32_t(r.integer(root, "bos_token_id", 0, INT32_MAX));
        r.token_ids(root, "eos_token_id", c.eos_token_ids);
    }
    add_tokenizer_eos(dir, c);
    return c;
}

namespace {

// tokenizer_config.json writes special tokens as a string or an AddedToken {"content": ...}.
const std::string* token_text(const json::Value* v) {
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
int64_t tokenizer_id(const json::Value& tk, const std::string& text) {
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
        const json::Value* id = vocab->find(text.c_str());
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
    const json::Value cfg = parse_file(cpath);
    const std::string* eos = token_text(cfg.find("eos_token"));
    if (!eos || eos->empty()) return;
    const std::string text = read_file(tpath, kMaxTokenizerBytes);
    const json::Value tk = json::parse(text.data(), text.size(), tpath);
    const int64_t id = tokenizer_id(tk, *eos);
    if (id < 0 || id > INT32_MAX) return;  // as the tokenizer: an eos_token it does not know is no id
    if (std::find(c.eos_token_ids.begin(), c.eos_token_ids.end(), int32_t(id)) != c.eos_token_ids.end()) return;
    if (c.eos_token_ids.size() >= VT_MAX_EOS)
        fail(VT_STATUS_UNSUPPORTED, "%s: its eos_token makes a %dth EOS id beside config.json's and "
             "generation_config.json's (libvt stops on at most %d)", cpath.c_str(), VT_MAX_EOS + 1, VT_MAX_EOS);
    c.eos_token_ids.push_back(int32_t(id));
}

}  // namespace vt

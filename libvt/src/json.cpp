#include "json.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

#include "common.h"

namespace vt {
namespace json {

const char* type_name(Type t) {
    switch (t) {
        case Type::Null: return "null";
        case Type::Bool: return "boolean";
        case Type::Int: return "integer";
        case Type::Double: return "number";
        case Type::String: return "string";
        case Type::Array: return "array";
        case Type::Object: return "object";
    }
    return "?";
}

const Value* Value::find(std::string_view key) const {
    if (type != Type::Object) return nullptr;
    for (const auto& kv : obj)
        if (kv.first.view() == key) return &kv.second;
    return nullptr;
}

// The sizes docs/reliability.md and json.h quote (64-bit targets).
static_assert(sizeof(void*) != 8 || (sizeof(Value) == 40 && sizeof(Member) == 56), "json::Value layout changed");

namespace {

// Pass 1 (Build = false) validates the document and counts: the values (refused past
// max_values), each container's size (counts_, in document order), items, members and string
// bytes. Pass 2 (Build = true) parses the same bytes again into blocks of exactly that size.
// Pass 2 trusts nothing from pass 1 beyond the sizes, and checks them as it goes: the input
// may be a file mapping that another process changes between the passes.
template <bool Build>
class Parser {
public:
    Parser(const char* data, size_t size, const std::string& source, const ParseOptions& opt)
        : p_(reinterpret_cast<const unsigned char*>(data)), n_(size), src_(source), opt_(opt) {}

    // Pass 1 only.
    void count() {
        start();
        value(nullptr, 0);
        finish();
    }

    // Pass 2 only: sizes from pass 1.
    void build(const Parser<false>& counted, Value* root, Value* values_end, char* chars, size_t nchars) {
        counts_ = &counted.counts_own_;
        next_value_ = root + 1;
        values_end_ = values_end;
        chars_ = chars;
        chars_end_ = chars + nchars;
        start();
        new (root) Value();
        value(root, 0);
        finish();
        if (next_value_ != values_end_ || chars_ != chars_end_ || next_count_ != counts_->size()) changed();
    }

    size_t values() const { return values_; }
    size_t items() const { return items_; }
    size_t members() const { return members_; }
    size_t chars() const { return nchars_; }

private:
    friend class Parser<true>;
    const unsigned char* p_;
    size_t n_;
    size_t pos_ = 0;
    const std::string& src_;
    const ParseOptions& opt_;
    // Pass 1
    std::vector<uint32_t> counts_own_;
    size_t values_ = 0, items_ = 0, members_ = 0, nchars_ = 0;
    // Pass 2
    const std::vector<uint32_t>* counts_ = nullptr;
    size_t next_count_ = 0;
    Value* next_value_ = nullptr;  // Values and Members, bump-allocated
    Value* values_end_ = nullptr;
    char* chars_ = nullptr;
    char* chars_end_ = nullptr;
    std::vector<uint32_t> order_;    // scratch for the duplicate-key check

    void start() {
        if (n_ > opt_.max_size)
            fail(VT_STATUS_FORMAT_ERROR, "%s: JSON document of %zu bytes exceeds the %zu-byte limit",
                 src_.c_str(), n_, opt_.max_size);
        if (n_ >= 3 && p_[0] == 0xEF && p_[1] == 0xBB && p_[2] == 0xBF) pos_ = 3;
        skip_ws();
    }

    void finish() {
        skip_ws();
        if (pos_ != n_) error("unexpected data after the JSON value");
    }

    [[noreturn]] void changed() const {
        fail(VT_STATUS_FORMAT_ERROR, "%s: the JSON document changed while it was being read", src_.c_str());
    }

    // Pass 1: one more value; refused past the limit before anything is built.
    void one_value() {
        if (Build) return;
        if (++values_ > opt_.max_values)
            fail(VT_STATUS_FORMAT_ERROR,
                 "%s: JSON document has more than %zu values (the limit for this file)",
                 src_.c_str(), opt_.max_values);
    }

    // Pass 1: reserves the count of a container; pass 2: reads it.
    size_t open_container() {
        if (!Build) {
            counts_own_.push_back(0);
            return counts_own_.size() - 1;
        }
        if (next_count_ >= counts_->size()) changed();
        return next_count_++;
    }

    template <class T>
    T* take(size_t n) {
        char* at = reinterpret_cast<char*>(next_value_);
        if (size_t(reinterpret_cast<char*>(values_end_) - at) < n * sizeof(T)) changed();
        next_value_ = reinterpret_cast<Value*>(at + n * sizeof(T));
        return reinterpret_cast<T*>(at);
    }

    [[noreturn]] void error(const char* what) const { error_at(pos_, what); }
    [[noreturn]] void error_at(size_t at, const char* what) const {
        fail(VT_STATUS_FORMAT_ERROR, "%s: invalid JSON at byte %zu: %s", src_.c_str(), at, what);
    }

    bool eof() const { return pos_ >= n_; }
    unsigned char peek() const { return pos_ < n_ ? p_[pos_] : 0; }

    void skip_ws() {
        while (pos_ < n_ && (p_[pos_] == ' ' || p_[pos_] == '\t' || p_[pos_] == '\n' || p_[pos_] == '\r'))
            ++pos_;
    }

    void expect_literal(const char* lit) {
        size_t len = std::strlen(lit);
        if (n_ - pos_ < len || std::memcmp(p_ + pos_, lit, len) != 0) error("invalid literal");
        pos_ += len;
    }

    // Recursion is bounded by opt_.max_depth, checked before descending. `out` is null in
    // pass 1.
    void value(Value* out, size_t depth) {
        if (eof()) error("unexpected end of input");
        one_value();
        unsigned char c = peek();
        switch (c) {
            case '{': object(out, depth + 1); return;
            case '[': array(out, depth + 1); return;
            case '"': {
                Str s = string();
                if (Build) {
                    out->type = Type::String;
                    out->s = s;
                }
                return;
            }
            case 't':
                expect_literal("true");
                if (Build) { out->type = Type::Bool; out->b = true; }
                return;
            case 'f':
                expect_literal("false");
                if (Build) { out->type = Type::Bool; out->b = false; }
                return;
            case 'n': expect_literal("null"); return;
            default:
                if (c == '-' || (c >= '0' && c <= '9')) { number(out); return; }
                error("unexpected character");
        }
    }

    void check_depth(size_t depth) {
        if (depth > opt_.max_depth) {
            char msg[96];
            std::snprintf(msg, sizeof msg, "nesting deeper than %zu levels", opt_.max_depth);
            error(msg);
        }
    }

    void object(Value* out, size_t depth) {
        check_depth(depth);
        const size_t slot = open_container();
        Member* ms = nullptr;
        size_t n = 0;
        if (Build) {
            n = (*counts_)[slot];
            ms = take<Member>(n);
            out->type = Type::Object;
            out->obj = Span<Member>{ms, uint32_t(n)};
        }
        size_t k = 0;
        ++pos_;  // '{'
        skip_ws();
        if (peek() == '}') {
            ++pos_;
        } else {
            for (;;) {
                skip_ws();
                if (peek() != '"') error(eof() ? "unexpected end of input" : "expected a string key");
                Member* m = nullptr;
                if (Build) {
                    if (k >= n) changed();
                    m = new (ms + k) Member();
                }
                const size_t key_pos = pos_;
                Str key = string();
                if (Build) {
                    m->first = key;
                    m->first.at = uint32_t(std::min<size_t>(key_pos, UINT32_MAX));
                }
                skip_ws();
                if (peek() != ':') error("expected ':'");
                ++pos_;
                skip_ws();
                value(Build ? &m->second : nullptr, depth);
                ++k;
                skip_ws();
                if (peek() == ',') { ++pos_; continue; }
                if (peek() == '}') { ++pos_; break; }
                error(eof() ? "unexpected end of input" : "expected ',' or '}'");
            }
        }
        if (!Build) {
            counts_own_[slot] = uint32_t(k);
            members_ += k;
            return;
        }
        if (k != n) changed();
        if (opt_.reject_duplicate_keys && n > 1) check_duplicates(ms, n);
    }

    // The first key (in file order) that repeats an earlier one, named with its offset.
    void check_duplicates(const Member* ms, size_t n) {
        size_t dup = n;
        if (n <= 16) {
            for (size_t i = 1; i < n && dup == n; ++i)
                for (size_t j = 0; j < i; ++j)
                    if (ms[i].first == ms[j].first) { dup = i; break; }
        } else {
            order_.resize(n);
            for (size_t i = 0; i < n; ++i) order_[i] = uint32_t(i);
            std::sort(order_.begin(), order_.end(), [&](uint32_t a, uint32_t b) {
                int c = ms[a].first.view().compare(ms[b].first.view());
                return c < 0 || (c == 0 && a < b);
            });
            for (size_t i = 1; i < n; ++i)
                if (ms[order_[i]].first == ms[order_[i - 1]].first) dup = std::min<size_t>(dup, order_[i]);
        }
        if (dup == n) return;
        std::string msg = "duplicate key \"" + std::string(ms[dup].first) + "\"";
        error_at(ms[dup].first.at, msg.c_str());
    }

    void array(Value* out, size_t depth) {
        check_depth(depth);
        const size_t slot = open_container();
        Value* items = nullptr;
        size_t n = 0;
        if (Build) {
            n = (*counts_)[slot];
            items = take<Value>(n);
            out->type = Type::Array;
            out->arr = Span<Value>{items, uint32_t(n)};
        }
        size_t k = 0;
        ++pos_;  // '['
        skip_ws();
        if (peek() == ']') {
            ++pos_;
        } else {
            for (;;) {
                skip_ws();
                Value* v = nullptr;
                if (Build) {
                    if (k >= n) changed();
                    v = new (items + k) Value();
                }
                value(v, depth);
                ++k;
                skip_ws();
                if (peek() == ',') { ++pos_; continue; }
                if (peek() == ']') { ++pos_; break; }
                error(eof() ? "unexpected end of input" : "expected ',' or ']'");
            }
        }
        if (!Build) {
            counts_own_[slot] = uint32_t(k);
            items_ += k;
            return;
        }
        if (k != n) changed();
    }

    int hex4() {
        if (n_ - pos_ < 4) error("truncated \\u escape");
        int v = 0;
        for (int k = 0; k < 4; ++k) {
            unsigned char c = p_[pos_ + k];
            int d;
            if (c >= '0' && c <= '9') d = c - '0';
            else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
            else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
            else error("invalid \\u escape");
            v = v * 16 + d;
        }
        pos_ += 4;
        return v;
    }

    // The string being read: its bytes so far (pass 2 writes them at out_).
    char* out_ = nullptr;
    size_t len_ = 0;

    void put(const void* bytes, size_t n) {
        if (Build) {
            if (size_t(chars_end_ - out_) < len_ + n + 1) changed();  // + its NUL
            std::memcpy(out_ + len_, bytes, n);
        }
        len_ += n;
    }
    void put(char c) { put(&c, 1); }

    void put_utf8(uint32_t cp) {
        if (cp < 0x80) {
            put(char(cp));
        } else if (cp < 0x800) {
            put(char(0xC0 | (cp >> 6)));
            put(char(0x80 | (cp & 0x3F)));
        } else if (cp < 0x10000) {
            put(char(0xE0 | (cp >> 12)));
            put(char(0x80 | ((cp >> 6) & 0x3F)));
            put(char(0x80 | (cp & 0x3F)));
        } else {
            put(char(0xF0 | (cp >> 18)));
            put(char(0x80 | ((cp >> 12) & 0x3F)));
            put(char(0x80 | ((cp >> 6) & 0x3F)));
            put(char(0x80 | (cp & 0x3F)));
        }
    }

    // Validates one UTF-8 sequence starting at pos_ (first byte >= 0x80) and copies it.
    void utf8_seq() {
        unsigned char c = p_[pos_];
        size_t len;
        uint32_t cp, min;
        if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; min = 0x80; }
        else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0F; min = 0x800; }
        else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; min = 0x10000; }
        else error("invalid UTF-8 in string");
        if (n_ - pos_ < len) error("truncated UTF-8 sequence in string");
        for (size_t k = 1; k < len; ++k) {
            unsigned char cc = p_[pos_ + k];
            if ((cc & 0xC0) != 0x80) error("invalid UTF-8 in string");
            cp = (cp << 6) | (cc & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            error("invalid UTF-8 in string");
        put(p_ + pos_, len);
        pos_ += len;
    }

    // A string at pos_ ('"'): pass 1 counts its bytes (+ a NUL), pass 2 stores them.
    Str string() {
        size_t start = pos_;
        out_ = chars_;
        len_ = 0;
        ++pos_;  // '"'
        for (;;) {
            if (eof()) error_at(start, "unterminated string");
            unsigned char c = p_[pos_];
            if (c == '"') { ++pos_; break; }
            if (c < 0x20) error("control character in string");
            if (c >= 0x80) { utf8_seq(); continue; }
            if (c != '\\') {
                // Copy a run of plain ASCII at once.
                size_t run = pos_;
                while (run < n_ && p_[run] >= 0x20 && p_[run] < 0x80 && p_[run] != '"' && p_[run] != '\\')
                    ++run;
                put(p_ + pos_, run - pos_);
                pos_ = run;
                continue;
            }
            ++pos_;
            if (eof()) error_at(start, "unterminated string");
            unsigned char e = p_[pos_++];
            switch (e) {
                case '"': put('"'); break;
                case '\\': put('\\'); break;
                case '/': put('/'); break;
                case 'b': put('\b'); break;
                case 'f': put('\f'); break;
                case 'n': put('\n'); break;
                case 'r': put('\r'); break;
                case 't': put('\t'); break;
                case 'u': {
                    uint32_t cp = uint32_t(hex4());
                    if (cp >= 0xD800 && cp <= 0xDBFF) {
                        if (n_ - pos_ < 2 || p_[pos_] != '\\' || p_[pos_ + 1] != 'u')
                            error("unpaired UTF-16 surrogate in \\u escape");
                        pos_ += 2;
                        uint32_t lo = uint32_t(hex4());
                        if (lo < 0xDC00 || lo > 0xDFFF) error("unpaired UTF-16 surrogate in \\u escape");
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                        error("unpaired UTF-16 surrogate in \\u escape");
                    }
                    put_utf8(cp);
                    break;
                }
                default: error_at(pos_ - 1, "invalid escape in string");
            }
        }
        if (len_ > UINT32_MAX - 1) error_at(start, "string longer than 4 GiB");
        Str s;
        if (Build) {
            if (size_t(chars_end_ - out_) < len_ + 1) changed();
            out_[len_] = '\0';
            s.p = out_;
            s.n = uint32_t(len_);
            chars_ = out_ + len_ + 1;
        } else {
            nchars_ += len_ + 1;
        }
        return s;
    }

    void number(Value* out) {
        size_t start = pos_;
        bool integral = true;
        if (peek() == '-') ++pos_;
        if (eof()) error("truncated number");
        if (peek() == '0') {
            ++pos_;
        } else if (peek() >= '1' && peek() <= '9') {
            while (!eof() && peek() >= '0' && peek() <= '9') ++pos_;
        } else {
            error("invalid number");
        }
        if (!eof() && peek() == '.') {
            integral = false;
            ++pos_;
            if (eof() || !(peek() >= '0' && peek() <= '9')) error("invalid number: digits expected after '.'");
            while (!eof() && peek() >= '0' && peek() <= '9') ++pos_;
        }
        if (!eof() && (peek() == 'e' || peek() == 'E')) {
            integral = false;
            ++pos_;
            if (!eof() && (peek() == '+' || peek() == '-')) ++pos_;
            if (eof() || !(peek() >= '0' && peek() <= '9')) error("invalid number: digits expected in exponent");
            while (!eof() && peek() >= '0' && peek() <= '9') ++pos_;
        }
        const char* b = reinterpret_cast<const char*>(p_ + start);
        const char* e = reinterpret_cast<const char*>(p_ + pos_);
        if (integral) {
            int64_t v = 0;
            auto r = std::from_chars(b, e, v);
            if (r.ec == std::errc() && r.ptr == e) {
                if (Build) {
                    out->type = Type::Int;
                    out->i = v;
                    out->d = double(v);
                }
                return;
            }
            // Too large for int64: fall through to a double.
        }
        double d = 0;
        auto r = std::from_chars(b, e, d);
        if (r.ec == std::errc::result_out_of_range) error_at(start, "number out of range");
        if (r.ec != std::errc() || r.ptr != e) error_at(start, "invalid number");
        if (Build) {
            out->type = Type::Double;
            out->d = d;
        }
    }
};

}  // namespace

Document parse(const char* data, size_t size, const std::string& source, const ParseOptions& options) {
    if (!data && size) fail(VT_STATUS_INVALID_ARGUMENT, "%s: NULL JSON buffer", source.c_str());
    if (!data) data = "";
    ParseOptions opt = options;
    opt.max_values = std::min<size_t>(opt.max_values, UINT32_MAX);
    Parser<false> counted(data, size, source, opt);
    counted.count();
    // Exactly the blocks pass 1 measured: the root, every array item, every member.
    const size_t nvalues = (1 + counted.items()) * sizeof(Value) + counted.members() * sizeof(Member);
    Document doc;
    doc.values_.reset(new uint64_t[(nvalues + 7) / 8]);
    doc.chars_.reset(new char[counted.chars() + 1]);
    doc.bytes_ = nvalues + counted.chars() + 1;
    Value* root = reinterpret_cast<Value*>(doc.values_.get());
    Parser<true> p(data, size, source, opt);
    p.build(counted, root, reinterpret_cast<Value*>(reinterpret_cast<char*>(root) + nvalues), doc.chars_.get(),
            counted.chars());
    doc.root_ = root;
    return doc;
}

}  // namespace json
}  // namespace vt

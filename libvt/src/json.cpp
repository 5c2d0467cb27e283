#include "json.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>

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

const Value* Value::find(const char* key) const {
    if (type != Type::Object) return nullptr;
    for (const auto& kv : obj)
        if (kv.first == key) return &kv.second;
    return nullptr;
}

namespace {

class Parser {
public:
    Parser(const char* data, size_t size, const std::string& source, const ParseOptions& opt)
        : p_(reinterpret_cast<const unsigned char*>(data)), n_(size), src_(source), opt_(opt) {}

    Value document() {
        if (n_ > opt_.max_size)
            fail(VT_STATUS_FORMAT_ERROR, "%s: JSON document of %zu bytes exceeds the %zu-byte limit",
                 src_.c_str(), n_, opt_.max_size);
        if (n_ >= 3 && p_[0] == 0xEF && p_[1] == 0xBB && p_[2] == 0xBF) pos_ = 3;
        skip_ws();
        Value v;
        value(v, 0);
        skip_ws();
        if (pos_ != n_) error("unexpected data after the JSON value");
        return v;
    }

private:
    const unsigned char* p_;
    size_t n_;
    size_t pos_ = 0;
    const std::string& src_;
    const ParseOptions& opt_;

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

    // Recursion is bounded by opt_.max_depth, checked before descending.
    void value(Value& out, size_t depth) {
        if (eof()) error("unexpected end of input");
        unsigned char c = peek();
        switch (c) {
            case '{': object(out, depth + 1); return;
            case '[': array(out, depth + 1); return;
            case '"': out.type = Type::String; string(out.s); return;
            case 't': expect_literal("true"); out.type = Type::Bool; out.b = true; return;
            case 'f': expect_literal("false"); out.type = Type::Bool; out.b = false; return;
            case 'n': expect_literal("null"); out.type = Type::Null; return;
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

    void object(Value& out, size_t depth) {
        check_depth(depth);
        out.type = Type::Object;
        ++pos_;  // '{'
        skip_ws();
        if (peek() == '}') { ++pos_; return; }
        std::vector<size_t> key_offsets;
        for (;;) {
            skip_ws();
            if (peek() != '"') error(eof() ? "unexpected end of input" : "expected a string key");
            key_offsets.push_back(pos_);
            std::string key;
            string(key);
            skip_ws();
            if (peek() != ':') error("expected ':'");
            ++pos_;
            skip_ws();
            out.obj.emplace_back(std::move(key), Value());
            value(out.obj.back().second, depth);
            skip_ws();
            if (peek() == ',') { ++pos_; continue; }
            if (peek() == '}') { ++pos_; break; }
            error(eof() ? "unexpected end of input" : "expected ',' or '}'");
        }
        if (opt_.reject_duplicate_keys && out.obj.size() > 1) {
            std::vector<size_t> idx(out.obj.size());
            for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
            std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
                int c = out.obj[a].first.compare(out.obj[b].first);
                return c < 0 || (c == 0 && a < b);
            });
            for (size_t i = 1; i < idx.size(); ++i) {
                if (out.obj[idx[i]].first == out.obj[idx[i - 1]].first) {
                    std::string msg = "duplicate key \"" + out.obj[idx[i]].first + "\"";
                    error_at(key_offsets[idx[i]], msg.c_str());
                }
            }
        }
    }

    void array(Value& out, size_t depth) {
        check_depth(depth);
        out.type = Type::Array;
        ++pos_;  // '['
        skip_ws();
        if (peek() == ']') { ++pos_; return; }
        for (;;) {
            skip_ws();
            out.arr.emplace_back();
            value(out.arr.back(), depth);
            skip_ws();
            if (peek() == ',') { ++pos_; continue; }
            if (peek() == ']') { ++pos_; break; }
            error(eof() ? "unexpected end of input" : "expected ',' or ']'");
        }
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

    static void put_utf8(std::string& s, uint32_t cp) {
        if (cp < 0x80) {
            s += char(cp);
        } else if (cp < 0x800) {
            s += char(0xC0 | (cp >> 6));
            s += char(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            s += char(0xE0 | (cp >> 12));
            s += char(0x80 | ((cp >> 6) & 0x3F));
            s += char(0x80 | (cp & 0x3F));
        } else {
            s += char(0xF0 | (cp >> 18));
            s += char(0x80 | ((cp >> 12) & 0x3F));
            s += char(0x80 | ((cp >> 6) & 0x3F));
            s += char(0x80 | (cp & 0x3F));
        }
    }

    // Validates one UTF-8 sequence starting at pos_ (first byte >= 0x80) and copies it.
    void utf8_seq(std::string& s) {
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
        s.append(reinterpret_cast<const char*>(p_ + pos_), len);
        pos_ += len;
    }

    void string(std::string& s) {
        size_t start = pos_;
        ++pos_;  // '"'
        for (;;) {
            if (eof()) error_at(start, "unterminated string");
            unsigned char c = p_[pos_];
            if (c == '"') { ++pos_; return; }
            if (c < 0x20) error("control character in string");
            if (c >= 0x80) { utf8_seq(s); continue; }
            if (c != '\\') {
                // Copy a run of plain ASCII at once.
                size_t run = pos_;
                while (run < n_ && p_[run] >= 0x20 && p_[run] < 0x80 && p_[run] != '"' && p_[run] != '\\')
                    ++run;
                s.append(reinterpret_cast<const char*>(p_ + pos_), run - pos_);
                pos_ = run;
                continue;
            }
            ++pos_;
            if (eof()) error_at(start, "unterminated string");
            unsigned char e = p_[pos_++];
            switch (e) {
                case '"': s += '"'; break;
                case '\\': s += '\\'; break;
                case '/': s += '/'; break;
                case 'b': s += '\b'; break;
                case 'f': s += '\f'; break;
                case 'n': s += '\n'; break;
                case 'r': s += '\r'; break;
                case 't': s += '\t'; break;
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
                    put_utf8(s, cp);
                    break;
                }
                default: error_at(pos_ - 1, "invalid escape in string");
            }
        }
    }

    void number(Value& out) {
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
                out.type = Type::Int;
                out.i = v;
                out.d = double(v);
                return;
            }
            // Too large for int64: fall through to a double.
        }
        double d = 0;
        auto r = std::from_chars(b, e, d);
        if (r.ec == std::errc::result_out_of_range) error_at(start, "number out of range");
        if (r.ec != std::errc() || r.ptr != e) error_at(start, "invalid number");
        out.type = Type::Double;
        out.d = d;
    }
};

}  // namespace

Value parse(const char* data, size_t size, const std::string& source, const ParseOptions& options) {
    if (!data && size) fail(VT_STATUS_INVALID_ARGUMENT, "%s: NULL JSON buffer", source.c_str());
    Parser p(data ? data : "", size, source, options);
    return p.document();
}

}  // namespace json
}  // namespace vt

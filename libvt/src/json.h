// A small, strict JSON parser (RFC 8259) producing a read-only DOM, for config.json,
// tokenizer.json, indexes and SafeTensors headers. Hostile input is expected (headers come
// from downloaded files, and the parser is fuzzed): nesting depth, input size and the number
// of values are bounded, strings must be valid UTF-8, and every error is a
// vt::Error(VT_STATUS_FORMAT_ERROR) naming the source and the byte offset.
//
// Memory: the document is parsed twice. The first pass validates and counts (one 32-bit
// count per array / object); a document with more values than ParseOptions::max_values is
// refused there, before anything is built. The second pass fills two exactly sized blocks:
// one of values (40 bytes each; an object member 56, its key's offset included) and one of string bytes. No per-value
// heap allocation, no container slack: a 20 MB SafeTensors header of a million tiny values
// used to cost 1.65 GB (104-byte values in growing std::vectors, a std::string each).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

namespace vt {
namespace json {

enum class Type : uint8_t { Null, Bool, Int, Double, String, Array, Object };

const char* type_name(Type t);  // "null", "boolean", "integer", "number", "string", ...

struct Value;
struct Member;

// A string of the document (UTF-8, escapes resolved, NUL-terminated, may contain NULs).
// Compares with and converts to std::string.
struct Str {
    const char* p = "";
    uint32_t n = 0;
    uint32_t at = 0;  // an object key's byte offset in the document (for messages; in the padding)

    size_t size() const { return n; }
    bool empty() const { return n == 0; }
    const char* data() const { return p; }
    const char* c_str() const { return p; }
    char operator[](size_t i) const { return p[i]; }
    std::string_view view() const { return std::string_view(p, n); }
    operator std::string() const { return std::string(p, n); }
    operator std::string_view() const { return view(); }
    std::string substr(size_t pos, size_t len = std::string::npos) const { return std::string(view().substr(pos, len)); }
};
inline bool operator==(const Str& a, std::string_view b) { return a.view() == b; }
inline bool operator==(std::string_view a, const Str& b) { return a == b.view(); }
inline bool operator==(const Str& a, const std::string& b) { return a.view() == b; }
inline bool operator==(const std::string& a, const Str& b) { return a == b.view(); }
inline bool operator==(const Str& a, const char* b) { return a.view() == b; }
inline bool operator==(const Str& a, const Str& b) { return a.view() == b.view(); }
template <class T>
bool operator!=(const Str& a, const T& b) { return !(a == b); }
inline bool operator!=(const std::string& a, const Str& b) { return !(a == b); }

// A contiguous run of T (an array's items, an object's members).
template <class T>
struct Span {
    const T* p = nullptr;
    uint32_t n = 0;

    size_t size() const { return n; }
    bool empty() const { return n == 0; }
    const T* begin() const { return p; }
    const T* end() const { return p + n; }
    const T& operator[](size_t i) const { return p[i]; }
    const T& front() const { return p[0]; }
    const T& back() const { return p[n - 1]; }
};

// One value of a Document (valid while the Document lives; neither copied nor moved).
struct Value {
    Type type = Type::Null;
    bool b = false;
    int64_t i = 0;   // Type::Int: a number without fraction/exponent that fits in int64
    double d = 0.0;  // Type::Double (and Int, converted)
    union {
        Str s;              // Type::String
        Span<Value> arr;    // Type::Array
        Span<Member> obj;   // Type::Object, in file order
    };

    Value() : s() {}
    Value(const Value&) = delete;
    Value& operator=(const Value&) = delete;

    bool is_null() const { return type == Type::Null; }
    bool is_number() const { return type == Type::Int || type == Type::Double; }
    bool is_object() const { return type == Type::Object; }
    bool is_array() const { return type == Type::Array; }
    bool is_string() const { return type == Type::String; }

    // Member lookup on an object (linear scan; objects here are small or scanned once).
    // nullptr when absent or when this is not an object.
    const Value* find(std::string_view key) const;
};

struct Member {
    Str first;     // the key
    Value second;  // the value
};

struct ParseOptions {
    size_t max_depth = 64;               // nesting of arrays/objects
    size_t max_size = size_t(1) << 28;   // bytes of input
    size_t max_values = size_t(1) << 22; // values of every kind (members count once), checked before building
    bool reject_duplicate_keys = true;   // {"a":1,"a":2} is an error
};

// A parsed document: owns every value and string. Movable.
class Document {
public:
    const Value& root() const { return *root_; }
    // Bytes held (values + strings).
    size_t bytes() const { return bytes_; }

private:
    friend Document parse(const char*, size_t, const std::string&, const ParseOptions&);
    std::unique_ptr<uint64_t[]> values_;  // Values and Members (8-byte aligned)
    std::unique_ptr<char[]> chars_;
    const Value* root_ = nullptr;
    size_t bytes_ = 0;
};

// Parses one JSON document (surrounding whitespace allowed, a UTF-8 BOM skipped).
// `source` names the input in error messages (usually a file path).
Document parse(const char* data, size_t size, const std::string& source,
               const ParseOptions& options = ParseOptions());

}  // namespace json
}  // namespace vt

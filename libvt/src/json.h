// A small, strict JSON parser (RFC 8259) producing a DOM, for config.json and SafeTensors
// headers. Hostile input is expected (headers come from downloaded files, and the parser
// is fuzzed): nesting depth and input size are bounded, strings must be valid UTF-8, and
// every error is a vt::Error(VT_STATUS_FORMAT_ERROR) naming the source and the byte offset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace vt {
namespace json {

enum class Type { Null, Bool, Int, Double, String, Array, Object };

const char* type_name(Type t);  // "null", "boolean", "integer", "number", "string", ...

struct Value {
    Type type = Type::Null;
    bool b = false;
    int64_t i = 0;   // Type::Int: a number without fraction/exponent that fits in int64
    double d = 0.0;  // Type::Double (and Int, converted)
    std::string s;   // Type::String (UTF-8, escapes resolved)
    std::vector<Value> arr;                            // Type::Array
    std::vector<std::pair<std::string, Value>> obj;    // Type::Object, in file order

    bool is_null() const { return type == Type::Null; }
    bool is_number() const { return type == Type::Int || type == Type::Double; }
    bool is_object() const { return type == Type::Object; }
    bool is_array() const { return type == Type::Array; }
    bool is_string() const { return type == Type::String; }

    // Member lookup on an object (linear scan; objects here are small or scanned once).
    // nullptr when absent or when this is not an object.
    const Value* find(const char* key) const;
};

struct ParseOptions {
    size_t max_depth = 64;               // nesting of arrays/objects
    size_t max_size = size_t(1) << 28;   // bytes of input
    bool reject_duplicate_keys = true;   // {"a":1,"a":2} is an error
};

// Parses one JSON document (surrounding whitespace allowed, a UTF-8 BOM skipped).
// `source` names the input in error messages (usually a file path).
Value parse(const char* data, size_t size, const std::string& source,
            const ParseOptions& options = ParseOptions());

}  // namespace json
}  // namespace vt

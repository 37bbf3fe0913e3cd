// Minimal JSON (RFC 8259) value, parser and compact writer. Host-only, used for safetensors headers.
//
// Numbers: an integer literal (no fraction, no exponent) that fits int64 is an Int; any other number is a
// Double (a finite one: 1e999 is an error). Objects keep their members in file order, duplicates included
// (callers that care, like the safetensors reader, check for them). Strings are UTF-8; the parser rejects
// invalid UTF-8, raw control characters, bad escapes and lone surrogates, and turns \uXXXX (and surrogate
// pairs) into UTF-8.
//
// The parser is safe on any input: nesting deeper than kMaxDepth is an error (so recursion is bounded),
// every read is bounds-checked, and errors are json::ParseError with a one-line message
// "offset N: what is wrong".
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace json {

constexpr int kMaxDepth = 128;  // arrays/objects nested deeper than this are rejected by parse()

class ParseError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

class Value {
  public:
    enum class Type { Null, Bool, Int, Double, String, Array, Object };
    using Array = std::vector<Value>;
    using Member = std::pair<std::string, Value>;
    using Object = std::vector<Member>;

    Value() = default;  // null
    static Value boolean(bool b);
    static Value integer(int64_t i);
    static Value number(double d);
    static Value string(std::string s);
    static Value array(Array a = {});
    static Value object(Object o = {});

    Type type() const { return static_cast<Type>(v_.index()); }
    bool is_null() const { return type() == Type::Null; }
    bool is_bool() const { return type() == Type::Bool; }
    bool is_int() const { return type() == Type::Int; }
    bool is_double() const { return type() == Type::Double; }
    bool is_number() const { return is_int() || is_double(); }
    bool is_string() const { return type() == Type::String; }
    bool is_array() const { return type() == Type::Array; }
    bool is_object() const { return type() == Type::Object; }

    // Accessors throw std::logic_error when the type does not match.
    bool as_bool() const;
    int64_t as_int() const;
    double as_double() const;  // Int or Double
    const std::string& as_string() const;
    const Array& as_array() const;
    Array& as_array();
    const Object& as_object() const;
    Object& as_object();

    // Object lookup (first member with that key; linear scan); nullptr if absent or not an object.
    const Value* find(const std::string& key) const;
    // Appends to an array / object (throws std::logic_error on another type).
    void push_back(Value v);
    void set(std::string key, Value v);  // appends a member (no duplicate check)

    bool operator==(const Value& o) const;
    bool operator!=(const Value& o) const { return !(*this == o); }

  private:
    // Alternatives in Type order (index() == Type).
    std::variant<std::monostate, bool, int64_t, double, std::string, Array, Object> v_;
};

// Parses exactly one JSON value surrounded by optional whitespace. Throws ParseError.
Value parse(const char* data, size_t size);
inline Value parse(const std::string& text) { return parse(text.data(), text.size()); }

// Compact serialization (no whitespace), members in stored order. Doubles are written with 17 significant
// digits and always contain '.' or 'e' (so they parse back as Double). Throws std::invalid_argument for a
// non-finite double.
std::string dump(const Value& v);
// The same values for people to read (config.json, --print-config): one member or element per line,
// `indent` spaces per level, ": " after keys, a final newline. Empty arrays and objects stay [] and {}.
std::string dump_pretty(const Value& v, int indent = 2);
// `s` as a quoted JSON string literal: escapes '"', '\\' and control characters (as \n, \t, ... or
// \u00XX); other bytes, UTF-8 included, are copied as they are.
std::string quote(const std::string& s);

// Length of the valid UTF-8 sequence at s (n bytes available; RFC 3629: no overlongs, no surrogates,
// nothing above U+10FFFF), or 0 if it is invalid, truncated or n == 0. ASCII is a sequence of length 1.
// On success the code point goes to *codepoint (if not null).
size_t utf8_sequence(const unsigned char* s, size_t n, uint32_t* codepoint);

}  // namespace json

#include "llmc/formats/json.h"

#include <locale.h>

#include <charconv>
#include <clocale>
#include <cmath>
#include <cstdlib>

namespace json {

// ---------------------------------------------------------------------------------------------- Value

Value Value::boolean(bool b) {
    Value v;
    v.v_ = b;
    return v;
}
Value Value::integer(int64_t i) {
    Value v;
    v.v_ = i;
    return v;
}
Value Value::number(double d) {
    Value v;
    v.v_ = d;
    return v;
}
Value Value::string(std::string s) {
    Value v;
    v.v_ = std::move(s);
    return v;
}
Value Value::array(Array a) {
    Value v;
    v.v_ = std::move(a);
    return v;
}
Value Value::object(Object o) {
    Value v;
    v.v_ = std::move(o);
    return v;
}

namespace {
const char* type_name(Value::Type t) {
    switch (t) {
        case Value::Type::Null:
            return "null";
        case Value::Type::Bool:
            return "bool";
        case Value::Type::Int:
            return "integer";
        case Value::Type::Double:
            return "number";
        case Value::Type::String:
            return "string";
        case Value::Type::Array:
            return "array";
        case Value::Type::Object:
            return "object";
    }
    return "?";
}
[[noreturn]] void wrong_type(Value::Type have, Value::Type want) {
    throw std::logic_error(std::string("json: value is a ") + type_name(have) + ", not a " + type_name(want));
}
}  // namespace

bool Value::as_bool() const {
    if (!is_bool()) wrong_type(type(), Type::Bool);
    return std::get<bool>(v_);
}
int64_t Value::as_int() const {
    if (!is_int()) wrong_type(type(), Type::Int);
    return std::get<int64_t>(v_);
}
double Value::as_double() const {
    if (is_int()) return (double)std::get<int64_t>(v_);
    if (!is_double()) wrong_type(type(), Type::Double);
    return std::get<double>(v_);
}
const std::string& Value::as_string() const {
    if (!is_string()) wrong_type(type(), Type::String);
    return std::get<std::string>(v_);
}
const Value::Array& Value::as_array() const {
    if (!is_array()) wrong_type(type(), Type::Array);
    return std::get<Array>(v_);
}
Value::Array& Value::as_array() {
    if (!is_array()) wrong_type(type(), Type::Array);
    return std::get<Array>(v_);
}
const Value::Object& Value::as_object() const {
    if (!is_object()) wrong_type(type(), Type::Object);
    return std::get<Object>(v_);
}
Value::Object& Value::as_object() {
    if (!is_object()) wrong_type(type(), Type::Object);
    return std::get<Object>(v_);
}

const Value* Value::find(const std::string& key) const {
    if (!is_object()) return nullptr;
    for (const Member& m : std::get<Object>(v_))
        if (m.first == key) return &m.second;
    return nullptr;
}
void Value::push_back(Value v) { as_array().push_back(std::move(v)); }
void Value::set(std::string key, Value v) { as_object().emplace_back(std::move(key), std::move(v)); }

bool Value::operator==(const Value& o) const { return v_ == o.v_; }

// ----------------------------------------------------------------------------------------------- UTF-8

size_t utf8_sequence(const unsigned char* s, size_t n, uint32_t* codepoint) {
    if (n == 0) return 0;
    const unsigned char c = s[0];
    if (c < 0x80) {
        if (codepoint) *codepoint = c;
        return 1;
    }
    size_t len;
    uint32_t cp, min;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2, cp = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3, cp = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4, cp = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (n < len) return 0;
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (s[k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    if (codepoint) *codepoint = cp;
    return len;
}

// --------------------------------------------------------------------------------------------- Parser

namespace {

class Parser {
  public:
    Parser(const char* data, size_t size) : p_(data), n_(size) {}

    Value parse_document() {
        skip_ws();
        Value v = parse_value(0);
        skip_ws();
        if (i_ != n_) fail("unexpected data after the JSON value");
        return v;
    }

  private:
    const char* p_;
    size_t n_;
    size_t i_ = 0;

    [[noreturn]] void fail(const std::string& what) const {
        throw ParseError("offset " + std::to_string(i_) + ": " + what);
    }
    bool at_end() const { return i_ >= n_; }
    unsigned char peek() const { return (unsigned char)p_[i_]; }  // only when !at_end()

    void skip_ws() {
        while (i_ < n_ && (p_[i_] == ' ' || p_[i_] == '\t' || p_[i_] == '\n' || p_[i_] == '\r')) i_++;
    }
    void expect_literal(const char* lit) {
        for (size_t k = 0; lit[k]; k++) {
            if (at_end() || p_[i_] != lit[k]) fail(std::string("invalid literal (expected '") + lit + "')");
            i_++;
        }
    }

    Value parse_value(int depth) {
        if (at_end()) fail("unexpected end of input (expected a value)");
        switch (peek()) {
            case '{':
                return parse_object(depth + 1);
            case '[':
                return parse_array(depth + 1);
            case '"':
                return Value::string(parse_string());
            case 't':
                expect_literal("true");
                return Value::boolean(true);
            case 'f':
                expect_literal("false");
                return Value::boolean(false);
            case 'n':
                expect_literal("null");
                return Value();
            default:
                if (peek() == '-' || (peek() >= '0' && peek() <= '9')) return parse_number();
                fail("unexpected character (expected a value)");
        }
    }

    // '{...}' and '[...]' alike: the depth limit, then read_element() for each element up to `close`, the
    // elements separated by ','. `what` names the container in the messages.
    template <typename ReadElement>
    void parse_elements(int depth, char close, const char* what, ReadElement read_element) {
        if (depth > kMaxDepth) fail("nesting deeper than " + std::to_string(kMaxDepth));
        i_++;  // '{' or '['
        skip_ws();
        if (!at_end() && peek() == close) {
            i_++;
            return;
        }
        for (;;) {
            skip_ws();
            read_element();
            skip_ws();
            if (at_end()) fail(std::string("unexpected end of input in ") + what);
            if (peek() == ',') {
                i_++;
                continue;
            }
            if (peek() == close) {
                i_++;
                return;
            }
            fail(std::string("expected ',' or '") + close + "' in " + what);
        }
    }

    Value parse_object(int depth) {
        Value obj = Value::object();
        Value::Object& members = obj.as_object();
        parse_elements(depth, '}', "object", [&] {
            if (at_end() || peek() != '"') fail("expected a string key in object");
            std::string key = parse_string();
            skip_ws();
            if (at_end() || peek() != ':') fail("expected ':' after object key");
            i_++;
            skip_ws();
            Value v = parse_value(depth);
            members.emplace_back(std::move(key), std::move(v));
        });
        return obj;
    }

    Value parse_array(int depth) {
        Value arr = Value::array();
        Value::Array& items = arr.as_array();
        parse_elements(depth, ']', "array", [&] { items.push_back(parse_value(depth)); });
        return arr;
    }

    static int hex_digit(unsigned char c) {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    }
    // Four hex digits at i_ (after "\u").
    unsigned parse_hex4() {
        if (n_ - i_ < 4) fail("truncated \\u escape");
        unsigned v = 0;
        for (int k = 0; k < 4; k++) {
            int d = hex_digit(peek());
            if (d < 0) fail("invalid hex digit in \\u escape");
            v = v * 16 + (unsigned)d;
            i_++;
        }
        return v;
    }
    static void append_utf8(std::string& out, unsigned cp) {
        if (cp < 0x80) {
            out += (char)cp;
        } else if (cp < 0x800) {
            out += (char)(0xC0 | (cp >> 6));
            out += (char)(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += (char)(0xE0 | (cp >> 12));
            out += (char)(0x80 | ((cp >> 6) & 0x3F));
            out += (char)(0x80 | (cp & 0x3F));
        } else {
            out += (char)(0xF0 | (cp >> 18));
            out += (char)(0x80 | ((cp >> 12) & 0x3F));
            out += (char)(0x80 | ((cp >> 6) & 0x3F));
            out += (char)(0x80 | (cp & 0x3F));
        }
    }
    std::string parse_string() {
        i_++;  // opening quote
        std::string out;
        for (;;) {
            if (at_end()) fail("unterminated string");
            unsigned char c = peek();
            if (c == '"') {
                i_++;
                return out;
            }
            if (c < 0x20) fail("raw control character in string (must be escaped)");
            if (c >= 0x80) {
                size_t len = utf8_sequence(reinterpret_cast<const unsigned char*>(p_ + i_), n_ - i_, nullptr);
                if (len == 0) fail("invalid UTF-8 in string");
                out.append(p_ + i_, len);
                i_ += len;
                continue;
            }
            if (c != '\\') {
                out += (char)c;
                i_++;
                continue;
            }
            i_++;  // backslash
            if (at_end()) fail("unterminated escape in string");
            char e = (char)peek();
            i_++;
            switch (e) {
                case '"':
                    out += '"';
                    break;
                case '\\':
                    out += '\\';
                    break;
                case '/':
                    out += '/';
                    break;
                case 'b':
                    out += '\b';
                    break;
                case 'f':
                    out += '\f';
                    break;
                case 'n':
                    out += '\n';
                    break;
                case 'r':
                    out += '\r';
                    break;
                case 't':
                    out += '\t';
                    break;
                case 'u': {
                    unsigned cp = parse_hex4();
                    if (cp >= 0xDC00 && cp <= 0xDFFF) fail("lone low surrogate in \\u escape");
                    if (cp >= 0xD800 && cp <= 0xDBFF) {
                        if (n_ - i_ < 2 || p_[i_] != '\\' || p_[i_ + 1] != 'u')
                            fail("high surrogate not followed by a low surrogate");
                        i_ += 2;
                        unsigned lo = parse_hex4();
                        if (lo < 0xDC00 || lo > 0xDFFF)
                            fail("high surrogate not followed by a low surrogate");
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    }
                    append_utf8(out, cp);
                    break;
                }
                default:
                    i_--;
                    fail("invalid escape in string");
            }
        }
    }

    static locale_t c_locale() {
        static locale_t loc = newlocale(LC_ALL_MASK, "C", (locale_t)0);
        return loc;
    }

    // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
    Value parse_number() {
        const size_t start = i_;
        auto digits = [&]() {
            size_t d = 0;
            while (!at_end() && peek() >= '0' && peek() <= '9') i_++, d++;
            return d;
        };
        bool neg = false;
        if (peek() == '-') neg = true, i_++;
        if (at_end()) fail("truncated number");
        if (peek() == '0') {
            i_++;
            if (!at_end() && peek() >= '0' && peek() <= '9') fail("leading zero in number");
        } else if (digits() == 0) {
            fail("invalid number");
        }
        bool integral = true;
        if (!at_end() && peek() == '.') {
            i_++;
            integral = false;
            if (digits() == 0) fail("expected digits after '.' in number");
        }
        if (!at_end() && (peek() == 'e' || peek() == 'E')) {
            i_++;
            integral = false;
            if (!at_end() && (peek() == '+' || peek() == '-')) i_++;
            if (digits() == 0) fail("expected digits in number exponent");
        }
        const char* first = p_ + start;
        const size_t len = i_ - start;
        if (integral) {
            // Accumulate as a negative number so INT64_MIN fits; fall back to double on overflow.
            int64_t v = 0;
            bool overflow = false;
            for (size_t k = neg ? 1 : 0; k < len; k++) {
                int d = first[k] - '0';
                if (v < (INT64_MIN + d) / 10) {
                    overflow = true;
                    break;
                }
                v = v * 10 - d;
            }
            if (!overflow && !neg && v == INT64_MIN) overflow = true;
            if (!overflow) return Value::integer(neg ? v : -v);
        }
        std::string text(first, len);  // NUL-terminated copy for strtod_l
        char* end = nullptr;
        double d = strtod_l(text.c_str(), &end, c_locale());
        if (end != text.c_str() + text.size()) fail("invalid number");
        if (!std::isfinite(d)) fail("number out of range");
        return Value::number(d);
    }
};

}  // namespace

Value parse(const char* data, size_t size) {
    if (size > 0 && data == nullptr) throw ParseError("offset 0: null input");
    Parser p(data, size);
    return p.parse_document();
}

// --------------------------------------------------------------------------------------------- Writer

std::string quote(const std::string& s) {
    static const char* hex = "0123456789abcdef";
    std::string out;
    out.reserve(s.size() + 2);
    out += '"';
    for (char ch : s) {
        unsigned char c = (unsigned char)ch;
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\b':
                out += "\\b";
                break;
            case '\f':
                out += "\\f";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (c < 0x20) {
                    out += "\\u00";
                    out += hex[c >> 4];
                    out += hex[c & 15];
                } else {
                    out += (char)c;
                }
        }
    }
    out += '"';
    return out;
}

namespace {
void dump_to(const Value& v, std::string& out) {
    switch (v.type()) {
        case Value::Type::Null:
            out += "null";
            break;
        case Value::Type::Bool:
            out += v.as_bool() ? "true" : "false";
            break;
        case Value::Type::Int:
            out += std::to_string(v.as_int());
            break;
        case Value::Type::Double: {
            double d = v.as_double();
            if (!std::isfinite(d)) throw std::invalid_argument("json: cannot write a non-finite number");
            char buf[64];
            auto r = std::to_chars(buf, buf + sizeof(buf), d);  // shortest round-trip form
            std::string s(buf, r.ptr);
            if (s.find_first_of(".e") == std::string::npos) s += ".0";
            out += s;
            break;
        }
        case Value::Type::String:
            out += quote(v.as_string());
            break;
        case Value::Type::Array: {
            out += '[';
            bool first = true;
            for (const Value& x : v.as_array()) {
                if (!first) out += ',';
                first = false;
                dump_to(x, out);
            }
            out += ']';
            break;
        }
        case Value::Type::Object: {
            out += '{';
            bool first = true;
            for (const Value::Member& m : v.as_object()) {
                if (!first) out += ',';
                first = false;
                out += quote(m.first);
                out += ':';
                dump_to(m.second, out);
            }
            out += '}';
            break;
        }
    }
}
// Scalars as dump_to writes them; arrays and objects one entry per line at depth `level`.
void dump_pretty_to(const Value& v, int indent, int level, std::string& out) {
    const bool array = v.is_array(), object = v.is_object();
    if ((!array && !object) || (array && v.as_array().empty()) || (object && v.as_object().empty())) {
        dump_to(v, out);
        return;
    }
    const std::string inner((size_t)indent * (level + 1), ' ');
    out += array ? "[\n" : "{\n";
    const size_t n = array ? v.as_array().size() : v.as_object().size();
    for (size_t i = 0; i < n; i++) {
        out += inner;
        if (object) {
            out += quote(v.as_object()[i].first);
            out += ": ";
        }
        dump_pretty_to(array ? v.as_array()[i] : v.as_object()[i].second, indent, level + 1, out);
        out += i + 1 < n ? ",\n" : "\n";
    }
    out += std::string((size_t)indent * level, ' ');
    out += array ? ']' : '}';
}
}  // namespace

std::string dump(const Value& v) {
    std::string out;
    dump_to(v, out);
    return out;
}

std::string dump_pretty(const Value& v, int indent) {
    std::string out;
    dump_pretty_to(v, indent, 0, out);
    return out + "\n";
}

}  // namespace json

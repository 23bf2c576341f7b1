#include "jinja/value.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace tessel::jinja {

const Value* Dict::find(std::string_view key) const {
    for (const auto& [k, v] : items)
        if (k == key) return &v;
    return nullptr;
}

void Dict::set(const std::string& key, Value value) {
    for (auto& [k, v] : items)
        if (k == key) {
            v = std::move(value);
            return;
        }
    items.emplace_back(key, std::move(value));
}

bool Value::truthy() const {
    switch (kind_) {
        case Kind::Undefined:
        case Kind::None: return false;
        case Kind::Bool:
        case Kind::Int: return int_ != 0;
        case Kind::Float: return float_ != 0;
        case Kind::String: return !text_.empty();
        case Kind::List: return !list_->empty();
        case Kind::Dict: return !dict_->items.empty();
        case Kind::Namespace:
        case Kind::Callable: return true;
    }
    return false;
}

std::string float_repr(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
    char buf[64];
    const auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    std::string sci(buf, res.ptr);  // shortest round-trip digits: [-]D[.DDD]e[+-]XX
    std::string sign;
    if (sci[0] == '-') {
        sign = "-";
        sci.erase(0, 1);
    }
    const size_t e = sci.find('e');
    std::string digits = sci.substr(0, e);
    if (digits.size() > 1) digits.erase(1, 1);  // drop the point
    const int exp = std::stoi(sci.substr(e + 1));
    if (exp < -4 || exp >= 16) {  // Python's repr switches to exponent notation here
        std::string out = sign + digits.substr(0, 1);
        if (digits.size() > 1) out += "." + digits.substr(1);
        char ebuf[16];
        std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
        return out + ebuf;
    }
    if (exp < 0) return sign + "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    const size_t int_len = static_cast<size_t>(exp) + 1;
    if (digits.size() <= int_len) return sign + digits + std::string(int_len - digits.size(), '0') + ".0";
    return sign + digits.substr(0, int_len) + "." + digits.substr(int_len);
}

namespace {

std::string repr_string(const std::string& s) {
    const bool has_single = s.find('\'') != std::string::npos;
    const char quote = has_single && s.find('"') == std::string::npos ? '"' : '\'';
    std::string out(1, quote);
    for (const unsigned char c : s) {
        if (c == quote || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out + quote;
}

}  // namespace

std::string Value::to_output() const {
    switch (kind_) {
        case Kind::Undefined: return "";
        case Kind::String: return text_;
        default: return repr();
    }
}

std::string Value::repr() const {
    switch (kind_) {
        case Kind::Undefined: return "";
        case Kind::None: return "None";
        case Kind::Bool: return int_ ? "True" : "False";
        case Kind::Int: return std::to_string(int_);
        case Kind::Float: return float_repr(float_);
        case Kind::String: return repr_string(text_);
        case Kind::List: {
            std::string out = tuple_ ? "(" : "[";
            for (size_t i = 0; i < list_->size(); ++i) out += (i ? ", " : "") + (*list_)[i].repr();
            if (tuple_) return out + (list_->size() == 1 ? ",)" : ")");
            return out + "]";
        }
        case Kind::Dict: {
            std::string out = "{";
            bool first = true;
            for (const auto& [k, v] : dict_->items) {
                out += (first ? "" : ", ") + repr_string(k) + ": " + v.repr();
                first = false;
            }
            return out + "}";
        }
        case Kind::Namespace: return "<Namespace>";
        case Kind::Callable: return "<function " + callable_->name + ">";
    }
    return "";
}

const char* Value::type_name() const {
    switch (kind_) {
        case Kind::Undefined: return "undefined";
        case Kind::None: return "NoneType";
        case Kind::Bool: return "bool";
        case Kind::Int: return "int";
        case Kind::Float: return "float";
        case Kind::String: return "str";
        case Kind::List: return "list";
        case Kind::Dict: return "dict";
        case Kind::Namespace: return "Namespace";
        case Kind::Callable: return "function";
    }
    return "";
}

bool equals(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.kind() == Value::Kind::Float || b.kind() == Value::Kind::Float) return a.as_float() == b.as_float();
        return a.as_int() == b.as_int();
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case Value::Kind::Undefined:
        case Value::Kind::None: return true;
        case Value::Kind::String: return a.str() == b.str();
        case Value::Kind::List: {
            if (a.list().size() != b.list().size()) return false;
            for (size_t i = 0; i < a.list().size(); ++i)
                if (!equals(a.list()[i], b.list()[i])) return false;
            return true;
        }
        case Value::Kind::Dict: {  // order does not matter, as in Python
            if (a.dict().items.size() != b.dict().items.size()) return false;
            for (const auto& [k, v] : a.dict().items) {
                const Value* other = b.dict().find(k);
                if (!other || !equals(v, *other)) return false;
            }
            return true;
        }
        case Value::Kind::Namespace: return &a.dict() == &b.dict();
        case Value::Kind::Callable: return &a.callable() == &b.callable();
        default: return false;
    }
}

std::u32string utf8_decode(std::string_view s) {
    std::u32string out;
    out.reserve(s.size());
    size_t i = 0;
    while (i < s.size()) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        char32_t cp = len == 1 ? c : len == 2 ? (c & 0x1f) : len == 3 ? (c & 0x0f) : (c & 0x07);
        bool ok = len > 0 && i + static_cast<size_t>(len) <= s.size();
        for (int k = 1; ok && k < len; ++k) {
            const unsigned char cc = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
            ok = (cc & 0xc0) == 0x80;
            cp = (cp << 6) | (cc & 0x3f);
        }
        if (!ok) {
            out += U'\uFFFD';
            ++i;
            continue;
        }
        out += cp;
        i += static_cast<size_t>(len);
    }
    return out;
}

std::string utf8_encode(std::u32string_view s) {
    std::string out;
    out.reserve(s.size());
    for (const char32_t c : s) {
        if (c < 0x80) {
            out += static_cast<char>(c);
        } else if (c < 0x800) {
            out += static_cast<char>(0xc0 | (c >> 6));
            out += static_cast<char>(0x80 | (c & 0x3f));
        } else if (c < 0x10000) {
            out += static_cast<char>(0xe0 | (c >> 12));
            out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
            out += static_cast<char>(0x80 | (c & 0x3f));
        } else {
            out += static_cast<char>(0xf0 | (c >> 18));
            out += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
            out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
            out += static_cast<char>(0x80 | (c & 0x3f));
        }
    }
    return out;
}

bool is_space(char32_t c) {
    return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

}  // namespace tessel::jinja

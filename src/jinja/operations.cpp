// Value operations with jinja2's (Python's) semantics: attributes, subscripts, iteration,
// membership, ordering, strip, length.
#include <algorithm>

#include "jinja/builtins.hpp"

namespace tessel::jinja {

void require_defined(const Value& v, const Pos& pos) {
    if (v.is_undefined()) fail(pos, v.str().empty() ? "value is undefined" : v.str());
}

Value argument(const Args& args, size_t i, const char* name, const Value& fallback) {
    if (i < args.positional.size()) return args.positional[i];
    for (const auto& [k, v] : args.keyword)
        if (k == name) return v;
    return fallback;
}

Value get_attr(const Value& object, const std::string& name, const Pos& pos) {
    require_defined(object, pos);
    if (std::optional<Value> m = bound_method(object, name)) return *m;
    if (object.is_dict())
        if (const Value* v = object.dict().find(name)) return *v;
    std::string hint = "'";
    hint += object.is_dict() ? "dict object" : object.type_name();
    hint += "' has no attribute '" + name + "'";
    return Value::undefined(std::move(hint));
}

Value get_item(const Value& object, const Value& key, const Pos& pos) {
    require_defined(object, pos);
    if (object.is_dict()) {
        if (key.is_string()) {
            if (const Value* v = object.dict().find(key.str())) return *v;
            if (std::optional<Value> m = bound_method(object, key.str())) return *m;
        }
        return Value::undefined("'dict object' has no attribute " + key.repr());
    }
    if (object.is_list() || object.is_string()) {
        if (!key.is_int() && !key.is_bool()) return Value::undefined(std::string(object.type_name()) + " index is not an integer");
        if (object.is_string()) {
            const std::u32string s = utf8_decode(object.str());
            int64_t i = key.as_int();
            if (i < 0) i += static_cast<int64_t>(s.size());
            if (i < 0 || i >= static_cast<int64_t>(s.size())) return Value::undefined("str index out of range");
            return utf8_encode(s.substr(static_cast<size_t>(i), 1));
        }
        int64_t i = key.as_int();
        if (i < 0) i += static_cast<int64_t>(object.list().size());
        if (i < 0 || i >= static_cast<int64_t>(object.list().size())) return Value::undefined("list object has no element " + key.repr());
        return object.list()[static_cast<size_t>(i)];
    }
    return Value::undefined(std::string("'") + object.type_name() + "' object has no attribute " + key.repr());
}

std::vector<Value> iterate(const Value& v, const Pos& pos) {
    switch (v.kind()) {
        case Value::Kind::Undefined: return {};
        case Value::Kind::List: return v.list();
        case Value::Kind::Dict: {
            std::vector<Value> keys;
            for (const auto& [k, _] : v.dict().items) keys.push_back(Value(k));
            return keys;
        }
        case Value::Kind::String: {
            std::vector<Value> chars;
            for (const char32_t c : utf8_decode(v.str())) chars.push_back(utf8_encode(std::u32string(1, c)));
            return chars;
        }
        default: fail(pos, std::string("'") + v.type_name() + "' object is not iterable");
    }
}

bool contains(const Value& haystack, const Value& needle, const Pos& pos) {
    if (haystack.is_string()) {
        if (!needle.is_string()) fail(pos, std::string("'in <string>' requires string as left operand, not ") + needle.type_name());
        return haystack.str().find(needle.str()) != std::string::npos;
    }
    if (haystack.is_dict()) return needle.is_string() && haystack.dict().find(needle.str()) != nullptr;
    for (const Value& item : iterate(haystack, pos))
        if (equals(item, needle)) return true;
    return false;
}

bool less(const Value& a, const Value& b, const Pos& pos) {
    if (a.is_number() && b.is_number()) {
        if (a.kind() == Value::Kind::Float || b.kind() == Value::Kind::Float) return a.as_float() < b.as_float();
        return a.as_int() < b.as_int();
    }
    if (a.is_string() && b.is_string()) return a.str() < b.str();  // UTF-8 byte order is code point order
    if (a.is_list() && b.is_list()) {
        const List &x = a.list(), &y = b.list();
        for (size_t i = 0; i < std::min(x.size(), y.size()); ++i) {
            if (less(x[i], y[i], pos)) return true;
            if (less(y[i], x[i], pos)) return false;
        }
        return x.size() < y.size();
    }
    require_defined(a, pos);
    require_defined(b, pos);
    fail(pos, std::string("'<' not supported between instances of '") + a.type_name() + "' and '" + b.type_name() + "'");
}

std::string strip(const std::string& s, const Value& chars, bool left, bool right) {
    const std::u32string text = utf8_decode(s);
    const std::u32string set = chars.is_string() ? utf8_decode(chars.str()) : std::u32string();
    auto strippable = [&](char32_t c) { return chars.is_string() ? set.find(c) != std::u32string::npos : is_space(c); };
    size_t b = 0, e = text.size();
    if (left)
        while (b < e && strippable(text[b])) ++b;
    if (right)
        while (e > b && strippable(text[e - 1])) --e;
    return utf8_encode(std::u32string_view(text).substr(b, e - b));
}

int64_t length(const Value& v, const Pos& pos) {
    switch (v.kind()) {
        case Value::Kind::Undefined: return 0;
        case Value::Kind::String: return static_cast<int64_t>(utf8_decode(v.str()).size());
        case Value::Kind::List: return static_cast<int64_t>(v.list().size());
        case Value::Kind::Dict: return static_cast<int64_t>(v.dict().items.size());
        default: fail(pos, std::string("object of type '") + v.type_name() + "' has no len()");
    }
}

}  // namespace tessel::jinja

// Methods of str and dict values (Python's), as templates call them: s.strip(), d.items(), ...
// Case mapping (upper, lower, title, capitalize) is ASCII only.
#include <cctype>

#include "jinja/builtins.hpp"

namespace tessel::jinja {
namespace {

std::string ascii_map(const std::string& s, int (*f)(int)) {
    std::string out = s;
    for (char& c : out)
        if (static_cast<unsigned char>(c) < 0x80) c = static_cast<char>(f(c));
    return out;
}

Value string_arg(const Args& a, size_t i, const char* name, const std::string& method, const Pos& pos) {
    const Value v = argument(a, i, name);
    if (!v.is_string()) fail(pos, method + "() argument '" + name + "' must be a string, not " + v.type_name());
    return v;
}

bool affix(const Value& self, const Args& a, bool prefix, const Pos& pos) {
    const Value arg = argument(a, 0, prefix ? "prefix" : "suffix");
    std::vector<Value> options = arg.is_list() ? arg.list() : std::vector<Value>{arg};
    for (const Value& o : options) {
        if (!o.is_string()) fail(pos, std::string(prefix ? "startswith" : "endswith") + "() needs strings");
        if (prefix ? self.str().starts_with(o.str()) : self.str().ends_with(o.str())) return true;
    }
    return false;
}

List split(const std::string& s, const Value& sep, int64_t maxsplit, const Pos& pos) {
    List out;
    if (sep.is_none() || sep.is_undefined()) {  // runs of whitespace, no empty parts
        const std::u32string t = utf8_decode(s);
        size_t i = 0;
        while (i < t.size()) {
            while (i < t.size() && is_space(t[i])) ++i;
            if (i >= t.size()) break;
            if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
                size_t e = t.size();
                while (e > i && is_space(t[e - 1])) --e;
                out.push_back(utf8_encode(t.substr(i, e - i)));
                break;
            }
            size_t j = i;
            while (j < t.size() && !is_space(t[j])) ++j;
            out.push_back(utf8_encode(t.substr(i, j - i)));
            i = j;
        }
        return out;
    }
    if (!sep.is_string()) fail(pos, "split() separator must be a string or none");
    if (sep.str().empty()) fail(pos, "split(): empty separator");
    size_t from = 0;
    for (size_t at = s.find(sep.str()); at != std::string::npos && (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit);
         at = s.find(sep.str(), from)) {
        out.push_back(s.substr(from, at - from));
        from = at + sep.str().size();
    }
    out.push_back(s.substr(from));
    return out;
}

std::string replace(const std::string& s, const std::string& old, const std::string& repl, int64_t count) {
    std::string out;
    int64_t done = 0;
    if (old.empty()) {  // Python inserts the replacement around every code point
        const std::u32string t = utf8_decode(s);
        for (size_t i = 0; i <= t.size(); ++i) {
            if (count < 0 || done < count) {
                out += repl;
                ++done;
            }
            if (i < t.size()) out += utf8_encode(t.substr(i, 1));
        }
        return out;
    }
    size_t from = 0;
    for (size_t at = s.find(old); at != std::string::npos && (count < 0 || done < count); at = s.find(old, from), ++done) {
        out += s.substr(from, at - from) + repl;
        from = at + old.size();
    }
    return out + s.substr(from);
}

using Method = Value (*)(const Value& self, Args& a, const Pos& pos);

struct NamedMethod {
    const char* name;
    Method fn;
};

const NamedMethod kStringMethods[] = {
    {"strip", [](const Value& s, Args& a, const Pos&) { return Value(strip(s.str(), argument(a, 0, "chars"), true, true)); }},
    {"lstrip", [](const Value& s, Args& a, const Pos&) { return Value(strip(s.str(), argument(a, 0, "chars"), true, false)); }},
    {"rstrip", [](const Value& s, Args& a, const Pos&) { return Value(strip(s.str(), argument(a, 0, "chars"), false, true)); }},
    {"startswith", [](const Value& s, Args& a, const Pos& p) { return Value(affix(s, a, true, p)); }},
    {"endswith", [](const Value& s, Args& a, const Pos& p) { return Value(affix(s, a, false, p)); }},
    {"split",
     [](const Value& s, Args& a, const Pos& p) {
         const Value n = argument(a, 1, "maxsplit", Value(-1));
         return Value(split(s.str(), argument(a, 0, "sep", Value::none()), n.is_int() ? n.as_int() : -1, p));
     }},
    {"upper", [](const Value& s, Args&, const Pos&) { return Value(ascii_map(s.str(), ::toupper)); }},
    {"lower", [](const Value& s, Args&, const Pos&) { return Value(ascii_map(s.str(), ::tolower)); }},
    {"title",
     [](const Value& s, Args&, const Pos&) {
         std::string out = s.str();
         bool prev_letter = false;
         for (char& c : out) {
             const bool letter = std::isalpha(static_cast<unsigned char>(c)) != 0;
             if (letter) c = static_cast<char>(prev_letter ? std::tolower(c) : std::toupper(c));
             prev_letter = letter;
         }
         return Value(out);
     }},
    {"capitalize",
     [](const Value& s, Args&, const Pos&) {
         std::string out = ascii_map(s.str(), ::tolower);
         if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
         return Value(out);
     }},
    {"replace",
     [](const Value& s, Args& a, const Pos& p) {
         const Value n = argument(a, 2, "count", Value(-1));
         return Value(replace(s.str(), string_arg(a, 0, "old", "replace", p).str(), string_arg(a, 1, "new", "replace", p).str(),
                              n.is_int() ? n.as_int() : -1));
     }},
    {"find",
     [](const Value& s, Args& a, const Pos& p) {
         const size_t at = s.str().find(string_arg(a, 0, "sub", "find", p).str());
         return at == std::string::npos ? Value(-1)
                                        : Value(static_cast<int64_t>(utf8_decode(s.str().substr(0, at)).size()));
     }},
};

const NamedMethod kDictMethods[] = {
    {"items",
     [](const Value& d, Args&, const Pos&) {
         List out;
         for (const auto& [k, v] : d.dict().items) out.push_back(Value::make_tuple(List{Value(k), v}));
         return Value(out);
     }},
    {"keys",
     [](const Value& d, Args&, const Pos&) {
         List out;
         for (const auto& [k, v] : d.dict().items) out.push_back(Value(k));
         return Value(out);
     }},
    {"values",
     [](const Value& d, Args&, const Pos&) {
         List out;
         for (const auto& [k, v] : d.dict().items) out.push_back(v);
         return Value(out);
     }},
    {"get",
     [](const Value& d, Args& a, const Pos&) {
         const Value key = argument(a, 0, "key");
         const Value* v = key.is_string() ? d.dict().find(key.str()) : nullptr;
         return v ? *v : argument(a, 1, "default", Value::none());
     }},
};

}  // namespace

std::optional<Value> bound_method(const Value& object, const std::string& name) {
    auto bind = [&](const auto& table) -> std::optional<Value> {
        for (const NamedMethod& m : table)
            if (name == m.name)
                return Value(Callable{name, [object, fn = m.fn](Args& a, const Pos& pos) { return fn(object, a, pos); }});
        return std::nullopt;
    };
    if (object.is_string()) return bind(kStringMethods);
    if (object.kind() == Value::Kind::Dict) return bind(kDictMethods);
    return std::nullopt;
}

}  // namespace tessel::jinja

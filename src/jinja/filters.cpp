// jinja2's built-in filters that chat templates use, with HF transformers' tojson.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "jinja/builtins.hpp"

namespace tessel::jinja {
namespace {

using Filter = Value (*)(const Value& in, Args& a, const Pos& pos);

struct NamedFilter {
    const char* name;
    Filter fn;
};

// jinja2's attribute getter for map/selectattr/join: "a.b.0" looks up each part as an item.
Value attribute_path(const Value& item, const std::string& path, const Pos& pos) {
    Value v = item;
    size_t from = 0;
    for (;;) {
        const size_t dot = path.find('.', from);
        const std::string part = path.substr(from, dot == std::string::npos ? std::string::npos : dot - from);
        int64_t index = 0;
        const bool numeric = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
        if (numeric && std::from_chars(part.data(), part.data() + part.size(), index).ec != std::errc())
            return Value::undefined("no element " + part);  // past int64: no list is that long
        v = get_item(v, numeric ? Value(index) : Value(part), pos);
        if (dot == std::string::npos) return v;
        from = dot + 1;
    }
}

// The filters upper, lower, title, capitalize: the str method of the same name on str(value).
Value string_method(const Value& in, const char* name, const Pos& pos) {
    Args none;
    return bound_method(Value(in.to_output()), name)->callable().call(none, pos);
}

// select/reject/selectattr/rejectattr: keep the items whose test (truthiness by default) is `keep`.
Value select(const Value& in, Args& a, const Pos& pos, bool by_attribute, bool keep) {
    size_t next = 0;
    std::string attr;
    if (by_attribute) {
        const Value name = argument(a, next++, "attribute");
        if (!name.is_string()) fail(pos, "selectattr/rejectattr need an attribute name");
        attr = name.str();
    }
    const Value test = argument(a, next++, "test");
    Args test_args;
    for (size_t k = next; k < a.positional.size(); ++k) test_args.positional.push_back(a.positional[k]);
    List out;
    for (const Value& item : iterate(in, pos)) {
        const Value v = by_attribute ? attribute_path(item, attr, pos) : item;
        const bool pass = test.is_undefined() ? v.truthy() : apply_test(test.to_output(), v, test_args, pos);
        if (pass == keep) out.push_back(item);
    }
    return out;
}

const NamedFilter kFilters[] = {
    {"trim", [](const Value& in, Args& a, const Pos&) { return Value(strip(in.to_output(), argument(a, 0, "chars"), true, true)); }},
    {"length", [](const Value& in, Args&, const Pos& p) { return Value(length(in, p)); }},
    {"count", [](const Value& in, Args&, const Pos& p) { return Value(length(in, p)); }},
    {"tojson",
     [](const Value& in, Args& a, const Pos& p) {
         const Value indent = argument(a, 0, "indent", Value::none());
         if (!indent.is_none() && !indent.is_int()) fail_unsupported(p, "tojson indent of type " + std::string(indent.type_name()));
         return Value(to_json(in, indent.is_none() ? -1 : static_cast<int>(indent.as_int()), p));
     }},
    {"string", [](const Value& in, Args&, const Pos&) { return Value(in.to_output()); }},
    {"safe", [](const Value& in, Args&, const Pos&) { return in; }},
    {"upper", [](const Value& in, Args&, const Pos& p) { return string_method(in, "upper", p); }},
    {"lower", [](const Value& in, Args&, const Pos& p) { return string_method(in, "lower", p); }},
    {"title", [](const Value& in, Args&, const Pos& p) { return string_method(in, "title", p); }},
    {"capitalize", [](const Value& in, Args&, const Pos& p) { return string_method(in, "capitalize", p); }},
    {"replace",
     [](const Value& in, Args& a, const Pos& p) {
         return bound_method(Value(in.to_output()), "replace")->callable().call(a, p);
     }},
    {"first",
     [](const Value& in, Args&, const Pos& p) {
         const std::vector<Value> items = iterate(in, p);
         return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
     }},
    {"last",
     [](const Value& in, Args&, const Pos& p) {
         const std::vector<Value> items = iterate(in, p);
         return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
     }},
    {"join",
     [](const Value& in, Args& a, const Pos& p) {
         const Value sep = argument(a, 0, "d", Value(""));
         const Value attr = argument(a, 1, "attribute", Value::none());
         std::string out;
         bool first = true;
         for (const Value& item : iterate(in, p)) {
             if (!first) out += sep.to_output();
             out += (attr.is_none() ? item : attribute_path(item, attr.to_output(), p)).to_output();
             first = false;
         }
         return Value(out);
     }},
    {"default",
     [](const Value& in, Args& a, const Pos&) {
         const bool boolean = argument(a, 1, "boolean", Value(false)).truthy();
         return (in.is_undefined() || (boolean && !in.truthy())) ? argument(a, 0, "default_value", Value("")) : in;
     }},
    {"items",
     [](const Value& in, Args&, const Pos& p) {
         if (in.is_undefined()) return Value(List{});
         if (in.kind() != Value::Kind::Dict) fail(p, std::string("items filter needs a mapping, got ") + in.type_name());
         Args none;
         return bound_method(in, "items")->callable().call(none, p);
     }},
    {"list", [](const Value& in, Args&, const Pos& p) { return Value(List(iterate(in, p))); }},
    {"reverse",
     [](const Value& in, Args&, const Pos& p) {
         std::vector<Value> items = iterate(in, p);
         std::reverse(items.begin(), items.end());
         if (!in.is_string()) return Value(List(items));
         std::string out;
         for (const Value& c : items) out += c.str();
         return Value(out);
     }},
    {"map",
     [](const Value& in, Args& a, const Pos& p) {
         List out;
         const Value attr = argument(a, 99, "attribute");
         if (!attr.is_undefined()) {
             const Value def = argument(a, 99, "default");
             for (const Value& item : iterate(in, p)) {
                 Value v = attribute_path(item, attr.to_output(), p);
                 out.push_back(v.is_undefined() && !def.is_undefined() ? def : v);
             }
             return Value(out);
         }
         if (a.positional.empty()) fail(p, "map needs a filter name or attribute=");
         const std::string filter = a.positional[0].to_output();
         Args rest;
         rest.positional.assign(a.positional.begin() + 1, a.positional.end());
         rest.keyword = a.keyword;
         for (const Value& item : iterate(in, p)) out.push_back(apply_filter(filter, item, rest, p));
         return Value(out);
     }},
    {"select", [](const Value& in, Args& a, const Pos& p) { return select(in, a, p, false, true); }},
    {"reject", [](const Value& in, Args& a, const Pos& p) { return select(in, a, p, false, false); }},
    {"selectattr", [](const Value& in, Args& a, const Pos& p) { return select(in, a, p, true, true); }},
    {"rejectattr", [](const Value& in, Args& a, const Pos& p) { return select(in, a, p, true, false); }},
    {"int",
     [](const Value& in, Args& a, const Pos& p) {
         const Value def = argument(a, 0, "default", Value(0));
         if (in.kind() == Value::Kind::Float) return std::isnan(in.as_float()) ? def : Value(float_to_int(in.as_float(), p));
         if (in.is_number()) return Value(in.as_int());
         if (in.is_string()) {
             const std::string s = strip(in.str(), Value::none(), true, true);
             char* end = nullptr;
             errno = 0;
             const long long v = std::strtoll(s.c_str(), &end, 10);
             if (!s.empty() && end == s.c_str() + s.size()) {
                 if (errno == ERANGE) fail(p, "integer overflow in int('" + s + "') (tessel's integers are 64-bit)");
                 return Value(static_cast<int64_t>(v));
             }
             const double d = std::strtod(s.c_str(), &end);
             if (!s.empty() && end == s.c_str() + s.size()) return std::isnan(d) ? def : Value(float_to_int(d, p));
         }
         return def;
     }},
    {"float",
     [](const Value& in, Args& a, const Pos&) {
         const Value def = argument(a, 0, "default", Value(0.0));
         if (in.is_number()) return Value(in.as_float());
         if (in.is_string()) {
             const std::string s = strip(in.str(), Value::none(), true, true);
             char* end = nullptr;
             const double d = std::strtod(s.c_str(), &end);
             if (!s.empty() && end == s.c_str() + s.size()) return Value(d);
         }
         return def;
     }},
    {"abs",
     [](const Value& in, Args&, const Pos& p) {
         if (!in.is_number()) fail(p, std::string("bad operand type for abs(): '") + in.type_name() + "'");
         if (in.kind() == Value::Kind::Float) return Value(std::fabs(in.as_float()));
         return in.as_int() < 0 ? negate(in, p) : Value(in.as_int());
     }},
};

}  // namespace

Value apply_filter(const std::string& name, const Value& input, Args& args, const Pos& pos) {
    const std::string canonical = name == "d" ? "default" : name;
    for (const NamedFilter& f : kFilters)
        if (canonical == f.name) return f.fn(input, args, pos);
    fail_unsupported(pos, "filter '" + name + "'");
}

}  // namespace tessel::jinja

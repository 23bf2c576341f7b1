// jinja2's built-in tests (`value is name`), as chat templates use them.
#include <cctype>

#include "jinja/builtins.hpp"

namespace tessel::jinja {
namespace {

bool has_case(const Value& v, bool upper) {
    bool cased = false;
    for (const char c : v.to_output()) {
        if (std::islower(static_cast<unsigned char>(c))) {
            if (upper) return false;
            cased = true;
        } else if (std::isupper(static_cast<unsigned char>(c))) {
            if (!upper) return false;
            cased = true;
        }
    }
    return cased;
}

int64_t integer(const Value& v, const Pos& pos) {
    require_defined(v, pos);
    if (!v.is_int() && !v.is_bool()) fail(pos, std::string("expected an integer, got ") + v.type_name());
    return v.as_int();
}

}  // namespace

bool apply_test(const std::string& name, const Value& v, Args& args, const Pos& pos) {
    const Value arg = argument(args, 0, "other");
    using K = Value::Kind;
    if (name == "defined") return !v.is_undefined();
    if (name == "undefined") return v.is_undefined();
    if (name == "none") return v.is_none();
    if (name == "string") return v.is_string();
    if (name == "mapping") return v.kind() == K::Dict;
    // Python: a str is iterable and a sequence; so is jinja2's Undefined.
    if (name == "iterable") return v.is_undefined() || v.is_string() || v.is_list() || v.kind() == K::Dict;
    if (name == "sequence") return v.is_undefined() || v.is_string() || v.is_list() || v.kind() == K::Dict;
    if (name == "number") return v.is_number();
    if (name == "integer") return v.is_int();
    if (name == "float") return v.kind() == K::Float;
    if (name == "boolean") return v.is_bool();
    if (name == "true") return v.is_bool() && v.as_bool();
    if (name == "false") return v.is_bool() && !v.as_bool();
    if (name == "callable") return v.is_callable();
    if (name == "eq" || name == "equalto" || name == "==") return equals(v, arg);
    if (name == "ne" || name == "!=") return !equals(v, arg);
    if (name == "lt" || name == "lessthan") return less(v, arg, pos);
    if (name == "gt" || name == "greaterthan") return less(arg, v, pos);
    if (name == "le") return !less(arg, v, pos);
    if (name == "ge") return !less(v, arg, pos);
    if (name == "in") return contains(argument(args, 0, "seq"), v, pos);
    if (name == "odd") return integer(v, pos) % 2 != 0;
    if (name == "even") return integer(v, pos) % 2 == 0;
    if (name == "divisibleby") {
        const int64_t d = integer(argument(args, 0, "num"), pos);
        if (d == 0) fail(pos, "divisibleby 0");
        return integer(v, pos) % d == 0;
    }
    if (name == "lower") return has_case(v, false);
    if (name == "upper") return has_case(v, true);
    fail_unsupported(pos, "test '" + name + "'");
}

}  // namespace tessel::jinja

// The interpreter's built-in filters, tests, methods and value operations (jinja2's and Python's
// semantics for the subset chat templates use). Internal to src/jinja.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jinja/error.hpp"
#include "jinja/value.hpp"

namespace tessel::jinja {

/// `input | name(args)`. Throws UnsupportedError "filter 'name'" for an unknown filter.
Value apply_filter(const std::string& name, const Value& input, Args& args, const Pos& pos);
/// `value is name(args)`. Throws UnsupportedError "test 'name'" for an unknown test.
bool apply_test(const std::string& name, const Value& value, Args& args, const Pos& pos);
/// The method `name` of a str or dict bound to `object` (strip, split, items, get, ...), or
/// nullopt when the type has no such method in tessel.
std::optional<Value> bound_method(const Value& object, const std::string& name);

/// jinja2's getattr: a method, else the dict item; undefined (with a hint naming the attribute)
/// when there is neither. Throws Error for an attribute of undefined.
Value get_attr(const Value& object, const std::string& name, const Pos& pos);
/// jinja2's subscript: dict item, list or str element (negative indexes count from the end);
/// undefined when missing. Throws Error for a subscript of undefined.
Value get_item(const Value& object, const Value& key, const Pos& pos);
/// Python's iteration: list items, dict keys, str code points; nothing for undefined. Throws
/// Error for a value that is not iterable.
std::vector<Value> iterate(const Value& v, const Pos& pos);
/// Python's `needle in haystack`.
bool contains(const Value& haystack, const Value& needle, const Pos& pos);
/// Python's < for numbers, strings and lists. Throws Error for other types.
bool less(const Value& a, const Value& b, const Pos& pos);
/// Python's str.strip/lstrip/rstrip: `chars` none strips Unicode whitespace.
std::string strip(const std::string& s, const Value& chars, bool left, bool right);
/// The length of a str (code points), list or dict; 0 for undefined.
int64_t length(const Value& v, const Pos& pos);
/// Throws Error "'hint' is undefined" when `v` is undefined (jinja2's UndefinedError).
void require_defined(const Value& v, const Pos& pos);

/// Python's `a op b` for numbers (op: + - * / // % **), floored division and modulo; an int result
/// outside int64 throws Error ("integer overflow"), as does division by zero.
Value arithmetic(const std::string& op, const Value& a, const Value& b, const Pos& pos);
/// Python's unary minus of a number; throws Error for -(-2**63).
Value negate(const Value& v, const Pos& pos);
/// Python's int(d): truncation toward zero; throws Error for nan, inf or a value outside int64.
int64_t float_to_int(double d, const Pos& pos);

/// Positional argument i or keyword `name` of a call, else `fallback`.
Value argument(const Args& args, size_t i, const char* name, const Value& fallback = Value());

/// HF transformers' tojson: Python json.dumps(v, ensure_ascii=False, indent=indent) (indent < 0:
/// none, separators ", " and ": "; else newlines and "," / ": "). Throws Error for undefined or
/// a callable.
std::string to_json(const Value& v, int indent, const Pos& pos);

}  // namespace tessel::jinja

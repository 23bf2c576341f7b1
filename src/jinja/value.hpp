// The values a Jinja template computes with: jinja2's (Python's) none, bool, int, float, str,
// list and dict (insertion-ordered, string keys), plus Undefined and callables (macros, bound
// methods, globals). Lists and dicts are shared by reference, as in Python.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessel::jinja {

class Value;
struct Pos;
using List = std::vector<Value>;

/// A dict with insertion order (Python 3.7+); keys are strings (JSON objects, template literals).
struct Dict {
    std::vector<std::pair<std::string, Value>> items;
    const Value* find(std::string_view key) const;
    void set(const std::string& key, Value value);
};

/// Positional and keyword arguments of a call.
struct Args {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keyword;
};

/// A function a template can call: a macro, a global (range, namespace, ...) or a bound method.
struct Callable {
    std::string name;
    std::function<Value(Args&, const Pos&)> call;
};

class Value {
public:
    enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace, Callable };

    Value() = default;  ///< undefined
    static Value undefined(std::string hint) {
        Value v;
        v.text_ = std::move(hint);
        return v;
    }
    static Value none() { return Value(Kind::None); }
    Value(bool b) : kind_(Kind::Bool), int_(b) {}
    Value(int64_t i) : kind_(Kind::Int), int_(i) {}
    Value(int i) : Value(static_cast<int64_t>(i)) {}
    Value(double d) : kind_(Kind::Float), float_(d) {}
    Value(std::string s) : kind_(Kind::String), text_(std::move(s)) {}
    Value(const char* s) : Value(std::string(s)) {}
    Value(List l) : kind_(Kind::List), list_(std::make_shared<List>(std::move(l))) {}
    Value(Dict d) : kind_(Kind::Dict), dict_(std::make_shared<Dict>(std::move(d))) {}
    Value(Callable c) : kind_(Kind::Callable), callable_(std::make_shared<Callable>(std::move(c))) {}
    /// A tuple (d.items()'s pairs, `(a, b)`): a list that prints as Python's tuple, "(a, b)".
    static Value make_tuple(List l) {
        Value v(std::move(l));
        v.tuple_ = true;
        return v;
    }
    /// A namespace() object: a dict whose entries are attributes that `set ns.x = ...` may change.
    static Value make_namespace(Dict d) {
        Value v(std::move(d));
        v.kind_ = Kind::Namespace;
        return v;
    }

    Kind kind() const { return kind_; }
    bool is_undefined() const { return kind_ == Kind::Undefined; }
    bool is_none() const { return kind_ == Kind::None; }
    bool is_bool() const { return kind_ == Kind::Bool; }
    bool is_int() const { return kind_ == Kind::Int; }
    bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float || kind_ == Kind::Bool; }
    bool is_string() const { return kind_ == Kind::String; }
    bool is_list() const { return kind_ == Kind::List; }
    bool is_dict() const { return kind_ == Kind::Dict || kind_ == Kind::Namespace; }
    bool is_callable() const { return kind_ == Kind::Callable; }

    bool as_bool() const { return int_ != 0; }
    int64_t as_int() const { return int_; }  ///< Int or Bool
    double as_float() const { return kind_ == Kind::Float ? float_ : static_cast<double>(int_); }
    const std::string& str() const { return text_; }  ///< String; for Undefined its name hint
    List& list() const { return *list_; }
    Dict& dict() const { return *dict_; }
    const Callable& callable() const { return *callable_; }

    /// Python truthiness: undefined, none, false, 0, "", [] and {} are false.
    bool truthy() const;
    /// What {{ value }} prints: Python's str() (True, None, 1.0, ['a', 1], {'k': 'v'}); "" when undefined.
    std::string to_output() const;
    /// Python's repr() (strings quoted), as str() shows list and dict items.
    std::string repr() const;
    /// jinja2's type name in messages: "str", "int", "list", "dict", "undefined", ...
    const char* type_name() const;

private:
    explicit Value(Kind k) : kind_(k) {}
    Kind kind_ = Kind::Undefined;
    bool tuple_ = false;
    int64_t int_ = 0;
    double float_ = 0;
    std::string text_;
    std::shared_ptr<List> list_;
    std::shared_ptr<Dict> dict_;
    std::shared_ptr<Callable> callable_;
};

/// Python ==: numbers compare by value (True == 1), lists and dicts by items.
bool equals(const Value& a, const Value& b);

/// Python's float repr: the shortest text that round-trips ("1.0", "0.1", "1e+16", "inf").
std::string float_repr(double d);

/// UTF-8 text as code points and back (Python strings index and slice by code point). Invalid
/// bytes map to U+FFFD.
std::u32string utf8_decode(std::string_view s);
std::string utf8_encode(std::u32string_view s);

/// Python's str.isspace for one code point.
bool is_space(char32_t c);

}  // namespace tessel::jinja

// The syntax tree of a parsed template: expressions and statements.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jinja/error.hpp"
#include "jinja/value.hpp"

namespace tessel::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
    enum class Kind {
        Literal,  ///< value
        Name,     ///< name
        List,     ///< args: items; name "tuple" for a tuple literal
        Dict,     ///< args: key, value, key, value, ...
        Attr,     ///< args[0].name
        Index,    ///< args[0][args[1]]
        Slice,    ///< args[0][args[1]:args[2]:args[3]], absent parts null
        Call,     ///< args[0](args[1..], kwargs)
        Filter,   ///< args[0] | name(args[1..], kwargs)
        Test,     ///< args[0] is [not] name(args[1..])
        Unary,    ///< name: "-", "+" or "not"; args[0]
        Binary,   ///< name: + - * / // % ** ~ and or; args[0], args[1]
        Compare,  ///< args[0] ops[0] args[1] ops[1] args[2] ... (chained, as Python)
        Cond,     ///< args[0] if args[1] else args[2] (args[2] null: undefined)
    };
    Kind kind;
    Pos pos;
    std::string name;
    Value value;
    std::vector<ExprPtr> args;
    std::vector<std::pair<std::string, ExprPtr>> kwargs;
    std::vector<std::string> ops;  ///< Compare: "==", "!=", "<", "<=", ">", ">=", "in", "not in"
    bool negated = false;          ///< Test: "is not"
};

struct Stmt;
using Body = std::vector<std::unique_ptr<Stmt>>;

struct Stmt {
    enum class Kind {
        Text,      ///< text
        Output,    ///< {{ expr }}
        If,        ///< branches: (condition, body); the else branch has a null condition
        For,       ///< for targets in expr [if filter]: body [else: else_body]
        Set,       ///< set targets[0][.attr] = expr
        SetBlock,  ///< set targets[0] %} body {% endset
        Macro,     ///< macro targets[0](params) body
        Break,
        Continue,
    };
    Kind kind;
    Pos pos;
    std::string text;
    ExprPtr expr;
    ExprPtr filter;
    std::vector<std::string> targets;
    std::string attr;
    std::vector<std::pair<ExprPtr, Body>> branches;
    Body body, else_body;
    std::vector<std::pair<std::string, ExprPtr>> params;  ///< Macro: name and default (may be null)
};

}  // namespace tessel::jinja

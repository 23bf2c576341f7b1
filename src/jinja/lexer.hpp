// Splits a Jinja template into text and tags, and a tag into expression tokens, with jinja2's
// whitespace rules as HF transformers configures them: trim_blocks (a block or comment tag eats
// one newline after it), lstrip_blocks (spaces and tabs from the line start up to a block or
// comment tag go), "-" on a tag side strips all whitespace on that side, "+" keeps it; newlines
// are normalised to \n and one trailing newline of the template is dropped (keep_trailing_newline
// is false).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "jinja/error.hpp"

namespace tessel::jinja {

struct Token {
    enum class Type { Name, String, Int, Float, Op, End };
    Type type;
    std::string text;  ///< a name, an operator, a string's value, a number's digits
    Pos pos;
};

/// One piece of a template: literal text, {{ expression }} or {% statement %}.
struct Piece {
    enum class Type { Text, Output, Statement };
    Type type;
    std::string text;           ///< Text only
    std::vector<Token> tokens;  ///< Output / Statement: ends with a Type::End token
    Pos pos;                    ///< where the piece starts
};

/// Throws Error(InvalidArgument) "template:L:C: ..." for an unclosed tag, comment or string, or a
/// character that starts no token.
std::vector<Piece> lex(std::string_view source);

}  // namespace tessel::jinja

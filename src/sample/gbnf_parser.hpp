// GBNF text -> Grammar (grammar.hpp).
//
// The syntax is llama.cpp's GBNF (grammars/README.md there): `name ::= alternatives` rules,
// one per line (a body continues on the next lines inside parentheses, after `::=` or `|`, and
// on a line that starts with `|`); `|` alternation, `( )` groups, `* + ?` and `{m}` `{m,}`
// `{m,n}` repetition; "literals" with the escapes \n \t \r \\ \" \[ \] \- \xHH \uHHHH
// \UHHHHHHHH and UTF-8 text; `[a-z]` and negated `[^...]` character classes; `.` for any code
// point; `#` comments to the end of the line. Rule names are [A-Za-z0-9_-]+; `root` is the start.
#pragma once

#include <cstddef>
#include <string_view>

#include "sample/grammar.hpp"

namespace tessel::sample {

/// Limits that keep a grammar's expansion bounded: elements after lowering repetitions
/// (x{0,100000} takes about 4 per repetition), and the largest repetition count.
inline constexpr size_t kMaxGrammarElements = size_t{1} << 21;
inline constexpr uint32_t kMaxRepetition = 100000;
/// Bounds on the parser's and the matcher's recursion: groups inside groups, and a chain of
/// rules each starting with the next (through elements that can match "").
inline constexpr uint32_t kMaxGrammarNesting = 1000;
inline constexpr uint32_t kMaxLeftChain = 2000;

/// Parses `text`. Throws tessel::Error (InvalidArgument) "grammar:LINE:COLUMN: ..." (1-based,
/// columns in code points) naming what was expected: an undefined rule (at its first use), a rule
/// defined twice, no `root` rule, an unclosed literal or class, a bad escape or repetition,
/// invalid UTF-8, a grammar past kMaxGrammarElements or the nesting limits, or a left-recursive
/// rule (at its definition: the matcher expands rules top-down, so `a ::= a "x"` would never end).
Grammar parse_gbnf(std::string_view text);

}  // namespace tessel::sample

// JSON Schema -> GBNF (tessel::json_schema_to_grammar in include/tessel/sampling.hpp), and the
// regular-expression subset of its `pattern` keyword.
#pragma once

#include <string>
#include <string_view>

namespace tessel::sample {

/// GBNF literal text ("...", quotes included) for `bytes`: `"` `\` and control characters escaped.
std::string gbnf_literal(std::string_view bytes);

/// A GBNF expression for the contents of a JSON string (between its quotes, JSON escapes
/// included) that match the regular expression `pattern` as a whole: literal characters and
/// escapes, `.`, classes `[...]` `[^...]`, `\d \w \s \D \W \S`, groups `( )` `(?: )`, `|`, and
/// `* + ? {m} {m,} {m,n}` (lazy forms too); a leading `^` and trailing `$` are dropped (the
/// whole string matches, which satisfies both anchored and search semantics). Throws
/// tessel::Error (Unsupported) naming `pointer` and the construct for anything else
/// (back-references, look-around, `\b`, ...).
std::string pattern_to_gbnf(std::string_view pattern, const std::string& pointer);

}  // namespace tessel::sample

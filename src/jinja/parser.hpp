// Parses the pieces of a lexed template into statements, with jinja2's operator precedence
// (lowest first): a if c else b; or; and; not; comparisons and in; + -; ~; * / // %; **; unary
// - +; then primaries with attribute, subscript, call, filter (|) and test (is) postfixes.
#pragma once

#include <string_view>

#include "jinja/ast.hpp"

namespace tessel::jinja {

/// The template's statements. Throws Error(InvalidArgument) "template:L:C: ..." for a malformed
/// template (unclosed block, stray end tag, bad expression, nesting deeper than 200) and
/// UnsupportedError for a tag tessel does not implement (raw, include, call, filter, ...).
Body parse(std::string_view source);

}  // namespace tessel::jinja

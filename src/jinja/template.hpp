// tessel's Jinja interpreter: the subset of jinja2 that chat templates use, rendered as HF
// transformers does (trim_blocks, lstrip_blocks, loop controls, raise_exception, strftime_now,
// tojson with ensure_ascii=False). What it covers and how it differs: docs/chat-templates.md.
#pragma once

#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "jinja/ast.hpp"
#include "jinja/value.hpp"

namespace tessel::jinja {

struct RenderOptions {
    /// The time strftime_now(format) formats; unset: the local time now.
    std::function<std::tm()> now;
    size_t max_output = size_t{64} << 20;  ///< bytes of output before rendering fails
    uint64_t max_steps = 10'000'000;       ///< statements and loop iterations before it fails
    int max_call_depth = 64;               ///< nested macro calls
    int max_depth = 1000;                  ///< statements and expressions evaluating inside each other (bounds the stack)
};

class Template {
public:
    /// Parses `source`. Throws Error(InvalidArgument) "template:L:C: ..." when malformed,
    /// UnsupportedError for a tag tessel does not implement.
    explicit Template(std::string_view source);

    /// Renders with `context` as the template's variables. Throws RaisedError for
    /// raise_exception(msg), UnsupportedError for an unknown filter/test/method/function,
    /// Error(InvalidArgument) "template:L:C: ..." for errors jinja2 raises too (undefined
    /// attribute, bad operand types) and for the limits of `options`.
    std::string render(const Dict& context, const RenderOptions& options = {}) const;

private:
    std::shared_ptr<const Body> body_;
};

/// A JSON text as a Value (objects keep their key order). Throws Error(InvalidArgument) naming
/// the parser's complaint.
Value value_from_json(std::string_view json);

}  // namespace tessel::jinja

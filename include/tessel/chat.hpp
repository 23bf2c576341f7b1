// Chat templates beyond apply_chat_template (engine.hpp): how a template is rendered.
#pragma once

#include <string>
#include <string_view>

#include "tessel/errors.hpp"
#include "tessel/export.h"

namespace tessel {

/// How apply_chat_template renders `chat_template`: "jinja" for a Jinja template tessel's
/// interpreter parses, else the name of the built-in format it uses: "chatml", "llama3",
/// "gemma" or "phi3" (a built-in name, returned as given, or the format a template with an
/// unsupported tag is recognised as, by fingerprint). An unsupported filter, test or method shows
/// only when rendering, where apply_chat_template falls back the same way. Throws tessel::Error:
/// Unsupported "unknown chat template (...), known: chatml, llama3, gemma, phi3" for an empty
/// template or an unsupported one that matches no format, InvalidArgument for a malformed one.
TESSEL_API std::string chat_template_format(std::string_view chat_template);

}  // namespace tessel

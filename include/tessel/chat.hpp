// Chat templates beyond apply_chat_template (engine.hpp): which built-in format a template is.
#pragma once

#include <string>
#include <string_view>

#include "tessel/errors.hpp"
#include "tessel/export.h"

namespace tessel {

/// The name of the built-in format apply_chat_template renders `chat_template` with: "chatml",
/// "llama3", "gemma" or "phi3". `chat_template` is, as for apply_chat_template, a model's
/// tokenizer.chat_template (recognised by fingerprint) or one of those four names (returned as
/// given). Throws tessel::Error(Unsupported) "unknown chat template (...), known: chatml, llama3,
/// gemma, phi3" for an empty or unrecognised template, as apply_chat_template does.
TESSEL_API std::string chat_template_format(std::string_view chat_template);

}  // namespace tessel

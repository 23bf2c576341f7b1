// The chat-template flags of `tessel run --chat` and `tessel chat`: --chat-template NAME (a
// built-in format) and --chat-template-file FILE (a Jinja template), and the template they select.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "tessel/engine.hpp"

namespace tessel::cli {

struct ChatTemplateFlags {
    std::string name;  ///< --chat-template: chatml, llama3, gemma, phi3
    std::string file;  ///< --chat-template-file: a Jinja template
};

/// Registers --chat-template and --chat-template-file (each excludes the other) on `cmd`;
/// returns both options (for needs()). An unknown name is a usage error (exit 2).
std::vector<CLI::Option*> add_chat_template_options(CLI::App& cmd, ChatTemplateFlags& flags);

/// The chat template to render with (apply_chat_template's argument): the file's text, the
/// built-in name, else the model's own tokenizer.chat_template. Throws tessel::Error (Io)
/// naming the file when it cannot be read, InvalidArgument when it is empty.
std::string chat_template_for(const Model& model, const ChatTemplateFlags& flags);

}  // namespace tessel::cli

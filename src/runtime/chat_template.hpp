// Chat formatting without Jinja: four built-in formats for a list of (role, content) messages.
//
// apply_chat_template (src/runtime/chat.cpp) renders a model's own Jinja template with src/jinja;
// these formats serve `--chat-template NAME` and the fallback for a template with a construct
// the interpreter lacks, recognised by fingerprint. Output matches what the model's Jinja
// template renders (HF transformers settings: trim_blocks, lstrip_blocks) for conversations of
// system, user and assistant messages, with these documented differences:
//   - BOS: templates that start with {{ bos_token }} (Llama 3, Gemma) are rendered as if
//     bos_token were empty, because the tokenizer adds BOS (tokenizer.ggml.add_bos_token).
//     ChatOptions::add_bos emits it as text instead, for a tokenizer that does not.
//   - Gemma's template rejects a system message; tessel folds the system text into the first
//     user turn that follows ("<system>\n\n<user>"), as llama.cpp does. A system message with no
//     user turn after it becomes a user turn of its own.
//   - Qwen3: the <think> wrapper its template puts around a final assistant message, and the
//     empty think block for enable_thinking=false, are not produced.
//   - Llama 3.1/3.2: the system turn's "Today Date" is the template's fixed fallback
//     (26 Jul 2024), not the current date.
//   - Phi-3 without a generation prompt ends with its template's eos_token, "<|endoftext|>"
//     (Phi-3/3.5's EOS text) written out.
//   - "trim" (Llama 3, Gemma) strips ASCII whitespace only; Jinja's also strips Unicode spaces.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "tessel/engine.hpp"

namespace tessel::runtime {

enum class ChatFormat {
    ChatML,  ///< <|im_start|>role\n...<|im_end|>\n  (Qwen2.5, Qwen3, SmolLM2, ...)
    Llama3,  ///< <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|>
    Gemma,   ///< <start_of_turn>user|model\n...<end_of_turn>\n
    Phi3,    ///< <|role|>\n...<|end|>\n
};

/// A format plus what a particular model's template adds to it (the two optional parts apply to
/// ChatML and Llama 3; Gemma and Phi-3 templates have no default system turn).
struct ChatTemplate {
    ChatFormat format = ChatFormat::ChatML;
    /// When set, a conversation that does not start with a system message gets a system turn
    /// with this text (Qwen2.5's and SmolLM2's default system prompts; "" for Llama 3.1/3.2,
    /// whose template always has a system turn).
    std::optional<std::string> default_system;
    /// Text put before the system content inside the system turn (Llama 3.1/3.2's
    /// "Cutting Knowledge Date ... Today Date ..." lines).
    std::string system_preamble;
};

using tessel::ChatMessage;  // {role: "system", "user" or "assistant"; content}

struct ChatOptions {
    bool add_generation_prompt = true;  ///< end with the opening of an assistant turn
    bool add_bos = false;               ///< start with the format's BOS text (see chat_bos_text)
};

/// "chatml", "llama3", "gemma" or "phi3".
const char* chat_format_name(ChatFormat format);

/// The string that ends a turn; generation stops when the model emits it:
/// <|im_end|>, <|eot_id|>, <end_of_turn>, <|end|>.
std::string_view chat_end_of_turn(ChatFormat format);

/// The BOS token text the models of a format use ("" for ChatML models, which have none):
/// <|begin_of_text|>, <bos>, <s>.
std::string_view chat_bos_text(ChatFormat format);

/// The plain format for a `--chat-template NAME` override (no default system prompt, no
/// preamble). Throws tessel::Error (InvalidArgument)
/// "unknown chat template 'NAME', known: chatml, llama3, gemma, phi3".
ChatTemplate chat_template_from_name(std::string_view name);

/// Recognises a GGUF `tokenizer.chat_template` by fingerprint, checked in this order:
/// "<|im_start|>" -> chatml, "<|start_header_id|>" -> llama3, "<start_of_turn>" -> gemma,
/// "<|assistant|>" and "<|end|>" -> phi3. Also extracts a ChatML default system prompt (a
/// literal "<|im_start|>system" + newline + text + "<|im_end|>" in the template) and the
/// Llama 3.1/3.2 system preamble ("Cutting Knowledge Date" present). Throws tessel::Error
/// (Unsupported) "unknown chat template (...), known: chatml, llama3, gemma, phi3" when the text
/// is empty or matches no fingerprint.
ChatTemplate detect_chat_template(std::string_view jinja);

/// Renders `messages` in `tmpl`'s format. Throws tessel::Error (InvalidArgument) when
/// `messages` is empty or a role is not system/user/assistant.
std::string format_chat(const ChatTemplate& tmpl, std::span<const ChatMessage> messages,
                        const ChatOptions& options = {});

}  // namespace tessel::runtime

#include "runtime/chat_template.hpp"

#include <array>

#include "tessel/errors.hpp"

namespace tessel::runtime {
namespace {

constexpr const char* kKnown = "known: chatml, llama3, gemma, phi3";

struct NamedFormat {
    const char* name;
    ChatFormat format;
};
constexpr std::array<NamedFormat, 4> kFormats{{
    {"chatml", ChatFormat::ChatML},
    {"llama3", ChatFormat::Llama3},
    {"gemma", ChatFormat::Gemma},
    {"phi3", ChatFormat::Phi3},
}};

// Llama 3.1/3.2 templates open the system turn with these lines; the date is the templates'
// own fallback when no strftime_now() is available.
constexpr std::string_view kLlama3DateFingerprint = "Cutting Knowledge Date";
constexpr std::string_view kLlama3DatePreamble = "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n";

bool contains(std::string_view text, std::string_view what) { return text.find(what) != std::string_view::npos; }

// Jinja's trim, restricted to ASCII whitespace.
std::string_view trim(std::string_view s) {
    constexpr std::string_view kSpace = " \t\n\r\v\f";
    const size_t begin = s.find_first_not_of(kSpace);
    if (begin == std::string_view::npos) return {};
    return s.substr(begin, s.find_last_not_of(kSpace) - begin + 1);
}

// A literal default system prompt in a ChatML template: "<|im_start|>system", a newline written
// as a real newline or as the escape \n, then plain text (no quote, brace, backslash) up to
// "<|im_end|>". Occurrences followed by an expression (e.g. + messages[0]['content']) are skipped.
std::optional<std::string> chatml_default_system(std::string_view jinja) {
    constexpr std::string_view kOpen = "<|im_start|>system";
    constexpr std::string_view kClose = "<|im_end|>";
    for (size_t at = jinja.find(kOpen); at != std::string_view::npos; at = jinja.find(kOpen, at + 1)) {
        std::string_view rest = jinja.substr(at + kOpen.size());
        if (rest.starts_with("\\n"))
            rest.remove_prefix(2);
        else if (rest.starts_with('\n'))
            rest.remove_prefix(1);
        else
            continue;
        const size_t end = rest.find(kClose);
        if (end == std::string_view::npos || end == 0) continue;
        const std::string_view text = rest.substr(0, end);
        if (text.find_first_of("'\"{}\\") == std::string_view::npos) return std::string(text);
    }
    return std::nullopt;
}

void check_roles(std::span<const ChatMessage> messages) {
    if (messages.empty()) throw Error(ErrorCode::InvalidArgument, "chat: no messages to format");
    for (size_t i = 0; i < messages.size(); ++i) {
        const std::string& role = messages[i].role;
        if (role != "system" && role != "user" && role != "assistant")
            throw Error(ErrorCode::InvalidArgument, std::string("chat: message ") + std::to_string(i) + " has role '" +
                                                        role + "'; supported roles: system, user, assistant");
    }
}

// The system text of the conversation's first turn: its own system message, else the template's
// default. Sets `skip` to the number of messages consumed.
std::optional<std::string> leading_system(const ChatTemplate& tmpl, std::span<const ChatMessage> messages,
                                          size_t& skip, bool trimmed) {
    skip = 0;
    if (messages[0].role == "system") {
        skip = 1;
        return std::string(trimmed ? trim(messages[0].content) : std::string_view(messages[0].content));
    }
    return tmpl.default_system;
}

std::string format_chatml(const ChatTemplate& tmpl, std::span<const ChatMessage> messages, bool generation) {
    std::string out;
    size_t first = 0;
    if (auto system = leading_system(tmpl, messages, first, false))
        out += "<|im_start|>system\n" + tmpl.system_preamble + *system + "<|im_end|>\n";
    for (const ChatMessage& m : messages.subspan(first))
        out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    if (generation) out += "<|im_start|>assistant\n";
    return out;
}

std::string format_llama3(const ChatTemplate& tmpl, std::span<const ChatMessage> messages, bool generation) {
    std::string out;
    size_t first = 0;
    if (auto system = leading_system(tmpl, messages, first, true))
        out += "<|start_header_id|>system<|end_header_id|>\n\n" + tmpl.system_preamble + *system + "<|eot_id|>";
    for (const ChatMessage& m : messages.subspan(first)) {
        out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n";
        out += trim(m.content);
        out += "<|eot_id|>";
    }
    if (generation) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
    return out;
}

std::string format_gemma(std::span<const ChatMessage> messages, bool generation) {
    std::string out;
    std::string pending_system;  // folded into the next user turn
    auto turn = [&out](std::string_view role, std::string_view text) {
        out += "<start_of_turn>";
        out += role;
        out += "\n";
        out += text;
        out += "<end_of_turn>\n";
    };
    for (const ChatMessage& m : messages) {
        if (m.role == "system") {
            if (!pending_system.empty()) pending_system += "\n\n";
            pending_system += trim(m.content);
        } else if (m.role == "user") {
            std::string text = pending_system.empty() ? std::string() : pending_system + "\n\n";
            text += trim(m.content);
            turn("user", text);
            pending_system.clear();
        } else {
            turn("model", trim(m.content));
        }
    }
    if (!pending_system.empty()) turn("user", pending_system);
    if (generation) out += "<start_of_turn>model\n";
    return out;
}

std::string format_phi3(std::span<const ChatMessage> messages, bool generation) {
    std::string out;
    for (const ChatMessage& m : messages) {
        if (m.role == "system" && m.content.empty()) continue;  // the template skips empty system turns
        out += "<|" + m.role + "|>\n" + m.content + "<|end|>\n";
    }
    out += generation ? "<|assistant|>\n" : "<|endoftext|>";
    return out;
}

}  // namespace

const char* chat_format_name(ChatFormat format) {
    for (const NamedFormat& f : kFormats)
        if (f.format == format) return f.name;
    return "unknown";
}

std::string_view chat_end_of_turn(ChatFormat format) {
    switch (format) {
        case ChatFormat::ChatML: return "<|im_end|>";
        case ChatFormat::Llama3: return "<|eot_id|>";
        case ChatFormat::Gemma: return "<end_of_turn>";
        case ChatFormat::Phi3: return "<|end|>";
    }
    return {};
}

std::string_view chat_bos_text(ChatFormat format) {
    switch (format) {
        case ChatFormat::ChatML: return "";
        case ChatFormat::Llama3: return "<|begin_of_text|>";
        case ChatFormat::Gemma: return "<bos>";
        case ChatFormat::Phi3: return "<s>";
    }
    return {};
}

ChatTemplate chat_template_from_name(std::string_view name) {
    for (const NamedFormat& f : kFormats)
        if (name == f.name) return ChatTemplate{f.format, std::nullopt, {}};
    throw Error(ErrorCode::InvalidArgument,
                std::string("unknown chat template '") + std::string(name) + "', " + kKnown);
}

ChatTemplate detect_chat_template(std::string_view jinja) {
    ChatTemplate t;
    if (contains(jinja, "<|im_start|>")) {
        t.format = ChatFormat::ChatML;
        t.default_system = chatml_default_system(jinja);
    } else if (contains(jinja, "<|start_header_id|>")) {
        t.format = ChatFormat::Llama3;
        if (contains(jinja, kLlama3DateFingerprint)) {
            t.default_system = "";
            t.system_preamble = kLlama3DatePreamble;
        }
    } else if (contains(jinja, "<start_of_turn>")) {
        t.format = ChatFormat::Gemma;
    } else if (contains(jinja, "<|assistant|>") && contains(jinja, "<|end|>")) {
        t.format = ChatFormat::Phi3;
    } else {
        const char* why = jinja.empty() ? "the model has no tokenizer.chat_template"
                                        : "tokenizer.chat_template matches no known format";
        throw Error(ErrorCode::Unsupported, std::string("unknown chat template (") + why + "), " + kKnown +
                                                "; choose one with --chat-template NAME");
    }
    return t;
}

std::string format_chat(const ChatTemplate& tmpl, std::span<const ChatMessage> messages, const ChatOptions& options) {
    check_roles(messages);
    std::string out(options.add_bos ? chat_bos_text(tmpl.format) : std::string_view());
    switch (tmpl.format) {
        case ChatFormat::ChatML: out += format_chatml(tmpl, messages, options.add_generation_prompt); break;
        case ChatFormat::Llama3: out += format_llama3(tmpl, messages, options.add_generation_prompt); break;
        case ChatFormat::Gemma: out += format_gemma(messages, options.add_generation_prompt); break;
        case ChatFormat::Phi3: out += format_phi3(messages, options.add_generation_prompt); break;
    }
    return out;
}

}  // namespace tessel::runtime

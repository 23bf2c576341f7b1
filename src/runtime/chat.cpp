// The public chat-template API: apply_chat_template (include/tessel/engine.hpp) and
// include/tessel/chat.hpp. A Jinja template renders with src/jinja; the built-in formats of
// runtime/chat_template.hpp serve the names and the fallback for unsupported constructs.
#include <atomic>

#include "core/log.hpp"
#include "jinja/template.hpp"
#include "runtime/chat_template.hpp"
#include "tessel/chat.hpp"
#include "tessel/engine.hpp"

namespace tessel {
namespace {

bool is_builtin_name(std::string_view chat_template) {
    for (const char* name : {"chatml", "llama3", "gemma", "phi3"})
        if (chat_template == name) return true;
    return false;
}

std::string render_builtin(const runtime::ChatTemplate& t, std::span<const ChatMessage> messages, bool add_generation_prompt) {
    runtime::ChatOptions o;
    o.add_generation_prompt = add_generation_prompt;
    return runtime::format_chat(t, messages, o);
}

// The built-in format a template with an unsupported construct falls back to. Logs the construct
// once per process; throws detect_chat_template's error, with the construct, when none matches.
runtime::ChatTemplate fallback(std::string_view chat_template, const jinja::UnsupportedError& why) {
    try {
        runtime::ChatTemplate t = runtime::detect_chat_template(chat_template);
        static std::atomic<bool> warned{false};
        if (!warned.exchange(true))
            log(LogLevel::Warn, std::string("chat template: ") + why.what() + "; rendering the built-in " +
                                    runtime::chat_format_name(t.format) + " format instead");
        return t;
    } catch (const Error& e) {
        throw Error(e.code(), std::string(e.what()) + " (its Jinja: " + why.what() + ")");
    }
}

jinja::Value jinja_messages(std::span<const ChatMessage> messages) {
    jinja::List list;
    for (const ChatMessage& m : messages) {
        jinja::Dict d;
        d.set("role", jinja::Value(m.role));
        d.set("content", jinja::Value(m.content));
        list.push_back(jinja::Value(std::move(d)));
    }
    return list;
}

// Python's str.strip(): what a template's `| trim` does to the text.
std::string trimmed(const std::string& text) {
    const std::u32string s = jinja::utf8_decode(text);
    size_t b = 0, e = s.size();
    while (b < e && jinja::is_space(s[b])) ++b;
    while (e > b && jinja::is_space(s[e - 1])) --e;
    return jinja::utf8_encode(std::u32string_view(s).substr(b, e - b));
}

// Each system message's text (trimmed) moved to the front of the next user message, joined by
// a blank line; a trailing system text becomes a user message of its own.
std::vector<ChatMessage> fold_system(std::span<const ChatMessage> messages) {
    std::vector<ChatMessage> out;
    std::string pending;
    for (const ChatMessage& m : messages) {
        if (m.role == "system") {
            pending += (pending.empty() ? "" : "\n\n") + trimmed(m.content);
        } else if (m.role == "user" && !pending.empty()) {
            out.push_back({"user", pending + "\n\n" + trimmed(m.content)});
            pending.clear();
        } else {
            out.push_back(m);
        }
    }
    if (!pending.empty()) out.push_back({"user", pending});
    return out;
}

std::string render_jinja(const jinja::Template& tmpl, std::span<const ChatMessage> messages, const ChatTemplateOptions& o) {
    jinja::Dict context;
    context.set("messages", jinja_messages(messages));
    context.set("add_generation_prompt", jinja::Value(o.add_generation_prompt));
    context.set("bos_token", jinja::Value(o.bos_token));
    context.set("eos_token", jinja::Value(o.eos_token));
    try {
        return tmpl.render(context);
    } catch (const jinja::RaisedError&) {
        bool has_system = false;
        for (const ChatMessage& m : messages) has_system = has_system || m.role == "system";
        if (!has_system) throw;
        const std::vector<ChatMessage> folded = fold_system(messages);
        context.set("messages", jinja_messages(folded));
        return tmpl.render(context);
    }
}

}  // namespace

std::string apply_chat_template(std::string_view chat_template, std::span<const ChatMessage> messages,
                                const ChatTemplateOptions& options) {
    if (messages.empty()) throw Error(ErrorCode::InvalidArgument, "chat: no messages to format");
    if (is_builtin_name(chat_template))
        return render_builtin(runtime::chat_template_from_name(chat_template), messages, options.add_generation_prompt);
    if (chat_template.empty())
        return render_builtin(runtime::detect_chat_template(chat_template), messages, options.add_generation_prompt);
    std::string out;
    try {
        out = render_jinja(jinja::Template(chat_template), messages, options);
    } catch (const jinja::UnsupportedError& e) {
        return render_builtin(fallback(chat_template, e), messages, options.add_generation_prompt);
    }
    if (options.drop_leading_bos && !options.bos_token.empty() && out.starts_with(options.bos_token))
        out.erase(0, options.bos_token.size());
    return out;
}

std::string apply_chat_template(std::string_view chat_template, std::span<const ChatMessage> messages,
                                bool add_generation_prompt) {
    ChatTemplateOptions o;
    o.add_generation_prompt = add_generation_prompt;
    return apply_chat_template(chat_template, messages, o);
}

std::string chat_template_format(std::string_view chat_template) {
    if (is_builtin_name(chat_template)) return std::string(chat_template);
    if (chat_template.empty()) return runtime::chat_format_name(runtime::detect_chat_template(chat_template).format);
    try {
        jinja::Template parsed(chat_template);
        return "jinja";
    } catch (const jinja::UnsupportedError& e) {
        return runtime::chat_format_name(fallback(chat_template, e).format);
    }
}

}  // namespace tessel

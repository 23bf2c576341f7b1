#include "request.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include <nlohmann/json.hpp>

#include "api_error.hpp"

namespace tessel::server {
namespace {

using json = nlohmann::json;

const json* field(const json& body, const char* name) {
    auto it = body.find(name);
    return it == body.end() || it->is_null() ? nullptr : &*it;
}

/// A number field in [lo, hi] (finite), or `fallback` when absent or null.
float number(const json& body, const char* name, float fallback, double lo, double hi, const char* range) {
    const json* v = field(body, name);
    if (!v) return fallback;
    if (!v->is_number()) throw ApiError::invalid(std::string("'") + name + "' must be a number", name);
    const double x = v->get<double>();
    if (!std::isfinite(x) || x < lo || x > hi)
        throw ApiError::invalid(std::string("'") + name + "' must be " + range + ", got " + v->dump(), name);
    return static_cast<float>(x);
}

/// An integer field in [lo, hi], or `fallback` when absent or null.
int64_t integer(const json& body, const char* name, int64_t fallback, int64_t lo, int64_t hi) {
    const json* v = field(body, name);
    if (!v) return fallback;
    if (!v->is_number_integer()) throw ApiError::invalid(std::string("'") + name + "' must be an integer", name);
    const int64_t x = v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(hi) ? hi + 1 : v->get<int64_t>();
    if (x < lo || x > hi)
        throw ApiError::invalid(std::string("'") + name + "' must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                                    v->dump(), name);
    return x;
}

bool boolean(const json& body, const char* name, bool fallback) {
    const json* v = field(body, name);
    if (!v) return fallback;
    if (!v->is_boolean()) throw ApiError::invalid(std::string("'") + name + "' must be true or false", name);
    return v->get<bool>();
}

/// OpenAI's message content: a string, or an array of {"type": "text", "text": ...} parts.
std::string message_text(const json& content, size_t i) {
    const std::string where = "messages[" + std::to_string(i) + "].content";
    if (content.is_null()) return "";
    if (content.is_string()) return content.get<std::string>();
    if (!content.is_array()) throw ApiError::invalid("'" + where + "' must be a string or an array of text parts", where);
    std::string text;
    for (const json& part : content) {
        const json* type = part.is_object() ? field(part, "type") : nullptr;
        const json* t = part.is_object() ? field(part, "text") : nullptr;
        if (!type || *type != "text" || !t || !t->is_string())
            throw ApiError::invalid("'" + where + "': only parts {\"type\": \"text\", \"text\": STRING} are supported", where);
        text += t->get<std::string>();
    }
    return text;
}

std::vector<int32_t> chat_prompt(const json& body, const RequestDefaults& d) {
    const json* msgs = field(body, "messages");
    if (!msgs) throw ApiError::invalid("'messages' is required", "messages");
    if (!msgs->is_array() || msgs->empty()) throw ApiError::invalid("'messages' must be a non-empty array of messages", "messages");
    std::vector<ChatMessage> messages;
    for (size_t i = 0; i < msgs->size(); ++i) {
        const json& m = (*msgs)[i];
        const std::string where = "messages[" + std::to_string(i) + "]";
        const json* role = m.is_object() ? field(m, "role") : nullptr;
        if (!role || !role->is_string())
            throw ApiError::invalid("'" + where + "' must be an object with a string 'role'", where + ".role");
        auto content = m.find("content");
        messages.push_back({role->get<std::string>(), message_text(content == m.end() ? json() : *content, i)});
    }
    std::string text;
    try {
        text = apply_chat_template(d.chat_template, messages, d.model->chat_template_options());
    } catch (const Error& e) {
        throw ApiError::invalid(std::string("the chat template cannot render these messages: ") + e.what(), "messages");
    }
    return d.model->tokenize(text, true, true);
}

std::vector<int32_t> completion_prompt(const json& body, const RequestDefaults& d) {
    const json* p = field(body, "prompt");
    if (!p) throw ApiError::invalid("'prompt' is required", "prompt");
    if (p->is_string()) return d.model->tokenize(p->get<std::string>(), true, true);
    if (p->is_array() && p->size() == 1 && (*p)[0].is_string()) return d.model->tokenize((*p)[0].get<std::string>(), true, true);
    if (p->is_array() && !p->empty() && std::all_of(p->begin(), p->end(), [](const json& x) { return x.is_number_integer(); })) {
        std::vector<int32_t> ids;
        const int64_t n_vocab = d.model->info().n_vocab;
        for (const json& x : *p) {
            const int64_t id = x.is_number_unsigned() && x.get<uint64_t>() > uint64_t(n_vocab) ? n_vocab : x.get<int64_t>();
            if (id < 0 || id >= n_vocab)
                throw ApiError::invalid("'prompt': token id " + x.dump() + " is outside the vocabulary [0, " + std::to_string(n_vocab) + ")",
                                        "prompt");
            ids.push_back(static_cast<int32_t>(id));
        }
        return ids;
    }
    throw ApiError::invalid("'prompt' must be a string, an array of one string, or a non-empty array of token ids", "prompt");
}

std::vector<std::string> stop_strings(const json& body) {
    const json* s = field(body, "stop");
    std::vector<std::string> out;
    if (!s) return out;
    if (s->is_string()) {
        if (!s->get_ref<const std::string&>().empty()) out.push_back(s->get<std::string>());
        return out;
    }
    if (!s->is_array() || s->size() > 16 || !std::all_of(s->begin(), s->end(), [](const json& x) { return x.is_string(); }))
        throw ApiError::invalid("'stop' must be a string or an array of at most 16 strings", "stop");
    for (const json& x : *s)
        if (!x.get_ref<const std::string&>().empty()) out.push_back(x.get<std::string>());
    return out;
}

void logit_bias(const json& body, SamplerParams& s, int64_t n_vocab) {
    const json* b = field(body, "logit_bias");
    if (!b) return;
    if (!b->is_object()) throw ApiError::invalid("'logit_bias' must be an object of token id -> bias", "logit_bias");
    for (const auto& [key, value] : b->items()) {
        char* end = nullptr;
        const long id = std::strtol(key.c_str(), &end, 10);
        if (key.empty() || *end != '\0' || id < 0 || id >= n_vocab)
            throw ApiError::invalid("'logit_bias': key '" + key + "' is not a token id in [0, " + std::to_string(n_vocab) + ")", "logit_bias");
        if (!value.is_number() || !std::isfinite(value.get<double>()))
            throw ApiError::invalid("'logit_bias': the bias of token " + key + " must be a finite number", "logit_bias");
        // OpenAI's -100 bans a token
        const double v = value.get<double>();
        s.logit_bias.push_back({static_cast<int32_t>(id), v <= -100 ? -std::numeric_limits<float>::infinity() : static_cast<float>(v)});
    }
}

SamplerParams sampling(const json& body, const RequestDefaults& d) {
    SamplerParams s = d.sampling;
    constexpr double big = 1e9;
    s.temp = number(body, "temperature", s.temp, 0, big, "a number >= 0");
    s.top_p = number(body, "top_p", s.top_p, 1e-9, 1, "in (0, 1]");
    s.top_k = static_cast<int32_t>(integer(body, "top_k", s.top_k, 0, std::numeric_limits<int32_t>::max()));
    s.min_p = number(body, "min_p", s.min_p, 0, 1, "in [0, 1]");
    s.typical_p = number(body, "typical_p", s.typical_p, 0, 1, "in [0, 1]");
    s.repeat_penalty = number(body, "repeat_penalty", s.repeat_penalty, 1e-9, big, "a number > 0");
    s.repeat_last_n = static_cast<int32_t>(integer(body, "repeat_last_n", s.repeat_last_n, -1, std::numeric_limits<int32_t>::max()));
    s.presence_penalty = number(body, "presence_penalty", s.presence_penalty, -2, 2, "in [-2, 2]");
    s.frequency_penalty = number(body, "frequency_penalty", s.frequency_penalty, -2, 2, "in [-2, 2]");
    const int64_t seed = integer(body, "seed", s.seed == kRandomSeed ? -1 : s.seed, -1, std::numeric_limits<uint32_t>::max());
    s.seed = seed < 0 ? kRandomSeed : static_cast<uint32_t>(seed);
    logit_bias(body, s, d.model->info().n_vocab);
    return s;
}

}  // namespace

CompletionRequest parse_completion_request(std::string_view text, bool chat, const RequestDefaults& d) {
    json body;
    try {
        body = json::parse(text);
    } catch (const json::parse_error& e) {
        throw ApiError::invalid(std::string("the body is not valid JSON: ") + e.what());
    }
    if (!body.is_object()) throw ApiError::invalid("the body must be a JSON object");
    CompletionRequest r;
    r.chat = chat;
    if (integer(body, "n", 1, 1, std::numeric_limits<int32_t>::max()) != 1) throw ApiError::invalid("'n': only 1 choice is supported", "n");
    r.stream = boolean(body, "stream", false);
    if (const json* so = field(body, "stream_options")) {
        if (!so->is_object()) throw ApiError::invalid("'stream_options' must be an object", "stream_options");
        r.include_usage = boolean(*so, "include_usage", false);
    }
    const int64_t dflt = d.n_predict;
    r.max_tokens = integer(body, "n_predict", dflt, -1, std::numeric_limits<int32_t>::max());
    r.max_tokens = integer(body, "max_tokens", r.max_tokens, -1, std::numeric_limits<int32_t>::max());
    r.max_tokens = integer(body, "max_completion_tokens", r.max_tokens, -1, std::numeric_limits<int32_t>::max());
    r.stop = stop_strings(body);
    r.sampling = sampling(body, d);
    r.prompt = chat ? chat_prompt(body, d) : completion_prompt(body, d);
    const char* what = chat ? "messages" : "prompt";
    if (r.prompt.empty()) throw ApiError::invalid(std::string("'") + what + "' gives no tokens", what);
    if (static_cast<int64_t>(r.prompt.size()) >= d.slot_ctx)
        throw ApiError::invalid("the prompt is " + std::to_string(r.prompt.size()) + " tokens, a slot's context holds " +
                                    std::to_string(d.slot_ctx) + " (raise -c or lower -np)", what);
    return r;
}

}  // namespace tessel::server

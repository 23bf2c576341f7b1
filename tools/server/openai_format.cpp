#include "openai_format.hpp"

#include "api_error.hpp"

namespace tessel::server {
namespace {

using json = nlohmann::json;

json usage(const TaskResult& r) {
    return {{"prompt_tokens", r.n_prompt}, {"completion_tokens", r.n_generated}, {"total_tokens", r.n_prompt + r.n_generated}};
}

json timings(const TaskResult& r) {
    const int64_t decoded = r.n_prompt - r.n_cached;
    return {{"cache_n", r.n_cached},
            {"prompt_n", decoded},
            {"prompt_ms", r.prompt_ms},
            {"prompt_per_second", r.prompt_ms > 0 ? 1000.0 * static_cast<double>(decoded) / r.prompt_ms : 0.0},
            {"predicted_n", r.n_generated},
            {"predicted_ms", r.predicted_ms},
            {"predicted_per_second", r.predicted_ms > 0 ? 1000.0 * static_cast<double>(r.n_generated) / r.predicted_ms : 0.0}};
}

json envelope(const ResponseId& rid, const char* chat_object, const char* text_object) {
    return {{"id", rid.id}, {"object", rid.chat ? chat_object : text_object}, {"created", rid.created}, {"model", rid.model}};
}

json finish_value(const std::string& finish) { return finish.empty() ? json(nullptr) : json(finish); }

}  // namespace

std::string error_body(const std::string& message, const std::string& type, const std::string& param) {
    return json{{"error", {{"message", message}, {"type", type}, {"param", param.empty() ? json(nullptr) : json(param)}, {"code", nullptr}}}}
        .dump(-1, ' ', false, json::error_handler_t::replace);
}

json completion_object(const ResponseId& rid, const std::string& text, const TaskResult& r) {
    json j = envelope(rid, "chat.completion", "text_completion");
    json choice = {{"index", 0}, {"finish_reason", finish_value(r.finish_reason)}, {"logprobs", nullptr}};
    if (rid.chat)
        choice["message"] = {{"role", "assistant"}, {"content", text}};
    else
        choice["text"] = text;
    j["choices"] = json::array({choice});
    j["usage"] = usage(r);
    j["timings"] = timings(r);
    return j;
}

json chunk_object(const ResponseId& rid, const std::string& text, bool first, const std::string& finish) {
    json j = envelope(rid, "chat.completion.chunk", "text_completion");
    json choice = {{"index", 0}, {"finish_reason", finish_value(finish)}, {"logprobs", nullptr}};
    if (rid.chat) {
        choice["delta"] = json::object();
        if (first) choice["delta"]["role"] = "assistant";
        if (first || !text.empty()) choice["delta"]["content"] = text;
    } else {
        choice["text"] = text;
    }
    j["choices"] = json::array({choice});
    return j;
}

json final_chunk(const ResponseId& rid, const TaskResult& r) {
    json j = chunk_object(rid, "", false, r.finish_reason);
    j["timings"] = timings(r);
    return j;
}

json usage_chunk(const ResponseId& rid, const TaskResult& r) {
    json j = envelope(rid, "chat.completion.chunk", "text_completion");
    j["choices"] = json::array();
    j["usage"] = usage(r);
    return j;
}

std::string sse(const json& j) {
    // invalid UTF-8 in generated text (a model may emit any bytes) becomes U+FFFD rather than an exception
    return "data: " + j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

}  // namespace tessel::server

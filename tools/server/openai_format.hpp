// The JSON OpenAI's API answers with: completion objects, stream chunks (SSE), usage and
// llama-server's "timings" (https://platform.openai.com/docs/api-reference/chat).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "task.hpp"

namespace tessel::server {

/// Identity of one response: its id ("chatcmpl-N" / "cmpl-N"), creation time (Unix seconds), the model's id.
struct ResponseId {
    std::string id;
    int64_t created = 0;
    std::string model;
    bool chat = false;
};

/// The whole answer of a non-streamed request: choices[0] holds `text`.
nlohmann::json completion_object(const ResponseId& rid, const std::string& text, const TaskResult& r);
/// One streamed chunk. Chat: delta {"content": text} (with "role" when `first`), completions:
/// "text". finish_reason is null unless `finish` is non-empty.
nlohmann::json chunk_object(const ResponseId& rid, const std::string& text, bool first, const std::string& finish);
/// The last chunk: an empty delta with the finish reason and the timings.
nlohmann::json final_chunk(const ResponseId& rid, const TaskResult& r);
/// The chunk of stream_options.include_usage: no choices, the usage.
nlohmann::json usage_chunk(const ResponseId& rid, const TaskResult& r);
/// One SSE event: "data: JSON\n\n".
std::string sse(const nlohmann::json& j);

}  // namespace tessel::server

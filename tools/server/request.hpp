// An OpenAI completion request (POST /v1/chat/completions or /v1/completions) read from its JSON
// body, checked, and turned into prompt tokens and sampling settings.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessel/engine.hpp"
#include "tessel/sampling.hpp"

namespace tessel::server {

/// What a request needs from the server to be read.
struct RequestDefaults {
    const Model* model = nullptr;
    std::string chat_template;     ///< a Jinja template or a built-in format name (apply_chat_template)
    SamplerParams sampling;        ///< the command line's sampling flags: a request overrides fields
    int64_t n_predict = -1;        ///< max_tokens when a request gives none (-1: until end of generation)
    int64_t slot_ctx = 0;          ///< KV cells of one slot: a prompt must leave room for one token
};

struct CompletionRequest {
    bool chat = false;              ///< /v1/chat/completions (else /v1/completions)
    std::vector<int32_t> prompt;    ///< tokens, BOS included as the tokenizer adds it
    int64_t max_tokens = -1;        ///< generated tokens; < 0: until end of generation or the slot's context
    SamplerParams sampling;
    std::vector<std::string> stop;  ///< stop strings (non-empty): the text ends before the first one found
    bool stream = false;
    bool include_usage = false;     ///< stream_options.include_usage: a last chunk with usage
};

/// Reads a request body. Unknown fields are ignored (as llama-server does). Throws ApiError 400
/// naming the field: malformed JSON, a field of the wrong type, messages or prompt missing or
/// empty, a token id outside the vocabulary, n other than 1, a sampling value out of range, a
/// prompt of slot_ctx tokens or more; or the chat template's own error.
CompletionRequest parse_completion_request(std::string_view body, bool chat, const RequestDefaults& d);

}  // namespace tessel::server

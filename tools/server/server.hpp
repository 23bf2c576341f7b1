// `tessel serve`: an OpenAI-compatible HTTP server (cpp-httplib) over one Context whose KV cache
// the slots share (scheduler.hpp). Routes, request and response shapes: docs/server.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "tessel/engine.hpp"
#include "tessel/sampling.hpp"

namespace tessel::server {

struct ServerOptions {
    std::string host = "127.0.0.1";
    int port = 8080;                 ///< 0: any free port (the listening line names it)
    int n_slots = 1;                 ///< -np: requests decoded together, 1..64
    size_t queue = 32;               ///< requests that may wait for a slot; more get 503
    int64_t n_predict = -1;          ///< max_tokens of a request that gives none; -1: until end of generation
    int64_t n_batch = 2048;          ///< most tokens per decode step
    std::string api_key;             ///< non-empty: every route but /health and the page needs "Authorization: Bearer KEY"
    size_t max_body = 1 << 20;       ///< bytes of a request body; more get 413
    bool prompt_cache = true;
    int http_threads = 0;            ///< 0: n_slots + queue + 4 (every waiting client holds a thread)
    std::string chat_template;       ///< Jinja text or a built-in format name (apply_chat_template)
    SamplerParams sampling;          ///< defaults of the requests' sampling fields
};

/// Serves `model` until SIGTERM or SIGINT, then answers or cancels what is in flight and returns.
/// Prints "tessel serve: listening on http://HOST:PORT" on stderr once the socket is bound.
/// Throws tessel::Error: InvalidArgument for bad options (a slot's context below 2 tokens), Io
/// when the address cannot be bound, and what Context's constructor throws.
void serve(std::shared_ptr<const Model> model, const ContextParams& cp, const ServerOptions& o);

}  // namespace tessel::server

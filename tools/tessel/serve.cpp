#include <limits>
#include <memory>

#include "chat_options.hpp"
#include "commands.hpp"
#include "run_options.hpp"
#include "server.hpp"
#include "tessel/chat.hpp"

namespace tessel::cli {
namespace {

struct ServeOptions {
    ModelOptions model;
    ChatTemplateFlags chat_template;
    server::ServerOptions server;
};

}  // namespace

void add_serve_command(CLI::App& app) {
    auto o = std::make_shared<ServeOptions>();
    CLI::App* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server with continuous batching and a web chat page");
    add_model_options(*cmd, o->model);
    add_sampling_options(*cmd, o->server.sampling);
    add_chat_template_options(*cmd, o->chat_template);
    server::ServerOptions& s = o->server;
    cmd->add_option("--host", s.host, "Address to listen on (default 127.0.0.1: this machine only)");
    cmd->add_option("--port", s.port, "TCP port (0: any free port)")->check(CLI::Range(0, 65535));
    cmd->add_option("--parallel", s.n_slots, "Slots: requests decoded together, the context split evenly (also -np)")->check(CLI::Range(1, 64));
    cmd->add_option("--queue", s.queue, "Requests that may wait for a slot; more are answered 503")
        ->check(CLI::Range(size_t{0}, size_t{4096}));
    cmd->add_option("-n,--n-predict", s.n_predict, "max_tokens of a request that gives none (-1: until end of generation)")
        ->check(CLI::Range(int64_t{-1}, int64_t{std::numeric_limits<int32_t>::max()}));
    cmd->add_option("--api-key", s.api_key, "Require 'Authorization: Bearer KEY' on every route but /health and the page");
    cmd->add_option("--max-body", s.max_body, "Largest request body, bytes (more: 413)")->check(CLI::Range(size_t{1024}, size_t{1} << 30));
    cmd->add_flag_callback("--no-prompt-cache", [o] { o->server.prompt_cache = false; },
                           "Decode every prompt whole (do not reuse a prefix cached by a slot)");
    cmd->add_option("--http-threads", s.http_threads, "HTTP worker threads (0: slots + queue + 4)")->check(CLI::Range(0, 4096));
    cmd->callback([o] {
        check_mpi_ranks(o->model, "tessel serve", true);
        const LoadedModel loaded = load_model(o->model);
        o->server.n_batch = o->model.n_batch;
        o->server.chat_template = chat_template_for(*loaded.model, o->chat_template);
        chat_template_format(o->server.chat_template);  // an unusable template fails here, before listening
        loaded.report();
        server::serve(loaded.model, context_params(o->model), o->server);
    });
}

}  // namespace tessel::cli

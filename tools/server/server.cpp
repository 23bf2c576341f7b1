#include "server.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <sstream>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "api_error.hpp"
#include "openai_format.hpp"
#include "request.hpp"
#include "scheduler.hpp"
#include "web_page.hpp"

namespace tessel::server {
namespace {

using json = nlohmann::json;
constexpr auto kKeepAlive = std::chrono::milliseconds(500);  // how often a waiting response checks its client

void answer(httplib::Response& res, const ApiError& e) {
    res.status = e.status;
    res.set_content(error_body(e.what(), e.type, e.param), "application/json");
    if (e.status == 503) res.set_header("Retry-After", "1");
}

/// SIGTERM / SIGINT write a byte to this pipe; the watcher thread reads it (a handler may only do
/// async-signal-safe work, and every thread may receive the signal).
int g_signal_pipe[2] = {-1, -1};
extern "C" void on_stop_signal(int) {
    const char c = 1;
    [[maybe_unused]] ssize_t n = write(g_signal_pipe[1], &c, 1);
}

class SignalWatch {
public:
    explicit SignalWatch(std::function<void()> on_stop) {
        if (pipe2(g_signal_pipe, O_CLOEXEC) != 0) throw Error(ErrorCode::Io, "serve: cannot create the signal pipe");
        struct sigaction sa {};
        sa.sa_handler = on_stop_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART;
        sigaction(SIGTERM, &sa, &old_term_);
        sigaction(SIGINT, &sa, &old_int_);
        thread_ = std::thread([on_stop = std::move(on_stop)] {
            char c = 0;
            while (read(g_signal_pipe[0], &c, 1) < 0 && errno == EINTR) {
            }
            if (c == 1) on_stop();
        });
    }
    ~SignalWatch() {
        sigaction(SIGTERM, &old_term_, nullptr);
        sigaction(SIGINT, &old_int_, nullptr);
        const char c = 2;  // wakes the watcher when no signal came
        [[maybe_unused]] ssize_t n = write(g_signal_pipe[1], &c, 1);
        thread_.join();
        close(g_signal_pipe[0]);
        close(g_signal_pipe[1]);
        g_signal_pipe[0] = g_signal_pipe[1] = -1;
    }

private:
    struct sigaction old_term_ {}, old_int_ {};
    std::thread thread_;
};

/// Writes a streamed answer (SSE) as the scheduler produces it. False when the client is gone.
bool write_stream(const std::shared_ptr<Task>& task, const ResponseId& rid, httplib::DataSink& sink) {
    const auto send = [&](const std::string& s) { return sink.write(s.data(), s.size()); };
    if (rid.chat && !send(sse(chunk_object(rid, "", true, "")))) return false;
    while (true) {
        if (std::optional<std::string> piece = task->next(kKeepAlive)) {
            if (!send(sse(chunk_object(rid, *piece, false, "")))) return false;
        } else if (std::optional<TaskResult> r = task->result()) {
            if (!r->error.empty()) {
                if (!send(sse(json::parse(error_body(r->error, "server_error"))))) return false;
            } else {
                if (!send(sse(final_chunk(rid, *r)))) return false;
                if (task->request.include_usage && !send(sse(usage_chunk(rid, *r)))) return false;
            }
            if (!send("data: [DONE]\n\n")) return false;
            sink.done();
            return true;
        } else if (!send(": keep-alive\n\n")) {  // an SSE comment: shows whether the client is still there
            return false;
        }
    }
}

/// Writes a non-streamed answer once the task ends. While it waits, single spaces (JSON allows
/// leading whitespace) show whether the client is still there.
bool write_whole(const std::shared_ptr<Task>& task, const ResponseId& rid, httplib::DataSink& sink) {
    std::string text;
    while (true) {
        if (std::optional<std::string> piece = task->next(kKeepAlive)) {
            text += *piece;
        } else if (std::optional<TaskResult> r = task->result()) {
            const std::string body = r->error.empty()
                                         ? completion_object(rid, text, *r).dump(-1, ' ', false, json::error_handler_t::replace)
                                         : error_body(r->error, "server_error");
            if (!sink.write(body.data(), body.size())) return false;
            sink.done();
            return true;
        } else if (!sink.write(" ", 1)) {
            return false;
        }
    }
}

std::string metrics_text(const SchedulerStats& s) {
    std::ostringstream o;
    const auto metric = [&](const char* name, const char* type, const char* help, double value) {
        o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n' << name << ' ' << value << '\n';
    };
    metric("tessel_requests_total", "counter", "Completion requests finished (any way).", static_cast<double>(s.requests));
    metric("tessel_prompt_tokens_total", "counter", "Prompt tokens decoded.", static_cast<double>(s.prompt_tokens));
    metric("tessel_prompt_cache_tokens_total", "counter", "Prompt tokens reused from the prompt cache.", static_cast<double>(s.cached_tokens));
    metric("tessel_tokens_predicted_total", "counter", "Tokens generated.", static_cast<double>(s.generated_tokens));
    metric("tessel_prompt_tokens_seconds", "gauge", "Prompt tokens decoded per second of steps that decoded prompts.",
           s.prompt_seconds > 0 ? static_cast<double>(s.prompt_tokens) / s.prompt_seconds : 0.0);
    metric("tessel_predicted_tokens_seconds", "gauge", "Tokens generated per second of steps that decoded only generated tokens.",
           s.generate_seconds > 0 ? static_cast<double>(s.generated_tokens) / s.generate_seconds : 0.0);
    metric("tessel_slots_busy", "gauge", "Slots decoding a request.", s.slots_busy);
    metric("tessel_slots_total", "gauge", "Slots (-np).", s.slots_total);
    metric("tessel_queue_length", "gauge", "Requests waiting for a slot.", static_cast<double>(s.queued));
    return o.str();
}

const char* status_message(int status) {
    switch (status) {
        case 404: return "no such route";
        case 405: return "method not allowed";
        case 413: return "the request body is too large (raise --max-body)";
        default: return "bad request";
    }
}

const char* status_type(int status) { return status == 404 ? "not_found_error" : status >= 500 ? "server_error" : "invalid_request_error"; }

}  // namespace

void serve(std::shared_ptr<const Model> model, const ContextParams& cp_in, const ServerOptions& o) {
    ContextParams cp = cp_in;
    if (cp.n_ctx == 0) cp.n_ctx = 4096;  // llama-server's default: its slots split this
    Context ctx(model, cp);
    const int64_t slot_ctx = ctx.n_ctx() / o.n_slots;
    if (slot_ctx < 2)
        throw Error(ErrorCode::InvalidArgument, "serve: a slot's context is " + std::to_string(slot_ctx) + " tokens (-c " +
                                                    std::to_string(ctx.n_ctx()) + " / -np " + std::to_string(o.n_slots) + "): raise -c");

    SchedulerParams sp;
    sp.n_slots = o.n_slots;
    sp.slot_ctx = slot_ctx;
    sp.queue = o.queue;
    sp.n_batch = o.n_batch;
    sp.prompt_cache = o.prompt_cache;
    Scheduler sched(model, ctx, sp);

    RequestDefaults defaults;
    defaults.model = model.get();
    defaults.chat_template = o.chat_template;
    defaults.sampling = o.sampling;
    defaults.n_predict = o.n_predict;
    defaults.slot_ctx = slot_ctx;
    const std::string model_id = std::filesystem::path(model->info().file).filename().string();
    const int64_t started = static_cast<int64_t>(std::time(nullptr));
    std::atomic<uint64_t> next_id{0};

    httplib::Server http;
    const size_t threads = o.http_threads > 0 ? static_cast<size_t>(o.http_threads) : static_cast<size_t>(o.n_slots) + o.queue + 4;
    http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    http.set_payload_max_length(o.max_body);
    http.set_keep_alive_timeout(2);  // an idle connection holds a thread (and delays shutdown) this long

    http.set_pre_routing_handler([&](const httplib::Request& req, httplib::Response& res) {
        const bool open = req.path == "/health" || (req.method == "GET" && req.path == "/");
        if (o.api_key.empty() || open || req.get_header_value("Authorization") == "Bearer " + o.api_key)
            return httplib::Server::HandlerResponse::Unhandled;
        answer(res, ApiError(401, "authentication_error", "invalid or missing API key (send 'Authorization: Bearer KEY')"));
        return httplib::Server::HandlerResponse::Handled;
    });
    http.set_error_handler([](const httplib::Request&, httplib::Response& res) {
        if (res.body.empty()) res.set_content(error_body(status_message(res.status), status_type(res.status)), "application/json");
    });
    http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "internal error";
        try {
            std::rethrow_exception(ep);
        } catch (const std::exception& e) {
            what = std::string("internal error: ") + e.what();
        } catch (...) {
        }
        answer(res, ApiError(500, "server_error", what));
    });

    http.Get("/health", [](const httplib::Request&, httplib::Response& res) { res.set_content(R"({"status":"ok"})", "application/json"); });
    http.Get("/", [](const httplib::Request&, httplib::Response& res) { res.set_content(kWebPage, "text/html; charset=utf-8"); });
    const auto models = [&](const httplib::Request&, httplib::Response& res) {
        const json j = {{"object", "list"},
                        {"data", json::array({{{"id", model_id}, {"object", "model"}, {"created", started}, {"owned_by", "tessel"}}})}};
        res.set_content(j.dump(), "application/json");
    };
    http.Get("/v1/models", models);
    http.Get("/models", models);
    http.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
        res.set_content(metrics_text(sched.stats()), "text/plain; version=0.0.4");
    });

    const auto completion = [&](bool chat) {
        return [&, chat](const httplib::Request& req, httplib::Response& res) {
            std::shared_ptr<Task> task;
            try {
                CompletionRequest r = parse_completion_request(req.body, chat, defaults);
                Sampler sampler = r.sampling.dry_multiplier > 0 ? Sampler(r.sampling, *model) : Sampler(r.sampling, static_cast<int32_t>(model->info().n_vocab));
                task = std::make_shared<Task>(std::move(r), std::move(sampler));
            } catch (const ApiError& e) {
                return answer(res, e);
            } catch (const Error& e) {
                return answer(res, ApiError::invalid(e.what()));
            }
            if (!sched.submit(task))
                return answer(res, ApiError(503, "unavailable_error", "the server is busy: " + std::to_string(o.queue) +
                                                                          " requests already wait for a slot; retry later"));
            const ResponseId rid{(chat ? "chatcmpl-" : "cmpl-") + std::to_string(++next_id), static_cast<int64_t>(std::time(nullptr)),
                                 model_id, chat};
            res.set_header("Cache-Control", "no-cache");
            const bool stream = task->request.stream;
            res.set_chunked_content_provider(
                stream ? "text/event-stream" : "application/json",
                [task, rid, stream](size_t, httplib::DataSink& sink) {
                    const bool ok = stream ? write_stream(task, rid, sink) : write_whole(task, rid, sink);
                    if (!ok) task->cancel();  // the client is gone: its slot frees at the next step
                    return ok;
                },
                [task](bool) { task->cancel(); });
        };
    };
    for (const char* path : {"/v1/chat/completions", "/chat/completions"}) http.Post(path, completion(true));
    for (const char* path : {"/v1/completions", "/completions"}) http.Post(path, completion(false));

    std::thread engine([&] { sched.run(); });
    const int port = o.port == 0 ? http.bind_to_any_port(o.host) : (http.bind_to_port(o.host, o.port) ? o.port : -1);
    if (port < 0) {
        sched.stop();
        engine.join();
        throw Error(ErrorCode::Io, "serve: cannot listen on " + o.host + ":" + std::to_string(o.port) + " (in use, or not an address of this machine)");
    }
    {
        SignalWatch watch([&] {
            std::fprintf(stderr, "tessel serve: stopping (signal)\n");
            sched.stop();  // running and queued requests end with an error event; their responses finish
            http.stop();
        });
        std::fprintf(stderr, "tessel serve: listening on http://%s:%d (%d slot(s) of %lld tokens, queue %zu)\n", o.host.c_str(), port,
                     o.n_slots, static_cast<long long>(slot_ctx), o.queue);
        http.listen_after_bind();
    }
    sched.stop();
    engine.join();
    std::fprintf(stderr, "tessel serve: stopped\n");
}

}  // namespace tessel::server

// One request in flight: what the scheduler thread produces (text pieces, the end) and the HTTP
// thread that answers the client consumes. Shared by both, guarded by its mutex.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>

#include "request.hpp"
#include "tessel/sampling.hpp"

namespace tessel::server {

/// Counts and times of a finished request (llama-server's "timings", OpenAI's "usage").
struct TaskResult {
    std::string finish_reason;  ///< "stop" (end of generation or a stop string) or "length"
    std::string error;          ///< non-empty: the request failed (or the server shut down) with this message
    int64_t n_prompt = 0;       ///< prompt tokens (usage.prompt_tokens)
    int64_t n_cached = 0;       ///< of them, taken from the prompt cache (not decoded)
    int64_t n_generated = 0;    ///< generated tokens (usage.completion_tokens)
    double prompt_ms = 0;       ///< from the slot's start to the first token's logits
    double predicted_ms = 0;    ///< from the first generated token to the end
};

class Task {
public:
    Task(CompletionRequest req, Sampler sampler) : request(std::move(req)), sampler(std::move(sampler)) {}

    const CompletionRequest request;
    Sampler sampler;  ///< used by the scheduler thread only

    /// Scheduler side: a piece of generated text (non-empty).
    void emit(std::string piece);
    /// Scheduler side: the request ended (the last call).
    void finish(TaskResult result);

    /// HTTP side: waits up to `timeout` for a piece or the end. Returns a piece, else nullopt
    /// (timed out, or ended: see result()).
    std::optional<std::string> next(std::chrono::milliseconds timeout);
    /// The result once finished and every piece was taken, else nullopt.
    std::optional<TaskResult> result();

    /// Either side: the client went away or the server stops; the scheduler frees the slot at its next step.
    void cancel() { cancelled_ = true; }
    bool cancelled() const { return cancelled_; }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::string> pieces_;
    std::optional<TaskResult> result_;
    std::atomic<bool> cancelled_{false};
};

}  // namespace tessel::server

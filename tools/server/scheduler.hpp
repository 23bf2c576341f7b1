// Continuous batching over slots: up to n_slots requests decode together, one Context::decode
// per step (each slot a sequence of the one KV cache, seq id = slot index); a request joins when
// a slot frees and leaves when it ends, between steps. Requests beyond the slots wait in a
// bounded queue. A new request starts from the longest prefix of its prompt already in any
// slot's cache (the prompt cache), copied into its slot with Context::seq_cp.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "task.hpp"
#include "tessel/engine.hpp"

namespace tessel::server {

struct SchedulerParams {
    int n_slots = 1;            ///< sequences decoded together, 1..64
    int64_t slot_ctx = 0;       ///< KV cells per slot (tokens): the context is split evenly
    size_t queue = 32;          ///< requests that may wait for a slot
    int64_t n_batch = 2048;     ///< most tokens per decode step (prompt chunks share it)
    bool prompt_cache = true;   ///< reuse cached prefixes
};

/// Counters for /metrics (since start).
struct SchedulerStats {
    int64_t requests = 0;          ///< requests finished (any way)
    int64_t prompt_tokens = 0;     ///< prompt tokens decoded
    int64_t cached_tokens = 0;     ///< prompt tokens taken from the prompt cache
    int64_t generated_tokens = 0;
    double prompt_seconds = 0;     ///< wall time of steps that decoded prompt tokens
    double generate_seconds = 0;   ///< wall time of steps that decoded only generated tokens
    int slots_busy = 0;
    int slots_total = 0;
    size_t queued = 0;
};

class Scheduler {
public:
    Scheduler(std::shared_ptr<const Model> model, Context& ctx, const SchedulerParams& p);
    ~Scheduler();

    /// Queues a task; false when the queue is full (the caller answers 503).
    bool submit(std::shared_ptr<Task> task);
    /// Runs steps until stop(); call on the thread that owns the Context.
    void run();
    /// Ends run(): queued tasks fail ("the server is shutting down"), running ones end the same way.
    void stop();
    SchedulerStats stats() const;

private:
    struct Slot;
    void admit(Slot& slot, std::shared_ptr<Task> task);
    void step();
    void end(Slot& slot, const std::string& finish_reason, const std::string& error = "");
    void emit_text(Slot& slot, int32_t token);

    std::shared_ptr<const Model> model_;
    Context& ctx_;
    SchedulerParams p_;
    std::vector<std::unique_ptr<Slot>> slots_;

    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::shared_ptr<Task>> queue_;
    bool stopping_ = false;
    SchedulerStats stats_;
};

}  // namespace tessel::server

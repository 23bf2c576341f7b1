#include "scheduler.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>

namespace tessel::server {
namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
    size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
    return n;
}

}  // namespace

struct Scheduler::Slot {
    int id = 0;
    std::vector<int32_t> cache;  ///< tokens whose KV entries sequence `id` holds, positions 0..
    std::shared_ptr<Task> task;  ///< null: free
    uint64_t last_used = 0;      ///< admission counter, for least-recently-used choice
    int32_t pending = -1;        ///< a sampled token to decode in the next step
    std::optional<Detokenizer> detok;
    std::string text;            ///< generated text so far
    size_t sent = 0;             ///< bytes of text emitted
    bool stopped = false;        ///< a stop string ended the text at `sent`
    TaskResult res;
    Clock::time_point t_start, t_first;

    bool in_prompt() const { return task && cache.size() < task->request.prompt.size(); }
};

Scheduler::Scheduler(std::shared_ptr<const Model> model, Context& ctx, const SchedulerParams& p)
    : model_(std::move(model)), ctx_(ctx), p_(p) {
    for (int i = 0; i < p.n_slots; ++i) {
        slots_.push_back(std::make_unique<Slot>());
        slots_.back()->id = i;
    }
    ctx_.clear();
    stats_.slots_total = p.n_slots;
}

Scheduler::~Scheduler() = default;

bool Scheduler::submit(std::shared_ptr<Task> task) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_ || queue_.size() >= p_.queue + static_cast<size_t>(p_.n_slots - stats_.slots_busy)) return false;  // free slots take requests even at --queue 0
        queue_.push_back(std::move(task));
        stats_.queued = queue_.size();
    }
    cv_.notify_all();
    return true;
}

void Scheduler::stop() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stopping_ = true;
    }
    cv_.notify_all();
}

SchedulerStats Scheduler::stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
}

void Scheduler::run() {
    uint64_t admissions = 0;
    while (true) {
        std::vector<std::pair<Slot*, std::shared_ptr<Task>>> joining;
        std::deque<std::shared_ptr<Task>> dropped;
        bool stopping = false;
        {
            std::unique_lock<std::mutex> lock(mu_);
            const auto busy = [&] { return std::any_of(slots_.begin(), slots_.end(), [](const auto& s) { return s->task != nullptr; }); };
            cv_.wait(lock, [&] { return stopping_ || !queue_.empty() || busy(); });
            stopping = stopping_;
            if (stopping) dropped.swap(queue_);
            while (!stopping && !queue_.empty()) {
                std::shared_ptr<Task> t = queue_.front();
                if (t->cancelled()) {  // the client left while it waited
                    queue_.pop_front();
                    dropped.push_back(std::move(t));
                    continue;
                }
                // a free slot: the one whose cache shares the longest prefix, else the least recently used
                Slot* pick = nullptr;
                size_t best = 0;
                for (auto& s : slots_) {
                    if (s->task || std::any_of(joining.begin(), joining.end(), [&](const auto& j) { return j.first == s.get(); })) continue;
                    const size_t l = p_.prompt_cache ? common_prefix(s->cache, t->request.prompt) : 0;
                    if (!pick || l > best || (l == best && s->last_used < pick->last_used)) pick = s.get(), best = l;
                }
                if (!pick) break;
                queue_.pop_front();
                pick->last_used = ++admissions;
                joining.emplace_back(pick, std::move(t));
            }
            stats_.queued = queue_.size();
            stats_.slots_busy += static_cast<int>(joining.size());
        }
        for (auto& t : dropped) {
            TaskResult r;
            r.error = stopping ? "the server is shutting down" : "cancelled";
            t->finish(r);
        }
        for (auto& [slot, task] : joining) admit(*slot, std::move(task));
        if (stopping) {
            for (auto& s : slots_)
                if (s->task) end(*s, "", "the server is shutting down");
            return;
        }
        step();
    }
}

void Scheduler::admit(Slot& slot, std::shared_ptr<Task> task) {
    const std::vector<int32_t>& prompt = task->request.prompt;
    size_t reuse = 0;
    if (p_.prompt_cache) {
        reuse = common_prefix(slot.cache, prompt);
        const Slot* src = nullptr;
        for (const auto& s : slots_) {
            const size_t l = s.get() == &slot ? 0 : common_prefix(s->cache, prompt);
            if (l > reuse) reuse = l, src = s.get();
        }
        reuse = std::min(reuse, prompt.size() - 1);  // the last prompt token is decoded for its logits
        if (src) {
            ctx_.seq_rm(slot.id, 0, -1);
            ctx_.seq_cp(src->id, slot.id, 0, static_cast<int32_t>(reuse));
            slot.cache.assign(prompt.begin(), prompt.begin() + static_cast<std::ptrdiff_t>(reuse));
        }
    }
    ctx_.seq_rm(slot.id, static_cast<int32_t>(reuse), -1);
    slot.cache.resize(reuse);
    for (int32_t t : prompt) task->sampler.accept(t, /*advance_grammar=*/false);
    slot.task = std::move(task);
    slot.pending = -1;
    slot.detok.emplace(model_);
    slot.text.clear();
    slot.sent = 0;
    slot.stopped = false;
    slot.res = TaskResult{};
    slot.res.n_prompt = static_cast<int64_t>(prompt.size());
    slot.res.n_cached = static_cast<int64_t>(reuse);
    slot.t_start = Clock::now();
    std::lock_guard<std::mutex> lock(mu_);
    stats_.cached_tokens += static_cast<int64_t>(reuse);
}

void Scheduler::end(Slot& slot, const std::string& finish_reason, const std::string& error) {
    if (error.empty() && !slot.stopped) {
        slot.text += slot.detok->flush();
        if (slot.sent < slot.text.size()) slot.task->emit(slot.text.substr(slot.sent));
    }
    slot.res.finish_reason = finish_reason;
    slot.res.error = error;
    if (slot.res.n_generated > 0) slot.res.predicted_ms = ms_between(slot.t_first, Clock::now());
    {  // counted before the client hears its end: one that sees [DONE] and scrapes /metrics sees it idle
        std::lock_guard<std::mutex> lock(mu_);
        stats_.requests += 1;
        stats_.generated_tokens += slot.res.n_generated;
        stats_.slots_busy -= 1;
    }
    slot.task->finish(slot.res);
    slot.task.reset();
    slot.pending = -1;
}

void Scheduler::emit_text(Slot& slot, int32_t token) {
    slot.text += slot.detok->push(token);
    const std::vector<std::string>& stops = slot.task->request.stop;
    // A stop string starts at or after `sent`: text that could begin one is held back below.
    size_t first = std::string::npos;
    for (const std::string& s : stops) first = std::min(first, slot.text.find(s, slot.sent));
    size_t upto = slot.text.size();
    if (first != std::string::npos) {
        upto = first;
        slot.stopped = true;
    } else {
        for (const std::string& s : stops)
            for (size_t k = std::min(s.size() - 1, slot.text.size() - slot.sent); k > 0; --k)
                if (slot.text.compare(slot.text.size() - k, k, s, 0, k) == 0) {
                    upto = std::min(upto, slot.text.size() - k);
                    break;
                }
    }
    if (upto > slot.sent) {
        slot.task->emit(slot.text.substr(slot.sent, upto - slot.sent));
        slot.sent = upto;
    }
}

void Scheduler::step() {
    for (auto& s : slots_)
        if (s->task && s->task->cancelled()) end(*s, "", "cancelled");

    // Generated tokens first (one per slot), then prompt chunks in the room left.
    std::vector<BatchToken> batch;
    std::vector<Slot*> outputs;  // the slot of each logits row, in batch order
    int64_t n_prompt_tokens = 0;
    for (auto& s : slots_)
        if (s->task && s->pending >= 0) {
            batch.push_back({s->pending, static_cast<int32_t>(s->cache.size()), s->id, true});
            outputs.push_back(s.get());
        }
    for (auto& s : slots_) {
        const int64_t room = p_.n_batch - static_cast<int64_t>(batch.size());
        if (!s->in_prompt() || room <= 0) continue;
        const std::vector<int32_t>& prompt = s->task->request.prompt;
        const size_t from = s->cache.size();
        const size_t to = std::min(prompt.size(), from + static_cast<size_t>(room));
        for (size_t i = from; i < to; ++i) batch.push_back({prompt[i], static_cast<int32_t>(i), s->id, i + 1 == prompt.size()});
        if (to == prompt.size()) outputs.push_back(s.get());
        n_prompt_tokens += static_cast<int64_t>(to - from);
    }
    if (batch.empty()) return;

    const auto t0 = Clock::now();
    try {
        ctx_.decode(batch);
    } catch (const std::exception& e) {
        // every slot of the batch fails; its sequence is dropped so the cache stays consistent
        for (auto& s : slots_)
            if (s->task && (s->pending >= 0 || s->in_prompt())) {
                ctx_.seq_rm(s->id, 0, -1);
                s->cache.clear();
                end(*s, "", std::string("decode failed: ") + e.what());
            }
        return;
    }
    const double seconds = ms_between(t0, Clock::now()) / 1000.0;
    for (const BatchToken& b : batch) slots_[static_cast<size_t>(b.seq)]->cache.push_back(b.token);
    for (auto& s : slots_) s->pending = -1;
    {
        std::lock_guard<std::mutex> lock(mu_);
        stats_.prompt_tokens += n_prompt_tokens;
        (n_prompt_tokens > 0 ? stats_.prompt_seconds : stats_.generate_seconds) += seconds;
    }

    for (size_t i = 0; i < outputs.size(); ++i) {
        Slot& s = *outputs[i];
        const CompletionRequest& r = s.task->request;
        if (s.res.n_generated == 0) {
            s.t_first = Clock::now();
            s.res.prompt_ms = ms_between(s.t_start, s.t_first);
        }
        if (r.max_tokens >= 0 && s.res.n_generated >= r.max_tokens) {
            end(s, "length");
            continue;
        }
        int32_t tok = 0;
        try {
            tok = s.task->sampler.sample(ctx_.logits(i));
            s.task->sampler.accept(tok);
        } catch (const std::exception& e) {
            end(s, "", std::string("sampling failed: ") + e.what());
            continue;
        }
        if (model_->is_eog(tok)) {
            end(s, "stop");
            continue;
        }
        ++s.res.n_generated;
        emit_text(s, tok);
        if (s.stopped) {
            end(s, "stop");
        } else if ((r.max_tokens >= 0 && s.res.n_generated >= r.max_tokens) || static_cast<int64_t>(s.cache.size()) >= p_.slot_ctx) {
            end(s, "length");
        } else {
            s.pending = tok;
        }
    }
}

}  // namespace tessel::server

#include "cpu/threadpool.hpp"
#include "cpu/topology.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "cpu/topology.hpp"
#include "tessel/errors.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace tessel::cpu {

namespace {

// Upper bound of the exponential spin backoff, in pause hints between two checks.
constexpr int kMaxSpinBackoff = 64;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__) || defined(__arm__)
    asm volatile("yield" ::: "memory");
#endif
}

int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

constexpr uint64_t phase_word(uint32_t seq, uint32_t next) { return (static_cast<uint64_t>(seq) << 32) | next; }
constexpr uint32_t seq_of(uint64_t w) { return static_cast<uint32_t>(w >> 32); }
constexpr uint32_t next_of(uint64_t w) { return static_cast<uint32_t>(w); }
/// Phase a comes after phase b (phase numbers wrap around).
constexpr bool after(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) > 0; }

}  // namespace

// ---- ThreadContext ------------------------------------------------------------------------

int64_t ThreadContext::check_chunk_args(int64_t n_items, int64_t chunk_size) {
    if (n_items < 0 || chunk_size < 1) {
        throw Error(ErrorCode::InvalidArgument,
                    "thread pool: chunked loop needs n_items >= 0 and chunk_size >= 1 (got n_items=" +
                        std::to_string(n_items) + ", chunk_size=" + std::to_string(chunk_size) + ")");
    }
    const int64_t n_chunks = n_items / chunk_size + (n_items % chunk_size != 0);
    if (n_chunks >= (int64_t{1} << 31)) {
        throw Error(ErrorCode::InvalidArgument, "thread pool: chunked loop of " + std::to_string(n_chunks) +
                                                    " chunks (at most 2^31 - 1; use larger chunks)");
    }
    return n_chunks;
}

void ThreadContext::open_phase(uint32_t n_chunks) {
    if (opened_) {
        throw Error(ErrorCode::InvalidArgument,
                    "thread pool: two chunk loops in one phase (separate them with barrier())");
    }
    opened_ = true;
    n_chunks_ = n_chunks;
}

int64_t ThreadContext::claim() {
    ThreadPool& p = *pool_;
    ThreadPool::Member& me = p.members_[static_cast<size_t>(ith)];
    const ThreadPool::Hook hook = p.hook_.load(std::memory_order_relaxed);
    uint64_t w = p.phase_.load(std::memory_order_acquire);
    if (seq_of(w) != seq_ || next_of(w) >= n_chunks_) return -1;  // the phase is over (or not begun)
    if (me.benched.load(std::memory_order_relaxed) && p.is_benched(ith, now_ns(), true)) return -1;
    if (hook) {
        hook(p.hook_arg_.load(std::memory_order_relaxed), ith, ThreadPool::HookPoint::BeforeClaim);
        w = p.phase_.load(std::memory_order_acquire);
    }
    for (;;) {
        if (seq_of(w) != seq_ || next_of(w) >= n_chunks_ || p.aborted_.load(std::memory_order_relaxed)) return -1;
        if (p.phase_.compare_exchange_weak(w, w + 1, std::memory_order_acq_rel, std::memory_order_acquire)) break;
    }
    me.holding.store(seq_ + 1, std::memory_order_relaxed);
    if (hook) hook(p.hook_arg_.load(std::memory_order_relaxed), ith, ThreadPool::HookPoint::Holding);
    return next_of(w);
}

void ThreadContext::complete() {
    ThreadPool& p = *pool_;
    p.members_[static_cast<size_t>(ith)].holding.store(0, std::memory_order_relaxed);
    if (p.done_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_chunks_) {
        // The last chunk: nobody else touches this phase's counters any more.
        p.done_.store(0, std::memory_order_relaxed);
        p.phase_open_.store(now_ns(), std::memory_order_relaxed);
        p.phase_.store(phase_word(seq_ + 1, 0), std::memory_order_seq_cst);
        p.wake_blocked();
    }
}

void ThreadContext::barrier() {
    if (!pool_) {
        if (nth > 1) throw Error(ErrorCode::InvalidArgument, "thread pool: barrier() inside a part (parts have no phases)");
        return;
    }
    ThreadPool& p = *pool_;
    if (n_chunks_ == 0) {  // a phase without chunks: the first thread here ends it
        uint64_t w = phase_word(seq_, 0);
        if (p.phase_.compare_exchange_strong(w, phase_word(seq_ + 1, 0), std::memory_order_seq_cst)) {
            p.phase_open_.store(now_ns(), std::memory_order_relaxed);
            p.wake_blocked();
        }
    }
    p.wait_phase(*this);
    ++seq_;
    opened_ = false;
    n_chunks_ = 0;
    if (p.aborted_.load(std::memory_order_acquire)) throw ThreadPool::Abort{};
}

// ---- ThreadPool ---------------------------------------------------------------------------

ThreadPool::ThreadPool(int n_threads, WaitPolicy policy)
    : n_threads_(n_threads), policy_(policy), cpus_(available_cpus()) {
    if (n_threads < 1) {
        throw Error(ErrorCode::InvalidArgument,
                    "thread pool: thread count must be >= 1 (got " + std::to_string(n_threads) + ")");
    }
    if (policy.spin.count() < 0) throw Error(ErrorCode::InvalidArgument, "thread pool: wait policy durations must be >= 0");
    members_ = std::make_unique<Member[]>(static_cast<size_t>(n_threads));
    workers_.reserve(static_cast<size_t>(n_threads - 1));
    try {
        for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this, i] { worker_main(i); });
    } catch (...) {
        stop_.store(true);
        wake_blocked();
        for (auto& t : workers_) t.join();
        throw;
    }
}

ThreadPool::~ThreadPool() {
    if (getenv("TESSEL_DEBUG_POOL")) fprintf(stderr, "pool %d threads: %lld benchings\n", n_threads_, (long long)benchings_.load());
    stop_.store(true);
    wake_blocked();
    for (auto& t : workers_) t.join();
}

void ThreadPool::pause() { paused_.store(true); }

void ThreadPool::resume() {
    paused_.store(false);
    wake_seq_.fetch_add(1);
    wake_blocked();
}

bool ThreadPool::benched(int ith) const {
    if (ith < 0 || ith >= n_threads_) return false;
    const Member& m = members_[static_cast<size_t>(ith)];
    const int64_t until = m.benched_until.load();
    return m.benched.load() && (until == 0 || now_ns() < until);
}

void ThreadPool::set_test_hook(Hook hook, void* arg) noexcept {
    hook_arg_.store(arg);
    hook_.store(hook);
}

// Wakes every blocked thread if there is one. Callers change the state a waiter checks first with
// a sequentially consistent store, and a waiter registers in blocked_ before its final check, whose
// loads are sequentially consistent too: so either the waiter sees the new state before it sleeps or
// this sees the waiter (and the mutex orders the notify after the waiter's final check).
void ThreadPool::wake_blocked() {
    if (blocked_.load() == 0) return;
    { std::lock_guard<std::mutex> lock(park_mu_); }
    park_cv_.notify_all();
}

bool ThreadPool::is_benched(int ith, int64_t now, bool self) {
    Member& m = members_[static_cast<size_t>(ith)];
    if (!m.benched.load(std::memory_order_relaxed)) return false;
    const int64_t until = m.benched_until.load(std::memory_order_relaxed);
    if (until == 0) {  // the probation starts when the thread is back (it may be held for long)
        if (self) m.benched_until.store(now + m.probation.load(std::memory_order_relaxed), std::memory_order_relaxed);
        return true;
    }
    if (now < until) return true;
    m.active_since.store(now, std::memory_order_relaxed);
    m.benched.store(false, std::memory_order_relaxed);  // probation over
    return false;
}

void ThreadPool::bench(int ith, int64_t now) {
    Member& m = members_[static_cast<size_t>(ith)];
    if (m.benched.load()) return;
    if (getenv("TESSEL_DEBUG_POOL")) fprintf(stderr, "bench %d at %lld probation %lld\n", ith, (long long)now, (long long)m.probation.load());
    int64_t probation = m.probation.load();
    probation = now - m.active_since.load() > 4 * probation ? kProbationStart : std::min(2 * probation, kProbationMax);
    m.probation.store(probation);
    m.benched_until.store(0);
    m.benched.store(true);
    benchings_.fetch_add(1, std::memory_order_relaxed);
}

// Waits until pred() holds: spins (when `spin`, this run is not oversubscribed and an idle worker
// is not paused), then blocks. With late_after > 0, on_late(now) is called once after late_after
// ns. With in_run (a worker inside a run), the worker is cancellable while blocked: returns false
// when the caller stopped waiting for it, true otherwise.
template <class Pred, class Late>
bool ThreadPool::wait_until(int ith, Pred&& pred, bool idle, bool spin, bool in_run, int64_t late_after, Late&& on_late) {
    if (pred()) return true;
    const int64_t start = now_ns();
    int64_t late_at = late_after > 0 ? start + late_after : INT64_MAX;
    auto parking_now = [&] { return idle && paused_.load(std::memory_order_relaxed); };
    Member& me = members_[static_cast<size_t>(ith)];
    for (;;) {
        if (spin && spin_.load(std::memory_order_relaxed) && !parking_now()) {
            const int64_t spin_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(policy_.spin).count();
            const int64_t spin_start = now_ns();
            int backoff = 1;
            while (now_ns() - spin_start < spin_ns) {
                for (int i = 0; i < backoff; ++i) cpu_relax();
                if (pred()) return true;
                if (parking_now()) break;
                if (backoff < kMaxSpinBackoff) backoff *= 2;
            }
        }
        const uint64_t seq = wake_seq_.load();
        bool resumed = false;
        {
            std::unique_lock<std::mutex> lock(park_mu_);
            uint64_t entered = 0;
            if (in_run) {
                entered = me.state.load();
                me.state.store((entered & ~uint64_t{3}) | kBlocked);
            }
            blocked_.fetch_add(1);
            for (;;) {
                if (pred()) break;
                if (idle && wake_seq_.load() != seq) {
                    resumed = true;
                    break;
                }
                const int64_t now = now_ns();
                if (now >= late_at) {
                    on_late(now);
                    late_at = INT64_MAX;
                    continue;
                }
                if (late_at == INT64_MAX) park_cv_.wait(lock);
                else park_cv_.wait_for(lock, std::chrono::nanoseconds(late_at - now));
            }
            blocked_.fetch_sub(1);
            if (in_run) {
                uint64_t blocked = (entered & ~uint64_t{3}) | kBlocked;
                if (!me.state.compare_exchange_strong(blocked, entered)) return false;  // cancelled
            }
        }
        if (!resumed) return true;
    }
}

void ThreadPool::wait_phase(ThreadContext& c) {
    const uint32_t seq = c.seq_;
    auto done = [&] {
        return after(seq_of(phase_.load()), seq) || aborted_.load();  // seq_cst: see wake_blocked()
    };
    if (done()) return;
    const int64_t now = now_ns();
    const bool benched_now = is_benched(c.ith, now, true);
    if (benched_now && c.ith != 0) return;  // a benched worker claims nothing: it need not keep up
    // Lateness: waiting for more than twice as long as the phase had run when the wait began (all of
    // its chunks were claimed by then, so a chunk still held then has run at most that long).
    const int64_t late_after = benched_now ? 0 : std::max(kLateMinimum, 2 * (now - phase_open_.load(std::memory_order_relaxed)));
    const bool in_run = c.ith != 0;
    if (!wait_until(c.ith, done, false, true, in_run, late_after, [&](int64_t t) {
            for (int i = 0; i < n_threads_; ++i)
                if (i != c.ith && members_[static_cast<size_t>(i)].holding.load() == seq + 1) bench(i, t);
        }))
        throw Cancelled{};
}

// The caller's wait at the end of a run (every phase is complete): workers that never entered or
// are blocked are let go; those still running are waited for, and benched when they are late.
void ThreadPool::wait_workers(uint64_t epoch) {
    for (int i = 1; i < n_threads_; ++i) {
        Member& m = members_[static_cast<size_t>(i)];
        for (uint64_t tag : {kInvited, kBlocked}) {
            uint64_t s = (epoch << 2) | tag;
            if (m.state.compare_exchange_strong(s, kNone)) pending_.fetch_sub(1);
        }
    }
    const bool may_bench = !is_benched(0, now_ns(), true);
    wait_until(0, [&] { return pending_.load() == 0; }, false, true, false,
               may_bench ? kLateMinimum : 0, [&](int64_t t) {
                   for (int i = 1; i < n_threads_; ++i)
                       if (members_[static_cast<size_t>(i)].state.load() == ((epoch << 2) | kEntered)) bench(i, t);
               });
}

void ThreadPool::worker_main(int ith) {
    Member& me = members_[static_cast<size_t>(ith)];
    uint64_t seen = 0;
    bool active = true;  // took part in the last run: spin for the next one (a benched worker does not)
    for (;;) {
        wait_until(ith, [&] { return epoch_.load() != seen || stop_.load(); }, true, active, false, 0, [](int64_t) {});
        if (stop_.load()) return;  // the destructor never runs during a run
        seen = epoch_.load();
        uint64_t invited = (seen << 2) | kInvited;
        active = me.state.compare_exchange_strong(invited, (seen << 2) | kEntered);
        if (!active) continue;  // not invited
        if (!execute(ith)) continue;  // cancelled: the caller no longer counts this worker
        me.state.store(kNone);
        if (pending_.fetch_sub(1) == 1) wake_blocked();  // the caller may be blocked
    }
}

bool ThreadPool::execute(int ith) {
    ThreadContext ctx(this, ith, n_threads_, start_seq_);
    try {
        kernel_(arg_, ctx);
        if (ith == 0 && ctx.opened_) ctx.barrier();  // the caller returns only after the last phase
    } catch (const Cancelled&) {
        return false;
    } catch (const Abort&) {
        // released from a barrier because another thread failed; that one reports
    } catch (...) {
        record_exception(std::current_exception());
    }
    return true;
}

void ThreadPool::record_exception(std::exception_ptr e) {
    {
        std::lock_guard<std::mutex> lock(error_mu_);
        if (!error_) error_ = std::move(e);
    }
    aborted_.store(true);
    wake_blocked();  // threads blocked in a barrier must see the abort
}

void ThreadPool::run_solo(Kernel kernel, void* arg) {
    if (kernel == nullptr) throw Error(ErrorCode::InvalidArgument, "thread pool: run_solo() with a null kernel");
    if (running_.exchange(true)) {
        throw Error(ErrorCode::InvalidArgument,
                    "thread pool: run_solo() called while a run is in progress (nested or concurrent)");
    }
    ThreadContext ctx(0, 1);
    try {
        kernel(arg, ctx);
    } catch (...) {
        running_.store(false);
        throw;
    }
    running_.store(false);
}

void ThreadPool::run(Kernel kernel, void* arg) {
    if (kernel == nullptr) throw Error(ErrorCode::InvalidArgument, "thread pool: run() with a null kernel");
    if (running_.exchange(true)) {
        throw Error(ErrorCode::InvalidArgument,
                    "thread pool: run() called while a run is in progress (nested or concurrent)");
    }
    kernel_ = kernel;
    arg_ = arg;
    aborted_.store(false);
    // A fresh phase number: an aborted run may have left its phase half claimed.
    start_seq_ = seq_of(phase_.load()) + 1;
    done_.store(0, std::memory_order_relaxed);
    phase_open_.store(now_ns(), std::memory_order_relaxed);
    phase_.store(phase_word(start_seq_, 0));
    const int64_t now = now_ns();
    const uint64_t epoch = epoch_.load() + 1;
    int invited = 0;
    for (int i = 0; i < n_threads_; ++i) members_[static_cast<size_t>(i)].holding.store(0, std::memory_order_relaxed);
    for (int i = 1; i < n_threads_; ++i) {
        if (is_benched(i, now, false)) continue;
        members_[static_cast<size_t>(i)].state.store((epoch << 2) | kInvited);
        ++invited;
    }
    if (invited == 0) members_[0].benched.store(false);  // someone must work
    spin_.store(invited + 1 <= cpus_);
    pending_.store(invited);
    if (invited > 0) {
        epoch_.store(epoch);  // publishes the job
        wake_blocked();
    }
    execute(0);
    if (invited > 0) wait_workers(epoch);
    std::exception_ptr e;
    {
        std::lock_guard<std::mutex> lock(error_mu_);
        e = std::exchange(error_, nullptr);
    }
    running_.store(false);
    if (e) std::rethrow_exception(e);
}

}  // namespace tessel::cpu

#include "cpu/threadpool.hpp"
#include "cpu/topology.hpp"

#include <algorithm>

#include "cpu/topology.hpp"
#include "tessel/errors.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace tessel::cpu {

namespace {

// Upper bound of the exponential spin backoff, in pause hints between two checks (a few us).
constexpr int kMaxSpinBackoff = 64;
// A gap this long (ns) between two checks of a spinning thread means it was descheduled: its core
// is shared (with another program, or with a thread of ours, which its spinning would slow down),
// so it benches itself (unless it is the last one working) and blocks at once in its waits for the
// next kNoSpinAfterPreemption ns.
constexpr int64_t kPreemptedGap = 200'000;
constexpr int64_t kNoSpinAfterPreemption = 100'000'000;
// A thread on time for this long (ns; and for four probations) starts again at kProbationStart.
constexpr int64_t kOnTimeReset = 1'000'000'000;
// Longest spin of a phase wait (ns), see wait_phase().
constexpr int64_t kMaxPhaseSpin = 2'000'000;

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
        p.wake(p.run_);
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
            p.wake(p.run_);
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
    : n_threads_(n_threads), spin_ns_(std::chrono::duration_cast<std::chrono::nanoseconds>(policy.spin).count()),
      cpus_(available_cpus()) {
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
        wake(idle_);
        for (auto& t : workers_) t.join();
        throw;
    }
}

ThreadPool::~ThreadPool() {
    stop_.store(true);
    wake(idle_);
    wake(run_);  // workers the last run let go while they were blocked in it
    for (auto& t : workers_) t.join();
}

void ThreadPool::pause() { paused_.store(true); }

void ThreadPool::resume() {
    paused_.store(false);
    wake_seq_.fetch_add(1);
    wake(idle_);
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
    std::lock_guard<std::mutex> lock(bench_mu_);  // every thread starts the test active
    for (int i = 0; i < n_threads_; ++i) {
        Member& m = members_[static_cast<size_t>(i)];
        m.benched.store(false);
        m.probation.store(kProbationStart);
        m.no_spin_until.store(0);
    }
}

// Wakes every thread blocked on channel c, if there is one. Callers change the state a waiter
// checks first with a sequentially consistent store, and a waiter registers in c.blocked before its
// final check, whose loads are sequentially consistent too: so either the waiter sees the new state
// before it sleeps or this sees the waiter (and the mutex orders the notify after its final check).
void ThreadPool::wake(Channel& c) {
    if (c.blocked.load() == 0) return;
    { std::lock_guard<std::mutex> lock(c.mu); }
    c.cv.notify_all();
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
    std::lock_guard<std::mutex> lock(bench_mu_);
    if (m.benched.load()) {  // probation over
        m.active_since.store(now, std::memory_order_relaxed);
        m.benched.store(false);
        if (m.in_run) {
            m.counted = true;
            ++active_;
        }
    }
    return false;
}

void ThreadPool::leave_run(int ith) {
    std::lock_guard<std::mutex> lock(bench_mu_);
    Member& m = members_[static_cast<size_t>(ith)];
    if (!m.in_run) return;
    m.in_run = false;
    if (m.counted) {
        m.counted = false;
        --active_;
    }
}

void ThreadPool::bench(int ith, int64_t now) {
    Member& m = members_[static_cast<size_t>(ith)];
    std::lock_guard<std::mutex> lock(bench_mu_);
    if (m.benched.load() || (m.counted && active_ <= 1)) return;  // someone in the run must keep working
    int64_t probation = m.probation.load();
    const bool on_time = now - m.active_since.load() > std::max(4 * probation, kOnTimeReset);
    probation = on_time ? kProbationStart : std::min(2 * probation, kProbationMax);
    m.probation.store(probation);
    m.benched_until.store(0);
    m.benched.store(true);
    if (m.counted) {
        m.counted = false;
        --active_;
    }
    benchings_.fetch_add(1, std::memory_order_relaxed);
}

// Waits until pred() holds: spins for up to spin_ns (unless an idle worker is paused or this
// thread's core is shared), then blocks. With late_after > 0, on_late(now) is called once after late_after
// ns. With in_run (a worker inside a run), the worker is cancellable while blocked: returns false
// when the caller stopped waiting for it, true otherwise.
template <class Pred, class Late>
bool ThreadPool::wait_until(int ith, Pred&& pred, bool idle, int64_t spin_ns, bool in_run, int64_t late_after, Late&& on_late) {
    if (pred()) return true;
    const int64_t start = now_ns();
    int64_t late_at = late_after > 0 ? start + late_after : INT64_MAX;
    auto parking_now = [&] { return idle && paused_.load(std::memory_order_relaxed); };
    Member& me = members_[static_cast<size_t>(ith)];
    for (;;) {
        const int64_t spin_start = now_ns();
        if (spin_ns > 0 && !parking_now() &&
            spin_start >= me.no_spin_until.load(std::memory_order_relaxed)) {
            int backoff = 1;
            for (int64_t last = spin_start, now = spin_start; now - spin_start < spin_ns; last = now, now = now_ns()) {
                if (now - last > kPreemptedGap) {  // descheduled while spinning: this core is shared
                    me.no_spin_until.store(now + kNoSpinAfterPreemption, std::memory_order_relaxed);
                    bench(ith, now);
                    break;
                }
                for (int i = 0; i < backoff; ++i) cpu_relax();
                if (pred()) return true;
                if (parking_now()) break;
                if (backoff < kMaxSpinBackoff) backoff *= 2;
            }
        }
        const uint64_t seq = wake_seq_.load();
        bool resumed = false;
        {
            Channel& ch = idle ? idle_ : run_;
            std::unique_lock<std::mutex> lock(ch.mu);
            uint64_t entered = 0;
            const uint64_t blocked_state = (me.state.load() & ~uint64_t{3}) | kBlocked;
            if (in_run) {
                entered = me.state.load();
                me.state.store(blocked_state);
            }
            ch.blocked.fetch_add(1);
            for (;;) {
                if (pred()) break;
                if (in_run && me.state.load() != blocked_state) break;  // cancelled
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
                if (late_at == INT64_MAX) ch.cv.wait(lock);
                else ch.cv.wait_for(lock, std::chrono::nanoseconds(late_at - now));
            }
            ch.blocked.fetch_sub(1);
            if (in_run) {
                uint64_t blocked = blocked_state;
                if (!me.state.compare_exchange_strong(blocked, entered)) return false;  // cancelled
            }
        }
        if (!resumed) return true;
    }
}

void ThreadPool::wait_phase(ThreadContext& c) {
    const uint32_t seq = c.seq_;
    auto done = [&] {
        return after(seq_of(phase_.load()), seq) || aborted_.load();  // seq_cst: see wake()
    };
    if (done()) return;
    const int64_t now = now_ns();
    if (is_benched(c.ith, now, true)) return;  // a benched thread claims nothing: it need not keep up
    // Lateness: waiting for more than twice as long as the phase had run when the wait began (all of
    // its chunks were claimed by then, so a chunk still held then has run at most that long).
    const int64_t late_after = std::max(kLateMinimum, 2 * (now - phase_open_.load(std::memory_order_relaxed)));
    const bool in_run = c.ith != 0;
    // Spin about as long as the phase has run (its chunks' length), within [policy spin, kMaxPhaseSpin]:
    // short for decode ops, long enough for a prompt's phase ends, where waking a blocked thread costs
    // more than the wait.
    const int64_t spin_ns = std::clamp(now - phase_open_.load(std::memory_order_relaxed), spin_ns_, std::max(spin_ns_, kMaxPhaseSpin));
    if (!wait_until(c.ith, done, false, spin_ns, in_run, late_after, [&](int64_t t) {
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
            if (m.state.compare_exchange_strong(s, kNone)) {
                leave_run(i);
                pending_.fetch_sub(1);
            }
        }
    }
    wake(run_);  // those let go while blocked leave now
    const bool may_bench = !is_benched(0, now_ns(), true);
    wait_until(0, [&] { return pending_.load() == 0; }, false, spin_ns_, false,
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
        wait_until(ith, [&] { return epoch_.load() != seen || stop_.load(); }, true, active ? spin_ns_ : 0, false, 0, [](int64_t) {});
        if (stop_.load()) return;  // the destructor never runs during a run
        seen = epoch_.load();
        uint64_t invited = (seen << 2) | kInvited;
        active = me.state.compare_exchange_strong(invited, (seen << 2) | kEntered);
        if (!active) continue;  // not invited
        if (!execute(ith)) continue;  // cancelled: the caller no longer counts this worker
        leave_run(ith);
        me.state.store(kNone);
        if (pending_.fetch_sub(1) == 1) wake(run_);  // the caller may be blocked
    }
}

bool ThreadPool::execute(int ith) {
    ThreadContext ctx(this, ith, n_threads_, start_seq_);
    try {
        kernel_(arg_, ctx);
        if (ith == 0) {  // the caller returns only after the last phase (also when it passed them benched)
            if (ctx.opened_) ctx.barrier();
            const uint32_t end = ctx.seq_;
            wait_until(0, [&] { return !after(end, seq_of(phase_.load())) || aborted_.load(); }, false, spin_ns_, false, 0,
                       [](int64_t) {});
            if (aborted_.load()) throw Abort{};
        }
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
    wake(run_);  // threads blocked in a barrier must see the abort
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
        if (invited + 1 >= cpus_ || is_benched(i, now, false)) continue;  // a run never has more threads than CPUs
        members_[static_cast<size_t>(i)].state.store((epoch << 2) | kInvited);
        ++invited;
    }
    is_benched(0, now, true);  // ends the caller's probation when it is over
    {  // active_: the threads of this run that are not benched; never 0
        std::lock_guard<std::mutex> lock(bench_mu_);
        active_ = 0;
        for (int i = 0; i < n_threads_; ++i) {
            Member& m = members_[static_cast<size_t>(i)];
            m.in_run = i == 0 || m.state.load() == ((epoch << 2) | kInvited);
            m.counted = m.in_run && !m.benched.load();
            active_ += m.counted;
        }
        if (active_ == 0) {  // someone must work: the caller
            members_[0].benched.store(false);
            members_[0].counted = true;
            active_ = 1;
        }
    }
    pending_.store(invited);
    if (invited > 0) {
        epoch_.store(epoch);  // publishes the job
        wake(idle_);
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

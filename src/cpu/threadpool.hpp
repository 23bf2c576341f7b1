// The cpu backend's thread pool: a team of threads that enter one function together (the CPU
// backend's walk over a whole planned graph, graph_plan.hpp) and share its work in chunks, so that
// a thread whose core is taken by another program never holds the others up.
//
// ThreadPool(n) owns n-1 persistent worker threads; the thread calling run() takes part as thread
// 0, with the workers that are not benched, at most as many threads as this process may use CPUs
// (more would only take turns on them: a run of -t 4 on 2 CPUs runs like -t 2). Every thread of
// a run executes the same code. Work is divided into *phases* separated by ctx.barrier();
// inside a phase, all work is done in chunks claimed with ctx.for_chunks() (or in parts, ctx.parts())
// from one shared counter tagged with the phase's number. A phase is complete when its chunks are
// complete, not when every thread has arrived: barrier() waits for the chunks only. A thread that
// comes back late (it was descheduled, or still waking up) finds the phase's counter moved on, so its
// claims for that phase fail at once; it runs through the remaining code claiming nothing until it
// reaches the phase the others are in. Hence the rule for kernels: every read or write of tensor
// data happens inside a claimed chunk (code outside chunks may run on a late thread while the work
// buffer already holds a later node's data), and every thread makes the same sequence of
// for_chunks()/barrier() calls with the same chunk counts.
//
// A thread descheduled while it *holds* a chunk still holds its phase for a scheduler slice. The pool
// shrinks the team instead of waiting for that again. A thread is *benched* when
//   - a thread waiting for a phase (or the caller waiting for workers at the end of a run) has
//     waited longer than max(kLateMinimum, twice as long as the phase had run when the wait began)
//     and it still holds a chunk of that phase (or is still running), or
//   - it finds it was descheduled while spinning (a gap of 200 us between two checks): its core is
//     shared, with another program or with a thread of ours that its spinning would slow down; it
//     then benches itself and does not spin for 100 ms.
// A benched thread claims nothing and passes barriers without waiting (the caller, benched, waits for
// the run's last phase at its end); a benched worker is not invited to runs. Its probation runs from
// when it is back, starts at kProbationStart, doubles for each new late event up to kProbationMax,
// and drops back to the start once it was on time for four probations and a second. So a thread on
// a busy core costs about one scheduler slice per probation (well under 1 % at the maximum), and
// comes back within a second after the core frees up. At least one thread of a run is never benched
// (benching that would leave none is refused), so the run always finishes. (Re-running a held chunk
// on another thread was the alternative; it is unsafe here: the late thread's writes would land
// after later nodes reused the memory.)
//
// Waiting (idle workers between runs, phase waits, the caller waiting for workers): spin with the
// x86 `pause` / Arm `yield` hint -- for WaitPolicy::spin (default 100 us, TESSEL_CPU_SPIN in the
// CPU backend), a phase wait for about as long as the phase has run, up to 2 ms (a prompt's phase
// ends; waking a blocked thread costs more); no spin on a shared core or for a benched idle worker --
// then block on a condition variable
// until woken. Idle workers and threads inside a run block on separate channels, so the end of a
// phase never wakes an idle worker. Every event that can end a wait (a phase completing, a new run,
// the last worker leaving, an exception, shutdown, resume()) wakes the blocked threads of its
// channel. pause() makes idle workers block at once; resume() wakes them to spin again.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace tessel::cpu {

/// How long a waiting thread spins before it blocks (see the file comment).
struct WaitPolicy {
    std::chrono::microseconds spin{100};  ///< busy-wait budget with pause hints (a phase wait may spin longer)
};

/// Lateness and probation constants (file comment), in nanoseconds.
inline constexpr int64_t kLateMinimum = 2'000'000;
inline constexpr int64_t kProbationStart = 4'000'000;
inline constexpr int64_t kProbationMax = 1'024'000'000;

class ThreadPool;

/// What a kernel sees: its thread (or part) index and count, the phase's chunk counter and the
/// barrier. Only valid inside the run that passed it, on the thread it was passed to.
class ThreadContext {
public:
    /// In a pool run: this thread's index 0 .. nth-1 (0 is the thread that called run()) and the
    /// team size -- use them only to pick per-thread scratch, never to split work. In a part
    /// (parts()) or alone(): the part's index and the number of parts.
    int ith;
    int nth;

    /// Splits [0, n_items) into chunks of `chunk_size` items (the last may be shorter) and calls
    /// fn(begin, end) for the chunks this thread claims; across the team every chunk runs exactly
    /// once, and each phase (code between barriers) has at most one chunk loop. In a part or alone()
    /// context it runs the part's share: chunks ith, ith + nth, ... (strided, so uneven chunk costs
    /// spread over the parts). Throws tessel::Error(InvalidArgument) if n_items < 0, chunk_size < 1
    /// or there are 2^31 chunks or more.
    template <class F>
    void for_chunks(int64_t n_items, int64_t chunk_size, F&& fn) {
        const int64_t n_chunks = check_chunk_args(n_items, chunk_size);
        auto chunk = [&](int64_t c) {
            const int64_t begin = c * chunk_size;
            fn(begin, begin + chunk_size < n_items ? begin + chunk_size : n_items);
        };
        if (!pool_) {
            for (int64_t c = ith; c < n_chunks; c += nth) chunk(c);
            return;
        }
        open_phase(static_cast<uint32_t>(n_chunks));
        for (int64_t c = claim(); c >= 0; c = claim()) {
            chunk(c);
            complete();
        }
    }

    /// Runs fn(part) for the parts 0 .. n_parts-1 this thread claims, where `part` is a context with
    /// ith = the part's index and nth = n_parts: for kernels that split their work by (ith, nth).
    /// A part's barrier() throws (parts have no phases); its for_chunks() runs its strided share.
    /// Counts as the phase's chunk loop. Throws as for_chunks().
    template <class F>
    void parts(int n_parts, F&& fn) {
        for_chunks(n_parts, 1, [&](int64_t p, int64_t) {
            ThreadContext part(static_cast<int>(p), n_parts);
            fn(part);
        });
    }

    /// Ends the phase: returns once every chunk of it is complete, so writes made in its chunks are
    /// visible to every thread afterwards (a benched thread returns at once; it claims nothing).
    /// In alone() it does nothing; in a part it throws tessel::Error(InvalidArgument). If another
    /// thread's kernel threw, throws an internal abort exception (let it propagate; run() reports
    /// the original exception).
    void barrier();

    /// A context for work this thread does by itself inside a claimed chunk (ith 0, nth 1): its
    /// for_chunks() runs every chunk in order and its barrier() does nothing.
    ThreadContext alone() const { return ThreadContext(0, 1); }

private:
    friend class ThreadPool;
    ThreadContext(ThreadPool* pool, int i, int n, uint32_t seq) : ith(i), nth(n), pool_(pool), seq_(seq) {}
    ThreadContext(int i, int n) : ith(i), nth(n) {}
    static int64_t check_chunk_args(int64_t n_items, int64_t chunk_size);
    void open_phase(uint32_t n_chunks);
    int64_t claim();
    void complete();

    ThreadPool* pool_ = nullptr;  // null: a part or alone()
    uint32_t seq_ = 0;            // number of the phase this thread's code is in
    uint32_t n_chunks_ = 0;       // chunks of that phase (0 until its chunk loop starts)
    bool opened_ = false;         // the phase's chunk loop has started
};

class ThreadPool {
public:
    /// Kernel entry point for the non-allocating form: called once per thread with `arg`.
    using Kernel = void (*)(void* arg, ThreadContext& ctx);

    /// Starts n_threads-1 workers (the calling thread of run() is thread 0).
    /// Throws tessel::Error(InvalidArgument) if n_threads < 1 or the policy has a negative
    /// duration; std::system_error if a thread cannot be created (no threads are left behind).
    explicit ThreadPool(int n_threads, WaitPolicy policy = {});

    /// Stops and joins every worker. Must not be called while run() is in progress.
    ~ThreadPool();

    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    /// Number of threads in the team (workers + the caller).
    int size() const noexcept { return n_threads_; }

    /// Runs kernel(arg, ctx) on the caller (ctx.ith 0) and on the workers that are not benched (at
    /// most as many threads in all as this process may use CPUs), and returns when all of its phases
    /// are complete and every worker that entered has left it. Writes made
    /// in chunks are visible to the caller afterwards. If kernels throw, the first exception (by
    /// time) is rethrown here after all threads have left; threads waiting in barrier() are
    /// released by an internal abort. One run at a time: calling run() from inside a kernel or
    /// from two threads at once throws tessel::Error(InvalidArgument). Does not allocate.
    void run(Kernel kernel, void* arg);

    /// Convenience form taking any callable `void(ThreadContext&)` (referenced, not copied).
    template <class F>
    void run(F&& fn) {
        using Fn = std::remove_reference_t<F>;
        run([](void* a, ThreadContext& ctx) { (*static_cast<Fn*>(a))(ctx); },
            const_cast<void*>(static_cast<const void*>(std::addressof(fn))));
    }

    /// Runs kernel(arg, ctx) on the calling thread alone with an alone() context: no hand-over
    /// between threads. Errors as for run().
    void run_solo(Kernel kernel, void* arg);

    /// Convenience form of run_solo() for any callable `void(ThreadContext&)`.
    template <class F>
    void run_solo(F&& fn) {
        using Fn = std::remove_reference_t<F>;
        run_solo([](void* a, ThreadContext& ctx) { (*static_cast<Fn*>(a))(ctx); },
                 const_cast<void*>(static_cast<const void*>(std::addressof(fn))));
    }

    /// One run whose threads share [0, n_items) in chunks of chunk_size items: fn(begin, end) is
    /// called exactly once per chunk, on some thread. Errors as for ThreadContext::for_chunks.
    template <class F>
    void parallel_for_chunks(int64_t n_items, int64_t chunk_size, F&& fn) {
        ThreadContext::check_chunk_args(n_items, chunk_size);
        run([&](ThreadContext& ctx) { ctx.for_chunks(n_items, chunk_size, fn); });
    }

    /// One run whose threads share parts 0 .. n_parts-1: fn(part) is called exactly once per part,
    /// with part.ith = the part and part.nth = n_parts (for kernels that split by (ith, nth)).
    /// Errors as for ThreadContext::parts.
    template <class F>
    void run_parts(int n_parts, F&& fn) {
        run([&](ThreadContext& ctx) { ctx.parts(n_parts, fn); });
    }

    /// Makes idle workers block at once instead of spinning between runs; for periods when no run
    /// will come soon. Runs still work while paused. Call from the owning thread.
    void pause();
    /// Ends pause(): wakes blocked workers so they spin, ready for the next run.
    void resume();
    /// Whether pause() is in effect.
    bool paused() const noexcept { return paused_.load(std::memory_order_relaxed); }

    /// Whether thread ith is benched now (file comment), and how many times threads were benched
    /// since the pool started: for tests and diagnostics.
    bool benched(int ith) const;
    int64_t benchings() const noexcept { return benchings_.load(std::memory_order_relaxed); }

    /// Test hook: when set, every thread calls hook(arg, ith, point) before each claim of a chunk
    /// (BeforeClaim) and right after a successful claim, while it holds the chunk (Holding). Set it
    /// between runs; nullptr removes it. Setting it ends every thread's bench and probation.
    enum class HookPoint { BeforeClaim, Holding };
    using Hook = void (*)(void* arg, int ith, HookPoint point);
    void set_test_hook(Hook hook, void* arg) noexcept;

private:
    friend class ThreadContext;
    struct Abort {};  // thrown out of barrier() when another thread's kernel failed

    struct Cancelled {};  // thrown out of barrier() in a worker the caller stopped waiting for

    // A worker's place in a run: (epoch << 2) | one of these. The caller moves Invited and Blocked
    // to None when it stops waiting for a worker; the worker moves them to Entered: one CAS wins.
    enum : uint64_t { kNone = 0, kInvited = 1, kEntered = 2, kBlocked = 3 };

    // Per-thread state others read, one cache line each.
    struct alignas(64) Member {
        std::atomic<uint32_t> holding{0};        // 1 + the phase of a chunk it holds; 0: none
        std::atomic<bool> benched{false};
        std::atomic<uint64_t> state{kNone};
        std::atomic<int64_t> benched_until{0};   // steady-clock ns; 0: probation not started
        std::atomic<int64_t> probation{kProbationStart};
        std::atomic<int64_t> active_since{0};    // when its last probation ended
        std::atomic<int64_t> no_spin_until{0};   // its waits do not spin before then (a shared core)
        bool in_run = false;   // guarded by bench_mu_: invited to the current run (the caller: always)
        bool counted = false;  // guarded by bench_mu_: in the run and not benched (counted in active_)
    };

    void worker_main(int ith);
    bool execute(int ith);
    void record_exception(std::exception_ptr e);
    // Threads block on one of two channels: idle workers waiting for a run, and threads inside a
    // run (phase waits, the caller's end wait), so a phase's end never wakes an idle worker.
    struct Channel {
        std::mutex mu;
        std::condition_variable cv;
        std::atomic<int> blocked{0};
    };
    void wake(Channel& c);
    bool is_benched(int ith, int64_t now, bool self);
    void leave_run(int ith);
    void bench(int ith, int64_t now);
    void wait_phase(ThreadContext& ctx);
    void wait_workers(uint64_t epoch);
    template <class Pred, class Late>
    bool wait_until(int ith, Pred&& pred, bool idle, int64_t spin_ns, bool in_run, int64_t late_after, Late&& on_late);

    const int n_threads_;
    const int64_t spin_ns_;  // WaitPolicy::spin
    const int cpus_;  // CPUs this process may use: a run invites at most cpus_ - 1 workers
    std::unique_ptr<Member[]> members_;

    // Hot shared state, each on its own cache line.
    alignas(64) std::atomic<uint64_t> phase_{0};   // (phase number << 32) | next chunk to claim
    alignas(64) std::atomic<uint32_t> done_{0};    // chunks of the current phase completed
    std::atomic<int64_t> phase_open_{0};           // steady-clock ns when the current phase began
    alignas(64) std::atomic<uint64_t> epoch_{0};   // bumped once per run
    alignas(64) std::atomic<int> pending_{0};      // invited workers still inside the current run
    alignas(64) std::atomic<bool> aborted_{false};  // a kernel threw in this run
    std::atomic<bool> stop_{false};
    std::atomic<bool> paused_{false};
    std::atomic<uint64_t> wake_seq_{0};  // bumped by resume()
    std::atomic<bool> running_{false};
    std::atomic<int64_t> benchings_{0};
    std::mutex bench_mu_;  // guards benching and its end, active_ and the members' in_run / counted
    int active_ = 0;       // threads in the current run that are not benched (never 0 while it runs)
    std::atomic<Hook> hook_{nullptr};
    std::atomic<void*> hook_arg_{nullptr};

    // Current job: written by the caller before the epoch bump, read by workers after it.
    Kernel kernel_ = nullptr;
    void* arg_ = nullptr;
    uint32_t start_seq_ = 0;  // phase number of the run's first phase

    std::mutex error_mu_;
    std::exception_ptr error_;

    Channel idle_;
    Channel run_;

    std::vector<std::thread> workers_;
};

}  // namespace tessel::cpu

// The cpu backend's thread pool: a fixed team of threads that enter one function together (the
// CPU backend's: the walk over a whole planned graph, graph_plan.hpp).
//
// ThreadPool(n) owns n-1 persistent worker threads; the thread calling run() takes part as
// thread 0, so a run uses exactly n threads. Inside a kernel, threads split work by index
// (ctx.ith of ctx.nth), or dynamically through a shared chunk counter (ctx.next_chunk(),
// ctx.for_chunks()), and separate phases with ctx.barrier() (e.g. pack activations, barrier,
// compute output columns).
//
// Waiting policy (idle workers between runs, barrier waits, the caller waiting for workers):
//   1. spin with the x86 `pause` / Arm `yield` hint, backing off exponentially up to 64 hints per
//      check, for WaitPolicy::spin (default 100 us) -- skipped when the pool has more threads
//      than this process may use CPUs (oversubscribed), and for idle workers while paused;
//   2. then std::this_thread::yield() until WaitPolicy::spin + WaitPolicy::yield (default
//      +1000 us) have passed since the wait began -- oversubscribed pools yield at most
//      kOversubscribedYields (16) times instead;
//   3. then park on a condition variable until woken. Every event that can end a wait (a new
//      run, a barrier release, the last worker finishing, an exception, shutdown, resume())
//      wakes parked threads, so parking never loses a wakeup.
// So a busy pool answers a new op within a few hundred nanoseconds, an idle one costs no CPU
// after ~1.1 ms, and a pool of 200 threads on 2 cores makes progress without livelock.
// pause() makes idle workers park at once (e.g. while another device computes); resume()
// wakes them to spin again ahead of the next run.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <memory>
#include <utility>
#include <vector>

namespace tessel::cpu {

/// Default thread count: the physical cores this process may run on (core_topology(), over the
/// affinity mask), only the big ones on a big/little CPU (CoreTopology::default_threads()).
/// Falls back to std::thread::hardware_concurrency() when sysfs is unreadable; never less than 1.
/// Thread-safe; reads sysfs on every call.
int default_thread_count();

/// Physical cores, and their capacities where the CPU's cores differ in speed (Arm big.LITTLE /
/// DynamIQ: sysfs cpuN/cpu_capacity, the kernel's relative speed of a core, 1024 = the fastest).
struct CoreTopology {
    int cores = 0;      ///< physical cores: distinct sibling lists
    int big_cores = 0;  ///< physical cores at the largest capacity among `cores` (== cores without capacities)
    /// Distinct cpu_capacity values of the counted cores, largest first; empty when no counted
    /// core has the file (x86). A core's capacity is the largest of its CPUs' (SMT siblings share one).
    std::vector<int> capacities;

    /// More than one capacity: a big/little CPU.
    bool big_little() const { return capacities.size() > 1; }
    /// The default thread count: the big cores on a big/little CPU, else every core. "Big" is
    /// relative to the counted (allowed) cores: an affinity mask of little cores only counts them all.
    int default_threads() const { return big_little() ? big_cores : cores; }
};

/// The sysfs parser behind default_thread_count(), exposed for tests: reads the cpuN entries
/// under `cpu_dir` (a directory laid out like /sys/devices/system/cpu): their sibling lists
/// (topology/core_cpus_list, or thread_siblings_list on older kernels) and cpu_capacity. If
/// `allowed` is non-empty, only cpuN with allowed[N] true count. All zero/empty if no entry could
/// be read (no errors thrown).
CoreTopology core_topology(const std::string& cpu_dir, const std::vector<bool>& allowed = {});

/// This machine's core_topology(): /sys/devices/system/cpu over this process's affinity mask.
CoreTopology core_topology();

/// core_topology(cpu_dir, allowed).cores.
int count_physical_cores(const std::string& cpu_dir, const std::vector<bool>& allowed = {});

/// How long a waiting thread spins and yields before it parks (see the file comment).
struct WaitPolicy {
    std::chrono::microseconds spin{100};   ///< busy-wait budget with pause hints
    std::chrono::microseconds yield{1000}; ///< further budget spent in std::this_thread::yield()
};

class ThreadPool;

/// What a kernel sees: its thread index and count, the barrier and the chunk counter.
/// Only valid inside the run that passed it, on the thread it was passed to.
class ThreadContext {
public:
    int ith;  ///< this thread's index, 0 .. nth-1 (0 is the thread that called run())
    int nth;  ///< number of threads in the run (the pool size)

    /// Blocks until all nth threads of the run have called barrier() the same number of times.
    /// Writes made by any thread before the barrier are visible to every thread after it.
    /// Also resets the chunk counter, so every phase between barriers starts at chunk 0.
    /// If another thread's kernel threw, throws an internal abort exception instead of waiting
    /// (let it propagate; run() reports the original exception).
    void barrier();

    /// Next chunk index of this phase: successive calls across all threads return 0, 1, 2, ...
    /// each exactly once. The caller stops when the value reaches its own bound. Lock-free.
    int64_t next_chunk();

    /// Dynamic scheduling helper: splits [0, n_items) into chunks of `chunk_size` items (the last
    /// may be shorter) and calls fn(begin, end) for the chunks this thread claims from the chunk
    /// counter; across all threads every chunk runs exactly once. Every thread of the run must
    /// call it (or none), and at most one chunk loop may run per phase: separate two loops with
    /// barrier(). Throws tessel::Error(InvalidArgument) if n_items < 0 or chunk_size < 1.
    template <class F>
    void for_chunks(int64_t n_items, int64_t chunk_size, F&& fn) {
        check_chunk_args(n_items, chunk_size);
        const int64_t n_chunks = (n_items + chunk_size - 1) / chunk_size;
        for (int64_t c = next_chunk(); c < n_chunks; c = next_chunk()) {
            const int64_t begin = c * chunk_size;
            const int64_t end = begin + chunk_size < n_items ? begin + chunk_size : n_items;
            fn(begin, end);
        }
    }

    /// A context for work this thread (ith 0) does alone while the other threads of the run wait
    /// at their next barrier() (ith 0, nth 1: its barrier() only restarts the chunk counter).
    /// Restarts the chunk counter, so its chunk loop starts at chunk 0. Valid only while no other
    /// thread of the run is between barriers (they all wait at the same barrier).
    ThreadContext alone() const;

private:
    friend class ThreadPool;
    ThreadContext(ThreadPool* pool, int i, int n) : ith(i), nth(n), pool_(pool) {}
    static void check_chunk_args(int64_t n_items, int64_t chunk_size);
    ThreadPool* pool_;
};

class ThreadPool {
public:
    /// Kernel entry point for the non-allocating form: called once per thread with `arg`.
    using Kernel = void (*)(void* arg, ThreadContext& ctx);

    /// Starts n_threads-1 workers (the calling thread of run() is thread 0).
    /// Throws tessel::Error(InvalidArgument) if n_threads < 1 or the policy has negative
    /// durations; std::system_error if a thread cannot be created (no threads are left behind).
    explicit ThreadPool(int n_threads, WaitPolicy policy = {});

    /// Stops and joins every worker; they may be parked, idle or spinning. Must not be called
    /// while run() is in progress.
    ~ThreadPool();

    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    /// Number of threads in a run (workers + the caller).
    int size() const noexcept { return n_threads_; }

    /// Runs kernel(arg, ctx) once on every thread (ctx.ith = 0..size()-1, the caller is 0) and
    /// returns when all are done. Writes made inside the kernel are visible to the caller
    /// afterwards. If kernels throw, the first exception (by time) is rethrown here after all
    /// threads have finished; threads waiting in barrier() are released by an internal abort.
    /// One run at a time: calling run() from inside a kernel or from two threads at once throws
    /// tessel::Error(InvalidArgument). Does not allocate.
    void run(Kernel kernel, void* arg);

    /// Convenience form taking any callable `void(ThreadContext&)` (lambda, std::function);
    /// the callable is referenced, not copied, so this does not allocate either.
    template <class F>
    void run(F&& fn) {
        using Fn = std::remove_reference_t<F>;
        run([](void* a, ThreadContext& ctx) { (*static_cast<Fn*>(a))(ctx); },
            const_cast<void*>(static_cast<const void*>(std::addressof(fn))));
    }

    /// Runs kernel(arg, ctx) on the calling thread alone (ctx.ith = 0, ctx.nth = 1): barrier()
    /// only restarts the chunk counter and the workers are not involved, so a small op costs no
    /// hand-over between threads. Errors as for run().
    void run_solo(Kernel kernel, void* arg);

    /// Convenience form of run_solo() for any callable `void(ThreadContext&)`.
    template <class F>
    void run_solo(F&& fn) {
        using Fn = std::remove_reference_t<F>;
        run_solo([](void* a, ThreadContext& ctx) { (*static_cast<Fn*>(a))(ctx); },
                 const_cast<void*>(static_cast<const void*>(std::addressof(fn))));
    }

    /// One run whose threads share [0, n_items) dynamically in chunks of chunk_size items:
    /// fn(begin, end) is called exactly once per chunk, on some thread. Errors as for
    /// ThreadContext::for_chunks and run().
    template <class F>
    void parallel_for_chunks(int64_t n_items, int64_t chunk_size, F&& fn) {
        ThreadContext::check_chunk_args(n_items, chunk_size);
        run([&](ThreadContext& ctx) { ctx.for_chunks(n_items, chunk_size, fn); });
    }

    /// Makes idle workers park (sleep, no CPU) at once instead of spinning between runs; for
    /// periods when no run will come soon. Runs still work while paused (workers wake for the
    /// run and park again right after). Returns immediately. Call from the owning thread.
    void pause();

    /// Ends pause(): wakes parked workers so they spin, ready for the next run, and park again
    /// on their own after the policy's window. Call from the owning thread.
    void resume();

    /// Whether pause() is in effect.
    bool paused() const noexcept { return paused_.load(std::memory_order_relaxed); }

private:
    friend class ThreadContext;
    struct Abort {};  // thrown out of barrier() when another thread's kernel failed

    void worker_main(int ith);
    void execute(int ith);
    void barrier_wait();
    void record_exception(std::exception_ptr e);
    void wake_parked();
    template <class Pred>
    void wait_until(Pred&& pred, bool idle);

    const int n_threads_;
    const WaitPolicy policy_;
    const bool oversubscribed_;

    // Hot shared state, each on its own cache line.
    alignas(64) std::atomic<uint64_t> epoch_{0};        // bumped once per run
    alignas(64) std::atomic<int> pending_{0};           // workers still inside the current run
    alignas(64) std::atomic<int> barrier_count_{0};     // arrivals at the current barrier
    alignas(64) std::atomic<uint64_t> barrier_gen_{0};  // bumped when a barrier releases
    alignas(64) std::atomic<int64_t> chunk_{0};         // next chunk of the current phase
    alignas(64) std::atomic<bool> aborted_{false};      // a kernel threw in this run
    std::atomic<bool> stop_{false};
    std::atomic<bool> paused_{false};
    std::atomic<uint64_t> wake_seq_{0};  // bumped by resume()
    std::atomic<bool> running_{false};
    std::atomic<int> parked_{0};  // threads inside the parking section

    // Current job: written by the caller before the epoch bump, read by workers after it.
    Kernel kernel_ = nullptr;
    void* arg_ = nullptr;

    std::mutex error_mu_;
    std::exception_ptr error_;

    std::mutex park_mu_;
    std::condition_variable park_cv_;

    std::vector<std::thread> workers_;
};

}  // namespace tessel::cpu

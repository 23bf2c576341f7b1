#include "cpu/threadpool.hpp"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <system_error>

#include "tessel/errors.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace tessel::cpu {

namespace {

// Yields granted to a waiter of an oversubscribed pool before it parks: more threads than
// CPUs means a spinning thread steals time from the ones it waits for.
constexpr int kOversubscribedYields = 16;
// Upper bound of the exponential spin backoff, in pause hints between two checks.
constexpr int kMaxSpinBackoff = 64;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__) || defined(__arm__)
    asm volatile("yield" ::: "memory");
#endif
}

// CPUs this process may run on (affinity mask, indexed by cpu number); empty if unknown.
std::vector<bool> affinity_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) return {};
    std::vector<bool> allowed(CPU_SETSIZE, false);
    for (int i = 0; i < CPU_SETSIZE; ++i) allowed[static_cast<size_t>(i)] = CPU_ISSET(i, &set);
    return allowed;
}

int available_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        const int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    const unsigned hc = std::thread::hardware_concurrency();
    return hc > 0 ? static_cast<int>(hc) : 1;
}

bool is_cpu_entry(const std::string& name, size_t& index) {
    if (name.size() < 4 || name.size() > 12 || name.compare(0, 3, "cpu") != 0) return false;
    size_t v = 0;
    for (size_t i = 3; i < name.size(); ++i) {
        if (name[i] < '0' || name[i] > '9') return false;
        v = v * 10 + static_cast<size_t>(name[i] - '0');
    }
    index = v;
    return true;
}

std::string read_first_line(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::string line;
    if (!in || !std::getline(in, line)) return {};
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r' || line.back() == '\t')) line.pop_back();
    return line;
}

}  // namespace

CoreTopology core_topology(const std::string& cpu_dir, const std::vector<bool>& allowed) {
    namespace fs = std::filesystem;
    std::map<std::string, int> cores;  // sibling list -> capacity (-1: no cpu_capacity file)
    std::error_code ec;
    fs::directory_iterator it(cpu_dir, ec);
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
        size_t index = 0;
        if (!is_cpu_entry(it->path().filename().string(), index)) continue;
        if (!allowed.empty() && (index >= allowed.size() || !allowed[index])) continue;
        for (const char* file : {"topology/core_cpus_list", "topology/thread_siblings_list"}) {
            std::string siblings = read_first_line(it->path() / file);
            if (siblings.empty()) continue;
            const std::string text = read_first_line(it->path() / "cpu_capacity");
            int capacity = -1;
            std::from_chars(text.data(), text.data() + text.size(), capacity);
            auto [core, added] = cores.emplace(std::move(siblings), capacity);
            if (!added) core->second = std::max(core->second, capacity);
            break;
        }
    }
    CoreTopology t;
    t.cores = static_cast<int>(cores.size());
    std::set<int, std::greater<int>> capacities;
    for (const auto& [siblings, capacity] : cores)
        if (capacity >= 0) capacities.insert(capacity);
    t.capacities.assign(capacities.begin(), capacities.end());
    for (const auto& [siblings, capacity] : cores)
        if (capacities.empty() || capacity == *capacities.begin()) ++t.big_cores;
    return t;
}

int count_physical_cores(const std::string& cpu_dir, const std::vector<bool>& allowed) {
    return core_topology(cpu_dir, allowed).cores;
}

CoreTopology core_topology() { return core_topology("/sys/devices/system/cpu", affinity_cpus()); }

int default_thread_count() {
    const int n = core_topology().default_threads();
    if (n > 0) return n;
    const unsigned hc = std::thread::hardware_concurrency();
    return hc > 0 ? static_cast<int>(hc) : 1;
}

// ---- ThreadContext ------------------------------------------------------------------------

void ThreadContext::barrier() {
    if (nth == 1) {
        pool_->chunk_.store(0, std::memory_order_relaxed);  // run_solo(), or a pool of one
        return;
    }
    pool_->barrier_wait();
}

ThreadContext ThreadContext::alone() const {
    pool_->chunk_.store(0, std::memory_order_relaxed);
    return ThreadContext(pool_, 0, 1);
}

int64_t ThreadContext::next_chunk() { return pool_->chunk_.fetch_add(1, std::memory_order_relaxed); }

void ThreadContext::check_chunk_args(int64_t n_items, int64_t chunk_size) {
    if (n_items < 0 || chunk_size < 1) {
        throw Error(ErrorCode::InvalidArgument,
                    "thread pool: chunked loop needs n_items >= 0 and chunk_size >= 1 (got n_items=" +
                        std::to_string(n_items) + ", chunk_size=" + std::to_string(chunk_size) + ")");
    }
}

// ---- ThreadPool ---------------------------------------------------------------------------

ThreadPool::ThreadPool(int n_threads, WaitPolicy policy)
    : n_threads_(n_threads), policy_(policy), oversubscribed_(n_threads > available_cpus()) {
    if (n_threads < 1) {
        throw Error(ErrorCode::InvalidArgument,
                    "thread pool: thread count must be >= 1 (got " + std::to_string(n_threads) + ")");
    }
    if (policy.spin.count() < 0 || policy.yield.count() < 0) {
        throw Error(ErrorCode::InvalidArgument, "thread pool: wait policy durations must be >= 0");
    }
    workers_.reserve(static_cast<size_t>(n_threads - 1));
    try {
        for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this, i] { worker_main(i); });
    } catch (...) {
        stop_.store(true);
        wake_parked();
        for (auto& t : workers_) t.join();
        throw;
    }
}

ThreadPool::~ThreadPool() {
    stop_.store(true);
    wake_parked();
    for (auto& t : workers_) t.join();
}

void ThreadPool::pause() { paused_.store(true); }

void ThreadPool::resume() {
    paused_.store(false);
    wake_seq_.fetch_add(1);
    wake_parked();
}

// Wakes every parked thread if there is one. Callers change the state a waiter checks first;
// both sides use sequentially consistent operations, so either the waiter sees the new state
// before it sleeps or this sees the waiter in parked_ (and the mutex orders the notify after
// the waiter's final check).
void ThreadPool::wake_parked() {
    if (parked_.load() == 0) return;
    { std::lock_guard<std::mutex> lock(park_mu_); }
    park_cv_.notify_all();
}

template <class Pred>
void ThreadPool::wait_until(Pred&& pred, bool idle) {
    using Clock = std::chrono::steady_clock;
    if (pred()) return;
    for (;;) {
        const auto start = Clock::now();
        auto parking_now = [&] { return idle && paused_.load(std::memory_order_relaxed); };
        if (!oversubscribed_ && !parking_now()) {
            int backoff = 1;
            while (Clock::now() - start < policy_.spin) {
                for (int i = 0; i < backoff; ++i) cpu_relax();
                if (pred()) return;
                if (parking_now()) break;
                if (backoff < kMaxSpinBackoff) backoff *= 2;
            }
        }
        if (!parking_now()) {
            if (oversubscribed_) {
                for (int i = 0; i < kOversubscribedYields && !parking_now(); ++i) {
                    std::this_thread::yield();
                    if (pred()) return;
                }
            } else {
                while (Clock::now() - start < policy_.spin + policy_.yield && !parking_now()) {
                    std::this_thread::yield();
                    if (pred()) return;
                }
            }
        }
        // Park. An idle worker also wakes on resume() and then spins again.
        const uint64_t seq = wake_seq_.load();
        bool done = false;
        {
            std::unique_lock<std::mutex> lock(park_mu_);
            parked_.fetch_add(1);
            for (;;) {
                if (pred()) { done = true; break; }
                if (idle && wake_seq_.load() != seq) break;
                park_cv_.wait(lock);
            }
            parked_.fetch_sub(1);
        }
        if (done) return;
    }
}

void ThreadPool::worker_main(int ith) {
    uint64_t seen = 0;
    for (;;) {
        wait_until([&] { return epoch_.load() != seen || stop_.load(); }, true);
        if (stop_.load()) return;  // the destructor never runs during a run
        seen = epoch_.load();
        execute(ith);
        if (pending_.fetch_sub(1) == 1) wake_parked();  // the caller may be parked
    }
}

void ThreadPool::execute(int ith) {
    ThreadContext ctx(this, ith, n_threads_);
    try {
        kernel_(arg_, ctx);
    } catch (const Abort&) {
        // released from a barrier because another thread failed; that one reports
    } catch (...) {
        record_exception(std::current_exception());
    }
}

void ThreadPool::record_exception(std::exception_ptr e) {
    {
        std::lock_guard<std::mutex> lock(error_mu_);
        if (!error_) error_ = std::move(e);
    }
    aborted_.store(true);
    wake_parked();  // threads parked in a barrier must see the abort
}

void ThreadPool::barrier_wait() {
    if (aborted_.load()) throw Abort{};
    const uint64_t gen = barrier_gen_.load();
    if (barrier_count_.fetch_add(1) == n_threads_ - 1) {
        // Last to arrive: everyone else is waiting, so the counters can be reset before release.
        barrier_count_.store(0, std::memory_order_relaxed);
        chunk_.store(0, std::memory_order_relaxed);
        barrier_gen_.fetch_add(1);
        wake_parked();
        return;
    }
    wait_until([&] { return barrier_gen_.load() != gen || aborted_.load(); }, false);
    if (barrier_gen_.load() == gen) throw Abort{};
}

void ThreadPool::run_solo(Kernel kernel, void* arg) {
    if (kernel == nullptr) throw Error(ErrorCode::InvalidArgument, "thread pool: run_solo() with a null kernel");
    if (running_.exchange(true)) {
        throw Error(ErrorCode::InvalidArgument,
                    "thread pool: run_solo() called while a run is in progress (nested or concurrent)");
    }
    chunk_.store(0, std::memory_order_relaxed);
    ThreadContext ctx(this, 0, 1);
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
    barrier_count_.store(0, std::memory_order_relaxed);
    chunk_.store(0, std::memory_order_relaxed);
    pending_.store(n_threads_ - 1, std::memory_order_relaxed);
    if (n_threads_ > 1) {
        epoch_.fetch_add(1);  // publishes the job (seq_cst includes release)
        wake_parked();
    }
    execute(0);
    if (n_threads_ > 1) wait_until([&] { return pending_.load() == 0; }, false);
    std::exception_ptr e;
    {
        std::lock_guard<std::mutex> lock(error_mu_);
        e = std::exchange(error_, nullptr);
    }
    running_.store(false);
    if (e) std::rethrow_exception(e);
}

}  // namespace tessel::cpu

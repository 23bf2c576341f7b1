// Dynamic chunks (cpu/threadpool.hpp): a thread slower than the others takes fewer chunks. The
// slow thread is made slow deterministically through the test hook, with no clock involved:
// holding a chunk, it waits until the other threads have completed D more chunks (or the phase
// has none left to claim). So in the time it runs one chunk the others run D, and it can take at
// most N / (D + 1) + 1 of N chunks whatever the scheduling. No assertion on time; the waits are
// bounded only by a large safety limit, which makes a broken pool fail instead of hang.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "cpu/threadpool.hpp"
#include "cpu/topology.hpp"

namespace tessel::cpu {
namespace {

constexpr int64_t kChunks = 400;
constexpr int64_t kLead = 4;  // D: chunks the others complete while the slow thread holds one
constexpr auto kSafetyLimit = std::chrono::seconds(30);

struct SlowThread {
    int slow = 0;                         // ith of the slow thread
    std::atomic<int64_t> claimed{0};      // chunks claimed by any thread
    std::atomic<int64_t> others_done{0};  // chunks the other threads completed
    std::atomic<bool> timed_out{false};   // a wait hit the safety limit (then no thread waits again)

    // Holding: the slow thread waits for kLead completions by the others, or for no chunk left.
    static void hook(void* arg, int ith, ThreadPool::HookPoint point) {
        auto& s = *static_cast<SlowThread*>(arg);
        if (point != ThreadPool::HookPoint::Holding) return;
        s.claimed.fetch_add(1);
        if (ith != s.slow) return;
        const int64_t target = s.others_done.load() + kLead;
        const auto limit = std::chrono::steady_clock::now() + kSafetyLimit;
        while (s.others_done.load() < target && s.claimed.load() < kChunks && !s.timed_out.load()) {
            if (std::chrono::steady_clock::now() > limit) s.timed_out.store(true);
            std::this_thread::yield();
        }
    }
};

// One run of kChunks one-item chunks on an n_threads pool with thread `slow` held back.
void check_slow_thread(int n_threads, int slow) {
    SCOPED_TRACE(testing::Message() << n_threads << " threads, thread " << slow << " slow");
    ThreadPool pool(n_threads);
    SlowThread s;
    s.slow = slow;
    std::vector<int> runs(kChunks, 0);             // plain memory: the run's end must order it
    std::vector<int64_t> taken(n_threads, 0);      // chunks per thread, each slot written by its thread
    pool.set_test_hook(&SlowThread::hook, &s);  // also ends any bench from an earlier run
    pool.run([&](ThreadContext& ctx) {
        ctx.for_chunks(kChunks, 1, [&](int64_t c, int64_t) {
            ++runs[static_cast<size_t>(c)];
            ++taken[static_cast<size_t>(ctx.ith)];
            if (ctx.ith != slow) s.others_done.fetch_add(1);
        });
    });
    pool.set_test_hook(nullptr, nullptr);

    EXPECT_FALSE(s.timed_out.load()) << "the slow thread waited " << kSafetyLimit.count() << " s for the others";
    for (int64_t c = 0; c < kChunks; ++c) EXPECT_EQ(runs[static_cast<size_t>(c)], 1) << "chunk " << c;
    EXPECT_EQ(s.claimed.load(), kChunks);
    int64_t total = 0;
    for (int64_t t : taken) total += t;
    EXPECT_EQ(total, kChunks);
    // Each chunk the slow thread takes, but its last, lets the others complete kLead chunks first.
    const int64_t slow_taken = taken[static_cast<size_t>(slow)];
    EXPECT_LE(slow_taken, kChunks / (kLead + 1) + 1);
    EXPECT_EQ(s.others_done.load(), kChunks - slow_taken);  // the fast threads took the rest
}

TEST(ThreadPoolChunks, SlowThreadOfTwoTakesAtMostItsShare) {
    if (available_cpus() < 2) GTEST_SKIP() << "one CPU: a run has only the caller";
    for (int slow = 0; slow < 2; ++slow) check_slow_thread(2, slow);
}

TEST(ThreadPoolChunks, SlowThreadOfThreeTakesAtMostItsShare) {
    if (available_cpus() < 2) GTEST_SKIP() << "one CPU: a run has only the caller";
    for (int slow = 0; slow < 3; ++slow) check_slow_thread(3, slow);
}

}  // namespace
}  // namespace tessel::cpu

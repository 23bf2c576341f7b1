// Thread pool: every index runs once per run, barriers order memory, chunks are handed out once,
// exceptions reach the caller, oversubscription and parking work, shutdown joins.
//
// No test asserts speed. Shared data checked across barriers is deliberately plain (non-atomic)
// memory, so the ThreadSanitizer build verifies the pool's ordering guarantees.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cpu/threadpool.hpp"
#include "support/test_paths.hpp"
#include "tessel/errors.hpp"

using namespace tessel;
using namespace tessel::cpu;
using namespace std::chrono_literals;

namespace {

// A policy that parks at every wait: exercises the sleep/wake paths on each barrier and run.
constexpr WaitPolicy kParkAlways{0us, 0us};

// Counts per thread index over `runs` runs; each must be exactly `runs`.
void expect_each_index_once(ThreadPool& pool, int runs) {
    const int n = pool.size();
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    std::atomic<int> bad_nth{0};
    for (int r = 0; r < runs; ++r) {
        pool.run([&](ThreadContext& ctx) {
            if (ctx.nth != n) bad_nth.fetch_add(1);
            hits[static_cast<size_t>(ctx.ith)].fetch_add(1);
        });
    }
    EXPECT_EQ(bad_nth.load(), 0);
    for (int i = 0; i < n; ++i) EXPECT_EQ(hits[static_cast<size_t>(i)].load(), runs) << "ith=" << i;
}

// Phase k: thread i writes slot i; after the barrier every thread reads every slot.
// Returns the number of stale reads (0 when the barrier orders memory).
int barrier_phase_errors(ThreadPool& pool, int iterations) {
    const int n = pool.size();
    std::vector<int64_t> slots(static_cast<size_t>(n), -1);
    std::vector<int> errors(static_cast<size_t>(n), 0);  // each thread writes its own entry
    pool.run([&](ThreadContext& ctx) {
        for (int k = 0; k < iterations; ++k) {
            slots[static_cast<size_t>(ctx.ith)] = int64_t{k} * 1000 + ctx.ith;
            ctx.barrier();
            for (int j = 0; j < ctx.nth; ++j) {
                if (slots[static_cast<size_t>(j)] != int64_t{k} * 1000 + j) ++errors[static_cast<size_t>(ctx.ith)];
            }
            ctx.barrier();  // nobody overwrites a slot before all have read it
        }
    });
    return std::accumulate(errors.begin(), errors.end(), 0);
}

}  // namespace

TEST(ThreadPool, EachThreadIndexRunsOncePerRun) {
    for (int n : {1, 2, 3, 8}) {
        ThreadPool pool(n);
        EXPECT_EQ(pool.size(), n);
        expect_each_index_once(pool, 100);
    }
}

TEST(ThreadPool, ThreadZeroIsTheCallerAndWorkersAreDistinct) {
    ThreadPool pool(4);
    std::vector<std::thread::id> ids(4);
    pool.run([&](ThreadContext& ctx) { ids[static_cast<size_t>(ctx.ith)] = std::this_thread::get_id(); });
    EXPECT_EQ(ids[0], std::this_thread::get_id());
    EXPECT_EQ(std::set<std::thread::id>(ids.begin(), ids.end()).size(), 4u);
}

TEST(ThreadPool, RawKernelFormAndStdFunction) {
    ThreadPool pool(3);
    std::atomic<int> sum{0};
    pool.run([](void* arg, ThreadContext& ctx) { static_cast<std::atomic<int>*>(arg)->fetch_add(ctx.ith + 1); },
             &sum);
    EXPECT_EQ(sum.load(), 1 + 2 + 3);
    const std::function<void(ThreadContext&)> fn = [&](ThreadContext& ctx) { sum.fetch_add(10 * ctx.ith); };
    pool.run(fn);
    EXPECT_EQ(sum.load(), 6 + 0 + 10 + 20);
}

TEST(ThreadPool, KernelWritesVisibleToCallerAfterRun) {
    ThreadPool pool(4);
    std::vector<int> out(4 * 1000, 0);  // plain memory, written by workers, read by the caller
    for (int r = 1; r <= 20; ++r) {
        pool.run([&](ThreadContext& ctx) {
            for (int i = 0; i < 1000; ++i) out[static_cast<size_t>(ctx.ith * 1000 + i)] = r * (ctx.ith + 1);
        });
        for (int t = 0; t < 4; ++t) ASSERT_EQ(out[static_cast<size_t>(t * 1000 + 999)], r * (t + 1));
    }
}

TEST(ThreadPool, BarrierMakesPhaseWritesVisible) {
    for (int n : {2, 4}) {  // on a 2-core machine: the spinning and the oversubscribed policy
        ThreadPool pool(n);
        EXPECT_EQ(barrier_phase_errors(pool, 2000), 0) << "n_threads=" << n;
    }
}

TEST(ThreadPool, BarrierWithParkingAtEveryWait) {
    ThreadPool pool(3, kParkAlways);
    EXPECT_EQ(barrier_phase_errors(pool, 300), 0);
    expect_each_index_once(pool, 50);
}

TEST(ThreadPool, BarrierReusableAcrossRuns) {
    ThreadPool pool(3);
    for (int r = 0; r < 50; ++r) ASSERT_EQ(barrier_phase_errors(pool, 10), 0) << "run " << r;
}

TEST(ThreadPool, ChunkCounterHandsOutEachChunkOnce) {
    ThreadPool pool(4);
    constexpr int64_t kChunks = 20000;
    for (int r = 0; r < 5; ++r) {  // the counter restarts at 0 every run
        std::vector<std::atomic<int>> hits(kChunks);
        std::vector<int64_t> per_thread(4, 0);
        pool.run([&](ThreadContext& ctx) {
            for (int64_t c = ctx.next_chunk(); c < kChunks; c = ctx.next_chunk()) {
                hits[static_cast<size_t>(c)].fetch_add(1);
                ++per_thread[static_cast<size_t>(ctx.ith)];
            }
        });
        int wrong = 0;
        for (auto& h : hits) wrong += h.load() != 1;
        EXPECT_EQ(wrong, 0) << "run " << r;
        EXPECT_EQ(std::accumulate(per_thread.begin(), per_thread.end(), int64_t{0}), kChunks);
    }
}

TEST(ThreadPool, ChunkCounterRestartsAfterBarrier) {
    ThreadPool pool(3);
    std::vector<int> first(100, 0), second(50, 0);  // plain memory: each chunk owned by one thread
    pool.run([&](ThreadContext& ctx) {
        for (int64_t c = ctx.next_chunk(); c < 100; c = ctx.next_chunk()) first[static_cast<size_t>(c)] += 1;
        ctx.barrier();
        for (int64_t c = ctx.next_chunk(); c < 50; c = ctx.next_chunk()) second[static_cast<size_t>(c)] += 2;
    });
    EXPECT_EQ(std::count(first.begin(), first.end(), 1), 100);
    EXPECT_EQ(std::count(second.begin(), second.end(), 2), 50);
}

TEST(ThreadPool, ParallelForChunksCoversRangeOnce) {
    ThreadPool pool(3);
    constexpr int64_t kItems = 1003;
    std::vector<int> seen(kItems, 0);
    std::atomic<int> calls{0}, bad_ranges{0};
    pool.parallel_for_chunks(kItems, 10, [&](int64_t begin, int64_t end) {
        calls.fetch_add(1);
        if (begin % 10 != 0 || end - begin != (begin == 1000 ? 3 : 10)) bad_ranges.fetch_add(1);
        for (int64_t i = begin; i < end; ++i) seen[static_cast<size_t>(i)] += 1;
    });
    EXPECT_EQ(calls.load(), 101);
    EXPECT_EQ(bad_ranges.load(), 0);
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), kItems);

    pool.parallel_for_chunks(0, 4, [&](int64_t, int64_t) { calls.fetch_add(1); });
    EXPECT_EQ(calls.load(), 101);
}

TEST(ThreadPool, ForChunksInsideKernelAfterBarrier) {
    // The packed-matmul shape: pack by thread index, barrier, then dynamic chunks of columns.
    ThreadPool pool(4);
    std::vector<int> packed(64, 0), out(1000, 0);
    pool.run([&](ThreadContext& ctx) {
        for (int i = ctx.ith; i < 64; i += ctx.nth) packed[static_cast<size_t>(i)] = i;
        ctx.barrier();
        ctx.for_chunks(1000, 7, [&](int64_t b, int64_t e) {
            for (int64_t c = b; c < e; ++c) out[static_cast<size_t>(c)] = packed[static_cast<size_t>(c % 64)] + 1;
        });
    });
    for (int c = 0; c < 1000; ++c) ASSERT_EQ(out[static_cast<size_t>(c)], c % 64 + 1) << c;
}

TEST(ThreadPool, InvalidArgumentsThrow) {
    for (int n : {0, -1, -200}) {
        try {
            ThreadPool pool(n);
            FAIL() << "no error for n_threads=" << n;
        } catch (const Error& e) {
            EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
        }
    }
    EXPECT_THROW(ThreadPool(2, WaitPolicy{-1us, 0us}), Error);
    ThreadPool pool(2);
    auto code_of = [](auto&& f) {
        try {
            f();
        } catch (const Error& e) {
            return e.code();
        }
        return ErrorCode::Io;  // "no error"
    };
    EXPECT_EQ(code_of([&] { pool.parallel_for_chunks(10, 0, [](int64_t, int64_t) {}); }), ErrorCode::InvalidArgument);
    EXPECT_EQ(code_of([&] { pool.parallel_for_chunks(-1, 4, [](int64_t, int64_t) {}); }), ErrorCode::InvalidArgument);
    EXPECT_EQ(code_of([&] { pool.run(ThreadPool::Kernel{nullptr}, nullptr); }), ErrorCode::InvalidArgument);
    expect_each_index_once(pool, 3);  // still usable
}

TEST(ThreadPool, ExceptionFromWorkerReachesCaller) {
    ThreadPool pool(4);
    std::atomic<int> finished{0};
    try {
        pool.run([&](ThreadContext& ctx) {
            if (ctx.ith == 2) throw std::runtime_error("kernel failed on thread 2");
            ctx.barrier();  // would wait forever for thread 2 without the abort
            ctx.barrier();
            finished.fetch_add(1);
        });
        FAIL() << "no exception";
    } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "kernel failed on thread 2");
    }
    EXPECT_EQ(finished.load(), 0);
    expect_each_index_once(pool, 10);  // the pool recovers
    EXPECT_EQ(barrier_phase_errors(pool, 50), 0);
}

TEST(ThreadPool, ExceptionFromCallerThreadAndErrorTypeKept) {
    ThreadPool pool(3, kParkAlways);
    try {
        pool.run([&](ThreadContext& ctx) {
            if (ctx.ith == 0) throw Error(ErrorCode::Unsupported, "thread 0 says no");
            ctx.barrier();
        });
        FAIL() << "no exception";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::Unsupported);
        EXPECT_STREQ(e.what(), "thread 0 says no");
    }
    // every thread throws: exactly one exception arrives
    EXPECT_THROW(pool.run([](ThreadContext& ctx) { throw std::out_of_range(std::to_string(ctx.ith)); }),
                 std::out_of_range);
    expect_each_index_once(pool, 5);
}

TEST(ThreadPool, NestedRunIsRejected) {
    ThreadPool pool(2);
    try {
        pool.run([&](ThreadContext& ctx) {
            if (ctx.ith == 1) pool.run([](ThreadContext&) {});
        });
        FAIL() << "no exception";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    }
    expect_each_index_once(pool, 3);
}

TEST(ThreadPool, TwoHundredThreadsOnFewCores) {
    constexpr int kThreads = 200;
    ThreadPool pool(kThreads);
    expect_each_index_once(pool, 3);
    EXPECT_EQ(barrier_phase_errors(pool, 3), 0);
    // dynamic work: sum of 0..99999 through the chunk counter
    std::vector<int64_t> partial(kThreads, 0);
    pool.run([&](ThreadContext& ctx) {
        ctx.for_chunks(100000, 97, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) partial[static_cast<size_t>(ctx.ith)] += i;
        });
    });
    EXPECT_EQ(std::accumulate(partial.begin(), partial.end(), int64_t{0}), int64_t{99999} * 100000 / 2);
}

TEST(ThreadPool, PauseResumeThenRun) {
    ThreadPool pool(4);
    expect_each_index_once(pool, 5);
    EXPECT_FALSE(pool.paused());
    pool.pause();
    EXPECT_TRUE(pool.paused());
    std::this_thread::sleep_for(5ms);  // let the workers reach their parked state
    expect_each_index_once(pool, 5);   // runs still work while paused
    EXPECT_EQ(barrier_phase_errors(pool, 20), 0);
    pool.resume();
    EXPECT_FALSE(pool.paused());
    expect_each_index_once(pool, 5);
    pool.pause();
    pool.resume();  // back-to-back is harmless
    EXPECT_EQ(barrier_phase_errors(pool, 20), 0);
}

TEST(ThreadPool, SingleThreadRunsOnCaller) {
    ThreadPool pool(1);
    int calls = 0;
    std::thread::id id;
    std::vector<int> hits(10, 0);
    pool.run([&](ThreadContext& ctx) {
        ++calls;
        id = std::this_thread::get_id();
        EXPECT_EQ(ctx.ith, 0);
        EXPECT_EQ(ctx.nth, 1);
        ctx.barrier();
        for (int64_t c = ctx.next_chunk(); c < 10; c = ctx.next_chunk()) ++hits[static_cast<size_t>(c)];
        ctx.barrier();
        EXPECT_EQ(ctx.next_chunk(), 0);  // the barrier restarts the counter
    });
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(id, std::this_thread::get_id());
    EXPECT_EQ(std::count(hits.begin(), hits.end(), 1), 10);
    EXPECT_THROW(pool.run([](ThreadContext&) { throw std::logic_error("x"); }), std::logic_error);
    pool.pause();
    pool.resume();
    expect_each_index_once(pool, 2);
}

// run_solo() on a pool of four: only the caller runs, barriers and chunks behave as in a pool of
// one, and the pool's next full run still uses every thread.
TEST(ThreadPool, RunSoloUsesTheCallerAlone) {
    ThreadPool pool(4);
    expect_each_index_once(pool, 1);  // workers now spin, waiting for the next run
    int calls = 0;
    std::thread::id id;
    std::vector<int> hits(10, 0);
    pool.run_solo([&](ThreadContext& ctx) {
        ++calls;
        id = std::this_thread::get_id();
        EXPECT_EQ(ctx.ith, 0);
        EXPECT_EQ(ctx.nth, 1);
        ctx.barrier();
        ctx.for_chunks(10, 3, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) ++hits[static_cast<size_t>(i)];
        });
        ctx.barrier();
        EXPECT_EQ(ctx.next_chunk(), 0);
    });
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(id, std::this_thread::get_id());
    EXPECT_EQ(std::count(hits.begin(), hits.end(), 1), 10);
    EXPECT_THROW(pool.run_solo([](ThreadContext&) { throw std::logic_error("x"); }), std::logic_error);
    EXPECT_THROW(pool.run_solo([&](ThreadContext&) { pool.run_solo([](ThreadContext&) {}); }), Error);
    expect_each_index_once(pool, 3);
    EXPECT_EQ(barrier_phase_errors(pool, 5), 0);
}

TEST(ThreadPool, DestructorJoinsWhileIdleOrSpinning) {
    { ThreadPool pool(4); }  // workers never ran
    {
        ThreadPool pool(4);
        expect_each_index_once(pool, 1);
    }  // workers are spinning right after a run
    { ThreadPool pool(200); }
    SUCCEED();
}

TEST(ThreadPool, DestructorJoinsWhileParked) {
    {
        ThreadPool pool(4, kParkAlways);
        expect_each_index_once(pool, 2);
        std::this_thread::sleep_for(5ms);  // workers park at once under this policy
    }
    {
        ThreadPool pool(4);
        expect_each_index_once(pool, 2);
        pool.pause();
        std::this_thread::sleep_for(5ms);
    }
    SUCCEED();
}

TEST(ThreadPool, DefaultThreadCountIsPositive) {
    const int n = default_thread_count();
    EXPECT_GE(n, 1);
    EXPECT_LE(n, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

TEST(ThreadPool, CountPhysicalCoresFromSysfsLayout) {
    namespace fs = std::filesystem;
    const fs::path dir = test::temp_dir();
    auto add_cpu = [&](int cpu, const char* file, const char* siblings) {
        const fs::path topo = dir / ("cpu" + std::to_string(cpu)) / "topology";
        fs::create_directories(topo);
        std::ofstream(topo / file) << siblings << "\n";
    };
    // 4 cores x 2 SMT threads: cpuN and cpuN+4 are siblings
    for (int c = 0; c < 8; ++c) {
        const std::string s = std::to_string(c % 4) + "," + std::to_string(c % 4 + 4);
        add_cpu(c, "core_cpus_list", s.c_str());
    }
    fs::create_directories(dir / "cpufreq");  // non-cpu entries are ignored
    fs::create_directories(dir / "cpuidle");
    EXPECT_EQ(count_physical_cores(dir.string()), 4);

    // affinity restricted to cpu0, cpu4 (siblings) and cpu1: two cores
    std::vector<bool> allowed(8, false);
    allowed[0] = allowed[4] = allowed[1] = true;
    EXPECT_EQ(count_physical_cores(dir.string(), allowed), 2);

    // older kernels: only thread_siblings_list
    const fs::path old_dir = dir / "old";
    for (int c = 0; c < 3; ++c) {
        const fs::path topo = old_dir / ("cpu" + std::to_string(c)) / "topology";
        fs::create_directories(topo);
        std::ofstream(topo / "thread_siblings_list") << (c < 2 ? "0-1" : "2") << "\n";
    }
    EXPECT_EQ(count_physical_cores(old_dir.string()), 2);

    EXPECT_EQ(count_physical_cores((dir / "missing").string()), 0);
}

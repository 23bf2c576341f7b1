// Memory-bandwidth probe: the roofline a memory-bound kernel (MUL_MAT at M = 1) is judged against.
//
//   Read/MiB:<s>/threads:<t>  every thread sums 64-bit words of its contiguous share of s MiB
//                             (a plain loop the compiler vectorizes; integer sums keep every load)
//   Copy/MiB:<s>/threads:<t>  every thread copies its share of s/2 MiB to the other half with the
//                             C library's memcpy
// Counter `bytes` (per second of wall time): bytes read, plus bytes written for Copy (the STREAM
// convention: a store's read-for-ownership is not counted). Threads are tessel's ThreadPool, as
// the kernels use. Sizes: 1024 MiB, far above the last-level cache (a DRAM figure), and 16 MiB,
// above the per-core L2 but inside a large L3 (the figure for a model that fits in L3).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "benchmarks.hpp"
#include "cpu/threadpool.hpp"

namespace tessel::bench {
namespace {

constexpr int64_t kSizesMiB[] = {16, 1024};
constexpr int64_t kThreads[] = {1, 2};
/// A page-touched, 64-byte aligned buffer of at least `bytes` shared by the probes (grown on
/// demand, kept until exit). Throws std::bad_alloc when the memory is not there.
uint8_t* arena(size_t bytes) {
    struct Free {
        void operator()(uint8_t* p) const { std::free(p); }
    };
    static std::unique_ptr<uint8_t, Free> buf;
    static size_t size = 0;
    if (bytes > size) {
        buf.reset();
        size = 0;
        buf.reset(static_cast<uint8_t*>(std::aligned_alloc(64, bytes)));
        if (!buf) throw std::bad_alloc();
        std::memset(buf.get(), 0x5a, bytes);
        size = bytes;
    }
    return buf.get();
}

/// This part's share [begin, end) of n bytes, in 64-byte lines.
void share(size_t n, const cpu::ThreadContext& ctx, size_t& begin, size_t& end) {
    const size_t lines = n / 64, per = lines / static_cast<size_t>(ctx.nth), extra = lines % static_cast<size_t>(ctx.nth);
    const size_t i = static_cast<size_t>(ctx.ith);
    begin = 64 * (i * per + std::min(i, extra));
    end = begin + 64 * (per + (i < extra ? 1 : 0));
}

uint64_t sum_words(const uint64_t* p, size_t n) {
    uint64_t s = 0;
    for (size_t i = 0; i < n; ++i) s += p[i];
    return s;
}

void bench_read(benchmark::State& state) {
    try {
        const size_t bytes = static_cast<size_t>(state.range(0)) << 20;
        const uint8_t* buf = arena(bytes);
        cpu::ThreadPool pool(static_cast<int>(state.range(1)));
        std::vector<uint64_t> sums(static_cast<size_t>(pool.size()) * 8);  // a cache line each
        for (auto _ : state) {
            pool.run_parts(pool.size(), [&](cpu::ThreadContext& part) {
                size_t b = 0, e = 0;
                share(bytes, part, b, e);
                sums[static_cast<size_t>(part.ith) * 8] = sum_words(reinterpret_cast<const uint64_t*>(buf + b), (e - b) / 8);
            });
            benchmark::DoNotOptimize(sums.data());
            benchmark::ClobberMemory();
        }
        state.counters["bytes"] = benchmark::Counter(static_cast<double>(bytes), benchmark::Counter::kIsIterationInvariantRate);
    } catch (const std::exception& e) {
        state.SkipWithError(e.what());
    }
}

void bench_copy(benchmark::State& state) {
    try {
        const size_t half = (static_cast<size_t>(state.range(0)) << 20) / 2;
        uint8_t* buf = arena(2 * half);
        cpu::ThreadPool pool(static_cast<int>(state.range(1)));
        for (auto _ : state) {
            pool.run_parts(pool.size(), [&](cpu::ThreadContext& part) {
                size_t b = 0, e = 0;
                share(half, part, b, e);
                std::memcpy(buf + half + b, buf + b, e - b);
            });
            benchmark::ClobberMemory();
        }
        state.counters["bytes"] = benchmark::Counter(static_cast<double>(2 * half), benchmark::Counter::kIsIterationInvariantRate);
    } catch (const std::exception& e) {
        state.SkipWithError(e.what());
    }
}

}  // namespace

void register_bandwidth_benchmarks() {
    for (auto [name, fn] : {std::pair{"Read", &bench_read}, std::pair{"Copy", &bench_copy}}) {
        benchmark::internal::Benchmark* b = benchmark::RegisterBenchmark(name, fn);
        b->ArgNames({"MiB", "threads"})->UseRealTime()->Unit(benchmark::kMillisecond);
        for (int64_t s : kSizesMiB)
            for (int64_t t : kThreads) b->Args({s, t});
    }
}

}  // namespace tessel::bench

// The int8 peak of each usable vector tier (int8_peak.hpp), as benchmarks `Int8Peak/<tier>` (FLOPs
// counts int8 ops per second of CPU time) and as the yardstick of the packed GEMM benchmarks'
// `peak_fraction`.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <ctime>
#include <iterator>
#include <string>

#include "benchmarks.hpp"
#include "int8_peak.hpp"

namespace tessel::bench {
namespace {

struct PeakLoop {
    CpuTier tier;
    int32_t (*loop)(int64_t iters);
    double ops_per_iter;
};

#if defined(__x86_64__)
constexpr PeakLoop kLoops[] = {{CpuTier::Avx512Vnni, vnni_peak_loop, kVnniPeakOps}, {CpuTier::Avx2, maddubs_peak_loop, kMaddubsPeakOps}};
#else
constexpr PeakLoop kLoops[] = {{CpuTier::Scalar, nullptr, 0}};
#endif

const PeakLoop* loop_for(CpuTier tier) {
    for (const PeakLoop& l : kLoops)
        if (l.loop && l.tier == tier && tier_supported(usable_cpu_features(), tier)) return &l;
    return nullptr;
}

/// Ops per second of CPU time (as the Packed benchmarks count), the best of a few short runs.
double measure(const PeakLoop& l) {
    constexpr int64_t kIters = 1 << 20;  // about 4 ms at one vpdpbusd zmm per cycle
    double best = 0;
    for (int run = 0; run < 7; ++run) {
        const double t0 = thread_seconds();
        benchmark::DoNotOptimize(l.loop(kIters));
        const double s = thread_seconds() - t0;
        best = std::max(best, l.ops_per_iter * static_cast<double>(kIters) / s);
    }
    return best;
}

void bench_peak(benchmark::State& state, const PeakLoop& l) {
    constexpr int64_t kIters = 1 << 16;
    for (auto _ : state) benchmark::DoNotOptimize(l.loop(kIters));
    state.counters["FLOPs"] = benchmark::Counter(l.ops_per_iter * kIters, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

double thread_seconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double int8_peak_ops(CpuTier tier) {
    const PeakLoop* l = loop_for(tier);
    if (!l) return 0;
    static double cached[std::size(kLoops)] = {};
    double& c = cached[l - kLoops];
    if (c == 0) c = measure(*l);
    return c;
}

void register_int8_peak_benchmarks() {
    for (const PeakLoop& l : kLoops) {
        if (!loop_for(l.tier)) continue;
        const std::string name = std::string("Int8Peak/") + tier_name(l.tier);
        benchmark::RegisterBenchmark(name.c_str(), [&l](benchmark::State& state) { bench_peak(state, l); });
    }
}

}  // namespace tessel::bench

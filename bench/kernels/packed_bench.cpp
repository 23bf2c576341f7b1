// Packed micro-kernel benchmarks (src/cpu/packed): every kernel this CPU can run, called directly
// on one thread over the whole weight (no graph, no driver), so kernels of different tiers on the
// same weight type compare one to one. Named `Packed/<kernel>/K:<k>/M:<m>`, N = 1536 weight rows,
// K = 576 and 1536 (the default model's hidden and FFN sizes); M = 1 runs the GEMV function (its
// name is the label), larger M the GEMM. The weights (~1-2.4 MB packed) stay in the L2/L3 cache:
// the figure is the kernel's arithmetic rate, not a DRAM one. Activations are packed once, outside
// the timed loop.
//
// Counter (per second of wall time): FLOPs = 2·M·N·K per call.
#include <benchmark/benchmark.h>

#include <exception>
#include <random>
#include <string>
#include <vector>

#include "benchmarks.hpp"
#include "core/cpu_features.hpp"
#include "cpu/packed/kernel.hpp"
#include "quant/quant.hpp"

namespace tessel::bench {
namespace {

constexpr int64_t kN = 1536;
constexpr int64_t kKs[] = {576, 1536};
/// GEMV, the sizes around the matrix unit's crossover (min_m), and a prompt.
constexpr int64_t kBatches[] = {1, 4, 8, 16, 32, 512};

std::vector<float> uniform(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = u(rng);
    return v;
}

void bench_packed(benchmark::State& state, const cpu::packed::Kernel& kern) {
    namespace pk = cpu::packed;
    try {
        const int64_t k = state.range(0), m = state.range(1);
        const DType wt = kern.format->weight;
        const std::vector<float> wf = uniform(static_cast<size_t>(kN * k), 1234);
        std::vector<uint8_t> rows(dtype_row_bytes(wt, k) * static_cast<size_t>(kN));
        quant::quantize_rows(wt, wf.data(), rows.data(), kN, k);
        std::vector<uint8_t> rhs(pk::rhs_packed_bytes(kern, kN, k));
        kern.format->pack(rows.data(), rhs.data(), kN, k);
        const std::vector<float> x = uniform(static_cast<size_t>(m * k), 99);
        std::vector<uint8_t> lhs(pk::lhs_packed_bytes(kern, m, k));
        kern.pack_lhs(x.data(), static_cast<size_t>(k) * sizeof(float), lhs.data(), m, k);
        std::vector<float> out(static_cast<size_t>(m * kN));
        const pk::GemmArgs args{lhs.data(), pk::lhs_row_bytes(kern, k), rhs.data(), out.data(), kN * sizeof(float), m, kN, k};
        const auto fn = m == 1 ? kern.gemv : kern.gemm;
        for (auto _ : state) {
            fn(args);
            benchmark::DoNotOptimize(out.data());
            benchmark::ClobberMemory();
        }
        state.SetLabel(m == 1 ? kern.gemv_name : kern.name);
        state.counters["FLOPs"] = benchmark::Counter(2.0 * static_cast<double>(m * kN * k), benchmark::Counter::kIsIterationInvariantRate);
    } catch (const std::exception& e) {
        state.SkipWithError(e.what());
    }
}

}  // namespace

void register_packed_benchmarks() {
    for (const cpu::packed::Kernel* kern : cpu::packed::all_kernels()) {
        if (!cpu::packed::usable(*kern, usable_cpu_features())) continue;
        const std::string name = std::string("Packed/") + kern->name;
        benchmark::internal::Benchmark* b = benchmark::RegisterBenchmark(
            name.c_str(), [kern](benchmark::State& state) { bench_packed(state, *kern); });
        b->ArgNames({"K", "M"})->UseRealTime()->Unit(benchmark::kMicrosecond);
        for (int64_t k : kKs)
            for (int64_t m : kBatches) b->Args({k, m});
    }
}

}  // namespace tessel::bench

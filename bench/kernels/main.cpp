// bench_kernels entry point: registers every suite and runs Google Benchmark with its own flags
// (--benchmark_filter, --benchmark_min_time, --benchmark_format, ...). The CPU tier comes from
// TESSEL_CPU_ISA as for every tessel binary; a bad value prints one error line and exits 1, and so
// does a --benchmark_filter that matches no benchmark.
#include <benchmark/benchmark.h>

#include <cstdio>

#include "benchmarks.hpp"
#include "core/cpu_features.hpp"
#include "cpu/cpu_backend.hpp"
#include "tessel/errors.hpp"

int main(int argc, char** argv) {
    try {
        const char* tier = tessel::tier_name(tessel::usable_tier());  // applies TESSEL_CPU_ISA
        benchmark::AddCustomContext("tessel_cpu_tier", tier);
        benchmark::AddCustomContext("tessel_cpu", tessel::cpu::cpu_device().description());
        tessel::bench::register_mul_mat_benchmarks();
        tessel::bench::register_flash_attn_benchmarks();
        tessel::bench::register_bandwidth_benchmarks();
        tessel::bench::register_int8_peak_benchmarks();
        tessel::bench::register_packed_benchmarks();
        tessel::bench::register_npu_tiled_benchmarks();
        tessel::bench::register_npu_link_benchmarks();
        tessel::bench::register_npu_allreduce_benchmarks();
        tessel::bench::register_npu_tile_benchmarks();
    } catch (const tessel::Error& e) {
        std::fprintf(stderr, "bench_kernels: error: %s\n", e.what());
        return 1;
    }
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
    const size_t ran = benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return ran > 0 ? 0 : 1;  // a filter that matches nothing is a mistake (Google Benchmark says which)
}

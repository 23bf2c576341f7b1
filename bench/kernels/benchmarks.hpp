// bench_kernels: Google Benchmark suites of tessel's CPU kernels (see bench/README.md).
// Each unit registers its benchmarks; main.cpp runs them with Google Benchmark's flags.
#pragma once

namespace tessel::bench {

/// MUL_MAT per weight type, shape, batch M and thread count (mul_mat_bench.cpp).
void register_mul_mat_benchmarks();
/// Memory read and copy bandwidth per buffer size and thread count (bandwidth_bench.cpp).
void register_bandwidth_benchmarks();
/// Packed micro-kernels, called directly on one thread, per kernel, shape and M (packed_bench.cpp).
void register_packed_benchmarks();
/// NPU tiled-weight repack / unpack over the default model's weights vs memcpy (npu_tiled_bench.cpp).
void register_npu_tiled_benchmarks();
/// NPU link round trip of one batch of NOPs per link (npu_link_bench.cpp).
void register_npu_link_benchmarks();
/// NPU device tiled matmul micro-kernel, called directly on one thread, per type, ISA build, shape and M
/// (npu_tile_bench.cpp).
void register_npu_tile_benchmarks();

}  // namespace tessel::bench

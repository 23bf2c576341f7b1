// bench_kernels: Google Benchmark suites of tessel's CPU kernels (see bench/README.md).
// Each unit registers its benchmarks; main.cpp runs them with Google Benchmark's flags.
#pragma once

#include <cstddef>
#include <cstdint>

#include "npu/host/config.hpp"

namespace tessel::bench {

/// A weight matrix shape of the micro-kernel benchmarks (K inputs, N rows), named as in
/// mul_mat_bench.cpp so that figures are compared by name.
struct KernelShape {
    const char* name;
    int64_t K, N;
};
/// The shapes and M of the directly called micro-kernels (packed_bench.cpp, npu_tile_bench.cpp):
/// one stream's decode step, four streams' (a server's batch), a prompt.
inline constexpr KernelShape kKernelShapes[] = {{"4096x4096", 4096, 4096}, {"smollm2_ffn_down", 1536, 576}};
inline constexpr int64_t kKernelBatches[] = {1, 4, 512};
/// Batches up to this many rows stream their weights from memory, as a decode step does.
inline constexpr int64_t kKernelStreamedM = 16;
/// Weight bytes one M = 1 iteration reads (as MulMat's kStreamBytes): copies of the weights past
/// the last-level cache.
inline constexpr size_t kKernelStreamBytes = size_t{1} << 30;

/// MUL_MAT per weight type, shape, batch M and thread count (mul_mat_bench.cpp).
void register_mul_mat_benchmarks();
/// FLASH_ATTN_EXT per fast attention kernel, shape and thread count (flash_attn_bench.cpp).
void register_flash_attn_benchmarks();
/// Memory read and copy bandwidth per buffer size and thread count (bandwidth_bench.cpp).
void register_bandwidth_benchmarks();
/// Packed micro-kernels, called directly on one thread, per kernel, shape and M (packed_bench.cpp).
void register_packed_benchmarks();
/// The int8 peak of each usable vector tier, register-only loops (int8_peak_bench.cpp).
void register_int8_peak_benchmarks();
/// NPU tiled-weight repack / unpack over the default model's weights vs memcpy (npu_tiled_bench.cpp).
void register_npu_tiled_benchmarks();
/// NPU link round trip of one batch of NOPs per link (npu_link_bench.cpp).
void register_npu_link_benchmarks();
/// TESSEL_NPU_* configuration over `kind`, the device executable defaulting to the `tessel` beside
/// bench_kernels (npu_link_bench.cpp).
npu::Config npu_bench_config(npu::LinkKind kind);
/// NPU all-reduce of a 576 x 512 F32 tensor over 2-4 sessions per link and mode (npu_allreduce_bench.cpp).
void register_npu_allreduce_benchmarks();
/// NPU device tiled matmul micro-kernel, called directly on one thread, per type, ISA build, shape and M
/// (npu_tile_bench.cpp).
void register_npu_tile_benchmarks();

}  // namespace tessel::bench

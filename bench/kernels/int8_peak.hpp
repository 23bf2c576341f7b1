// Register-only int8 multiply-add loops that measure a vector unit's int8 peak in the running
// binary (int8_peak_<isa>.cpp, one translation unit per ISA, entered only after a feature check):
// independent accumulator chains and no memory operand, so the loop is bound by the unit's
// throughput alone (12 vpdpbusd chains cover a 12-cycle latency at one instruction per cycle; the
// AVX2 chains depend only through a 1-cycle add).
#pragma once

#include <cstdint>

#include "core/cpu_features.hpp"

namespace tessel::bench {

inline constexpr int kVnniChains = 12;
inline constexpr int kMaddubsChains = 8;

/// AVX-512 VNNI: per iteration, one vpdpbusd zmm in each of kVnniChains chains (64 u8 x s8
/// products each). Returns a value that depends on every chain, so the loop is kept.
int32_t vnni_peak_loop(int64_t iters);
/// int8 ops (2 per product) of one vnni_peak_loop iteration.
inline constexpr double kVnniPeakOps = 2.0 * 64 * kVnniChains;

/// AVX2: per iteration, one maddubs + madd + add (s32) ymm triple in each of kMaddubsChains
/// chains (32 u8 x s8 products).
int32_t maddubs_peak_loop(int64_t iters);
/// int8 ops (2 per product) of one maddubs_peak_loop iteration.
inline constexpr double kMaddubsPeakOps = 2.0 * 32 * kMaddubsChains;

/// The int8 peak (ops per second, one thread) of the unit that tier's packed integer kernels use:
/// avx512vnni -> the VNNI loop, avx2 -> the maddubs loop; 0 for other tiers (AMX, F16's FMA) or
/// when the usable features lack the tier. Measured on first use (best of several short runs), then cached.
double int8_peak_ops(CpuTier tier);

/// Seconds of CPU time the calling thread has used (the clock of int8_peak_ops).
double thread_seconds();

}  // namespace tessel::bench

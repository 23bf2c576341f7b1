// The seeded categorical draw that ends the sampling chain (include/tessel/sampling.hpp, stage 7).
#pragma once

#include <cstdint>
#include <random>
#include <span>

namespace tessel::sample {

/// u = r * 2^-32 in [0, 1) from one output r of `rng`. Written out (not a std:: distribution)
/// so every standard library gives the same value.
double uniform01(std::mt19937& rng);

/// Index of the first weight whose running sum exceeds u * sum(weights); weights >= 0 with a
/// positive sum, u in [0, 1). Falls back to the last positive weight when rounding leaves
/// the running sum below the target at the end.
size_t pick_weighted(std::span<const double> weights, double total, double u);

}  // namespace tessel::sample

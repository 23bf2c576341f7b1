// Truncation stages: each drops candidates from the list and never empties it.
// Definitions and sources: include/tessel/sampling.hpp, stages 3-5.
#pragma once

#include <cstdint>
#include <vector>

#include "sample/candidates.hpp"

namespace tessel::sample {

/// Keeps the k first candidates in candidate order; k <= 0 keeps all. Leaves the list sorted
/// when k > 0.
void top_k(CandidateList& list, int32_t k);

/// Keeps the shortest prefix in candidate order whose softmax probability mass (over the
/// current list) is >= p; p >= 1 keeps all. Leaves the list sorted when p < 1. `scratch` holds
/// the softmax weights.
void top_p(CandidateList& list, float p, std::vector<double>& scratch);

/// Keeps candidates with l >= l_max + ln(p), i.e. probability >= p times the largest; p <= 0
/// keeps all. Keeps the list's order.
void min_p(CandidateList& list, float p);

}  // namespace tessel::sample

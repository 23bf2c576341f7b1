// Truncation stages: each drops candidates from the list and never empties it.
// Definitions and sources: include/tessel/sampling.hpp, stages 3-8.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "sample/candidates.hpp"

namespace tessel::sample {

/// Keeps candidates with l >= l_max - n * sigma, sigma the population standard deviation of the
/// finite logits; n <= 0 keeps all. Keeps the list's order.
void top_n_sigma(CandidateList& list, float n);

/// Keeps the k first candidates in candidate order; k <= 0 keeps all. Leaves the list sorted
/// when k > 0.
void top_k(CandidateList& list, int32_t k);

/// Locally typical sampling: keeps the shortest prefix, in order of |-ln p_i - H| (ties in
/// candidate order), whose probability mass is > p; p >= 1 keeps all. Leaves the list unsorted
/// when p < 1. `scratch` holds the softmax weights.
void typical_p(CandidateList& list, float p, std::vector<double>& scratch);

/// Keeps the shortest prefix in candidate order whose softmax probability mass (over the
/// current list) is >= p; p >= 1 keeps all. Leaves the list sorted when p < 1. `scratch` holds
/// the softmax weights.
void top_p(CandidateList& list, float p, std::vector<double>& scratch);

/// Keeps candidates with l >= l_max + ln(p), i.e. probability >= p times the largest; p <= 0
/// keeps all. Keeps the list's order.
void min_p(CandidateList& list, float p);

/// XTC: when probability > 0, threshold <= 0.5 and the list has two or more candidates, draws
/// u = uniform01(rng); when u < probability and two or more candidates have probability
/// >= threshold, drops all of them but the least probable. Otherwise draws nothing and keeps
/// all. Leaves the list sorted when it draws. `scratch` holds the softmax weights.
void xtc(CandidateList& list, float probability, float threshold, std::mt19937& rng, std::vector<double>& scratch);

}  // namespace tessel::sample

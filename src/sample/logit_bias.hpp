// Logit bias: fixed per-token additions, the chain's first stage (include/tessel/sampling.hpp,
// stage 0).
#pragma once

#include <span>

#include "sample/candidates.hpp"
#include "tessel/sampling.hpp"

namespace tessel::sample {

/// l[token] += bias for every entry, in order (entries for one token add up). `list` must be in
/// id order with items[i].id == i; every entry's token must be < list size.
void apply_logit_bias(CandidateList& list, std::span<const LogitBias> biases);

}  // namespace tessel::sample

// Logit bias: fixed per-token additions, the chain's first stage (include/tessel/sampling.hpp,
// stage 0).
#pragma once

#include <optional>
#include <span>

#include "sample/candidates.hpp"
#include "tessel/sampling.hpp"

namespace tessel::sample {

/// l[token] += bias for every entry, in order (entries for one token add up). `list` must be in
/// id order with items[i].id == i; every entry's token must be < list size.
void apply_logit_bias(CandidateList& list, std::span<const LogitBias> biases);

/// The greedy pick of `logits` (n_vocab floats) with `biases` added, without building a
/// candidate list: the lowest id among the largest biased logits, as apply_logit_bias then argmax
/// give. nullopt where the list path must decide (and name its error): a NaN or +inf logit, every
/// logit -inf, the largest logit's own token biased, or more than 64 bias entries.
std::optional<int32_t> greedy_with_bias(std::span<const float> logits, std::span<const LogitBias> biases);

}  // namespace tessel::sample

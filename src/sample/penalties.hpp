// Repetition, frequency and presence penalties over a window of recently accepted tokens.
// Formulas and their sources: include/tessel/sampling.hpp, stage 1.
#pragma once

#include <cstdint>
#include <span>

#include "sample/candidates.hpp"

namespace tessel::sample {

struct PenaltyParams {
    float repeat = 1.0f;     ///< divides positive logits, multiplies the others
    float frequency = 0.0f;  ///< subtracted once per occurrence
    float presence = 0.0f;   ///< subtracted once when the token occurs at all
};

/// Applies the penalties for the tokens of `window` (any order) to the items of `list` (any
/// order; a token it no longer holds is skipped).
void apply_penalties(CandidateList& list, std::span<const int32_t> window, const PenaltyParams& p);

}  // namespace tessel::sample

// DRY ("don't repeat yourself"): penalizes the tokens that would extend a repeat of the recent
// text. Definition and sources: include/tessel/sampling.hpp, stage 2.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "sample/candidates.hpp"
#include "tessel/sampling.hpp"

namespace tessel::sample {

struct DryParams {
    float multiplier = 0.0f;
    float base = 1.75f;
    int32_t allowed_length = 2;
};

/// Sequence breakers as token sequences: a head token and the tokens that must follow it. A
/// token whose text contains a whole breaker string has an empty tail.
class DryBreakers {
public:
    DryBreakers() = default;
    /// Every way the vocabulary spells each breaker: tokens containing it (empty tail), and
    /// tokens ending with a proper prefix of it followed by vocab.tokenize of the rest (when
    /// vocab.tokenize is set). Breakers must be non-empty.
    DryBreakers(std::span<const std::string> breakers, const SamplerVocab& vocab);

    /// The tails of the breakers whose head is `token` (none: nullptr).
    const std::vector<std::vector<int32_t>>* tails(int32_t token) const;
    /// True when `token`'s text contains a whole breaker.
    bool is_single_token(int32_t token) const;

private:
    void add(int32_t head, std::vector<int32_t> tail);
    std::unordered_map<int32_t, std::vector<std::vector<int32_t>>> by_head_;
};

/// Scratch buffers reused between calls.
struct DryScratch {
    std::vector<int32_t> z;                                  // Z-array of the reversed history
    std::vector<std::pair<int32_t, int32_t>> repeats;        // (token, repeat length)
};

/// Applies DRY for `history` (oldest first) to the items of `list` (any order; a token it no
/// longer holds is skipped). The penalty is capped at the largest float so a penalized logit
/// stays finite.
void apply_dry(CandidateList& list, std::span<const int32_t> history, const DryParams& p, const DryBreakers& breakers,
               DryScratch& scratch);

}  // namespace tessel::sample

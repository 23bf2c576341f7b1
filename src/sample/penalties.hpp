// Repetition, frequency and presence penalties over a window of recently accepted tokens.
// Formulas and their sources: include/tessel/sampling.hpp, stage 1.
#pragma once

#include <cstdint>
#include <vector>

#include "sample/candidates.hpp"

namespace tessel::sample {

struct PenaltyParams {
    float repeat = 1.0f;     ///< divides positive logits, multiplies the others
    float frequency = 0.0f;  ///< subtracted once per occurrence
    float presence = 0.0f;   ///< subtracted once when the token occurs at all
};

/// The last `capacity` accepted tokens (a ring; capacity 0 keeps nothing).
class TokenWindow {
public:
    explicit TokenWindow(size_t capacity) : capacity_(capacity) {}

    void push(int32_t token);
    void clear() { tokens_.clear(); next_ = 0; }

    /// The held tokens in no particular order.
    const std::vector<int32_t>& tokens() const { return tokens_; }

private:
    size_t capacity_;
    std::vector<int32_t> tokens_;
    size_t next_ = 0;  // slot overwritten by the next push once full
};

/// Applies the penalties to `list`, whose items must be in id order with items[i].id == i
/// (as CandidateList::assign leaves them). Tokens of the window must be < list size.
void apply_penalties(CandidateList& list, const TokenWindow& window, const PenaltyParams& p);

}  // namespace tessel::sample

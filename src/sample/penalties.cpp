#include "sample/penalties.hpp"

#include <algorithm>

namespace tessel::sample {

void TokenWindow::push(int32_t token) {
    if (capacity_ == 0) return;
    if (tokens_.size() < capacity_) {
        tokens_.push_back(token);
        return;
    }
    tokens_[next_] = token;
    next_ = (next_ + 1) % capacity_;
}

void apply_penalties(CandidateList& list, const TokenWindow& window, const PenaltyParams& p) {
    // Count occurrences by sorting a copy: the window is small (repeat_last_n tokens).
    std::vector<int32_t> seen = window.tokens();
    std::sort(seen.begin(), seen.end());
    for (size_t i = 0; i < seen.size();) {
        size_t end = i;
        while (end < seen.size() && seen[end] == seen[i]) ++end;
        const float count = static_cast<float>(end - i);
        float& l = list.items[static_cast<size_t>(seen[i])].logit;
        l = l <= 0.0f ? l * p.repeat : l / p.repeat;
        l -= count * p.frequency + p.presence;
        i = end;
    }
}

}  // namespace tessel::sample

#include "sample/penalties.hpp"

#include <algorithm>
#include <vector>

namespace tessel::sample {

void apply_penalties(CandidateList& list, std::span<const int32_t> window, const PenaltyParams& p) {
    // Count occurrences by sorting a copy of the window.
    std::vector<int32_t> seen(window.begin(), window.end());
    std::sort(seen.begin(), seen.end());
    for (size_t i = 0; i < seen.size();) {
        size_t end = i;
        while (end < seen.size() && seen[end] == seen[i]) ++end;
        const float count = static_cast<float>(end - i);
        if (Candidate* c = find_id(list, seen[i])) {
            float& l = c->logit;
            l = l <= 0.0f ? l * p.repeat : l / p.repeat;
            l -= count * p.frequency + p.presence;
        }
        i = end;
    }
}

}  // namespace tessel::sample

#include "sample/truncation.hpp"

#include <algorithm>
#include <cmath>

namespace tessel::sample {

void top_k(CandidateList& list, int32_t k) {
    if (k <= 0) return;
    const size_t keep = std::min(static_cast<size_t>(k), list.items.size());
    if (!list.sorted) {
        std::partial_sort(list.items.begin(), list.items.begin() + static_cast<std::ptrdiff_t>(keep),
                          list.items.end(), candidate_before);
        list.sorted = true;
    }
    list.items.resize(keep);
}

void top_p(CandidateList& list, float p, std::vector<double>& scratch) {
    if (p >= 1.0f) return;
    list.sort();
    const double total = softmax_weights(list, scratch);
    const double target = static_cast<double>(p) * total;
    double mass = 0.0;
    size_t keep = list.items.size();
    for (size_t i = 0; i < list.items.size(); ++i) {
        mass += scratch[i];
        if (mass >= target) {
            keep = i + 1;
            break;
        }
    }
    list.items.resize(keep);
}

void min_p(CandidateList& list, float p) {
    if (p <= 0.0f) return;
    const double threshold = static_cast<double>(list.items[argmax(list)].logit) + std::log(static_cast<double>(p));
    std::erase_if(list.items, [threshold](const Candidate& c) { return static_cast<double>(c.logit) < threshold; });
}

}  // namespace tessel::sample

#include "sample/candidates.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "tessel/errors.hpp"

namespace tessel::sample {

void CandidateList::assign(std::span<const float> logits) {
    items.resize(logits.size());
    bool bad = false;  // a NaN or +inf somewhere: found and named below, off the hot loop
    for (size_t i = 0; i < logits.size(); ++i) {
        const float l = logits[i];
        bad |= !(l < std::numeric_limits<float>::infinity());
        items[i] = Candidate{static_cast<int32_t>(i), l};
    }
    if (bad)
        for (size_t i = 0; i < logits.size(); ++i)
            if (!(logits[i] < std::numeric_limits<float>::infinity()))
                throw Error(ErrorCode::InvalidArgument, std::string("sampler: logit of token ") + std::to_string(i) + " is " +
                                                            (std::isnan(logits[i]) ? "NaN" : "+inf"));
    sorted = false;
    require_finite("");
}

void CandidateList::require_finite(const char* when) const {
    if (std::none_of(items.begin(), items.end(), [](const Candidate& c) { return std::isfinite(c.logit); }))
        throw Error(ErrorCode::InvalidArgument,
                    std::string("sampler: every logit is -inf") + when + " (no token can be sampled)");
}

void CandidateList::sort() {
    if (sorted) return;
    std::sort(items.begin(), items.end(), candidate_before);
    sorted = true;
}

size_t argmax(const CandidateList& list) {
    // Four independent running bests kept in registers, merged at the end: one compare chain
    // through memory was the slow part of a greedy step over a vocabulary.
    const std::vector<Candidate>& v = list.items;
    size_t best[4] = {0, 0, 0, 0};
    size_t i = 0;
    for (; i + 4 <= v.size(); i += 4)
        for (size_t u = 0; u < 4; ++u) best[u] = candidate_before(v[i + u], v[best[u]]) ? i + u : best[u];
    for (; i < v.size(); ++i) best[0] = candidate_before(v[i], v[best[0]]) ? i : best[0];
    for (size_t u = 1; u < 4; ++u) best[0] = candidate_before(v[best[u]], v[best[0]]) ? best[u] : best[0];
    return best[0];
}

Candidate* find_id(CandidateList& list, int32_t id) {
    const auto i = static_cast<size_t>(id);
    if (id >= 0 && i < list.items.size() && list.items[i].id == id) return &list.items[i];
    const auto it = std::find_if(list.items.begin(), list.items.end(), [id](const Candidate& c) { return c.id == id; });
    return it == list.items.end() ? nullptr : &*it;
}

double softmax_weights(const CandidateList& list, std::vector<double>& weights) {
    const double max_logit = list.items[argmax(list)].logit;
    weights.resize(list.items.size());
    double total = 0.0;
    for (size_t i = 0; i < list.items.size(); ++i) {
        weights[i] = std::exp(static_cast<double>(list.items[i].logit) - max_logit);
        total += weights[i];
    }
    return total;
}

void apply_temperature(CandidateList& list, float temp) {
    for (Candidate& c : list.items) c.logit /= temp;
}

}  // namespace tessel::sample

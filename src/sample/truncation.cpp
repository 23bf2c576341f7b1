#include "sample/truncation.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "sample/draw.hpp"

namespace tessel::sample {

void top_n_sigma(CandidateList& list, float n) {
    if (n <= 0.0f || list.items.size() <= 1) return;
    double max_logit = -INFINITY, sum = 0.0, count = 0.0;
    for (const Candidate& c : list.items) {
        if (!std::isfinite(c.logit)) continue;
        max_logit = std::max(max_logit, static_cast<double>(c.logit));
        sum += c.logit;
        count += 1.0;
    }
    const double mean = sum / count;  // count >= 1: the list always holds a finite logit
    double squares = 0.0;
    for (const Candidate& c : list.items)
        if (std::isfinite(c.logit)) squares += (c.logit - mean) * (c.logit - mean);
    const double threshold = max_logit - static_cast<double>(n) * std::sqrt(squares / count);
    std::erase_if(list.items, [threshold](const Candidate& c) { return static_cast<double>(c.logit) < threshold; });
}

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

void typical_p(CandidateList& list, float p, std::vector<double>& scratch) {
    if (p >= 1.0f) return;
    list.sort();  // so equal scores keep candidate order below
    const double total = softmax_weights(list, scratch);
    const double log_total = std::log(total);
    const double max_logit = list.items.front().logit;
    // ln p_i = l_i - l_max - ln(total); H = -sum p_i ln p_i over p_i > 0.
    double entropy = 0.0;
    for (size_t i = 0; i < list.items.size(); ++i)
        if (scratch[i] > 0.0) entropy -= scratch[i] / total * (list.items[i].logit - max_logit - log_total);
    std::vector<double> score(list.items.size());
    for (size_t i = 0; i < list.items.size(); ++i)
        score[i] = scratch[i] > 0.0 ? std::abs(-(list.items[i].logit - max_logit - log_total) - entropy) : INFINITY;
    std::vector<size_t> order(list.items.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return score[a] < score[b]; });
    const double target = static_cast<double>(p) * total;
    double mass = 0.0;
    size_t keep = order.size();
    for (size_t i = 0; i < order.size(); ++i) {
        mass += scratch[order[i]];
        if (mass > target) {
            keep = i + 1;
            break;
        }
    }
    std::vector<Candidate> kept(keep);
    for (size_t i = 0; i < keep; ++i) kept[i] = list.items[order[i]];
    list.items = std::move(kept);
    list.sorted = false;
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

void xtc(CandidateList& list, float probability, float threshold, std::mt19937& rng, std::vector<double>& scratch) {
    if (probability <= 0.0f || threshold > 0.5f || list.items.size() < 2) return;
    if (uniform01(rng) >= static_cast<double>(probability)) return;
    list.sort();
    const double total = softmax_weights(list, scratch);
    size_t above = 0;  // candidates with probability >= threshold: a prefix in candidate order
    while (above < list.items.size() && scratch[above] / total >= static_cast<double>(threshold)) ++above;
    if (above >= 2) list.items.erase(list.items.begin(), list.items.begin() + static_cast<std::ptrdiff_t>(above - 1));
}

}  // namespace tessel::sample

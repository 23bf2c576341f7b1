#include "sample/mirostat.hpp"

#include <algorithm>
#include <cmath>

#include "sample/draw.hpp"

namespace tessel::sample {
namespace {

// The candidates that can be drawn (finite logits), in candidate order.
void keep_finite_sorted(CandidateList& list) {
    std::erase_if(list.items, [](const Candidate& c) { return !std::isfinite(c.logit); });
    list.sort();
}

// Draws from the list's softmax and moves mu toward tau by the drawn token's surprise.
int32_t draw_and_update(const CandidateList& list, const MirostatParams& p, double& mu, std::mt19937& rng,
                        std::vector<double>& scratch) {
    const double total = softmax_weights(list, scratch);
    const size_t pick = pick_weighted(scratch, total, uniform01(rng));
    const double surprise = -std::log2(scratch[pick] / total);
    mu -= static_cast<double>(p.eta) * (surprise - static_cast<double>(p.tau));
    return list.items[pick].id;
}

}  // namespace

int32_t mirostat_v1(CandidateList& list, const MirostatParams& p, double& mu, std::mt19937& rng,
                    std::vector<double>& scratch) {
    keep_finite_sorted(list);
    const size_t n = list.items.size();
    // Zipf exponent s by least squares over the top 100: b_i = ln(p_i / p_{i+1}) = l_i - l_{i+1}.
    double sum_tb = 0.0, sum_tt = 0.0;
    for (size_t i = 0; i + 1 < std::min<size_t>(100, n); ++i) {
        const double t = std::log(static_cast<double>(i + 2) / static_cast<double>(i + 1));
        const double b = static_cast<double>(list.items[i].logit) - list.items[i + 1].logit;
        sum_tb += t * b;
        sum_tt += t * t;
    }
    const double s = sum_tb / sum_tt;  // NaN for one candidate: keeps 1 below
    const double e = s - 1.0;
    const double k = std::pow(e * std::exp2(mu) / (1.0 - std::pow(static_cast<double>(p.n_vocab), -e)), 1.0 / s);
    const size_t keep = !(k >= 1.0) ? 1 : k >= static_cast<double>(n) ? n : static_cast<size_t>(k);
    list.items.resize(keep);
    return draw_and_update(list, p, mu, rng, scratch);
}

int32_t mirostat_v2(CandidateList& list, const MirostatParams& p, double& mu, std::mt19937& rng,
                    std::vector<double>& scratch) {
    keep_finite_sorted(list);
    const double total = softmax_weights(list, scratch);
    size_t keep = 0;  // the prefix with surprise -log2(p_i) <= mu; at least one
    while (keep < list.items.size() && -std::log2(scratch[keep] / total) <= mu) ++keep;
    list.items.resize(std::max<size_t>(keep, 1));
    return draw_and_update(list, p, mu, rng, scratch);
}

}  // namespace tessel::sample

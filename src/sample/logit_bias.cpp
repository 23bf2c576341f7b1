#include "sample/logit_bias.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tessel::sample {

void apply_logit_bias(CandidateList& list, std::span<const LogitBias> biases) {
    for (const LogitBias& b : biases) list.items[static_cast<size_t>(b.token)].logit += b.bias;
}

std::optional<int32_t> greedy_with_bias(std::span<const float> logits, std::span<const LogitBias> biases) {
    constexpr float kInf = std::numeric_limits<float>::infinity();
    if (logits.empty() || biases.size() > 64) return std::nullopt;
    // The largest raw logit in eight lanes (a max and a sum per lane, a form the compiler
    // vectorizes): a NaN turns its lane's sum NaN, a +inf shows as the maximum; either (and a
    // -inf + +inf false alarm) leaves the decision to the list path. Then its first index.
    constexpr size_t kLanes = 8;
    float m[kLanes], sum[kLanes];
    std::fill(m, m + kLanes, -kInf);
    std::fill(sum, sum + kLanes, 0.0f);
    size_t i = 0;
    for (; i + kLanes <= logits.size(); i += kLanes)
        for (size_t u = 0; u < kLanes; ++u) {
            const float l = logits[i + u];
            m[u] = l > m[u] ? l : m[u];
            sum[u] += l;
        }
    for (; i < logits.size(); ++i) {
        m[0] = logits[i] > m[0] ? logits[i] : m[0];
        sum[0] += logits[i];
    }
    float max = m[0], total = sum[0];
    for (size_t u = 1; u < kLanes; ++u) max = std::max(max, m[u]), total += sum[u];
    if (std::isnan(total) || max == kInf || max == -kInf) return std::nullopt;
    const auto top = static_cast<size_t>(std::find(logits.begin(), logits.end(), max) - logits.begin());
    // the raw winner is the best unbiased token; each biased token competes with its biased value
    auto id = static_cast<int32_t>(top);
    float value = logits[top];
    for (size_t b = 0; b < biases.size(); ++b) {
        const int32_t t = biases[b].token;
        if (t == static_cast<int32_t>(top)) return std::nullopt;
        if (std::any_of(biases.begin(), biases.begin() + static_cast<std::ptrdiff_t>(b), [t](const LogitBias& e) { return e.token == t; }))
            continue;  // summed at its first entry
        float v = logits[static_cast<size_t>(t)];
        for (size_t e = b; e < biases.size(); ++e)
            if (biases[e].token == t) v += biases[e].bias;
        if (v > value || (v == value && t < id)) id = t, value = v;
    }
    return id;
}

}  // namespace tessel::sample

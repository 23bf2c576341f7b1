#include "sample/logit_bias.hpp"

namespace tessel::sample {

void apply_logit_bias(CandidateList& list, std::span<const LogitBias> biases) {
    for (const LogitBias& b : biases) list.items[static_cast<size_t>(b.token)].logit += b.bias;
}

}  // namespace tessel::sample

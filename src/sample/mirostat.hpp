// Mirostat 1 and 2: adaptive truncation that steers the surprise of the drawn tokens toward a
// target, and the draw itself. Definitions and sources: include/tessel/sampling.hpp, Mirostat.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "sample/candidates.hpp"

namespace tessel::sample {

struct MirostatParams {
    float tau = 5.0f;     ///< target surprise, bits
    float eta = 0.1f;     ///< learning rate of mu
    int32_t n_vocab = 0;  ///< Mirostat 1's Zipf estimate uses the vocabulary size
};

/// Mirostat 1 on `list` (logits after temperature): truncates, draws with uniform01(rng) and
/// updates `mu`. Returns the token drawn. `scratch` holds softmax weights.
int32_t mirostat_v1(CandidateList& list, const MirostatParams& p, double& mu, std::mt19937& rng,
                    std::vector<double>& scratch);

/// Mirostat 2 on `list`, as mirostat_v1 (p.n_vocab unused).
int32_t mirostat_v2(CandidateList& list, const MirostatParams& p, double& mu, std::mt19937& rng,
                    std::vector<double>& scratch);

}  // namespace tessel::sample

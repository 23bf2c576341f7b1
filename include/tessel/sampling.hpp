// Token sampling: turns one decode step's logits into a token id.
//
// The chain is llama.cpp's common sampler in its default order (common/sampling.cpp, default
// `--samplers`), restricted to the stages tessel has (no DRY, top-n-sigma, typical-p, XTC):
//
//   1. penalties   over the last `repeat_last_n` accepted tokens. For a token seen `count` > 0
//                  times in that window (llama.cpp llama_sampler_penalties):
//                    l = (l <= 0) ? l * repeat_penalty : l / repeat_penalty
//                        (CTRL, Keskar et al. 2019, arXiv:1909.05858, with llama.cpp's sign rule
//                        so a penalty always lowers the logit)
//                    l = l - count * frequency_penalty - presence_penalty
//                        (the frequency/presence formula of OpenAI's completions API)
//   2. greedy      when temp <= 0: the largest penalized logit wins, the lowest id on ties; the
//                  remaining stages are skipped (they cannot change the arg-max).
//   3. top-k       keep the k largest logits (Fan et al. 2018, arXiv:1805.04833); 0 = off.
//   4. top-p       nucleus (Holtzman et al. 2019, arXiv:1904.09751): softmax over the remaining
//                  candidates, keep the shortest prefix (by descending logit) whose cumulative
//                  probability is >= top_p; 1 = off.
//   5. min-p       keep candidates whose probability is >= min_p times the largest one, i.e.
//                  l >= l_max + ln(min_p) (llama.cpp PR #3841); 0 = off.
//   6. temperature l = l / temp.
//   7. draw        softmax over the remaining candidates, then a categorical draw (see below).
//
// Candidate order, wherever an order matters (top-k, top-p, the draw): descending logit, lower
// token id first on equal logits, so results do not depend on the C++ library's sort.
//
// The draw: u = r * 2^-32 in [0, 1) from one std::mt19937 output r (tessel's own mapping; the
// std:: distributions differ between standard libraries), then the first candidate, in the
// order above, whose cumulative weight exceeds u times the total weight. Weights are
// exp(l - l_max) summed in double. A seed therefore gives the same tokens on every platform.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "tessel/export.h"

namespace tessel {

/// `SamplerParams::seed` value that asks for a random seed (std::random_device), as llama.cpp's
/// `--seed -1`. Sampler::seed() reports the seed actually used.
inline constexpr uint32_t kRandomSeed = 0xFFFFFFFFu;

/// Sampling settings. Defaults are llama.cpp's CLI defaults (common.h common_params_sampling).
/// Sampler's constructor validates them and throws tessel::Error naming the bad field.
struct SamplerParams {
    float temp = 0.8f;               ///< temperature; <= 0 selects greedy decoding. Must be finite.
    int32_t top_k = 40;              ///< >= 0; 0 = off. Values above n_vocab keep every token.
    float top_p = 0.95f;             ///< in (0, 1]; 1 = off.
    float min_p = 0.05f;             ///< in [0, 1]; 0 = off.
    float repeat_penalty = 1.0f;     ///< > 0; 1 = off.
    int32_t repeat_last_n = 64;      ///< >= 0 tokens of history penalized; 0 = off. (llama.cpp's -1,
                                     ///< "context size", is for the caller to map to n_ctx.)
    float presence_penalty = 0.0f;   ///< finite; 0 = off.
    float frequency_penalty = 0.0f;  ///< finite; 0 = off.
    uint32_t seed = kRandomSeed;     ///< RNG seed; kRandomSeed draws one.
};

/// Samples tokens from logits with the chain described at the top of this header.
/// Not thread-safe: one Sampler per generating sequence.
class TESSEL_API Sampler {
public:
    /// Throws tessel::Error (InvalidArgument) naming the field when a parameter is out of range,
    /// or when n_vocab <= 0.
    Sampler(const SamplerParams& params, int32_t n_vocab);
    ~Sampler();
    Sampler(Sampler&&) noexcept;
    Sampler& operator=(Sampler&&) noexcept;
    Sampler(const Sampler&) = delete;
    Sampler& operator=(const Sampler&) = delete;

    /// Picks a token from `logits` (n_vocab floats, logits[i] for token id i; -inf marks a
    /// banned token). Does not record the token: call accept() for the token actually used.
    /// Throws tessel::Error (InvalidArgument) when logits.size() != n_vocab, when a logit is
    /// NaN or +inf, or when every logit is -inf.
    int32_t sample(std::span<const float> logits);

    /// Records `token` in the penalty history (the last repeat_last_n accepted tokens).
    /// Throws tessel::Error (InvalidArgument) when token is not in [0, n_vocab).
    void accept(int32_t token);

    /// Clears the history and restarts the RNG from seed(): the next draws repeat the first ones.
    void reset();

    /// The seed in use: params.seed, or the random one drawn for kRandomSeed.
    uint32_t seed() const;
    const SamplerParams& params() const;
    int32_t n_vocab() const;

private:
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace tessel

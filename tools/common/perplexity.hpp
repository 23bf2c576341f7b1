// Perplexity the way llama.cpp's llama-perplexity computes it (tools/perplexity, default mode):
// the token stream is cut into chunks of n_ctx tokens; each chunk is decoded from an empty cache
// (its first token replaced by BOS when the model adds one), and the tokens of its second half
// are scored: for i in [n_ctx/2, n_ctx-1), nll_i = -log softmax(logits_i)[token_{i+1}].
//   PPL = exp(mean nll);  error = PPL · sqrt((mean nll² - mean² nll) / (count - 1)).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>

#include "tessel/engine.hpp"

namespace tessel::tools {

struct PerplexityResult {
    double ppl = 0.0;
    double error = 0.0;   ///< the estimate's standard error (see above)
    int64_t chunks = 0;   ///< chunks scored
    int64_t scored = 0;   ///< tokens scored
};

/// The text llama-perplexity evaluates for a file's contents: the contents without one trailing
/// '\n' (llama.cpp's common `-f` rule). Returns a view into `contents`.
std::string_view perplexity_text(std::string_view contents);

/// Perplexity of `tokens` with chunks of ctx.n_ctx() tokens, decoded n_batch at a time
/// (bos >= 0: replaces each chunk's first token). progress(chunk, ppl_so_far) is called after
/// every chunk when set. Throws tessel::Error(InvalidArgument) when fewer than 2·n_ctx tokens
/// are given (llama-perplexity's minimum) or n_ctx < 4.
PerplexityResult perplexity(Context& ctx, std::span<const int32_t> tokens, int32_t bos, int64_t n_batch,
                            const std::function<void(int64_t, double)>& progress = {});

}  // namespace tessel::tools

#include "common/perplexity.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "tessel/errors.hpp"

namespace tessel::tools {
namespace {

/// -log softmax(logits)[target], computed in double around the row maximum.
double nll(std::span<const float> logits, int32_t target) {
    const float mx = *std::max_element(logits.begin(), logits.end());
    double sum = 0.0;
    for (float v : logits) sum += std::exp(static_cast<double>(v) - mx);
    return std::log(sum) - (static_cast<double>(logits[static_cast<size_t>(target)]) - mx);
}

}  // namespace

std::string_view perplexity_text(std::string_view contents) {
    if (!contents.empty() && contents.back() == '\n') contents.remove_suffix(1);
    return contents;
}

PerplexityResult perplexity(Context& ctx, std::span<const int32_t> tokens, int32_t bos, int64_t n_batch,
                            const std::function<void(int64_t, double)>& progress) {
    const int64_t n_ctx = ctx.n_ctx();
    if (n_ctx < 4) throw Error(ErrorCode::InvalidArgument, "perplexity needs a context of at least 4 tokens");
    if (static_cast<int64_t>(tokens.size()) < 2 * n_ctx)
        throw Error(ErrorCode::InvalidArgument, "perplexity needs at least 2 x n_ctx = " + std::to_string(2 * n_ctx) +
                                                    " tokens, the text has " + std::to_string(tokens.size()));
    if (n_batch < 1) throw Error(ErrorCode::InvalidArgument, "batch size must be >= 1");
    const int64_t n_chunks = static_cast<int64_t>(tokens.size()) / n_ctx;
    const int64_t first = n_ctx / 2;
    double sum = 0.0, sum2 = 0.0;
    PerplexityResult r;
    for (int64_t c = 0; c < n_chunks; ++c) {
        ctx.clear();
        const int32_t* chunk = tokens.data() + c * n_ctx;
        for (int64_t b0 = 0; b0 < n_ctx; b0 += n_batch) {
            const int64_t b1 = std::min(n_ctx, b0 + n_batch);
            std::vector<BatchToken> batch;
            for (int64_t i = b0; i < b1; ++i)
                batch.push_back({i == 0 && bos >= 0 ? bos : chunk[i], static_cast<int32_t>(i), 0, i >= first && i < n_ctx - 1});
            ctx.decode(batch);
            size_t out = 0;
            for (int64_t i = b0; i < b1; ++i) {
                if (!batch[static_cast<size_t>(i - b0)].logits) continue;
                const double v = nll(ctx.logits(out++), chunk[i + 1]);
                sum += v, sum2 += v * v, ++r.scored;
            }
        }
        ++r.chunks;
        if (progress) progress(c, std::exp(sum / static_cast<double>(r.scored)));
    }
    const double mean = sum / static_cast<double>(r.scored);
    const double var = sum2 / static_cast<double>(r.scored) - mean * mean;
    r.ppl = std::exp(mean);
    r.error = var > 0.0 && r.scored > 1 ? r.ppl * std::sqrt(var / static_cast<double>(r.scored - 1)) : 0.0;
    return r;
}

}  // namespace tessel::tools

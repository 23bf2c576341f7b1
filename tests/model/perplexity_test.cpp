// Perplexity (tools/common/perplexity.hpp) over the public API, on a tiny random llama with a
// synthetic vocabulary (tests/support/tiny_llama.hpp).
#include <gtest/gtest.h>

#include <cmath>

#include "common/perplexity.hpp"
#include "support/test_paths.hpp"
#include "support/tiny_llama.hpp"
#include "tessel/engine.hpp"
#include "tessel/errors.hpp"

namespace tessel {
namespace {

std::vector<int32_t> prompt(size_t n, int32_t salt) {
    std::vector<int32_t> t(n);
    for (size_t i = 0; i < n; ++i) t[i] = static_cast<int32_t>((i * 37 + 11 + static_cast<size_t>(salt) * 13) % 160);
    return t;
}

/// Logits of every token of `tokens` (seq 0, positions from 0), decoded in one batch.
std::vector<std::vector<float>> run(Context& ctx, const std::vector<int32_t>& tokens) {
    std::vector<BatchToken> b;
    for (size_t i = 0; i < tokens.size(); ++i) b.push_back({tokens[i], static_cast<int32_t>(i), 0, true});
    ctx.decode(b);
    std::vector<std::vector<float>> out;
    for (size_t i = 0; i < ctx.n_outputs(); ++i) out.emplace_back(ctx.logits(i).begin(), ctx.logits(i).end());
    return out;
}

// Perplexity scores the second half of each chunk from an empty cache, first token = BOS.
TEST(Perplexity, ScoresTheSecondHalfOfEachChunk) {
    test::TinyLlamaOptions o;
    o.matrix_type = DType::Q8_0;
    o.vocab = true;
    const auto m = Model::load(test::write_tiny_llama(test::temp_dir() / "tiny-perplexity.gguf", o).string());
    ContextParams p;
    p.n_ctx = 16;
    p.n_threads = 2;
    p.flash_attn = FlashAttn::On;
    Context ctx(m, p);
    const auto tokens = prompt(40, 5);  // 2 chunks of 16, 8 tokens left over
    const auto r = tools::perplexity(ctx, tokens, /*bos=*/3, /*n_batch=*/5);
    EXPECT_EQ(r.chunks, 2);
    EXPECT_EQ(r.scored, 2 * 7);
    double sum = 0.0;
    for (int c = 0; c < 2; ++c) {
        Context fresh(m, p);
        std::vector<int32_t> chunk(tokens.begin() + c * 16, tokens.begin() + c * 16 + 16);
        chunk[0] = 3;
        const auto logits = run(fresh, chunk);
        for (int i = 8; i < 15; ++i) {
            double z = 0.0;
            for (float v : logits[i]) z += std::exp(double(v));
            sum += std::log(z) - logits[i][static_cast<size_t>(chunk[i + 1])];
        }
    }
    EXPECT_NEAR(r.ppl, std::exp(sum / 14.0), 1e-6 * r.ppl);
    EXPECT_GT(r.error, 0.0);
    EXPECT_THROW(tools::perplexity(ctx, prompt(31, 0), 3, 8), Error);  // fewer than 2 chunks
}

}  // namespace
}  // namespace tessel

// tessel's perplexity of the default model (SmolLM2-135M-Instruct Q4_1) on tests/data/gpl-3.txt
// against llama.cpp's llama-perplexity at -c 512 -b 512, recorded in
// tests/data/smollm2/perplexity.txt by scripts/reference/make_perplexity.sh. tessel must
// score the same number of chunks and land within kMaxRelDiff of llama.cpp's estimate. The model
// comes from the cache; without it the test fails under CI and otherwise says it did not run.
#include <gtest/gtest.h>

#include "common/model_fetch.hpp"
#include "support/smollm2.hpp"

namespace tessel {
namespace {

constexpr double kMaxRelDiff = 0.005;  // issue 5: within 0.5 % of llama.cpp's perplexity

TEST(SmolLM2Perplexity, WithinHalfPercentOfLlamaCpp) {
    TESSEL_REQUIRE_SMOLLM2();
    test::expect_perplexity_matches(test::smollm2_path(), tools::default_model_source().sha256,
                                    test::data_dir() / "smollm2" / "perplexity.txt", kMaxRelDiff);
}

}  // namespace
}  // namespace tessel

// Sampler::vocab_for and Sampler(params, model) on the default model: the vocabulary view holds
// every token's piece and the end-of-generation ids, and DRY's default breakers come out of its
// texts (a newline token is a breaker, so it is never penalized).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "support/smollm2.hpp"
#include "tessel/engine.hpp"
#include "tessel/sampling.hpp"

namespace tessel {
namespace {

TEST(SamplerVocab, HoldsTheModelsPiecesAndEndOfGenerationIds) {
    TESSEL_REQUIRE_SMOLLM2();
    const auto model = Model::load(test::smollm2_path().string());
    const SamplerVocab v = Sampler::vocab_for(*model);
    const auto n = static_cast<int32_t>(model->info().n_vocab);
    ASSERT_EQ(v.pieces.size(), static_cast<size_t>(n));
    std::vector<int32_t> eog;
    for (int32_t id = 0; id < n; ++id) {
        ASSERT_EQ(v.pieces[static_cast<size_t>(id)], model->token_to_piece(id, true)) << "token " << id;
        if (model->is_eog(id)) eog.push_back(id);
    }
    EXPECT_EQ(v.eog, eog);
    EXPECT_FALSE(eog.empty());
    ASSERT_TRUE(v.tokenize);
    EXPECT_EQ(v.tokenize("Hello: world"), model->tokenize("Hello: world", false, false));
}

TEST(SamplerVocab, DrySequenceBreakersComeFromTheModelsTexts) {
    TESSEL_REQUIRE_SMOLLM2();
    const auto model = Model::load(test::smollm2_path().string());
    const std::vector<int32_t> x = model->tokenize("cat", false, false), nl = model->tokenize("\n", false, false);
    ASSERT_EQ(x.size(), 1u);
    ASSERT_EQ(nl.size(), 1u);
    const int32_t other = model->tokenize("dog", false, false).at(0);
    // History "cat \n cat": a newline next would repeat "cat \n" (length 1, allowed 1). Greedy
    // logits: newline 1, "dog" 0.5, the rest 0; DRY's penalty is 0.8.
    std::vector<float> logits(static_cast<size_t>(model->info().n_vocab), 0.0f);
    logits[static_cast<size_t>(nl[0])] = 1.0f;
    logits[static_cast<size_t>(other)] = 0.5f;
    SamplerParams p;
    p.temp = 0.0f;
    p.dry_multiplier = 0.8f;
    p.dry_allowed_length = 1;
    for (const bool breakers : {true, false}) {
        if (!breakers) p.dry_sequence_breakers.clear();
        Sampler s(p, *model);
        for (int32_t t : {x[0], nl[0], x[0]}) s.accept(t);
        EXPECT_EQ(s.sample(logits), breakers ? nl[0] : other) << (breakers ? "default breakers" : "no breakers");
    }
}

}  // namespace
}  // namespace tessel

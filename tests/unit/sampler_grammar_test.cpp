// Sampler with a grammar (include/tessel/sampling.hpp, "Grammar"): on a tiny vocabulary, the
// chain's pick when the grammar takes it, the constrained chain's pick when it does not.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tessel/errors.hpp"
#include "tessel/sampling.hpp"

using namespace tessel;

namespace {

// Tokens: 0 "a", 1 "b", 2 "ab", 3 "c", 4 end of generation, 5 a control token "<x>".
SamplerVocab tiny_vocab() {
    SamplerVocab v;
    v.pieces = {"a", "b", "ab", "c", "</s>", "<x>"};
    v.eog = {4};
    v.control = {4, 5};
    return v;
}

SamplerParams greedy(const std::string& grammar) {
    SamplerParams p;
    p.temp = 0.0f;
    p.grammar = grammar;
    return p;
}

}  // namespace

TEST(SamplerGrammar, GreedyTakesTheBestTokenTheGrammarAllows) {
    Sampler s(greedy("root ::= \"a\"+ \"b\""), tiny_vocab());
    // The arg-max "c" is refused: the best allowed is "ab" (2.0) over "a" (1.0).
    EXPECT_EQ(s.sample(std::vector<float>{1.0f, 0.5f, 2.0f, 3.0f, 4.0f, 5.0f}), 2);
    s.accept(2);
    // Now only end of generation: the grammar has ended.
    EXPECT_EQ(s.sample(std::vector<float>{9.0f, 9.0f, 9.0f, 9.0f, 0.0f, 9.0f}), 4);
    s.accept(4);
    s.reset_grammar();
    EXPECT_EQ(s.sample(std::vector<float>{1.0f, 5.0f, 2.0f, 3.0f, 4.0f, 5.0f}), 2);  // "b" cannot start
    EXPECT_EQ(s.sample(std::vector<float>{3.0f, 0.0f, 2.0f, 0.0f, 0.0f, 0.0f}), 0);  // the pick itself allowed
}

TEST(SamplerGrammar, PromptTokensDoNotAdvanceTheGrammar) {
    Sampler s(greedy("root ::= \"c\""), tiny_vocab());
    s.accept(0, /*advance_grammar=*/false);  // "a" is not in the grammar: a prompt token
    s.accept(1, false);
    EXPECT_THROW(s.accept(0), Error);  // the output must start with "c"
    EXPECT_EQ(s.sample(std::vector<float>{5.0f, 5.0f, 5.0f, 1.0f, 5.0f, 5.0f}), 3);
    s.accept(3);
    EXPECT_THROW(s.accept(3), Error);
    s.reset();
    s.accept(3);
}

TEST(SamplerGrammar, SampledTokensFollowTheGrammar) {
    SamplerParams p;
    p.temp = 1.5f;
    p.top_k = 0;
    p.min_p = 0.0f;
    p.grammar = "root ::= (\"a\" | \"b\")+ \"c\"";
    for (uint32_t seed = 1; seed <= 20; ++seed) {
        p.seed = seed;
        Sampler s(p, tiny_vocab());
        std::string text;
        for (int i = 0; i < 50; ++i) {
            const int32_t t = s.sample(std::vector<float>{0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f});
            s.accept(t);
            if (t == 4) break;
            ASSERT_NE(t, 5);
            text += tiny_vocab().pieces[static_cast<size_t>(t)];
        }
        // a-b letters then "c", and generation ended right after (or ran out of steps before "c").
        const size_t c = text.find('c');
        ASSERT_TRUE(c == std::string::npos || c + 1 == text.size()) << text;
        EXPECT_EQ(text.find_first_not_of("ab"), c == std::string::npos ? std::string::npos : c) << text;
    }
}

TEST(SamplerGrammar, ErrorsWithoutVocabularyOrForABadGrammar) {
    try {
        Sampler s(greedy("root ::= \"a\""), 6);
        FAIL() << "constructed";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "sampler: a grammar needs the vocabulary's token texts: construct the Sampler with the "
                               "model (or a SamplerVocab)");
    }
    try {
        Sampler s(greedy("root ::= \"a\" |\n  [b"), tiny_vocab());
        FAIL() << "constructed";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "grammar:2:3: unclosed character class: expected ']' before the end of the line");
    }
}

// tessel::Sampler (include/tessel/sampling.hpp): defaults, greedy, penalties, the seeded draw
// (exact against an independent std::mt19937, and chi-square against the softmax), errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tessel/errors.hpp"
#include "tessel/sampling.hpp"

using namespace tessel;

namespace {

SamplerParams plain(float temp, uint32_t seed = 1234) {
    SamplerParams p;
    p.temp = temp;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.seed = seed;
    return p;
}

// Chi-square statistic of `draws` samples against the softmax of logits / temp over `support`
// (token ids that may be drawn); draws outside the support are counted in `outside`.
double chi_square(Sampler& sampler, const std::vector<float>& logits, float temp,
                  const std::vector<int32_t>& support, int draws, int& outside) {
    std::vector<int> counts(logits.size(), 0);
    for (int i = 0; i < draws; ++i) ++counts[static_cast<size_t>(sampler.sample(logits))];
    auto scaled = [&](int32_t id) { return static_cast<double>(logits[static_cast<size_t>(id)]) / temp; };
    double max_logit = -INFINITY, total = 0.0;
    for (int32_t id : support) max_logit = std::max(max_logit, scaled(id));
    for (int32_t id : support) total += std::exp(scaled(id) - max_logit);
    double chi2 = 0.0;
    outside = draws;
    for (int32_t id : support) {
        const double expected = draws * std::exp(scaled(id) - max_logit) / total;
        const double diff = counts[static_cast<size_t>(id)] - expected;
        chi2 += diff * diff / expected;
        outside -= counts[static_cast<size_t>(id)];
    }
    return chi2;
}

void expect_param_error(const std::function<void(SamplerParams&)>& set, const std::string& field, int32_t n_vocab = 8) {
    SamplerParams p;
    set(p);
    try {
        Sampler s(p, n_vocab);
        ADD_FAILURE() << "expected an error naming " << field;
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
        EXPECT_EQ(std::string(e.what()).rfind("sampler: " + field + " = ", 0), 0u) << e.what();
    }
}

void expect_error_text(const std::function<void()>& fn, const std::string& message) {
    try {
        fn();
        ADD_FAILURE() << "expected: " << message;
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
        EXPECT_EQ(std::string(e.what()), message);
    }
}

}  // namespace

TEST(Sampler, DefaultsAreLlamaCppCliDefaults) {
    const SamplerParams p;
    EXPECT_EQ(p.temp, 0.8f);
    EXPECT_EQ(p.top_k, 40);
    EXPECT_EQ(p.top_p, 0.95f);
    EXPECT_EQ(p.min_p, 0.05f);
    EXPECT_EQ(p.repeat_penalty, 1.0f);
    EXPECT_EQ(p.repeat_last_n, 64);
    EXPECT_EQ(p.presence_penalty, 0.0f);
    EXPECT_EQ(p.frequency_penalty, 0.0f);
    EXPECT_EQ(p.seed, kRandomSeed);
    Sampler explicit_seed(plain(1.0f, 99), 4);
    EXPECT_EQ(explicit_seed.seed(), 99u);
    EXPECT_EQ(explicit_seed.n_vocab(), 4);
}

TEST(Sampler, GreedyIsArgmaxFirstOnTies) {
    for (float temp : {0.0f, -1.0f}) {
        SamplerParams p;  // truncation settings do not matter for greedy
        p.temp = temp;
        Sampler s(p, 5);
        EXPECT_EQ(s.sample(std::vector<float>{0.1f, 2.5f, -3.0f, 2.5f, 1.0f}), 1);
        EXPECT_EQ(s.sample(std::vector<float>{-INFINITY, -2.0f, -1.0f, -1.0f, -INFINITY}), 2);
    }
}

TEST(Sampler, GreedyMatchesAPlainScanAtEveryVocabularySize) {
    // Coarse logits (many ties) at sizes around the pick's 4-wide unrolling: the first index
    // holding the largest logit, as a one-by-one scan finds it.
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> level(-4, 4);
    for (int n = 1; n <= 41; ++n)
        for (int trial = 0; trial < 20; ++trial) {
            std::vector<float> logits(static_cast<size_t>(n));
            for (float& l : logits) l = level(rng) == -4 ? -INFINITY : 0.5f * static_cast<float>(level(rng));
            if (std::all_of(logits.begin(), logits.end(), [](float l) { return l == -INFINITY; })) logits.back() = 0.0f;
            const auto expected = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
            SamplerParams p;
            p.temp = 0.0f;
            Sampler s(p, n);
            EXPECT_EQ(s.sample(logits), expected) << "n " << n << " trial " << trial;
        }
}

TEST(Sampler, GreedyUsesPenalizedLogits) {
    SamplerParams p = plain(0.0f);
    p.repeat_penalty = 1.5f;
    Sampler s(p, 3);
    const std::vector<float> logits = {3.0f, 2.9f, 1.0f};
    EXPECT_EQ(s.sample(logits), 0);
    s.accept(0);  // 3 / 1.5 = 2 < 2.9
    EXPECT_EQ(s.sample(logits), 1);
    s.reset();
    EXPECT_EQ(s.sample(logits), 0);
}

TEST(Sampler, PenaltyWindowIsTheLastNAcceptedTokens) {
    SamplerParams p = plain(0.0f);
    p.repeat_penalty = 100.0f;
    const std::vector<float> logits = {1.0f, 1.1f, 1.2f, 0.5f};
    for (int32_t last_n : {2, 3}) {
        p.repeat_last_n = last_n;
        Sampler s(p, 4);
        for (int32_t t : {0, 1, 2}) s.accept(t);
        // last 2: {1, 2} penalized -> 0 wins; last 3: {0, 1, 2} penalized -> 3 wins.
        EXPECT_EQ(s.sample(logits), last_n == 2 ? 0 : 3);
    }
}

TEST(Sampler, DrawIsExactForAKnownSeed) {
    // After top-k 3 (ids 1, 3, 0), top-p 0.8 keeps ids 1 and 3 (4/7 + 2/7 >= 0.8); min-p 0.2 keeps
    // both (ratio 0.5; it would also have kept id 0, ratio 0.25). At temp 1 their weights are 1
    // and 0.5: u < 2/3 -> id 1, else id 3.
    SamplerParams p = plain(1.0f, 5489);
    p.top_k = 3;
    p.top_p = 0.8f;
    p.min_p = 0.2f;
    Sampler s(p, 4);
    const std::vector<float> logits = {std::log(0.125f), std::log(0.5f), std::log(0.125f), std::log(0.25f)};
    std::mt19937 reference(5489);
    for (int i = 0; i < 200; ++i) {
        const double u = static_cast<double>(reference()) / 4294967296.0;
        ASSERT_EQ(s.sample(logits), u < 2.0 / 3.0 ? 1 : 3) << "draw " << i;
    }
}

TEST(Sampler, MinPActsBeforeTemperature) {
    // Probabilities 0.5 (id 1) and 0.25 (id 3), ratio 0.5: min-p 0.4 keeps both at temp 1. At
    // temp 0.5 the ratio would be 0.25, so applying min-p after temperature would drop id 3.
    const std::vector<float> logits = {std::log(0.125f), std::log(0.5f), std::log(0.125f), std::log(0.25f)};
    SamplerParams p = plain(0.5f, 77);
    p.top_k = 2;
    p.min_p = 0.4f;
    Sampler s(p, 4);
    std::mt19937 reference(77);
    for (int i = 0; i < 200; ++i) {
        // weights after temperature 0.5: 1 and 0.25 -> u < 0.8 picks id 1
        const double u = static_cast<double>(reference()) / 4294967296.0;
        ASSERT_EQ(s.sample(logits), u < 0.8 ? 1 : 3) << "draw " << i;
    }
    p.min_p = 0.6f;  // drops id 3
    Sampler strict(p, 4);
    for (int i = 0; i < 50; ++i) ASSERT_EQ(strict.sample(logits), 1);
}

TEST(Sampler, SameSeedSameSequenceAndResetRepeats) {
    std::mt19937 gen(1);
    std::normal_distribution<float> normal(0.0f, 2.0f);  // only makes test inputs
    std::vector<std::vector<float>> steps(300, std::vector<float>(64));
    for (auto& step : steps)
        for (float& l : step) l = normal(gen);
    auto run = [&](Sampler& s) {
        std::vector<int32_t> out;
        for (const auto& step : steps) {
            out.push_back(s.sample(step));
            s.accept(out.back());
        }
        return out;
    };
    SamplerParams p;  // default chain
    p.seed = 42;
    p.repeat_penalty = 1.1f;
    Sampler a(p, 64), b(p, 64);
    const std::vector<int32_t> first = run(a);
    EXPECT_EQ(run(b), first);
    a.reset();
    EXPECT_EQ(run(a), first);
    p.seed = 43;
    Sampler c(p, 64);
    EXPECT_NE(run(c), first);
}

TEST(Sampler, DrawsFollowTheSoftmax) {
    const std::vector<float> logits = {0.5f, 1.0f, -0.3f, 2.0f, 0.0f, 1.2f, -1.0f, 0.7f};
    constexpr int kDraws = 20000;
    int outside = 0;
    {
        Sampler s(plain(1.0f, 2024), 8);
        // 7 degrees of freedom: P(chi2 > 24.32) = 0.001.
        EXPECT_LT(chi_square(s, logits, 1.0f, {0, 1, 2, 3, 4, 5, 6, 7}, kDraws, outside), 24.32);
        EXPECT_EQ(outside, 0);
    }
    {
        SamplerParams p = plain(0.7f, 2025);
        p.top_k = 4;  // ids 3, 5, 1, 7
        Sampler s(p, 8);
        // 3 degrees of freedom: P(chi2 > 16.27) = 0.001.
        EXPECT_LT(chi_square(s, logits, 0.7f, {3, 5, 1, 7}, kDraws, outside), 16.27);
        EXPECT_EQ(outside, 0);
    }
}

TEST(Sampler, InvalidParametersNameTheField) {
    expect_param_error([](SamplerParams& p) { p.top_k = -1; }, "top_k");
    expect_param_error([](SamplerParams& p) { p.top_p = 0.0f; }, "top_p");
    expect_param_error([](SamplerParams& p) { p.top_p = 1.5f; }, "top_p");
    expect_param_error([](SamplerParams& p) { p.top_p = NAN; }, "top_p");
    expect_param_error([](SamplerParams& p) { p.min_p = -0.1f; }, "min_p");
    expect_param_error([](SamplerParams& p) { p.min_p = 1.1f; }, "min_p");
    expect_param_error([](SamplerParams& p) { p.temp = NAN; }, "temp");
    expect_param_error([](SamplerParams& p) { p.repeat_penalty = 0.0f; }, "repeat_penalty");
    expect_param_error([](SamplerParams& p) { p.repeat_last_n = -2; }, "repeat_last_n");
    expect_param_error([](SamplerParams& p) { p.presence_penalty = INFINITY; }, "presence_penalty");
    expect_param_error([](SamplerParams& p) { p.frequency_penalty = NAN; }, "frequency_penalty");
    expect_param_error([](SamplerParams&) {}, "n_vocab", 0);
    expect_error_text([] { SamplerParams p; p.top_k = -3; Sampler s(p, 8); },
                      "sampler: top_k = -3 is invalid (expected >= 0; 0 = off)");
}

TEST(Sampler, GreedyWithLogitBiasIsTheArgmaxOfTheBiasedLogits) {
    // Biases (repeated tokens add up, -inf bans, positive lifts, on the raw winner too) over
    // coarse logits with ties: the first index of the largest biased logit.
    std::mt19937 rng(11);
    std::uniform_int_distribution<int> level(-3, 3);
    for (int n : {1, 2, 7, 8, 9, 33, 100}) {
        std::uniform_int_distribution<int32_t> token(0, n - 1);
        for (int trial = 0; trial < 40; ++trial) {
            std::vector<float> logits(static_cast<size_t>(n));
            for (float& l : logits) l = 0.25f * static_cast<float>(level(rng));
            SamplerParams p;
            p.temp = 0.0f;
            const int n_bias = trial % 5;
            for (int b = 0; b < n_bias; ++b) {
                const int kind = level(rng);
                p.logit_bias.push_back({token(rng), kind == -3 ? -INFINITY : 0.25f * static_cast<float>(kind)});
            }
            std::vector<float> biased = logits;
            for (const LogitBias& b : p.logit_bias) biased[static_cast<size_t>(b.token)] += b.bias;
            if (std::all_of(biased.begin(), biased.end(), [](float l) { return l == -INFINITY; })) continue;
            const auto expected = static_cast<int32_t>(std::max_element(biased.begin(), biased.end()) - biased.begin());
            Sampler s(p, n);
            EXPECT_EQ(s.sample(logits), expected) << "n " << n << " trial " << trial;
        }
    }
}

TEST(Sampler, BadLogitsAndTokensAreErrors) {
    for (const float temp : {0.0f, 1.0f}) {  // greedy takes another road to its pick: same errors
        SCOPED_TRACE(temp);
        Sampler s(plain(temp), 3);
        expect_error_text([&] { s.sample(std::vector<float>{1.0f, 2.0f}); }, "sampler: got 2 logits, expected n_vocab = 3");
        expect_error_text([&] { s.sample(std::vector<float>{1.0f, NAN, 0.0f}); }, "sampler: logit of token 1 is NaN");
        expect_error_text([&] { s.sample(std::vector<float>{1.0f, 0.0f, INFINITY}); }, "sampler: logit of token 2 is +inf");
        expect_error_text([&] { s.sample(std::vector<float>{1.0f, INFINITY, NAN}); }, "sampler: logit of token 1 is +inf");
        expect_error_text([&] { s.sample(std::vector<float>(3, -INFINITY)); },
                          "sampler: every logit is -inf (no token can be sampled)");
        expect_error_text([&] { s.accept(3); }, "sampler: accepted token 3 is outside [0, 3)");
        expect_error_text([&] { s.accept(-1); }, "sampler: accepted token -1 is outside [0, 3)");
    }
}

// tessel::Sampler's chain with llama.cpp's newer stages (include/tessel/sampling.hpp): the
// defaults and every off value reproduce the chain as it was before them (a reference written
// out here), the stages' order and greedy, logit bias, DRY's vocabulary, Mirostat, and the
// errors naming each new field.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tessel.h"
#include "tessel/errors.hpp"
#include "tessel/sampling.hpp"

using namespace tessel;

namespace {

std::vector<std::vector<float>> random_steps(uint32_t seed, size_t steps, size_t n_vocab) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> normal(0.0f, 2.0f);  // only makes test inputs
    std::vector<std::vector<float>> out(steps, std::vector<float>(n_vocab));
    for (auto& step : out)
        for (float& l : step) l = normal(gen);
    return out;
}

std::vector<int32_t> run(Sampler& s, const std::vector<std::vector<float>>& steps) {
    std::vector<int32_t> out;
    for (const auto& step : steps) {
        out.push_back(s.sample(step));
        s.accept(out.back());
    }
    return out;
}

// The chain before DRY, top-n-sigma, typical-p, XTC, logit bias and Mirostat, written out:
// penalties over the last repeat_last_n accepted tokens, top-k, top-p, min-p, temperature, then
// the draw from one mt19937 output (or the arg-max when temp <= 0).
class ReferenceChain {
public:
    explicit ReferenceChain(const SamplerParams& p) : p_(p), rng_(p.seed) {}

    int32_t sample(std::vector<float> l) {
        const size_t from = history_.size() > static_cast<size_t>(p_.repeat_last_n) ? history_.size() - p_.repeat_last_n : 0;
        std::vector<int> count(l.size(), 0);
        for (size_t i = from; i < history_.size(); ++i) ++count[static_cast<size_t>(history_[i])];
        for (size_t t = 0; t < l.size(); ++t) {
            if (count[t] == 0) continue;
            l[t] = l[t] <= 0 ? l[t] * p_.repeat_penalty : l[t] / p_.repeat_penalty;
            l[t] -= static_cast<float>(count[t]) * p_.frequency_penalty + p_.presence_penalty;
        }
        std::vector<int32_t> ids(l.size());
        for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
        auto before = [&](int32_t a, int32_t b) { return l[static_cast<size_t>(a)] > l[static_cast<size_t>(b)] || (l[static_cast<size_t>(a)] == l[static_cast<size_t>(b)] && a < b); };
        std::sort(ids.begin(), ids.end(), before);
        if (p_.temp <= 0.0f) return ids[0];
        if (p_.top_k > 0 && static_cast<size_t>(p_.top_k) < ids.size()) ids.resize(static_cast<size_t>(p_.top_k));
        auto weights = [&](double scale) {
            std::vector<double> w;
            for (int32_t id : ids) w.push_back(std::exp((l[static_cast<size_t>(id)] - static_cast<double>(l[static_cast<size_t>(ids[0])])) * scale));
            return w;
        };
        if (p_.top_p < 1.0f) {
            const auto w = weights(1.0);
            double total = 0.0, mass = 0.0;
            for (double x : w) total += x;
            for (size_t i = 0; i < w.size(); ++i)
                if ((mass += w[i]) >= p_.top_p * total) {
                    ids.resize(i + 1);
                    break;
                }
        }
        if (p_.min_p > 0.0f) {
            const double cut = l[static_cast<size_t>(ids[0])] + std::log(static_cast<double>(p_.min_p));
            std::erase_if(ids, [&](int32_t id) { return l[static_cast<size_t>(id)] < cut; });
        }
        // Temperature, then the draw: weights exp((l - l_max) / temp).
        std::vector<double> w;
        for (int32_t id : ids)
            w.push_back(std::exp(static_cast<double>(l[static_cast<size_t>(id)] / p_.temp) - l[static_cast<size_t>(ids[0])] / p_.temp));
        double total = 0.0;
        for (double x : w) total += x;
        const double u = static_cast<double>(rng_()) * 0x1p-32;
        double running = 0.0;
        for (size_t i = 0; i < w.size(); ++i)
            if ((running += w[i]) > u * total) return ids[i];
        return ids.back();
    }
    void accept(int32_t t) { history_.push_back(t); }

private:
    SamplerParams p_;
    std::mt19937 rng_;
    std::vector<int32_t> history_;
};

void expect_param_error(const std::function<void(SamplerParams&)>& set, const std::string& field) {
    SamplerParams p;
    set(p);
    try {
        Sampler s(p, 8);
        ADD_FAILURE() << "expected an error naming " << field;
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
        EXPECT_EQ(std::string(e.what()).rfind("sampler: " + field + " = ", 0), 0u) << e.what();
    }
}

SamplerParams greedy() {
    SamplerParams p;
    p.temp = 0.0f;
    return p;
}

}  // namespace

TEST(SamplerChain, DefaultsReproduceTheChainBeforeTheNewStages) {
    const auto steps = random_steps(8, 400, 64);
    for (const float temp : {0.8f, 0.0f}) {
        SamplerParams p;
        p.seed = 4242;
        p.temp = temp;
        p.repeat_penalty = 1.2f;
        p.frequency_penalty = 0.1f;
        Sampler s(p, 64);
        ReferenceChain ref(p);
        for (size_t i = 0; i < steps.size(); ++i) {
            const int32_t t = s.sample(steps[i]);
            ASSERT_EQ(t, ref.sample(steps[i])) << "temp " << temp << " step " << i;
            s.accept(t);
            ref.accept(t);
        }
    }
}

TEST(SamplerChain, OffValuesGiveTheChainWithoutTheStage) {
    const auto steps = random_steps(9, 300, 50);
    SamplerParams base;
    base.seed = 7;
    base.repeat_penalty = 1.1f;
    Sampler plain(base, 50);
    const std::vector<int32_t> expected = run(plain, steps);
    for (const auto& set : std::vector<std::function<void(SamplerParams&)>>{
             [](SamplerParams& p) { p.typical_p = 1.0f; },
             [](SamplerParams& p) { p.top_n_sigma = 0.0f; },
             [](SamplerParams& p) { p.xtc_probability = 0.0f; p.xtc_threshold = 0.05f; },
             [](SamplerParams& p) { p.xtc_probability = 1.0f; p.xtc_threshold = 0.6f; },
             [](SamplerParams& p) { p.dry_multiplier = 0.0f; p.dry_base = 3.0f; p.dry_sequence_breakers.clear(); },
             [](SamplerParams& p) { p.dry_multiplier = 2.0f; p.dry_penalty_last_n = 0; },
             [](SamplerParams& p) { p.mirostat = 0; p.mirostat_tau = 1.0f; },
             [](SamplerParams& p) { p.logit_bias = {{3, 0.0f}}; }}) {
        SamplerParams p = base;
        set(p);
        Sampler s(p, 50);
        EXPECT_EQ(run(s, steps), expected);
    }
}

TEST(SamplerChain, LogitBiasAddsUpAndBans) {
    SamplerParams p = greedy();
    p.logit_bias = {{2, -INFINITY}};
    Sampler ban(p, 3);
    EXPECT_EQ(ban.sample(std::vector<float>{1.0f, 2.0f, 3.0f}), 1);
    p.logit_bias = {{0, 1.0f}, {0, 1.5f}};  // 1 + 2.5 = 3.5 > 3.2
    Sampler sum(p, 3);
    EXPECT_EQ(sum.sample(std::vector<float>{1.0f, 3.2f, 0.0f}), 0);
    p.logit_bias = {{0, 1.0f}, {0, 1.1f}};  // 3.1 < 3.2
    Sampler less(p, 3);
    EXPECT_EQ(less.sample(std::vector<float>{1.0f, 3.2f, 0.0f}), 1);
    // Banning every token that can be drawn is an error, not a pick.
    p.logit_bias = {{0, -INFINITY}, {1, -INFINITY}};
    Sampler none(p, 3);
    try {
        none.sample(std::vector<float>{1.0f, 2.0f, -INFINITY});
        ADD_FAILURE() << "every token banned";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), "sampler: every logit is -inf after the logit bias (no token can be sampled)");
    }
    // Bias before penalties: ban then sample at temperature still never draws the banned token.
    SamplerParams hot;
    hot.seed = 3;
    hot.top_k = 0;
    hot.top_p = 1.0f;
    hot.min_p = 0.0f;
    hot.logit_bias = {{1, -INFINITY}};
    Sampler s(hot, 3);
    for (int i = 0; i < 200; ++i) ASSERT_NE(s.sample(std::vector<float>{0.0f, 5.0f, 0.0f}), 1);
}

TEST(SamplerChain, GreedyRunsTheTruncationsThatMayDropTheArgmax) {
    // Probabilities 0.125, 0.5, 0.125, 0.25: typical 0.2 keeps only id 3 (nearest the entropy).
    const std::vector<float> logits = {std::log(0.125f), std::log(0.5f), std::log(0.125f), std::log(0.25f)};
    SamplerParams p = greedy();
    p.top_k = 0;
    p.min_p = 0.0f;
    p.typical_p = 0.2f;
    Sampler typical(p, 4);
    EXPECT_EQ(typical.sample(logits), 3);
    // XTC at certainty, threshold 0.2: ids 1 and 3 reach it, id 1 goes; the arg-max of the rest is 3.
    p.typical_p = 1.0f;
    p.xtc_probability = 1.0f;
    p.xtc_threshold = 0.2f;
    Sampler xtc(p, 4);
    EXPECT_EQ(xtc.sample(logits), 3);
    // top-n-sigma keeps the arg-max: greedy unchanged.
    p.xtc_probability = 0.0f;
    p.top_n_sigma = 0.1f;
    Sampler sigma(p, 4);
    EXPECT_EQ(sigma.sample(logits), 1);
}

TEST(SamplerChain, XtcRunsAfterMinPAndBeforeTemperature) {
    // top-k 3 leaves ids 1, 3, 0 (renormalized 4/7, 2/7, 1/7); XTC 0.25 then drops id 1; at
    // temperature 0.5 the weights of ids 3 and 0 are 1 and 0.25: u < 0.8 -> id 3.
    const std::vector<float> logits = {std::log(0.125f), std::log(0.5f), std::log(0.1f), std::log(0.25f)};
    SamplerParams p;
    p.seed = 31;
    p.temp = 0.5f;
    p.top_k = 3;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.xtc_probability = 1.0f;
    p.xtc_threshold = 0.25f;
    Sampler s(p, 4);
    std::mt19937 reference(31);
    for (int i = 0; i < 100; ++i) {
        reference();  // XTC's draw
        const double u = static_cast<double>(reference()) * 0x1p-32;
        ASSERT_EQ(s.sample(logits), u < 0.8 ? 3 : 0) << "draw " << i;
    }
}

TEST(SamplerChain, DryPenalizesRepeatsThroughTheSampler) {
    // Vocabulary a b c d "\n" (a default breaker).
    SamplerVocab v;
    v.pieces = {"a", "b", "c", "d", "\n"};
    SamplerParams p = greedy();
    p.dry_multiplier = 1.0f;
    p.dry_base = 2.0f;
    p.dry_allowed_length = 1;
    Sampler s(p, v);
    EXPECT_EQ(s.n_vocab(), 5);
    // a b c a b: c would repeat "a b c", a repeat of 2 (+1): 2.5 - 2^(2-1) = 0.5 < d's 1.
    const std::vector<float> logits = {0.0f, 0.0f, 2.5f, 1.0f, 0.0f};
    for (int32_t t : {0, 1, 2, 0, 1}) s.accept(t);
    EXPECT_EQ(s.sample(logits), 3);
    // \n a b c \n a b: the match "\n a b" is cut at the breaker to "a b": 3.5 - 2^1 = 1.5 > 1;
    // without breakers it is 3 long: 3.5 - 2^2 < 1.
    const std::vector<float> high_c = {0.0f, 0.0f, 3.5f, 1.0f, 0.0f};
    s.reset();
    for (int32_t t : {4, 0, 1, 2, 4, 0, 1}) s.accept(t);
    EXPECT_EQ(s.sample(high_c), 2);
    SamplerParams no_breakers = p;
    no_breakers.dry_sequence_breakers.clear();
    Sampler plain(no_breakers, v);
    for (int32_t t : {4, 0, 1, 2, 4, 0, 1}) plain.accept(t);
    EXPECT_EQ(plain.sample(high_c), 3);
    // Only the last dry_penalty_last_n tokens count: "c a b" holds no earlier "b".
    p.dry_penalty_last_n = 3;
    Sampler windowed(p, v);
    for (int32_t t : {0, 1, 2, 0, 1}) windowed.accept(t);
    EXPECT_EQ(windowed.sample(logits), 2);
}

TEST(SamplerChain, DryBreakersNeedTheVocabulary) {
    SamplerParams p;
    p.dry_multiplier = 0.8f;
    try {
        Sampler s(p, 10);
        ADD_FAILURE() << "DRY breakers accepted without a vocabulary";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
        EXPECT_NE(std::string(e.what()).find("sampler: dry_sequence_breakers need the vocabulary"), std::string::npos) << e.what();
    }
    // Without breakers DRY works on ids alone.
    p.dry_sequence_breakers.clear();
    p.temp = 0.0f;
    p.dry_allowed_length = 1;
    Sampler ids_only(p, 3);
    for (int32_t t : {0, 1, 0}) ids_only.accept(t);
    EXPECT_EQ(ids_only.sample(std::vector<float>{0.0f, 0.5f, 0.1f}), 2);  // 1 would repeat "0 1": 0.5 - 0.8
}

TEST(SamplerChain, MirostatReplacesTheChainAndResets) {
    const auto steps = random_steps(12, 200, 40);
    for (const int32_t version : {1, 2}) {
        SamplerParams p;
        p.seed = 99;
        p.mirostat = version;
        p.mirostat_tau = 3.0f;
        p.repeat_penalty = 50.0f;  // ignored with Mirostat, as llama.cpp
        p.top_k = 1;               // likewise: a top-k of 1 would make every draw the arg-max
        Sampler s(p, 40);
        const std::vector<int32_t> first = run(s, steps);
        s.reset();
        EXPECT_EQ(run(s, steps), first);
        size_t not_argmax = 0;
        for (size_t i = 0; i < steps.size(); ++i)
            not_argmax += first[i] != std::max_element(steps[i].begin(), steps[i].end()) - steps[i].begin();
        EXPECT_GT(not_argmax, 0u) << "version " << version;
        // temp <= 0: greedy.
        p.temp = 0.0f;
        Sampler g(p, 40);
        for (size_t i = 0; i < 20; ++i)
            EXPECT_EQ(g.sample(steps[i]), std::max_element(steps[i].begin(), steps[i].end()) - steps[i].begin());
    }
}

TEST(SamplerChain, DefaultsAreLlamaCppCliDefaults) {
    const SamplerParams p;
    EXPECT_TRUE(p.logit_bias.empty());
    EXPECT_EQ(p.typical_p, 1.0f);
    EXPECT_EQ(p.top_n_sigma, -1.0f);
    EXPECT_EQ(p.xtc_probability, 0.0f);
    EXPECT_EQ(p.xtc_threshold, 0.1f);
    EXPECT_EQ(p.dry_multiplier, 0.0f);
    EXPECT_EQ(p.dry_base, 1.75f);
    EXPECT_EQ(p.dry_allowed_length, 2);
    EXPECT_EQ(p.dry_penalty_last_n, -1);
    EXPECT_EQ(p.dry_sequence_breakers, (std::vector<std::string>{"\n", ":", "\"", "*"}));
    EXPECT_EQ(p.mirostat, 0);
    EXPECT_EQ(p.mirostat_tau, 5.0f);
    EXPECT_EQ(p.mirostat_eta, 0.1f);
}

TEST(SamplerChain, InvalidNewParametersNameTheField) {
    expect_param_error([](SamplerParams& p) { p.logit_bias = {{8, 1.0f}}; }, "logit_bias[0].token");
    expect_param_error([](SamplerParams& p) { p.logit_bias = {{1, 1.0f}, {-1, 1.0f}}; }, "logit_bias[1].token");
    expect_param_error([](SamplerParams& p) { p.logit_bias = {{1, NAN}}; }, "logit_bias[0].bias");
    expect_param_error([](SamplerParams& p) { p.logit_bias = {{1, INFINITY}}; }, "logit_bias[0].bias");
    expect_param_error([](SamplerParams& p) { p.typical_p = 1.5f; }, "typical_p");
    expect_param_error([](SamplerParams& p) { p.typical_p = -0.1f; }, "typical_p");
    expect_param_error([](SamplerParams& p) { p.top_n_sigma = NAN; }, "top_n_sigma");
    expect_param_error([](SamplerParams& p) { p.xtc_probability = 2.0f; }, "xtc_probability");
    expect_param_error([](SamplerParams& p) { p.xtc_threshold = -1.0f; }, "xtc_threshold");
    expect_param_error([](SamplerParams& p) { p.dry_multiplier = -1.0f; }, "dry_multiplier");
    expect_param_error([](SamplerParams& p) { p.dry_base = 0.5f; }, "dry_base");
    expect_param_error([](SamplerParams& p) { p.dry_allowed_length = -1; }, "dry_allowed_length");
    expect_param_error([](SamplerParams& p) { p.dry_penalty_last_n = -2; }, "dry_penalty_last_n");
    expect_param_error([](SamplerParams& p) { p.dry_sequence_breakers = {":", ""}; }, "dry_sequence_breakers[1]");
    expect_param_error([](SamplerParams& p) { p.mirostat = 3; }, "mirostat");
    expect_param_error([](SamplerParams& p) { p.mirostat_tau = -1.0f; }, "mirostat_tau");
    expect_param_error([](SamplerParams& p) { p.mirostat_eta = INFINITY; }, "mirostat_eta");
    expect_param_error([](SamplerParams& p) { p.repeat_last_n = -2; }, "repeat_last_n");
    expect_param_error([](SamplerParams& p) { p.samplers = {SamplerStage::TopK, static_cast<SamplerStage>(9)}; }, "samplers[1]");
    SamplerParams whole;
    whole.repeat_last_n = -1;  // every accepted token
    whole.repeat_penalty = 100.0f;
    whole.temp = 0.0f;
    Sampler s(whole, 3);
    s.accept(0);
    for (int i = 0; i < 500; ++i) s.accept(2);
    EXPECT_EQ(s.sample(std::vector<float>{1.0f, 0.5f, 0.9f}), 1);  // 0 still penalized 500 tokens later
}

TEST(SamplerChain, OrderDecidesWhatTemperatureMeansToMinP) {
    // Probabilities 0.5 (id 1) and 0.25 (id 3) after top-k 2, ratio 0.5: min-p 0.4 keeps both
    // before temperature 0.5; after it the ratio is 0.25 and only id 1 stays.
    const std::vector<float> logits = {std::log(0.125f), std::log(0.5f), std::log(0.125f), std::log(0.25f)};
    SamplerParams p;
    p.seed = 77;
    p.temp = 0.5f;
    p.top_k = 2;
    p.top_p = 1.0f;
    p.min_p = 0.4f;
    Sampler default_order(p, 4);
    p.samplers = {SamplerStage::TopK, SamplerStage::Temperature, SamplerStage::MinP};
    Sampler temp_first(p, 4);
    std::mt19937 reference(77);
    for (int i = 0; i < 200; ++i) {
        const double u = static_cast<double>(reference()) * 0x1p-32;
        ASSERT_EQ(default_order.sample(logits), u < 0.8 ? 1 : 3) << "draw " << i;  // weights 1 and 0.25
        ASSERT_EQ(temp_first.sample(logits), 1) << "draw " << i;
    }
}

TEST(SamplerChain, PenaltiesAfterTopKSeeOnlyTheSurvivors) {
    // top-k 2 keeps ids 2 and 3 (logits 3, 2): a penalty after it cannot reach id 0, and finds
    // ids 2 and 3 in a list no longer in id order.
    const std::vector<float> logits = {0.0f, 1.0f, 3.0f, 2.0f};
    SamplerParams p = greedy();
    p.top_k = 2;
    p.presence_penalty = -10.0f;
    for (const bool penalties_first : {true, false}) {
        p.samplers = penalties_first ? std::vector<SamplerStage>{SamplerStage::Penalties, SamplerStage::TopK}
                                     : std::vector<SamplerStage>{SamplerStage::TopK, SamplerStage::Penalties};
        Sampler s(p, 4);
        s.accept(0);  // 0 + 10 = 10 wins only if the penalty sees it
        EXPECT_EQ(s.sample(logits), penalties_first ? 0 : 2);
    }
    p.presence_penalty = 5.0f;
    p.samplers = {SamplerStage::TopK, SamplerStage::Penalties};
    Sampler after(p, 4);
    after.accept(2);  // 3 - 5 = -2 < 2: id 3
    EXPECT_EQ(after.sample(logits), 3);
}

TEST(SamplerChain, AnEmptyOrderDrawsFromTheRawSoftmax) {
    // No stage, not even temperature: the draw is over softmax(l) (temp only decides greedy).
    const std::vector<float> logits = {0.0f, std::log(3.0f)};  // weights 1 and 3
    SamplerParams p;
    p.seed = 5;
    p.temp = 0.25f;
    p.samplers.clear();
    Sampler s(p, 2);
    std::mt19937 reference(5);
    for (int i = 0; i < 200; ++i) {
        const double u = static_cast<double>(reference()) * 0x1p-32;
        ASSERT_EQ(s.sample(logits), u < 0.75 ? 1 : 0) << "draw " << i;  // id 1 first in candidate order
    }
}

TEST(SamplerChain, CDefaultsAreTheCppDefaults) {
    const SamplerParams d;
    const tessel_sampler_params c = tessel_sampler_default_params();
    EXPECT_EQ(c.temp, d.temp);
    EXPECT_EQ(c.top_k, d.top_k);
    EXPECT_EQ(c.top_p, d.top_p);
    EXPECT_EQ(c.min_p, d.min_p);
    EXPECT_EQ(c.repeat_penalty, d.repeat_penalty);
    EXPECT_EQ(c.repeat_last_n, d.repeat_last_n);
    EXPECT_EQ(c.seed, d.seed);
    EXPECT_EQ(c.n_logit_bias, 0u);
    EXPECT_EQ(c.typical_p, d.typical_p);
    EXPECT_EQ(c.top_n_sigma, d.top_n_sigma);
    EXPECT_EQ(c.xtc_probability, d.xtc_probability);
    EXPECT_EQ(c.xtc_threshold, d.xtc_threshold);
    EXPECT_EQ(c.dry_multiplier, d.dry_multiplier);
    EXPECT_EQ(c.dry_base, d.dry_base);
    EXPECT_EQ(c.dry_allowed_length, d.dry_allowed_length);
    EXPECT_EQ(c.dry_penalty_last_n, d.dry_penalty_last_n);
    ASSERT_EQ(c.n_dry_sequence_breakers, d.dry_sequence_breakers.size());
    for (size_t i = 0; i < c.n_dry_sequence_breakers; ++i) EXPECT_EQ(c.dry_sequence_breakers[i], d.dry_sequence_breakers[i]);
    EXPECT_EQ(c.mirostat, d.mirostat);
    EXPECT_EQ(c.mirostat_tau, d.mirostat_tau);
    EXPECT_EQ(c.mirostat_eta, d.mirostat_eta);
    ASSERT_EQ(c.n_samplers, d.samplers.size());
    for (size_t i = 0; i < c.n_samplers; ++i) EXPECT_EQ(c.samplers[i], static_cast<int32_t>(d.samplers[i]));
}

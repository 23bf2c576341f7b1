// The truncation stages added for llama.cpp parity (src/sample/truncation.hpp): top-n-sigma,
// typical-p and XTC, each against its formula written out here, plus their off values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "sample/candidates.hpp"
#include "unit/sampling_test_util.hpp"
#include "sample/truncation.hpp"

using namespace tessel::sample;

namespace {

using test::make_list;
using test::ids;


std::vector<int32_t> sorted_ids(const CandidateList& list) {
    std::vector<int32_t> out = ids(list);
    std::sort(out.begin(), out.end());
    return out;
}

// Probabilities 0.125, 0.5, 0.125, 0.25 for ids 0..3.
std::vector<float> quarter_logits() { return {std::log(0.125f), std::log(0.5f), std::log(0.125f), std::log(0.25f)}; }

std::vector<float> random_logits(uint32_t seed, size_t n) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> normal(0.0f, 2.0f);  // only makes test inputs
    std::vector<float> l(n);
    for (float& x : l) x = normal(gen);
    return l;
}

// Softmax probabilities of `logits`, in double.
std::vector<double> probabilities(const std::vector<float>& logits) {
    const double mx = *std::max_element(logits.begin(), logits.end());
    std::vector<double> p(logits.size());
    double total = 0.0;
    for (size_t i = 0; i < p.size(); ++i) total += p[i] = std::exp(logits[i] - mx);
    for (double& x : p) x /= total;
    return p;
}

}  // namespace

TEST(SampleFilters, TopNSigmaKeepsLogitsWithinNDeviationsOfTheMax) {
    const std::vector<float> logits = {0.0f, 1.0f, 2.0f, 3.0f, 10.0f, -INFINITY};
    // Over the finite logits: mean 3.2, population variance 62.8 / 5 = 12.56.
    const double sd = std::sqrt(12.56);
    for (float n : {0.5f, 1.0f, 2.0f, 3.0f}) {
        std::vector<int32_t> expected;
        for (int32_t i = 0; i < 5; ++i)
            if (logits[static_cast<size_t>(i)] >= 10.0 - n * sd) expected.push_back(i);
        CandidateList list = make_list(logits);
        top_n_sigma(list, n);
        EXPECT_EQ(ids(list), expected) << "n " << n;
    }
    // n = 2: 10 - 7.09 = 2.91 keeps 3 and 10 only.
    CandidateList two = make_list(logits);
    top_n_sigma(two, 2.0f);
    EXPECT_EQ(ids(two), (std::vector<int32_t>{3, 4}));
    // Off (n <= 0): untouched, -inf included.
    for (float off : {0.0f, -1.0f}) {
        CandidateList list = make_list(logits);
        top_n_sigma(list, off);
        EXPECT_EQ(list.items.size(), logits.size());
    }
    // Equal logits: sigma 0, all kept (ties survive).
    CandidateList flat = make_list({1.0f, 1.0f, 1.0f});
    top_n_sigma(flat, 1.0f);
    EXPECT_EQ(ids(flat), (std::vector<int32_t>{0, 1, 2}));
}

TEST(SampleFilters, TypicalKeepsTheTokensNearestTheEntropy) {
    // H = -(2 * 0.125 ln 0.125 + 0.5 ln 0.5 + 0.25 ln 0.25) = 1.2130; |-ln p - H|: id0 0.866,
    // id1 0.520, id2 0.866, id3 0.173. Order 3, 1, 0, 2 (0 before 2 on the tie); masses 0.25,
    // 0.75, 0.875, 1.
    std::vector<double> scratch;
    auto kept = [&](float p) {
        CandidateList list = make_list(quarter_logits());
        typical_p(list, p, scratch);
        return ids(list);
    };
    EXPECT_EQ(kept(0.2f), (std::vector<int32_t>{3}));  // drops the most probable token
    EXPECT_EQ(kept(0.5f), (std::vector<int32_t>{3, 1}));
    EXPECT_EQ(kept(0.8f), (std::vector<int32_t>{3, 1, 0}));
    EXPECT_EQ(kept(0.9f), (std::vector<int32_t>{3, 1, 0, 2}));
    EXPECT_EQ(kept(0.0f), (std::vector<int32_t>{3}));
    EXPECT_EQ(kept(1.0f), (std::vector<int32_t>{0, 1, 2, 3}));  // off: untouched
}

TEST(SampleFilters, TypicalMatchesTheFormulaOnRandomLogits) {
    std::vector<double> scratch;
    for (uint32_t seed = 1; seed <= 20; ++seed) {
        const std::vector<float> logits = random_logits(seed, 50);
        const std::vector<double> p = probabilities(logits);
        double h = 0.0;
        for (double x : p) h -= x * std::log(x);
        std::vector<int32_t> order(p.size());
        std::iota(order.begin(), order.end(), 0);
        auto score = [&](int32_t i) { return std::abs(-std::log(p[static_cast<size_t>(i)]) - h); };
        std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return score(a) < score(b); });
        const float typical = 0.3f + 0.03f * static_cast<float>(seed);
        std::vector<int32_t> expected;
        double mass = 0.0;
        for (int32_t i : order) {
            expected.push_back(i);
            mass += p[static_cast<size_t>(i)];
            if (mass > typical) break;
        }
        CandidateList list = make_list(logits);
        typical_p(list, typical, scratch);
        EXPECT_EQ(ids(list), expected) << "seed " << seed;
    }
}

TEST(SampleFilters, XtcRemovesTheTopChoicesButTheLeastProbable) {
    std::vector<double> scratch;
    auto after = [&](float threshold) {
        CandidateList list = make_list(quarter_logits());
        std::mt19937 rng(1);
        xtc(list, 1.0f, threshold, rng, scratch);
        return sorted_ids(list);
    };
    EXPECT_EQ(after(0.2f), (std::vector<int32_t>{0, 2, 3}));  // 0.5 and 0.25 reach it: 0.5 goes
    EXPECT_EQ(after(0.3f), (std::vector<int32_t>{0, 1, 2, 3}));  // only one reaches it: kept
    EXPECT_EQ(after(0.1f), (std::vector<int32_t>{2}));  // all reach it: the last in candidate order stays
}

TEST(SampleFilters, XtcFiresWithItsProbabilityFromOneDraw) {
    std::vector<double> scratch;
    std::mt19937 rng(99), reference(99);
    int fired = 0;
    for (int i = 0; i < 400; ++i) {
        CandidateList list = make_list(quarter_logits());
        xtc(list, 0.3f, 0.2f, rng, scratch);
        const double u = static_cast<double>(reference()) * 0x1p-32;
        ASSERT_EQ(list.items.size(), u < 0.3 ? 3u : 4u) << "draw " << i;
        fired += u < 0.3;
    }
    EXPECT_GT(fired, 0);
    EXPECT_EQ(rng(), reference());  // exactly one output per call
}

TEST(SampleFilters, XtcOffDrawsNothing) {
    std::vector<double> scratch;
    for (const auto& [probability, threshold, logits] : std::vector<std::tuple<float, float, std::vector<float>>>{
             {0.0f, 0.1f, quarter_logits()}, {1.0f, 0.6f, quarter_logits()}, {1.0f, 0.1f, {2.0f}}}) {
        CandidateList list = make_list(logits);
        std::mt19937 rng(5), reference(5);
        xtc(list, probability, threshold, rng, scratch);
        EXPECT_EQ(list.items.size(), logits.size());
        EXPECT_EQ(rng(), reference());
    }
}

// Sampling stages (src/sample/): each stage on small hand-computed logit vectors, exact results.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "sample/candidates.hpp"
#include "unit/sampling_test_util.hpp"
#include "sample/draw.hpp"
#include "sample/history.hpp"
#include "sample/penalties.hpp"
#include "sample/truncation.hpp"

using namespace tessel::sample;

namespace {

using test::make_list;
using test::ids;


std::vector<float> logits_of(const CandidateList& list) {
    std::vector<float> out;
    for (const Candidate& c : list.items) out.push_back(c.logit);
    return out;
}

// Probabilities 0.125, 0.5, 0.125, 0.25 for ids 0..3 (as logits: their natural logs).
std::vector<float> quarter_logits() {
    return {std::log(0.125f), std::log(0.5f), std::log(0.125f), std::log(0.25f)};
}

}  // namespace

TEST(SampleStages, PenaltiesFollowTheDocumentedFormulas) {
    // repeat 2: positive logits halve, non-positive ones double; then count*0.25 + 0.5 is subtracted.
    const std::vector<int32_t> window = {0, 1, 0, 3};
    CandidateList list = make_list({2.0f, -1.0f, 0.5f, 3.0f});
    apply_penalties(list, window, {2.0f, 0.25f, 0.5f});
    // token 0: count 2, 2/2 - (0.5 + 0.5); token 1: count 1, -1*2 - 0.75; token 2 unseen; token 3: 3/2 - 0.75.
    EXPECT_EQ(logits_of(list), (std::vector<float>{0.0f, -2.75f, 0.5f, 0.75f}));
}

TEST(SampleStages, HistoryKeepsTheLastTokensInOrder) {
    TokenHistory history(2);
    for (int32_t t : {0, 1, 0, 3}) history.push(t);  // keeps 0 and 3, each once
    EXPECT_EQ(std::vector<int32_t>(history.last(5).begin(), history.last(5).end()), (std::vector<int32_t>{0, 3}));
    CandidateList list = make_list({2.0f, -1.0f, 0.5f, 3.0f});
    apply_penalties(list, history.last(2), {2.0f, 0.25f, 0.5f});
    EXPECT_EQ(logits_of(list), (std::vector<float>{0.25f, -1.0f, 0.5f, 0.75f}));

    // A long run through the chunked trimming: always the last 3, oldest first.
    TokenHistory three(3);
    for (int32_t t = 0; t < 50; ++t) {
        three.push(t);
        const auto held = three.last(3);
        ASSERT_EQ(held.size(), static_cast<size_t>(std::min(t + 1, 3)));
        EXPECT_EQ(held.back(), t);
        EXPECT_EQ(held.front(), std::max(0, t - 2));
    }
    EXPECT_EQ(three.last(1).size(), 1u);

    TokenHistory whole(kWholeHistory);
    for (int32_t t = 0; t < 1000; ++t) whole.push(t);
    EXPECT_EQ(whole.last(kWholeHistory).size(), 1000u);
    EXPECT_EQ(whole.last(kWholeHistory).front(), 0);

    TokenHistory none(0);
    none.push(1);
    EXPECT_TRUE(none.last(10).empty());
    history.clear();
    EXPECT_TRUE(history.last(10).empty());
}

TEST(SampleStages, TopKKeepsTheLargestLowerIdFirstOnTies) {
    CandidateList list = make_list({1.0f, 5.0f, 3.0f, 5.0f, 2.0f});
    top_k(list, 3);
    EXPECT_EQ(ids(list), (std::vector<int32_t>{1, 3, 2}));
    EXPECT_TRUE(list.sorted);

    CandidateList all = make_list({1.0f, 5.0f, 3.0f});
    top_k(all, 10);
    EXPECT_EQ(ids(all), (std::vector<int32_t>{1, 2, 0}));
    CandidateList off = make_list({1.0f, 5.0f, 3.0f});
    top_k(off, 0);
    EXPECT_EQ(ids(off), (std::vector<int32_t>{0, 1, 2}));
}

TEST(SampleStages, TopPKeepsTheShortestPrefixReachingP) {
    std::vector<double> scratch;
    auto kept = [&](float p) {
        CandidateList list = make_list(quarter_logits());
        top_p(list, p, scratch);
        return ids(list);
    };
    EXPECT_EQ(kept(0.4f), (std::vector<int32_t>{1}));           // 0.5 >= 0.4
    EXPECT_EQ(kept(0.7f), (std::vector<int32_t>{1, 3}));        // 0.75 >= 0.7
    EXPECT_EQ(kept(0.8f), (std::vector<int32_t>{1, 3, 0}));     // 0.875; id 0 before id 2 on the tie
    EXPECT_EQ(kept(0.9f), (std::vector<int32_t>{1, 3, 0, 2}));  // 1.0
    EXPECT_EQ(kept(1.0f), (std::vector<int32_t>{0, 1, 2, 3}));  // off: untouched
}

TEST(SampleStages, TopPRenormalizesOverTheRemainingCandidates) {
    // After top-k 3 the probabilities are 4/7, 2/7, 1/7: 0.8 needs two tokens (6/7).
    std::vector<double> scratch;
    CandidateList list = make_list(quarter_logits());
    top_k(list, 3);
    top_p(list, 0.8f, scratch);
    EXPECT_EQ(ids(list), (std::vector<int32_t>{1, 3}));
}

TEST(SampleStages, MinPKeepsProbabilitiesAboveAFractionOfTheLargest) {
    auto kept = [](float p) {
        CandidateList list = make_list(quarter_logits());
        min_p(list, p);
        return ids(list);
    };
    // Ratios to the largest probability: id0 0.25, id1 1, id2 0.25, id3 0.5.
    EXPECT_EQ(kept(0.6f), (std::vector<int32_t>{1}));
    EXPECT_EQ(kept(0.3f), (std::vector<int32_t>{1, 3}));
    EXPECT_EQ(kept(0.2f), (std::vector<int32_t>{0, 1, 2, 3}));
    EXPECT_EQ(kept(0.0f), (std::vector<int32_t>{0, 1, 2, 3}));
}

TEST(SampleStages, TemperatureDividesLogits) {
    CandidateList list = make_list({2.0f, -1.0f, 0.5f});
    apply_temperature(list, 0.5f);
    EXPECT_EQ(logits_of(list), (std::vector<float>{4.0f, -2.0f, 1.0f}));
}

TEST(SampleStages, ArgmaxAndSoftmaxWeights) {
    EXPECT_EQ(argmax(make_list({1.0f, 3.0f, 3.0f, 2.0f})), 1u);
    std::vector<double> w;
    const double total = softmax_weights(make_list({0.0f, std::log(2.0f), -INFINITY}), w);
    ASSERT_EQ(w.size(), 3u);
    EXPECT_NEAR(w[0], 0.5, 1e-7);
    EXPECT_EQ(w[1], 1.0);
    EXPECT_EQ(w[2], 0.0);
    EXPECT_NEAR(total, 1.5, 1e-7);
}

TEST(SampleStages, SortIsATotalOrder) {
    CandidateList list = make_list({1.0f, 2.0f, 1.0f, -INFINITY, 2.0f});
    list.sort();
    EXPECT_EQ(ids(list), (std::vector<int32_t>{1, 4, 0, 2, 3}));
}

TEST(SampleStages, UniformDrawIsTheRawOutputScaled) {
    std::mt19937 rng;  // default seed 5489; its first output is 3499211612 (std::mt19937 is specified exactly)
    EXPECT_EQ(uniform01(rng), 3499211612.0 / 4294967296.0);
    std::mt19937 a(7), b(7);
    for (int i = 0; i < 1000; ++i) {
        const double u = uniform01(a);
        EXPECT_EQ(u, static_cast<double>(b()) * 0x1p-32);
        EXPECT_TRUE(u >= 0.0 && u < 1.0);
    }
}

TEST(SampleStages, PickWeightedWalksTheCumulativeSum) {
    const std::vector<double> w = {1.0, 0.0, 2.0, 1.0};  // total 4: [0,1) -> 0, [1,3) -> 2, [3,4) -> 3
    EXPECT_EQ(pick_weighted(w, 4.0, 0.0), 0u);
    EXPECT_EQ(pick_weighted(w, 4.0, 0.2499), 0u);
    EXPECT_EQ(pick_weighted(w, 4.0, 0.25), 2u);
    EXPECT_EQ(pick_weighted(w, 4.0, 0.7499), 2u);
    EXPECT_EQ(pick_weighted(w, 4.0, 0.75), 3u);
    EXPECT_EQ(pick_weighted(w, 4.0, 0.9999), 3u);
    // A total larger than the sum (rounding) falls back to the last positive weight.
    EXPECT_EQ(pick_weighted(std::vector<double>{1.0, 2.0, 0.0}, 3.5, 0.99), 1u);
}

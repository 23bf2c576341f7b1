// Mirostat 1 and 2 (src/sample/mirostat.hpp): truncation, draw and mu update against the
// formulas of include/tessel/sampling.hpp written out here, with the draw's u taken from an
// independent std::mt19937.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "sample/candidates.hpp"
#include "unit/sampling_test_util.hpp"
#include "sample/mirostat.hpp"

using namespace tessel::sample;

namespace {

using test::make_list;


// Index picked by u over `weights` (the cumulative-sum rule of the draw).
size_t pick(const std::vector<double>& weights, double u) {
    double total = 0.0;
    for (double w : weights) total += w;
    double running = 0.0;
    for (size_t i = 0; i < weights.size(); ++i)
        if ((running += weights[i]) > u * total) return i;
    return weights.size() - 1;
}

}  // namespace

TEST(SampleMirostat, V2KeepsTokensWithSurpriseAtMostMu) {
    // Probabilities 0.5 (id 1), 0.25 (id 3), 0.125 (ids 0, 2): surprises 1, 2, 3 bits.
    const std::vector<float> logits = {std::log(0.125f), std::log(0.5f), std::log(0.125f), std::log(0.25f)};
    const MirostatParams p{3.0f, 0.1f, 4};
    const double eta = p.eta;  // the float's value
    std::vector<double> scratch;
    std::mt19937 rng(11), reference(11);
    for (int i = 0; i < 100; ++i) {
        double mu = 2.5;  // keeps ids 1 and 3, renormalized 2/3 and 1/3
        CandidateList list = make_list(logits);
        const int32_t token = mirostat_v2(list, p, mu, rng, scratch);
        const double u = static_cast<double>(reference()) * 0x1p-32;
        const int32_t expected = u < 2.0 / 3.0 ? 1 : 3;
        ASSERT_EQ(token, expected) << "draw " << i;
        const double q = expected == 1 ? 2.0 / 3.0 : 1.0 / 3.0;
        EXPECT_NEAR(mu, 2.5 - eta * (-std::log2(q) - 3.0), 1e-7);  // q from float logits
    }
    // mu below every surprise: the most probable token alone (probability 1, surprise 0).
    double mu = 0.5;
    CandidateList list = make_list(logits);
    EXPECT_EQ(mirostat_v2(list, p, mu, rng, scratch), 1);
    EXPECT_NEAR(mu, 0.5 - eta * (0.0 - 3.0), 1e-12);
}

TEST(SampleMirostat, V1TruncatesToTheZipfEstimateOfK) {
    // p_i proportional to (i+1)^-1.5: b_i = 1.5 t_i exactly, so s = 1.5 and e = 0.5.
    constexpr int kN = 200;
    std::vector<float> logits(kN);
    for (int i = 0; i < kN; ++i) logits[static_cast<size_t>(i)] = -1.5f * std::log(static_cast<float>(i + 1));
    const MirostatParams p{5.0f, 0.2f, 1000};
    std::vector<double> scratch;
    std::mt19937 rng(21), reference(21);
    for (double mu0 : {2.0, 4.0, 6.0, 9.0}) {
        const double s = 1.5, e = s - 1.0;
        const double k = std::pow(e * std::exp2(mu0) / (1.0 - std::pow(1000.0, -e)), 1.0 / s);
        const size_t keep = std::max<size_t>(1, static_cast<size_t>(k));
        ASSERT_LT(keep, static_cast<size_t>(kN));
        std::vector<double> w(keep);
        for (size_t i = 0; i < keep; ++i) w[i] = std::exp(static_cast<double>(logits[i]) - logits[0]);
        double total = 0.0;
        for (double x : w) total += x;
        for (int draw = 0; draw < 20; ++draw) {
            double mu = mu0;
            CandidateList list = make_list(logits);
            const int32_t token = mirostat_v1(list, p, mu, rng, scratch);
            const size_t expected = pick(w, static_cast<double>(reference()) * 0x1p-32);
            ASSERT_EQ(token, static_cast<int32_t>(expected)) << "mu " << mu0 << " keep " << keep;
            EXPECT_NEAR(mu, mu0 - static_cast<double>(p.eta) * (-std::log2(w[expected] / total) - 5.0), 1e-6);
        }
    }
}

TEST(SampleMirostat, OneCandidateOrBannedTokensAreHandled) {
    const MirostatParams p{5.0f, 0.1f, 3};
    std::vector<double> scratch;
    std::mt19937 rng(1);
    for (int version : {1, 2}) {
        double mu = 10.0;
        CandidateList list = make_list({-INFINITY, 0.5f, -INFINITY});
        const int32_t token = version == 1 ? mirostat_v1(list, p, mu, rng, scratch) : mirostat_v2(list, p, mu, rng, scratch);
        EXPECT_EQ(token, 1);
        EXPECT_NEAR(mu, 10.0 - static_cast<double>(p.eta) * (0.0 - 5.0), 1e-12);  // probability 1: surprise 0
    }
}

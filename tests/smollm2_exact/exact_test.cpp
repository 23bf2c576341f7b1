// tessel's reference kernels on the default model (SmolLM2-135M-Instruct Q4_1) against a float64
// forward pass of the same weights (tests/data/smollm2/exact.gguf, made by
// scripts/reference/make_smollm2_exact.py with numpy; it rounds only the K and V it caches to
// float16, as the default cache type does). This is the issue's "NMSE <= 1e-4 on every full
// logit vector" held against the exact result instead of llama.cpp's, whose own logits are
// 1e-2 away from it (see tests/smollm2/smollm2_test.cpp): every position with a vector, with
// flash attention off and on, at ubatch sizes 1 (shortest prompt), 32 (all but the long one) and
// 256, must be within kMaxNmse (10 times tighter than the bound) and have the same top-1
// token. CTest runs this suite with TESSEL_CPU_ISA=scalar, so every op takes the reference kernel
// (dequantized weights, double accumulation); the test checks that it did.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "core/cpu_features.hpp"
#include "support/smollm2.hpp"

namespace tessel {
namespace {

constexpr double kMaxNmse = 1e-5;  // measured: at most 1.6e-6; the issue asks 1e-4

struct Case {
    const char* mode;
    FlashAttn fa;
    int64_t n_ubatch;
};
// One-token ubatches run on the shortest prompt only: every token is a whole graph at scalar speed.
constexpr Case kCases[] = {{"fa_off", FlashAttn::Off, 1},  {"fa_on", FlashAttn::On, 1},
                           {"fa_off", FlashAttn::Off, 32}, {"fa_on", FlashAttn::On, 32},
                           {"fa_off", FlashAttn::Off, 256}, {"fa_on", FlashAttn::On, 256}};

class SmolLM2Exact : public ::testing::TestWithParam<Case> {
protected:
    void SetUp() override { TESSEL_REQUIRE_SMOLLM2(); }
};

TEST_P(SmolLM2Exact, ReferenceKernelsMatchFloat64Forward) {
    const Case c = GetParam();
    if (!std::getenv("TESSEL_EXACT_ANY_TIER")) {
        ASSERT_EQ(usable_tier(), CpuTier::Scalar) << "run with TESSEL_CPU_ISA=scalar (CTest sets it)";
    }
    const auto model = Model::load(test::smollm2_path().string());
    const auto exact = gguf::File::open((test::data_dir() / "smollm2" / "exact.gguf").string());
    const auto V = static_cast<size_t>(model->info().n_vocab);
    std::vector<std::string> prompts;
    for (const auto& v : exact.find("tessel.exact.prompts")->array()) prompts.push_back(v.as_string());
    ASSERT_FALSE(prompts.empty());
    if (c.n_ubatch == 1) prompts.resize(1);
    double worst = 0.0;
    int vectors = 0;
    for (const std::string& name : prompts) {
        if (c.n_ubatch == 32 && name == "long") continue;  // 24 graphs of 32: ub 256 covers it
        const auto tokens = test::reference_tensor<int32_t>(exact, name + ".tokens");
        const auto pos = test::reference_tensor<int32_t>(exact, name + ".full_pos");
        const auto want = test::reference_tensor<float>(exact, name + ".full_logits");
        ASSERT_EQ(want.size(), pos.size() * V) << name;
        const auto got = test::teacher_forced_logits(model, tokens, c.fa, c.n_ubatch);
        for (size_t i = 0; i < pos.size(); ++i, ++vectors) {
            const auto& l = got[static_cast<size_t>(pos[i])];
            const float* w = want.data() + i * V;
            const double e = test::nmse(l, w);
            worst = std::max(worst, e);
            EXPECT_LE(e, kMaxNmse) << name << " position " << pos[i];
            EXPECT_EQ(std::max_element(l.begin(), l.end()) - l.begin(), std::max_element(w, w + V) - w)
                << name << " position " << pos[i];
        }
    }
    std::printf("[ exact    ] %s ub=%lld: worst NMSE %.3g over %d logit vectors\n", c.mode,
                static_cast<long long>(c.n_ubatch), worst, vectors);
}

INSTANTIATE_TEST_SUITE_P(Modes, SmolLM2Exact, ::testing::ValuesIn(kCases), [](const auto& info) {
    return std::string(info.param.mode) + "_ub" + std::to_string(info.param.n_ubatch);
});

}  // namespace
}  // namespace tessel

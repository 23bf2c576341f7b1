// `tessel run`'s sampling flags on the default model, greedy: with llama.cpp's newer samplers at
// their defaults or explicitly off the text is the plain arg-max continuation (computed here
// from the logits, without a Sampler), a -l ban changes it exactly as banning the token from
// the arg-max does, and DRY breaks a repeat the arg-max makes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "support/smollm2.hpp"
#include "tessel/engine.hpp"

namespace tessel {
namespace {

using test::CliResult;
using test::run_tessel;

constexpr int kTokens = 12;

// The greedy continuation of `prompt`: the largest logit each step (lowest id on ties), never
// one of `banned`, until an end-of-generation token or n tokens.
std::string argmax_text(const std::string& prompt, int n, const std::vector<int32_t>& banned, int32_t* first = nullptr) {
    const auto model = Model::load(test::smollm2_path().string());
    ContextParams cp;
    cp.n_ctx = 256;
    cp.n_threads = 1;
    Context ctx(model, cp);
    const std::vector<int32_t> tokens = model->tokenize(prompt, true, false);
    std::vector<BatchToken> batch;
    for (size_t i = 0; i < tokens.size(); ++i)
        batch.push_back({tokens[i], static_cast<int32_t>(i), 0, i + 1 == tokens.size()});
    ctx.decode(batch);
    std::string text;
    for (int i = 0; i < n; ++i) {
        std::vector<float> l(ctx.logits(0).begin(), ctx.logits(0).end());
        for (int32_t b : banned) l[static_cast<size_t>(b)] = -INFINITY;
        const auto t = static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
        if (i == 0 && first) *first = t;
        if (model->is_eog(t)) break;
        text += model->token_to_piece(t);
        const BatchToken next{t, static_cast<int32_t>(tokens.size()) + i, 0, true};
        ctx.decode({&next, 1});
    }
    return text;
}

CliResult greedy_run(const std::string& prompt, std::vector<std::string> extra) {
    std::vector<std::string> args = {"run", "-m", test::smollm2_path().string(), "-p", prompt,
                                     "-n", std::to_string(kTokens), "--temp", "0", "-t", "1", "--no-chat"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_tessel(args);
}

TEST(CliSampling, GreedyIsTheArgmaxWithTheNewSamplersAtDefaultsOrOff) {
    TESSEL_REQUIRE_SMOLLM2();
    const std::string prompt = "The capital of France is";
    const std::string expected = argmax_text(prompt, kTokens, {}) + "\n";
    for (const std::vector<std::string>& extra : std::vector<std::vector<std::string>>{
             {},
             {"--typical", "1", "--top-nsigma", "-1", "--xtc-probability", "0", "--xtc-threshold", "0.3",
              "--dry-multiplier", "0", "--dry-base", "2", "--dry-sequence-breaker", "none", "--mirostat", "0",
              "--mirostat-ent", "3", "--mirostat-lr", "0.2", "-l", "15043+0"}}) {
        const CliResult r = greedy_run(prompt, extra);
        ASSERT_EQ(r.exit_code, 0) << r.err;
        EXPECT_EQ(r.out, expected) << extra.size() << " extra flags";
    }
}

TEST(CliSampling, LogitBiasBansTheGreedyToken) {
    TESSEL_REQUIRE_SMOLLM2();
    const std::string prompt = "The capital of France is";
    int32_t first = -1;
    const std::string plain = argmax_text(prompt, kTokens, {}, &first);
    const std::string banned = argmax_text(prompt, kTokens, {first});
    ASSERT_NE(banned, plain);
    const CliResult r = greedy_run(prompt, {"-l", std::to_string(first) + "-inf"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, banned + "\n");
    // Two entries for one token add up: +3 then -inf is still a ban.
    const CliResult twice = greedy_run(prompt, {"--logit-bias", std::to_string(first) + "+3", "-l", std::to_string(first) + "-inf"});
    EXPECT_EQ(twice.out, banned + "\n");
}

TEST(CliSampling, DryBreaksTheRepeatGreedyMakes) {
    TESSEL_REQUIRE_SMOLLM2();
    const std::string prompt = "The cat sat on the mat. The cat sat on the mat. The cat sat on the mat.";
    const std::string repeat = " The cat sat on the mat.";
    const std::string greedy = argmax_text(prompt, kTokens, {});
    ASSERT_TRUE(greedy.starts_with(repeat)) << greedy;  // the repeat DRY is for
    const CliResult dry = greedy_run(prompt, {"--dry-multiplier", "0.8", "--dry-sequence-breaker", "none"});
    ASSERT_EQ(dry.exit_code, 0) << dry.err;
    EXPECT_EQ(dry.out.find("The cat sat on the mat"), std::string::npos) << dry.out;
}

}  // namespace
}  // namespace tessel

namespace tessel {
namespace {

TEST(CliSampling, SamplerOrderNamesAndLettersAgree) {
    TESSEL_REQUIRE_SMOLLM2();
    auto sampled = [](std::vector<std::string> order) {
        std::vector<std::string> args = {"run", "-m", test::smollm2_path().string(), "-p", "Once upon a time",
                                         "-n", "16", "--seed", "7", "-t", "1", "--temp", "1.5", "--top-k", "3"};
        args.insert(args.end(), order.begin(), order.end());
        const CliResult r = run_tessel(args);
        EXPECT_EQ(r.exit_code, 0) << r.err;
        return r.out;
    };
    const std::string names = sampled({"--samplers", "top-k;temp"});
    EXPECT_EQ(sampled({"--sampling-seq", "kt"}), names);
    EXPECT_EQ(sampled({"--samplers", "top_k;temperature"}), names);
    // Without top-k in the order the 3-token cut is gone: a 16-token draw at temperature 1.5
    // over the whole vocabulary differs.
    EXPECT_NE(sampled({"--samplers", "temperature"}), names);
}

}  // namespace
}  // namespace tessel

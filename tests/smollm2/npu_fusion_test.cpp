// The NPU's enqueue-time fusion (docs/npu.md, "Fusion") on the default model: with every fusion
// kind on, the teacher-forced logits stay within NMSE 1e-6 of the unfused run's at every position
// (flash attention off and on), greedy generation picks the same tokens, and fused ops did run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "npu/host/device.hpp"
#include "npu/host/fusion.hpp"
#include "runtime/devices.hpp"
#include "support/nmse.hpp"
#include "support/reference.hpp"
#include "support/smollm2.hpp"
#include "tessel/engine.hpp"

namespace tessel {
namespace {

constexpr int kGreedyTokens = 16;

int32_t argmax(std::span<const float> l) { return static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin()); }

/// Greedy continuation of `prompt` by kGreedyTokens tokens (one-token decode steps).
std::vector<int32_t> greedy(const std::shared_ptr<const Model>& model, const std::vector<int32_t>& prompt) {
    ContextParams p;
    p.n_ctx = 512;
    p.n_threads = 1;
    Context ctx(model, p);
    std::vector<BatchToken> batch;
    for (size_t i = 0; i < prompt.size(); ++i) batch.push_back({prompt[i], static_cast<int32_t>(i), 0, i + 1 == prompt.size()});
    ctx.decode(batch);
    std::vector<int32_t> out;
    for (int i = 0; i < kGreedyTokens; ++i) {
        out.push_back(argmax(ctx.logits(0)));
        const std::vector<BatchToken> next = {{out.back(), static_cast<int32_t>(prompt.size()) + i, 0, true}};
        ctx.decode(next);
    }
    return out;
}

/// Nodes of a graph that ran in a fused op (kernel "npu_A+B" or "npu_OP xN").
size_t fused_nodes(const std::vector<test::NodeRun>& runs) {
    return static_cast<size_t>(std::count_if(runs.begin(), runs.end(), [](const test::NodeRun& r) {
        return r.kernel.find('+') != std::string::npos || r.kernel.find(" x") != std::string::npos;
    }));
}

TEST(SmolLM2NpuFusion, LogitsAndGreedyTokensMatchTheUnfusedRun) {
    TESSEL_REQUIRE_SMOLLM2();
    auto* npu = dynamic_cast<npu::NpuDevice*>(runtime::device_registry().find("NPU0"));
    ASSERT_NE(npu, nullptr);
    const uint32_t configured = npu->config().opfusion;
    const auto model = Model::load(test::smollm2_path().string(), "npu");
    const std::vector<int32_t> tokens =
        model->tokenize("The NPU offload backend fuses a norm with its weight, a matmul with its bias, and the "
                        "matmuls that share their activations into single device ops.",
                        true, false);
    ASSERT_GT(tokens.size(), 20u);
    for (FlashAttn fa : {FlashAttn::Off, FlashAttn::On}) {
        std::vector<test::NodeRun> runs_off, runs_on;
        npu->set_opfusion(0);
        const auto off = test::teacher_forced_logits(model, tokens, fa, 32, &runs_off);
        npu->set_opfusion(npu::kFuseAll);
        const auto on = test::teacher_forced_logits(model, tokens, fa, 32, &runs_on);
        EXPECT_EQ(fused_nodes(runs_off), 0u);
        EXPECT_GT(fused_nodes(runs_on), 0u);
        double worst = 0.0;
        for (size_t t = 0; t < tokens.size(); ++t) {
            const double e = test::nmse(on[t], off[t]);
            worst = std::max(worst, e);
            EXPECT_LE(e, 1e-6) << "position " << t;
        }
        std::printf("[ SmolLM2  ] npu fusion on vs off, flash attention %s: worst NMSE %.3g over %zu positions, %zu of %zu nodes fused\n",
                    fa == FlashAttn::On ? "on" : "off", worst, tokens.size(), fused_nodes(runs_on), runs_on.size());
    }
    const std::vector<int32_t> prompt(tokens.begin(), tokens.begin() + 8);
    npu->set_opfusion(0);
    const std::vector<int32_t> off = greedy(model, prompt);
    npu->set_opfusion(npu::kFuseAll);
    const std::vector<int32_t> on = greedy(model, prompt);
    EXPECT_EQ(on, off);
    npu->set_opfusion(configured);
}

}  // namespace
}  // namespace tessel

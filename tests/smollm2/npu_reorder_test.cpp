// The NPU's graph reorder (TESSEL_NPU_REORDER, src/npu/host/reorder.hpp) on the default model:
// the logits of a prompt and of greedy decode steps are bit-identical with the pass on and off,
// and the pass does change the node order of both the prompt and the decode graph.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "npu/host/device.hpp"
#include "runtime/devices.hpp"
#include "runtime/engine_access.hpp"
#include "support/smollm2.hpp"
#include "tessel/engine.hpp"

namespace tessel {
namespace {

struct Outcome {
    std::vector<float> logits;          // the prompt's last position, then each decode step's
    std::vector<std::string> prompt_order, decode_order;  // "OP name" of each node as the splits run them
};

std::vector<std::string> split_order(tessel::Context& ctx) {
    std::vector<std::string> out;
    for (const Scheduler::Split& s : runtime::EngineAccess::context(ctx).scheduler().splits())
        for (const Tensor* n : s.nodes) out.push_back(std::string(op_name(n->op)) + " " + n->name);
    return out;
}

Outcome run(const std::shared_ptr<const Model>& model, npu::NpuDevice& dev, bool reorder) {
    dev.set_reorder(reorder);
    ContextParams params;
    params.n_ctx = 256;
    params.n_threads = 2;
    tessel::Context ctx(model, params);
    const std::vector<int32_t> prompt = model->tokenize("The quick brown fox jumps over the lazy dog because", true, false);
    std::vector<BatchToken> batch;
    for (size_t i = 0; i < prompt.size(); ++i)
        batch.push_back({.token = prompt[i], .pos = static_cast<int32_t>(i), .seq = 0, .logits = i + 1 == prompt.size()});
    Outcome r;
    ctx.decode(batch);
    r.prompt_order = split_order(ctx);
    int32_t pos = static_cast<int32_t>(prompt.size());
    for (int step = 0; step < 4; ++step) {
        const std::span<const float> l = ctx.logits(0);
        r.logits.insert(r.logits.end(), l.begin(), l.end());
        const int32_t next = static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
        const BatchToken t{.token = next, .pos = pos++, .seq = 0, .logits = true};
        ctx.decode(std::span(&t, 1));
    }
    r.decode_order = split_order(ctx);
    const std::span<const float> l = ctx.logits(0);
    r.logits.insert(r.logits.end(), l.begin(), l.end());
    return r;
}

TEST(SmolLM2NpuReorder, LogitsAreBitIdenticalWithAndWithoutTheReorder) {
    TESSEL_REQUIRE_SMOLLM2();
    Device* d = runtime::device_registry().find("NPU0");
    ASSERT_NE(d, nullptr);
    auto& dev = dynamic_cast<npu::NpuDevice&>(*d);
    const bool was = dev.config().reorder;
    const auto model = Model::load(test::smollm2_path().string(), "npu");
    const Outcome on = run(model, dev, true);
    const Outcome off = run(model, dev, false);
    dev.set_reorder(was);

    ASSERT_EQ(on.logits.size(), off.logits.size());
    EXPECT_EQ(0, std::memcmp(on.logits.data(), off.logits.data(), on.logits.size() * sizeof(float)))
        << "the reorder changed the logits";
    // The pass ran and moved nodes in both graphs (same nodes, another order).
    EXPECT_NE(on.prompt_order, off.prompt_order);
    EXPECT_NE(on.decode_order, off.decode_order);
    auto sorted = [](std::vector<std::string> v) {
        std::sort(v.begin(), v.end());
        return v;
    };
    EXPECT_EQ(sorted(on.prompt_order), sorted(off.prompt_order));
    EXPECT_EQ(sorted(on.decode_order), sorted(off.decode_order));
}

}  // namespace
}  // namespace tessel

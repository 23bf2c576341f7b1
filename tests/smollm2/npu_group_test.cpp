// An NPU group on the default model (docs/npu.md, "Groups"): with its ranks splitting every weight
// matmul by rows, the logits of a prompt and of greedy decode steps are bit-identical to one NPU
// device's (each row is computed by one rank with the same kernel and plan), for 2 and 3 ranks,
// and with --split-mode none (rank 0 alone) too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "npu/host/device.hpp"
#include "runtime/devices.hpp"
#include "support/smollm2.hpp"
#include "tessel/engine.hpp"

namespace tessel {
namespace {

/// The logits of the prompt's last position, then of 4 greedy decode steps, on `device`.
std::vector<float> greedy_logits(const std::string& device, SplitMode split) {
    const auto model = Model::load(test::smollm2_path().string(), device);
    ContextParams params;
    params.n_ctx = 256;
    params.n_threads = 2;
    params.split_mode = split;
    tessel::Context ctx(model, params);
    const std::vector<int32_t> prompt = model->tokenize("The quick brown fox jumps over the lazy dog because", true, false);
    std::vector<BatchToken> batch;
    for (size_t i = 0; i < prompt.size(); ++i)
        batch.push_back({.token = prompt[i], .pos = static_cast<int32_t>(i), .seq = 0, .logits = i + 1 == prompt.size()});
    ctx.decode(batch);
    std::vector<float> out;
    int32_t pos = static_cast<int32_t>(prompt.size());
    for (int step = 0; step <= 4; ++step) {
        const std::span<const float> l = ctx.logits(0);
        out.insert(out.end(), l.begin(), l.end());
        if (step == 4) break;
        const int32_t next = static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
        const BatchToken t{.token = next, .pos = pos++, .seq = 0, .logits = true};
        ctx.decode(std::span(&t, 1));
    }
    return out;
}

/// Registers group `name` of sessions NPU<first>.. (n ranks) with NPU0's configuration; removed
/// from the registry when this goes out of scope.
struct RegisteredGroup {
    Device* device = nullptr;
    RegisteredGroup(const std::string& name, uint32_t first, uint32_t n) {
        const auto& npu0 = dynamic_cast<npu::NpuDevice&>(*runtime::device_registry().find("NPU0"));
        std::vector<std::unique_ptr<npu::NpuDevice>> peers;
        for (uint32_t r = 1; r < n; ++r) peers.push_back(std::make_unique<npu::NpuDevice>("NPU" + std::to_string(first + r), npu0.config()));
        device = &runtime::device_registry().add(
            std::make_unique<npu::NpuDevice>(name, "NPU" + std::to_string(first), npu0.config(), nullptr, std::move(peers)));
    }
    ~RegisteredGroup() { runtime::device_registry().remove(*device); }
};

TEST(SmolLM2NpuGroup, LogitsAreBitIdenticalToOneDevice) {
    TESSEL_REQUIRE_SMOLLM2();
    ASSERT_NE(runtime::device_registry().find("NPU0"), nullptr);
    const std::vector<float> one = greedy_logits("NPU0", SplitMode::Row);
    for (uint32_t n : {2u, 3u}) {
        const std::string name = "NPU[1-" + std::to_string(n) + "]";
        SCOPED_TRACE(name);
        RegisteredGroup group(name, 1, n);
        const std::vector<float> split = greedy_logits(name, SplitMode::Row);
        ASSERT_EQ(split.size(), one.size());
        EXPECT_EQ(0, std::memcmp(split.data(), one.data(), one.size() * sizeof(float))) << "rows split over " << n << " ranks";
        if (n == 2) {
            const std::vector<float> lead = greedy_logits(name, SplitMode::None);
            EXPECT_EQ(0, std::memcmp(lead.data(), one.data(), one.size() * sizeof(float))) << "--split-mode none";
        }
    }
}

}  // namespace
}  // namespace tessel

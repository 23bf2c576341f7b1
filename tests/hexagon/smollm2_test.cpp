// The default model (SmolLM2-135M-Instruct Q4_1) on the Hexagon device under qemu-hexagon (the
// hexagon link, set up as a user would, with TESSEL_NPU_* variables): greedy generation of 4 tokens after the shortest
// reference prompt ("english", 30 tokens) follows llama.cpp's, every node on the NPU, as the
// smollm2 suite checks on the virtual NPU (same bounds).
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "hexagon/hexagon_programs.hpp"
#include "support/smollm2.hpp"
#include "tessel/engine.hpp"

namespace tessel {
namespace {

constexpr test::LogitBounds kBounds{
    .max_nmse = 8e-2,
    .flip_margin = 0.5f,
    .max_flip_rate = 0.06,
    .greedy_tie = 0.5f,
};

TEST(HexagonSmolLM2, GreedyFourTokensMatchLlamaCppWithEveryNodeOnTheNpu) {
    TESSEL_REQUIRE_SMOLLM2();
    test::use_hexagon_link();
    const test::ReferenceData ref(test::data_dir() / "smollm2" / "reference.gguf");
    const auto model = Model::load(test::smollm2_path().string(), "npu");
    size_t nodes = 0;
    auto on_graph = [&](const std::vector<test::NodeRun>& runs, const std::string& what) {
        ASSERT_FALSE(runs.empty()) << what;
        for (const test::NodeRun& r : runs) {
            ++nodes;
            EXPECT_EQ(r.device.rfind("NPU", 0), 0u) << what << ": " << r.node << " ran on " << r.device;
        }
    };
    const auto s = test::expect_greedy_matches(model, ref, "english", "fa_on", FlashAttn::On, 4, kBounds, on_graph);
    std::printf("[ Hexagon  ] english fa_on: %zu greedy tokens identical%s, %zu node runs checked\n", s.identical,
                s.ended_at_tie ? " up to a near tie" : "", nodes);
    EXPECT_GT(nodes, 0u);
}

}  // namespace
}  // namespace tessel

// The CPU backend's walk of a planned graph (src/cpu/graph_plan.hpp) in one pool run: every chunk
// of every node runs once, a solo node on one thread alone, with every chunk of the nodes before it
// complete; a node's exception, solo or parallel, reaches the caller and the pool runs again.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "cpu/graph_plan.hpp"
#include "cpu/threadpool.hpp"

namespace tessel::cpu {
namespace {

// A plan of `solo.size()` nodes (no tensors: the walk never looks at them), steps as plan_graph
// makes them: consecutive solo nodes in one step.
GraphPlan make_plan(const std::vector<bool>& solo) {
    GraphPlan g;
    for (size_t i = 0; i < solo.size(); ++i) {
        PlannedNode n;
        n.solo = solo[i];
        const auto index = static_cast<uint32_t>(i);
        if (n.solo && !g.steps.empty() && g.steps.back().solo) g.steps.back().end = index + 1;
        else g.steps.push_back({index, index + 1, n.solo});
        g.parallel = g.parallel || !n.solo;
        g.nodes.push_back(n);
    }
    return g;
}

constexpr int64_t kChunks = 37;

class GraphWalk : public ::testing::TestWithParam<int> {};

TEST_P(GraphWalk, EveryChunkRunsOnceAfterTheNodesBeforeIt) {
    ThreadPool pool(GetParam());
    const std::vector<bool> solo = {true, false, false, true, true, false, true, false, true};
    const GraphPlan g = make_plan(solo);
    // hits[node][chunk]: how often each chunk of each node ran; the nodes before it must be done.
    std::vector<std::vector<std::atomic<int>>> hits(solo.size());
    for (auto& h : hits) h = std::vector<std::atomic<int>>(kChunks);
    std::atomic<int> bad{0};
    for (int round = 0; round < 3; ++round) {
        for (auto& h : hits)
            for (auto& c : h) c = 0;
        pool.run([&](ThreadContext& ctx) {
            walk(g, ctx, [&](const PlannedNode& n, ThreadContext& c) {
                const size_t i = static_cast<size_t>(&n - g.nodes.data());
                if ((n.solo && (c.nth != 1 || c.ith != 0)) || (!n.solo && c.nth != pool.size())) ++bad;
                c.for_chunks(kChunks, 1, [&](int64_t b, int64_t) {
                    for (size_t j = 0; j < i; ++j)
                        for (const auto& h : hits[j])
                            if (h.load() != 1) ++bad;
                    ++hits[i][static_cast<size_t>(b)];
                });
            });
        });
        EXPECT_EQ(bad.load(), 0);
        for (size_t i = 0; i < solo.size(); ++i)
            for (int64_t c = 0; c < kChunks; ++c) EXPECT_EQ(hits[i][static_cast<size_t>(c)].load(), 1) << "node " << i << " chunk " << c;
    }
}

TEST_P(GraphWalk, ExceptionsReachTheCaller) {
    ThreadPool pool(GetParam());
    for (bool throw_solo : {true, false}) {
        const GraphPlan g = make_plan({false, throw_solo, false});
        std::atomic<int> after{0};
        EXPECT_THROW(pool.run([&](ThreadContext& ctx) {
            walk(g, ctx, [&](const PlannedNode& n, ThreadContext& c) {
                c.for_chunks(kChunks, 1, [&](int64_t b, int64_t) {
                    if (&n == &g.nodes[1] && b == kChunks / 2) throw std::runtime_error("node 1");
                    if (&n == &g.nodes[2]) ++after;
                });
            });
        }), std::runtime_error);
        EXPECT_EQ(after.load(), 0) << "a node after the failed one ran";
    }
    std::atomic<int> chunks{0};
    const GraphPlan g = make_plan({false});
    pool.run([&](ThreadContext& ctx) {
        walk(g, ctx, [&](const PlannedNode&, ThreadContext& c) { c.for_chunks(kChunks, 1, [&](int64_t, int64_t) { ++chunks; }); });
    });
    EXPECT_EQ(chunks.load(), kChunks);
}

INSTANTIATE_TEST_SUITE_P(Threads, GraphWalk, ::testing::Values(1, 2, 4));

}  // namespace
}  // namespace tessel::cpu

// The CPU backend's walk of a planned graph (src/cpu/graph_plan.hpp) in one pool run: every node
// runs once, on every thread (parallel) or on thread 0 alone (solo), in order with the nodes
// before it complete; each node's chunk loop starts at chunk 0 and hands out each chunk once;
// a node's exception, solo or parallel, reaches the caller and the pool runs again afterwards.
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

TEST_P(GraphWalk, NodesRunInOrderAndChunksStartAtZero) {
    ThreadPool pool(GetParam());
    const std::vector<bool> solo = {true, false, false, true, true, false, true, false, true};
    const GraphPlan g = make_plan(solo);
    // hits[node][chunk]: how often each chunk of each node ran; the nodes before it must be done.
    std::vector<std::vector<std::atomic<int>>> hits(solo.size());
    for (auto& h : hits) h = std::vector<std::atomic<int>>(kChunks);
    std::vector<std::atomic<int>> done(solo.size());
    std::atomic<int> bad{0};
    for (int round = 0; round < 3; ++round) {
        for (auto& h : hits)
            for (auto& c : h) c = 0;
        for (auto& d : done) d = 0;
        pool.run([&](ThreadContext& ctx) {
            walk(g, ctx, [&](const PlannedNode& n, ThreadContext& c) {
                const size_t i = static_cast<size_t>(&n - g.nodes.data());
                if ((n.solo && (c.nth != 1 || c.ith != 0)) || (!n.solo && c.nth != pool.size())) ++bad;
                for (size_t j = 0; j < i; ++j)
                    if (done[j].load() != (g.nodes[j].solo ? 1 : pool.size())) ++bad;
                c.for_chunks(kChunks, 1, [&](int64_t b, int64_t) { ++hits[i][static_cast<size_t>(b)]; });
                ++done[i];
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
                if (&n == &g.nodes[1] && c.ith == 0) throw std::runtime_error("node 1");
                if (&n == &g.nodes[2]) ++after;
            });
        }), std::runtime_error);
        EXPECT_EQ(after.load(), 0) << "a node after the failed one ran";
    }
    std::atomic<int> runs{0};
    const GraphPlan g = make_plan({false});
    pool.run([&](ThreadContext& ctx) { walk(g, ctx, [&](const PlannedNode&, ThreadContext&) { ++runs; }); });
    EXPECT_EQ(runs.load(), pool.size());
}

INSTANTIATE_TEST_SUITE_P(Threads, GraphWalk, ::testing::Values(1, 2, 4));

}  // namespace
}  // namespace tessel::cpu

// The CPU backend's plans (src/cpu/graph_plan.hpp) cached by graph_uid: a graph computed again
// under its uid with new input values gives the new results (the plan is reused, the data is
// read afresh), on 1 and 2 threads, with nodes run solo and on all threads; uid 0 plans every
// call; a uid reused for other nodes is refused; kernel_name answers for the last graph.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "cpu/cpu_backend.hpp"
#include "graph/builder.hpp"
#include "support/host_graph.hpp"
#include "tessel/errors.hpp"

namespace tessel {
namespace {

constexpr int64_t kWide = 4096, kRows = 8;  // x: 128 KiB, more than a solo node touches

// y = (x + b) * 2 and sum_rows(x) run on all threads, z = (c + c) * 3 (small) solo.
struct PlanGraph {
    Graph g;
    Tensor *x, *b, *c, *y, *sums, *z;
    PlanGraph() {
        x = g.new_tensor(DType::F32, {kWide, kRows}, "x");
        b = g.new_tensor(DType::F32, {kWide}, "b");
        c = g.new_tensor(DType::F32, {64}, "c");
        y = build::scale(g, build::add(g, x, b), 2.0f);
        sums = build::sum_rows(g, x);
        z = build::scale(g, build::add(g, c, c), 3.0f);
        g.expand(y);
        g.expand(sums);
        g.expand(z);
    }
    void fill(float base) {
        test::HostMemory::fill(*x, [&](int64_t i) { return base + static_cast<float>(i % 97); });
        test::HostMemory::fill(*b, [](int64_t i) { return static_cast<float>(i % 5); });
        test::HostMemory::fill(*c, [&](int64_t i) { return base - static_cast<float>(i); });
    }
    void expect(float base) const {
        const auto* yd = static_cast<const float*>(y->data);
        const auto* sd = static_cast<const float*>(sums->data);
        for (int64_t r = 0; r < kRows; ++r) {
            double sum = 0;
            for (int64_t i = 0; i < kWide; ++i) {
                const int64_t e = r * kWide + i;
                const float xv = base + static_cast<float>(e % 97);
                ASSERT_EQ(yd[e], (xv + static_cast<float>(i % 5)) * 2.0f) << "row " << r << " column " << i;
                sum += xv;
            }
            EXPECT_NEAR(sd[r], sum, 1e-3 * std::abs(sum)) << "row " << r;
        }
        const auto* zd = static_cast<const float*>(z->data);
        for (int64_t i = 0; i < 64; ++i) EXPECT_EQ(zd[i], (base - static_cast<float>(i)) * 2.0f * 3.0f) << "z " << i;
    }
};

class CpuBackendPlans : public ::testing::TestWithParam<int> {};

TEST_P(CpuBackendPlans, ReusedPlanReadsNewInputs) {
    auto backend = cpu::cpu_device().init_backend({GetParam()});
    PlanGraph pg;
    test::HostMemory mem(pg.g);
    for (float base : {1.0f, -40.0f, 300.0f}) {
        pg.fill(base);
        backend->graph_compute(pg.g.nodes(), 7);
        pg.expect(base);
    }
    EXPECT_NE(backend->kernel_name(*pg.y), "");
    EXPECT_NE(backend->kernel_name(*pg.sums), "");
    EXPECT_EQ(backend->kernel_name(*pg.x), "");  // a leaf runs nothing
    pg.fill(5.0f);
    backend->graph_compute(pg.g.nodes(), 0);  // no promise: planned again
    pg.expect(5.0f);
}

TEST_P(CpuBackendPlans, UidReusedForOtherNodesIsRefused) {
    auto backend = cpu::cpu_device().init_backend({GetParam()});
    PlanGraph a, b;
    test::HostMemory ma(a.g), mb(b.g);
    a.fill(0.0f);
    backend->graph_compute(a.g.nodes(), 11);
    EXPECT_THROW(backend->graph_compute(b.g.nodes(), 11), Error);
    b.fill(2.0f);
    backend->graph_compute(b.g.nodes(), 12);
    b.expect(2.0f);
}

INSTANTIATE_TEST_SUITE_P(Threads, CpuBackendPlans, ::testing::Values(1, 2));

}  // namespace
}  // namespace tessel

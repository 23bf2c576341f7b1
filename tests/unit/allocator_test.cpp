#include <gtest/gtest.h>

#include <algorithm>
#include <unordered_map>

#include "graph/allocator.hpp"
#include "graph/builder.hpp"
#include "tessel/errors.hpp"

using namespace tessel;

namespace {

/// Checks that no two tensors that are live at the same step overlap in the plan.
void expect_no_live_overlap(const std::vector<Tensor*>& nodes, const AllocPlan& plan, size_t align) {
    auto own = [](const Tensor* t) { return t->view_src ? t->view_src : t; };
    std::unordered_map<const Tensor*, size_t> first, last;
    for (size_t i = 0; i < nodes.size(); ++i) {
        first.emplace(nodes[i], i);
        last[nodes[i]] = std::max(last[nodes[i]], i);
        for (const Tensor* s : nodes[i]->src)
            if (s) last[own(s)] = i;
    }
    auto bytes = [&](const Tensor* t) { return (t->n_bytes() + align - 1) / align * align; };
    for (const auto& [a, oa] : plan.offset)
        for (const auto& [b, ob] : plan.offset) {
            if (a >= b || !first.count(a) || !first.count(b)) continue;
            const bool live_together = first.at(a) <= last.at(b) && first.at(b) <= last.at(a);
            const bool overlap = oa < ob + bytes(b) && ob < oa + bytes(a);
            EXPECT_FALSE(live_together && overlap) << describe(*a) << " and " << describe(*b);
        }
}

}  // namespace

TEST(Allocator, ChainReusesMemoryAndReportsPeak) {
    Graph g;
    Tensor* x = g.new_tensor(DType::F32, {1024}, "x");  // 4 KiB each
    Tensor* t = x;
    for (int i = 0; i < 10; ++i) t = build::scale(g, t, 2.0f);
    g.expand(t);
    auto all_nodes = [](const Tensor& n) { return n.op != Op::NONE; };
    AllocPlan plan = plan_allocation(g.nodes(), all_nodes, [](const Tensor& n) { return n.n_bytes(); }, 64);
    EXPECT_EQ(plan.total_bytes, 10u * 4096);
    // a chain needs only two live buffers at a time: the input of a step and its output
    EXPECT_EQ(plan.size, 2u * 4096);
    expect_no_live_overlap(g.nodes(), plan, 64);
    for (const auto& [tensor, off] : plan.offset) EXPECT_EQ(off % 64, 0u);
}

TEST(Allocator, OutputsAreNeverReusedAndBranchesStayLive) {
    Graph g;
    Tensor* x = g.new_tensor(DType::F32, {256}, "x");
    Tensor* a = build::scale(g, x, 2.0f);
    Tensor* b = build::scale(g, a, 3.0f);
    b->flags |= kFlagOutput;
    Tensor* c = build::scale(g, a, 4.0f);  // a is still read here
    Tensor* d = build::add(g, b, c);
    Tensor* e = build::scale(g, d, 1.0f);
    g.expand(e);
    g.expand(b);
    auto all_nodes = [](const Tensor& n) { return n.op != Op::NONE; };
    AllocPlan plan = plan_allocation(g.nodes(), all_nodes, [](const Tensor& n) { return n.n_bytes(); }, 32);
    expect_no_live_overlap(g.nodes(), plan, 32);
    // b is an output: nothing placed after it may share its bytes
    const size_t ob = plan.offset.at(b);
    for (const Tensor* t : {c, d, e}) {
        const size_t ot = plan.offset.at(t);
        EXPECT_TRUE(ot + 1024 <= ob || ob + 1024 <= ot) << describe(*t);
    }
    EXPECT_LT(plan.size, plan.total_bytes);
}

TEST(Allocator, ViewsTakeNoMemoryAndKeepTheirOwnerLive) {
    Graph g;
    Tensor* x = g.new_tensor(DType::F32, {16, 16}, "x");  // 1 KiB
    Tensor* a = build::scale(g, x, 2.0f);
    Tensor* v = build::transpose(g, a);  // view of a
    Tensor* b = build::scale(g, x, 3.0f);
    Tensor* c = build::cont(g, v);      // reads a through the view, after b
    Tensor* d = build::add(g, c, b);
    g.expand(a);
    g.expand(b);
    g.expand(d);  // order: a, b, v, c, d
    ASSERT_EQ(g.nodes()[1], b);
    auto all_nodes = [](const Tensor& n) { return n.op != Op::NONE; };
    AllocPlan plan = plan_allocation(g.nodes(), all_nodes, [](const Tensor& n) { return n.n_bytes(); }, 64);
    EXPECT_EQ(plan.offset.count(v), 0u);
    // a must not be overwritten by b: a is live until c
    const size_t oa = plan.offset.at(a), ob = plan.offset.at(b);
    EXPECT_TRUE(oa + 1024 <= ob || ob + 1024 <= oa);
    expect_no_live_overlap(g.nodes(), plan, 64);
}

TEST(Allocator, AViewFlaggedAsOutputKeepsItsStorage) {
    // e.g. the logits of the last token selected by a view and read by the caller
    Graph g;
    Tensor* x = g.new_tensor(DType::F32, {16}, "x");
    Tensor* t = build::scale(g, x, 2.0f);
    Tensor* v = build::reshape(g, t, {4, 4});
    v->flags |= kFlagOutput;
    Tensor* u = build::scale(g, x, 3.0f);
    u->flags |= kFlagOutput;
    g.expand(v);
    g.expand(u);
    auto all_nodes = [](const Tensor& n) { return n.op != Op::NONE; };
    AllocPlan plan = plan_allocation(g.nodes(), all_nodes, [](const Tensor& n) { return n.n_bytes(); }, 64);
    EXPECT_NE(plan.offset.at(t), plan.offset.at(u));
    EXPECT_EQ(plan.size, 128u);
}

TEST(Allocator, BadAlignmentIsAnError) {
    Graph g;
    Tensor* x = g.new_tensor(DType::F32, {4}, "x");
    g.expand(build::scale(g, x, 1.0f));
    EXPECT_THROW(plan_allocation(g.nodes(), [](const Tensor&) { return true; }, [](const Tensor& n) { return n.n_bytes(); }, 48),
                 Error);
}

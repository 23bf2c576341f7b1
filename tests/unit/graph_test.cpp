#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "graph/builder.hpp"
#include "graph/graph.hpp"
#include "tessel/errors.hpp"

using namespace tessel;

namespace {

size_t index_of(const std::vector<Tensor*>& v, const Tensor* t) {
    return static_cast<size_t>(std::find(v.begin(), v.end(), t) - v.begin());
}

// A small transformer-like block: norm -> matmul -> silu -> residual add.
struct Block {
    Graph g;
    Tensor *x, *w, *gamma, *norm, *scaled, *mm, *act, *out;
    explicit Block(float eps = 1e-5f) {
        x = g.new_tensor(DType::F32, {64, 3}, "x");
        w = g.new_tensor(DType::Q8_0, {64, 64}, "w");
        gamma = g.new_tensor(DType::F32, {64}, "gamma");
        norm = build::rms_norm(g, x, eps);
        scaled = build::mul(g, norm, gamma);
        mm = build::mul_mat(g, w, scaled);
        act = build::unary(g, mm, UnaryOp::SILU);
        out = build::add(g, act, x);
        g.expand(out);
    }
};

}  // namespace

TEST(Graph, ExpandListsSourcesBeforeUsersAndLeavesSeparately) {
    Block b;
    const auto& nodes = b.g.nodes();
    ASSERT_EQ(nodes.size(), 5u);
    EXPECT_EQ(nodes[0], b.norm);
    EXPECT_EQ(nodes[1], b.scaled);
    EXPECT_EQ(nodes[2], b.mm);
    EXPECT_EQ(nodes[3], b.act);
    EXPECT_EQ(nodes[4], b.out);
    // leaves in depth-first order (mm visits w before its activation chain); x is used twice
    // but listed once
    ASSERT_EQ(b.g.leaves().size(), 3u);
    EXPECT_EQ(b.g.leaves()[0], b.w);
    EXPECT_EQ(b.g.leaves()[1], b.x);
    EXPECT_EQ(b.g.leaves()[2], b.gamma);
    b.g.expand(b.out);  // expanding again adds nothing
    EXPECT_EQ(b.g.nodes().size(), 5u);
    for (const Tensor* n : nodes)
        for (const Tensor* s : n->src)
            if (s && s->op != Op::NONE) {
                EXPECT_LT(index_of(nodes, s), index_of(nodes, n));
            }
}

TEST(Graph, DeepChainDoesNotRecurse) {
    Graph g;
    Tensor* t = g.new_tensor(DType::F32, {8}, "x");
    for (int i = 0; i < 100000; ++i) t = build::scale(g, t, 1.0f);
    g.expand(t);
    EXPECT_EQ(g.nodes().size(), 100000u);
    EXPECT_EQ(g.nodes().back(), t);
}

TEST(Graph, CycleIsAnError) {
    Graph g;
    Tensor* x = g.new_tensor(DType::F32, {4}, "x");
    Tensor* a = build::scale(g, x, 2.0f);
    Tensor* b = build::scale(g, a, 2.0f);
    a->src[0] = b;  // corrupt into a cycle
    EXPECT_THROW(g.expand(b), Error);
}

TEST(Graph, UidIsStableForIdenticalGraphsAndChangesWithAnyInput) {
    Block a, b;
    // Same structure, different Tensor objects, no buffers yet: same uid.
    EXPECT_EQ(a.g.uid(), b.g.uid());
    EXPECT_EQ(a.g.uid(), a.g.uid());

    Block eps(1e-6f);  // op param
    EXPECT_NE(eps.g.uid(), a.g.uid());

    Block shape;  // a shape change
    shape.x->ne[1] = 4;
    EXPECT_NE(shape.g.uid(), a.g.uid());

    Block buf;  // a data/buffer change
    static float storage[64 * 3];
    buf.x->data = storage;
    EXPECT_NE(buf.g.uid(), a.g.uid());

    Block op;  // a different op in one node
    op.act->op_params[0] = static_cast<int32_t>(UnaryOp::GELU);
    EXPECT_NE(op.g.uid(), a.g.uid());

    Block rewired;  // same ops, a source swapped
    rewired.out->src[1] = rewired.scaled;
    EXPECT_NE(rewired.g.uid(), a.g.uid());

    Block named;  // names do not count
    named.x->name = "other";
    EXPECT_EQ(named.g.uid(), a.g.uid());
}

TEST(Builder, MulMatShapeAndChecks) {
    Graph g;
    Tensor* w = g.new_tensor(DType::Q4_0, {576, 1536}, "ffn_up");
    Tensor* x = g.new_tensor(DType::F32, {576, 7, 2}, "x");
    Tensor* y = build::mul_mat(g, w, x);
    EXPECT_EQ(y->ne, (std::array<int64_t, 4>{1536, 7, 2, 1}));
    EXPECT_EQ(y->type, DType::F32);
    Tensor* bad = g.new_tensor(DType::F32, {512, 7}, "bad");
    try {
        build::mul_mat(g, w, bad);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "MUL_MAT: inner dimensions differ: ffn_up [576, 1536] Q4_0 vs bad [512, 7] F32");
    }
    Tensor* iq = g.new_tensor(DType::IQ2_XXS, {256, 4}, "blk.3.ffn_down.weight");
    Tensor* x2 = g.new_tensor(DType::F32, {256, 1}, "x2");
    try {
        build::mul_mat(g, iq, x2);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::Unsupported);
        EXPECT_STREQ(e.what(), "unsupported type IQ2_XXS for tensor 'blk.3.ffn_down.weight'");
    }
}

TEST(Builder, BroadcastRules) {
    Graph g;
    Tensor* a = g.new_tensor(DType::F32, {8, 6, 2}, "a");
    EXPECT_NO_THROW(build::add(g, a, g.new_tensor(DType::F32, {8}, "row")));
    EXPECT_NO_THROW(build::mul(g, a, g.new_tensor(DType::F32, {8, 3, 1}, "b")));
    EXPECT_THROW(build::mul(g, a, g.new_tensor(DType::F32, {8, 4}, "c")), Error);
    EXPECT_THROW(build::add(g, a, g.new_tensor(DType::I32, {8}, "i")), Error);
}

TEST(Builder, ViewsShareStorageWithTheOwner) {
    Graph g;
    Tensor* a = g.new_tensor(DType::F32, {4, 6}, "a");
    Tensor* r = build::reshape(g, a, {4, 3, 2});
    EXPECT_EQ(r->view_src, a);
    EXPECT_EQ(r->nb, (std::array<uint64_t, 4>{4, 16, 48, 96}));
    Tensor* p = build::permute(g, r, 1, 2, 0, 3);  // [4,3,2] -> axis0->1, axis1->2, axis2->0: [2,4,3]
    EXPECT_EQ(p->ne, (std::array<int64_t, 4>{2, 4, 3, 1}));
    EXPECT_EQ(p->nb, (std::array<uint64_t, 4>{48, 4, 16, 96}));
    EXPECT_EQ(p->view_src, a);  // a view of a view points at the storage owner
    EXPECT_FALSE(p->is_contiguous());
    Tensor* t = build::transpose(g, a);
    EXPECT_EQ(t->op, Op::TRANSPOSE);
    EXPECT_EQ(t->ne, (std::array<int64_t, 4>{6, 4, 1, 1}));
    EXPECT_EQ(t->nb, (std::array<uint64_t, 4>{16, 4, 96, 96}));
    EXPECT_THROW(build::reshape(g, t, {24}), Error);       // not contiguous
    EXPECT_THROW(build::reshape(g, a, {5, 5}), Error);     // element count
    EXPECT_THROW(build::permute(g, a, 0, 0, 1, 2), Error);  // not a permutation
    Tensor* c = build::cont(g, t);
    EXPECT_TRUE(c->is_contiguous());
    EXPECT_EQ(c->view_src, nullptr);
}

// op_flops / op_bytes (src/graph/op_cost.cpp) against the textbook counts: a matrix product
// y[N,M] = x[K,M]·w[K,N]ᵀ does M·N·K multiply-adds, attention does n_kv·(D_k + D_v) per query
// row and head, and bytes are the plain GGUF sizes (Q4_0: 18 bytes per 32 elements).
#include <gtest/gtest.h>

#include "graph/builder.hpp"
#include "graph/builder_attn.hpp"
#include "graph/graph.hpp"
#include "graph/op_cost.hpp"

using namespace tessel;

TEST(OpCost, MulMatIsTwoMNK) {
    Graph g;
    Tensor* w = g.new_tensor(DType::Q4_0, {576, 1536}, "w");
    Tensor* x = g.new_tensor(DType::F32, {576, 7}, "x");
    Tensor* y = build::mul_mat(g, w, x);
    EXPECT_DOUBLE_EQ(op_flops(*y), 2.0 * 7 * 1536 * 576);
    // weights 1536 rows of 576/32 blocks of 18 bytes, x and y F32
    EXPECT_DOUBLE_EQ(op_bytes(*y), 1536.0 * 18 * 18 + 576.0 * 7 * 4 + 1536.0 * 7 * 4);
}

TEST(OpCost, FlashAttentionCountsBothProducts) {
    Graph g;
    const int64_t D = 64, Dv = 48, T = 5, H = 4, KV = 256;
    Tensor* q = g.new_tensor(DType::F32, {D, T, H}, "q");
    Tensor* k = g.new_tensor(DType::F16, {D, KV, 2}, "k");
    Tensor* v = g.new_tensor(DType::F16, {Dv, KV, 2}, "v");
    Tensor* o = build::flash_attn_ext(g, q, k, v, nullptr, 0.125f);
    EXPECT_DOUBLE_EQ(op_flops(*o), 2.0 * KV * (D + Dv) * T * H);
}

TEST(OpCost, OtherOpsHaveNoFlops) {
    Graph g;
    Tensor* a = g.new_tensor(DType::F32, {10, 3}, "a");
    Tensor* b = g.new_tensor(DType::F32, {10, 3}, "b");
    Tensor* c = build::add(g, a, b);
    EXPECT_DOUBLE_EQ(op_flops(*c), 0.0);
    EXPECT_DOUBLE_EQ(op_bytes(*c), 3 * 10 * 3 * 4.0);
}

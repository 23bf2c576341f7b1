#include <gtest/gtest.h>

#include <set>
#include <string>

#include "graph/op.hpp"
#include "graph/tensor.hpp"
#include "tessel/errors.hpp"

using namespace tessel;

TEST(Tensor, ContiguousStridesFollowGgufLayout) {
    Tensor t;
    t.name = "blk.0.ffn_up.weight";
    t.set_shape(DType::Q4_0, {576, 1536});
    EXPECT_EQ(t.nb[0], 18u);            // one Q4_0 block
    EXPECT_EQ(t.nb[1], 18u * 18);       // 576 / 32 = 18 blocks per row
    EXPECT_EQ(t.nb[2], 18u * 18 * 1536);
    EXPECT_EQ(t.nb[3], t.nb[2]);
    EXPECT_EQ(t.n_elements(), 576 * 1536);
    EXPECT_EQ(t.n_rows(), 1536);
    EXPECT_EQ(t.n_bytes(), 18u * 18 * 1536);
    EXPECT_TRUE(t.is_contiguous());
    EXPECT_EQ(describe(t), "blk.0.ffn_up.weight [576, 1536] Q4_0");

    Tensor f;
    f.set_shape(DType::F16, {3, 5, 7});
    EXPECT_EQ(f.nb[0], 2u);
    EXPECT_EQ(f.nb[1], 6u);
    EXPECT_EQ(f.nb[2], 30u);
    EXPECT_EQ(f.n_bytes(), 210u);
}

TEST(Tensor, PermutedStridesAreNotContiguousButSpanTheSameBytes) {
    Tensor t;
    t.set_shape(DType::F32, {4, 3});
    std::swap(t.ne[0], t.ne[1]);
    std::swap(t.nb[0], t.nb[1]);  // a transpose view: [3, 4] with nb {16, 4}
    EXPECT_FALSE(t.is_contiguous());
    EXPECT_EQ(t.n_bytes(), 48u);  // last element at 2*16 + 3*4 = 44, plus 4 bytes
}

TEST(Tensor, BadShapesNameTheTensor) {
    Tensor t;
    t.name = "x";
    try {
        t.set_shape(DType::Q8_0, {33});
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
        EXPECT_STREQ(e.what(), "tensor 'x': ne[0] = 33 is not a multiple of the Q8_0 block size 32");
    }
    EXPECT_THROW(t.set_shape(DType::F32, {4, 0}), Error);
    EXPECT_THROW(t.set_shape(DType::F32, {1, 2, 3, 4, 5}), Error);
    EXPECT_THROW(t.set_shape(DType::F32, {1 << 21, 1 << 21, 1 << 21, 4}), Error);  // 2^65 elements
    EXPECT_THROW(t.set_shape(DType::F32, {1ll << 31, 1ll << 31, 2}), Error);      // 2^63 elements, 2^65 bytes
}

TEST(Tensor, FloatOpParamsRoundTripBitExactly) {
    Tensor t;
    t.set_op_param_f32(5, 10000.0f);
    t.set_op_param_f32(6, -0.0f);
    EXPECT_EQ(t.op_param_f32(5), 10000.0f);
    EXPECT_EQ(t.op_params[5], 0x461c4000);  // 10000.0f bits
    EXPECT_EQ(static_cast<uint32_t>(t.op_params[6]), 0x80000000u);
}

TEST(Op, NamesAreTheFieldsAndUnique) {
    std::set<std::string> names;
    for (int i = 0; i < static_cast<int>(Op::COUNT_); ++i) {
        const std::string n = op_name(static_cast<Op>(i));
        EXPECT_NE(n, "?") << i;
        EXPECT_TRUE(names.insert(n).second) << n;
    }
    EXPECT_STREQ(op_name(Op::FLASH_ATTN_EXT), "FLASH_ATTN_EXT");
    EXPECT_STREQ(unary_op_name(UnaryOp::GELU_ERF), "GELU_ERF");
    EXPECT_STREQ(glu_op_name(GluOp::SWIGLU_OAI), "SWIGLU_OAI");
    EXPECT_TRUE(op_is_view(Op::PERMUTE));
    EXPECT_FALSE(op_is_view(Op::CONT));
}

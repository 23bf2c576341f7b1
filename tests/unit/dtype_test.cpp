#include <gtest/gtest.h>

#include "core/dtype.hpp"
#include "tessel/errors.hpp"

using namespace tessel;

TEST(DType, TableMatchesGgufBlockGeometry) {
    // (id, name, block size, bytes per block) as written by gguf-py GGML_QUANT_SIZES / ggml.
    struct Expect { uint32_t id; const char* name; uint32_t bs; uint32_t bytes; };
    const Expect expect[] = {
        {0, "F32", 1, 4},        {1, "F16", 1, 2},        {2, "Q4_0", 32, 18},     {3, "Q4_1", 32, 20},
        {6, "Q5_0", 32, 22},     {7, "Q5_1", 32, 24},     {8, "Q8_0", 32, 34},     {9, "Q8_1", 32, 36},
        {10, "Q2_K", 256, 84},   {11, "Q3_K", 256, 110},  {12, "Q4_K", 256, 144},  {13, "Q5_K", 256, 176},
        {14, "Q6_K", 256, 210},  {15, "Q8_K", 256, 292},  {16, "IQ2_XXS", 256, 66}, {17, "IQ2_XS", 256, 74},
        {18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50}, {20, "IQ4_NL", 32, 18},  {21, "IQ3_S", 256, 110},
        {22, "IQ2_S", 256, 82},  {23, "IQ4_XS", 256, 136}, {24, "I8", 1, 1},       {25, "I16", 1, 2},
        {26, "I32", 1, 4},       {27, "I64", 1, 8},       {28, "F64", 1, 8},       {29, "IQ1_M", 256, 56},
        {30, "BF16", 1, 2},      {34, "TQ1_0", 256, 54},  {35, "TQ2_0", 256, 66},  {39, "MXFP4", 32, 17},
        {40, "NVFP4", 64, 36},   {41, "Q1_0", 128, 18},
    };
    for (const auto& e : expect) {
        const DTypeInfo* info = dtype_info_from_id(e.id);
        ASSERT_NE(info, nullptr) << e.name;
        EXPECT_STREQ(info->name, e.name);
        EXPECT_EQ(info->block_size, e.bs) << e.name;
        EXPECT_EQ(info->block_bytes, e.bytes) << e.name;
        EXPECT_EQ(dtype_from_name(e.name), static_cast<DType>(e.id));
    }
}

TEST(DType, RemovedAndOutOfRangeIdsAreUnknown) {
    for (uint32_t id : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 42u, 1000u, 0xffffffffu})
        EXPECT_EQ(dtype_info_from_id(id), nullptr) << id;
    EXPECT_FALSE(dtype_from_name("Q4_2").has_value());
    EXPECT_EQ(dtype_from_name("q4_k"), DType::Q4_K);
}

TEST(DType, RowBytes) {
    EXPECT_EQ(dtype_row_bytes(DType::Q4_0, 64), 36u);
    EXPECT_EQ(dtype_row_bytes(DType::Q6_K, 512), 420u);
    EXPECT_EQ(dtype_row_bytes(DType::F16, 3), 6u);
    try {
        dtype_row_bytes(DType::Q4_K, 100);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
        EXPECT_NE(std::string(e.what()).find("Q4_K block size 256"), std::string::npos) << e.what();
    }
}

TEST(DType, UnsupportedTypeNamesTensor) {
    EXPECT_NO_THROW(require_supported(DType::Q4_K, "blk.0.ffn_up.weight"));
    try {
        require_supported(DType::IQ2_XXS, "blk.0.ffn_up.weight");
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::Unsupported);
        EXPECT_STREQ(e.what(), "unsupported type IQ2_XXS for tensor 'blk.0.ffn_up.weight'");
    }
}

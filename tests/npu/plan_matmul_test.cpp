// The host's matmul plan (plan.hpp): the kernel chain (tiled weights -> MATRIX from
// kMatrixMinColumns columns on a device with a matrix unit, else TILED; plain F16/F32 -> FLAT;
// restricted by TESSEL_NPU_MM_SELECT) and the VTCM each kernel states, worked out by hand
// from tsl_npu_matmul_scratch's rule (proto.h), and the node declined once the VTCM is one byte short.
#include <gtest/gtest.h>

#include "model/weights.hpp"
#include "graph/builder.hpp"
#include "graph/builder_attn.hpp"
#include "npu/host/buffer.hpp"
#include "npu/host/device.hpp"
#include "npu/host/plan.hpp"

namespace tessel::npu {
namespace {

constexpr uint32_t bit(uint32_t kernel) { return 1u << kernel; }

TEST(NpuPlanMatmul, TiledWeightTakesTheTiledKernelWithItsScratch) {
    NpuDevice dev(0, Config{});
    Graph g;
    Tensor* w = g.new_tensor(DType::Q4_0, {256, 40}, "w");
    Tensor* x = g.new_tensor(DType::F32, {256, 7}, "x");
    Tensor* y = build::mul_mat(g, w, x);
    auto weights = allocate_weights(dev.buffer_type(), {w});
    ASSERT_NE(tiled_of(*w), nullptr);
    // activations: 7 rows x (256 quants + 64 B of 8 scales + 64 B of 8 sums) = 2688;
    // per worker: 64 x 32 accumulators (8192) + 2 buffers of 8 tiles x 576 B (4608 each)
    const uint64_t with_dma = 7 * 384 + 2 * (8192 + 2 * 4608);
    const uint64_t without_dma = 7 * 384 + 2 * 8192;
    DeviceBudget b{1u << 20, 2};
    EXPECT_EQ(plan_matmul_kernel(*y, b), uint32_t{TSL_NPU_MM_TILED});
    EXPECT_EQ(plan_scratch(*y, b), with_dma);
    b.dma = 0;
    EXPECT_EQ(plan_scratch(*y, b), without_dma);
    b.dma = 1;
    EXPECT_TRUE(plan_fits(*y, DeviceBudget{with_dma, 2}));
    EXPECT_FALSE(plan_fits(*y, DeviceBudget{with_dma - 1, 2}));
    b.mm_kernels = bit(TSL_NPU_MM_FLAT) | bit(TSL_NPU_MM_MATRIX);  // tiled not allowed: declined
    EXPECT_EQ(plan_matmul_kernel(*y, b), 0u);
    EXPECT_FALSE(plan_fits(*y, b));
}

TEST(NpuPlanMatmul, MatrixUnitTakesTiledWeightsFromTheColumnThresholdWithItsScratch) {
    NpuDevice dev(0, Config{});
    Graph g;
    Tensor* w = g.new_tensor(DType::Q8_0, {256, 40}, "w");
    Tensor* x_small = g.new_tensor(DType::F32, {256, kMatrixMinColumns - 1}, "x_small");
    Tensor* x_big = g.new_tensor(DType::F32, {256, kMatrixMinColumns}, "x_big");
    Tensor* y_small = build::mul_mat(g, w, x_small);
    Tensor* y_big = build::mul_mat(g, w, x_big);
    auto weights = allocate_weights(dev.buffer_type(), {w});
    DeviceBudget b{1u << 20, 2};
    b.matrix_unit = true;
    EXPECT_EQ(plan_matmul_kernel(*y_small, b), uint32_t{TSL_NPU_MM_TILED});
    EXPECT_EQ(plan_matmul_kernel(*y_big, b), uint32_t{TSL_NPU_MM_MATRIX});
    // the tiled kernel's scratch (M rows of 384 B of Q8; per worker 8192 B of accumulators and two
    // buffers of 8 tiles x 1088 B) plus per worker 8 reshaped tiles of 1280 B and 64 B of counters
    const uint64_t tiled = kMatrixMinColumns * 384 + 2 * (8192 + 2 * 8704);
    EXPECT_EQ(plan_scratch(*y_big, b), tiled + 2 * (8 * 1280 + 64));
    // one byte short of the matrix unit's plan: the tiled kernel takes it
    b.vtcm_bytes = tiled + 2 * (8 * 1280 + 64) - 1;
    EXPECT_EQ(plan_matmul_kernel(*y_big, b), uint32_t{TSL_NPU_MM_TILED});
    b.vtcm_bytes = 1u << 20;
    b.matrix_unit = false;  // no matrix unit (or TESSEL_NPU_MATRIX=0)
    EXPECT_EQ(plan_matmul_kernel(*y_big, b), uint32_t{TSL_NPU_MM_TILED});
    b.matrix_unit = true;
    b.mm_kernels = bit(TSL_NPU_MM_TILED);  // matrix not selected
    EXPECT_EQ(plan_matmul_kernel(*y_big, b), uint32_t{TSL_NPU_MM_TILED});
    b.mm_kernels = bit(TSL_NPU_MM_MATRIX);  // matrix only: below the threshold the node is declined
    EXPECT_EQ(plan_matmul_kernel(*y_big, b), uint32_t{TSL_NPU_MM_MATRIX});
    EXPECT_EQ(plan_matmul_kernel(*y_small, b), 0u);
}

TEST(NpuPlanMatmul, MatrixUnitCountsRoutedColumnsPerExpert) {
    NpuDevice dev(0, Config{});
    Graph g;
    Tensor* w = g.new_tensor(DType::Q4_0, {64, 40, 4}, "experts");
    // 4 experts; ids [2, T]: 2T routed columns, 2T / 4 per expert
    auto node = [&](int64_t tokens) {
        Tensor* x = g.new_tensor(DType::F32, {64, 2, tokens}, "x");
        Tensor* ids = g.new_tensor(DType::I32, {2, tokens}, "ids");
        return build::mul_mat_id(g, w, x, ids);
    };
    Tensor* below = node(2 * kMatrixMinColumns - 1);
    Tensor* at = node(2 * kMatrixMinColumns);
    auto weights = allocate_weights(dev.buffer_type(), {w});
    DeviceBudget b{1u << 20, 2};
    b.matrix_unit = true;
    EXPECT_EQ(plan_matmul_kernel(*below, b), uint32_t{TSL_NPU_MM_TILED});
    EXPECT_EQ(plan_matmul_kernel(*at, b), uint32_t{TSL_NPU_MM_MATRIX});
}

TEST(NpuPlanMatmul, PlainHalfWeightTakesTheFlatKernel) {
    Graph g;
    Tensor* w = g.new_tensor(DType::F16, {100, 40}, "w");
    Tensor* x = g.new_tensor(DType::F32, {100, 7}, "x");
    Tensor* y = build::mul_mat(g, w, x);
    DeviceBudget b{1u << 20, 3};
    EXPECT_EQ(plan_matmul_kernel(*y, b), uint32_t{TSL_NPU_MM_FLAT});
    EXPECT_EQ(plan_scratch(*y, b), 3u * 448u);  // one F32 row of 100 (400 B, rounded to 448) per worker
    b.mm_kernels = bit(TSL_NPU_MM_TILED);
    EXPECT_EQ(plan_matmul_kernel(*y, b), 0u);
    EXPECT_FALSE(plan_fits(*y, b));
}

}  // namespace
}  // namespace tessel::npu

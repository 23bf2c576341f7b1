// The host's matmul plan (plan_matmul.hpp, plan.hpp): the kernel chain (tiled weights -> MATRIX
// or TILED by the cost model; plain F16/F32 -> FLAT; restricted by TESSEL_NPU_MM_SELECT), the
// VTCM each plan states, worked out by hand from tsl_npu_matmul_scratch's rule (proto.h), the
// activation steps, DMA and workers that shrink to fit a small VTCM, and the properties of the
// planner over a sweep of shapes, types and budgets: the budget is never exceeded, a larger budget
// never costs more, and a budget too small for any plan leaves the node to the CPU.
#include <gtest/gtest.h>

#include <string>

#include "model/weights.hpp"
#include "graph/builder.hpp"
#include "graph/builder_attn.hpp"
#include "npu/host/buffer.hpp"
#include "npu/host/device.hpp"
#include "npu/host/plan.hpp"
#include "npu/host/translate.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {
namespace {

constexpr uint32_t bit(uint32_t kernel) { return 1u << kernel; }

TEST(NpuPlanMatmul, TiledWeightTakesTheTiledKernelWithItsScratch) {
    NpuDevice dev("NPU0", Config{});
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
    // a byte short: the tiles are read in place instead of streamed
    const MatmulPlan in_place = plan_matmul(*y, DeviceBudget{with_dma - 1, 2});
    EXPECT_EQ(in_place.dma, 0u);
    EXPECT_EQ(in_place.scratch, without_dma);
    EXPECT_EQ(in_place.act_rows, 7);
    // the smallest plan: one worker, no DMA buffers, one activation row a step
    const uint64_t smallest = 384 + 8192;
    const MatmulPlan least = plan_matmul(*y, DeviceBudget{smallest, 2});
    EXPECT_EQ(least.kernel, uint32_t{TSL_NPU_MM_TILED});
    EXPECT_EQ(least.threads, 1u);
    EXPECT_EQ(least.act_rows, 1);
    EXPECT_EQ(least.steps, 7);
    EXPECT_EQ(plan_scratch(*y, DeviceBudget{smallest, 2}), smallest);
    EXPECT_TRUE(device_supports(*y, DeviceBudget{smallest, 2}));
    EXPECT_FALSE(plan_fits(*y, DeviceBudget{smallest - 1, 2}));
    EXPECT_FALSE(device_supports(*y, DeviceBudget{smallest - 1, 2}));  // the scheduler gives it to the CPU
    try {
        plan_header(*y, DeviceBudget{smallest - 1, 2});
        ADD_FAILURE() << "plan_header accepted a plan that does not fit";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::Unsupported);
        EXPECT_NE(std::string(e.what()).find("8576 bytes of VTCM, the device has 8575"), std::string::npos) << e.what();
    }
    b.mm_kernels = bit(TSL_NPU_MM_FLAT) | bit(TSL_NPU_MM_MATRIX);  // tiled not allowed: declined
    EXPECT_EQ(plan_matmul_kernel(*y, b), 0u);
    EXPECT_FALSE(plan_fits(*y, b));
}

TEST(NpuPlanMatmul, PromptRowsGoInStepsThatFitTheVtcm) {
    NpuDevice dev("NPU0", Config{});
    Graph g;
    Tensor* w = g.new_tensor(DType::Q4_1, {576, 1536}, "w");
    Tensor* x = g.new_tensor(DType::F32, {576, 512}, "x");
    Tensor* y = build::mul_mat(g, w, x);
    auto weights = allocate_weights(dev.buffer_type(), {w});
    // a Q8 row of 576: 576 quants + 128 B of 18 scales + 128 B of 18 sums = 832 B; per worker 8192 B
    // of accumulators and two buffers of 18 tiles x 640 B (11520 each)
    const uint64_t per_worker = 8192 + 2 * 11520;
    DeviceBudget b{8u << 20, 2};
    MatmulPlan p = plan_matmul(*y, b);
    EXPECT_EQ(p.kernel, uint32_t{TSL_NPU_MM_TILED});
    EXPECT_EQ(p.act_rows, 512);  // all 512 rows (416 KiB) in one step
    EXPECT_EQ(p.steps, 1);
    EXPECT_EQ(p.scratch, 512 * 832 + 2 * per_worker);
    // 256 KiB: with the DMA buffers 240 rows fit (3 passes over the weight), without them 295 (2
    // passes): the model prefers one pass less to streaming the tiles
    b.vtcm_bytes = 262144;
    p = plan_matmul(*y, b);
    EXPECT_EQ(p.kernel, uint32_t{TSL_NPU_MM_TILED});
    EXPECT_EQ(p.threads, 2u);
    EXPECT_EQ(p.dma, 0u);
    EXPECT_EQ(p.act_rows, (262144 - 2 * 8192) / 832);
    EXPECT_EQ(p.steps, 2);
    EXPECT_EQ(p.scratch, static_cast<uint64_t>(p.act_rows) * 832 + 2 * 8192);
    EXPECT_EQ(plan_scratch(*y, b), p.scratch);
    // 48 row tiles: chunks of 48 / (4 x 2) = 6 items
    EXPECT_EQ(p.chunk, 6);
    const tsl_npu_matmul_kparams kp = matmul_kparams_of(p);
    EXPECT_EQ(kp.act_rows, static_cast<uint32_t>(p.act_rows));
    EXPECT_EQ(kp.chunk, 6u);
    EXPECT_EQ(kp.threads, 2u);
    EXPECT_EQ(kp.dma, 0u);
}

TEST(NpuPlanMatmul, MatrixUnitTakesManyColumnsPerItemByTheCostModel) {
    NpuDevice dev("NPU0", Config{});
    Graph g;
    Tensor* w = g.new_tensor(DType::Q8_0, {256, 40}, "w");
    // the model's break-even is 16 columns per item (npu-matrix-threshold-2026-12-01.md)
    Tensor* x_small = g.new_tensor(DType::F32, {256, 12}, "x_small");
    Tensor* x_big = g.new_tensor(DType::F32, {256, 24}, "x_big");
    Tensor* y_small = build::mul_mat(g, w, x_small);
    Tensor* y_big = build::mul_mat(g, w, x_big);
    auto weights = allocate_weights(dev.buffer_type(), {w});
    DeviceBudget b{1u << 20, 2};
    b.matrix_unit = true;
    EXPECT_EQ(plan_matmul_kernel(*y_small, b), uint32_t{TSL_NPU_MM_TILED});
    EXPECT_EQ(plan_matmul_kernel(*y_big, b), uint32_t{TSL_NPU_MM_MATRIX});
    // the tiled kernel's scratch (M rows of 384 B of Q8; per worker 8192 B of accumulators and two
    // buffers of 8 tiles x 1088 B) plus per worker 8 reshaped tiles of 1280 B and 64 B of counters
    const uint64_t tiled = 24 * 384 + 2 * (8192 + 2 * 8704);
    EXPECT_EQ(plan_scratch(*y_big, b), tiled + 2 * (8 * 1280 + 64));
    // a VTCM that holds the tiled kernel's two workers (no DMA) and all rows, but the matrix unit's
    // panels for one worker only, in two steps: the tiled plan costs less
    b.vtcm_bytes = 2 * 8192 + 24 * 384;
    EXPECT_EQ(plan_matmul_kernel(*y_big, b), uint32_t{TSL_NPU_MM_TILED});
    b.vtcm_bytes = 1u << 20;
    b.matrix_unit = false;  // no matrix unit (or TESSEL_NPU_MATRIX=0)
    EXPECT_EQ(plan_matmul_kernel(*y_big, b), uint32_t{TSL_NPU_MM_TILED});
    b.matrix_unit = true;
    b.mm_kernels = bit(TSL_NPU_MM_TILED);  // matrix not selected
    EXPECT_EQ(plan_matmul_kernel(*y_big, b), uint32_t{TSL_NPU_MM_TILED});
    b.mm_kernels = bit(TSL_NPU_MM_MATRIX);  // matrix only: it takes every shape it fits
    EXPECT_EQ(plan_matmul_kernel(*y_big, b), uint32_t{TSL_NPU_MM_MATRIX});
    EXPECT_EQ(plan_matmul_kernel(*y_small, b), uint32_t{TSL_NPU_MM_MATRIX});
}

TEST(NpuPlanMatmul, MatrixUnitCountsRoutedColumnsPerExpert) {
    NpuDevice dev("NPU0", Config{});
    Graph g;
    Tensor* w = g.new_tensor(DType::Q4_0, {64, 40, 4}, "experts");
    // 4 experts; ids [2, T]: 2T routed columns, 2T / 4 per expert
    auto node = [&](int64_t tokens) {
        Tensor* x = g.new_tensor(DType::F32, {64, 2, tokens}, "x");
        Tensor* ids = g.new_tensor(DType::I32, {2, tokens}, "ids");
        return build::mul_mat_id(g, w, x, ids);
    };
    Tensor* few = node(20);   // 10 columns per expert
    Tensor* many = node(64);  // 32 columns per expert
    auto weights = allocate_weights(dev.buffer_type(), {w});
    DeviceBudget b{1u << 20, 2};
    b.matrix_unit = true;
    EXPECT_EQ(plan_matmul_kernel(*few, b), uint32_t{TSL_NPU_MM_TILED});
    EXPECT_EQ(plan_matmul_kernel(*many, b), uint32_t{TSL_NPU_MM_MATRIX});
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

// Every plan over a sweep of shapes, weight types, worker counts and budgets (1 KiB to 64 MiB):
// its scratch is tsl_npu_matmul_scratch of what it chose and within the budget, its steps cover
// the rows; the cost never grows with the budget, and once a shape has a plan every larger budget
// has one; below the smallest plan (one worker, one row, no DMA) there is none.
TEST(NpuPlanMatmul, SweepNeverExceedsTheBudgetAndNeverCostsMoreWithMore) {
    const uint32_t types[][2] = {{544, 0}, {576, 0}, {640, 0}, {1088, 0}, {0, 2}, {0, 4}};  // tile bytes, float bytes
    int64_t checked = 0;
    for (const int64_t k : {32, 256, 576, 1536, 4096})
        for (const int64_t n : {1, 40, 576})
            for (const int64_t rows : {1, 7, 64, 512, 2048})
                for (const auto& type : types)
                    for (const int64_t experts : {0, 8})
                        for (const uint32_t threads : {1u, 2u, 4u})
                            for (const bool matrix : {false, true})
                                for (const uint32_t dma : {0u, 1u, 2u}) {
                                    MatmulShape s{k, n, rows, experts ? experts : 1, experts ? rows * 2 : rows, experts,
                                                  type[0], type[1]};
                                    DeviceBudget b{0, threads};
                                    b.matrix_unit = matrix;
                                    b.dma = dma;
                                    bool had_plan = false;
                                    double last_cost = 0.0;
                                    for (double bytes = 1024; bytes <= 64.0 * 1024 * 1024; bytes *= 1.7) {
                                        b.vtcm_bytes = static_cast<uint64_t>(bytes);
                                        const MatmulPlan p = plan_matmul(s, b);
                                        ++checked;
                                        if (p.kernel == 0) {
                                            ASSERT_FALSE(had_plan) << "k " << k << " n " << n << " rows " << rows << " at " << bytes;
                                            continue;
                                        }
                                        ASSERT_LE(p.scratch, b.vtcm_bytes);
                                        ASSERT_EQ(p.scratch, tsl_npu_matmul_scratch(p.kernel, p.dma, s.tile_bytes, k, p.act_rows,
                                                                                    experts, p.threads));
                                        ASSERT_TRUE(p.dma == 0 || p.dma == dma);
                                        ASSERT_GE(p.threads, 1u);
                                        ASSERT_LE(p.threads, threads);
                                        ASSERT_GE(p.chunk, 1);
                                        ASSERT_GE(p.act_rows, 1);
                                        ASSERT_LE(p.act_rows, rows);
                                        ASSERT_GE(p.act_rows * p.steps, rows);
                                        ASSERT_LT(p.act_rows * (p.steps - 1), rows);
                                        ASSERT_TRUE(matrix || p.kernel != TSL_NPU_MM_MATRIX);
                                        ASSERT_EQ(p.kernel == TSL_NPU_MM_FLAT, type[1] != 0);
                                        if (had_plan) {
                                            ASSERT_LE(p.cost_ns, last_cost) << "k " << k << " n " << n << " rows " << rows;
                                        }
                                        had_plan = true;
                                        last_cost = p.cost_ns;
                                    }
                                    ASSERT_TRUE(had_plan);
                                    // the smallest plan, and a byte less
                                    const uint32_t least_kernel = type[1] ? uint32_t{TSL_NPU_MM_FLAT} : uint32_t{TSL_NPU_MM_TILED};
                                    const uint64_t least = tsl_npu_matmul_scratch(least_kernel, 0, s.tile_bytes, k, least_kernel == TSL_NPU_MM_FLAT ? rows : 1,
                                                                                  experts, 1);
                                    b.vtcm_bytes = least;
                                    ASSERT_NE(plan_matmul(s, b).kernel, 0u);
                                    b.vtcm_bytes = least - 1;
                                    ASSERT_EQ(plan_matmul(s, b).kernel, 0u);
                                }
    EXPECT_GT(checked, 100000);
}

}  // namespace
}  // namespace tessel::npu

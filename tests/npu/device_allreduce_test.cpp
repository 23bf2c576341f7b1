// ALLREDUCE and ALLREDUCE_ADD on the device runtime alone (one rank's op, descriptors by hand):
// a rank writes exactly its share's sums into every rank's tensor; the fused form writes the whole
// sum plus the addend (broadcast rows too) to its output and leaves the ranks' tensors alone; the
// op refuses a plan it cannot run (no step, a 1-D step off 128, less scratch than it takes).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "npu/device_batch.hpp"

namespace tessel::test {
namespace {

class DeviceAllReduce : public DeviceTest {
protected:
    /// Sets the op's rank, rank count, mode and plan (block units a step, stated scratch bytes).
    static void plan(tsl_npu_op_desc& op, uint32_t rank, uint32_t n, uint32_t mode, uint32_t block, uint32_t scratch) {
        op.params[0] = static_cast<int32_t>(rank);
        op.params[1] = static_cast<int32_t>(n);
        op.params[2] = static_cast<int32_t>(mode);
        const tsl_npu_kparams_header h{scratch, 0};
        const tsl_npu_allreduce_kparams kp{block, 0};
        std::memcpy(op.kparams, &h, sizeof h);
        std::memcpy(op.kparams + TSL_NPU_KPARAMS_BODY, &kp, sizeof kp);
    }
    static float value(uint32_t rank, size_t i) { return static_cast<float>((i * 5 + rank * 11) % 89) * 0.41f - 17.0f; }
    void fill(uint64_t offset, uint32_t rank, size_t count) {
        for (size_t i = 0; i < count; ++i) at<float>(offset)[i] = value(rank, i);
    }
};

TEST_F(DeviceAllReduce, ARankWritesItsShareIntoEveryRanksTensorAndNothingElse) {
    constexpr size_t kCount = 1000;  // 2 ranks: rank 1's share is [512, 1000)
    BatchBuilder b;
    const uint32_t buf = b.buffer(data_);
    const uint16_t x0 = b.tensor(buf, TSL_NPU_TYPE_F32, 0, {kCount, 1, 1, 1});
    const uint16_t x1 = b.tensor(buf, TSL_NPU_TYPE_F32, 8192, {kCount, 1, 1, 1});
    fill(0, 0, kCount);
    fill(8192, 1, kCount);
    plan(b.op(TSL_NPU_OP_ALLREDUCE, {}, {x0, x1}), 1, 2, TSL_NPU_ALLREDUCE_1D, 128,
         static_cast<uint32_t>(tsl_npu_allreduce_scratch(TSL_NPU_ALLREDUCE_1D, kCount, 128, 2)));
    ASSERT_EQ(run(b), TSL_NPU_OK);
    size_t bad = 0;
    for (size_t i = 0; i < kCount; ++i) {
        const bool mine = i >= 512;
        bad += at<float>(0)[i] != (mine ? value(0, i) + value(1, i) : value(0, i));
        bad += at<float>(8192)[i] != (mine ? value(0, i) + value(1, i) : value(1, i));
    }
    EXPECT_EQ(bad, 0u);
}

TEST_F(DeviceAllReduce, TheFusedFormAddsABroadcastRowAndLeavesTheRanksTensors) {
    // 3 ranks of [40, 3, 2] with padded rows (stride 48 floats), the addend one row, the output contiguous
    const Ne ne{40, 3, 2, 1};
    const Nb padded{4, 48 * 4, 48 * 4 * 3, 48 * 4 * 6};
    BatchBuilder b;
    const uint32_t buf = b.buffer(data_);
    std::vector<uint16_t> srcs;
    for (uint32_t r = 0; r < 3; ++r) {
        srcs.push_back(b.tensor(buf, TSL_NPU_TYPE_F32, r * 8192, ne, padded));
        fill(r * 8192, r, 48 * 6);
    }
    srcs.push_back(b.tensor(buf, TSL_NPU_TYPE_F32, 3 * 8192, {40, 1, 1, 1}));
    fill(3 * 8192, 7, 40);
    const uint16_t out = b.tensor(buf, TSL_NPU_TYPE_F32, 4 * 8192, ne);
    tsl_npu_op_desc& op = b.op(TSL_NPU_OP_ALLREDUCE_ADD, {srcs[0], srcs[1], srcs[2], srcs[3]}, {out});
    plan(op, 2, 3, TSL_NPU_ALLREDUCE_2D, 2, static_cast<uint32_t>(tsl_npu_allreduce_scratch(TSL_NPU_ALLREDUCE_2D, 40, 2, 2)));
    ASSERT_EQ(run(b), TSL_NPU_OK);
    size_t bad = 0;
    for (size_t row = 0; row < 6; ++row)
        for (size_t i = 0; i < 40; ++i) {
            const size_t at_x = row * 48 + i;
            const float want = ((value(0, at_x) + value(1, at_x)) + value(2, at_x)) + value(7, i);
            bad += at<float>(4 * 8192)[row * 40 + i] != want;
            for (uint32_t r = 0; r < 3; ++r) bad += at<float>(r * 8192)[at_x] != value(r, at_x);
        }
    EXPECT_EQ(bad, 0u);
}

TEST_F(DeviceAllReduce, APlanItCannotRunIsRefused) {
    struct Plan {
        uint32_t block, scratch;
        int32_t status;
    };
    const uint32_t enough = static_cast<uint32_t>(tsl_npu_allreduce_scratch(TSL_NPU_ALLREDUCE_1D, 256, 256, 2));
    for (const Plan& p : {Plan{0, enough, TSL_NPU_ERR_BAD_DESC}, Plan{100, enough, TSL_NPU_ERR_BAD_DESC},
                          Plan{256, enough - 64, TSL_NPU_ERR_NO_VTCM}, Plan{256, enough, TSL_NPU_OK}}) {
        BatchBuilder b;
        const uint32_t buf = b.buffer(data_);
        const uint16_t x0 = b.tensor(buf, TSL_NPU_TYPE_F32, 0, {256, 1, 1, 1});
        const uint16_t x1 = b.tensor(buf, TSL_NPU_TYPE_F32, 4096, {256, 1, 1, 1});
        plan(b.op(TSL_NPU_OP_ALLREDUCE, {}, {x0, x1}), 0, 2, TSL_NPU_ALLREDUCE_1D, p.block, p.scratch);
        EXPECT_EQ(run(b), p.status) << "block " << p.block << ", scratch " << p.scratch;
    }
}

}  // namespace
}  // namespace tessel::test

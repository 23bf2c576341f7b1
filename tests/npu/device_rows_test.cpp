// Device-level behaviour of the element-wise/normalisation/attention-helper ops that
// `tessel test-ops` cannot reach: row ids outside the table found while running (the reference
// throws; the device stops the op with BAD_DESC), SET_ROWS with repeated ids (the last source row
// wins, as the reference), and op parameters the device does not implement (BAD_TYPE at check).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "npu/device_batch.hpp"

namespace tessel::test {
namespace {

using NpuDeviceRows = DeviceTest;

TEST_F(NpuDeviceRows, GetRowsIdOutsideTheTableStopsWithBadDesc) {
    float* table = at<float>(0);
    for (int i = 0; i < 12; ++i) table[i] = static_cast<float>(i);
    int32_t* ids = at<int32_t>(4096);
    ids[0] = 1;
    ids[1] = 3;  // the table has rows 0..2
    BatchBuilder bb;
    const uint32_t buf = bb.buffer(data_);
    const uint16_t tt = bb.tensor(buf, TSL_NPU_TYPE_F32, 0, {4, 3, 1, 1});
    const uint16_t ti = bb.tensor(buf, TSL_NPU_TYPE_I32, 4096, {2, 1, 1, 1});
    const uint16_t td = bb.tensor(buf, TSL_NPU_TYPE_F32, 8192, {4, 2, 1, 1});
    bb.op(TSL_NPU_OP_GET_ROWS, {tt, ti}, {td});
    EXPECT_EQ(run(bb), TSL_NPU_ERR_BAD_DESC);
    EXPECT_EQ(rsp_.err_op, 0u);
    EXPECT_EQ(rsp_.n_done, 0u);
    ids[1] = 2;
    ASSERT_EQ(run(bb, 2), TSL_NPU_OK);
    EXPECT_EQ(at<float>(8192)[0], 4.0f);  // row 1
    EXPECT_EQ(at<float>(8192)[7], 11.0f); // row 2, last element
}

TEST_F(NpuDeviceRows, SetRowsRepeatedIdsLastSourceRowWins) {
    float* dst = at<float>(0);
    for (int i = 0; i < 8; ++i) dst[i] = -1.0f;
    float* rows = at<float>(4096);
    for (int i = 0; i < 6; ++i) rows[i] = static_cast<float>(10 + i);
    int32_t* ids = at<int32_t>(8192);
    ids[0] = 2;
    ids[1] = 0;
    ids[2] = 2;
    BatchBuilder bb;
    const uint32_t buf = bb.buffer(data_);
    const uint16_t tr = bb.tensor(buf, TSL_NPU_TYPE_F32, 4096, {2, 3, 1, 1});
    const uint16_t ti = bb.tensor(buf, TSL_NPU_TYPE_I32, 8192, {3, 1, 1, 1});
    const uint16_t td = bb.tensor(buf, TSL_NPU_TYPE_F32, 0, {2, 4, 1, 1});
    bb.op(TSL_NPU_OP_SET_ROWS, {tr, ti}, {td});
    ASSERT_EQ(run(bb), TSL_NPU_OK);
    const float want[8] = {12, 13, -1, -1, 14, 15, -1, -1};  // row 0 <- source 1, row 2 <- source 2
    for (int i = 0; i < 8; ++i) EXPECT_EQ(dst[i], want[i]) << i;
}

TEST_F(NpuDeviceRows, KindsAndModesTheDeviceLacksAreBadType) {
    BatchBuilder bb;
    const uint32_t buf = bb.buffer(data_);
    const uint16_t ta = bb.tensor(buf, TSL_NPU_TYPE_F32, 0, {8, 2, 1, 1});
    const uint16_t td = bb.tensor(buf, TSL_NPU_TYPE_F32, 4096, {8, 2, 1, 1});
    const uint16_t tp = bb.tensor(buf, TSL_NPU_TYPE_I32, 8192, {1, 1, 1, 1});
    bb.op(TSL_NPU_OP_UNARY, {ta}, {td}).params[0] = 9;  // ABS
    EXPECT_EQ(run(bb), TSL_NPU_ERR_BAD_TYPE);
    bb.ops[0].params[0] = TSL_NPU_UNARY_TANH;
    EXPECT_EQ(run(bb, 2), TSL_NPU_OK);
    bb.ops.clear();
    tsl_npu_op_desc& rope = bb.op(TSL_NPU_OP_ROPE, {ta, tp}, {td});
    rope.params[1] = 8;
    rope.params[2] = 8;  // a mode other than NORM (0) and NEOX (2)
    EXPECT_EQ(run(bb, 3), TSL_NPU_ERR_BAD_TYPE);
    bb.ops[0].params[2] = 2;
    EXPECT_EQ(run(bb, 4), TSL_NPU_OK);
    bb.ops.clear();
    const uint16_t th = bb.tensor(buf, TSL_NPU_TYPE_F32, 12288, {4, 2, 1, 1});  // half of ta's rows
    bb.op(TSL_NPU_OP_GLU, {ta}, {th}).params[0] = 2;  // SWIGLU_OAI
    EXPECT_EQ(run(bb, 5), TSL_NPU_ERR_BAD_TYPE);
    bb.ops[0].params[0] = TSL_NPU_GLU_GEGLU;
    EXPECT_EQ(run(bb, 6), TSL_NPU_OK);
}

}  // namespace
}  // namespace tessel::test

// Device-level behaviour of the element-wise/normalisation/attention-helper ops that
// `tessel test-ops` cannot reach: row ids outside the table found while running (the reference
// throws; the device stops the op with BAD_DESC), SET_ROWS with repeated ids (the last source row
// wins, as the reference), op parameters the device does not implement (BAD_TYPE at check), and
// GLU's plain C row kernel on a CPU whose AVX-512 one test-ops runs (outputs equal bit for bit).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

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

// SWIGLU and GEGLU over rows of 37 (two full vectors and a partial one) with x from -95 to 95: the
// plain C kernel (isa bits cleared) against the formulas in double (relative 4e-6: vec.h's
// sigmoid is within 1e-6, plus the float products), and the AVX-512 kernel, where the CPU has
// it, equal to the C kernel bit for bit.
TEST_F(NpuDeviceRows, GluRowKernelPlainCAndAvx512Agree) {
    constexpr int64_t k = 37, rows = 6;
    float* src = at<float>(0);
    for (int64_t i = 0; i < 2 * k * rows; ++i) src[i] = static_cast<float>((i * 53) % 191 - 95) * (i % 3 ? 1.0f : 0.01f);
    const uint32_t host_isa = device_->platform.isa;
    for (const int32_t kind : {TSL_NPU_GLU_SWIGLU, TSL_NPU_GLU_GEGLU}) {
        BatchBuilder bb;
        const uint32_t buf = bb.buffer(data_);
        const uint16_t ta = bb.tensor(buf, TSL_NPU_TYPE_F32, 0, {2 * k, rows, 1, 1});
        const uint16_t td = bb.tensor(buf, TSL_NPU_TYPE_F32, 65536, {k, rows, 1, 1});
        bb.op(TSL_NPU_OP_GLU, {ta}, {td}).params[0] = kind;
        tsl_npu_device_use_isa(device_.get(), 0);
        ASSERT_EQ(run(bb), TSL_NPU_OK);
        const std::vector<float> c_out(at<float>(65536), at<float>(65536) + k * rows);
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t i = 0; i < k; ++i) {
                const double x = src[r * 2 * k + i], g = src[r * 2 * k + k + i];
                const double z = 0.797884560802865 * (x + 0.044715 * x * x * x);
                const double f = kind == TSL_NPU_GLU_SWIGLU ? x / (1.0 + std::exp(-x)) : x / (1.0 + std::exp(-2.0 * z));
                ASSERT_NEAR(c_out[r * k + i], f * g, 4e-6 * std::fabs(f * g) + 1e-30) << kind << " x=" << x;
            }
        uint64_t seq = 2;
        for (const uint32_t isa : {TSL_NPU_ISA_AVX2, TSL_NPU_ISA_AVX512}) {
            if (!(host_isa & isa)) continue;  // no such build to compare on this CPU
            tsl_npu_device_use_isa(device_.get(), isa);
            ASSERT_EQ(run(bb, seq++), TSL_NPU_OK);
            ASSERT_EQ(std::memcmp(at<float>(65536), c_out.data(), c_out.size() * 4), 0) << kind << " isa " << isa;
        }
    }
    tsl_npu_device_use_isa(device_.get(), host_isa);
}

}  // namespace
}  // namespace tessel::test

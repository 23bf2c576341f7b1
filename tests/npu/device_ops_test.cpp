// The device runtime's ops run through tsl_npu_device_run on the posix platform (2 workers),
// each against values computed here with the reference semantics (src/cpu/ref): float arithmetic,
// broadcast of src1 in every dimension, elements matched in ne order for CPY, tessel's fp16.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "core/fp16.hpp"
#include "npu/device_batch.hpp"

namespace tessel::test {
namespace {

uint32_t f32_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

// Value i of a test pattern: varied magnitudes and signs, not exact in F16.
float pattern(int64_t i, float scale) { return static_cast<float>((i * 37) % 101 - 50) * scale + 0.1f; }

using NpuDeviceOps = DeviceTest;

TEST_F(NpuDeviceOps, AddBroadcastsSrc1InEveryDim) {
    const Ne na{6, 4, 3, 2}, nb{3, 2, 1, 2};
    float* a = at<float>(0);
    float* b = at<float>(8192);
    for (int64_t i = 0; i < 144; ++i) a[i] = pattern(i, 0.37f);
    for (int64_t i = 0; i < 12; ++i) b[i] = pattern(i + 5, 0.11f);
    BatchBuilder bb;
    const uint32_t buf = bb.buffer(data_);
    const uint16_t ta = bb.tensor(buf, TSL_NPU_TYPE_F32, 0, na);
    const uint16_t tb = bb.tensor(buf, TSL_NPU_TYPE_F32, 8192, nb);
    const uint16_t td = bb.tensor(buf, TSL_NPU_TYPE_F32, 16384, na);
    bb.op(TSL_NPU_OP_ADD, {ta, tb}, {td});
    ASSERT_EQ(run(bb), TSL_NPU_OK);
    const float* d = at<float>(16384);
    for (int64_t i3 = 0; i3 < 2; ++i3)
        for (int64_t i2 = 0; i2 < 3; ++i2)
            for (int64_t i1 = 0; i1 < 4; ++i1)
                for (int64_t i0 = 0; i0 < 6; ++i0) {
                    const int64_t ia = i0 + 6 * (i1 + 4 * (i2 + 3 * i3));
                    const int64_t ib = i0 % 3 + 3 * (i1 % 2 + 2 * (i3 % 2));
                    ASSERT_EQ(d[ia], a[ia] + b[ib]) << ia;
                }
}

TEST_F(NpuDeviceOps, MulLargeRowsOnBothWorkers) {
    const int64_t n0 = 256, rows = 96;  // 24576 elements: above the single-thread limit
    float* a = at<float>(0);
    float* b = at<float>(n0 * rows * 4);
    for (int64_t i = 0; i < n0 * rows; ++i) a[i] = pattern(i, 0.013f);
    for (int64_t i = 0; i < n0; ++i) b[i] = pattern(i, -0.7f);
    BatchBuilder bb;
    const uint32_t buf = bb.buffer(data_);
    const uint16_t ta = bb.tensor(buf, TSL_NPU_TYPE_F32, 0, {n0, rows, 1, 1});
    const uint16_t tb = bb.tensor(buf, TSL_NPU_TYPE_F32, n0 * rows * 4, {n0, 1, 1, 1});
    const uint16_t td = bb.tensor(buf, TSL_NPU_TYPE_F32, n0 * rows * 4 + 4096, {n0, rows, 1, 1});
    bb.op(TSL_NPU_OP_MUL, {ta, tb}, {td});
    ASSERT_EQ(run(bb), TSL_NPU_OK);
    const float* d = at<float>(n0 * rows * 4 + 4096);
    for (int64_t i = 0; i < n0 * rows; ++i) ASSERT_EQ(d[i], a[i] * b[i % n0]) << i;
    EXPECT_EQ(profile(bb)[0].counters[0], static_cast<uint64_t>(n0 * rows * 8 + n0 * 4));
}

TEST_F(NpuDeviceOps, MulTransposedF16SrcAndAddIntoF16) {
    // src0: a transposed view [7, 5] of a contiguous F16 [5, 7]; src1 F32 [7, 1].
    uint16_t* m = at<uint16_t>(0);
    for (int64_t i = 0; i < 35; ++i) m[i] = fp32_to_fp16(pattern(i, 0.29f));
    float* b = at<float>(4096);
    for (int64_t i = 0; i < 7; ++i) b[i] = pattern(i, 1.7f);
    BatchBuilder bb;
    const uint32_t buf = bb.buffer(data_);
    const uint16_t ta = bb.tensor(buf, TSL_NPU_TYPE_F16, 0, {7, 5, 1, 1}, {10, 2, 70, 70});
    const uint16_t tb = bb.tensor(buf, TSL_NPU_TYPE_F32, 4096, {7, 1, 1, 1});
    const uint16_t tm = bb.tensor(buf, TSL_NPU_TYPE_F32, 8192, {7, 5, 1, 1});
    const uint16_t th = bb.tensor(buf, TSL_NPU_TYPE_F16, 12288, {7, 5, 1, 1});
    bb.op(TSL_NPU_OP_MUL, {ta, tb}, {tm});
    bb.op(TSL_NPU_OP_ADD, {tm, tb}, {th});
    ASSERT_EQ(run(bb), TSL_NPU_OK);
    const float* prod = at<float>(8192);
    const uint16_t* sum = at<uint16_t>(12288);
    for (int64_t i1 = 0; i1 < 5; ++i1)
        for (int64_t i0 = 0; i0 < 7; ++i0) {
            const float p = fp16_to_fp32(m[i1 + 5 * i0]) * b[i0];
            ASSERT_EQ(prod[i0 + 7 * i1], p);
            ASSERT_EQ(sum[i0 + 7 * i1], fp32_to_fp16(p + b[i0]));
        }
}

// CPY from a permuted source (axes of a contiguous [2, 3, 4] reversed) into a reshaped [8, 3]
// destination, for each type pair.
TEST_F(NpuDeviceOps, CpyEveryTypePairPermutedToReshaped) {
    const uint32_t types[] = {TSL_NPU_TYPE_F32, TSL_NPU_TYPE_F16};
    for (const uint32_t from : types) {
        for (const uint32_t to : types) {
            SCOPED_TRACE(testing::Message() << "from " << from << " to " << to);
            const uint64_t es = type_bytes(from);
            float value[24];
            for (int64_t i = 0; i < 24; ++i) {
                value[i] = pattern(i, 0.0173f);
                if (from == TSL_NPU_TYPE_F32)
                    *at<float>(i * 4) = value[i];
                else
                    *at<uint16_t>(i * 2) = fp32_to_fp16(value[i]);
            }
            BatchBuilder bb;
            const uint32_t buf = bb.buffer(data_);
            const uint16_t ts = bb.tensor(buf, from, 0, {4, 3, 2, 1}, {6 * es, 2 * es, es, 24 * es});
            const uint16_t td = bb.tensor(buf, to, 4096, {8, 3, 1, 1});  // rows cross the source's planes
            bb.op(TSL_NPU_OP_CPY, {ts}, {td});
            ASSERT_EQ(run(bb), TSL_NPU_OK);
            int64_t k = 0;  // flat index in the source's ne order
            for (int64_t k2 = 0; k2 < 2; ++k2)
                for (int64_t k1 = 0; k1 < 3; ++k1)
                    for (int64_t k0 = 0; k0 < 4; ++k0, ++k) {
                        const int64_t p = k2 + 2 * (k1 + 3 * k0);  // element of the contiguous [2, 3, 4]
                        const float v = from == TSL_NPU_TYPE_F32 ? value[p] : fp16_to_fp32(fp32_to_fp16(value[p]));
                        if (to == TSL_NPU_TYPE_F32)
                            ASSERT_EQ(f32_bits(at<float>(4096)[k]), f32_bits(v)) << k;
                        else
                            ASSERT_EQ(at<uint16_t>(4096)[k], fp32_to_fp16(v)) << k;
                    }
        }
    }
}

TEST_F(NpuDeviceOps, CpyKeepsNanPayloadsAndFillsPaddedRows) {
    // Same type: bits copied (a signalling F32 NaN stays as it is); rows into a padded F16 dst.
    uint32_t* a = at<uint32_t>(0);
    for (int64_t i = 0; i < 24; ++i) a[i] = f32_bits(pattern(i, 3.3f));
    a[5] = 0x7f800123u;
    BatchBuilder bb;
    const uint32_t buf = bb.buffer(data_);
    const uint16_t ts = bb.tensor(buf, TSL_NPU_TYPE_F32, 0, {8, 3, 1, 1});
    const uint16_t tc = bb.tensor(buf, TSL_NPU_TYPE_F32, 4096, {8, 3, 1, 1});
    const uint16_t th = bb.tensor(buf, TSL_NPU_TYPE_F16, 8192, {8, 3, 1, 1}, {2, 40, 120, 120});
    bb.op(TSL_NPU_OP_CPY, {ts}, {tc});
    bb.op(TSL_NPU_OP_CPY, {ts}, {th});
    ASSERT_EQ(run(bb), TSL_NPU_OK);
    for (int64_t i = 0; i < 24; ++i) {
        ASSERT_EQ(at<uint32_t>(4096)[i], a[i]) << i;
        float f;
        std::memcpy(&f, &a[i], 4);
        ASSERT_EQ(at<uint16_t>(8192)[i % 8 + 20 * (i / 8)], fp32_to_fp16(f)) << i;
    }
    EXPECT_EQ(at<uint16_t>(8192)[8], 0u);  // padding untouched
}

TEST_F(NpuDeviceOps, ScaleWithBias) {
    const float s = 0.75f, bias = -1.25f;
    float* a = at<float>(0);
    for (int64_t i = 0; i < 165; ++i) a[i] = pattern(i, 0.41f);
    uint16_t* h = at<uint16_t>(2048);
    for (int64_t i = 0; i < 12; ++i) h[i] = fp32_to_fp16(pattern(i, 0.9f));
    BatchBuilder bb;
    const uint32_t buf = bb.buffer(data_);
    const uint16_t ta = bb.tensor(buf, TSL_NPU_TYPE_F32, 0, {33, 5, 1, 1});
    const uint16_t td = bb.tensor(buf, TSL_NPU_TYPE_F32, 4096, {33, 5, 1, 1});
    const uint16_t th = bb.tensor(buf, TSL_NPU_TYPE_F16, 2048, {3, 2, 1, 1}, {4, 12, 24, 24});  // every other half
    const uint16_t to = bb.tensor(buf, TSL_NPU_TYPE_F32, 8192, {3, 2, 1, 1});
    for (const auto& [src, dst] : {std::pair{ta, td}, std::pair{th, to}}) {
        tsl_npu_op_desc& o = bb.op(TSL_NPU_OP_SCALE, {src}, {dst});
        std::memcpy(&o.params[0], &s, 4);
        std::memcpy(&o.params[1], &bias, 4);
    }
    ASSERT_EQ(run(bb), TSL_NPU_OK);
    for (int64_t i = 0; i < 165; ++i) ASSERT_EQ(at<float>(4096)[i], a[i] * s + bias) << i;
    for (int64_t i = 0; i < 6; ++i) ASSERT_EQ(at<float>(8192)[i], fp16_to_fp32(h[2 * i]) * s + bias) << i;
}

TEST_F(NpuDeviceOps, FenceWritesItsSlot) {
    npu::ShmBuffer fences("npu-device-test-fences", 4 * TSL_NPU_FENCE_SLOT_BYTES);
    ASSERT_EQ(map(fences), TSL_NPU_OK);
    BatchBuilder bb;
    const uint32_t buf = bb.buffer(fences);
    const uint16_t tf = bb.tensor(buf, TSL_NPU_TYPE_I32, 0, {128, 1, 1, 1});  // 4 slots, 512 bytes
    tsl_npu_op_desc& o = bb.op(TSL_NPU_OP_FENCE, {}, {tf});
    o.params[0] = static_cast<int32_t>(0x89abcdefu);
    o.params[1] = 0x01234567;
    o.params[2] = 3;
    ASSERT_EQ(run(bb), TSL_NPU_OK);
    uint64_t value;
    std::memcpy(&value, fences.data() + 3 * TSL_NPU_FENCE_SLOT_BYTES, 8);
    EXPECT_EQ(value, 0x0123456789abcdefull);
    EXPECT_EQ(profile(bb)[0].counters[0], 8u);

    bb.ops[0].params[2] = 4;  // past the tensor's 4 slots
    EXPECT_EQ(run(bb), TSL_NPU_ERR_BAD_DESC);
    EXPECT_EQ(rsp_.err_op, 0u);
}

TEST_F(NpuDeviceOps, RefusesRepackedOperandsInEveryOp) {
    // No op reads 32x32 tiles yet: an operand flagged REPACKED is BAD_TYPE before anything runs,
    // whichever slot it is in; the same batch without the flag runs.
    struct Case {
        uint32_t opcode;
        int n_src;
    };
    for (const Case& c : {Case{TSL_NPU_OP_ADD, 2}, Case{TSL_NPU_OP_MUL, 2}, Case{TSL_NPU_OP_SUB, 2}, Case{TSL_NPU_OP_DIV, 2},
                          Case{TSL_NPU_OP_CPY, 1}, Case{TSL_NPU_OP_SCALE, 1}, Case{TSL_NPU_OP_RMS_NORM, 1},
                          Case{TSL_NPU_OP_MEMCPY, 1}, Case{TSL_NPU_OP_FENCE, 0}})
        for (int flagged = 0; flagged <= c.n_src; ++flagged) {
            SCOPED_TRACE(std::to_string(c.opcode) + " operand " + std::to_string(flagged));
            BatchBuilder bb;
            const uint32_t buf = bb.buffer(data_);
            std::vector<uint16_t> t;
            for (int i = 0; i <= c.n_src; ++i) t.push_back(bb.tensor(buf, TSL_NPU_TYPE_F32, 4096u * static_cast<uint64_t>(i), {64, 1, 1, 1}));
            bb.op(TSL_NPU_OP_NOP, {}, {});
            tsl_npu_op_desc& o = bb.op(c.opcode, {}, {});
            for (int i = 0; i < c.n_src; ++i) o.src[i] = t[static_cast<size_t>(i)];
            o.dst[0] = t.back();
            ASSERT_EQ(run(bb), TSL_NPU_OK);
            bb.tensors[static_cast<size_t>(flagged)].flags = TSL_NPU_TENSOR_WEIGHT | TSL_NPU_TENSOR_REPACKED;
            EXPECT_EQ(run(bb), TSL_NPU_ERR_BAD_TYPE);
            EXPECT_EQ(rsp_.err_op, 1u);
            EXPECT_EQ(rsp_.n_done, 0u);
        }
}

}  // namespace
}  // namespace tessel::test

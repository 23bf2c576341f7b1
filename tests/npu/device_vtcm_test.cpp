// The device's scratchpad (VTCM): the per-op bump allocator (vtcm.h), the executor's refusal of
// an op stating more scratch than the device has, and SOFT_MAX, whose row buffers live there,
// against softmax computed here in double.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "npu/device/vtcm.h"
#include "npu/device_batch.hpp"

namespace tessel::test {
namespace {

uintptr_t addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// A 64-byte aligned block of 4 KiB for the allocator tests.
struct Block {
    alignas(256) uint8_t bytes[4096];
};

TEST(NpuVtcm, AllocationsAreAlignedAndPacked) {
    Block blk;
    tsl_npu_vtcm v;
    tsl_npu_vtcm_init(&v, blk.bytes, sizeof blk.bytes);
    EXPECT_EQ(v.base, blk.bytes);
    EXPECT_EQ(v.size, 4096u);
    tsl_npu_vtcm_reset(&v, 4096);
    void* a = tsl_npu_vtcm_alloc(&v, 10, 0);
    void* b = tsl_npu_vtcm_alloc(&v, 100, 0);
    void* c = tsl_npu_vtcm_alloc(&v, 1, 256);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(a, blk.bytes);          // first allocation at the base
    EXPECT_EQ(addr(b), addr(a) + 64);  // 10 bytes, next 64-byte boundary
    EXPECT_EQ(addr(c) % 256, 0u);
    EXPECT_EQ(addr(c), addr(blk.bytes) + 256);  // after b (64 + 100 = 164), up to 256
    EXPECT_EQ(v.used, 257u);
    EXPECT_EQ(tsl_npu_vtcm_alloc(&v, 8, 96), nullptr);  // not a power of two
    EXPECT_EQ(v.used, 257u);
}

TEST(NpuVtcm, MisalignedBlockIsMovedUpAndShrunk) {
    Block blk;
    tsl_npu_vtcm v;
    tsl_npu_vtcm_init(&v, blk.bytes + 5, 1000);
    EXPECT_EQ(v.base, blk.bytes + 64);
    EXPECT_EQ(v.size, 1000u - 59u);
    tsl_npu_vtcm_init(&v, blk.bytes + 5, 59);  // nothing aligned left
    EXPECT_EQ(v.base, nullptr);
    EXPECT_EQ(v.size, 0u);
    tsl_npu_vtcm_reset(&v, 100);
    EXPECT_EQ(tsl_npu_vtcm_alloc(&v, 0, 0), nullptr);
    tsl_npu_vtcm_init(&v, nullptr, 4096);
    EXPECT_EQ(v.size, 0u);
}

TEST(NpuVtcm, BudgetIsTheOpsLimitClampedToTheBlock) {
    Block blk;
    tsl_npu_vtcm v;
    tsl_npu_vtcm_init(&v, blk.bytes, sizeof blk.bytes);
    tsl_npu_vtcm_reset(&v, 1000);
    EXPECT_EQ(tsl_npu_vtcm_alloc(&v, 1001, 0), nullptr);
    EXPECT_EQ(v.used, 0u);  // a refused request takes nothing
    ASSERT_NE(tsl_npu_vtcm_alloc(&v, 900, 0), nullptr);
    EXPECT_EQ(tsl_npu_vtcm_alloc(&v, 41, 0), nullptr);  // padded to 960: 40 bytes left
    EXPECT_EQ(tsl_npu_vtcm_alloc(&v, 40, 0), blk.bytes + 960);
    EXPECT_EQ(v.used, 1000u);
    EXPECT_EQ(tsl_npu_vtcm_alloc(&v, 0, 0), nullptr);  // even the padding to 1024 is past the limit
    EXPECT_EQ(tsl_npu_vtcm_alloc(&v, UINT64_MAX, 0), nullptr);  // no overflow
    tsl_npu_vtcm_reset(&v, 1u << 30);  // more than the block: clamped
    EXPECT_EQ(v.limit, 4096u);
    EXPECT_EQ(tsl_npu_vtcm_alloc(&v, 4097, 0), nullptr);
    EXPECT_EQ(tsl_npu_vtcm_alloc(&v, 4096, 0), blk.bytes);
    tsl_npu_vtcm_reset(&v, 0);
    EXPECT_EQ(tsl_npu_vtcm_alloc(&v, 1, 0), nullptr);
}

TEST(NpuVtcm, ResetForgetsEveryAllocation) {
    Block blk;
    tsl_npu_vtcm v;
    tsl_npu_vtcm_init(&v, blk.bytes, sizeof blk.bytes);
    tsl_npu_vtcm_reset(&v, 4096);
    ASSERT_EQ(tsl_npu_vtcm_alloc(&v, 4000, 0), blk.bytes);
    EXPECT_EQ(tsl_npu_vtcm_alloc(&v, 200, 0), nullptr);
    tsl_npu_vtcm_reset(&v, 4096);
    EXPECT_EQ(v.used, 0u);
    EXPECT_EQ(tsl_npu_vtcm_alloc(&v, 200, 0), blk.bytes);
}

void state_scratch(tsl_npu_op_desc& op, uint32_t bytes, uint32_t flags = 0) {
    const tsl_npu_kparams_header h{bytes, flags};
    std::memcpy(op.kparams, &h, sizeof h);
}

using NpuDeviceVtcm = DeviceTest;

TEST_F(NpuDeviceVtcm, HwinfoReportsThePlatformsScratchpad) {
    tsl_npu_hwinfo hw;
    tsl_npu_device_hwinfo(device_.get(), &hw);
    EXPECT_EQ(hw.vtcm_bytes, kVtcmBytes);
    EXPECT_EQ(addr(device_->vtcm.base) % 64, 0u);
}

TEST_F(NpuDeviceVtcm, OpStatingMoreThanTheVtcmRefusesTheBatch) {
    BatchBuilder bb;
    const uint32_t buf = bb.buffer(data_);
    const uint16_t ta = bb.tensor(buf, TSL_NPU_TYPE_F32, 0, {8, 1, 1, 1});
    const uint16_t td = bb.tensor(buf, TSL_NPU_TYPE_F32, 4096, {8, 1, 1, 1});
    at<float>(4096)[0] = 42.0f;
    bb.op(TSL_NPU_OP_SCALE, {ta}, {td}).params[0] = 0;  // would write zeros into td
    state_scratch(bb.op(TSL_NPU_OP_NOP, {}, {}), static_cast<uint32_t>(kVtcmBytes) + 1);
    EXPECT_EQ(run(bb), TSL_NPU_ERR_NO_VTCM);
    EXPECT_STREQ(tsl_npu_status_name(rsp_.status), "NO_VTCM");
    EXPECT_EQ(rsp_.err_op, 1u);
    EXPECT_EQ(rsp_.n_done, 0u);  // refused before the first op ran
    EXPECT_EQ(at<float>(4096)[0], 42.0f);
    state_scratch(bb.ops[1], static_cast<uint32_t>(kVtcmBytes));  // all of it: fine
    EXPECT_EQ(run(bb, 2), TSL_NPU_OK);
    EXPECT_EQ(rsp_.n_done, 2u);
    state_scratch(bb.ops[1], 0, 1);  // reserved flags must be 0
    EXPECT_EQ(run(bb, 3), TSL_NPU_ERR_BAD_DESC);
    EXPECT_EQ(rsp_.err_op, 1u);
}

TEST(NpuDeviceNoVtcm, PlatformWithoutScratchpadRefusesAnyScratch) {
    tsl_npu_platform platform{};
    ASSERT_EQ(tsl_npu_posix_platform_create(1, 0, &platform), TSL_NPU_OK);
    auto device = std::make_unique<tsl_npu_device>();
    ASSERT_EQ(tsl_npu_device_init(device.get(), &platform), TSL_NPU_OK);
    tsl_npu_hwinfo hw;
    tsl_npu_device_hwinfo(device.get(), &hw);
    EXPECT_EQ(hw.vtcm_bytes, 0u);
    npu::ShmBuffer queue("npu-vtcm-test-queue", 1 << 16);
    ASSERT_EQ(tsl_npu_device_map(device.get(), queue.fd(), queue.fd(), queue.size()), TSL_NPU_OK);
    BatchBuilder bb;
    state_scratch(bb.op(TSL_NPU_OP_NOP, {}, {}), 1);
    const tsl_npu_batch_req req = bb.lay_out(queue);
    tsl_npu_batch_rsp rsp{};
    EXPECT_EQ(tsl_npu_device_run(device.get(), queue.data(), &req, &rsp, nullptr, nullptr), TSL_NPU_ERR_NO_VTCM);
    EXPECT_EQ(rsp.err_op, 0u);
    tsl_npu_device_release(device.get());
    tsl_npu_posix_platform_destroy(&platform);
}

// softmax(x * scale) of each row in double, the reference's precision.
std::vector<double> softmax_rows(const float* x, int64_t k, int64_t rows, float scale) {
    std::vector<double> y(static_cast<size_t>(k * rows));
    for (int64_t r = 0; r < rows; ++r) {
        double max = -INFINITY, sum = 0.0;
        for (int64_t i = 0; i < k; ++i) max = std::max(max, static_cast<double>(x[r * k + i] * scale));
        for (int64_t i = 0; i < k; ++i) sum += std::exp(static_cast<double>(x[r * k + i] * scale) - max);
        for (int64_t i = 0; i < k; ++i)
            y[static_cast<size_t>(r * k + i)] = std::exp(static_cast<double>(x[r * k + i] * scale) - max) / sum;
    }
    return y;
}

TEST_F(NpuDeviceVtcm, SoftMaxRowsInScratchOnBothWorkers) {
    const int64_t k = 1000, rows = 24;  // 24000 elements: split across both workers; k not a multiple of 16
    float* x = at<float>(0);
    for (int64_t i = 0; i < k * rows; ++i) x[i] = static_cast<float>((i * 37) % 101 - 50) * 0.05f;
    const uint64_t out = 128 * 1024;
    BatchBuilder bb;
    const uint32_t buf = bb.buffer(data_);
    const uint16_t tx = bb.tensor(buf, TSL_NPU_TYPE_F32, 0, {k, rows, 1, 1});
    const uint16_t td = bb.tensor(buf, TSL_NPU_TYPE_F32, out, {k, rows, 1, 1});
    tsl_npu_op_desc& op = bb.op(TSL_NPU_OP_SOFT_MAX, {tx}, {td});
    const float scale = 0.7f;
    std::memcpy(&op.params[0], &scale, 4);
    const tsl_npu_softmax_kparams kp{1.0, 1.0, 0};
    std::memcpy(op.kparams + TSL_NPU_KPARAMS_BODY, &kp, sizeof kp);
    const uint32_t need = 2 * 4032;  // two workers, 4000 bytes each rounded up to 64
    ASSERT_EQ(tsl_npu_softmax_scratch(k, 2), need);
    state_scratch(op, need);
    ASSERT_EQ(run(bb), TSL_NPU_OK);
    const std::vector<double> want = softmax_rows(x, k, rows, scale);
    const float* y = at<float>(out);
    // float z, e^z (relative error ~1e-7) and a float sum of 1000 terms
    for (int64_t i = 0; i < k * rows; ++i) {
        const double w = want[static_cast<size_t>(i)];
        ASSERT_NEAR(y[i], w, 2e-5 * w) << i;
    }
    EXPECT_EQ(profile(bb)[0].counters[0], static_cast<uint64_t>(k * rows * 8));  // x read and dst written once
}

TEST_F(NpuDeviceVtcm, SoftMaxStatingTooLittleScratchFailsAtItsOp) {
    BatchBuilder bb;
    const uint32_t buf = bb.buffer(data_);
    const uint16_t tx = bb.tensor(buf, TSL_NPU_TYPE_F32, 0, {100, 2, 1, 1});
    const uint16_t td = bb.tensor(buf, TSL_NPU_TYPE_F32, 4096, {100, 2, 1, 1});
    bb.op(TSL_NPU_OP_NOP, {}, {});
    tsl_npu_op_desc& op = bb.op(TSL_NPU_OP_SOFT_MAX, {tx}, {td});
    const float one = 1.0f;
    std::memcpy(&op.params[0], &one, 4);
    state_scratch(op, static_cast<uint32_t>(tsl_npu_softmax_scratch(100, 2)) - 64);
    EXPECT_EQ(run(bb), TSL_NPU_ERR_NO_VTCM);
    EXPECT_EQ(rsp_.err_op, 1u);
    EXPECT_EQ(rsp_.n_done, 1u);
}

}  // namespace
}  // namespace tessel::test

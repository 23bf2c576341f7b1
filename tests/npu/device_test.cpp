// The device runtime's executor (src/npu/device): hardware report, mappings, profile records and
// heartbeat, and every refusal of a bad batch, made before any op runs; fault injection and cancel.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>

#include "npu/device/faults.h"
#include "npu/device_batch.hpp"

namespace tessel::test {
namespace {

using NpuDevice = DeviceTest;
constexpr uint32_t kRefused = 0xffffffffu;

// Two ops: t2 = t0 + t1 (F32 [64, 4]), then t3 = t2 * 2 + 1. t0 = 1, t1 = 2 everywhere.
BatchBuilder two_ops(const npu::ShmBuffer& data, float* base) {
    for (int i = 0; i < 256; ++i) base[i] = 1.0f, base[1024 + i] = 2.0f;
    BatchBuilder bb;
    const uint32_t buf = bb.buffer(data);
    const uint16_t t0 = bb.tensor(buf, TSL_NPU_TYPE_F32, 0, {64, 4, 1, 1});
    const uint16_t t1 = bb.tensor(buf, TSL_NPU_TYPE_F32, 4096, {64, 4, 1, 1});
    const uint16_t t2 = bb.tensor(buf, TSL_NPU_TYPE_F32, 8192, {64, 4, 1, 1});
    const uint16_t t3 = bb.tensor(buf, TSL_NPU_TYPE_F32, 12288, {64, 4, 1, 1});
    bb.op(TSL_NPU_OP_ADD, {t0, t1}, {t2});
    tsl_npu_op_desc& s = bb.op(TSL_NPU_OP_SCALE, {t2}, {t3});
    const float two = 2.0f, one = 1.0f;
    std::memcpy(&s.params[0], &two, 4);
    std::memcpy(&s.params[1], &one, 4);
    return bb;
}

TEST_F(NpuDevice, ReportsItsHardware) {
    tsl_npu_hwinfo info;
    tsl_npu_device_hwinfo(device_.get(), &info);
    EXPECT_EQ(info.proto_version, TSL_NPU_PROTO_VERSION);
    EXPECT_EQ(info.n_threads, 2u);
    EXPECT_EQ(info.vtcm_bytes, 1u << 20);
    // a matrix unit exactly when the platform found AMX-INT8 (checked against cpuid: device_matmul_test)
    EXPECT_EQ(info.matrix_unit, (device_->platform.isa & TSL_NPU_ISA_AMX_INT8) ? 1u : 0u);
    EXPECT_EQ(info.max_bufs, TSL_NPU_DEVICE_MAX_MAPPINGS);
    const std::string kernels = std::string(device_->kernels.vector) + (device_->kernels.matrix[0] ? "+" : "") + device_->kernels.matrix;
    EXPECT_EQ(std::string(info.name), "tessel NPU (" + kernels + " kernels)");
}

TEST_F(NpuDevice, MapsByFd) {
    uint64_t size = 0;
    uint8_t* base = tsl_npu_device_mapping(device_.get(), data_.fd(), &size);
    ASSERT_NE(base, nullptr);
    EXPECT_EQ(size, data_.size());
    data_.data()[100] = 42;  // the device's own mapping of the same memfd sees the host's bytes
    EXPECT_EQ(base[100], 42);
    EXPECT_EQ(map(data_), TSL_NPU_OK);  // again, same size
    EXPECT_EQ(device_->n_mappings, 1u);
    EXPECT_EQ(tsl_npu_device_map(device_.get(), data_.fd(), data_.fd(), 4096), TSL_NPU_ERR_BAD_DESC);
    EXPECT_EQ(tsl_npu_device_map(device_.get(), 999, 999, 4096), TSL_NPU_ERR_MAP_FAILED);  // no such fd
    EXPECT_EQ(tsl_npu_device_map(device_.get(), -1, data_.fd(), 4096), TSL_NPU_ERR_BAD_DESC);
    EXPECT_EQ(tsl_npu_device_unmap(device_.get(), data_.fd()), TSL_NPU_OK);
    EXPECT_EQ(tsl_npu_device_mapping(device_.get(), data_.fd(), nullptr), nullptr);
    EXPECT_EQ(tsl_npu_device_unmap(device_.get(), data_.fd()), TSL_NPU_ERR_NO_MAPPING);
    EXPECT_EQ(device_->n_mappings, 0u);
}

TEST_F(NpuDevice, RunsInOrderWithProfileAndHeartbeat) {
    const BatchBuilder bb = two_ops(data_, at<float>(0));
    ASSERT_EQ(run(bb, 7), TSL_NPU_OK);
    for (int i = 0; i < 256; ++i) ASSERT_EQ(at<float>(12288)[i], 7.0f);
    EXPECT_EQ(rsp_.seq, 7u);
    EXPECT_EQ(rsp_.status, static_cast<uint32_t>(TSL_NPU_OK));
    EXPECT_EQ(rsp_.n_done, 2u);
    EXPECT_EQ(rsp_.err_op, kRefused);
    EXPECT_EQ(rsp_.n_bufs, 1u);
    EXPECT_EQ(rsp_.n_tensors, 4u);
    EXPECT_EQ(rsp_.n_ops, 2u);
    EXPECT_EQ(heartbeat_, 2u);
    const tsl_npu_profile* prof = profile(bb);
    for (int i = 0; i < 2; ++i) {
        EXPECT_GE(prof[i].start_ns, rsp_.start_ns);
        EXPECT_GE(prof[i].stop_ns, prof[i].start_ns);
        EXPECT_LE(prof[i].stop_ns, rsp_.stop_ns);
        for (int k = 1; k < TSL_NPU_N_COUNTERS; ++k) EXPECT_EQ(prof[i].counters[k], 0u);
    }
    EXPECT_GE(prof[1].start_ns, prof[0].stop_ns);
    EXPECT_EQ(prof[0].counters[0], 256u * 12);  // two F32 sources read, one written
    EXPECT_EQ(prof[1].counters[0], 256u * 8);
}

TEST_F(NpuDevice, RefusesBadDescriptorsBeforeRunning) {
    auto check = [&](int32_t status, uint32_t err_op, const BatchBuilder& bb) {
        EXPECT_EQ(run(bb), status) << tsl_npu_status_name(rsp_.status);
        EXPECT_EQ(rsp_.status, static_cast<uint32_t>(status));
        EXPECT_EQ(rsp_.err_op, err_op);
        EXPECT_EQ(rsp_.n_done, 0u);
        EXPECT_EQ(heartbeat_, 0u);
        EXPECT_EQ(at<float>(8192)[0], 0.0f) << "op 0 ran";
    };
    const BatchBuilder good = two_ops(data_, at<float>(0));
    BatchBuilder bb = good;
    bb.tensors[3].buf = 1;  // buffer index out of range
    check(TSL_NPU_ERR_BAD_DESC, kRefused, bb);
    bb = good;
    bb.ops[1].src[0] = 4;  // tensor index out of range
    check(TSL_NPU_ERR_BAD_DESC, 1, bb);
    bb = good;
    bb.ops[1].dst[3] = 9;  // an unused slot must still be in range
    check(TSL_NPU_ERR_BAD_DESC, 1, bb);
    bb = good;
    bb.tensors[3].offset = data_.size() - 512;  // offset + size past the buffer
    check(TSL_NPU_ERR_BAD_DESC, kRefused, bb);
    bb = good;
    bb.tensors[3].offset = ~uint64_t{0} - 511;  // offset + size wraps around 2^64
    check(TSL_NPU_ERR_BAD_DESC, kRefused, bb);
    bb = good;
    bb.tensors[3].ne[1] = 5;  // elements past the tensor's size
    check(TSL_NPU_ERR_BAD_DESC, kRefused, bb);
    bb = good;
    bb.tensors[3].nb[3] = ~uint64_t{0} / 2;  // stride product overflow
    bb.tensors[3].ne[3] = 3;
    check(TSL_NPU_ERR_BAD_DESC, kRefused, bb);
    bb = good;
    bb.tensors[3].offset = 2;  // misaligned F32
    check(TSL_NPU_ERR_BAD_DESC, kRefused, bb);
    bb = good;
    bb.tensors[3].ne[2] = 0;
    check(TSL_NPU_ERR_BAD_DESC, kRefused, bb);
    bb = good;
    bb.bufs[0].size = data_.size() + 4096;  // larger than the device's mapping
    check(TSL_NPU_ERR_BAD_DESC, kRefused, bb);
    bb = good;
    bb.ops[1].opcode = 77;
    check(TSL_NPU_ERR_UNKNOWN_OP, 1, bb);
    bb.ops[1].opcode = TSL_NPU_OP_COUNT;
    check(TSL_NPU_ERR_UNKNOWN_OP, 1, bb);
    bb = good;
    bb.ops[1].src[0] = TSL_NPU_NONE;  // SCALE without its source
    check(TSL_NPU_ERR_BAD_DESC, 1, bb);
    bb = good;
    bb.ops[1].dst[0] = TSL_NPU_NONE;
    check(TSL_NPU_ERR_BAD_DESC, 1, bb);
    bb = good;
    bb.tensors[1].ne[0] = 48;  // src1 of ADD does not divide src0
    bb.tensors[1].nb[1] = 192;
    check(TSL_NPU_ERR_BAD_TYPE, 0, bb);
    bb = good;
    bb.tensors[3].type = TSL_NPU_TYPE_Q8_0;  // SCALE into a quantized type
    check(TSL_NPU_ERR_BAD_TYPE, 1, bb);
}

TEST_F(NpuDevice, RefusesUnmappedBuffer) {
    npu::ShmBuffer other("npu-device-test-unmapped", 4096);
    BatchBuilder bb = two_ops(data_, at<float>(0));
    bb.buffer(other);
    EXPECT_EQ(run(bb), TSL_NPU_ERR_NO_MAPPING);
    EXPECT_EQ(rsp_.err_op, kRefused);
    EXPECT_EQ(rsp_.n_done, 0u);
}

TEST_F(NpuDevice, RefusesInconsistentCounts) {
    const BatchBuilder bb = two_ops(data_, at<float>(0));
    tsl_npu_batch_req req = bb.lay_out(queue_);
    req.block_size += 8;
    EXPECT_EQ(tsl_npu_device_run(device_.get(), queue_.data(), &req, &rsp_, &heartbeat_, &cancel_),
              TSL_NPU_ERR_BAD_BATCH);
    req = bb.lay_out(queue_);
    req.n_ops = 1;  // the block was laid out for 2
    EXPECT_EQ(tsl_npu_device_run(device_.get(), queue_.data(), &req, &rsp_, &heartbeat_, &cancel_),
              TSL_NPU_ERR_BAD_BATCH);
    req.n_bufs = TSL_NPU_MAX_BUFS + 1;
    req.n_ops = 0;
    req.n_tensors = 0;
    req.block_size = tsl_npu_block_size(req.n_bufs, 0, 0);
    EXPECT_EQ(tsl_npu_device_run(device_.get(), queue_.data(), &req, &rsp_, &heartbeat_, &cancel_),
              TSL_NPU_ERR_BAD_BATCH);
    EXPECT_EQ(rsp_.err_op, kRefused);
    EXPECT_EQ(heartbeat_, 0u);
    EXPECT_EQ(at<float>(8192)[0], 0.0f);
}

TEST_F(NpuDevice, InjectedStatusAndSequence) {
    const BatchBuilder bb = two_ops(data_, at<float>(0));
    device_->fault = TSL_NPU_FAULT_STATUS;
    EXPECT_EQ(run(bb, 3), TSL_NPU_ERR_INJECTED);
    EXPECT_EQ(rsp_.seq, 3u);
    EXPECT_EQ(rsp_.n_done, 0u);
    EXPECT_EQ(at<float>(8192)[0], 0.0f);
    device_->fault = TSL_NPU_FAULT_SEQ;
    EXPECT_EQ(run(bb, 3), TSL_NPU_OK);
    EXPECT_EQ(rsp_.seq, 1003u);
    EXPECT_EQ(rsp_.n_done, 2u);
}

TEST_F(NpuDevice, HangEndsWhenCancelled) {
    const BatchBuilder bb = two_ops(data_, at<float>(0));
    device_->fault = TSL_NPU_FAULT_HANG;
    std::chrono::steady_clock::time_point cancelled_at;
    std::thread host([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        cancelled_at = std::chrono::steady_clock::now();
        __atomic_store_n(&cancel_, 1u, __ATOMIC_RELEASE);
    });
    EXPECT_EQ(run(bb), TSL_NPU_ERR_CANCELLED);
    const auto returned_at = std::chrono::steady_clock::now();
    host.join();
    EXPECT_LT(returned_at - cancelled_at, std::chrono::seconds(1));
    EXPECT_EQ(heartbeat_, 0u);
    EXPECT_EQ(rsp_.n_done, 0u);
    EXPECT_EQ(at<float>(8192)[0], 0.0f);
}

TEST_F(NpuDevice, CancelBeforeStart) {
    const BatchBuilder bb = two_ops(data_, at<float>(0));
    cancel_ = 1;
    EXPECT_EQ(run(bb), TSL_NPU_ERR_CANCELLED);
    EXPECT_EQ(rsp_.n_done, 0u);
    EXPECT_EQ(rsp_.err_op, 0u);
    EXPECT_EQ(heartbeat_, 0u);
    EXPECT_EQ(at<float>(8192)[0], 0.0f);
}

// A clock that raises the host's cancel flag when op 0's profile record is closed (the device
// reads the clock at batch start, then at each op's start and stop).
volatile uint32_t* g_cancel_flag = nullptr;
int g_clock_reads = 0;
uint64_t clock_that_cancels(void*) {
    if (++g_clock_reads == 3) __atomic_store_n(g_cancel_flag, 1u, __ATOMIC_RELEASE);
    return static_cast<uint64_t>(g_clock_reads) * 1000;
}

TEST_F(NpuDevice, CancelBetweenOps) {
    const BatchBuilder bb = two_ops(data_, at<float>(0));
    g_cancel_flag = &cancel_;
    g_clock_reads = 0;
    device_->platform.now_ns = clock_that_cancels;
    EXPECT_EQ(run(bb), TSL_NPU_ERR_CANCELLED);
    EXPECT_EQ(rsp_.n_done, 1u);
    EXPECT_EQ(rsp_.err_op, 1u);
    EXPECT_EQ(heartbeat_, 1u);
    EXPECT_EQ(at<float>(8192)[0], 3.0f);   // op 0 ran
    EXPECT_EQ(at<float>(12288)[0], 0.0f);  // op 1 did not
    const tsl_npu_profile* prof = profile(bb);
    EXPECT_EQ(prof[0].start_ns, 2000u);
    EXPECT_EQ(prof[0].stop_ns, 3000u);
    EXPECT_EQ(prof[1].start_ns, 0u);  // not run: zeroed, not stale
    EXPECT_EQ(prof[1].counters[0], 0u);
}

}  // namespace
}  // namespace tessel::test

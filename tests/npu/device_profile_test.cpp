// The device's profiling extras: per-op event counters (TSL_NPU_BATCH_COUNTERS, the posix
// platform's perf_event_open counters) and per-part trace spans (TSL_NPU_BATCH_TRACE).
#include <gtest/gtest.h>

#include <cstring>

#include "npu/device_batch.hpp"

namespace tessel::test {
namespace {

using NpuDeviceProfile = DeviceTest;

constexpr int64_t kN = 256;  // ADD of two F32 [256, 256]: enough elements for both workers

/// t2 = t0 + t1 with t0[i] = i, t1[i] = 0.5.
BatchBuilder big_add(const npu::ShmBuffer& data, float* base) {
    for (int64_t i = 0; i < kN * kN; ++i) base[i] = static_cast<float>(i), base[kN * kN + i] = 0.5f;
    BatchBuilder bb;
    const uint32_t buf = bb.buffer(data);
    const uint16_t t0 = bb.tensor(buf, TSL_NPU_TYPE_F32, 0, {kN, kN, 1, 1});
    const uint16_t t1 = bb.tensor(buf, TSL_NPU_TYPE_F32, kN * kN * 4, {kN, kN, 1, 1});
    const uint16_t t2 = bb.tensor(buf, TSL_NPU_TYPE_F32, 2 * kN * kN * 4, {kN, kN, 1, 1});
    bb.op(TSL_NPU_OP_ADD, {t0, t1}, {t2});
    return bb;
}

void expect_sum(const float* base) {
    const float* out = base + 2 * kN * kN;
    for (int64_t i = 0; i < kN * kN; i += 997) ASSERT_EQ(out[i], static_cast<float>(i) + 0.5f) << i;
}

// Software events are counted on every Linux the CI runs on (no PMU needed): the op's task-clock
// is positive and at most the wall time of its n_threads threads; faults and switches are few.
TEST_F(NpuDeviceProfile, CountersReportTaskClockPerOp) {
    auto* base = at<float>(0);
    const BatchBuilder bb = big_add(data_, base);
    tsl_npu_batch_req req = bb.lay_out(queue_);
    req.flags = TSL_NPU_BATCH_COUNTERS;
    for (int rep = 0; rep < 3; ++rep) {  // the first run opens the counters
        ASSERT_EQ(tsl_npu_device_run(device_.get(), queue_.data(), &req, &rsp_, &heartbeat_, &cancel_), TSL_NPU_OK);
        expect_sum(base);
        const tsl_npu_profile& p = profile(bb)[0];
        const uint64_t wall = p.stop_ns - p.start_ns;
        const uint64_t task_clock = p.counters[TSL_NPU_COUNTER_TASK_CLOCK];
        EXPECT_GT(task_clock, 0u) << "rep " << rep;
        EXPECT_LE(task_clock, 2 * wall + 2000000u) << "rep " << rep;  // 2 threads, plus the reads around the op
        EXPECT_LT(p.counters[TSL_NPU_COUNTER_PAGE_FAULTS], 10000u);
        EXPECT_LT(p.counters[TSL_NPU_COUNTER_CONTEXT_SWITCHES], 10000u);
        EXPECT_EQ(p.counters[0], 3u * kN * kN * 4u);  // bytes: the device's own count is unchanged
    }
    // Without the flag the event slots stay 0.
    req.flags = 0;
    ASSERT_EQ(tsl_npu_device_run(device_.get(), queue_.data(), &req, &rsp_, &heartbeat_, &cancel_), TSL_NPU_OK);
    for (int k = TSL_NPU_COUNTER_TASK_CLOCK; k < TSL_NPU_N_COUNTERS; ++k) EXPECT_EQ(profile(bb)[0].counters[k], 0u) << k;
}

// A traced batch ends with one span per part of each parallel call: inside the op's record, on a
// worker thread of the device, and none for a phase the op does not have.
TEST_F(NpuDeviceProfile, TraceSpansCoverTheOpsParts) {
    auto* base = at<float>(0);
    const BatchBuilder bb = big_add(data_, base);
    tsl_npu_batch_req req = bb.lay_out(queue_);
    req.flags = TSL_NPU_BATCH_TRACE;
    EXPECT_EQ(tsl_npu_device_run(device_.get(), queue_.data(), &req, &rsp_, &heartbeat_, &cancel_), TSL_NPU_ERR_BAD_BATCH)
        << "a traced batch's block holds its spans";
    const uint32_t n_threads = platform_.n_threads;
    req.block_size += tsl_npu_trace_bytes(1, n_threads);
    std::memset(queue_.data() + req.block_size - tsl_npu_trace_bytes(1, n_threads), 0xa5, tsl_npu_trace_bytes(1, n_threads));
    ASSERT_EQ(tsl_npu_device_run(device_.get(), queue_.data(), &req, &rsp_, &heartbeat_, &cancel_), TSL_NPU_OK);
    expect_sum(base);
    const tsl_npu_profile& p = profile(bb)[0];
    const auto* spans = reinterpret_cast<const tsl_npu_span*>(queue_.data() + tsl_npu_block_size(1, 3, 1));
    for (uint32_t part = 0; part < n_threads; ++part) {
        const tsl_npu_span& s = spans[part];
        EXPECT_GE(s.start_ns, p.start_ns) << part;
        EXPECT_GE(s.stop_ns, s.start_ns) << part;
        EXPECT_LE(s.stop_ns, p.stop_ns) << part;
        EXPECT_LT(s.thread, n_threads) << part;
        EXPECT_EQ(s.dma_ns, 0u) << part;  // ADD transfers no weights
    }
    for (uint32_t part = 0; part < n_threads; ++part) EXPECT_EQ(spans[n_threads + part].stop_ns, 0u) << "ADD has one parallel call";
}

}  // namespace
}  // namespace tessel::test

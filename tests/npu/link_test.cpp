// Both NPU links (src/npu/link) through one parameterized suite: control calls, batches answered in
// order with profile records, the ring bound, every injected device fault ending in a clean status
// within the timeout (a device stuck inside an op too: the in-process one is abandoned), a long op
// that makes progress never cut, and destruction with work outstanding. The process link starts
// the tessel binary named by TESSEL_NPU_DEVICE_EXE (CTest sets it).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <thread>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "npu/device/device.h"
#include "npu/device/faults.h"
#include "npu/link/link.hpp"
#include "npu/link/shm.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kFaultTimeoutMs = 300;
// Allowed beyond the timeout for noticing a stall and stopping the device (sanitizer builds, a busy
// 2-core machine).
constexpr int64_t kSlackMs = 1500;

int64_t ms_since(Clock::time_point t0) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

// No child process of this test is left, running or as a zombie: waitpid(-1) finds none at all.
bool no_children() {
    int status = 0;
    return waitpid(-1, &status, WNOHANG) < 0 && errno == ECHILD;
}

// Writes a batch block into the op-queue buffer at `offset` and names it in a request.
class BlockWriter {
public:
    BlockWriter(ShmBuffer& queue, uint64_t offset) : queue_(queue), offset_(offset) {}

    uint32_t add_buf(const ShmBuffer& b) {
        bufs_.push_back({b.fd(), 0, b.size()});
        return static_cast<uint32_t>(bufs_.size() - 1);
    }
    // A row of n floats at byte `offset` of buffer `buf`.
    uint16_t add_f32_row(uint32_t buf, uint64_t offset, int64_t n) {
        tsl_npu_tensor_desc t{};
        t.buf = buf;
        t.type = TSL_NPU_TYPE_F32;
        t.offset = offset;
        t.size = static_cast<uint64_t>(n) * sizeof(float);
        t.ne[0] = n;
        t.ne[1] = t.ne[2] = t.ne[3] = 1;
        t.nb[0] = sizeof(float);
        t.nb[1] = t.nb[2] = t.nb[3] = t.size;
        tensors_.push_back(t);
        return static_cast<uint16_t>(tensors_.size() - 1);
    }
    void add_op(uint32_t opcode, std::initializer_list<uint16_t> src = {}, std::initializer_list<uint16_t> dst = {}) {
        tsl_npu_op_desc op;
        std::memset(&op, 0, sizeof op);
        std::memset(op.src, 0xff, sizeof op.src);  // every slot TSL_NPU_NONE (0xffff)
        std::memset(op.dst, 0xff, sizeof op.dst);
        op.opcode = opcode;
        std::copy(src.begin(), src.end(), op.src);
        std::copy(dst.begin(), dst.end(), op.dst);
        ops_.push_back(op);
    }
    tsl_npu_tensor_desc& tensor(uint16_t i) { return tensors_[i]; }
    tsl_npu_op_desc& op(size_t i) { return ops_[i]; }

    tsl_npu_batch_req finish(uint64_t seq) {
        const auto nb = static_cast<uint32_t>(bufs_.size());
        const auto nt = static_cast<uint32_t>(tensors_.size());
        const auto no = static_cast<uint32_t>(ops_.size());
        uint8_t* block = queue_.data() + offset_;
        // (empty vectors have no data(): memcpy from a null pointer is undefined even for 0 bytes)
        if (nb) std::memcpy(block, bufs_.data(), nb * sizeof(tsl_npu_buf_desc));
        if (nt) std::memcpy(block + tsl_npu_block_tensors_offset(nb), tensors_.data(), nt * sizeof(tsl_npu_tensor_desc));
        if (no) std::memcpy(block + tsl_npu_block_ops_offset(nb, nt), ops_.data(), no * sizeof(tsl_npu_op_desc));
        std::memset(block + tsl_npu_block_profile_offset(nb, nt, no), 0, no * sizeof(tsl_npu_profile));
        return {seq, offset_, tsl_npu_block_size(nb, nt, no), nb, nt, no, 0};
    }
    const tsl_npu_profile* profile(const tsl_npu_batch_req& req) const {
        return reinterpret_cast<const tsl_npu_profile*>(
            queue_.data() + offset_ + tsl_npu_block_profile_offset(req.n_bufs, req.n_tensors, req.n_ops));
    }

private:
    ShmBuffer& queue_;
    uint64_t offset_;
    std::vector<tsl_npu_buf_desc> bufs_;
    std::vector<tsl_npu_tensor_desc> tensors_;
    std::vector<tsl_npu_op_desc> ops_;
};

constexpr uint64_t kSlotBytes = 4096;  // room for each small test batch in the op-queue buffer

class NpuLink : public ::testing::TestWithParam<LinkKind> {
protected:
    std::unique_ptr<Link> open(uint32_t fault = TSL_NPU_FAULT_NONE, uint32_t timeout_ms = 10000, uint32_t depth = 8,
                               bool poll = false) {
        LinkOptions o;
        o.kind = GetParam();
        o.fault = fault;
        o.timeout_ms = timeout_ms;
        o.ring_depth = depth;
        o.poll = poll;
        o.n_threads = 2;
        o.vtcm_bytes = 4u << 20;
        const char* exe = std::getenv("TESSEL_NPU_DEVICE_EXE");
        o.device_exe = exe ? exe : "";
        if (o.kind == LinkKind::Process && o.device_exe.empty())
            ADD_FAILURE() << "TESSEL_NPU_DEVICE_EXE is not set (CTest sets it to the tessel binary)";
        return open_link(o);
    }

    // A batch of NOP ops in slot `slot` of the queue.
    tsl_npu_batch_req nop_batch(uint64_t slot, uint64_t seq, uint32_t n_ops = 2) {
        BlockWriter w(queue_, slot * kSlotBytes);
        for (uint32_t i = 0; i < n_ops; ++i) w.add_op(TSL_NPU_OP_NOP);
        return w.finish(seq);
    }

    void TearDown() override {
        if (GetParam() == LinkKind::Process) {
            EXPECT_TRUE(no_children()) << "a device process was left behind";
        }
    }

    ShmBuffer queue_{"test-queue", 16 * kSlotBytes};
    ShmBuffer data_{"test-data", 4096};
};

TEST_P(NpuLink, HwinfoReportsTheDevice) {
    auto link = open();
    EXPECT_EQ(link->kind(), GetParam());
    const tsl_npu_hwinfo hw = link->hwinfo();
    EXPECT_EQ(hw.proto_version, TSL_NPU_PROTO_VERSION);
    EXPECT_EQ(hw.n_threads, 2u);
    EXPECT_EQ(hw.vtcm_bytes, 4u << 20);
    EXPECT_GT(std::strlen(hw.name), 0u);
}

TEST_P(NpuLink, MapAndUnmap) {
    auto link = open();
    EXPECT_EQ(link->map(data_, 0), TSL_NPU_OK);
    EXPECT_EQ(link->map(data_, 0), TSL_NPU_OK);  // same fd, same size: already known
    EXPECT_EQ(link->unmap(data_), TSL_NPU_OK);
    EXPECT_EQ(link->unmap(data_), TSL_NPU_ERR_NO_MAPPING);
}

// ADD through the device: it reaches the host's data by fd and offset only.
void run_add_batch(Link& link, ShmBuffer& queue, ShmBuffer& data) {
    constexpr int64_t n = 64;
    auto* f = reinterpret_cast<float*>(data.data());
    for (int64_t i = 0; i < n; ++i) {
        f[i] = 0.5f * static_cast<float>(i) - 3.0f;
        f[n + i] = 1.0f / static_cast<float>(i + 1);
        f[2 * n + i] = -1.0f;
    }
    ASSERT_EQ(link.map(queue, 0), TSL_NPU_OK);
    ASSERT_EQ(link.map(data, 0), TSL_NPU_OK);
    BlockWriter w(queue, 0);
    const uint32_t buf = w.add_buf(data);
    const uint16_t a = w.add_f32_row(buf, 0, n), b = w.add_f32_row(buf, n * 4, n), c = w.add_f32_row(buf, 2 * n * 4, n);
    w.add_op(TSL_NPU_OP_NOP);
    w.add_op(TSL_NPU_OP_ADD, {a, b}, {c});
    w.add_op(TSL_NPU_OP_NOP);
    const tsl_npu_batch_req req = w.finish(7);
    ASSERT_EQ(link.submit(queue, req), TSL_NPU_OK);
    EXPECT_EQ(link.outstanding(), 1u);
    tsl_npu_batch_rsp rsp{};
    ASSERT_EQ(link.receive(&rsp), TSL_NPU_OK);
    EXPECT_EQ(link.outstanding(), 0u);
    EXPECT_EQ(rsp.seq, 7u);
    EXPECT_EQ(rsp.status, static_cast<uint32_t>(TSL_NPU_OK));
    EXPECT_EQ(rsp.n_done, 3u);
    EXPECT_EQ(rsp.n_ops, 3u);
    EXPECT_LE(rsp.start_ns, rsp.stop_ns);
    const tsl_npu_profile* prof = w.profile(req);
    for (uint32_t i = 0; i < 3; ++i) {
        EXPECT_GE(prof[i].start_ns, rsp.start_ns) << "op " << i;
        EXPECT_LE(prof[i].start_ns, prof[i].stop_ns) << "op " << i;
        EXPECT_LE(prof[i].stop_ns, rsp.stop_ns) << "op " << i;
    }
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(f[2 * n + i], f[i] + f[n + i]) << "element " << i;
}

TEST_P(NpuLink, AddBatchAnsweredWithProfile) {
    auto link = open();
    run_add_batch(*link, queue_, data_);
}

TEST_P(NpuLink, AddBatchInPollMode) {
    auto link = open(TSL_NPU_FAULT_NONE, 10000, 8, /*poll=*/true);
    run_add_batch(*link, queue_, data_);
}

TEST_P(NpuLink, RingBoundAndResponsesInOrder) {
    constexpr uint32_t depth = 4;
    auto link = open(TSL_NPU_FAULT_NONE, 10000, depth);
    ASSERT_EQ(link->map(queue_, 0), TSL_NPU_OK);
    for (uint32_t round = 0; round < 2; ++round) {  // the second round wraps the ring positions
        for (uint32_t i = 0; i < depth; ++i) ASSERT_EQ(link->submit(queue_, nop_batch(i, round * 10 + i + 1)), TSL_NPU_OK);
        EXPECT_EQ(link->outstanding(), depth);
        EXPECT_EQ(link->submit(queue_, nop_batch(depth, 99)), TSL_NPU_ERR_QUEUE_FULL);
        for (uint32_t i = 0; i < depth; ++i) {
            tsl_npu_batch_rsp rsp{};
            ASSERT_EQ(link->receive(&rsp), TSL_NPU_OK);
            EXPECT_EQ(rsp.seq, round * 10 + i + 1);
            EXPECT_EQ(rsp.status, static_cast<uint32_t>(TSL_NPU_OK));
            EXPECT_EQ(rsp.n_done, 2u) << "err_op " << rsp.err_op;
        }
        EXPECT_EQ(link->outstanding(), 0u);
    }
    tsl_npu_batch_rsp rsp{};
    EXPECT_EQ(link->receive(&rsp), TSL_NPU_ERR_PROTOCOL);  // nothing outstanding: no wait
}

TEST_P(NpuLink, UnmappedQueueIsReported) {
    auto link = open();
    ASSERT_EQ(link->submit(queue_, nop_batch(0, 1)), TSL_NPU_OK);
    tsl_npu_batch_rsp rsp{};
    ASSERT_EQ(link->receive(&rsp), TSL_NPU_OK);
    EXPECT_EQ(rsp.status, static_cast<uint32_t>(TSL_NPU_ERR_NO_MAPPING));
    EXPECT_EQ(rsp.seq, 1u);
}

TEST_P(NpuLink, BadDescriptorBatch) {
    auto link = open();
    ASSERT_EQ(link->map(queue_, 0), TSL_NPU_OK);
    ASSERT_EQ(link->map(data_, 0), TSL_NPU_OK);
    BlockWriter w(queue_, 0);
    const uint32_t buf = w.add_buf(data_);
    const uint16_t a = w.add_f32_row(buf, 0, 16);
    const uint16_t c = w.add_f32_row(buf, data_.size() - 32, 16);  // 64 bytes from 32 before the end
    w.add_op(TSL_NPU_OP_ADD, {a, a}, {c});
    ASSERT_EQ(link->submit(queue_, w.finish(3)), TSL_NPU_OK);
    tsl_npu_batch_rsp rsp{};
    ASSERT_EQ(link->receive(&rsp), TSL_NPU_OK);
    EXPECT_EQ(rsp.status, static_cast<uint32_t>(TSL_NPU_ERR_BAD_DESC));
    EXPECT_EQ(rsp.n_done, 0u);
}

TEST_P(NpuLink, FaultStatusPassedThrough) {
    auto link = open(TSL_NPU_FAULT_STATUS, kFaultTimeoutMs);
    ASSERT_EQ(link->map(queue_, 0), TSL_NPU_OK);
    ASSERT_EQ(link->submit(queue_, nop_batch(0, 5)), TSL_NPU_OK);
    tsl_npu_batch_rsp rsp{};
    ASSERT_EQ(link->receive(&rsp), TSL_NPU_OK);
    EXPECT_EQ(rsp.status, static_cast<uint32_t>(TSL_NPU_ERR_INJECTED));
    EXPECT_EQ(rsp.seq, 5u);
}

TEST_P(NpuLink, FaultSeqPassedThrough) {
    auto link = open(TSL_NPU_FAULT_SEQ, kFaultTimeoutMs);
    ASSERT_EQ(link->map(queue_, 0), TSL_NPU_OK);
    ASSERT_EQ(link->submit(queue_, nop_batch(0, 5)), TSL_NPU_OK);
    tsl_npu_batch_rsp rsp{};
    ASSERT_EQ(link->receive(&rsp), TSL_NPU_OK);  // the link does not judge sequences; the op queue does
    EXPECT_EQ(rsp.seq, 5u + 1000u);
}

TEST_P(NpuLink, FaultHangTimesOutThenFailsFast) {
    auto link = open(TSL_NPU_FAULT_HANG, kFaultTimeoutMs);
    ASSERT_EQ(link->map(queue_, 0), TSL_NPU_OK);
    ASSERT_EQ(link->submit(queue_, nop_batch(0, 1)), TSL_NPU_OK);
    const auto t0 = Clock::now();
    tsl_npu_batch_rsp rsp{};
    EXPECT_EQ(link->receive(&rsp), TSL_NPU_ERR_TIMEOUT);
    const int64_t waited = ms_since(t0);
    EXPECT_GE(waited, kFaultTimeoutMs);
    EXPECT_LE(waited, kFaultTimeoutMs + kSlackMs);
    const auto t1 = Clock::now();
    EXPECT_EQ(link->submit(queue_, nop_batch(1, 2)), TSL_NPU_ERR_TIMEOUT);
    EXPECT_EQ(link->receive(&rsp), TSL_NPU_ERR_TIMEOUT);
    EXPECT_EQ(link->map(data_, 0), TSL_NPU_ERR_TIMEOUT);
    EXPECT_EQ(link->unmap(queue_), TSL_NPU_ERR_TIMEOUT);
    EXPECT_LT(ms_since(t1), 100);
    if (GetParam() == LinkKind::Process) {
        EXPECT_TRUE(no_children()) << "the hung device was not reaped";
    }
}

TEST_P(NpuLink, FaultDieIsDeviceLost) {
    auto link = open(TSL_NPU_FAULT_DIE, kFaultTimeoutMs);
    ASSERT_EQ(link->map(queue_, 0), TSL_NPU_OK);
    ASSERT_EQ(link->submit(queue_, nop_batch(0, 1, 4)), TSL_NPU_OK);
    const auto t0 = Clock::now();
    tsl_npu_batch_rsp rsp{};
    EXPECT_EQ(link->receive(&rsp), TSL_NPU_ERR_DEVICE_LOST);
    EXPECT_LE(ms_since(t0), kFaultTimeoutMs + kSlackMs);
    EXPECT_EQ(link->submit(queue_, nop_batch(1, 2)), TSL_NPU_ERR_DEVICE_LOST);
    EXPECT_EQ(link->map(data_, 0), TSL_NPU_ERR_DEVICE_LOST);
    if (GetParam() == LinkKind::Process) {
        EXPECT_TRUE(no_children()) << "the dead device was not reaped";
    }
}

// Lets the ops a STUCK device holds in this process go when a test ends, however it ends, and waits
// until an in-process device the link abandoned has returned and its memory is gone. (A process
// link's stuck device is killed: nothing of it is in this process.)
class StuckRelease {
public:
    StuckRelease() = default;
    StuckRelease(const StuckRelease&) = delete;
    StuckRelease& operator=(const StuckRelease&) = delete;
    ~StuckRelease() {
        tsl_npu_device_release_stuck();
        const auto t0 = Clock::now();
        while (abandoned_inproc_devices() != 0 && ms_since(t0) < 10000)
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        EXPECT_EQ(abandoned_inproc_devices(), 0u) << "released stuck device threads did not return";
    }
};

// The STUCK fault holds the first op inside its kernel, blind to the cancel flag: the host cannot
// stop it between ops. The error must still come within the timeout + 1 s; the in-process device
// is then abandoned (threads detached, their memory kept), the process one killed.
TEST_P(NpuLink, FaultStuckInOpTimesOutWithinTheBound) {
    StuckRelease release;  // declared first: runs after the link is gone
    auto link = open(TSL_NPU_FAULT_STUCK, kFaultTimeoutMs);
    ASSERT_EQ(link->map(queue_, 0), TSL_NPU_OK);
    ASSERT_EQ(link->submit(queue_, nop_batch(0, 1, 4)), TSL_NPU_OK);
    const auto t0 = Clock::now();
    tsl_npu_batch_rsp rsp{};
    EXPECT_EQ(link->receive(&rsp), TSL_NPU_ERR_TIMEOUT);
    const int64_t waited = ms_since(t0);
    EXPECT_GE(waited, kFaultTimeoutMs);
    EXPECT_LE(waited, kFaultTimeoutMs + 1000) << "a device stuck in an op held the host past timeout + 1 s";
    std::printf("[ stuck op ] %s link: TIMEOUT after %lld ms (TESSEL_NPU_TIMEOUT_MS %u)\n",
                GetParam() == LinkKind::InProcess ? "in-process" : "process", static_cast<long long>(waited),
                kFaultTimeoutMs);
    if (GetParam() == LinkKind::InProcess) {
        EXPECT_EQ(abandoned_inproc_devices(), 1u) << "the stuck device was not abandoned";
    } else {
        EXPECT_TRUE(no_children()) << "the stuck device process was not killed and reaped";
    }
    // The link is dead: every call fails at once, none touches the stuck device.
    const auto t1 = Clock::now();
    EXPECT_EQ(link->submit(queue_, nop_batch(1, 2)), TSL_NPU_ERR_TIMEOUT);
    EXPECT_EQ(link->receive(&rsp), TSL_NPU_ERR_TIMEOUT);
    EXPECT_EQ(link->map(data_, 0), TSL_NPU_ERR_TIMEOUT);
    EXPECT_EQ(link->unmap(queue_), TSL_NPU_ERR_TIMEOUT);
    link.reset();  // no join of the abandoned threads
    EXPECT_LT(ms_since(t1), 100);
}

// A control call waits for the device mutex, which the running batch holds (in the device process
// too): behind a stuck batch it ends the same way.
TEST_P(NpuLink, FaultStuckBlocksAMapUntilTheTimeout) {
    StuckRelease release;
    auto link = open(TSL_NPU_FAULT_STUCK, kFaultTimeoutMs);
    ASSERT_EQ(link->map(queue_, 0), TSL_NPU_OK);
    ASSERT_EQ(link->submit(queue_, nop_batch(0, 1)), TSL_NPU_OK);
    // Until the device has taken the batch, maps and unmaps go through.
    int32_t status = TSL_NPU_OK;
    int64_t waited = 0;
    for (const auto start = Clock::now(); status == TSL_NPU_OK && ms_since(start) < 5000;) {
        for (bool map : {true, false}) {
            const auto t0 = Clock::now();
            status = map ? link->map(data_, 0) : link->unmap(data_);
            waited = ms_since(t0);
            if (status != TSL_NPU_OK) break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_EQ(status, TSL_NPU_ERR_TIMEOUT);
    EXPECT_LE(waited, kFaultTimeoutMs + 1000);
    if (GetParam() == LinkKind::InProcess) {
        EXPECT_EQ(abandoned_inproc_devices(), 1u);
    } else {
        EXPECT_TRUE(no_children()) << "the stuck device process was not killed and reaped";
    }
    tsl_npu_batch_rsp rsp{};
    EXPECT_EQ(link->receive(&rsp), TSL_NPU_ERR_TIMEOUT);
}

TEST_P(NpuLink, DestroyWithAStuckBatch) {
    StuckRelease release;
    auto link = open(TSL_NPU_FAULT_STUCK);  // a 10 s timeout: only the destructor ends it
    ASSERT_EQ(link->map(queue_, 0), TSL_NPU_OK);
    for (uint32_t i = 0; i < 3; ++i) ASSERT_EQ(link->submit(queue_, nop_batch(i, i + 1)), TSL_NPU_OK);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the device is in the first batch's op
    const auto t0 = Clock::now();
    link.reset();
    EXPECT_LT(ms_since(t0), 3000);
    if (GetParam() == LinkKind::InProcess) {
        EXPECT_EQ(abandoned_inproc_devices(), 1u);
    }
}

// A MUL_MAT whose one op runs several times TESSEL_NPU_TIMEOUT_MS while its workers beat per chunk
// of work: it must complete. Sized by a first run, so that it takes ~4 timeouts in any build
// (release or sanitizer) while a chunk stays far below one: F32 weights [K, N] and activations
// [K, 16], each one row repeated (row stride 0), so the memory is the result's alone.
class LongMatmul {
public:
    static constexpr int64_t kK = 8192, kM = 16, kMaxN = 32 * 4096;

    // Runs N = 32 * row_tiles rows on `link`; returns the op's device time in ms (0 on a failure,
    // recorded by gtest).
    double run(Link& link, ShmBuffer& queue, int64_t row_tiles) {
        const int64_t n = 32 * row_tiles;
        auto* in = reinterpret_cast<float*>(data_.data());
        for (int64_t i = 0; i < kK; ++i) {
            in[i] = 0.5f;       // the weight row
            in[kK + i] = 0.25f;  // the activation row
        }
        BlockWriter w(queue, 0);
        const uint32_t buf = w.add_buf(data_);
        const uint16_t wt = w.add_f32_row(buf, 0, kK), x = w.add_f32_row(buf, kK * 4, kK);
        const uint16_t d = w.add_f32_row(buf, 2 * kK * 4, n * kM);
        w.tensor(wt).ne[1] = n;
        w.tensor(wt).nb[1] = 0;
        w.tensor(x).ne[1] = kM;
        w.tensor(x).nb[1] = 0;
        tsl_npu_tensor_desc& td = w.tensor(d);
        td.ne[0] = n;
        td.ne[1] = kM;
        td.nb[1] = static_cast<uint64_t>(n) * 4;
        td.nb[2] = td.nb[3] = td.size;
        w.add_op(TSL_NPU_OP_MUL_MAT, {wt, x}, {d});
        const tsl_npu_kparams_header h{static_cast<uint32_t>(tsl_npu_matmul_scratch(TSL_NPU_MM_FLAT, 0, 0, kK, kM, 0, 2)), 0};
        const tsl_npu_matmul_kparams kp{TSL_NPU_MM_FLAT, 0, 0, 0, 0, 0, 0};  // one step, default chunks, every worker
        std::memcpy(w.op(0).kparams, &h, sizeof h);
        std::memcpy(w.op(0).kparams + TSL_NPU_KPARAMS_BODY, &kp, sizeof kp);
        const tsl_npu_batch_req req = w.finish(++seq_);
        if (link.submit(queue, req) != TSL_NPU_OK) {
            ADD_FAILURE() << "submit";
            return 0;
        }
        tsl_npu_batch_rsp rsp{};
        const int32_t got = link.receive(&rsp);
        EXPECT_EQ(got, TSL_NPU_OK) << tsl_npu_status_name(static_cast<uint32_t>(got)) << " after "
                                   << row_tiles << " row tiles";
        EXPECT_EQ(rsp.status, static_cast<uint32_t>(TSL_NPU_OK));
        if (got != TSL_NPU_OK || rsp.status != TSL_NPU_OK) return 0;
        const float* out = reinterpret_cast<const float*>(data_.data() + 2 * kK * 4);
        const float want = 0.125f * static_cast<float>(kK);  // exact in float
        for (int64_t i : {int64_t{0}, n - 1, n * kM / 2, n * kM - 1}) EXPECT_EQ(out[i], want) << "element " << i;
        const tsl_npu_profile& p = w.profile(req)[0];
        return static_cast<double>(p.stop_ns - p.start_ns) / 1e6;
    }

    ShmBuffer& data() { return data_; }

private:
    ShmBuffer data_{"test-long-matmul", static_cast<size_t>(2 * kK + kMaxN * kM) * sizeof(float)};
    uint64_t seq_ = 0;
};

TEST_P(NpuLink, LongOpThatProgressesIsNotCut) {
    constexpr int64_t kProbeTiles = 64;
    LongMatmul mm;
    double probe_ms = 0;
    {
        auto link = open();  // the default 10 s: only measures
        ASSERT_EQ(link->map(queue_, 0), TSL_NPU_OK);
        ASSERT_EQ(link->map(mm.data(), 0), TSL_NPU_OK);
        probe_ms = mm.run(*link, queue_, kProbeTiles);
        ASSERT_GT(probe_ms, 0.0);
    }
    // The timeout: 100 ms, or more in a slow (sanitizer) build, where a worker's item (32 rows x 16
    // columns x K: one beat) must stay far below it, or the test would prove nothing.
    const double item_ms = probe_ms * 2 / kProbeTiles;
    const auto timeout_ms = static_cast<uint32_t>(std::max(100.0, std::ceil(8 * item_ms)));
    const int64_t tiles = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(kProbeTiles * 4.0 * timeout_ms / probe_ms)),
                                              kProbeTiles, LongMatmul::kMaxN / 32);
    auto link = open(TSL_NPU_FAULT_NONE, timeout_ms);
    ASSERT_EQ(link->map(queue_, 0), TSL_NPU_OK);
    ASSERT_EQ(link->map(mm.data(), 0), TSL_NPU_OK);
    const double op_ms = mm.run(*link, queue_, tiles);
    std::printf("[ long op  ] one MUL_MAT of %lld row tiles: %.0f ms on the device, timeout %u ms\n",
                static_cast<long long>(tiles), op_ms, timeout_ms);
    EXPECT_GE(op_ms, 2.0 * timeout_ms) << "the op was not long enough to prove anything";
}

TEST_P(NpuLink, DestroyWithBatchesOutstanding) {
    for (uint32_t fault : {TSL_NPU_FAULT_NONE, TSL_NPU_FAULT_HANG}) {
        auto link = open(fault);  // a 10 s timeout: only the destructor may end the hang
        ASSERT_EQ(link->map(queue_, 0), TSL_NPU_OK);
        for (uint32_t i = 0; i < 4; ++i) ASSERT_EQ(link->submit(queue_, nop_batch(i, i + 1, 8)), TSL_NPU_OK);
        const auto t0 = Clock::now();
        link.reset();
        EXPECT_LT(ms_since(t0), 3000) << "fault " << fault;
    }
}

INSTANTIATE_TEST_SUITE_P(Links, NpuLink, ::testing::Values(LinkKind::InProcess, LinkKind::Process),
                         [](const ::testing::TestParamInfo<LinkKind>& info) {
                             return info.param == LinkKind::InProcess ? std::string("InProcess") : std::string("Process");
                         });

TEST(NpuLinkOpen, ProcessLinkNeedsTheExecutable) {
    LinkOptions o;
    o.kind = LinkKind::Process;
    for (const std::string& exe : {std::string(), std::string("/nonexistent/tessel")}) {
        o.device_exe = exe;
        try {
            open_link(o);
            ADD_FAILURE() << "opened a process link with device_exe '" << exe << "'";
        } catch (const Error& e) {
            EXPECT_EQ(e.code(), ErrorCode::Io);
            EXPECT_NE(std::string(e.what()).find(
                          "NPU0: out-of-process link needs the tessel executable (set TESSEL_NPU_DEVICE_EXE)"),
                      std::string::npos)
                << e.what();
        }
    }
}

TEST(NpuLinkOpen, ProcessLinkWithAnExecutableThatIsNotADevice) {
    LinkOptions o;
    o.kind = LinkKind::Process;
    o.device_exe = "/bin/true";  // exits at once without answering Start
    o.timeout_ms = 2000;
    try {
        open_link(o);
        ADD_FAILURE() << "opened a process link on /bin/true";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::Io);
        EXPECT_NE(std::string(e.what()).find("did not start"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(no_children());
}

TEST(NpuLinkOpen, RingDepthOutOfRange) {
    LinkOptions o;
    o.ring_depth = 0;
    EXPECT_THROW(open_link(o), Error);
    o.ring_depth = 5000;
    EXPECT_THROW(open_link(o), Error);
}

}  // namespace
}  // namespace tessel::npu

// Fences between sessions over both links: a FENCE_WAIT op holds its device until a peer's device
// stores the fence, a wait that never ends is cancelled at the host's timeout (one clean error, no
// hang), and a wait on memory that is not a fence buffer is a bad descriptor.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "npu/device/device.h"
#include "npu/host/device.hpp"
#include "npu/host/opbatch.hpp"
#include "npu/host/session.hpp"
#include "npu/link/links.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {
namespace {

Config fence_config(LinkKind kind, uint32_t timeout_ms = 5000) {
    Config c;
    c.link = kind;
    c.timeout_ms = timeout_ms;
    if (const char* exe = std::getenv("TESSEL_NPU_DEVICE_EXE")) c.device_exe = exe;
    return c;
}

/// A batch of one fence op: FENCE (store) into `target`'s slot, or FENCE_WAIT on it.
OpBatch fence_batch(const Session& sender, uint32_t opcode, const Operand& target, uint32_t slot, uint64_t value) {
    OpBatch b(sender.limits());
    int32_t params[TSL_NPU_OP_PARAMS] = {};
    params[0] = static_cast<int32_t>(value & 0xffffffffu);
    params[1] = static_cast<int32_t>(value >> 32);
    params[2] = static_cast<int32_t>(slot);
    if (opcode == TSL_NPU_OP_FENCE) b.add(opcode, "FENCE", {}, {target}, params);
    else b.add(opcode, "FENCE_WAIT", {target}, {}, params);
    return b;
}

class NpuFence : public ::testing::TestWithParam<LinkKind> {};

TEST_P(NpuFence, WaitHoldsTheDeviceUntilThePeerStoresTheFence) {
    NpuDevice dev0("NPU0", fence_config(GetParam())), dev1("NPU1", fence_config(GetParam()));
    Session& s0 = dev0.session();
    Session& s1 = dev1.session();
    s1.map_peer_fences(s0);
    s1.map_peer_fences(s0);  // once per peer: the second call maps nothing more
    // NPU1: wait for value 7 in NPU0's slot 3, then store 1 in its own slot 0.
    OpBatch b = fence_batch(s1, TSL_NPU_OP_FENCE_WAIT, s0.fence_operand(), 3, 7);
    int32_t params[TSL_NPU_OP_PARAMS] = {1, 0, 0};
    b.add(TSL_NPU_OP_FENCE, "FENCE", {}, {s1.fence_operand()}, params);
    const uint64_t seq = s1.submit(b);
    s0.submit(fence_batch(s0, TSL_NPU_OP_FENCE, s0.fence_operand(), 3, 6));  // lower: not enough
    s0.synchronize();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(s0.fence_value(3), 6u);
    EXPECT_EQ(s1.fence_value(0), 0u) << "NPU1 went past its FENCE_WAIT before NPU0 stored the value";
    EXPECT_LT(s1.done_seq(), seq);
    s0.submit(fence_batch(s0, TSL_NPU_OP_FENCE, s0.fence_operand(), 3, 9));  // >= 7 releases the wait
    s1.wait(seq);
    EXPECT_EQ(s1.fence_value(0), 1u);
    // A value already reached passes at once.
    s1.submit(fence_batch(s1, TSL_NPU_OP_FENCE_WAIT, s0.fence_operand(), 3, 9));
    s1.synchronize();
}

TEST_P(NpuFence, APeerThatClosesFirstLeavesNoStaleMappingBehind) {
    NpuDevice reader("NPU1", fence_config(GetParam(), 1000));
    Session& s1 = reader.session();
    int old_fd = -1;
    size_t fence_bytes = 0;
    {
        NpuDevice peer("NPU0", fence_config(GetParam()));
        Session& s0 = peer.session();
        s1.map_peer_fences(s0);
        old_fd = s0.fences().fd();
        fence_bytes = s0.fences().size();
        s0.submit(fence_batch(s0, TSL_NPU_OP_FENCE, s0.fence_operand(), 5, 1));
        s0.synchronize();
        s1.submit(fence_batch(s1, TSL_NPU_OP_FENCE_WAIT, s0.fence_operand(), 5, 1));
        s1.synchronize();
    }
    // A new buffer of the same size that gets the closed peer's fd number: NPU1 must map it afresh,
    // not find the peer's old pages under that number.
    std::vector<std::unique_ptr<ShmBuffer>> probes;
    ShmBuffer* same = nullptr;
    for (int i = 0; i < 32 && !same; ++i) {
        probes.push_back(std::make_unique<ShmBuffer>("probe", fence_bytes));
        if (probes.back()->fd() == old_fd) same = probes.back().get();
    }
    ASSERT_NE(same, nullptr) << "no new buffer got fd " << old_fd;
    s1.map(*same, TSL_NPU_BUF_FENCE);
    __atomic_store_n(reinterpret_cast<uint64_t*>(same->data() + 5 * TSL_NPU_FENCE_SLOT_BYTES), uint64_t{7}, __ATOMIC_RELEASE);
    Tensor view;
    view.set_shape(DType::I32, {static_cast<int64_t>(fence_bytes / 4)});
    Operand o;
    o.tensor = &view;
    o.buffer = same;
    o.buffer_flags = TSL_NPU_BUF_FENCE;
    o.size = same->size();
    s1.submit(fence_batch(s1, TSL_NPU_OP_FENCE_WAIT, o, 5, 7));
    EXPECT_NO_THROW(s1.synchronize());
}

TEST_P(NpuFence, AWaitThatNeverEndsIsCancelledAtTheTimeout) {
    const uint32_t timeout_ms = 300;
    {
        NpuDevice dev0("NPU0", fence_config(GetParam())), dev1("NPU1", fence_config(GetParam(), timeout_ms));
        Session& s0 = dev0.session();
        Session& s1 = dev1.session();
        s1.map_peer_fences(s0);
        const auto t0 = std::chrono::steady_clock::now();
        const uint64_t seq = s1.submit(fence_batch(s1, TSL_NPU_OP_FENCE_WAIT, s0.fence_operand(), 0, 1));
        std::string message;
        try {
            s1.wait(seq);
        } catch (const Error& e) {
            EXPECT_EQ(e.code(), ErrorCode::Device);
            message = e.what();
        }
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        EXPECT_NE(message.find("TIMEOUT"), std::string::npos) << message;
        EXPECT_NE(message.find("NPU1"), std::string::npos) << message;
        EXPECT_LE(seconds, timeout_ms / 1000.0 + 1.0);
        EXPECT_NO_THROW(s0.synchronize());  // the peer is unaffected
    }
    // The waiting in-process device saw the cancel and returned: nothing was abandoned.
    EXPECT_EQ(abandoned_inproc_devices(), 0u);
}

TEST_P(NpuFence, WaitOnAPlainBufferIsABadDescriptor) {
    NpuDevice dev("NPU0", fence_config(GetParam()));
    Session& s = dev.session();
    ShmBuffer plain("plain", 4096);
    s.map(plain, 0);
    Tensor view;
    view.set_shape(DType::I32, {1024});
    Operand o;
    o.tensor = &view;
    o.buffer = &plain;
    o.size = plain.size();
    const uint64_t seq = s.submit(fence_batch(s, TSL_NPU_OP_FENCE_WAIT, o, 0, 0));
    try {
        s.wait(seq);
        ADD_FAILURE() << "a FENCE_WAIT on a plain buffer ran";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("BAD_DESC"), std::string::npos) << e.what();
    }
}

INSTANTIATE_TEST_SUITE_P(Links, NpuFence, ::testing::Values(LinkKind::InProcess, LinkKind::Process),
                         [](const auto& info) { return info.param == LinkKind::InProcess ? "InProcess" : "Process"; });

}  // namespace
}  // namespace tessel::npu

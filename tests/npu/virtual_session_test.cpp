// Virtual sessions (shared_link.hpp) over both links: two sessions of one physical device share its
// device runtime, which runs their batches in submission order (so an event of one orders the other
// without a fence wait), maps a buffer both use until the last session lets go, refuses to be two
// ranks of an all-reduce, and fails every session when it fails, within the timeout.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "backend/registry.hpp"
#include "npu/device/device.h"
#include "npu/device/faults.h"
#include "npu/host/allreduce.hpp"
#include "npu/host/backend.hpp"
#include "npu/host/buffer.hpp"
#include "npu/host/device.hpp"
#include "npu/host/session.hpp"
#include "npu/f32_tensors.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {
namespace {

Config test_config(LinkKind kind) {
    Config c;
    c.link = kind;
    c.timeout_ms = 30000;  // session 1 waits behind session 0's matmuls: seconds under ThreadSanitizer
    if (const char* exe = std::getenv("TESSEL_NPU_DEVICE_EXE")) c.device_exe = exe;
    return c;
}

/// Physical device NPU0 with sessions NPU0 and NPU0:1, each with a stream and a buffer.
struct TwoSessions {
    std::shared_ptr<SharedDevice> hw;
    NpuDevice dev0, dev1;
    std::unique_ptr<Backend> b0, b1;
    std::unique_ptr<Buffer> buf0, buf1;
    std::vector<std::unique_ptr<Tensor>> tensors;
    size_t used0 = 0, used1 = 0;

    explicit TwoSessions(const Config& cfg)
        : hw(std::make_shared<SharedDevice>("NPU0", 2)), dev0("NPU0", cfg, hw), dev1("NPU0:1", cfg, hw) {
        b0 = dev0.init_backend({});
        b1 = dev1.init_backend({});
        buf0 = dev0.buffer_type().alloc_buffer(8 << 20);
        buf1 = dev1.buffer_type().alloc_buffer(1 << 20);
    }
    Tensor& tensor(int session, std::initializer_list<int64_t> ne, Op op = Op::NONE, Tensor* a = nullptr, Tensor* b = nullptr) {
        tensors.push_back(std::make_unique<Tensor>());
        Tensor& t = *tensors.back();
        t.set_shape(DType::F32, ne);
        t.op = op;
        t.src[0] = a;
        t.src[1] = b;
        size_t& used = session == 0 ? used0 : used1;
        (session == 0 ? buf0 : buf1)->init_tensor(t, used);
        used += (t.n_bytes() + 127) / 128 * 128;
        return t;
    }
    static void fill(Tensor& t, float base) { fill_ramp(t, base); }
    static std::vector<float> read(const Tensor& t) { return read_f32(t); }
};

class NpuVirtualSession : public ::testing::TestWithParam<LinkKind> {};

TEST_P(NpuVirtualSession, OneRuntimeRunsBothSessionsInSubmissionOrder) {
    TwoSessions s(test_config(GetParam()));
    EXPECT_EQ(s.hw->attached(), 2u);
    EXPECT_TRUE(s.dev0.session().shares_device_with(s.dev1.session()));
    // Session 0: a chain of F32 matmuls (tens of ms), then its event.
    Tensor& w = s.tensor(0, {1024, 1024});
    TwoSessions::fill(w, 0.001f);
    Tensor* y = &s.tensor(0, {1024, 64});
    TwoSessions::fill(*y, 1.0f);
    std::vector<Tensor*> chain;
    for (int i = 0; i < 6; ++i) chain.push_back(y = &s.tensor(0, {1024, 64}, Op::MUL_MAT, &w, y));
    auto ev0 = s.dev0.new_event();
    s.b0->graph_compute(chain);
    s.b0->event_record(*ev0);
    // Session 1 reads the chain's result right away: its event_wait adds no op (no FENCE_WAIT), the
    // shared runtime runs session 0's batches first because they were submitted first.
    npu_buffer_of(*y)->map_on(s.dev1.session());
    const uint64_t seq1 = s.dev1.session().last_seq();
    s.b1->event_wait(*ev0);
    Tensor& z = s.tensor(1, {1024, 64}, Op::ADD, y, y);
    s.b1->graph_compute({&z});
    s.b1->synchronize();  // session 0 never synchronized by the host
    EXPECT_EQ(s.dev1.session().last_seq(), seq1 + 1);
    const std::vector<float> vy = TwoSessions::read(*y), vz = TwoSessions::read(z);
    size_t bad = 0;
    for (size_t i = 0; i < vy.size(); ++i) bad += vz[i] != vy[i] + vy[i];
    EXPECT_EQ(bad, 0u) << "session 1 ran before the session 0 work it waited for";
    EXPECT_NE(vy[7], 0.0f);
    // A copy from session 0's stream into session 1's memory: a plain copy op, no fence.
    Tensor& c = s.tensor(1, {1024, 64});
    ASSERT_TRUE(s.b1->cpy_tensor_async(*s.b0, *y, c));
    Tensor& c2 = s.tensor(1, {1024, 64}, Op::ADD, &c, &c);
    s.b1->graph_compute({&c2});
    s.b1->synchronize();
    EXPECT_EQ(TwoSessions::read(c2), vz);
}

TEST_P(NpuVirtualSession, ABufferBothMapStaysMappedUntilTheLastUnmap) {
    TwoSessions s(test_config(GetParam()));
    Tensor& x = s.tensor(1, {4096});
    TwoSessions::fill(x, 2.0f);
    const ShmBuffer& shm = npu_buffer_of(x)->shm();
    s.dev0.session().map(shm, TSL_NPU_BUF_HOST);  // the device maps it once, counted twice
    s.dev0.session().unmap(shm);
    Tensor& y = s.tensor(1, {4096}, Op::MUL, &x, &x);
    s.b1->graph_compute({&y});
    s.b1->synchronize();
    const std::vector<float> vx = TwoSessions::read(x);
    EXPECT_EQ(TwoSessions::read(y)[100], vx[100] * vx[100]);
}

TEST_P(NpuVirtualSession, AnAllReduceNeedsRuntimesOfTheirOwn) {
    TwoSessions s(test_config(GetParam()));
    const std::vector<Backend*> ranks = {s.b0.get(), s.b1.get()};
    try {
        Communicator comm(ranks);
        ADD_FAILURE() << "an all-reduce over two sessions of one device accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("rank 1 (NPU0:1) and NPU0 run on one device runtime"), std::string::npos) << e.what();
    }
}

TEST_P(NpuVirtualSession, AFailedRuntimeFailsBothSessionsWithinTheTimeout) {
    Config cfg = test_config(GetParam());
    cfg.timeout_ms = 300;
    cfg.fault = TSL_NPU_FAULT_HANG;
    TwoSessions s(cfg);
    Tensor& x = s.tensor(0, {256});
    Tensor& y0 = s.tensor(0, {256}, Op::ADD, &x, &x);
    Tensor& x1 = s.tensor(1, {256});
    Tensor& y1 = s.tensor(1, {256}, Op::ADD, &x1, &x1);
    const auto t0 = std::chrono::steady_clock::now();
    std::string m0, m1;
    try {
        s.b0->graph_compute({&y0});
        s.b1->graph_compute({&y1});
        s.b0->synchronize();
    } catch (const Error& e) {
        m0 = e.what();
    }
    try {
        s.b1->graph_compute({&y1});
        s.b1->synchronize();
    } catch (const Error& e) {
        m1 = e.what();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_NE(m0.find("NPU0: "), std::string::npos) << m0;
    EXPECT_NE(m0.find("TIMEOUT"), std::string::npos) << m0;
    EXPECT_NE(m1.find("NPU0:1: "), std::string::npos) << m1;
    EXPECT_NE(m1.find("TIMEOUT"), std::string::npos) << m1;
    EXPECT_LE(seconds, cfg.timeout_ms / 1000.0 + 1.0);
}

std::string link_name(const ::testing::TestParamInfo<LinkKind>& info) {
    return info.param == LinkKind::InProcess ? "InProcess" : "Process";
}

INSTANTIATE_TEST_SUITE_P(Links, NpuVirtualSession, ::testing::Values(LinkKind::InProcess, LinkKind::Process), link_name);

TEST(NpuVirtualSessions, TheRegistrySharesARuntimeBetweenSessionsOfOneDevice) {
    setenv("TESSEL_NPU_DEVICES", "NPU0,NPU1,NPU0:1", 1);
    Registry reg;
    register_devices(reg);
    unsetenv("TESSEL_NPU_DEVICES");
    ASSERT_EQ(config_error(), "");
    auto* npu0 = dynamic_cast<NpuDevice*>(reg.find("NPU0"));
    auto* npu1 = dynamic_cast<NpuDevice*>(reg.find("NPU1"));
    auto* npu0v1 = dynamic_cast<NpuDevice*>(reg.find("NPU0:1"));
    ASSERT_TRUE(npu0 && npu1 && npu0v1);
    EXPECT_TRUE(npu0->session().shares_device_with(npu0v1->session()));
    EXPECT_FALSE(npu0->session().shares_device_with(npu1->session()));
    EXPECT_FALSE(npu1->session().shares_device_with(npu0v1->session()));
    EXPECT_EQ(npu0v1->session().hwinfo().proto_version, TSL_NPU_PROTO_VERSION);
}

}  // namespace
}  // namespace tessel::npu

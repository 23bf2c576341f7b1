// The host runtime end to end over both links: an NPU device's buffers, graph_compute and
// synchronize against values computed here, the op queue under a small depth and batch size
// (many batches in flight, answered in order), events as fence slots, and every injected fault
// ending in one tessel::Error(Device) naming the failure, within the timeout, without hanging.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend.hpp"
#include "npu/device/device.h"
#include "npu/device/faults.h"
#include "npu/host/backend.hpp"
#include "npu/host/device.hpp"
#include "npu/host/session.hpp"
#include "npu/f32_tensors.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {
namespace {

Config test_config(LinkKind kind) {
    Config c;
    c.link = kind;
    c.timeout_ms = 2000;
    if (const char* exe = std::getenv("TESSEL_NPU_DEVICE_EXE")) c.device_exe = exe;
    return c;
}

/// Tensors placed in one NPU buffer, filled with values, and ADD/MUL/SCALE nodes over them.
struct Graph {
    std::unique_ptr<Buffer> buf;
    std::vector<std::unique_ptr<Tensor>> tensors;
    size_t used = 0;

    explicit Graph(NpuDevice& dev, size_t bytes = 1 << 20) { buf = dev.buffer_type().alloc_buffer(bytes); }
    Tensor& leaf(std::initializer_list<int64_t> ne) {
        tensors.push_back(std::make_unique<Tensor>());
        Tensor& t = *tensors.back();
        t.set_shape(DType::F32, ne);
        buf->init_tensor(t, used);
        used += (t.n_bytes() + 127) / 128 * 128;
        return t;
    }
    Tensor& node(Op op, Tensor& a, Tensor* b) {
        Tensor& t = leaf({a.ne[0], a.ne[1], a.ne[2], a.ne[3]});
        t.op = op;
        t.src[0] = &a;
        t.src[1] = b;
        return t;
    }
    static void fill(Tensor& t, float base) { fill_ramp(t, base); }
    static std::vector<float> read(const Tensor& t) { return read_f32(t); }
};

class NpuSession : public ::testing::TestWithParam<LinkKind> {};

TEST_P(NpuSession, AddMulScaleMatchHostMath) {
    NpuDevice dev("NPU0", test_config(GetParam()));
    auto backend = dev.init_backend({});
    Graph g(dev);
    Tensor& a = g.leaf({33, 5});
    Tensor& b = g.leaf({33, 1});  // broadcast over rows
    Graph::fill(a, 1.0f);
    Graph::fill(b, -3.0f);
    Tensor& sum = g.node(Op::ADD, a, &b);
    Tensor& prod = g.node(Op::MUL, sum, &a);
    Tensor& scaled = g.node(Op::SCALE, prod, nullptr);
    scaled.set_op_param_f32(0, 0.5f);
    scaled.set_op_param_f32(1, 2.0f);
    backend->graph_compute({&sum, &prod, &scaled});
    backend->synchronize();
    const std::vector<float> va = Graph::read(a), vb = Graph::read(b), out = Graph::read(scaled);
    for (int64_t r = 0; r < 5; ++r)
        for (int64_t i = 0; i < 33; ++i) {
            const float x = va[r * 33 + i], y = vb[i];
            EXPECT_FLOAT_EQ(out[r * 33 + i], (x + y) * x * 0.5f + 2.0f) << r << "," << i;
        }
    const auto profile = dev.session().last_profile();
    ASSERT_EQ(profile.size(), 3u);
    EXPECT_EQ(profile[1].op, "MUL");
    for (const OpProfile& p : profile) EXPECT_GE(p.record.stop_ns, p.record.start_ns);
}

TEST_P(NpuSession, ProfilePrintsALinePerOpAndPerBatch) {
    Config cfg = test_config(GetParam());
    cfg.profile = true;
    NpuDevice dev("NPU0", cfg);
    auto backend = dev.init_backend({});
    Graph g(dev);
    Tensor& a = g.leaf({64, 3});
    Tensor& b = g.leaf({64});
    Graph::fill(a, 1.0f);
    Graph::fill(b, 2.0f);
    Tensor& sum = g.node(Op::ADD, a, &b);
    Tensor& prod = g.node(Op::MUL, sum, &a);
    ::testing::internal::CaptureStderr();
    backend->graph_compute({&sum, &prod});
    backend->synchronize();
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("npu-profile: NPU0 #1 op 0 ADD"), std::string::npos) << err;
    EXPECT_NE(err.find("F32 [64, 3] x F32 [64] -> F32 [64, 3]"), std::string::npos) << err;
    EXPECT_NE(err.find("npu-profile: NPU0 #1 op 1 MUL"), std::string::npos) << err;
    EXPECT_NE(err.find("npu-profile: NPU0 #1 batch: 2/2 ops"), std::string::npos) << err;
}

TEST_P(NpuSession, ManySmallBatchesStayInOrder) {
    Config cfg = test_config(GetParam());
    cfg.opbatch = 1;  // one op per batch
    cfg.opqueue = 2;  // two in flight: pushing the third first takes a response
    NpuDevice dev("NPU0", cfg);
    auto backend = dev.init_backend({});
    Graph g(dev);
    Tensor& x = g.leaf({64});
    Graph::fill(x, 0.0f);
    const std::vector<float> start = Graph::read(x);
    std::vector<Tensor*> nodes;
    Tensor* cur = &x;
    for (int i = 0; i < 40; ++i) {  // x + 1 forty times, each step reading the one before
        Tensor& s = g.node(Op::SCALE, *cur, nullptr);
        s.set_op_param_f32(0, 1.0f);
        s.set_op_param_f32(1, 1.0f);
        nodes.push_back(&s);
        cur = &s;
    }
    backend->graph_compute(nodes);
    EXPECT_LE(dev.session().last_seq() - dev.session().done_seq(), 2u);
    backend->synchronize();
    EXPECT_EQ(dev.session().last_seq(), 40u);
    EXPECT_EQ(dev.session().done_seq(), 40u);
    const std::vector<float> out = Graph::read(*cur);
    for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i], start[i] + 40.0f);
}

TEST_P(NpuSession, RepeatedGraphUidReusesTheTranslation) {
    NpuDevice dev("NPU0", test_config(GetParam()));
    auto backend = dev.init_backend({});
    auto& npu = static_cast<NpuBackend&>(*backend);
    Graph g(dev);
    Tensor& x = g.leaf({50, 4});
    Tensor& sq = g.node(Op::MUL, x, &x);
    Tensor& y = g.node(Op::ADD, sq, &x);
    auto check = [&] {
        const std::vector<float> vx = Graph::read(x), vy = Graph::read(y);
        for (size_t i = 0; i < vy.size(); ++i) EXPECT_EQ(vy[i], vx[i] * vx[i] + vx[i]) << i;
    };
    Graph::fill(x, 1.0f);
    backend->graph_compute({&sq, &y}, 42);
    backend->synchronize();
    check();
    EXPECT_EQ(npu.cache_hits(), 0u);
    Graph::fill(x, -5.0f);  // new inputs, same graph: the cached batches read them
    backend->graph_compute({&sq, &y}, 42);
    backend->synchronize();
    check();
    EXPECT_EQ(npu.cache_hits(), 1u);
    backend->graph_compute({&sq, &y}, 43);  // another uid is translated
    backend->synchronize();
    EXPECT_EQ(npu.cache_hits(), 1u);
    EXPECT_EQ(dev.session().done_seq(), 3u);
}

TEST_P(NpuSession, AsyncSetAndGetAreStreamOrdered) {
    NpuDevice dev("NPU0", test_config(GetParam()));
    auto backend = dev.init_backend({});
    Graph g(dev, 8 << 20);
    Tensor& x = g.leaf({700, 500});  // 1.4 MB: more than the first staging buffer (1 MiB), which grows
    Tensor& sq = g.node(Op::MUL, x, &x);
    Tensor& twice = g.node(Op::ADD, x, &x);
    const size_t n = static_cast<size_t>(x.n_elements());
    std::vector<float> old_x(n), new_x(n);
    for (size_t i = 0; i < n; ++i) {
        old_x[i] = 0.5f * static_cast<float>(i % 101) - 7.0f;
        new_x[i] = 3.0f - 0.25f * static_cast<float>(i % 53);
    }
    // sq reads the old x, twice the new one: the set is queued between them.
    backend->set_tensor_async(x, old_x.data(), 0, n * sizeof(float));
    backend->graph_compute({&sq});
    backend->set_tensor_async(x, new_x.data(), 0, n * sizeof(float));
    backend->graph_compute({&twice});
    std::vector<float> got_sq(n), got_twice(n), got_tail(10);
    backend->get_tensor_async(sq, got_sq.data(), 0, n * sizeof(float));
    backend->get_tensor_async(twice, got_twice.data(), 0, n * sizeof(float));
    backend->get_tensor_async(twice, got_tail.data(), (n - 10) * sizeof(float), 10 * sizeof(float));
    backend->synchronize();
    for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(got_sq[i], old_x[i] * old_x[i]) << i;
        ASSERT_EQ(got_twice[i], new_x[i] + new_x[i]) << i;
    }
    for (size_t i = 0; i < 10; ++i) EXPECT_EQ(got_tail[i], got_twice[n - 10 + i]);
    EXPECT_THROW(backend->set_tensor_async(x, new_x.data(), 4, n * sizeof(float)), Error);
    EXPECT_THROW(backend->get_tensor_async(x, got_sq.data(), 0, n * sizeof(float) + 1), Error);
}

TEST_P(NpuSession, EventsAreFenceSlots) {
    NpuDevice dev("NPU0", test_config(GetParam()));
    auto backend = dev.init_backend({});
    Graph g(dev);
    Tensor& x = g.leaf({1000, 10});
    Graph::fill(x, 2.0f);
    Tensor& y = g.node(Op::MUL, x, &x);
    auto ev = dev.new_event();
    auto ev2 = dev.new_event();
    backend->graph_compute({&y});
    backend->event_record(*ev);
    EXPECT_EQ(dev.session().last_seq(), 1u);  // the FENCE rode in the graph's (open) last batch
    backend->event_record(*ev2);
    ev2->synchronize();
    ev->synchronize();  // recorded earlier: already complete
    const std::vector<float> vx = Graph::read(x), vy = Graph::read(y);
    for (size_t i = 0; i < vy.size(); i += 37) EXPECT_EQ(vy[i], vx[i] * vx[i]);
    // A cached graph too: its last batch is sent with the next event's FENCE.
    backend->graph_compute({&y}, 7);
    backend->event_record(*ev);
    backend->graph_compute({&y}, 7);
    backend->event_record(*ev2);
    ev2->synchronize();
    EXPECT_EQ(dev.session().last_seq(), 4u);
    EXPECT_EQ(static_cast<NpuBackend&>(*backend).cache_hits(), 1u);
}

TEST_P(NpuSession, EventWaitOnAnotherSessionIsAFenceWaitOnItsDevice) {
    // NPU1's wait lasts as long as NPU0's matmuls: seconds under ThreadSanitizer, past the usual
    // 2 s test timeout (a wait that beats no heartbeat is a stall after the timeout).
    Config cfg = test_config(GetParam());
    cfg.timeout_ms = 30000;
    NpuDevice dev0("NPU0", cfg), dev1("NPU1", cfg);
    auto b0 = dev0.init_backend({});
    auto b1 = dev1.init_backend({});
    Graph g0(dev0, 8 << 20), g1(dev1);
    // NPU0: a chain of F32 matmuls (tens of ms), then its event.
    Tensor& w = g0.leaf({1024, 1024});
    Graph::fill(w, 0.001f);
    Tensor* y = &g0.leaf({1024, 64});
    Graph::fill(*y, 1.0f);
    std::vector<Tensor*> chain;
    for (int i = 0; i < 6; ++i) {
        Tensor& m = g0.leaf({1024, 64});
        m.op = Op::MUL_MAT;
        m.src[0] = &w;
        m.src[1] = y;
        chain.push_back(y = &m);
    }
    auto ev0 = dev0.new_event(), ev1 = dev1.new_event();
    EXPECT_TRUE(ev0->query());  // recorded nowhere: complete
    b0->graph_compute(chain);
    b0->event_record(*ev0);
    // The same session's event adds nothing (its device runs batches in order).
    const uint64_t seq0 = dev0.session().last_seq();
    b0->event_wait(*ev0);
    // NPU1 waits for NPU0 on its device, then records its own event: once ev1 is complete, ev0 is.
    Tensor& x = g1.leaf({64});
    Graph::fill(x, 3.0f);
    Tensor& z = g1.node(Op::ADD, x, &x);
    b1->event_wait(*ev0);
    b1->graph_compute({&z});
    b1->event_record(*ev1);
    ev1->synchronize();
    EXPECT_TRUE(ev0->query()) << "NPU1 finished before the NPU0 work it waited for";
    EXPECT_TRUE(ev1->query());
    b0->synchronize();
    EXPECT_EQ(dev0.session().last_seq(), seq0);
    EXPECT_EQ(Graph::read(z)[5], 2 * Graph::read(x)[5]);
    // An event recorded and waited for again after the slots wrapped around (64 slots) is still complete.
    for (int i = 0; i < 70; ++i) b1->event_record(*ev1);
    ev1->synchronize();
    b1->event_wait(*ev0);
    b1->synchronize();
}

TEST_P(NpuSession, CopiesBetweenStreamsAreOrderedWithoutTheHost) {
    NpuDevice dev0("NPU0", test_config(GetParam())), dev1("NPU1", test_config(GetParam()));
    auto b0 = dev0.init_backend({});
    auto b1 = dev1.init_backend({});
    Graph g0(dev0, 4 << 20), g1(dev1, 4 << 20);
    // NPU0 squares x three times (y); NPU1 copies y into c, then adds c to itself.
    Tensor& x = g0.leaf({100000});
    Graph::fill(x, 1.0f);
    Tensor* y = &x;
    std::vector<Tensor*> chain;
    for (int i = 0; i < 3; ++i) chain.push_back(y = &g0.node(Op::MUL, *y, y));
    Tensor& c = g1.leaf({100000});
    Tensor& z = g1.node(Op::ADD, c, &c);
    b0->graph_compute(chain);
    ASSERT_TRUE(b1->cpy_tensor_async(*b0, *y, c));
    b1->graph_compute({&z});
    b1->synchronize();  // NPU0 never synchronized by the host
    const std::vector<float> vx = Graph::read(x), vz = Graph::read(z);
    size_t bad = 0;
    for (size_t i = 0; i < vx.size(); ++i) {
        const float x2 = vx[i] * vx[i], x4 = x2 * x2, x8 = x4 * x4;
        bad += vz[i] != x8 + x8;
    }
    EXPECT_EQ(bad, 0u);
    // Within one session: a plain copy op in stream order.
    Tensor& c0 = g0.leaf({100000});
    Tensor& w = g0.node(Op::ADD, c0, &x);
    ASSERT_TRUE(b0->cpy_tensor_async(*b0, x, c0));
    b0->graph_compute({&w});
    b0->synchronize();
    EXPECT_EQ(Graph::read(w)[99999], 2 * vx[99999]);
    // Sizes that differ: nothing done, the caller copies through the host.
    Tensor& small = g1.leaf({10});
    EXPECT_FALSE(b1->cpy_tensor_async(*b0, x, small));
}

TEST_P(NpuSession, OperandOutsideNpuMemoryIsAnError) {
    NpuDevice dev("NPU0", test_config(GetParam()));
    auto backend = dev.init_backend({});
    Graph g(dev);
    Tensor host;  // never placed in a buffer
    host.set_shape(DType::F32, {4});
    Tensor& y = g.node(Op::ADD, host, &host);
    EXPECT_THROW(backend->graph_compute({&y}), Error);
}

struct FaultCase {
    const char* name;
    uint32_t fault;
    const char* status;
};

class NpuFault : public ::testing::TestWithParam<std::tuple<LinkKind, FaultCase>> {};

// At the end of a test: frees the ops a STUCK in-process device still holds and waits until the
// device the session abandoned has returned and its memory is gone.
struct ReleaseStuckOps {
    ~ReleaseStuckOps() {
        tsl_npu_device_release_stuck();
        const auto t0 = std::chrono::steady_clock::now();
        while (abandoned_inproc_devices() != 0 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10))
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        EXPECT_EQ(abandoned_inproc_devices(), 0u);
    }
};

TEST_P(NpuFault, EndsInOneCleanError) {
    const auto [kind, fc] = GetParam();
    ReleaseStuckOps release;  // declared before the device: runs after it is gone
    Config cfg = test_config(kind);
    cfg.fault = fc.fault;
    cfg.timeout_ms = 300;
    NpuDevice dev("NPU0", cfg);
    auto backend = dev.init_backend({});
    Graph g(dev);
    Tensor& x = g.leaf({256});
    Graph::fill(x, 1.0f);
    Tensor& y = g.node(Op::ADD, x, &x);
    const auto t0 = std::chrono::steady_clock::now();
    std::string message;
    try {
        backend->graph_compute({&y});
        backend->synchronize();
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::Device);
        message = e.what();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_NE(message.find(fc.status), std::string::npos) << message;
    EXPECT_NE(message.find("NPU0"), std::string::npos) << message;
    EXPECT_LT(seconds, 5.0);
    if (std::string(fc.status) == "TIMEOUT") {
        // A device that stops making progress (stuck inside an op too) ends within the timeout + 1 s.
        EXPECT_LE(seconds, cfg.timeout_ms / 1000.0 + 1.0);
        EXPECT_NE(message.find("(no progress within TESSEL_NPU_TIMEOUT_MS=300)"), std::string::npos) << message;
    }
    if (fc.fault == TSL_NPU_FAULT_STUCK && kind == LinkKind::InProcess) {
        EXPECT_EQ(abandoned_inproc_devices(), 1u) << "the stuck device was not abandoned";
    }
    // The failure is remembered: the next compute fails at once with the same error.
    try {
        backend->graph_compute({&y});
        ADD_FAILURE() << "graph_compute after a failure did not throw";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), message);
    }
    EXPECT_THROW(backend->synchronize(), Error);
    EXPECT_THROW(dev.buffer_type().alloc_buffer(4096), Error);  // a lost session maps nothing more
}

std::string link_name(LinkKind k) { return k == LinkKind::InProcess ? "InProcess" : "Process"; }

INSTANTIATE_TEST_SUITE_P(Links, NpuSession, ::testing::Values(LinkKind::InProcess, LinkKind::Process),
                         [](const auto& info) { return link_name(info.param); });

/// Every fault on both links, except a dying device: only a separate process can die.
std::vector<std::tuple<LinkKind, FaultCase>> fault_cases() {
    const FaultCase faults[] = {{"Status", TSL_NPU_FAULT_STATUS, "INJECTED"},
                                {"Sequence", TSL_NPU_FAULT_SEQ, "PROTOCOL"},
                                {"Hang", TSL_NPU_FAULT_HANG, "TIMEOUT"},
                                {"Stuck", TSL_NPU_FAULT_STUCK, "TIMEOUT"},
                                {"Die", TSL_NPU_FAULT_DIE, "DEVICE_LOST"},
                                {"BadDescriptor", TSL_NPU_FAULT_BAD_DESC, "BAD_DESC"}};
    std::vector<std::tuple<LinkKind, FaultCase>> out;
    for (LinkKind k : {LinkKind::InProcess, LinkKind::Process})
        for (const FaultCase& f : faults)
            if (!(f.fault == TSL_NPU_FAULT_DIE && k == LinkKind::InProcess)) out.emplace_back(k, f);
    return out;
}

INSTANTIATE_TEST_SUITE_P(Links, NpuFault, ::testing::ValuesIn(fault_cases()),
                         [](const auto& info) { return link_name(std::get<0>(info.param)) + std::get<1>(info.param).name; });

}  // namespace
}  // namespace tessel::npu

// Scheduler tests with a fake accelerator: its memory is not host-readable (so every crossing
// needs a copy) and it supports only the ops a test allows; everything else must fall back to
// the CPU and give the same results as a CPU-only run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <set>

#include "backend/registry.hpp"
#include "backend/scheduler.hpp"
#include "cpu/cpu_backend.hpp"
#include "cpu/ref/ref.hpp"
#include "cpu/threadpool.hpp"
#include "graph/builder.hpp"
#include "tessel/errors.hpp"
#include "runtime/devices.hpp"

using namespace tessel;

namespace {

class FakeBuffer final : public Buffer {
public:
    FakeBuffer(BufferType& t, size_t size) : Buffer(t, size), mem_(std::max<size_t>(size, 1) + 64) {}
    void* base() override { return mem_.data(); }
    void set_tensor(Tensor& t, const void* src, size_t off, size_t n) override {
        check_range(t, off, n, "set_tensor");
        std::memcpy(static_cast<uint8_t*>(t.data) + off, src, n);
    }
    void get_tensor(const Tensor& t, void* dst, size_t off, size_t n) const override {
        check_range(t, off, n, "get_tensor");
        std::memcpy(dst, static_cast<const uint8_t*>(t.data) + off, n);
    }
    void clear(uint8_t v) override { std::memset(mem_.data(), v, mem_.size()); }

private:
    std::vector<uint8_t> mem_;
};

class FakeBufferType final : public BufferType {
public:
    std::string name() const override { return "FAKE"; }
    std::unique_ptr<Buffer> alloc_buffer(size_t size) override { return std::make_unique<FakeBuffer>(*this, size); }
    bool is_host() const override { return false; }
};

class FakeEvent final : public Event {
public:
    void synchronize() override {}
    bool query() override { return true; }
};

class FakeDevice;

class FakeBackend final : public Backend {
public:
    explicit FakeBackend(FakeDevice& d) : dev_(d), pool_(1) {}
    Device& device() override;
    void graph_compute(const std::vector<Tensor*>& nodes, uint64_t graph_uid = 0) override;
    void synchronize() override {}
    void event_record(Event&) override { ++events_recorded; }
    void event_wait(Event& e) override { e.synchronize(); }
    void graph_optimize(std::vector<Tensor*>& nodes) override {
        if (optimize) optimize(nodes);
    }
    /// With device_copies: takes every copy the scheduler offers (the bytes are host memory here).
    bool cpy_tensor_async(Backend& from, const Tensor& src, Tensor& dst) override {
        if (!device_copies) return false;
        copied_from.push_back(&from);
        std::memcpy(dst.data, src.data, src.n_bytes());
        return true;
    }
    int events_recorded = 0;
    bool device_copies = false;
    std::vector<Backend*> copied_from;
    std::vector<Tensor*> computed;
    std::function<void(std::vector<Tensor*>&)> optimize;  // graph_optimize's reorder (none: keep)

private:
    FakeDevice& dev_;
    cpu::ThreadPool pool_;
};

class FakeDevice final : public Device {
public:
    explicit FakeDevice(std::set<Op> ops) : ops_(std::move(ops)) {}
    std::string name() const override { return "FAKE0"; }
    std::string description() const override { return "fake accelerator for tests"; }
    DeviceKind kind() const override { return DeviceKind::Accel; }
    void memory(size_t& free, size_t& total) const override { free = total = 1u << 30; }
    std::unique_ptr<Backend> init_backend(const BackendParams&) override { return std::make_unique<FakeBackend>(*this); }
    BufferType& buffer_type() override { return buft_; }
    bool supports_op(const Tensor& t) const override { return ops_.count(t.op) != 0; }
    bool supports_buft(const BufferType& bt) const override { return &bt == &buft_; }
    std::unique_ptr<Event> new_event() override { return std::make_unique<FakeEvent>(); }

private:
    std::set<Op> ops_;
    FakeBufferType buft_;
};

Device& FakeBackend::device() { return dev_; }

void FakeBackend::graph_compute(const std::vector<Tensor*>& nodes, uint64_t) {
    for (Tensor* n : nodes) {
        if (op_is_view(n->op)) continue;
        // The fake device must only ever be handed what it claims, with data in its own memory.
        EXPECT_TRUE(dev_.supports_op(*n)) << describe(*n);
        for (const Tensor* s : n->src)
            if (s) {
                EXPECT_TRUE(dev_.supports_buft((s->view_src ? s->view_src : s)->buffer->type())) << describe(*s);
            }
        pool_.run_parts(pool_.size(), [n](cpu::ThreadContext& part) { cpu::ref::compute(*n, part); });
        computed.push_back(n);
    }
}

// y = ((x + b) * 2 + x) * 0.5, with ADD being the ops the fake device may take.
struct SmallGraph {
    Graph g;
    Tensor *x, *b, *add1, *s1, *add2, *out;
    SmallGraph() {
        x = g.new_tensor(DType::F32, {37, 3}, "x");
        b = g.new_tensor(DType::F32, {37}, "b");
        x->flags |= kFlagInput;
        b->flags |= kFlagInput;
        add1 = build::add(g, x, b);
        s1 = build::scale(g, add1, 2.0f);
        add2 = build::add(g, s1, x);
        out = build::scale(g, add2, 0.5f);
        out->flags |= kFlagOutput;
        g.expand(out);
    }
    void set_inputs() {
        std::vector<float> xs(37 * 3), bs(37);
        for (size_t i = 0; i < xs.size(); ++i) xs[i] = 0.25f * static_cast<float>(i) - 7.0f;
        for (size_t i = 0; i < bs.size(); ++i) bs[i] = 1.0f / static_cast<float>(i + 1);
        x->buffer->set_tensor(*x, xs.data(), 0, xs.size() * 4);
        b->buffer->set_tensor(*b, bs.data(), 0, bs.size() * 4);
    }
    std::vector<float> result() const {
        std::vector<float> r(37 * 3);
        out->buffer->get_tensor(*out, r.data(), 0, r.size() * 4);
        return r;
    }
};

std::vector<float> run_cpu_only() {
    auto cpu = cpu::cpu_device().init_backend({2});
    SmallGraph sg;
    Scheduler s({cpu.get()});
    s.allocate(sg.g);
    sg.set_inputs();
    s.compute();
    EXPECT_EQ(s.splits().size(), 1u);
    return sg.result();
}

}  // namespace

TEST(Scheduler, CpuOnlyComputesTheExpectedValues) {
    const std::vector<float> r = run_cpu_only();
    for (int row = 0; row < 3; ++row)
        for (int i = 0; i < 37; ++i) {
            const float x = 0.25f * static_cast<float>(row * 37 + i) - 7.0f;
            const float b = 1.0f / static_cast<float>(i + 1);
            EXPECT_FLOAT_EQ(r[row * 37 + i], ((x + b) * 2.0f + x) * 0.5f);
        }
}

TEST(Scheduler, AcceleratorTakesWhatItSupportsAndCpuTakesTheRest) {
    FakeDevice fake({Op::ADD});
    auto fb = fake.init_backend({});
    auto cpu = cpu::cpu_device().init_backend({2});
    SmallGraph sg;
    Scheduler s({fb.get(), cpu.get()});
    s.allocate(sg.g);
    EXPECT_EQ(s.backend_of(*sg.add1), fb.get());
    EXPECT_EQ(s.backend_of(*sg.add2), fb.get());
    EXPECT_EQ(s.backend_of(*sg.s1), cpu.get());
    EXPECT_EQ(s.backend_of(*sg.out), cpu.get());
    ASSERT_EQ(s.splits().size(), 4u);  // ADD | SCALE | ADD | SCALE
    // the first ADD reads both host inputs through copies; the second ADD copies s1 and x
    EXPECT_EQ(s.splits()[0].copies.size(), 2u);
    EXPECT_EQ(s.splits()[1].copies.size(), 1u);  // add1's result back to host
    EXPECT_EQ(s.splits()[2].copies.size(), 2u);
    EXPECT_GT(s.compute_buffer_size(*fb), 0u);
    sg.set_inputs();
    s.compute();
    EXPECT_EQ(static_cast<FakeBackend*>(fb.get())->computed.size(), 2u);
    EXPECT_EQ(sg.result(), run_cpu_only());  // bit-identical: same reference kernels
}

TEST(Scheduler, ADeviceThatCopiesFromTheProducerSkipsTheHostStaging) {
    FakeDevice fake({Op::ADD});
    auto fb = fake.init_backend({});
    auto* fake_stream = static_cast<FakeBackend*>(fb.get());
    fake_stream->device_copies = true;
    auto cpu = cpu::cpu_device().init_backend({2});
    SmallGraph sg;
    Scheduler s({fb.get(), cpu.get()});
    s.allocate(sg.g);
    sg.set_inputs();
    s.compute();
    // Only s1 (computed by the CPU) reaches the second ADD by a device copy; host inputs have no
    // producing stream, and the CPU takes no device copies: those go through host memory.
    ASSERT_EQ(fake_stream->copied_from.size(), 1u);
    EXPECT_EQ(fake_stream->copied_from[0], cpu.get());
    EXPECT_EQ(sg.result(), run_cpu_only());
}

// The CPU backend, recording what the scheduler tells it about idleness.
class IdleRecordingCpu final : public Backend {
public:
    explicit IdleRecordingCpu(int threads) : cpu_(cpu::cpu_device().init_backend({threads})) {}
    Device& device() override { return cpu_->device(); }
    void graph_compute(const std::vector<Tensor*>& nodes, uint64_t uid = 0) override {
        EXPECT_FALSE(idle) << "the CPU computes while told it is idle";
        cpu_->graph_compute(nodes, uid);
    }
    void synchronize() override { cpu_->synchronize(); }
    void event_record(Event& e) override { cpu_->event_record(e); }
    void event_wait(Event& e) override { cpu_->event_wait(e); }
    void set_idle(bool i) override {
        idle = i;
        calls.push_back(i);
        cpu_->set_idle(i);
    }
    bool idle = false;
    std::vector<bool> calls;

private:
    std::unique_ptr<Backend> cpu_;
};

TEST(Scheduler, CpuIsIdleWhileTheAcceleratorComputes) {
    FakeDevice fake({Op::ADD});
    auto fb = fake.init_backend({});
    IdleRecordingCpu cpu(2);
    SmallGraph sg;
    Scheduler s({fb.get(), &cpu});
    s.allocate(sg.g);
    ASSERT_EQ(s.splits().size(), 4u);  // ADD (fake) | SCALE | ADD (fake) | SCALE
    sg.set_inputs();
    s.compute();
    EXPECT_EQ(cpu.calls, (std::vector<bool>{true, false, true, false, false}));
    EXPECT_FALSE(cpu.idle);
    EXPECT_EQ(sg.result(), run_cpu_only());

    IdleRecordingCpu alone(2);  // a CPU-only graph is never told anything
    SmallGraph sg2;
    Scheduler s2({&alone});
    s2.allocate(sg2.g);
    sg2.set_inputs();
    s2.compute();
    EXPECT_TRUE(alone.calls.empty());
}

TEST(Scheduler, DecliningAcceleratorFallsBackToCpuWithoutError) {
    FakeDevice fake({});  // supports nothing
    auto fb = fake.init_backend({});
    auto cpu = cpu::cpu_device().init_backend({1});
    SmallGraph sg;
    Scheduler s({fb.get(), cpu.get()});
    s.allocate(sg.g);
    ASSERT_EQ(s.splits().size(), 1u);
    EXPECT_EQ(s.splits()[0].backend, cpu.get());
    EXPECT_EQ(s.compute_buffer_size(*fb), 0u);
    sg.set_inputs();
    s.compute();
    EXPECT_TRUE(static_cast<FakeBackend*>(fb.get())->computed.empty());
    EXPECT_EQ(sg.result(), run_cpu_only());
}

TEST(Scheduler, WeightsOnTheAcceleratorAreCopiedWhenTheCpuRunsTheOp) {
    // The weight lives in FAKE memory, but the fake device declines MUL_MAT: the CPU runs it on a copy.
    FakeDevice fake({Op::ADD});
    auto fb = fake.init_backend({});
    auto cpu = cpu::cpu_device().init_backend({2});
    Graph g;
    Tensor* w = g.new_tensor(DType::F32, {8, 4}, "w");
    Tensor* x = g.new_tensor(DType::F32, {8, 2}, "x");
    w->flags |= kFlagWeight;
    Tensor* y = build::mul_mat(g, w, x);
    y->flags |= kFlagOutput;
    g.expand(y);
    auto wbuf = fake.buffer_type().alloc_buffer(w->n_bytes());
    wbuf->set_usage(BufferUsage::Weights);
    wbuf->init_tensor(*w, 0);
    std::vector<float> wv(32), xv(16);
    for (int i = 0; i < 32; ++i) wv[i] = static_cast<float>(i % 5) - 2.0f;
    for (int i = 0; i < 16; ++i) xv[i] = 0.5f * static_cast<float>(i);
    wbuf->set_tensor(*w, wv.data(), 0, 128);

    Scheduler s({fb.get(), cpu.get()});
    s.allocate(g);
    EXPECT_EQ(s.backend_of(*y), cpu.get());
    ASSERT_EQ(s.splits().size(), 1u);
    ASSERT_EQ(s.splits()[0].copies.size(), 1u);
    x->buffer->set_tensor(*x, xv.data(), 0, 64);
    s.compute();
    std::vector<float> yv(8);
    y->buffer->get_tensor(*y, yv.data(), 0, 32);
    for (int m = 0; m < 2; ++m)
        for (int n = 0; n < 4; ++n) {
            float ref = 0;
            for (int k = 0; k < 8; ++k) ref += wv[n * 8 + k] * xv[m * 8 + k];
            EXPECT_FLOAT_EQ(yv[m * 4 + n], ref);
        }
}

TEST(Scheduler, RequiresACpuBackend) {
    FakeDevice fake({Op::ADD});
    auto fb = fake.init_backend({});
    EXPECT_THROW(Scheduler({fb.get()}), Error);
}

TEST(Registry, CpuIsRegisteredFirstAndDevicesCanBeAdded) {
    Registry& r = runtime::device_registry();
    ASSERT_FALSE(r.devices().empty());
    EXPECT_EQ(r.devices().front()->name(), "CPU");
    EXPECT_EQ(r.find("CPU"), &cpu::cpu_device());
    Device& d = r.add(std::make_unique<FakeDevice>(std::set<Op>{Op::ADD}));
    EXPECT_EQ(r.find("FAKE0"), &d);
    r.remove(d);
    EXPECT_EQ(r.find("FAKE0"), nullptr);
}

TEST(Scheduler, ViewsCrossingDevicesAreCopiedWithTheirStorage) {
    // ADD on the accelerator, a reshape of its result read by SCALE on the CPU, and a reshape of a
    // host input read by the accelerator's ADD.
    FakeDevice fake({Op::ADD});
    auto fb = fake.init_backend({});
    auto cpu = cpu::cpu_device().init_backend({2});
    Graph g;
    Tensor* x = g.new_tensor(DType::F32, {6, 2}, "x");
    x->flags |= kFlagInput;
    Tensor* xr = build::reshape(g, x, {12});
    Tensor* b = g.new_tensor(DType::F32, {12}, "b");
    b->flags |= kFlagInput;
    Tensor* sum = build::add(g, xr, b);          // accelerator, reads a view of host memory
    Tensor* sr = build::reshape(g, sum, {3, 4});  // view of accelerator memory
    Tensor* out = build::scale(g, sr, 10.0f);     // CPU
    out->flags |= kFlagOutput;
    g.expand(out);
    const uint64_t uid_before = g.uid();
    Scheduler s({fb.get(), cpu.get()});
    s.allocate(g);
    EXPECT_EQ(s.backend_of(*sum), fb.get());
    EXPECT_EQ(s.backend_of(*out), cpu.get());
    std::vector<float> xv(12), bv(12), ov(12);
    for (int i = 0; i < 12; ++i) xv[i] = static_cast<float>(i), bv[i] = 0.5f * static_cast<float>(i);
    x->buffer->set_tensor(*x, xv.data(), 0, 48);
    b->buffer->set_tensor(*b, bv.data(), 0, 48);
    s.compute();
    out->buffer->get_tensor(*out, ov.data(), 0, 48);
    for (int i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(ov[i], 15.0f * static_cast<float>(i));
    EXPECT_NE(g.uid(), uid_before);  // sources point at local copies now; uid stays computable
    s.release();
    EXPECT_EQ(sum->src[0], xr);  // the graph is given back as built
    EXPECT_EQ(out->src[0], sr);
    EXPECT_EQ(x->buffer, nullptr);
    EXPECT_EQ(g.uid(), uid_before);
}

TEST(Scheduler, AllocatingTwiceReusesTheGraphSafely) {
    FakeDevice fake({Op::ADD});
    auto fb = fake.init_backend({});
    auto cpu = cpu::cpu_device().init_backend({1});
    SmallGraph sg;
    Scheduler s({fb.get(), cpu.get()});
    s.allocate(sg.g);
    s.allocate(sg.g);  // everything from the first allocation is released first
    sg.set_inputs();
    s.compute();
    EXPECT_EQ(sg.result(), run_cpu_only());
}

// Each split's backend reorders its nodes once per allocate (not per compute); the compute buffer
// is planned over the new order: t3, moved first, must not get t1's bytes, which the original
// order frees for it once t2 has read t1.
TEST(Scheduler, GraphOptimizeReordersASplitBeforeItsMemoryIsPlanned) {
    FakeDevice fake({Op::ADD, Op::SCALE});
    auto fb = fake.init_backend({});
    auto& f = static_cast<FakeBackend&>(*fb);
    auto cpu = cpu::cpu_device().init_backend({1});
    Graph g;
    Tensor* x = g.new_tensor(DType::F32, {64, 4}, "x");
    Tensor* b = g.new_tensor(DType::F32, {64, 4}, "b");
    Tensor* t1 = build::add(g, x, b);
    Tensor* t2 = build::scale(g, t1, 2.0f);
    Tensor* t3 = build::add(g, x, x);
    Tensor* out = build::add(g, t2, t3);
    out->flags |= kFlagOutput;
    g.expand(out);
    ASSERT_EQ(g.nodes(), (std::vector<Tensor*>{t1, t2, t3, out}));
    int calls = 0;
    f.optimize = [&](std::vector<Tensor*>& nodes) {
        ++calls;
        const auto it = std::find(nodes.begin(), nodes.end(), t3);
        std::rotate(nodes.begin(), it, it + 1);
    };
    Scheduler s({fb.get(), cpu.get()});
    s.allocate(g);
    EXPECT_EQ(calls, 1);
    ASSERT_EQ(s.splits().size(), 1u);
    EXPECT_EQ(s.splits()[0].nodes, (std::vector<Tensor*>{t3, t1, t2, out}));
    std::vector<float> xs(64 * 4), bs(64 * 4);
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = 0.5f * static_cast<float>(i) - 3.0f, bs[i] = 1.0f / static_cast<float>(i + 1);
    for (int step = 0; step < 2; ++step) {
        x->buffer->set_tensor(*x, xs.data(), 0, xs.size() * 4);
        b->buffer->set_tensor(*b, bs.data(), 0, bs.size() * 4);
        s.compute();
        std::vector<float> r(xs.size());
        out->buffer->get_tensor(*out, r.data(), 0, r.size() * 4);
        for (size_t i = 0; i < r.size(); ++i) ASSERT_FLOAT_EQ(r[i], (xs[i] + bs[i]) * 2.0f + (xs[i] + xs[i])) << "element " << i;
    }
    EXPECT_EQ(calls, 1) << "graph_optimize runs once per allocate, not per compute";
    EXPECT_EQ(f.computed, (std::vector<Tensor*>{t3, t1, t2, out, t3, t1, t2, out}));
}

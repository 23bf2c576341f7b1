// The NPU backend under the scheduler, beside the CPU: it takes the ops it claims, the CPU the
// rest (here SCALE, filtered out with the op filter), with the CPU-only results. With
// TESSEL_NPU_HOSTBUF=1 (Config::hostbuf) the CPU's compute memory and the graph inputs live in
// NPU0-HOST, which the device reads in place: the NPU's splits then need no input copies.
#include <gtest/gtest.h>

#include <cstdlib>

#include "backend/scheduler.hpp"
#include "cpu/cpu_backend.hpp"
#include "graph/builder.hpp"
#include "npu/host/device.hpp"

namespace tessel::npu {
namespace {

// y = ((x + b) * 2 + x) * 0.5: ADDs on the NPU, SCALEs on the CPU.
struct SmallGraph {
    Graph g;
    Tensor *x, *b, *add1, *add2, *out;
    SmallGraph() {
        x = g.new_tensor(DType::F32, {37, 3}, "x");
        b = g.new_tensor(DType::F32, {37}, "b");
        x->flags |= kFlagInput;
        b->flags |= kFlagInput;
        add1 = build::add(g, x, b);
        Tensor* s1 = build::scale(g, add1, 2.0f);
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
    void check_result() const {
        std::vector<float> r(37 * 3);
        out->buffer->get_tensor(*out, r.data(), 0, r.size() * 4);
        for (int row = 0; row < 3; ++row)
            for (int i = 0; i < 37; ++i) {
                const float x = 0.25f * static_cast<float>(row * 37 + i) - 7.0f;
                const float b = 1.0f / static_cast<float>(i + 1);
                EXPECT_FLOAT_EQ(r[row * 37 + i], ((x + b) * 2.0f + x) * 0.5f);
            }
    }
};

size_t npu_split_copies(const Scheduler& s, const Backend* npu) {
    size_t n = 0;
    for (const Scheduler::Split& sp : s.splits())
        if (sp.backend == npu) n += sp.copies.size();
    return n;
}

class NpuScheduler : public ::testing::TestWithParam<bool> {};

TEST_P(NpuScheduler, NpuTakesItsOpsCpuTheRest) {
    const bool hostbuf = GetParam();
    Config cfg;
    cfg.opfilter = "^SCALE$";
    cfg.hostbuf = hostbuf;
    NpuDevice dev(0, cfg);
    auto npu = dev.init_backend({});
    auto cpu = cpu::cpu_device().init_backend({2});
    SmallGraph sg;
    Scheduler s({npu.get(), cpu.get()});
    s.allocate(sg.g);
    EXPECT_EQ(s.backend_of(*sg.add1), npu.get());
    EXPECT_EQ(s.backend_of(*sg.add2), npu.get());
    EXPECT_EQ(s.backend_of(*sg.out), cpu.get());
    ASSERT_EQ(s.splits().size(), 4u);  // ADD | SCALE | ADD | SCALE
    EXPECT_EQ(sg.x->buffer->type().name(), hostbuf ? "NPU0-HOST" : "CPU");
    if (hostbuf) EXPECT_EQ(npu_split_copies(s, npu.get()), 0u);
    else EXPECT_EQ(npu_split_copies(s, npu.get()), 4u);  // x, b; then s1 and x again
    sg.set_inputs();
    s.compute();
    sg.check_result();
}

INSTANTIATE_TEST_SUITE_P(HostBuf, NpuScheduler, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "HostBuffers" : "Copies"; });

}  // namespace
}  // namespace tessel::npu

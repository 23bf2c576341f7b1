// The NPU backend under the scheduler, beside the CPU: it takes the ops it claims, the CPU the
// rest (here SCALE, filtered out with the op filter), with the CPU-only results. With
// TESSEL_NPU_HOSTBUF=1 (Config::hostbuf) the CPU's compute memory and the graph inputs live in
// NPU0-HOST, which the device reads in place: the NPU's splits then need no input copies.
// In-place writers (SET_ROWS into a tensor that already has memory, like the KV cache) run on a
// backend that addresses that memory, so no write lands in a copy. Weights go to the NPU only for
// uses the NPU claims (model/weights.hpp).
#include <gtest/gtest.h>

#include <cstdlib>

#include "backend/scheduler.hpp"
#include "model/weights.hpp"
#include "cpu/cpu_backend.hpp"
#include "graph/builder.hpp"
#include "npu/host/buffer.hpp"
#include "npu/host/device.hpp"
#include "tessel/errors.hpp"

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
    NpuDevice dev("NPU0", cfg);
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

// rows = x + b (on the NPU), then SET_ROWS of rows into a cache-like tensor `dst` [K, R] that
// already has memory of type `dst_type` (filled with -1 - row), at rows `ids`.
struct SetRowsGraph {
    static constexpr int64_t K = 37, R = 9, n = 3;
    static constexpr int32_t kIds[n] = {7, 0, 4};
    Graph g;
    Tensor *x, *b, *ids, *dst, *rows, *out;
    std::unique_ptr<Buffer> dst_buf;
    explicit SetRowsGraph(BufferType& dst_type) {
        x = g.new_tensor(DType::F32, {K, n}, "x");
        b = g.new_tensor(DType::F32, {K}, "b");
        ids = g.new_tensor(DType::I32, {n}, "ids");
        dst = g.new_tensor(DType::F32, {K, R}, "cache");
        for (Tensor* t : {x, b, ids}) t->flags |= kFlagInput;
        dst_buf = dst_type.alloc_buffer(dst_type.alloc_size(*dst));
        dst_buf->init_tensor(*dst, 0);
        std::vector<float> init(K * R);
        for (int64_t r = 0; r < R; ++r)
            for (int64_t i = 0; i < K; ++i) init[r * K + i] = -1.0f - static_cast<float>(r);
        dst->buffer->set_tensor(*dst, init.data(), 0, init.size() * 4);
        rows = build::add(g, x, b);
        out = build::set_rows(g, dst, rows, ids);
        g.expand(out);
    }
    static float xv(int64_t row, int64_t i) { return 0.5f * static_cast<float>(row * K + i) - 3.0f; }
    void set_inputs() {
        std::vector<float> xs(K * n), bs(K, 0.25f);
        for (int64_t r = 0; r < n; ++r)
            for (int64_t i = 0; i < K; ++i) xs[r * K + i] = xv(r, i);
        x->buffer->set_tensor(*x, xs.data(), 0, xs.size() * 4);
        b->buffer->set_tensor(*b, bs.data(), 0, bs.size() * 4);
        ids->buffer->set_tensor(*ids, kIds, 0, sizeof(kIds));
    }
    // Row ids[j] holds x row j + 0.25; every other row keeps its fill.
    void check_cache() const {
        std::vector<float> got(K * R);
        dst->buffer->get_tensor(*dst, got.data(), 0, got.size() * 4);
        for (int64_t r = 0; r < R; ++r) {
            int64_t from = -1;
            for (int64_t j = 0; j < n; ++j)
                if (kIds[j] == r) from = j;
            for (int64_t i = 0; i < K; ++i)
                EXPECT_EQ(got[r * K + i], from >= 0 ? xv(from, i) + 0.25f : -1.0f - static_cast<float>(r)) << "row " << r << " elem " << i;
        }
    }
};

// A destination in CPU memory: the NPU claims SET_ROWS but would write into a copy, so the CPU
// (which addresses the memory) runs it; the rows come from the NPU's ADD.
TEST(NpuSchedulerInPlace, SetRowsIntoCpuMemoryRunsOnTheCpu) {
    NpuDevice dev("NPU0", Config{});
    auto npu = dev.init_backend({});
    auto cpu = cpu::cpu_device().init_backend({2});
    SetRowsGraph sg(cpu::cpu_device().buffer_type());
    ASSERT_TRUE(dev.supports_op(*sg.out));
    Scheduler s({npu.get(), cpu.get()});
    s.allocate(sg.g);
    EXPECT_EQ(s.backend_of(*sg.rows), npu.get());
    EXPECT_EQ(s.backend_of(*sg.out), cpu.get());
    sg.set_inputs();
    s.compute();
    sg.check_cache();
}

// A destination in NPU0-HOST memory (where a context beside an NPU keeps its KV cache): the NPU
// runs SET_ROWS in place, and the CPU reads the result without copies.
TEST(NpuSchedulerInPlace, SetRowsIntoNpuHostMemoryRunsOnTheNpu) {
    NpuDevice dev("NPU0", Config{});
    auto npu = dev.init_backend({});
    auto cpu = cpu::cpu_device().init_backend({2});
    SetRowsGraph sg(dev.host_buffer_type());
    Scheduler s({npu.get(), cpu.get()});
    s.allocate(sg.g);
    EXPECT_EQ(s.backend_of(*sg.out), npu.get());
    sg.set_inputs();
    s.compute();
    sg.check_cache();
}

// A destination in device memory (NPU0) with SET_ROWS filtered out of the NPU: no backend both
// runs the op and addresses the memory, which is an error naming the node, not a lost write.
TEST(NpuSchedulerInPlace, NoBackendForTheDestinationIsAnError) {
    Config cfg;
    cfg.opfilter = "^SET_ROWS$";
    NpuDevice dev("NPU0", cfg);
    auto npu = dev.init_backend({});
    auto cpu = cpu::cpu_device().init_backend({2});
    SetRowsGraph sg(dev.buffer_type());
    Scheduler s({npu.get(), cpu.get()});
    try {
        s.allocate(sg.g);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("SET_ROWS"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("writing into NPU0 memory"), std::string::npos) << e.what();
    }
}

// Weights beside an NPU: a norm weight read by a MUL the NPU claims goes to NPU0; a Q8_0 matrix
// read by MUL_MAT (not claimed) and a Q8_0 table read by GET_ROWS (claimed from plain memory, but
// NPU0 would store it tiled and no kernel reads tiles yet) stay in the CPU's types.
TEST(NpuWeights, PlacedOnTheNpuOnlyForUsesItClaims) {
    NpuDevice dev("NPU0", Config{});
    Device& cpu = cpu::cpu_device();
    const std::vector<Device*> devices{&dev, &cpu};
    Graph g;
    Tensor* norm = g.new_tensor(DType::F32, {64}, "blk.0.attn_norm.weight");
    Tensor* mat = g.new_tensor(DType::Q8_0, {64, 64}, "blk.0.attn_q.weight");
    Tensor* embd = g.new_tensor(DType::Q8_0, {64, 100}, "token_embd.weight");
    Tensor* k6 = g.new_tensor(DType::Q6_K, {256, 64}, "blk.0.ffn_down.weight");
    for (Tensor* w : {norm, mat, embd, k6}) w->flags |= kFlagWeight;
    Tensor* ids = g.new_tensor(DType::I32, {3}, "ids");
    Tensor* x = build::get_rows(g, embd, ids);
    Tensor* h = build::mul(g, build::rms_norm(g, x, 1e-5f), norm);
    Tensor* q = build::mul_mat(g, mat, h);
    Tensor* h6 = g.new_tensor(DType::F32, {256, 3}, "h6");
    Tensor* d = build::mul_mat(g, k6, h6);
    ASSERT_TRUE(dev.supports_op(*x));  // unplaced: judged as NPU0 would store the table (tiled)
    // The device reads the norm plainly and the Q8_0 matrix and table as tiles (MUL_MAT, GET_ROWS).
    EXPECT_EQ(&choose_weight_buffer_type(devices, *norm, {h}), &dev.buffer_type());
    EXPECT_EQ(&choose_weight_buffer_type(devices, *mat, {q}), &dev.buffer_type());
    EXPECT_EQ(&choose_weight_buffer_type(devices, *embd, {x}), &dev.buffer_type());
    // No device kernel reads Q6_K: that weight gets what the CPU alone would give it.
    EXPECT_EQ(&choose_weight_buffer_type(devices, *k6, {d}), &choose_weight_buffer_type({&cpu}, *k6, {d}));
    // Under TESSEL_NPU_MM_SELECT=flat no kernel reads tiles: the matrix stays with the CPU too.
    Config flat;
    flat.mm_select = 1u << TSL_NPU_MM_FLAT;
    NpuDevice flat_dev("NPU0", flat);
    const std::vector<Device*> flat_devices{&flat_dev, &cpu};
    EXPECT_EQ(&choose_weight_buffer_type(flat_devices, *mat, {q}), &choose_weight_buffer_type({&cpu}, *mat, {q}));
    // NPU0-HOST stores nothing tiled: it serves the GET_ROWS.
    EXPECT_TRUE(dev.host_buffer_type().supports_use(*x));
    EXPECT_TRUE(dev.buffer_type().supports_use(*x));
}

}  // namespace
}  // namespace tessel::npu

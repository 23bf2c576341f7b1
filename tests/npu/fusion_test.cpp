// Enqueue-time fusion (npu/host/fusion.hpp) through the NPU backend: each pattern names its fused
// op in the batch's profile and computes what the unfused ops compute (up to float rounding);
// TESSEL_NPU_OPFUSION=0 and single kinds select what fuses; a producer with a second reader or
// flagged as a graph output is not fused away; a fused op that does not fit one batch is not made.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/scheduler.hpp"
#include "cpu/cpu_backend.hpp"
#include "graph/builder.hpp"
#include "graph/builder_attn.hpp"
#include "npu/host/config.hpp"
#include "npu/host/device.hpp"
#include "npu/host/fusion.hpp"
#include "npu/host/session.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {
namespace {

/// A graph whose leaves and nodes are placed in NPU buffers (leaves in `weights_apart` get a
/// buffer of their own, of at least `apart_bytes`), filled with deterministic values.
struct Net {
    Graph g;
    std::vector<Tensor*> outputs;
    std::vector<Tensor*> apart;
    size_t apart_bytes = 0;
    std::vector<std::unique_ptr<Buffer>> bufs;

    Tensor* input(std::initializer_list<int64_t> ne) { return g.new_tensor(DType::F32, ne); }
    void output(Tensor* t) {
        t->flags |= kFlagOutput;
        g.expand(t);
        outputs.push_back(t);
    }
    void place(NpuDevice& dev) {
        std::vector<Tensor*> own;
        for (Tensor* t : g.leaves()) own.push_back(t);
        for (Tensor* t : g.nodes())
            if (!t->view_src) own.push_back(t);
        size_t bytes = 0;
        for (Tensor* t : own) bytes += (t->n_bytes() + 127) / 128 * 128;
        bufs.push_back(dev.buffer_type().alloc_buffer(bytes));
        size_t used = 0;
        for (Tensor* t : own) {
            if (std::find(apart.begin(), apart.end(), t) != apart.end()) {
                bufs.push_back(dev.buffer_type().alloc_buffer(std::max(apart_bytes, t->n_bytes())));
                bufs.back()->init_tensor(*t, 0);
                continue;
            }
            bufs.front()->init_tensor(*t, used);
            used += (t->n_bytes() + 127) / 128 * 128;
        }
        for (Tensor* t : g.nodes())
            if (t->view_src) t->view_src->buffer->init_tensor(*t, 0);
        for (size_t l = 0; l < g.leaves().size(); ++l) {
            Tensor& t = *g.leaves()[l];
            std::vector<float> v(static_cast<size_t>(t.n_elements()));
            for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.37f * static_cast<float>(i) + static_cast<float>(l)) * 1.5f;
            t.buffer->set_tensor(t, v.data(), 0, v.size() * 4);
        }
    }
};

struct Result {
    std::vector<std::string> ops;             // the batch's op names
    std::vector<std::vector<float>> outputs;  // Net::outputs' values
    std::vector<std::string> kernels;         // Net::outputs' kernel names
};

Config test_config() {
    Config c;
    c.timeout_ms = 5000;
    c.profile = true;
    if (const char* exe = std::getenv("TESSEL_NPU_DEVICE_EXE")) c.device_exe = exe;
    return c;
}

/// Builds a Net with `build`, runs it on a fresh NPU0 under cfg, returns the ops and outputs.
Result run(const Config& cfg, const std::function<void(Net&)>& build) {
    NpuDevice dev("NPU0", cfg);
    auto backend = dev.init_backend({});
    Net net;
    build(net);
    net.place(dev);
    backend->graph_compute(net.g.nodes());
    backend->synchronize();
    Result r;
    for (const OpProfile& p : dev.session().last_profile()) r.ops.push_back(p.op);
    for (Tensor* t : net.outputs) {
        std::vector<float> v(static_cast<size_t>(t->n_elements()));
        t->buffer->get_tensor(*t, v.data(), 0, v.size() * 4);
        r.outputs.push_back(std::move(v));
        r.kernels.push_back(backend->kernel_name(*t));
    }
    return r;
}

Config with_fusion(uint32_t kinds) {
    Config c = test_config();
    c.opfusion = kinds;
    return c;
}

/// Fused and unfused runs agree to float rounding (relative 1e-6 of each output's scale).
void expect_same_values(const Result& fused, const Result& unfused) {
    ASSERT_EQ(fused.outputs.size(), unfused.outputs.size());
    for (size_t o = 0; o < fused.outputs.size(); ++o) {
        ASSERT_EQ(fused.outputs[o].size(), unfused.outputs[o].size());
        float scale = 0.0f;
        for (float v : unfused.outputs[o]) scale = std::max(scale, std::fabs(v));
        ASSERT_GT(scale, 0.0f);
        for (size_t i = 0; i < fused.outputs[o].size(); ++i)
            ASSERT_NEAR(fused.outputs[o][i], unfused.outputs[o][i], 1e-6f * scale) << "output " << o << " element " << i;
    }
}

using Ops = std::vector<std::string>;

void norm_mul(Net& n) {
    Tensor* x = n.input({64, 3});
    Tensor* w = n.input({64});
    n.output(build::mul(n.g, build::rms_norm(n.g, x, 1e-5f), w));
}

TEST(NpuFusion, RmsNormMulIsOneOp) {
    const Result fused = run(test_config(), norm_mul);
    const Result unfused = run(with_fusion(0), norm_mul);
    EXPECT_EQ(fused.ops, (Ops{"RMS_NORM+MUL"}));
    EXPECT_EQ(unfused.ops, (Ops{"RMS_NORM", "MUL"}));
    expect_same_values(fused, unfused);
}

TEST(NpuFusion, NormMulWithTheWeightFirstAndSameShape) {
    auto build = [](Net& n) {
        Tensor* x = n.input({48, 2});
        Tensor* w = n.input({48, 2});
        n.output(build::mul(n.g, w, build::norm(n.g, x, 1e-5f)));
    };
    const Result fused = run(test_config(), build);
    EXPECT_EQ(fused.ops, (Ops{"NORM+MUL"}));
    expect_same_values(fused, run(with_fusion(0), build));
}

TEST(NpuFusion, NormWithASecondReaderIsNotFused) {
    auto build = [](Net& n) {
        Tensor* x = n.input({64, 3});
        Tensor* w = n.input({64});
        Tensor* norm = build::rms_norm(n.g, x, 1e-5f);
        n.output(build::add(n.g, build::mul(n.g, norm, w), norm));  // norm read twice
    };
    EXPECT_EQ(run(test_config(), build).ops, (Ops{"RMS_NORM", "MUL", "ADD"}));
}

TEST(NpuFusion, NormFlaggedAsOutputIsNotFused) {
    auto build = [](Net& n) {
        Tensor* x = n.input({64, 3});
        Tensor* w = n.input({64});
        Tensor* norm = build::rms_norm(n.g, x, 1e-5f);
        Tensor* y = build::mul(n.g, norm, w);
        n.output(norm);  // the caller reads it: it must be written
        n.output(y);
    };
    const Result r = run(test_config(), build);
    EXPECT_EQ(r.ops, (Ops{"RMS_NORM", "MUL"}));
    expect_same_values(r, run(with_fusion(0), build));
}

void matmul_bias(Net& n) {
    Tensor* w = n.input({64, 40});
    Tensor* x = n.input({64, 5});
    Tensor* b = n.input({40});
    n.output(build::add(n.g, build::mul_mat(n.g, w, x), b));
}

TEST(NpuFusion, MatmulBiasIsOneOp) {
    const Result fused = run(test_config(), matmul_bias);
    const Result unfused = run(with_fusion(0), matmul_bias);
    EXPECT_EQ(fused.ops, (Ops{"MUL_MAT+ADD"}));
    EXPECT_EQ(unfused.ops, (Ops{"MUL_MAT", "ADD"}));
    expect_same_values(fused, unfused);
}

TEST(NpuFusion, MatmulWithASecondReaderKeepsItsAdd) {
    auto build = [](Net& n) {
        Tensor* w = n.input({64, 40});
        Tensor* x = n.input({64, 5});
        Tensor* b = n.input({40});
        Tensor* y = build::mul_mat(n.g, w, x);
        n.output(build::mul(n.g, build::add(n.g, y, b), y));
    };
    EXPECT_EQ(run(test_config(), build).ops, (Ops{"MUL_MAT", "ADD", "MUL"}));
}

/// Q/K/V: three matmuls of one activation tensor, with biases when `bias`.
std::function<void(Net&)> qkv(bool bias) {
    return [bias](Net& n) {
        Tensor* x = n.input({64, 5});
        for (int64_t rows : {40, 24, 24}) {
            Tensor* y = build::mul_mat(n.g, n.input({64, rows}), x);
            n.output(bias ? build::add(n.g, y, n.input({rows})) : y);
        }
    };
}

TEST(NpuFusion, MatmulsSharingActivationsAreOneOp) {
    const Result fused = run(test_config(), qkv(false));
    const Result unfused = run(with_fusion(0), qkv(false));
    EXPECT_EQ(fused.ops, (Ops{"MUL_MAT x3"}));
    EXPECT_EQ(unfused.ops, (Ops{"MUL_MAT", "MUL_MAT", "MUL_MAT"}));
    expect_same_values(fused, unfused);
}

TEST(NpuFusion, MatmulsWithBiasesAreOneOp) {
    const Result fused = run(test_config(), qkv(true));
    EXPECT_EQ(fused.ops, (Ops{"MUL_MAT+ADD x3"}));
    expect_same_values(fused, run(with_fusion(0), qkv(true)));
    // one kind at a time
    EXPECT_EQ(run(with_fusion(kFuseSharedMatmul), qkv(true)).ops, (Ops{"MUL_MAT", "ADD", "MUL_MAT", "ADD", "MUL_MAT", "ADD"}));
    EXPECT_EQ(run(with_fusion(kFuseMatmulBias), qkv(true)).ops, (Ops{"MUL_MAT+ADD", "MUL_MAT+ADD", "MUL_MAT+ADD"}));
    EXPECT_EQ(run(with_fusion(kFuseNormMul | kFuseSharedMatmul), qkv(false)).ops, (Ops{"MUL_MAT x3"}));
}

TEST(NpuFusion, MatmulsOfOtherActivationsOrKAreNotJoined) {
    auto build = [](Net& n) {
        Tensor* x = n.input({64, 5});
        Tensor* x2 = n.input({64, 5});
        Tensor* x3 = n.input({32, 5});
        n.output(build::mul_mat(n.g, n.input({64, 40}), x));
        n.output(build::mul_mat(n.g, n.input({64, 40}), x2));  // other activations
        n.output(build::mul_mat(n.g, n.input({32, 40}), x3));  // other K
    };
    EXPECT_EQ(run(test_config(), build).ops, (Ops{"MUL_MAT", "MUL_MAT", "MUL_MAT"}));
}

TEST(NpuFusion, MatmulIdsSharingActivationsAndIdsAreOneOp) {
    auto build = [](Net& n) {
        Tensor* x = n.input({64, 2, 3});  // [K, n_used, T]
        Tensor* ids = n.g.new_tensor(DType::I32, {2, 3});
        for (int64_t rows : {40, 24}) n.output(build::mul_mat_id(n.g, n.input({64, rows, 4}), x, ids));
    };
    auto with_ids = [&](const Config& cfg) {
        // ids are I32 leaves: place() fills floats, so they get their own values after placing
        NpuDevice dev("NPU0", cfg);
        auto backend = dev.init_backend({});
        Net net;
        build(net);
        net.place(dev);
        for (Tensor* l : net.g.leaves())
            if (l->type == DType::I32) {
                const std::vector<int32_t> v = {0, 3, 2, 2, 1, 0};
                l->buffer->set_tensor(*l, v.data(), 0, v.size() * 4);
            }
        backend->graph_compute(net.g.nodes());
        backend->synchronize();
        Result r;
        for (const OpProfile& p : dev.session().last_profile()) r.ops.push_back(p.op);
        for (Tensor* t : net.outputs) {
            std::vector<float> v(static_cast<size_t>(t->n_elements()));
            t->buffer->get_tensor(*t, v.data(), 0, v.size() * 4);
            r.outputs.push_back(std::move(v));
        }
        return r;
    };
    const Result fused = with_ids(test_config());
    const Result unfused = with_ids(with_fusion(0));
    EXPECT_EQ(fused.ops, (Ops{"MUL_MAT_ID x2"}));
    EXPECT_EQ(unfused.ops, (Ops{"MUL_MAT_ID", "MUL_MAT_ID"}));
    expect_same_values(fused, unfused);
}

TEST(NpuFusion, AFusedOpThatDoesNotFitOneBatchIsNotMade) {
    // five matmuls of one x, each weight in a 1 MiB buffer of its own; a batch maps 4 MiB: three
    // weights (with the small buffer of x and the outputs) fit in one batch, four or five do not
    auto build = [](Net& n) {
        Tensor* x = n.input({64, 5});
        for (int i = 0; i < 5; ++i) {
            Tensor* w = n.input({64, 8});
            n.apart.push_back(w);
            n.output(build::mul_mat(n.g, w, x));
        }
        n.apart_bytes = 1 << 20;
    };
    Config cfg = test_config();
    cfg.opbatch = 16;  // a small op queue: it maps into the same address-space budget
    cfg.opqueue = 2;
    cfg.max_mapped = 4ull << 20;
    const Result r = run(cfg, build);
    // the first two alone (no fused op from them fits a batch), in batch 1; the last three fused,
    // in a batch of their own (it does not fit next to the first two)
    EXPECT_EQ(r.kernels, (Ops{"npu_MUL_MAT", "npu_MUL_MAT", "npu_MUL_MAT x3", "npu_MUL_MAT x3", "npu_MUL_MAT x3"}));
    EXPECT_EQ(r.ops, (Ops{"MUL_MAT x3"}));  // the last batch
    cfg.max_mapped = 8ull << 20;
    EXPECT_EQ(run(cfg, build).ops, (Ops{"MUL_MAT x5"}));
}

TEST(NpuFusion, KernelNameNamesTheFusedOp) {
    NpuDevice dev("NPU0", test_config());
    auto backend = dev.init_backend({});
    Net net;
    norm_mul(net);
    net.place(dev);
    backend->graph_compute(net.g.nodes());
    backend->synchronize();
    for (Tensor* t : net.g.nodes()) EXPECT_EQ(backend->kernel_name(*t), "npu_RMS_NORM+MUL") << op_name(t->op);
}

// The norm is read by MUL on the NPU and by SCALE on the CPU (filtered off the NPU), in a later
// split: the scheduler flags it kFlagSplitOutput and the NPU writes it instead of fusing it away.
TEST(NpuFusion, AnIntermediateReadByAnotherSplitIsNotFusedAway) {
    for (const bool cpu_reads : {true, false}) {
        Config cfg = test_config();
        cfg.opfilter = "^SCALE$";
        NpuDevice dev("NPU0", cfg);
        auto npu = dev.init_backend({});
        auto cpu = cpu::cpu_device().init_backend({1});
        Graph g;
        Tensor* x = g.new_tensor(DType::F32, {64, 3});
        Tensor* w = g.new_tensor(DType::F32, {64});
        x->flags |= kFlagInput;
        w->flags |= kFlagInput;
        Tensor* norm = build::rms_norm(g, x, 1e-5f);
        Tensor* y = build::mul(g, norm, w);
        Tensor* out = cpu_reads ? build::add(g, y, build::scale(g, norm, 2.0f)) : build::add(g, y, w);
        out->flags |= kFlagOutput;
        g.expand(out);
        Scheduler s({npu.get(), cpu.get()});
        s.allocate(g);
        ASSERT_EQ(s.splits().size(), cpu_reads ? 3u : 1u);
        EXPECT_EQ((norm->flags & kFlagSplitOutput) != 0, cpu_reads);
        std::vector<float> xs(64 * 3), ws(64);
        for (size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(0.3f * static_cast<float>(i)) + 0.2f;
        for (size_t i = 0; i < ws.size(); ++i) ws[i] = 0.5f + 0.01f * static_cast<float>(i);
        x->buffer->set_tensor(*x, xs.data(), 0, xs.size() * 4);
        w->buffer->set_tensor(*w, ws.data(), 0, ws.size() * 4);
        s.compute();
        // (with three splits, kernel_name answers for the last: the ADD's; a fused-away norm would
        // leave the CPU's SCALE reading unwritten memory, caught by the values below)
        if (!cpu_reads) {
            EXPECT_EQ(npu->kernel_name(*y), "npu_RMS_NORM+MUL");
        }
        std::vector<float> got(64 * 3);
        out->buffer->get_tensor(*out, got.data(), 0, got.size() * 4);
        for (int64_t r = 0; r < 3; ++r) {
            double sq = 0.0;
            for (int64_t i = 0; i < 64; ++i) sq += static_cast<double>(xs[r * 64 + i]) * xs[r * 64 + i];
            const double inv = 1.0 / std::sqrt(sq / 64.0 + 1e-5);
            for (int64_t i = 0; i < 64; ++i) {
                const double n = xs[r * 64 + i] * inv;
                const double want = n * ws[i] + (cpu_reads ? 2.0 * n : ws[i]);
                ASSERT_NEAR(got[r * 64 + i], want, 1e-5 * (std::fabs(want) + 1.0)) << cpu_reads << " " << r << "," << i;
            }
        }
        s.release();
        EXPECT_EQ(norm->flags & kFlagSplitOutput, 0u);  // release() gives the graph back as it was
    }
}

/// next_device_op under a `fits` that refuses: every pattern falls back to the node alone.
TEST(NpuFusion, PatternsRespectFits) {
    NpuDevice dev("NPU0", test_config());
    Net net;
    qkv(true)(net);
    net.place(dev);
    const FusionGraph graph(net.g.nodes());
    const DeviceBudget budget = dev.budget();
    const FusionContext ctx{graph, budget, kFuseAll};
    size_t next = 0;
    const FusedOp all = next_device_op(ctx, graph.next_op(0), [](const DeviceOp&) { return true; }, &next);
    EXPECT_EQ(all.name, "MUL_MAT+ADD x3");
    EXPECT_EQ(all.nodes.size(), 6u);
    EXPECT_EQ(all.op.dsts.size(), 3u);
    EXPECT_EQ(all.op.srcs.size(), 7u);  // w0, x, b0, w1, b1, w2, b2
    EXPECT_EQ(next, net.g.nodes().size());
    const FusedOp alone = next_device_op(ctx, graph.next_op(0), [](const DeviceOp&) { return false; }, &next);
    EXPECT_EQ(alone.name, "MUL_MAT");
    EXPECT_EQ(alone.nodes.size(), 1u);
    EXPECT_EQ(next, graph.next_op(0) + 1);
}

class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old, had_ = true;
        setenv(name, value, 1);
    }
    ~ScopedEnv() {
        if (had_) setenv(name_, old_.c_str(), 1);
        else unsetenv(name_);
    }

private:
    const char* name_;
    std::string old_;
    bool had_ = false;
};

TEST(NpuFusionConfig, OpFusionValues) {
    EXPECT_EQ(config_from_env().opfusion, kFuseAll);  // default
    {
        ScopedEnv e("TESSEL_NPU_OPFUSION", "0");
        EXPECT_EQ(config_from_env().opfusion, 0u);
    }
    {
        ScopedEnv e("TESSEL_NPU_OPFUSION", "1");
        EXPECT_EQ(config_from_env().opfusion, kFuseAll);
    }
    {
        ScopedEnv e("TESSEL_NPU_OPFUSION", "6");
        EXPECT_EQ(config_from_env().opfusion, uint32_t{kFuseNormMul | kFuseMatmulBias});
    }
    for (const char* bad : {"3", "16", "-1", "all", "2x"}) {
        ScopedEnv e("TESSEL_NPU_OPFUSION", bad);
        try {
            config_from_env();
            ADD_FAILURE() << "accepted " << bad;
        } catch (const Error& err) {
            EXPECT_NE(std::string(err.what()).find("TESSEL_NPU_OPFUSION"), std::string::npos) << err.what();
        }
    }
}

}  // namespace
}  // namespace tessel::npu

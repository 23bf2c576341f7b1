// The all-reduce under a VTCM budget and fused with the ADD that follows it (ALLREDUCE+ADD,
// docs/npu.md "All-reduce"): the plan's blocks shrink to the budget and still give the rank-order
// sums bit for bit; with AllReduceUse::NextAdd every rank whose next graph starts with an ADD of
// its sum runs one fused op, whose output has the bits of the sum plus the addend; when one rank's
// graph does not (or a rank is synchronized first) nothing fuses and the results are the same.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "graph/builder.hpp"
#include "graph/graph.hpp"
#include "npu/host/allreduce.hpp"
#include "npu/host/backend.hpp"
#include "npu/host/device.hpp"
#include "npu/host/profile.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {
namespace {

Config rank_config(uint64_t vtcm_bytes) {
    Config c;
    c.link = LinkKind::InProcess;
    c.timeout_ms = 5000;
    c.vtcm_bytes = vtcm_bytes;
    return c;
}

float value(size_t rank, size_t i) {
    return static_cast<float>((i * 7 + rank * 13) % 101) * 0.37f - 15.0f + static_cast<float>(rank) * 0.001f;
}

void fill(Tensor& t, size_t seed) {
    std::vector<float> v(static_cast<size_t>(t.n_elements()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = value(seed, i);
    t.buffer->set_tensor(t, v.data(), 0, v.size() * sizeof(float));
}

std::vector<float> read(const Tensor& t) {
    std::vector<float> v(static_cast<size_t>(t.n_elements()));
    t.buffer->get_tensor(t, v.data(), 0, v.size() * sizeof(float));
    return v;
}

/// What each rank's next graph starts with.
enum class Next { Add, AddSwapped, Scale };

/// n ranks, each a device with a stream and a graph: `x` (the rank's all-reduce tensor), an
/// addend `a` ([ne0] broadcast along the rows, or x's shape) and y = ADD(x, a) (or ADD(a, x)), then
/// z = SCALE(y, 0.5); or, for Next::Scale, y = SCALE(x, 0.5).
struct Ranks {
    std::vector<std::unique_ptr<NpuDevice>> devices;
    std::vector<std::unique_ptr<Backend>> streams;
    std::vector<std::unique_ptr<Buffer>> buffers;
    std::vector<Graph> graphs;
    std::vector<Tensor*> x, a, y, z;

    Ranks(size_t n, const std::vector<int64_t>& ne, bool broadcast, const std::vector<Next>& next, uint64_t vtcm_bytes = 8 << 20)
        : graphs(n) {
        for (size_t r = 0; r < n; ++r) {
            devices.push_back(std::make_unique<NpuDevice>("NPU" + std::to_string(r), rank_config(vtcm_bytes)));
            streams.push_back(devices.back()->init_backend({}));
            Graph& g = graphs[r];
            x.push_back(g.new_tensor(DType::F32, {ne[0], ne[1], ne[2]}));
            a.push_back(broadcast ? g.new_tensor(DType::F32, {ne[0]}) : g.new_tensor(DType::F32, {ne[0], ne[1], ne[2]}));
            if (next[r] == Next::Scale) {
                y.push_back(build::scale(g, x[r], 0.5f));
                z.push_back(y[r]);
            } else {
                y.push_back(next[r] == Next::Add ? build::add(g, x[r], a[r]) : build::add(g, a[r], x[r]));
                z.push_back(build::scale(g, y[r], 0.5f));
            }
            z[r]->flags |= kFlagOutput;
            g.expand(z[r]);
            const size_t bytes = 4 * (x[r]->n_bytes() + 256);
            buffers.push_back(devices.back()->buffer_type().alloc_buffer(bytes));
            size_t used = 0;
            for (Tensor* t : {x[r], a[r], y[r], z[r]}) {
                if (t->buffer) continue;  // y == z for Next::Scale
                buffers.back()->init_tensor(*t, used);
                used += (t->n_bytes() + 127) / 128 * 128;
            }
            fill(*x[r], r);
            fill(*a[r], r + 7);
        }
    }
    std::vector<Backend*> stream_ptrs() const {
        std::vector<Backend*> out;
        for (const auto& s : streams) out.push_back(s.get());
        return out;
    }
    void compute(size_t r) { streams[r]->graph_compute(graphs[r].nodes(), 0); }
    /// Element i of the rank-order sum.
    float sum(size_t i) const {
        float s = value(0, i);
        for (size_t r = 1; r < x.size(); ++r) s += value(r, i);
        return s;
    }
    /// Index of the addend element that element i of x meets.
    size_t addend_index(size_t r, size_t i) const { return a[r]->n_elements() == x[r]->n_elements() ? i : i % static_cast<size_t>(x[r]->ne[0]); }
};

/// Counts elements of rank r's outputs that differ from the unfused computation's bits.
void expect_rank_results(const Ranks& k, size_t r, Next next) {
    const std::vector<float> y = read(*k.y[r]), z = read(*k.z[r]);
    size_t bad_y = 0, bad_z = 0;
    for (size_t i = 0; i < y.size(); ++i) {
        const float want = next == Next::Scale ? k.sum(i) * 0.5f : k.sum(i) + value(r + 7, k.addend_index(r, i));
        bad_y += y[i] != want;
        bad_z += next != Next::Scale && z[i] != want * 0.5f;
    }
    EXPECT_EQ(bad_y, 0u) << "rank " << r << ": y[0] " << y[0];
    EXPECT_EQ(bad_z, 0u) << "rank " << r << ": z[0] " << z[0];
}

struct Case {
    size_t ranks;
    AllReduceMode mode;
    std::vector<int64_t> ne;  // 3 dims
    bool broadcast;           // the addend is one row
};

class NpuAllReduceFusion : public ::testing::TestWithParam<Case> {};

TEST_P(NpuAllReduceFusion, EveryRankRunsOneFusedOpWithTheUnfusedBits) {
    const Case& c = GetParam();
    std::vector<Next> next;
    for (size_t r = 0; r < c.ranks; ++r) next.push_back(r % 2 && !c.broadcast ? Next::AddSwapped : Next::Add);  // ADD broadcasts src1 only
    Ranks k(c.ranks, c.ne, c.broadcast, next);
    const std::vector<Backend*> streams = k.stream_ptrs();
    for (Backend* s : streams) s->set_profiling(true);
    Communicator comm(streams);
    comm.allreduce(k.x, c.mode, AllReduceUse::NextAdd);
    for (size_t r = 0; r < c.ranks; ++r) k.compute(r);
    for (Backend* s : streams) s->synchronize();
    for (size_t r = 0; r < c.ranks; ++r) {
        expect_rank_results(k, r, next[r]);
        EXPECT_EQ(streams[r]->kernel_name(*k.y[r]), "npu_ALLREDUCE+ADD") << "rank " << r;
        // the ranks' tensors keep their inputs
        const std::vector<float> x = read(*k.x[r]);
        EXPECT_EQ(x[5], value(r, 5));
        EXPECT_EQ(x.back(), value(r, x.size() - 1));
        // the fused op is no node's; the ADD's place is taken by a NOP paired with its node
        bool fused_op = false, add_paired = false;
        for (const OpTiming& t : streams[r]->take_profile()) {
            fused_op = fused_op || (t.op == "ALLREDUCE+ADD" && t.nodes.empty());
            add_paired = add_paired || (t.op == "ADD (fused)" && t.nodes.size() == 1 && t.nodes[0] == k.y[r]);
        }
        EXPECT_TRUE(fused_op) << "rank " << r;
        EXPECT_TRUE(add_paired) << "rank " << r;
    }
}

std::vector<Case> cases() {
    std::vector<Case> out;
    for (size_t n : {2, 3, 4}) {
        out.push_back({n, AllReduceMode::Elements, {1000, 1, 1}, false});
        out.push_back({n, AllReduceMode::Rows, {577, 5, 2}, true});
    }
    out.push_back({3, AllReduceMode::Rows, {64, 7, 1}, false});
    return out;
}

std::string case_name(const Case& c) {
    std::string s = std::to_string(c.ranks) + "Ranks" + (c.mode == AllReduceMode::Elements ? "1D" : "2D");
    for (int64_t n : c.ne) s += "_" + std::to_string(n);
    return s + (c.broadcast ? "_RowAddend" : "");
}

INSTANTIATE_TEST_SUITE_P(Shapes, NpuAllReduceFusion, ::testing::ValuesIn(cases()), [](const auto& info) { return case_name(info.param); });

TEST(NpuAllReduceFusionDeclined, ARankWhoseGraphStartsOtherwiseLeavesEveryRankUnfused) {
    const std::vector<Next> next = {Next::Add, Next::Scale, Next::Add};
    Ranks k(3, {1000, 1, 1}, false, next);
    const std::vector<Backend*> streams = k.stream_ptrs();
    Communicator comm(streams);
    comm.allreduce(k.x, AllReduceMode::Elements, AllReduceUse::NextAdd);
    for (size_t r = 0; r < 3; ++r) k.compute(r);
    for (Backend* s : streams) s->synchronize();
    for (size_t r = 0; r < 3; ++r) {
        expect_rank_results(k, r, next[r]);
        EXPECT_EQ(read(*k.x[r])[5], k.sum(5)) << "rank " << r << ": unfused, the tensor holds the sum";
    }
    EXPECT_EQ(streams[0]->kernel_name(*k.y[0]), "npu_ADD");
}

TEST(NpuAllReduceFusionDeclined, ARankSynchronizedFirstSendsEveryRanksAllReduceUnfused) {
    const std::vector<Next> next = {Next::Add, Next::Add};
    Ranks k(2, {577, 5, 2}, true, next);
    const std::vector<Backend*> streams = k.stream_ptrs();
    Communicator comm(streams);
    comm.allreduce(k.x, AllReduceMode::Rows, AllReduceUse::NextAdd);
    k.compute(0);
    streams[0]->synchronize();  // waits for rank 1's share: sending rank 0's batch sent rank 1's too
    k.compute(1);
    streams[1]->synchronize();
    for (size_t r = 0; r < 2; ++r) {
        expect_rank_results(k, r, next[r]);
        EXPECT_EQ(streams[r]->kernel_name(*k.y[r]), "npu_ADD") << "rank " << r;
    }
}

TEST(NpuAllReduceFusionDeclined, TheDefaultUseNeverFuses) {
    const std::vector<Next> next = {Next::Add, Next::Add};
    Ranks k(2, {1000, 1, 1}, false, next);
    const std::vector<Backend*> streams = k.stream_ptrs();
    Communicator comm(streams);
    comm.allreduce(k.x, AllReduceMode::Elements);
    for (size_t r = 0; r < 2; ++r) k.compute(r);
    for (Backend* s : streams) s->synchronize();
    for (size_t r = 0; r < 2; ++r) {
        expect_rank_results(k, r, next[r]);
        EXPECT_EQ(streams[r]->kernel_name(*k.y[r]), "npu_ADD");
        EXPECT_EQ(read(*k.x[r])[5], k.sum(5));
    }
}

TEST(NpuAllReducePlan, BlocksShrinkToTheBudgetAndRefuseWhenNothingFits) {
    Tensor big;
    big.set_shape(DType::F32, {576, 512});
    big.name = "partial_sums";  // 294912 elements: 2 ranks' shares of 147456
    DeviceBudget b;
    b.n_threads = 2;
    b.vtcm_bytes = 8 << 20;
    AllReducePlan p = plan_allreduce(big, AllReduceMode::Elements, 2, 0, false, b);
    EXPECT_EQ(p.block, 2048u);  // 73728 per worker, capped at 8 KiB a step
    EXPECT_EQ(p.scratch, 2u * 2048u * 4u * 2u);
    b.vtcm_bytes = 8192 + 100;
    p = plan_allreduce(big, AllReduceMode::Elements, 2, 0, false, b);
    EXPECT_EQ(p.block, 512u);  // 8292 / (2 buffers x 4 bytes x 2 workers) = 518, down to a multiple of 128
    EXPECT_EQ(p.scratch, 8192u);
    b.vtcm_bytes = 2047;
    try {
        plan_allreduce(big, AllReduceMode::Elements, 2, 0, false, b);
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::Unsupported);
        EXPECT_NE(std::string(e.what()).find("partial_sums [576, 512] F32"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("need 2048 bytes; the device has 2047"), std::string::npos) << e.what();
    }
    Tensor rows;
    rows.set_shape(DType::F32, {577, 5, 2});  // rows of 2308 bytes, 2368 in VTCM
    b.vtcm_bytes = 8 << 20;
    p = plan_allreduce(rows, AllReduceMode::Rows, 4, 1, false, b);  // rows [2, 5) of 10: 2 per worker
    EXPECT_EQ(p.block, 2u);
    p = plan_allreduce(rows, AllReduceMode::Rows, 4, 1, true, b);  // fused: all 10 rows, 5 per worker, 3 a step (8 KiB)
    EXPECT_EQ(p.block, 3u);
    b.vtcm_bytes = 2 * 2368 * 2;
    EXPECT_EQ(plan_allreduce(rows, AllReduceMode::Rows, 4, 1, true, b).block, 1u);
    b.vtcm_bytes -= 1;
    EXPECT_THROW(plan_allreduce(rows, AllReduceMode::Rows, 4, 1, true, b), Error);
}

TEST(NpuAllReducePlan, SmallBudgetsGiveTheSameBits) {
    // a few KiB of VTCM: many steps per worker, plain and fused
    for (const bool fuse : {false, true})
        for (const AllReduceMode mode : {AllReduceMode::Elements, AllReduceMode::Rows}) {
            const std::vector<Next> next(3, Next::Add);
            const std::vector<int64_t> ne = mode == AllReduceMode::Elements ? std::vector<int64_t>{2000, 3, 1} : std::vector<int64_t>{577, 5, 2};
            Ranks k(3, ne, mode == AllReduceMode::Rows, next, mode == AllReduceMode::Elements ? 2048 : 2 * 2368 * 2);
            const std::vector<Backend*> streams = k.stream_ptrs();
            Communicator comm(streams);
            comm.allreduce(k.x, mode, fuse ? AllReduceUse::NextAdd : AllReduceUse::Tensors);
            for (size_t r = 0; r < 3; ++r) k.compute(r);
            for (Backend* s : streams) s->synchronize();
            for (size_t r = 0; r < 3; ++r) {
                SCOPED_TRACE(std::string(fuse ? "fused " : "plain ") + (mode == AllReduceMode::Elements ? "1-D" : "2-D"));
                expect_rank_results(k, r, next[r]);
                EXPECT_EQ(streams[r]->kernel_name(*k.y[r]), fuse ? "npu_ALLREDUCE+ADD" : "npu_ADD");
            }
        }
}

TEST(NpuAllReducePlan, ABudgetTooSmallIsAnErrorNamingTheTensor) {
    const std::vector<Next> next(2, Next::Add);
    Ranks k(2, {1000, 1, 1}, false, next, 1024);
    const std::vector<Backend*> streams = k.stream_ptrs();
    Communicator comm(streams);
    try {
        comm.allreduce(k.x, AllReduceMode::Elements);
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::Unsupported);
        EXPECT_NE(std::string(e.what()).find("all-reduce of"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("the device has 1024"), std::string::npos) << e.what();
    }
    // nothing was queued: the streams still work
    for (size_t r = 0; r < 2; ++r) k.compute(r);
    for (Backend* s : streams) s->synchronize();
    for (size_t r = 0; r < 2; ++r) EXPECT_EQ(read(*k.y[r])[3], value(r, 3) + value(r + 7, 3));
}

}  // namespace
}  // namespace tessel::npu

// The NPU's graph reorder (src/npu/host/reorder.hpp): matmuls sharing an input are stacked and
// fusable chains joined; hazards by byte ranges (overlapping views, in-place copies, KV cache
// writes, memory a moved node's output reuses) and dependencies block moves; the window is 16
// nodes. Every result is a topological order of the input, and running it on the reference
// kernels gives the same bytes in every tensor as the original order.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_set>
#include <vector>

#include "cpu/cpu_backend.hpp"
#include "cpu/ref/ref.hpp"
#include "cpu/threadpool.hpp"
#include "graph/builder.hpp"
#include "graph/builder_attn.hpp"
#include "npu/host/config.hpp"
#include "npu/host/device.hpp"
#include "npu/host/reorder.hpp"
#include "support/host_graph.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {
namespace {

constexpr int64_t K = 32, T = 4;  // activation row length, tokens

Tensor* leaf(Graph& g, const std::string& name, std::initializer_list<int64_t> ne, bool weight = false) {
    Tensor* t = g.new_tensor(DType::F32, ne, name);
    if (weight) t->flags |= kFlagWeight;
    return t;
}

Tensor* named(Tensor* t, const std::string& name) {
    t->name = name;
    return t;
}

// A node unrelated to the matmuls: scale of a leaf of its own.
Tensor* filler(Graph& g, int i) {
    const std::string n = "f" + std::to_string(i);
    return named(build::scale(g, leaf(g, n + ".in", {K, T}), 0.5f), n);
}

// Names of the compute nodes (views left out) in `order`.
std::vector<std::string> names(const std::vector<Tensor*>& order) {
    std::vector<std::string> out;
    for (const Tensor* n : order)
        if (!op_is_view(n->op)) out.push_back(n->name);
    return out;
}

// Every node after its sources, and the same set of nodes as the input.
void expect_topological(const std::vector<Tensor*>& input, const std::vector<Tensor*>& order) {
    ASSERT_EQ(order.size(), input.size());
    std::unordered_set<const Tensor*> all(input.begin(), input.end()), seen;
    for (const Tensor* n : order) {
        ASSERT_TRUE(all.count(n)) << n->name << " was not in the input";
        for (const Tensor* s : n->src) {
            if (s && all.count(s)) {
                EXPECT_TRUE(seen.count(s)) << n->name << " runs before its source " << s->name;
            }
        }
        EXPECT_TRUE(seen.insert(n).second) << n->name << " listed twice";
    }
}

// Runs `order` on the reference kernels over fresh leaf values (I64 leaves: row ids 1, 3, 5, 7,
// 1, ...; I32 leaves: expert ids 0, 1, 2, 3, 0, ...); returns every tensor's bytes.
std::vector<std::vector<uint8_t>> run(Graph& g, const std::vector<Tensor*>& order) {
    for (Tensor* l : g.leaves()) {
        if (l->type == DType::F32)
            test::HostMemory::fill(*l, [l](int64_t i) { return std::sin(0.37f * static_cast<float>(i) + static_cast<float>(l->name.size())); });
        if (l->type == DType::I64)
            for (int64_t i = 0; i < l->n_elements(); ++i) static_cast<int64_t*>(l->data)[i] = (2 * i + 1) % 8;
        if (l->type == DType::I32)
            for (int64_t i = 0; i < l->n_elements(); ++i) static_cast<int32_t*>(l->data)[i] = static_cast<int32_t>(i % 4);
    }
    cpu::ThreadPool pool(1);
    for (Tensor* n : order) pool.run_parts(1, [n](cpu::ThreadContext& part) { cpu::ref::compute(*n, part); });
    std::vector<std::vector<uint8_t>> bytes;
    for (const Tensor& t : g.tensors()) {
        const auto* p = static_cast<const uint8_t*>(t.data);
        bytes.emplace_back(p, p + t.n_bytes());
    }
    return bytes;
}

struct Reordered {
    std::vector<Tensor*> order;
    size_t moved;
};

// Reorders g's nodes and checks the result: a topological order with the original's results.
Reordered reorder(Graph& g, bool compute = true) {
    Reordered r{g.nodes(), 0};
    r.moved = reorder_nodes(r.order);
    expect_topological(g.nodes(), r.order);
    if (compute) {
        test::HostMemory mem(g);
        const auto want = run(g, g.nodes());
        EXPECT_TRUE(run(g, r.order) == want) << "the reordered graph computes different bytes";
    }
    return r;
}

// x -> RMS_NORM -> MUL(norm weight) -> Q/K/V matmuls, each followed by its own scale.
struct Qkv {
    Graph g;
    Tensor *x, *xn, *q, *k, *v;
    Qkv() {
        x = leaf(g, "x", {K, T});
        Tensor* norm = named(build::rms_norm(g, x, 1e-5f), "norm");
        xn = named(build::mul(g, norm, leaf(g, "norm.w", {K}, true)), "xn");
        q = named(build::mul_mat(g, leaf(g, "wq", {K, 16}, true), xn), "q");
        k = named(build::mul_mat(g, leaf(g, "wk", {K, 8}, true), xn), "k");
        v = named(build::mul_mat(g, leaf(g, "wv", {K, 8}, true), xn), "v");
    }
    void expand_separated() {
        g.expand(named(build::scale(g, q, 0.25f), "q.s"));
        g.expand(named(build::scale(g, k, 2.0f), "k.s"));
        g.expand(v);
    }
};

TEST(NpuReorder, TheBackendReordersUnlessTesselNpuReorderIs0) {
    for (const char* value : {"0", "1"}) {
        setenv("TESSEL_NPU_REORDER", value, 1);
        const Config cfg = config_from_env();
        EXPECT_EQ(cfg.reorder, value[0] == '1');
        NpuDevice dev("NPU0", cfg);
        auto backend = dev.init_backend({});
        Qkv m;
        m.expand_separated();
        std::vector<Tensor*> order = m.g.nodes();
        backend->graph_optimize(order);
        EXPECT_EQ(names(order)[3], value[0] == '1' ? "k" : "q.s") << "TESSEL_NPU_REORDER=" << value;
    }
    setenv("TESSEL_NPU_REORDER", "yes", 1);
    EXPECT_THROW(config_from_env(), Error);
    unsetenv("TESSEL_NPU_REORDER");
    EXPECT_TRUE(config_from_env().reorder) << "on by default";
}

TEST(NpuReorder, QkvMatmulsSeparatedByOtherNodesAreStacked) {
    Qkv m;
    m.expand_separated();
    ASSERT_EQ(names(m.g.nodes()), (std::vector<std::string>{"norm", "xn", "q", "q.s", "k", "k.s", "v"}));
    const Reordered r = reorder(m.g);
    EXPECT_EQ(names(r.order), (std::vector<std::string>{"norm", "xn", "q", "k", "v", "q.s", "k.s"}));
    EXPECT_EQ(r.moved, 2u);
}

TEST(NpuReorder, MatmulsReadingTheSameBytesThroughDifferentViewsAreStacked) {
    Graph g;
    Tensor* x = leaf(g, "x", {K, 2 * T});
    Tensor* xa = build::view_2d(g, x, K, T, x->nb[1], 0);
    Tensor* xb = build::view_2d(g, x, K, T, x->nb[1], 0);  // the same rows, another view node
    g.expand(xa), g.expand(xb);
    g.expand(named(build::mul_mat(g, leaf(g, "w1", {K, 8}, true), xa), "m1"));
    g.expand(filler(g, 0));
    g.expand(named(build::mul_mat(g, leaf(g, "w2", {K, 8}, true), xb), "m2"));
    const Reordered r = reorder(g);
    EXPECT_EQ(names(r.order), (std::vector<std::string>{"m1", "m2", "f0"}));
}

TEST(NpuReorder, MulMatIdsStackOnlyWithTheSameActivationsAndIds) {
    Graph g;
    Tensor* x = leaf(g, "x", {K, 1, T});
    Tensor* ids = g.new_tensor(DType::I32, {2, T}, "ids");
    Tensor* other_ids = g.new_tensor(DType::I32, {2, T}, "other_ids");
    g.expand(named(build::mul_mat_id(g, leaf(g, "gate_exps", {K, 8, 4}, true), x, ids), "gate"));
    g.expand(filler(g, 0));
    g.expand(named(build::mul_mat(g, leaf(g, "w", {K, 8}, true), x), "plain"));  // MUL_MAT: another op
    g.expand(named(build::mul_mat_id(g, leaf(g, "down_exps", {K, 8, 4}, true), x, other_ids), "other"));
    g.expand(named(build::mul_mat_id(g, leaf(g, "up_exps", {K, 8, 4}, true), x, ids), "up"));
    const Reordered r = reorder(g);
    EXPECT_EQ(names(r.order), (std::vector<std::string>{"gate", "up", "f0", "plain", "other"}));
    EXPECT_EQ(r.moved, 1u);
}

TEST(NpuReorder, NothingMovesWhenNoMatmulsShareAnInput) {
    Graph g;
    Tensor* x = leaf(g, "x", {K, T});
    Tensor* a = named(build::mul_mat(g, leaf(g, "w1", {K, K}, true), x), "a");
    Tensor* b = named(build::scale(g, a, 3.0f), "b");
    Tensor* c = named(build::mul_mat(g, leaf(g, "w2", {K, K}, true), b), "c");  // reads b, not x
    g.expand(named(build::mul_mat(g, leaf(g, "w3", {K, 8}, true), leaf(g, "y", {K, T})), "d"));
    g.expand(c);
    const Reordered r = reorder(g);
    EXPECT_EQ(r.moved, 0u);
    EXPECT_EQ(r.order, g.nodes());
}

TEST(NpuReorder, MatmulsReadingDifferentActivationsStayApart) {
    // k and v read x2, computed after q (which reads x): no matmul shares q's input, and k and v
    // are adjacent already.
    Graph g;
    Tensor* x = leaf(g, "x", {K, T});
    g.expand(named(build::mul_mat(g, leaf(g, "wq", {K, 8}, true), x), "q"));
    Tensor* x2 = named(build::scale(g, x, 2.0f), "x2");
    g.expand(named(build::mul_mat(g, leaf(g, "wk", {K, 8}, true), x2), "k"));
    g.expand(named(build::mul_mat(g, leaf(g, "wv", {K, 8}, true), x2), "v"));
    const Reordered r = reorder(g);
    EXPECT_EQ(names(r.order), (std::vector<std::string>{"q", "x2", "k", "v"}));
    EXPECT_EQ(r.moved, 0u);
}

TEST(NpuReorder, FusableChainsAreJoinedAndKeptTogether) {
    Graph g;
    Tensor* x = leaf(g, "x", {K, T});
    // RMS_NORM -> MUL separated by an unrelated node
    Tensor* norm = named(build::rms_norm(g, x, 1e-5f), "norm");
    g.expand(norm);
    g.expand(filler(g, 0));
    Tensor* xn = named(build::mul(g, norm, leaf(g, "norm.w", {K}, true)), "xn");
    g.expand(xn);
    // MUL_MAT -> ADD(bias) for q and k, the ADDs listed after both matmuls and a filler
    Tensor* q = named(build::mul_mat(g, leaf(g, "wq", {K, 8}, true), xn), "q");
    g.expand(q);
    Tensor* k = named(build::mul_mat(g, leaf(g, "wk", {K, 8}, true), xn), "k");
    g.expand(k);
    g.expand(filler(g, 1));
    g.expand(named(build::add(g, q, leaf(g, "bq", {8}, true)), "q.b"));
    g.expand(named(build::add(g, k, leaf(g, "bk", {8}, true)), "k.b"));
    ASSERT_EQ(names(g.nodes()), (std::vector<std::string>{"norm", "f0", "xn", "q", "k", "f1", "q.b", "k.b"}));
    const Reordered r = reorder(g);
    // the chains first: xn to norm, q.b to q, k.b to k; then k's chain stacks after q's
    EXPECT_EQ(names(r.order), (std::vector<std::string>{"norm", "xn", "f0", "q", "q.b", "k", "k.b", "f1"}));
    EXPECT_EQ(r.moved, 3u);
}

TEST(NpuReorder, GluJoinsTheLaterOfItsGateAndUpMatmuls) {
    Graph g;
    Tensor* x = leaf(g, "x", {K, T});
    Tensor* gate = named(build::mul_mat(g, leaf(g, "wg", {K, 16}, true), x), "gate");
    Tensor* up = named(build::mul_mat(g, leaf(g, "wu", {K, 16}, true), x), "up");
    g.expand(gate);
    g.expand(filler(g, 0));
    g.expand(up);
    g.expand(filler(g, 1));
    g.expand(named(build::swiglu_split(g, gate, up), "glu"));
    const Reordered r = reorder(g);
    EXPECT_EQ(names(r.order), (std::vector<std::string>{"gate", "up", "glu", "f0", "f1"}));
    EXPECT_EQ(r.moved, 3u);  // glu, then up with it
}

TEST(NpuReorder, AChainWithASecondReaderOrANonWeightOperandIsNotJoined) {
    Graph g;
    Tensor* x = leaf(g, "x", {K, T});
    Tensor* norm = named(build::rms_norm(g, x, 1e-5f), "norm");
    g.expand(norm);
    g.expand(named(build::scale(g, norm, 2.0f), "other"));  // a second reader of norm
    g.expand(filler(g, 0));
    g.expand(named(build::mul(g, norm, leaf(g, "norm.w", {K}, true)), "xn"));
    Tensor* m = named(build::mul_mat(g, leaf(g, "w", {K, 8}, true), x), "m");
    g.expand(m);
    g.expand(filler(g, 1));
    g.expand(named(build::add(g, m, leaf(g, "residual", {8, T})), "m.res"));  // not a bias: no weight
    const Reordered r = reorder(g);
    EXPECT_EQ(r.moved, 0u);
    EXPECT_EQ(r.order, g.nodes());
}

// A node between q and k writes x (which both read) or not, by a copy into a view of x.
std::vector<std::string> order_with_copy_into_x(int64_t first_row, int64_t rows) {
    Graph g;
    Tensor* x = leaf(g, "x", {K, 2 * T});
    Tensor* xr = build::view_2d(g, x, K, T, x->nb[1], 0);  // rows 0..T-1, what the matmuls read
    Tensor* dst = build::view_2d(g, x, K, rows, x->nb[1], static_cast<uint64_t>(first_row) * x->nb[1]);
    g.expand(xr), g.expand(dst);
    g.expand(named(build::mul_mat(g, leaf(g, "wq", {K, 8}, true), xr), "q"));
    g.expand(named(build::cpy(g, leaf(g, "new", {K, rows}), dst), "write"));
    g.expand(named(build::mul_mat(g, leaf(g, "wk", {K, 8}, true), xr), "k"));
    return names(reorder(g).order);
}

TEST(NpuReorder, AWriteIntoAnOverlappingViewBlocksTheMove) {
    EXPECT_EQ(order_with_copy_into_x(T, T), (std::vector<std::string>{"q", "k", "write"}));           // rows T.. : disjoint
    EXPECT_EQ(order_with_copy_into_x(T - 1, 2), (std::vector<std::string>{"q", "write", "k"}));     // row T-1 overlaps
    EXPECT_EQ(order_with_copy_into_x(0, 1), (std::vector<std::string>{"q", "write", "k"}));         // row 0
}

TEST(NpuReorder, AnInPlaceCopyOverAMatmulsWeightBlocksTheMove) {
    Graph g;
    Tensor* x = leaf(g, "x", {K, T});
    Tensor* wk = leaf(g, "wk", {K, 8}, true);
    g.expand(named(build::mul_mat(g, leaf(g, "wq", {K, 8}, true), x), "q"));
    g.expand(named(build::cpy(g, leaf(g, "new", {K, 8}), wk), "overwrite wk"));
    g.expand(named(build::mul_mat(g, wk, x), "k"));
    const Reordered r = reorder(g);
    EXPECT_EQ(names(r.order), (std::vector<std::string>{"q", "overwrite wk", "k"}));
    EXPECT_EQ(r.moved, 0u);
}

// The K and V caches in one real buffer; SET_ROWS writes one of them between two matmuls that
// read x, the second of which also reads the K cache (attention-like).
std::vector<std::string> order_with_kv_write(bool into_k) {
    Graph g;
    Tensor* kc = g.new_tensor(DType::F32, {K, 16}, "cache_k");
    Tensor* vc = g.new_tensor(DType::F32, {K, 16}, "cache_v");
    Tensor* x = leaf(g, "x", {K, T});
    Tensor* rows = leaf(g, "rows", {K, 2});
    Tensor* ids = g.new_tensor(DType::I64, {2}, "ids");
    Tensor* kview = build::view_2d(g, kc, K, 8, kc->nb[1], 0);
    g.expand(kview);
    g.expand(named(build::mul_mat(g, leaf(g, "wq", {K, 8}, true), x), "q"));
    g.expand(named(build::set_rows(g, into_k ? kc : vc, rows, ids), "store"));
    g.expand(named(build::mul_mat(g, kview, x), "kq"));

    BufferType& bt = cpu::cpu_device().buffer_type();
    auto cache = bt.alloc_buffer(2 * bt.alloc_size(*kc) + bt.alignment());
    cache->init_tensor(*kc, 0);
    cache->init_tensor(*vc, (bt.alloc_size(*kc) + bt.alignment() - 1) / bt.alignment() * bt.alignment());
    cache->init_tensor(*kview, 0);
    std::vector<Tensor*> order = g.nodes();
    reorder_nodes(order);
    expect_topological(g.nodes(), order);
    return names(order);
}

TEST(NpuReorder, AKvCacheWriteBlocksAMatmulReadingTheCache) {
    EXPECT_EQ(order_with_kv_write(true), (std::vector<std::string>{"q", "store", "kq"}));
    EXPECT_EQ(order_with_kv_write(false), (std::vector<std::string>{"q", "kq", "store"}));  // V cache: other bytes
}

TEST(NpuReorder, AKvCacheWriteIsRespectedWhenComputed) {
    // The same graph on host memory (no buffer: bytes by owner and view offset), run both ways.
    Graph g;
    Tensor* kc = leaf(g, "cache_k", {K, 16});
    Tensor* x = leaf(g, "x", {K, T});
    Tensor* ids = g.new_tensor(DType::I64, {2}, "ids");
    Tensor* kview = build::view_2d(g, kc, K, 8, kc->nb[1], 0);
    g.expand(kview);
    g.expand(named(build::mul_mat(g, leaf(g, "wq", {K, 8}, true), x), "q"));
    g.expand(named(build::set_rows(g, kc, leaf(g, "rows", {K, 2}), ids), "store"));
    g.expand(named(build::mul_mat(g, kview, x), "kq"));
    const Reordered r = reorder(g);
    EXPECT_EQ(names(r.order), (std::vector<std::string>{"q", "store", "kq"}));
}

// q, `fillers` unrelated nodes, then k: k joins q only within the 16-node window.
size_t moved_across(int fillers) {
    Graph g;
    Tensor* x = leaf(g, "x", {K, T});
    g.expand(named(build::mul_mat(g, leaf(g, "wq", {K, 8}, true), x), "q"));
    for (int i = 0; i < fillers; ++i) g.expand(filler(g, i));
    g.expand(named(build::mul_mat(g, leaf(g, "wk", {K, 8}, true), x), "k"));
    const Reordered r = reorder(g, false);
    if (r.moved) {
        EXPECT_EQ(names(r.order)[1], "k");
    }
    return r.moved;
}

TEST(NpuReorder, MovesStayWithinTheWindow) {
    static_assert(kReorderWindow == 16);
    EXPECT_EQ(moved_across(14), 1u);  // q and k within 16 consecutive nodes
    EXPECT_EQ(moved_across(15), 0u);  // 17 nodes apart
}

TEST(NpuReorder, AMovedOutputReusingBytesReadInBetweenBlocksTheMove) {
    // Allocated graphs (as test-ops reorders them): k's output placed where u lives, which b
    // reads between q and k (an allocator reuses u's bytes once b is done in the original order).
    for (bool reuse : {true, false}) {
        Graph g;
        Tensor* x = leaf(g, "x", {K, T});
        Tensor* u = named(build::scale(g, leaf(g, "y", {8, T}), 2.0f), "u");
        g.expand(u);
        Tensor* q = named(build::mul_mat(g, leaf(g, "wq", {K, 8}, true), x), "q");
        g.expand(q);
        Tensor* b = named(build::scale(g, u, 3.0f), "b");
        g.expand(b);
        Tensor* k = named(build::mul_mat(g, leaf(g, "wk", {K, 8}, true), x), "k");
        g.expand(k);
        BufferType& bt = cpu::cpu_device().buffer_type();
        const size_t slot = 4096;
        auto buf = bt.alloc_buffer(4 * slot);
        buf->init_tensor(*u, 0);
        buf->init_tensor(*q, slot);
        buf->init_tensor(*b, 2 * slot);
        buf->init_tensor(*k, reuse ? 0 : 3 * slot);
        std::vector<Tensor*> order = g.nodes();
        reorder_nodes(order);
        EXPECT_EQ(names(order), reuse ? (std::vector<std::string>{"u", "q", "b", "k"}) : (std::vector<std::string>{"u", "q", "k", "b"}))
            << (reuse ? "k writes what b reads" : "k's output elsewhere");
    }
}

TEST(NpuReorder, ALayerWithKvWritesStaysATopologicalOrderWithTheSameResults) {
    // Two attention-like layers: norm, Q/K/V, K/V stored into caches by SET_ROWS and CPY, attention
    // scores from the cache, output projection, residual, gate/up/GLU/down.
    Graph g;
    const int64_t kv = 8;
    Tensor* cur = leaf(g, "x", {K, T});
    Tensor* ids = g.new_tensor(DType::I64, {T}, "ids");
    for (int l = 0; l < 2; ++l) {
        const std::string p = "l" + std::to_string(l) + ".";
        Tensor* kc = leaf(g, p + "cache_k", {K, kv});
        Tensor* vc = leaf(g, p + "cache_v", {kv, K});  // transposed: V^T rows
        Tensor* xn = build::mul(g, build::rms_norm(g, cur, 1e-5f), leaf(g, p + "norm.w", {K}, true));
        Tensor* q = build::mul_mat(g, leaf(g, p + "wq", {K, K}, true), xn);
        Tensor* k = build::mul_mat(g, leaf(g, p + "wk", {K, K}, true), xn);
        Tensor* v = build::mul_mat(g, leaf(g, p + "wv", {K, K}, true), xn);
        g.expand(build::set_rows(g, kc, k, ids));
        g.expand(build::cpy(g, build::transpose(g, v), build::view_2d(g, vc, T, K, vc->nb[1], 0)));
        Tensor* kq = build::soft_max(g, build::mul_mat(g, kc, q));   // [kv, T]
        Tensor* kqv = build::mul_mat(g, vc, kq);  // [K, T]
        Tensor* attn = build::add(g, cur, build::mul_mat(g, leaf(g, p + "wo", {K, K}, true), kqv));
        Tensor* hn = build::mul(g, build::rms_norm(g, attn, 1e-5f), leaf(g, p + "ffn_norm.w", {K}, true));
        Tensor* gate = build::mul_mat(g, leaf(g, p + "wg", {K, 2 * K}, true), hn);
        Tensor* up = build::mul_mat(g, leaf(g, p + "wu", {K, 2 * K}, true), hn);
        cur = build::add(g, attn, build::mul_mat(g, leaf(g, p + "wd", {2 * K, K}, true), build::swiglu_split(g, gate, up)));
    }
    g.expand(cur);
    int i = 0;
    for (const Tensor& t : g.tensors()) {
        if (t.name.empty()) const_cast<Tensor&>(t).name = std::string(op_name(t.op)) + "#" + std::to_string(i);
        ++i;
    }
    const Reordered r = reorder(g);
    EXPECT_GT(r.moved, 0u) << "expected the gate/up or Q/K/V matmuls to be stacked";
}

}  // namespace
}  // namespace tessel::npu

// Reference kernels and builders for element-wise ops: ADD, SUB, MUL, DIV, ADD_ID, SCALE, CLAMP,
// SQR, SQRT, LOG, UNARY, GLU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "cpu/ref/ref.hpp"
#include "graph/builder.hpp"
#include "ref_test_util.hpp"
#include "support/host_graph.hpp"
#include "tessel/errors.hpp"

using namespace tessel;
using reftest::get;
using reftest::run_1_and_3;
using reftest::set;

namespace {

// Relative closeness for results computed by different (but both accurate) formulas.
void expect_close(float got, double want, double rel = 2e-6, double abs_tol = 1e-30) {
    const double tol = std::max(abs_tol, rel * std::fabs(want));
    EXPECT_NEAR(got, want, tol);
}

}  // namespace

// ---- binary -----------------------------------------------------------------------------------

TEST(RefBinary, KnownAnswerWithRowBroadcast) {
    Graph g;
    Tensor* a = g.new_tensor(DType::F32, {3, 2}, "a");
    Tensor* b = g.new_tensor(DType::F32, {3}, "b");
    Tensor* outs[4] = {build::add(g, a, b), build::sub(g, a, b), build::mul(g, a, b), build::div(g, a, b)};
    for (Tensor* o : outs) g.expand(o);
    test::HostMemory mem(g);
    test::HostMemory::fill(*a, [](int64_t i) { return static_cast<float>(i + 1); });  // {1,2,3},{4,5,6}
    test::HostMemory::fill(*b, [](int64_t i) { return static_cast<float>(2 * (i + 1)); });  // {2,4,6}
    run_1_and_3(g, {outs[0], outs[1], outs[2], outs[3]});
    const float add[6] = {3, 6, 9, 6, 9, 12}, sub[6] = {-1, -2, -3, 2, 1, 0}, mul[6] = {2, 8, 18, 8, 20, 36},
                div[6] = {0.5f, 0.5f, 0.5f, 2.0f, 1.25f, 1.0f};
    for (int i = 0; i < 6; ++i) {
        EXPECT_EQ(get(*outs[0], i % 3, i / 3), add[i]);
        EXPECT_EQ(get(*outs[1], i % 3, i / 3), sub[i]);
        EXPECT_EQ(get(*outs[2], i % 3, i / 3), mul[i]);
        EXPECT_EQ(get(*outs[3], i % 3, i / 3), div[i]);
    }
}

TEST(RefBinary, RandomBroadcastF16AndPermutedSourcesMatchFloatFormula) {
    std::mt19937 rng(1);
    Graph g;
    Tensor* a = g.new_tensor(DType::F16, {6, 4, 3, 2}, "a");
    // b [6, 2, 1, 2] stored permuted: storage [2, 6, 1, 2] then transposed.
    Tensor* bs = g.new_tensor(DType::F32, {2, 6, 1, 2}, "b_storage");
    Tensor* b = build::transpose(g, bs);
    Tensor* outs[4] = {build::add(g, a, b), build::sub(g, a, b), build::mul(g, a, b), build::div(g, a, b)};
    for (Tensor* o : outs) g.expand(o);
    test::HostMemory mem(g);
    reftest::fill_random(*a, rng);
    reftest::fill_random(*b, rng, 0.5f, 2.0f);
    run_1_and_3(g, {outs[0], outs[1], outs[2], outs[3]});
    reftest::for_each(*a, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        const float x = get(*a, i0, i1, i2, i3);
        const float y = get(*b, i0, i1 % 2, 0, i3);
        ASSERT_EQ(get(*outs[0], i0, i1, i2, i3), x + y);
        ASSERT_EQ(get(*outs[1], i0, i1, i2, i3), x - y);
        ASSERT_EQ(get(*outs[2], i0, i1, i2, i3), x * y);
        ASSERT_EQ(get(*outs[3], i0, i1, i2, i3), x / y);
    });
    EXPECT_THROW(build::add(g, a, g.new_tensor(DType::F32, {4}, "no_divide")), Error);
}

TEST(RefBinary, SupportsF16DestinationNodes) {
    // Builders make F32 results; the kernel also writes F16 (rounded) for hand-built nodes.
    Graph g;
    Tensor* a = g.new_tensor(DType::F16, {4}, "a");
    Tensor* b = g.new_tensor(DType::F16, {1}, "b");
    Tensor* out = g.new_node(Op::MUL, DType::F16, a->ne, {a, b});
    g.expand(out);
    test::HostMemory mem(g);
    for (int i = 0; i < 4; ++i) set(*a, 1.0f + static_cast<float>(i) / 1024.0f, i);
    set(*b, 3.0f, 0);
    run_1_and_3(g, {out});
    for (int i = 0; i < 4; ++i) EXPECT_EQ(get(*out, i), fp16_to_fp32(fp32_to_fp16(get(*a, i) * 3.0f)));
    EXPECT_FALSE(cpu::ref::supports(*g.new_node(Op::ADD, DType::F32, {4, 1, 1, 1}, {a, g.new_tensor(DType::I32, {4})})));
}

// ---- ADD_ID -----------------------------------------------------------------------------------

TEST(RefAddId, AddsTheChosenBiasRow) {
    Graph g;
    Tensor* a = g.new_tensor(DType::F32, {2, 2, 3}, "a");  // [K, E_used, T]
    Tensor* bias = g.new_tensor(DType::F32, {2, 4}, "bias");  // [K, E]
    Tensor* ids = g.new_tensor(DType::I32, {2, 3}, "ids");
    Tensor* out = build::add_id(g, a, bias, ids);
    g.expand(out);
    test::HostMemory mem(g);
    test::HostMemory::fill(*a, [](int64_t i) { return static_cast<float>(i); });
    test::HostMemory::fill(*bias, [](int64_t i) { return static_cast<float>(1000 * (i / 2) + 100 * (i % 2)); });
    const int32_t id_values[6] = {3, 0, 1, 1, 2, 3};
    std::memcpy(ids->data, id_values, sizeof id_values);
    run_1_and_3(g, {out});
    reftest::for_each(*out, [&](int64_t k, int64_t e, int64_t t, int64_t) {
        const int32_t id = id_values[e + 2 * t];
        EXPECT_EQ(get(*out, k, e, t), static_cast<float>(k + 2 * e + 4 * t) + static_cast<float>(1000 * id + 100 * k));
    });
    EXPECT_THROW(build::add_id(g, a, bias, g.new_tensor(DType::I32, {3, 3}, "bad_ids")), Error);
    EXPECT_THROW(build::add_id(g, a, g.new_tensor(DType::F32, {3, 4}, "bad_bias"), ids), Error);
    const int32_t bad_values[6] = {0, 0, 0, 4, 0, 0};
    std::memcpy(ids->data, bad_values, sizeof bad_values);
    EXPECT_THROW(test::run_reference(g, 1), Error);
}

// ---- one-source maps --------------------------------------------------------------------------

TEST(RefMap, ScaleClampSqrSqrtLogKnownAnswers) {
    Graph g;
    Tensor* a = g.new_tensor(DType::F32, {5}, "a");
    Tensor* sc = build::scale(g, a, 2.0f, 0.5f);
    Tensor* cl = build::clamp(g, a, -1.0f, 2.5f);
    Tensor* sq = build::sqr(g, a);
    Tensor* rt = build::sqrt(g, build::sqr(g, a));
    Tensor* lg = build::log(g, a);
    for (Tensor* t : {sc, cl, sq, rt, lg}) g.expand(t);
    test::HostMemory mem(g);
    const float x[5] = {-3.0f, -0.5f, 1.0f, 2.0f, 4.0f};
    std::memcpy(a->data, x, sizeof x);
    run_1_and_3(g, {sc, cl, sq, rt, lg});
    const float want_sc[5] = {-5.5f, -0.5f, 2.5f, 4.5f, 8.5f};
    const float want_cl[5] = {-1.0f, -0.5f, 1.0f, 2.0f, 2.5f};
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(get(*sc, i), want_sc[i]);
        EXPECT_EQ(get(*cl, i), want_cl[i]);
        EXPECT_EQ(get(*sq, i), x[i] * x[i]);
        EXPECT_EQ(get(*rt, i), std::fabs(x[i]));
    }
    EXPECT_TRUE(std::isnan(get(*lg, 0)));
    EXPECT_EQ(get(*lg, 2), 0.0f);
    EXPECT_EQ(get(*lg, 3), static_cast<float>(std::log(2.0)));
    EXPECT_THROW(build::clamp(g, a, 1.0f, 0.0f), Error);
    EXPECT_THROW(build::sqr(g, g.new_tensor(DType::I32, {2}, "i")), Error);
}

TEST(RefUnary, KnownValues) {
    Graph g;
    Tensor* a = g.new_tensor(DType::F32, {3}, "a");
    Tensor* outs[static_cast<int>(UnaryOp::COUNT_)];
    for (int op = 0; op < static_cast<int>(UnaryOp::COUNT_); ++op) {
        outs[op] = build::unary(g, a, static_cast<UnaryOp>(op));
        g.expand(outs[op]);
    }
    test::HostMemory mem(g);
    const float x[3] = {0.0f, 1.0f, -2.0f};
    std::memcpy(a->data, x, sizeof x);
    tessel::test::run_reference(g, 3);
    auto at = [&](UnaryOp op, int i) { return get(*outs[static_cast<int>(op)], i); };
    // x = 0
    for (UnaryOp op : {UnaryOp::SILU, UnaryOp::GELU, UnaryOp::GELU_ERF, UnaryOp::GELU_QUICK, UnaryOp::TANH,
                       UnaryOp::ABS, UnaryOp::RELU})
        EXPECT_EQ(at(op, 0), 0.0f) << unary_op_name(op);
    EXPECT_EQ(at(UnaryOp::SIGMOID, 0), 0.5f);
    EXPECT_EQ(at(UnaryOp::EXP, 0), 1.0f);
    expect_close(at(UnaryOp::SOFTPLUS, 0), 0.69314718055994531);  // ln 2
    // x = 1 (values from the closed forms, to float precision)
    expect_close(at(UnaryOp::SILU, 1), 0.73105857863000487);
    expect_close(at(UnaryOp::GELU, 1), 0.84119199060827680);
    expect_close(at(UnaryOp::GELU_ERF, 1), 0.84134474606854293);
    expect_close(at(UnaryOp::SIGMOID, 1), 0.73105857863000487);
    expect_close(at(UnaryOp::EXP, 1), 2.7182818284590452);
    expect_close(at(UnaryOp::TANH, 1), 0.76159415595576489);
    expect_close(at(UnaryOp::SOFTPLUS, 1), 1.3132616875182228);
    // x = -2
    EXPECT_EQ(at(UnaryOp::NEG, 2), 2.0f);
    EXPECT_EQ(at(UnaryOp::ABS, 2), 2.0f);
    EXPECT_EQ(at(UnaryOp::RELU, 2), 0.0f);
    expect_close(at(UnaryOp::GELU_ERF, 2), -0.045500263896358417);
}

TEST(RefUnary, RandomStridedF16InputMatchesIndependentFormulas) {
    std::mt19937 rng(2);
    Graph g;
    Tensor* s = g.new_tensor(DType::F16, {7, 33, 2}, "storage");
    Tensor* a = build::permute(g, s, 1, 0, 2, 3);  // [33, 7, 2], strided rows
    Tensor* outs[static_cast<int>(UnaryOp::COUNT_)];
    for (int op = 0; op < static_cast<int>(UnaryOp::COUNT_); ++op) {
        outs[op] = build::unary(g, a, static_cast<UnaryOp>(op));
        g.expand(outs[op]);
    }
    test::HostMemory mem(g);
    reftest::fill_random(*a, rng, -8.0f, 8.0f);
    auto want = [](UnaryOp op, double x) -> double {
        const double pi = 3.14159265358979323846;
        switch (op) {
            case UnaryOp::SILU: return x / (1.0 + std::exp(-x));
            case UnaryOp::GELU: return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / pi) * (x + 0.044715 * std::pow(x, 3))));
            case UnaryOp::GELU_ERF: return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
            case UnaryOp::GELU_QUICK: return x / (1.0 + std::exp(-1.702 * x));
            case UnaryOp::SIGMOID: return 1.0 / (1.0 + std::exp(-x));
            case UnaryOp::NEG: return -x;
            case UnaryOp::EXP: return std::exp(x);
            case UnaryOp::SOFTPLUS: return std::log(1.0 + std::exp(x));
            case UnaryOp::TANH: return (std::exp(2 * x) - 1.0) / (std::exp(2 * x) + 1.0);
            case UnaryOp::ABS: return x < 0 ? -x : x;
            case UnaryOp::RELU: return x < 0 ? 0.0 : x;
            default: return 0.0;
        }
    };
    for (int thread_count : {1, 3}) {
        tessel::test::run_reference(g, thread_count);
        for (int op = 0; op < static_cast<int>(UnaryOp::COUNT_); ++op) {
            SCOPED_TRACE(unary_op_name(static_cast<UnaryOp>(op)));
            reftest::for_each(*a, [&](int64_t i0, int64_t i1, int64_t i2, int64_t) {
                const double x = get(*a, i0, i1, i2);
                expect_close(get(*outs[op], i0, i1, i2), want(static_cast<UnaryOp>(op), x), 1e-6, 1e-12);
            });
        }
    }
    run_1_and_3(g, std::vector<Tensor*>(std::begin(outs), std::end(outs)));
}

// ---- GLU --------------------------------------------------------------------------------------

TEST(RefGlu, SplitAndHalvesFormsAgreeAndMatchFormulas) {
    std::mt19937 rng(4);
    Graph g;
    const int64_t K = 10;
    Tensor* a = g.new_tensor(DType::F32, {2 * K, 3, 2}, "a");  // [x | gate] halves
    Tensor* x = build::view_3d(g, a, K, 3, 2, a->nb[1], a->nb[2], 0);
    Tensor* gate = build::view_3d(g, a, K, 3, 2, a->nb[1], a->nb[2], K * sizeof(float));
    std::vector<Tensor*> outs;
    for (GluOp op : {GluOp::SWIGLU, GluOp::GEGLU, GluOp::SWIGLU_OAI}) {
        outs.push_back(build::glu(g, a, op));                     // f(first) * second
        outs.push_back(build::glu(g, a, op, /*swapped=*/true));   // f(second) * first
        outs.push_back(build::glu_split(g, x, gate, op));         // two strided sources
    }
    Tensor* oai = build::swiglu_oai(g, x, gate, 1.5f, 0.75f);
    outs.push_back(oai);
    for (Tensor* o : outs) g.expand(o);
    test::HostMemory mem(g);
    reftest::fill_random(*a, rng, -3.0f, 3.0f);
    run_1_and_3(g, outs);
    auto f = [](GluOp op, double v, double w, double alpha, double limit) -> double {
        switch (op) {
            case GluOp::SWIGLU: return v / (1.0 + std::exp(-v)) * w;
            case GluOp::GEGLU: return 0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))) * w;
            default: {
                const double xc = std::min(v, limit);
                const double gc = std::max(-limit, std::min(w, limit));
                return xc / (1.0 + std::exp(-alpha * xc)) * (gc + 1.0);
            }
        }
    };
    int idx = 0;
    for (GluOp op : {GluOp::SWIGLU, GluOp::GEGLU, GluOp::SWIGLU_OAI}) {
        SCOPED_TRACE(glu_op_name(op));
        Tensor* plain = outs[idx++];
        Tensor* swapped = outs[idx++];
        Tensor* split = outs[idx++];
        ASSERT_EQ(plain->ne, (std::array<int64_t, 4>{K, 3, 2, 1}));
        reftest::for_each(*plain, [&](int64_t i0, int64_t i1, int64_t i2, int64_t) {
            const double v = get(*a, i0, i1, i2), w = get(*a, i0 + K, i1, i2);
            ASSERT_EQ(get(*plain, i0, i1, i2), get(*split, i0, i1, i2));  // same math on the same values
            expect_close(get(*plain, i0, i1, i2), f(op, v, w, 1.702, 7.0), 1e-6, 1e-12);
            expect_close(get(*swapped, i0, i1, i2), f(op, w, v, 1.702, 7.0), 1e-6, 1e-12);
            if (op == GluOp::SWIGLU_OAI) expect_close(get(*oai, i0, i1, i2), f(op, v, w, 1.5, 0.75), 1e-6, 1e-12);
        });
    }
    EXPECT_THROW(build::glu(g, g.new_tensor(DType::F32, {5}, "odd"), GluOp::SWIGLU), Error);
    EXPECT_THROW(build::glu_split(g, x, g.new_tensor(DType::F32, {K, 3}, "other"), GluOp::GEGLU), Error);
    EXPECT_THROW(build::swiglu_oai(g, x, gate, 1.0f, -1.0f), Error);
}

TEST(RefGlu, SwigluKnownAnswer) {
    Graph g;
    Tensor* a = g.new_tensor(DType::F32, {4}, "a");
    Tensor* out = build::swiglu(g, a);
    g.expand(out);
    test::HostMemory mem(g);
    const float v[4] = {0.0f, 2.0f, 5.0f, -1.0f};
    std::memcpy(a->data, v, sizeof v);
    run_1_and_3(g, {out});
    EXPECT_EQ(get(*out, 0), 0.0f);                                                   // silu(0) * 5
    expect_close(get(*out, 1), 2.0 / (1.0 + std::exp(-2.0)) * -1.0);                 // silu(2) * -1
}

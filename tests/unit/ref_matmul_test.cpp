// Reference kernels MUL_MAT and MUL_MAT_ID (cpu/ref/matmul.cpp) and the mul_mat_id builder:
// hand-computed answers, every weight type against a plain triple loop over dequantized
// weights, batch broadcast, strided activations, bad expert ids, and bit-identical results
// for 1 and 3 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/fp16.hpp"
#include "cpu/ref/ref.hpp"
#include "graph/builder.hpp"
#include "graph/builder_attn.hpp"
#include "quant/quant.hpp"
#include "ref_test_util.hpp"
#include "support/host_graph.hpp"
#include "tessel/errors.hpp"

using namespace tessel;
using reftest::get_values;
using reftest::random_values;
using reftest::run_values_1_and_3;
using reftest::set_ints;
using reftest::set_values;

namespace {

// y[n, m, b2, b3] = Σ_k w[k, n, b2 / r2, b3 / r3] · x[k, m, b2, b3] over logical values.
std::vector<float> naive_mul_mat(const std::vector<float>& w, const std::array<int64_t, 4>& wn,
                                 const std::vector<float>& x, const std::array<int64_t, 4>& xn) {
    const int64_t K = wn[0], N = wn[1], M = xn[1];
    const int64_t r2 = xn[2] / wn[2], r3 = xn[3] / wn[3];
    std::vector<float> y(N * M * xn[2] * xn[3]);
    for (int64_t b3 = 0; b3 < xn[3]; ++b3)
        for (int64_t b2 = 0; b2 < xn[2]; ++b2)
            for (int64_t m = 0; m < M; ++m)
                for (int64_t n = 0; n < N; ++n) {
                    double s = 0.0;
                    for (int64_t k = 0; k < K; ++k)
                        s += static_cast<double>(w[((b3 / r3 * wn[2] + b2 / r2) * N + n) * K + k]) *
                             x[((b3 * xn[2] + b2) * M + m) * K + k];
                    y[((b3 * xn[2] + b2) * M + m) * N + n] = static_cast<float>(s);
                }
    return y;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double rel = 1e-6) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], rel * (1.0 + std::fabs(want[i]))) << "element " << i;
}

}  // namespace

TEST(RefMulMat, KnownAnswer) {
    Graph g;
    Tensor* w = g.new_tensor(DType::F32, {3, 2}, "w");
    Tensor* x = g.new_tensor(DType::F32, {3, 2}, "x");
    Tensor* y = build::mul_mat(g, w, x);
    g.expand(y);
    test::HostMemory mem(g);
    set_values(*w, {1, 2, 3, 0, -1, 0.5f});
    set_values(*x, {1, 1, 1, 2, 0, -2});
    // y[n, m] = w_n · x_m: (6, -0.5) for x_0, (-4, -1) for x_1
    EXPECT_EQ(run_values_1_and_3(g, y), (std::vector<float>{6.0f, -0.5f, -4.0f, -1.0f}));
}

TEST(RefMulMat, EveryWeightTypeMatchesDequantizedTripleLoop) {
    const DType types[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q4_0, DType::Q4_1,   DType::Q5_0,
                           DType::Q5_1, DType::Q8_0, DType::Q8_1, DType::Q2_K, DType::Q3_K,   DType::Q4_K,
                           DType::Q5_K, DType::Q6_K, DType::Q8_K, DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4};
    const int64_t K = 512, N = 37, M = 5;  // N not a multiple of the kernel's row block
    for (DType t : types) {
        SCOPED_TRACE(dtype_name(t));
        ASSERT_TRUE(quant::has_quantize(t));
        Graph g;
        Tensor* w = g.new_tensor(t, {K, N}, "w");
        Tensor* x = g.new_tensor(DType::F32, {K, M}, "x");
        Tensor* y = build::mul_mat(g, w, x);
        g.expand(y);
        test::HostMemory mem(g);
        set_values(*w, random_values(K * N, 1));
        set_values(*x, random_values(K * M, 2));
        ASSERT_TRUE(cpu::ref::supports(*y));
        expect_close(run_values_1_and_3(g, y), naive_mul_mat(get_values(*w), w->ne, get_values(*x), x->ne));
    }
}

TEST(RefMulMat, WeightBatchesBroadcastByDivision) {
    Graph g;
    Tensor* w = g.new_tensor(DType::Q8_0, {64, 3, 2, 1}, "w");
    Tensor* x = g.new_tensor(DType::F32, {64, 4, 6, 2}, "x");  // x batch i2 uses w batch i2 / 3
    Tensor* y = build::mul_mat(g, w, x);
    g.expand(y);
    test::HostMemory mem(g);
    set_values(*w, random_values(64 * 3 * 2, 3));
    set_values(*x, random_values(64 * 4 * 6 * 2, 4));
    const std::vector<float> got = run_values_1_and_3(g, y);
    expect_close(got, naive_mul_mat(get_values(*w), w->ne, get_values(*x), x->ne));
    // Spot check by hand: output (n=1, m=2, b2=4, b3=1) uses w batch 1.
    const std::vector<float> wv = get_values(*w), xv = get_values(*x);
    double s = 0.0;
    for (int k = 0; k < 64; ++k) s += static_cast<double>(wv[(1 * 3 + 1) * 64 + k]) * xv[((1 * 6 + 4) * 4 + 2) * 64 + k];
    EXPECT_FLOAT_EQ(got[((1 * 6 + 4) * 4 + 2) * 3 + 1], static_cast<float>(s));
}

TEST(RefMulMat, StridedActivationsAndWeights) {
    // x is a transposed view (element stride = a row), as a V cache is used in attention; w is a
    // transposed F16 view (element stride != 2 bytes).
    const int64_t K = 48, N = 9, M = 5;
    Graph g;
    Tensor* xs = g.new_tensor(DType::F32, {M, K}, "x_stored");  // x[k, m] at xs[m, k]
    Tensor* ws = g.new_tensor(DType::F16, {N, K}, "w_stored");
    Tensor* x = build::transpose(g, xs);
    Tensor* w = build::transpose(g, ws);
    Tensor* y = build::mul_mat(g, w, x);
    g.expand(y);
    test::HostMemory mem(g);
    const std::vector<float> xv = random_values(M * K, 5), wv = random_values(N * K, 6);
    set_values(*xs, xv);
    set_values(*ws, wv);
    // logical values in ne order of the views
    std::vector<float> xl(K * M), wl(K * N);
    for (int64_t k = 0; k < K; ++k) {
        for (int64_t m = 0; m < M; ++m) xl[m * K + k] = xv[k * M + m];
        for (int64_t n = 0; n < N; ++n) wl[n * K + k] = fp16_to_fp32(fp32_to_fp16(wv[k * N + n]));
    }
    ASSERT_TRUE(cpu::ref::supports(*y));
    expect_close(run_values_1_and_3(g, y), naive_mul_mat(wl, w->ne, xl, x->ne));
}

TEST(RefMulMat, PermutedActivationsAndF16Activations) {
    // q stored [K, H, T] used as [K, T, H] (permute), against w [K, N, H]; and the same with x F16.
    const int64_t K = 32, N = 6, H = 4, T = 3;
    for (DType xt : {DType::F32, DType::F16}) {
        SCOPED_TRACE(dtype_name(xt));
        Graph g;
        Tensor* w = g.new_tensor(DType::F32, {K, N, H}, "w");
        Tensor* qs = g.new_tensor(xt, {K, H, T}, "q_stored");
        Tensor* q = build::permute(g, qs, 0, 2, 1, 3);  // [K, T, H]
        Tensor* y = g.new_node(Op::MUL_MAT, DType::F32, {N, T, H, 1}, {w, q});  // builder takes F32 x only
        g.expand(y);
        test::HostMemory mem(g);
        const std::vector<float> qv = random_values(K * H * T, 7), wv = random_values(K * N * H, 8);
        set_values(*qs, qv);
        set_values(*w, wv);
        const std::vector<float> qr = get_values(*qs);  // rounded to F16 where applicable
        std::vector<float> ql(K * T * H);
        for (int64_t h = 0; h < H; ++h)
            for (int64_t t = 0; t < T; ++t)
                for (int64_t k = 0; k < K; ++k) ql[(h * T + t) * K + k] = qr[(t * H + h) * K + k];
        ASSERT_TRUE(cpu::ref::supports(*y));
        expect_close(run_values_1_and_3(g, y), naive_mul_mat(wv, w->ne, ql, q->ne));
    }
}

TEST(RefMulMat, SupportsRejectsWhatItCannotCompute) {
    Graph g;
    Tensor* x = g.new_tensor(DType::F32, {256, 2}, "x");
    Tensor* xi = g.new_tensor(DType::I32, {256, 2}, "x_i32");
    Tensor* w_iq2 = g.new_tensor(DType::IQ2_XXS, {256, 4}, "w_iq2");
    Tensor* w_q8 = g.new_tensor(DType::Q8_0, {256, 4}, "w_q8");
    Tensor* w_short = g.new_tensor(DType::F32, {128, 4}, "w_short");
    Tensor* w_batch = g.new_tensor(DType::F32, {256, 4, 3}, "w_batch");
    auto node = [&](Tensor* w, Tensor* a, std::array<int64_t, 4> ne) { return g.new_node(Op::MUL_MAT, DType::F32, ne, {w, a}); };
    EXPECT_TRUE(cpu::ref::supports(*node(w_q8, x, {4, 2, 1, 1})));
    EXPECT_FALSE(cpu::ref::supports(*node(w_iq2, x, {4, 2, 1, 1})));    // no dequantizer
    EXPECT_FALSE(cpu::ref::supports(*node(w_q8, xi, {4, 2, 1, 1})));    // integer activations
    EXPECT_FALSE(cpu::ref::supports(*node(w_short, x, {4, 2, 1, 1})));  // K differs
    EXPECT_FALSE(cpu::ref::supports(*node(w_batch, x, {4, 2, 1, 1})));  // 3 w batches over 1 x batch
    EXPECT_FALSE(cpu::ref::supports(*node(w_q8, x, {4, 3, 1, 1})));     // wrong dst shape
    Tensor* strided_q8 = g.new_view(Op::VIEW, w_q8, {256, 2, 1, 1}, {68, 34 * 8 * 2, 34 * 8 * 4, 34 * 8 * 4}, 0);
    EXPECT_FALSE(cpu::ref::supports(*node(strided_q8, x, {2, 2, 1, 1})));  // blocks not packed
    // compute() reports an unsupported node instead of crashing
    Tensor* bad = node(w_iq2, x, {4, 2, 1, 1});
    g.expand(bad);
    test::HostMemory mem(g);
    EXPECT_THROW(test::run_reference(g, 1), Error);
}

// ---- MUL_MAT_ID --------------------------------------------------------------------------------

namespace {

// y[n, e, t] = experts[ids[e, t]] row n · x[:, e % U, t]; zero for an out-of-range id.
std::vector<float> naive_mul_mat_id(const std::vector<float>& w, int64_t K, int64_t N, int64_t E,
                                    const std::vector<float>& x, int64_t U, const std::vector<int32_t>& ids,
                                    int64_t n_used, int64_t T) {
    std::vector<float> y(N * n_used * T, 0.0f);
    for (int64_t t = 0; t < T; ++t)
        for (int64_t e = 0; e < n_used; ++e) {
            const int32_t id = ids[t * n_used + e];
            if (id < 0 || id >= E) continue;
            for (int64_t n = 0; n < N; ++n) {
                double s = 0.0;
                for (int64_t k = 0; k < K; ++k)
                    s += static_cast<double>(w[(id * N + n) * K + k]) * x[(t * U + e % U) * K + k];
                y[(t * n_used + e) * N + n] = static_cast<float>(s);
            }
        }
    return y;
}

}  // namespace

TEST(RefMulMatId, MatchesPerExpertProductsForBroadcastAndPerSlotActivations) {
    const int64_t K = 64, N = 21, E = 4, n_used = 2, T = 3;
    const std::vector<int32_t> id_values = {3, 0, 1, 3, 2, 2};  // [n_used, T]; expert 2 twice for token 2
    for (DType wt : {DType::F32, DType::Q8_0, DType::Q4_K}) {
        for (int64_t U : {int64_t{1}, n_used}) {
            SCOPED_TRACE(std::string(dtype_name(wt)) + " U=" + std::to_string(U));
            const int64_t Kw = wt == DType::Q4_K ? 256 : K;
            Graph g;
            Tensor* w = g.new_tensor(wt, {Kw, N, E}, "experts");
            Tensor* x = g.new_tensor(DType::F32, {Kw, U, T}, "x");
            Tensor* ids = g.new_tensor(DType::I32, {n_used, T}, "ids");
            Tensor* y = build::mul_mat_id(g, w, x, ids);
            EXPECT_EQ(y->ne, (std::array<int64_t, 4>{N, n_used, T, 1}));
            g.expand(y);
            test::HostMemory mem(g);
            set_values(*w, random_values(Kw * N * E, 9));
            set_values(*x, random_values(Kw * U * T, 10));
            std::memcpy(ids->data, id_values.data(), id_values.size() * sizeof(int32_t));
            expect_close(run_values_1_and_3(g, y), naive_mul_mat_id(get_values(*w), Kw, N, E, get_values(*x), U, id_values, n_used, T));
        }
    }
}

TEST(RefMulMatId, OutOfRangeIdGivesZeroColumnAndLeavesOthersCorrect) {
    const int64_t K = 32, N = 5, E = 3, n_used = 2, T = 2;
    const std::vector<int32_t> id_values = {1, -1, 3, 0};  // -1 and 3 are out of range
    Graph g;
    Tensor* w = g.new_tensor(DType::F32, {K, N, E}, "experts");
    Tensor* x = g.new_tensor(DType::F32, {K, 1, T}, "x");
    Tensor* ids = g.new_tensor(DType::I32, {n_used, T}, "ids");
    Tensor* y = build::mul_mat_id(g, w, x, ids);
    g.expand(y);
    test::HostMemory mem(g);
    const std::vector<float> wv = random_values(K * N * E, 11), xv = random_values(K * T, 12);
    set_values(*w, wv);
    set_values(*x, xv);
    std::memcpy(ids->data, id_values.data(), id_values.size() * sizeof(int32_t));
    const std::vector<float> got = run_values_1_and_3(g, y);
    for (int64_t n = 0; n < N; ++n) {
        EXPECT_EQ(got[(0 * n_used + 1) * N + n], 0.0f);  // token 0 slot 1: id -1
        EXPECT_EQ(got[(1 * n_used + 0) * N + n], 0.0f);  // token 1 slot 0: id 3
    }
    expect_close(got, naive_mul_mat_id(wv, K, N, E, xv, 1, id_values, n_used, T));
    EXPECT_NE(got[0], 0.0f);
}

TEST(RefMulMatId, BuilderRejectsBadShapesAndTypes) {
    Graph g;
    Tensor* w = g.new_tensor(DType::Q8_0, {64, 8, 4}, "experts");
    Tensor* x = g.new_tensor(DType::F32, {64, 1, 3}, "x");
    Tensor* x3 = g.new_tensor(DType::F32, {64, 3, 3}, "x3");
    Tensor* x_short = g.new_tensor(DType::F32, {32, 1, 3}, "x_short");
    Tensor* ids = g.new_tensor(DType::I32, {2, 3}, "ids");
    Tensor* ids_f = g.new_tensor(DType::F32, {2, 3}, "ids_f32");
    Tensor* ids_t = g.new_tensor(DType::I32, {2, 4}, "ids_4_tokens");
    EXPECT_NO_THROW(build::mul_mat_id(g, w, x, ids));
    EXPECT_THROW(build::mul_mat_id(g, w, x, ids_f), Error);
    EXPECT_THROW(build::mul_mat_id(g, w, x3, ids), Error);      // 3 rows per token do not divide 2 slots
    EXPECT_THROW(build::mul_mat_id(g, w, x_short, ids), Error);  // K differs
    EXPECT_THROW(build::mul_mat_id(g, w, x, ids_t), Error);      // token counts differ
    try {
        build::mul_mat_id(g, w, x_short, ids);
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
        EXPECT_NE(std::string(e.what()).find("MUL_MAT_ID"), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("x_short"), std::string::npos);
    }
    Tensor* bad = g.new_node(Op::MUL_MAT_ID, DType::F32, {8, 2, 3, 1}, {w, x, ids_f});
    EXPECT_FALSE(cpu::ref::supports(*bad));
}

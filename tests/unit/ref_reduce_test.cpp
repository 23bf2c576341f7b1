// Reference kernels and builders for reductions and normalisation: SUM_ROWS, MEAN, ARGMAX,
// ARGSORT, CUMSUM, NORM, RMS_NORM, L2_NORM.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "cpu/ref/ref.hpp"
#include "graph/builder.hpp"
#include "ref_test_util.hpp"
#include "support/host_graph.hpp"
#include "tessel/errors.hpp"

using namespace tessel;
using reftest::get;
using reftest::get_i32;
using reftest::run_1_and_3;
using reftest::set;

namespace {

// Row (i1, i2, i3) of a float-type tensor as doubles.
std::vector<double> row_of(const Tensor& t, int64_t i1, int64_t i2 = 0, int64_t i3 = 0) {
    std::vector<double> r(static_cast<size_t>(t.ne[0]));
    for (int64_t i = 0; i < t.ne[0]; ++i) r[static_cast<size_t>(i)] = get(t, i, i1, i2, i3);
    return r;
}

template <class F>
void for_each_row(const Tensor& t, F f) {
    for (int64_t i3 = 0; i3 < t.ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < t.ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < t.ne[1]; ++i1) f(i1, i2, i3);
}

}  // namespace

// ---- SUM_ROWS / MEAN --------------------------------------------------------------------------

TEST(RefSumRows, KnownAnswerAndStridedRandom) {
    std::mt19937 rng(1);
    Graph g;
    Tensor* a = g.new_tensor(DType::F32, {4, 2}, "a");
    Tensor* s = g.new_tensor(DType::F16, {5, 300, 2}, "s");
    Tensor* p = build::transpose(g, s);  // [300, 5, 2] with strided rows
    Tensor* sum_a = build::sum_rows(g, a);
    Tensor* mean_a = build::mean(g, a);
    Tensor* sum_p = build::sum_rows(g, p);
    Tensor* mean_p = build::mean(g, p);
    for (Tensor* t : {sum_a, mean_a, sum_p, mean_p}) g.expand(t);
    test::HostMemory mem(g);
    test::HostMemory::fill(*a, [](int64_t i) { return static_cast<float>(i + 1); });  // {1,2,3,4} {5,6,7,8}
    reftest::fill_random(*p, rng);
    run_1_and_3(g, {sum_a, mean_a, sum_p, mean_p});
    ASSERT_EQ(sum_a->ne, (std::array<int64_t, 4>{1, 2, 1, 1}));
    EXPECT_EQ(get(*sum_a, 0, 0), 10.0f);
    EXPECT_EQ(get(*sum_a, 0, 1), 26.0f);
    EXPECT_EQ(get(*mean_a, 0, 0), 2.5f);
    EXPECT_EQ(get(*mean_a, 0, 1), 6.5f);
    for_each_row(*p, [&](int64_t i1, int64_t i2, int64_t) {
        const std::vector<double> r = row_of(*p, i1, i2);
        const double sum = std::accumulate(r.begin(), r.end(), 0.0);
        EXPECT_EQ(get(*sum_p, 0, i1, i2), static_cast<float>(sum));
        EXPECT_EQ(get(*mean_p, 0, i1, i2), static_cast<float>(sum / 300.0));
    });
    EXPECT_THROW(build::sum_rows(g, g.new_tensor(DType::I32, {3}, "i")), Error);
}

// ---- ARGMAX -----------------------------------------------------------------------------------

TEST(RefArgmax, FirstMaximumWinsAndBatchesWork) {
    Graph g;
    Tensor* a = g.new_tensor(DType::F32, {5, 3, 2}, "a");
    Tensor* out = build::argmax(g, a);
    g.expand(out);
    test::HostMemory mem(g);
    ASSERT_EQ(out->type, DType::I32);
    ASSERT_EQ(out->ne, (std::array<int64_t, 4>{3, 2, 1, 1}));
    const float rows[6][5] = {{1, 3, 3, 2, 0},  {-1, -5, -1, -2, -3}, {0, 0, 0, 0, 0},
                              {1, 2, 3, 4, 5}, {9, 1, 1, 1, 1},       {-INFINITY, -INFINITY, -1e30f, -INFINITY, 0}};
    std::memcpy(a->data, rows, sizeof rows);
    run_1_and_3(g, {out});
    const int32_t want[6] = {1, 0, 0, 4, 0, 4};
    for (int r = 0; r < 6; ++r) EXPECT_EQ(get_i32(*out, r % 3, r / 3), want[r]) << r;
}

// ---- ARGSORT ----------------------------------------------------------------------------------

TEST(RefArgsort, StableBothWaysKnownAnswer) {
    Graph g;
    Tensor* a = g.new_tensor(DType::F32, {6}, "a");
    Tensor* asc = build::argsort(g, a, build::SortOrder::Ascending);
    Tensor* desc = build::argsort(g, a, build::SortOrder::Descending);
    g.expand(asc);
    g.expand(desc);
    test::HostMemory mem(g);
    const float v[6] = {3, 1, 3, -2, 1, 5};
    std::memcpy(a->data, v, sizeof v);
    run_1_and_3(g, {asc, desc});
    const int32_t want_asc[6] = {3, 1, 4, 0, 2, 5};
    const int32_t want_desc[6] = {5, 0, 2, 1, 4, 3};
    for (int i = 0; i < 6; ++i) {
        EXPECT_EQ(get_i32(*asc, i), want_asc[i]);
        EXPECT_EQ(get_i32(*desc, i), want_desc[i]);
    }
}

TEST(RefArgsort, RandomRowsWithTiesMatchStableSortAndNaNDoesNotBreakIt) {
    std::mt19937 rng(3);
    Graph g;
    Tensor* s = g.new_tensor(DType::F32, {4, 97}, "s");
    Tensor* a = build::transpose(g, s);  // [97, 4], strided
    Tensor* asc = build::argsort(g, a);
    Tensor* desc = build::argsort(g, a, build::SortOrder::Descending);
    g.expand(asc);
    g.expand(desc);
    test::HostMemory mem(g);
    std::uniform_int_distribution<int> small(-5, 5);  // many ties
    reftest::for_each(*a, [&](int64_t i0, int64_t i1, int64_t, int64_t) {
        set(*a, static_cast<float>(small(rng)) * 0.5f, i0, i1);
    });
    set(*a, NAN, 10, 3);
    run_1_and_3(g, {asc, desc});
    for (int64_t r = 0; r < 3; ++r) {  // rows without NaN: compare to std::stable_sort
        const std::vector<double> row = row_of(*a, r);
        std::vector<int32_t> order(97);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int32_t x, int32_t y) { return row[x] < row[y]; });
        for (int64_t i = 0; i < 97; ++i) ASSERT_EQ(get_i32(*asc, i, r), order[i]);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int32_t x, int32_t y) { return row[x] > row[y]; });
        for (int64_t i = 0; i < 97; ++i) ASSERT_EQ(get_i32(*desc, i, r), order[i]);
    }
    // The row with a NaN is still a permutation, with the NaN last ascending and first descending.
    std::vector<int32_t> perm(97);
    for (int64_t i = 0; i < 97; ++i) perm[i] = get_i32(*asc, i, 3);
    std::sort(perm.begin(), perm.end());
    for (int32_t i = 0; i < 97; ++i) ASSERT_EQ(perm[i], i);
    EXPECT_EQ(get_i32(*asc, 96, 3), 10);
    EXPECT_EQ(get_i32(*desc, 0, 3), 10);
}

// ---- CUMSUM -----------------------------------------------------------------------------------

TEST(RefCumsum, KnownAnswerAndRandomAgainstRunningDoubleSum) {
    std::mt19937 rng(4);
    Graph g;
    Tensor* a = g.new_tensor(DType::F32, {4}, "a");
    Tensor* r = g.new_tensor(DType::F32, {513, 3}, "r");
    Tensor* ca = build::cumsum(g, a);
    Tensor* cr = build::cumsum(g, r);
    g.expand(ca);
    g.expand(cr);
    test::HostMemory mem(g);
    const float v[4] = {1, -2, 3.5f, 0.25f};
    std::memcpy(a->data, v, sizeof v);
    reftest::fill_random(*r, rng);
    run_1_and_3(g, {ca, cr});
    const float want[4] = {1, -1, 2.5f, 2.75f};
    for (int i = 0; i < 4; ++i) EXPECT_EQ(get(*ca, i), want[i]);
    for (int64_t row = 0; row < 3; ++row) {
        double sum = 0.0;
        for (int64_t i = 0; i < 513; ++i) {
            sum += get(*r, i, row);
            ASSERT_EQ(get(*cr, i, row), static_cast<float>(sum));
        }
    }
}

// ---- NORM / RMS_NORM / L2_NORM ----------------------------------------------------------------

TEST(RefNorms, KnownAnswers) {
    Graph g;
    Tensor* a = g.new_tensor(DType::F32, {4}, "a");
    Tensor* n = build::norm(g, a, 0.0f);
    Tensor* rms = build::rms_norm(g, a, 0.0f);
    Tensor* l2 = build::l2_norm(g, a, 0.0f);
    Tensor* l2_eps = build::l2_norm(g, a, 100.0f);  // eps larger than the norm: x / eps
    for (Tensor* t : {n, rms, l2, l2_eps}) g.expand(t);
    test::HostMemory mem(g);
    const float v[4] = {1, 2, 3, 4};
    std::memcpy(a->data, v, sizeof v);
    run_1_and_3(g, {n, rms, l2, l2_eps});
    const double sd = std::sqrt(1.25);  // mean 2.5, variance (2.25 + 0.25 + 0.25 + 2.25) / 4
    const double rms_v = std::sqrt(7.5);
    const double l2_v = std::sqrt(30.0);
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(get(*n, i), static_cast<float>((v[i] - 2.5) / sd));
        EXPECT_EQ(get(*rms, i), static_cast<float>(v[i] / rms_v));
        EXPECT_EQ(get(*l2, i), static_cast<float>(v[i] / l2_v));
        EXPECT_EQ(get(*l2_eps, i), static_cast<float>(v[i] / 100.0));
    }
    EXPECT_THROW(build::norm(g, a, -1.0f), Error);
    EXPECT_THROW(build::l2_norm(g, a, NAN), Error);
}

TEST(RefNorms, RandomStridedRowsSatisfyTheirIdentities) {
    std::mt19937 rng(5);
    Graph g;
    Tensor* s = g.new_tensor(DType::F32, {6, 1000}, "s");
    Tensor* a = build::transpose(g, s);  // [1000, 6], strided
    const float eps = 1e-5f;
    Tensor* n = build::norm(g, a, eps);
    Tensor* rms = build::rms_norm(g, a, eps);
    Tensor* l2 = build::l2_norm(g, a, eps);
    for (Tensor* t : {n, rms, l2}) g.expand(t);
    test::HostMemory mem(g);
    reftest::fill_random(*a, rng, -3.0f, 5.0f);
    run_1_and_3(g, {n, rms, l2});
    for (int64_t r = 0; r < 6; ++r) {
        const std::vector<double> x = row_of(*a, r);
        double mean = 0, sq = 0;
        for (double v : x) mean += v, sq += v * v;
        mean /= 1000.0;
        double var = 0;
        for (double v : x) var += (v - mean) * (v - mean);
        var /= 1000.0;
        double n_mean = 0, n_var = 0, rms_sq = 0, l2_sq = 0;
        for (int64_t i = 0; i < 1000; ++i) {
            const double want_n = (x[i] - mean) / std::sqrt(var + eps);
            const double want_rms = x[i] / std::sqrt(sq / 1000.0 + eps);
            const double want_l2 = x[i] / std::sqrt(sq);
            EXPECT_NEAR(get(*n, i, r), want_n, 1e-6 * std::fabs(want_n) + 1e-7);
            EXPECT_NEAR(get(*rms, i, r), want_rms, 1e-6 * std::fabs(want_rms) + 1e-7);
            EXPECT_NEAR(get(*l2, i, r), want_l2, 1e-6 * std::fabs(want_l2) + 1e-9);
            n_mean += get(*n, i, r);
            n_var += static_cast<double>(get(*n, i, r)) * get(*n, i, r);
            rms_sq += static_cast<double>(get(*rms, i, r)) * get(*rms, i, r);
            l2_sq += static_cast<double>(get(*l2, i, r)) * get(*l2, i, r);
        }
        EXPECT_NEAR(n_mean / 1000.0, 0.0, 1e-6);
        EXPECT_NEAR(n_var / 1000.0, var / (var + eps), 1e-5);
        EXPECT_NEAR(rms_sq / 1000.0, (sq / 1000.0) / (sq / 1000.0 + eps), 1e-5);
        EXPECT_NEAR(l2_sq, 1.0, 1e-5);
    }
}

TEST(RefReduce, SupportsRejectsWrongTypesAndShapes) {
    Graph g;
    Tensor* i = g.new_tensor(DType::I32, {8, 2}, "i");
    Tensor* f = g.new_tensor(DType::F32, {8, 2}, "f");
    EXPECT_FALSE(cpu::ref::supports(*g.new_node(Op::SUM_ROWS, DType::F32, {1, 2, 1, 1}, {i})));
    EXPECT_FALSE(cpu::ref::supports(*g.new_node(Op::SUM_ROWS, DType::F32, {2, 2, 1, 1}, {f})));
    EXPECT_FALSE(cpu::ref::supports(*g.new_node(Op::ARGMAX, DType::F32, {2, 1, 1, 1}, {f})));
    Tensor* bad_order = g.new_node(Op::ARGSORT, DType::I32, f->ne, {f});
    bad_order->op_params[0] = 2;
    EXPECT_FALSE(cpu::ref::supports(*bad_order));
    EXPECT_FALSE(cpu::ref::supports(*g.new_node(Op::RMS_NORM, DType::F32, {8, 1, 1, 1}, {f})));
    EXPECT_TRUE(cpu::ref::supports(*build::rms_norm(g, f, 1e-6f)));
}

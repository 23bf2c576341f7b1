// Reference kernels ROPE, SOFT_MAX and FLASH_ATTN_EXT (cpu/ref/rope.cpp, softmax.cpp,
// flash_attn.cpp) and their builders (graph/builder_attn.hpp): hand-computed answers,
// identities, and plain formulations written here for random inputs; every graph is run with
// 1 and 3 threads and must give identical bits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
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

constexpr float kInf = std::numeric_limits<float>::infinity();

void expect_close(const std::vector<float>& got, const std::vector<double>& want, double tol) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol * (1.0 + std::fabs(want[i]))) << "element " << i;
}

}  // namespace

// ---- ROPE ------------------------------------------------------------------------------------

namespace {

struct RopeRun {
    Graph g;
    Tensor *x, *pos, *ff = nullptr, *y;
    RopeRun(DType t, std::array<int64_t, 3> ne, const build::RopeParams& p, int64_t n_factors = 0) {
        x = g.new_tensor(t, {ne[0], ne[1], ne[2]}, "x");
        pos = g.new_tensor(DType::I32, {ne[2]}, "pos");
        if (n_factors) ff = g.new_tensor(DType::F32, {n_factors}, "freq_factors");
        y = build::rope(g, x, pos, p, ff);
        g.expand(y);
    }
};

// Unit vector (1, 0) in every pair (NORM layout) of a [D, H, T] input.
std::vector<float> unit_pairs(int64_t D, int64_t rows) {
    std::vector<float> v(D * rows, 0.0f);
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < D; i += 2) v[r * D + i] = 1.0f;
    return v;
}

}  // namespace

TEST(RefRope, NormModeRotatesEachPairByPositionTimesTheta) {
    // base 10000, n_dims 8: theta_j = 10000^(-2j/8) = 1, 0.1, 0.01, 0.001
    const double theta[4] = {1.0, 0.1, 0.01, 0.001};
    const int32_t positions[3] = {0, 1, 7};
    build::RopeParams p;
    p.n_dims = 8;
    RopeRun r(DType::F32, {8, 2, 3}, p);
    test::HostMemory mem(r.g);
    set_values(*r.x, unit_pairs(8, 6));
    set_ints(*r.pos, {positions[0], positions[1], positions[2]});
    const std::vector<float> y = run_values_1_and_3(r.g, r.y);
    for (int t = 0; t < 3; ++t)
        for (int h = 0; h < 2; ++h)
            for (int j = 0; j < 4; ++j) {
                const float* pair = &y[(t * 2 + h) * 8 + 2 * j];
                EXPECT_NEAR(pair[0], std::cos(positions[t] * theta[j]), 1e-6) << t << " " << j;
                EXPECT_NEAR(pair[1], std::sin(positions[t] * theta[j]), 1e-6) << t << " " << j;
            }
}

TEST(RefRope, NeoxModePairsTheHalvesAndEqualsNormOnInterleavedInput) {
    const int64_t D = 16, H = 3, T = 4;
    build::RopeParams p;
    p.n_dims = D;
    p.freq_base = 500.0f;
    RopeRun norm(DType::F32, {D, H, T}, p);
    p.mode = kRopeModeNeox;
    RopeRun neox(DType::F32, {D, H, T}, p);
    test::HostMemory m1(norm.g), m2(neox.g);
    // neox input x; norm input = x interleaved so that NEOX pair (j, j + D/2) is NORM pair (2j, 2j+1)
    const std::vector<float> x = random_values(D * H * T, 21);
    std::vector<float> xi(x.size());
    for (int64_t r = 0; r < H * T; ++r)
        for (int64_t j = 0; j < D / 2; ++j) {
            xi[r * D + 2 * j] = x[r * D + j];
            xi[r * D + 2 * j + 1] = x[r * D + j + D / 2];
        }
    set_values(*neox.x, x);
    set_values(*norm.x, xi);
    set_ints(*neox.pos, {3, 0, 11, 250});
    set_ints(*norm.pos, {3, 0, 11, 250});
    const std::vector<float> yn = run_values_1_and_3(neox.g, neox.y), yi = run_values_1_and_3(norm.g, norm.y);
    for (int64_t r = 0; r < H * T; ++r)
        for (int64_t j = 0; j < D / 2; ++j) {
            EXPECT_EQ(yn[r * D + j], yi[r * D + 2 * j]);
            EXPECT_EQ(yn[r * D + j + D / 2], yi[r * D + 2 * j + 1]);
        }
    // hand check: token 1 is at position 0, so it is unchanged
    for (int64_t i = 0; i < D * H; ++i) EXPECT_FLOAT_EQ(yn[D * H + i], x[D * H + i]);
}

TEST(RefRope, PartialRotationCopiesTheTailAndPreservesNorms) {
    const int64_t D = 10;
    build::RopeParams p;
    p.n_dims = 4;  // theta = 1, 0.01
    RopeRun r(DType::F32, {D, 2, 2}, p);
    test::HostMemory mem(r.g);
    const std::vector<float> x = random_values(D * 4, 22);
    set_values(*r.x, x);
    set_ints(*r.pos, {5, 42});
    const std::vector<float> y = run_values_1_and_3(r.g, r.y);
    const int pos_of_row[4] = {5, 5, 42, 42};
    for (int row = 0; row < 4; ++row) {
        for (int64_t i = 4; i < D; ++i) EXPECT_EQ(y[row * D + i], x[row * D + i]);
        const double theta[2] = {1.0, 0.01};
        for (int j = 0; j < 2; ++j) {
            const double a = pos_of_row[row] * theta[j], x0 = x[row * D + 2 * j], x1 = x[row * D + 2 * j + 1];
            EXPECT_NEAR(y[row * D + 2 * j], x0 * std::cos(a) - x1 * std::sin(a), 1e-6);
            EXPECT_NEAR(y[row * D + 2 * j + 1], x0 * std::sin(a) + x1 * std::cos(a), 1e-6);
            EXPECT_NEAR(std::hypot(y[row * D + 2 * j], y[row * D + 2 * j + 1]), std::hypot(x0, x1), 1e-6);
        }
    }
}

TEST(RefRope, FreqScaleAndFreqFactorsDivideTheAngle) {
    build::RopeParams p;
    p.n_dims = 4;
    p.freq_base = 100.0f;  // theta = 1, 0.1
    p.freq_scale = 0.5f;
    p.attn_factor = 2.0f;  // scales the rotated pairs (no YaRN correction without ext_factor)
    RopeRun r(DType::F32, {4, 1, 1}, p, /*n_factors=*/2);
    test::HostMemory mem(r.g);
    set_values(*r.x, unit_pairs(4, 1));
    set_ints(*r.pos, {6});
    set_values(*r.ff, {3.0f, 0.5f});
    const std::vector<float> y = run_values_1_and_3(r.g, r.y);
    // angle = pos · theta / factor · freq_scale: 6·1/3·0.5 = 1, 6·0.1/0.5·0.5 = 0.6
    EXPECT_NEAR(y[0], 2.0 * std::cos(1.0), 1e-6);
    EXPECT_NEAR(y[1], 2.0 * std::sin(1.0), 1e-6);
    EXPECT_NEAR(y[2], 2.0 * std::cos(0.6), 1e-6);
    EXPECT_NEAR(y[3], 2.0 * std::sin(0.6), 1e-6);
}

TEST(RefRope, YarnRampsFromExtrapolationToInterpolationWithMagnitudeCorrection) {
    // n_dims 64, base 10000, n_ctx_orig 4096, beta_fast 32, beta_slow 1: the correction dims are
    // c(b) = 64·ln(4096 / (2π·b)) / (2·ln 10000): c(32) = 10.47 -> lo = 10, c(1) = 22.51 -> hi = 23.
    const int64_t D = 64;
    build::RopeParams p;
    p.n_dims = D;
    p.n_ctx_orig = 4096;
    p.freq_scale = 0.25f;
    p.ext_factor = 1.0f;
    p.attn_factor = 1.0f;
    for (int32_t mode : {kRopeModeNorm, kRopeModeNeox}) {
        SCOPED_TRACE(mode);
        p.mode = mode;
        RopeRun r(DType::F32, {D, 1, 1}, p);
        test::HostMemory mem(r.g);
        std::vector<float> x(D, 0.0f);
        for (int64_t j = 0; j < D / 2; ++j) x[mode == kRopeModeNeox ? j : 2 * j] = 1.0f;
        set_values(*r.x, x);
        const int32_t pos = 5;
        set_ints(*r.pos, {pos});
        const std::vector<float> y = run_values_1_and_3(r.g, r.y);
        const double mscale = 1.0 + 0.1 * std::log(4.0);
        auto pair = [&](int64_t j) {
            const int64_t a = mode == kRopeModeNeox ? j : 2 * j, b = mode == kRopeModeNeox ? j + D / 2 : 2 * j + 1;
            return std::pair<double, double>(y[a], y[b]);
        };
        auto theta = [&](int64_t j) { return pos * std::pow(10000.0, -2.0 * j / D); };
        for (int64_t j = 0; j < D / 2; ++j) {
            double angle;
            if (j <= 10)
                angle = theta(j);  // extrapolated (unscaled) angle
            else if (j >= 23)
                angle = 0.25 * theta(j);  // interpolated angle
            else {
                const double ramp = 1.0 - (j - 10) / 13.0;  // mix of both
                angle = 0.25 * theta(j) * (1.0 - ramp) + theta(j) * ramp;
            }
            const auto [c, s] = pair(j);
            EXPECT_NEAR(c, mscale * std::cos(angle), 1e-6) << "pair " << j;
            EXPECT_NEAR(s, mscale * std::sin(angle), 1e-6) << "pair " << j;
        }
    }
}

TEST(RefRope, F16InAndOut) {
    const int64_t D = 8, H = 2, T = 3;
    build::RopeParams p;
    p.n_dims = 6;
    p.mode = kRopeModeNeox;
    RopeRun h(DType::F16, {D, H, T}, p);
    RopeRun f(DType::F32, {D, H, T}, p);
    EXPECT_EQ(h.y->type, DType::F16);
    test::HostMemory m1(h.g), m2(f.g);
    std::vector<float> x = random_values(D * H * T, 23);
    for (float& v : x) v = fp16_to_fp32(fp32_to_fp16(v));  // exactly representable in both
    set_values(*h.x, x);
    set_values(*f.x, x);
    set_ints(*h.pos, {1, 2, 300});
    set_ints(*f.pos, {1, 2, 300});
    const std::vector<float> yh = run_values_1_and_3(h.g, h.y), yf = run_values_1_and_3(f.g, f.y);
    for (size_t i = 0; i < yh.size(); ++i) EXPECT_EQ(yh[i], fp16_to_fp32(fp32_to_fp16(yf[i]))) << i;
}

TEST(RefRope, BuilderAndSupportsReject) {
    Graph g;
    Tensor* x = g.new_tensor(DType::F32, {8, 2, 3}, "x");
    Tensor* pos = g.new_tensor(DType::I32, {3}, "pos");
    Tensor* pos4 = g.new_tensor(DType::I32, {4}, "pos4");
    Tensor* posf = g.new_tensor(DType::F32, {3}, "posf");
    Tensor* ff = g.new_tensor(DType::F32, {2}, "ff");
    build::RopeParams p;
    p.n_dims = 8;
    EXPECT_NO_THROW(build::rope(g, x, pos, p));
    EXPECT_THROW(build::rope(g, x, pos4, p), Error);
    EXPECT_THROW(build::rope(g, x, posf, p), Error);
    EXPECT_THROW(build::rope(g, x, pos, p, ff), Error);  // 2 factors for 4 pairs
    auto with = [&](auto change) {
        build::RopeParams q = p;
        change(q);
        return q;
    };
    EXPECT_THROW(build::rope(g, x, pos, with([](auto& q) { q.n_dims = 7; })), Error);
    EXPECT_THROW(build::rope(g, x, pos, with([](auto& q) { q.n_dims = 10; })), Error);
    EXPECT_THROW(build::rope(g, x, pos, with([](auto& q) { q.mode = 1; })), Error);
    EXPECT_THROW(build::rope(g, x, pos, with([](auto& q) { q.ext_factor = 1.0f; })), Error);  // no n_ctx_orig
    EXPECT_THROW(build::rope(g, x, pos, with([](auto& q) { q.freq_base = 0.0f; })), Error);
    try {
        build::rope(g, x, pos4, p);
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
        EXPECT_NE(std::string(e.what()).find("ROPE"), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("pos4"), std::string::npos);
    }
    Tensor* y = build::rope(g, x, pos, p);
    y->op_params[2] = 8;  // a mode the reference does not implement (M-RoPE)
    EXPECT_FALSE(cpu::ref::supports(*y));
}

// ---- SOFT_MAX --------------------------------------------------------------------------------

TEST(RefSoftMax, KnownAnswers) {
    Graph g;
    Tensor* x = g.new_tensor(DType::F32, {2, 2}, "x");
    Tensor* y = build::soft_max(g, x);
    Tensor* x2 = g.new_tensor(DType::F32, {2}, "x2");
    Tensor* y2 = build::soft_max(g, x2, std::log(2.0f));
    g.expand(y);
    g.expand(y2);
    test::HostMemory mem(g);
    set_values(*x, {0.0f, std::log(2.0f), 5.0f, 5.0f});
    set_values(*x2, {0.0f, 1.0f});  // scaled by ln 2 -> [0, ln 2]
    const std::vector<float> out = run_values_1_and_3(g, y);
    EXPECT_NEAR(out[0], 1.0 / 3.0, 1e-7);
    EXPECT_NEAR(out[1], 2.0 / 3.0, 1e-7);
    EXPECT_EQ(out[2], 0.5f);
    EXPECT_EQ(out[3], 0.5f);
    const std::vector<float> out2 = get_values(*y2);
    EXPECT_NEAR(out2[0], 1.0 / 3.0, 1e-7);
    EXPECT_NEAR(out2[1], 2.0 / 3.0, 1e-7);
}

TEST(RefSoftMax, PaddedF16MaskBroadcastOverHeadsAndFullyMaskedRowsAreZero) {
    Graph g;
    Tensor* x = g.new_tensor(DType::F32, {3, 2, 2}, "x");     // 2 rows, 2 heads
    Tensor* mask = g.new_tensor(DType::F16, {3, 4}, "mask");  // 4 rows (padded), one for all heads
    Tensor* y = build::soft_max(g, x, 1.0f, mask);
    g.expand(y);
    test::HostMemory mem(g);
    const float l2 = std::log(2.0f);
    set_values(*x, {0, l2, 7, /**/ 1, 2, 3, /**/ l2, 0, 0, /**/ 4, 4, 4});
    set_values(*mask, {0, 0, -kInf, /**/ -kInf, -kInf, -kInf, /**/ 9, 9, 9, /**/ 9, 9, 9});
    const std::vector<float> out = run_values_1_and_3(g, y);
    const std::vector<double> want = {1 / 3.0, 2 / 3.0, 0, /**/ 0, 0, 0, /**/ 2 / 3.0, 1 / 3.0, 0, /**/ 0, 0, 0};
    expect_close(out, want, 1e-7);
}

TEST(RefSoftMax, AlibiSlopesFollowTheHeadCount) {
    // 6 heads, max_bias 8: p = 4 heads get 2^(-2(h+1)) = 1/4, 1/16, 1/64, 1/256; the other two
    // get 2^(-8(2(h-4)+1)/8) = 1/2, 1/8. Row [0, 0] with mask [0, 1] -> second = σ(slope).
    const double slope[6] = {1 / 4.0, 1 / 16.0, 1 / 64.0, 1 / 256.0, 1 / 2.0, 1 / 8.0};
    Graph g;
    Tensor* x = g.new_tensor(DType::F32, {2, 1, 6}, "x");
    Tensor* mask = g.new_tensor(DType::F32, {2, 1}, "mask");
    Tensor* y = build::soft_max(g, x, 1.0f, mask, 8.0f);
    g.expand(y);
    test::HostMemory mem(g);
    set_values(*mask, {0.0f, 1.0f});
    const std::vector<float> out = run_values_1_and_3(g, y);
    for (int h = 0; h < 6; ++h) EXPECT_NEAR(out[2 * h + 1], 1.0 / (1.0 + std::exp(-slope[h])), 1e-7) << "head " << h;
}

TEST(RefSoftMax, SinksTakePartInTheNormaliserOnly) {
    Graph g;
    Tensor* x = g.new_tensor(DType::F32, {2, 2, 2}, "x");
    Tensor* mask = g.new_tensor(DType::F32, {2, 2}, "mask");
    Tensor* sinks = g.new_tensor(DType::F32, {2}, "sinks");
    Tensor* y = build::soft_max(g, x, 1.0f, mask, 0.0f, sinks);
    g.expand(y);
    test::HostMemory mem(g);
    set_values(*x, {0, 0, 0, 0, 0, 0, 0, 0});
    set_values(*mask, {0, 0, -kInf, -kInf});
    set_values(*sinks, {std::log(2.0f), 0.0f});
    const std::vector<float> out = run_values_1_and_3(g, y);
    // head 0: e^0, e^0 and the sink e^ln2 = 2 -> 1/4 each; head 1: 1/3 each; masked rows -> 0
    expect_close(out, {0.25, 0.25, 0, 0, 1 / 3.0, 1 / 3.0, 0, 0}, 1e-7);
}

TEST(RefSoftMax, RandomInputsMatchAPlainFormulation) {
    const int64_t K = 37, M = 5, H = 4, B = 2, Mp = 8;
    const float scale = 0.3f, max_bias = 4.0f;
    Graph g;
    Tensor* x = g.new_tensor(DType::F32, {K, M, H, B}, "x");
    Tensor* mask = g.new_tensor(DType::F16, {K, Mp, 2, 1}, "mask");  // per head pair h % 2
    Tensor* sinks = g.new_tensor(DType::F32, {H}, "sinks");
    Tensor* y = build::soft_max(g, x, scale, mask, max_bias, sinks);
    g.expand(y);
    test::HostMemory mem(g);
    const std::vector<float> xv = random_values(K * M * H * B, 31, -4.0f, 4.0f), sv = random_values(H, 32);
    std::vector<float> mv = random_values(K * Mp * 2, 33, -2.0f, 2.0f);
    for (size_t i = 0; i < mv.size(); i += 5) mv[i] = -kInf;
    for (float& v : mv) v = fp16_to_fp32(fp32_to_fp16(v));
    set_values(*x, xv);
    set_values(*mask, mv);
    set_values(*sinks, sv);
    const std::vector<float> out = run_values_1_and_3(g, y);

    std::vector<double> want(xv.size());
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h) {
            const double m0 = std::pow(2.0, -max_bias / 4.0);  // 4 heads: a power of two
            const double slope = std::pow(m0, h + 1);
            for (int64_t m = 0; m < M; ++m) {
                std::vector<double> z(K);
                double total = std::exp(static_cast<double>(sv[h]));
                for (int64_t k = 0; k < K; ++k) {
                    const float mk = mv[((h % 2) * Mp + m) * K + k];
                    z[k] = mk == -kInf ? 0.0 : std::exp(xv[((b * H + h) * M + m) * K + k] * static_cast<double>(scale) + slope * mk);
                    total += z[k];
                }
                for (int64_t k = 0; k < K; ++k) want[((b * H + h) * M + m) * K + k] = z[k] / total;
            }
        }
    expect_close(out, want, 1e-6);
}

TEST(RefSoftMax, BuilderRejectsBadMasksAndSinks) {
    Graph g;
    Tensor* x = g.new_tensor(DType::F32, {8, 4, 6}, "x");
    Tensor* ok = g.new_tensor(DType::F16, {8, 4, 3}, "mask_ok");
    Tensor* wide = g.new_tensor(DType::F16, {9, 4}, "mask_wide");
    Tensor* short_rows = g.new_tensor(DType::F16, {8, 3}, "mask_short");
    Tensor* heads4 = g.new_tensor(DType::F16, {8, 4, 4}, "mask_heads4");
    Tensor* sinks5 = g.new_tensor(DType::F32, {5}, "sinks5");
    Tensor* xh = g.new_tensor(DType::F16, {8, 4}, "x_f16");
    EXPECT_NO_THROW(build::soft_max(g, x, 1.0f, ok));
    EXPECT_THROW(build::soft_max(g, x, 1.0f, wide), Error);
    EXPECT_THROW(build::soft_max(g, x, 1.0f, short_rows), Error);
    EXPECT_THROW(build::soft_max(g, x, 1.0f, heads4), Error);
    EXPECT_THROW(build::soft_max(g, x, 1.0f, nullptr, 0.0f, sinks5), Error);
    EXPECT_THROW(build::soft_max(g, x, 1.0f, ok, -1.0f), Error);
    EXPECT_THROW(build::soft_max(g, xh), Error);
    Tensor* bad = g.new_node(Op::SOFT_MAX, DType::F32, x->ne, {x, wide});
    EXPECT_FALSE(cpu::ref::supports(*bad));
}

// ---- FLASH_ATTN_EXT --------------------------------------------------------------------------

namespace {

struct AttnCase {
    int64_t D = 64, Dv = 48, T = 5, H = 4, Hkv = 2, B = 2, KV = 19, Tpad = 8;
    DType kv_type = DType::F32;
    float scale = 0.125f, max_bias = 0.0f, softcap = 0.0f;
    bool mask = true, sinks = false, mask_all_of_query0 = false;
};

// Explicit QKᵀ, scale, softcap, mask·slope, softmax (with sink), times V; output [Dv, H, T, B].
std::vector<double> explicit_attention(const AttnCase& c, const std::vector<float>& q, const std::vector<float>& k,
                                       const std::vector<float>& v, const std::vector<float>& mask,
                                       const std::vector<float>& sinks) {
    std::vector<double> out(c.Dv * c.H * c.T * c.B, 0.0);
    int64_t n_head_log2 = 1;
    while (n_head_log2 * 2 <= c.H) n_head_log2 *= 2;
    for (int64_t b = 0; b < c.B; ++b)
        for (int64_t h = 0; h < c.H; ++h) {
            const int64_t hk = h / (c.H / c.Hkv);
            double slope = 1.0;
            if (c.max_bias > 0)
                slope = h < n_head_log2 ? std::pow(2.0, -c.max_bias * (h + 1.0) / n_head_log2)
                                        : std::pow(2.0, -c.max_bias * (2.0 * (h - n_head_log2) + 1) / (2.0 * n_head_log2));
            for (int64_t t = 0; t < c.T; ++t) {
                std::vector<double> p(c.KV, 0.0);
                double total = c.sinks ? std::exp(static_cast<double>(sinks[h])) : 0.0;
                double mx = c.sinks ? sinks[h] : -INFINITY;
                std::vector<double> s(c.KV, -INFINITY);
                for (int64_t j = 0; j < c.KV; ++j) {
                    const float mj = c.mask ? mask[t * c.KV + j] : 0.0f;
                    if (mj == -kInf) continue;
                    double dot = 0.0;
                    for (int64_t i = 0; i < c.D; ++i)
                        dot += static_cast<double>(q[((b * c.H + h) * c.T + t) * c.D + i]) * k[((b * c.Hkv + hk) * c.KV + j) * c.D + i];
                    s[j] = dot * c.scale;
                    if (c.softcap != 0) s[j] = c.softcap * std::tanh(s[j] / c.softcap);
                    s[j] += slope * mj;
                    mx = std::max(mx, s[j]);
                }
                if (mx == -INFINITY) continue;
                total = c.sinks ? std::exp(sinks[h] - mx) : 0.0;
                for (int64_t j = 0; j < c.KV; ++j) {
                    p[j] = s[j] == -INFINITY ? 0.0 : std::exp(s[j] - mx);
                    total += p[j];
                }
                for (int64_t i = 0; i < c.Dv; ++i) {
                    double acc = 0.0;
                    for (int64_t j = 0; j < c.KV; ++j) acc += p[j] * v[((b * c.Hkv + hk) * c.KV + j) * c.Dv + i];
                    out[((b * c.T + t) * c.H + h) * c.Dv + i] = acc / total;
                }
            }
        }
    return out;
}

// Builds and runs one FLASH_ATTN_EXT case on random data; compares with explicit_attention.
std::vector<float> check_flash_attn(const AttnCase& c, double tol) {
    Graph g;
    Tensor* q = g.new_tensor(DType::F32, {c.D, c.T, c.H, c.B}, "q");
    Tensor* k = g.new_tensor(c.kv_type, {c.D, c.KV, c.Hkv, c.B}, "k");
    Tensor* v = g.new_tensor(c.kv_type, {c.Dv, c.KV, c.Hkv, c.B}, "v");
    Tensor* mask = c.mask ? g.new_tensor(DType::F16, {c.KV, c.Tpad}, "mask") : nullptr;
    Tensor* sinks = c.sinks ? g.new_tensor(DType::F32, {c.H}, "sinks") : nullptr;
    Tensor* y = build::flash_attn_ext(g, q, k, v, mask, c.scale, c.max_bias, c.softcap, sinks);
    EXPECT_EQ(y->ne, (std::array<int64_t, 4>{c.Dv, c.H, c.T, c.B}));
    g.expand(y);
    test::HostMemory mem(g);
    set_values(*q, random_values(q->n_elements(), 41, -2.0f, 2.0f));
    set_values(*k, random_values(k->n_elements(), 42, -2.0f, 2.0f));
    set_values(*v, random_values(v->n_elements(), 43));
    std::vector<float> mv;
    if (mask) {
        // causal over the last T positions, plus a few ALiBi-like finite offsets
        for (int64_t t = 0; t < c.Tpad; ++t)
            for (int64_t j = 0; j < c.KV; ++j)
                mv.push_back(j > c.KV - c.T + t || (c.mask_all_of_query0 && t == 0) ? -kInf : -0.25f * static_cast<float>(j % 3));
        set_values(*mask, mv);
    }
    std::vector<float> sv;
    if (sinks) {
        sv = random_values(c.H, 44);
        set_values(*sinks, sv);
    }
    const std::vector<float> got = run_values_1_and_3(g, y);
    // the explicit version sees exactly the stored (rounded/quantized) values
    expect_close(got, explicit_attention(c, get_values(*q), get_values(*k), get_values(*v), mv, sv), tol);
    return got;
}

}  // namespace

TEST(RefFlashAttn, SingleKeyReturnsItsValueRow) {
    Graph g;
    Tensor* q = g.new_tensor(DType::F32, {4, 2, 2}, "q");
    Tensor* k = g.new_tensor(DType::F32, {4, 1, 1}, "k");
    Tensor* v = g.new_tensor(DType::F32, {3, 1, 1}, "v");
    Tensor* y = build::flash_attn_ext(g, q, k, v, nullptr, 0.5f);
    g.expand(y);
    test::HostMemory mem(g);
    set_values(*q, random_values(16, 51));
    set_values(*k, random_values(4, 52));
    set_values(*v, {1.5f, -2.0f, 0.25f});
    const std::vector<float> out = run_values_1_and_3(g, y);
    for (int r = 0; r < 4; ++r) {
        EXPECT_EQ(out[3 * r + 0], 1.5f);
        EXPECT_EQ(out[3 * r + 1], -2.0f);
        EXPECT_EQ(out[3 * r + 2], 0.25f);
    }
}

TEST(RefFlashAttn, GqaWithPaddedMaskMatchesExplicitAttentionForEachKvType) {
    for (DType t : {DType::F32, DType::F16, DType::Q8_0}) {
        SCOPED_TRACE(dtype_name(t));
        AttnCase c;
        c.kv_type = t;
        if (t == DType::Q8_0) c.Dv = 32;  // whole blocks
        check_flash_attn(c, 1e-6);
    }
}

TEST(RefFlashAttn, SoftcapAlibiAndSinks) {
    AttnCase c;
    c.H = 6;
    c.Hkv = 3;
    c.softcap = 2.0f;
    c.max_bias = 8.0f;
    c.sinks = true;
    c.scale = 0.5f;
    check_flash_attn(c, 1e-6);
    c.kv_type = DType::F16;
    c.mask = false;
    c.max_bias = 0.0f;
    check_flash_attn(c, 1e-6);
}

TEST(RefFlashAttn, FullyMaskedQueryGivesZeros) {
    AttnCase c;
    c.mask_all_of_query0 = true;
    const std::vector<float> out = check_flash_attn(c, 1e-6);
    for (int64_t b = 0; b < c.B; ++b)
        for (int64_t i = 0; i < c.Dv * c.H; ++i) EXPECT_EQ(out[b * c.T * c.H * c.Dv + i], 0.0f);  // t = 0
}

TEST(RefFlashAttn, EqualsMulMatSoftMaxMulMatGraph) {
    // kq = k·q per head (GQA by weight-batch division), softmax with the mask, kqv = vᵀ·kq with
    // vᵀ a transposed view; FLASH_ATTN_EXT gives the same values in [Dv, H, T] order.
    const int64_t D = 32, Dv = 24, T = 4, H = 4, Hkv = 2, KV = 11;
    const float scale = 0.2f;
    Graph g;
    Tensor* q = g.new_tensor(DType::F32, {D, T, H}, "q");
    Tensor* k = g.new_tensor(DType::F16, {D, KV, Hkv}, "k");
    Tensor* v = g.new_tensor(DType::F32, {Dv, KV, Hkv}, "v");
    Tensor* mask = g.new_tensor(DType::F16, {KV, T}, "mask");
    Tensor* fa = build::flash_attn_ext(g, q, k, v, mask, scale);
    Tensor* kq = build::mul_mat(g, k, q);  // [KV, T, H]
    Tensor* p = build::soft_max(g, kq, scale, mask);
    Tensor* kqv = build::mul_mat(g, build::transpose(g, v), p);  // [Dv, T, H]
    g.expand(fa);
    g.expand(kqv);
    test::HostMemory mem(g);
    set_values(*q, random_values(D * T * H, 61));
    set_values(*k, random_values(D * KV * Hkv, 62));
    set_values(*v, random_values(Dv * KV * Hkv, 63));
    std::vector<float> mv;
    for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < KV; ++j) mv.push_back(j > KV - T + t ? -kInf : 0.0f);
    set_values(*mask, mv);
    const std::vector<float> a = run_values_1_and_3(g, fa);
    const std::vector<float> b = get_values(*kqv);
    for (int64_t h = 0; h < H; ++h)
        for (int64_t t = 0; t < T; ++t)
            for (int64_t i = 0; i < Dv; ++i)
                EXPECT_NEAR(a[(t * H + h) * Dv + i], b[(h * T + t) * Dv + i], 1e-6) << h << " " << t << " " << i;
}

TEST(RefFlashAttn, BuilderAndSupportsReject) {
    Graph g;
    Tensor* q = g.new_tensor(DType::F32, {64, 5, 6}, "q");
    Tensor* qh = g.new_tensor(DType::F16, {64, 5, 6}, "q_f16");
    Tensor* k = g.new_tensor(DType::F16, {64, 16, 3}, "k");
    Tensor* k4 = g.new_tensor(DType::F16, {64, 16, 4}, "k_4heads");
    Tensor* k32 = g.new_tensor(DType::F16, {32, 16, 3}, "k_d32");
    Tensor* v = g.new_tensor(DType::F16, {48, 16, 3}, "v");
    Tensor* v15 = g.new_tensor(DType::F16, {48, 15, 3}, "v_15");
    Tensor* mask = g.new_tensor(DType::F16, {16, 8}, "mask");
    Tensor* mask_short = g.new_tensor(DType::F16, {16, 4}, "mask_short");
    Tensor* sinks = g.new_tensor(DType::F32, {6}, "sinks");
    Tensor* sinks3 = g.new_tensor(DType::F32, {3}, "sinks3");
    EXPECT_NO_THROW(build::flash_attn_ext(g, q, k, v, mask, 0.125f, 0.0f, 0.0f, sinks));
    EXPECT_THROW(build::flash_attn_ext(g, qh, k, v, mask, 0.125f), Error);
    EXPECT_THROW(build::flash_attn_ext(g, q, k4, v, mask, 0.125f), Error);  // 6 heads over 4
    EXPECT_THROW(build::flash_attn_ext(g, q, k32, v, mask, 0.125f), Error);
    EXPECT_THROW(build::flash_attn_ext(g, q, k, v15, mask, 0.125f), Error);
    EXPECT_THROW(build::flash_attn_ext(g, q, k, v, mask_short, 0.125f), Error);
    EXPECT_THROW(build::flash_attn_ext(g, q, k, v, mask, 0.125f, 0.0f, 0.0f, sinks3), Error);
    EXPECT_THROW(build::flash_attn_ext(g, q, k, v, mask, 0.125f, -1.0f), Error);
    try {
        build::flash_attn_ext(g, q, k4, v, mask, 0.125f);
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
        EXPECT_NE(std::string(e.what()).find("FLASH_ATTN_EXT"), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("k_4heads"), std::string::npos);
    }
    Tensor* bad = g.new_node(Op::FLASH_ATTN_EXT, DType::F32, {48, 6, 5, 1}, {q, k4, v, mask});
    EXPECT_FALSE(cpu::ref::supports(*bad));
}

// The device's own math (src/npu/device/vec.h, dmath.h) against the C++ standard library over
// dense grids: the accuracy their headers document, and the special values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

extern "C" {
#include "npu/device/dmath.h"
#include "npu/device/vec.h"
}

namespace tessel::test {
namespace {

double rel_err(double got, double want) { return std::fabs(got - want) / std::fabs(want); }

TEST(NpuDeviceVec, ExpWithin1e6RelativeOverTheNormalRange) {
    double worst = 0.0;
    for (double x = -87.0; x <= 88.7; x += 0.00123) {
        const float xf = static_cast<float>(x);
        worst = std::max(worst, rel_err(tsl_npu_expf(xf), std::exp(static_cast<double>(xf))));
    }
    EXPECT_LE(worst, 1e-6);
    EXPECT_EQ(tsl_npu_expf(0.0f), 1.0f);
    EXPECT_EQ(tsl_npu_expf(89.0f), std::numeric_limits<float>::infinity());
    EXPECT_EQ(tsl_npu_expf(-std::numeric_limits<float>::infinity()), 0.0f);
    EXPECT_TRUE(std::isnan(tsl_npu_expf(std::numeric_limits<float>::quiet_NaN())));
    // subnormal results keep their magnitude (absolute error below the smallest normal's ulp)
    for (float x : {-88.0f, -95.0f, -100.0f, -103.0f})
        EXPECT_NEAR(tsl_npu_expf(x), std::exp(static_cast<double>(x)), 1.5e-45) << x;
}

TEST(NpuDeviceVec, TanhAndSigmoidWithin1e6Relative) {
    double worst_tanh = 0.0, worst_sig = 0.0;
    for (double x = -12.0; x <= 12.0; x += 0.000731) {
        const float xf = static_cast<float>(x);
        const double xd = xf;
        if (xd != 0.0) worst_tanh = std::max(worst_tanh, rel_err(tsl_npu_tanhf(xf), std::tanh(xd)));
        worst_sig = std::max(worst_sig, rel_err(tsl_npu_sigmoidf(xf), 1.0 / (1.0 + std::exp(-xd))));
    }
    EXPECT_LE(worst_tanh, 1e-6);
    EXPECT_LE(worst_sig, 1e-6);
    EXPECT_EQ(tsl_npu_tanhf(0.0f), 0.0f);
    EXPECT_EQ(tsl_npu_tanhf(30.0f), 1.0f);
    EXPECT_EQ(tsl_npu_tanhf(-30.0f), -1.0f);
    EXPECT_EQ(tsl_npu_tanhf(1e-30f), 1e-30f);
    const float inf = std::numeric_limits<float>::infinity();
    EXPECT_EQ(tsl_npu_tanhf(inf), 1.0f);
    EXPECT_EQ(tsl_npu_tanhf(-inf), -1.0f);
    EXPECT_TRUE(std::isnan(tsl_npu_tanhf(std::numeric_limits<float>::quiet_NaN())));
    EXPECT_EQ(tsl_npu_sigmoidf(inf), 1.0f);
    EXPECT_EQ(tsl_npu_sigmoidf(-inf), 0.0f);
    EXPECT_EQ(tsl_npu_sigmoidf(-200.0f), 0.0f);
    EXPECT_TRUE(std::isnan(tsl_npu_sigmoidf(std::numeric_limits<float>::quiet_NaN())));
}

// Every lane of the vector forms takes its own path: special values mixed with ordinary ones in
// one vector give each lane the scalar function's result.
TEST(NpuDeviceVec, MixedLanesTakeTheirOwnPaths) {
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    const float in[TSL_VF_LANES] = {0.0f, -0.0f, 1e-30f, 0.2f, -0.3f, 1.0f, -5.0f, 9.5f,
                                    -20.0f, 88.0f, 89.0f, -100.0f, -104.0f, inf, -inf, nan};
    const tsl_vf v = tsl_vf_loadu(in);
    const tsl_vf e = tsl_vf_exp(v), t = tsl_vf_tanh(v), s = tsl_vf_sigmoid(v);
    for (int i = 0; i < TSL_VF_LANES; ++i) {
        const double x = in[i];
        if (std::isnan(x)) {
            EXPECT_TRUE(std::isnan(e.v[i]) && std::isnan(t.v[i]) && std::isnan(s.v[i]));
            continue;
        }
        const float want_e = static_cast<float>(std::exp(x));  // inf past float's range
        if (std::isinf(want_e))
            EXPECT_EQ(e.v[i], want_e) << x;
        else
            EXPECT_NEAR(e.v[i], want_e, 1e-6 * want_e + 1.5e-45) << x;
        EXPECT_NEAR(t.v[i], std::tanh(x), 1e-6 * std::fabs(std::tanh(x))) << x;
        // e^-x overflows from x < -88.7: the sigmoid is then 0, below float's normal range anyway
        const double want_s = 1.0 / (1.0 + std::exp(-x));
        EXPECT_NEAR(s.v[i], want_s, 1e-6 * want_s + 1e-37) << x;
    }
}

TEST(NpuDeviceVec, LanesMatchTheScalarFunctionsAndReductions) {
    float in[TSL_VF_LANES], out[TSL_VF_LANES];
    for (int i = 0; i < TSL_VF_LANES; ++i) in[i] = 0.37f * static_cast<float>(i) - 2.9f;
    const tsl_vf v = tsl_vf_loadu(in);
    tsl_vf_storeu(out, tsl_vf_exp(v));
    double sum = 0.0;
    for (int i = 0; i < TSL_VF_LANES; ++i) {
        EXPECT_EQ(out[i], tsl_npu_expf(in[i]));
        sum += in[i];
    }
    EXPECT_NEAR(tsl_vf_hsum(v), sum, 1e-5);
    EXPECT_EQ(tsl_vf_hmax(v), in[TSL_VF_LANES - 1]);
    const tsl_vf part = tsl_vf_load_n(in, 5, -1.0f);
    EXPECT_EQ(part.v[4], in[4]);
    EXPECT_EQ(part.v[5], -1.0f);
    EXPECT_EQ(tsl_vf_keep_n(v, 3, 7.0f).v[3], 7.0f);
    const tsl_vf m = tsl_vf_madd(v, v, tsl_vf_splat(1.0f));
    EXPECT_EQ(m.v[2], in[2] * in[2] + 1.0f);
}

TEST(NpuDeviceDmath, RsqrtAndSincosToDoublePrecision) {
    double worst = 0.0;
    for (double v = 1e-300; v < 1e300; v *= 1.37) worst = std::max(worst, rel_err(tsl_npu_rsqrt(v), 1.0 / std::sqrt(v)));
    EXPECT_LE(worst, 1e-15);
    EXPECT_TRUE(std::isinf(tsl_npu_rsqrt(0.0)));
    EXPECT_TRUE(std::isnan(tsl_npu_rsqrt(-1.0)));
    EXPECT_NEAR(tsl_npu_rsqrt(4.9e-324), 1.0 / std::sqrt(4.9e-324), 1e-15 / std::sqrt(4.9e-324));
    double worst_abs = 0.0;
    for (double x = -1e5; x <= 1e5; x += 0.731) {
        double s, c;
        tsl_npu_sincos(x, &s, &c);
        worst_abs = std::max({worst_abs, std::fabs(s - std::sin(x)), std::fabs(c - std::cos(x))});
    }
    EXPECT_LE(worst_abs, 1e-12);  // angles up to 1e5 rad: a few ulp of the angle itself
}

}  // namespace
}  // namespace tessel::test

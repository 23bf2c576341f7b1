// Known-answer and round-trip tests of the reference Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1
// quantizers and dequantizers (src/quant/quant_legacy.cpp).
//
// Expected bytes and values are worked out by hand from the format definitions (ggml-common.h)
// and the reference quantizers' arithmetic (ggml-quants.c quantize_row_*_ref); fp16 bit
// patterns were checked with numpy.float16.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/dtype.hpp"
#include "core/fp16.hpp"
#include "quant/blocks.hpp"
#include "quant/quant.hpp"
#include "tessel/errors.hpp"

using namespace tessel;
using namespace tessel::quant;

namespace {

template <typename B>
B quantize_one(DType t, const std::vector<float>& x) {
    B b;
    EXPECT_EQ(quantize_row(t, x.data(), &b, 32), sizeof(B));
    return b;
}

std::vector<float> dequantize_one(DType t, const void* block) {
    std::vector<float> y(32);
    dequantize_row(t, block, y.data(), 32);
    return y;
}

std::vector<float> dequantize(DType t, const std::vector<uint8_t>& q, int64_t n) {
    std::vector<float> y(n);
    dequantize_row(t, q.data(), y.data(), n);
    return y;
}

std::vector<uint8_t> quantize(DType t, const std::vector<float>& x) {
    std::vector<uint8_t> q(dtype_row_bytes(t, static_cast<int64_t>(x.size())));
    EXPECT_EQ(quantize_row(t, x.data(), q.data(), static_cast<int64_t>(x.size())), q.size());
    return q;
}

/// Rows of N(0, sigma) values with a per-block magnitude spread over 1e-3..1e3.
std::vector<float> random_row(std::mt19937& rng, int n) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> exponent(-3.0f, 3.0f);
    std::vector<float> x(n);
    for (int b = 0; b < n / 32; ++b) {
        const float scale = std::pow(10.0f, exponent(rng));
        for (int j = 0; j < 32; ++j) x[b * 32 + j] = normal(rng) * scale;
    }
    return x;
}

constexpr float kHalfUlp = 1.0f / 2048.0f;  // relative rounding bound of fp16 (2^-11)

/// Largest error of rounding v to fp16: relative 2^-11 for normal halves, absolute 2^-25 (half
/// the subnormal spacing) below 2^-14.
float fp16_rounding_bound(float v) { return std::max(std::fabs(v) * kHalfUlp, 2.9802322e-08f); }

}  // namespace

// ------------------------------------------------------------------------- dequantization

TEST(QuantLegacy, DequantQ4_0HandBuiltBlock) {
    // d = 0.5; low nibbles (elements 0..15) count up 0..15, high nibbles (16..31) count down.
    block_q4_0 b;
    b.d = 0x3800;
    for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    const auto y = dequantize_one(DType::Q4_0, &b);
    const float expect_lo[16] = {-4, -3.5, -3, -2.5, -2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5};
    for (int j = 0; j < 16; ++j) {
        EXPECT_EQ(y[j], expect_lo[j]) << j;
        EXPECT_EQ(y[16 + j], expect_lo[15 - j]) << j;
    }
}

TEST(QuantLegacy, DequantQ4_1HandBuiltBlock) {
    // d = 0.25, m = -3: x = 0.25*q - 3.
    block_q4_1 b;
    b.d = 0x3400;
    b.m = 0xc200;
    for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | (15 << 4));
    const auto y = dequantize_one(DType::Q4_1, &b);
    EXPECT_EQ(y[0], -3.0f);
    EXPECT_EQ(y[1], -2.75f);
    EXPECT_EQ(y[8], -1.0f);
    EXPECT_EQ(y[15], 0.75f);
    for (int j = 16; j < 32; ++j) EXPECT_EQ(y[j], 0.75f) << j;
}

TEST(QuantLegacy, DequantQ5_0UsesHighBitPlane) {
    // d = 0.25. Low nibbles 0, high nibbles 15; 5th bits set for elements 0, 16 and 31 only.
    block_q5_0 b;
    b.d = 0x3400;
    std::memset(b.qs, 0xf0, sizeof b.qs);
    const uint8_t qh[4] = {0x01, 0x00, 0x01, 0x80};
    std::memcpy(b.qh, qh, 4);
    const auto y = dequantize_one(DType::Q5_0, &b);
    EXPECT_EQ(y[0], 0.0f);     // q = 16 -> (16-16)*0.25
    for (int j = 1; j < 16; ++j) EXPECT_EQ(y[j], -4.0f) << j;     // q = 0
    EXPECT_EQ(y[16], 3.75f);   // q = 31
    for (int j = 17; j < 31; ++j) EXPECT_EQ(y[j], -0.25f) << j;   // q = 15
    EXPECT_EQ(y[31], 3.75f);
}

TEST(QuantLegacy, DequantQ5_1HandBuiltBlock) {
    // d = 1, m = -10: x = q - 10 with q = nibble | bit<<4.
    block_q5_1 b;
    b.d = 0x3c00;
    b.m = fp32_to_fp16(-10.0f);
    for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | (j << 4));
    const uint8_t qh[4] = {0x00, 0x00, 0xff, 0xff};  // elements 16..31 get bit 4
    std::memcpy(b.qh, qh, 4);
    const auto y = dequantize_one(DType::Q5_1, &b);
    for (int j = 0; j < 16; ++j) {
        EXPECT_EQ(y[j], static_cast<float>(j - 10)) << j;
        EXPECT_EQ(y[16 + j], static_cast<float>(j + 16 - 10)) << j;
    }
}

TEST(QuantLegacy, DequantQ8_0AndQ8_1) {
    block_q8_0 a;
    a.d = 0x3800;  // 0.5
    for (int j = 0; j < 32; ++j) a.qs[j] = static_cast<int8_t>(j * 8 - 128);
    const auto ya = dequantize_one(DType::Q8_0, &a);
    EXPECT_EQ(ya[0], -64.0f);
    EXPECT_EQ(ya[1], -60.0f);
    EXPECT_EQ(ya[31], 60.0f);

    block_q8_1 b;
    b.d = 0xbc00;  // -1
    b.s = 0;       // s is not used by dequantization
    for (int j = 0; j < 32; ++j) b.qs[j] = static_cast<int8_t>(j - 16);
    const auto yb = dequantize_one(DType::Q8_1, &b);
    for (int j = 0; j < 32; ++j) EXPECT_EQ(yb[j], static_cast<float>(16 - j)) << j;
}

// ------------------------------------------------------------------------- quantization

TEST(QuantLegacy, QuantQ4_0NegativeExtreme) {
    // x = -16..15: max = -16 -> d = -16/-8 = 2, q = trunc(x/2 + 8.5) clamped to 15.
    std::vector<float> x(32);
    for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j - 16);
    const auto b = quantize_one<block_q4_0>(DType::Q4_0, x);
    EXPECT_EQ(b.d, 0x4000);
    // q(j) = floor((j+1)/2), element 31 clamps 16 -> 15.
    EXPECT_EQ(b.qs[0], 0x80);   // q0 = 0, q16 = 8
    EXPECT_EQ(b.qs[1], 0x91);   // q1 = 1, q17 = 9
    EXPECT_EQ(b.qs[15], 0xf8);  // q15 = 8, q31 = 15
    const auto y = dequantize_one(DType::Q4_0, &b);
    EXPECT_EQ(y[0], -16.0f);
    EXPECT_EQ(y[1], -14.0f);  // -15 rounds half up to -14
    EXPECT_EQ(y[31], 14.0f);  // 15 clamped at q = 15
}

TEST(QuantLegacy, QuantQ4_0PositiveExtremeGivesNegativeScale) {
    // x = -7.5..8 step 0.5: the largest magnitude is +8, so d = 8/-8 = -1 and q = trunc(8.5 - x).
    std::vector<float> x(32);
    for (int j = 0; j < 32; ++j) x[j] = 0.5f * static_cast<float>(j) - 7.5f;
    const auto b = quantize_one<block_q4_0>(DType::Q4_0, x);
    EXPECT_EQ(b.d, 0xbc00);
    EXPECT_EQ(b.qs[0] & 0x0f, 15);  // x = -7.5: trunc(16) = 16 -> 15
    EXPECT_EQ(b.qs[15] >> 4, 0);    // x = 8: trunc(0.5) = 0
    const auto y = dequantize_one(DType::Q4_0, &b);
    EXPECT_EQ(y[31], 8.0f);
    EXPECT_EQ(y[0], -7.0f);
}

TEST(QuantLegacy, QuantQ4_1ExactGrid) {
    // x = -3 + 0.5*(j%16): min -3, max 4.5 -> d = 7.5/15 = 0.5, q = j%16 exactly.
    std::vector<float> x(32);
    for (int j = 0; j < 32; ++j) x[j] = -3.0f + 0.5f * static_cast<float>(j % 16);
    const auto b = quantize_one<block_q4_1>(DType::Q4_1, x);
    EXPECT_EQ(b.d, 0x3800);
    EXPECT_EQ(b.m, 0xc200);
    for (int j = 0; j < 16; ++j) EXPECT_EQ(b.qs[j], 0x11 * j) << j;
    EXPECT_EQ(dequantize_one(DType::Q4_1, &b), x);
}

TEST(QuantLegacy, QuantQ5_0AndQ5_1Bytes) {
    // Q5_0: x = j - 16 gives max = -16 -> d = 1 and q = trunc(x + 16.5) = j exactly.
    std::vector<float> x(32);
    for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j - 16);
    const auto a = quantize_one<block_q5_0>(DType::Q5_0, x);
    EXPECT_EQ(a.d, 0x3c00);
    for (int j = 0; j < 16; ++j) EXPECT_EQ(a.qs[j], static_cast<uint8_t>(j | (j << 4))) << j;
    const uint8_t qh_a[4] = {0x00, 0x00, 0xff, 0xff};  // elements 16..31 have q >= 16
    EXPECT_EQ(std::memcmp(a.qh, qh_a, 4), 0);
    EXPECT_EQ(dequantize_one(DType::Q5_0, &a), x);

    // Q5_1: min -16, max 15 -> d = 31/31 = 1, m = -16, q = j.
    const auto b = quantize_one<block_q5_1>(DType::Q5_1, x);
    EXPECT_EQ(b.d, 0x3c00);
    EXPECT_EQ(b.m, fp32_to_fp16(-16.0f));
    EXPECT_EQ(std::memcmp(b.qh, qh_a, 4), 0);
    EXPECT_EQ(dequantize_one(DType::Q5_1, &b), x);
}

TEST(QuantLegacy, QuantQ8_0RoundsHalfAwayFromZero) {
    // x = j - 16: d = 16/127 (fp16 0x3008 = 0.1259765625), 1/d = 7.9375 exactly in float, so
    // x = +-8 lands on +-63.5 and rounds away from zero to +-64.
    std::vector<float> x(32);
    for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j - 16);
    const auto b = quantize_one<block_q8_0>(DType::Q8_0, x);
    EXPECT_EQ(b.d, 0x3008);
    EXPECT_EQ(b.qs[0], -127);
    EXPECT_EQ(b.qs[17], 8);    // 7.9375 -> 8
    EXPECT_EQ(b.qs[24], 64);   // 63.5 -> 64
    EXPECT_EQ(b.qs[8], -64);   // -63.5 -> -64
    EXPECT_EQ(b.qs[31], 119);  // 119.0625 -> 119
    const auto y = dequantize_one(DType::Q8_0, &b);
    EXPECT_EQ(y[0], -127.0f * 0.1259765625f);
}

TEST(QuantLegacy, QuantQ8_1SumField) {
    // x[0] = 127, others 1: d = 1, q = x, s = fp16(158 * 1) = 0x58f0.
    std::vector<float> x(32, 1.0f);
    x[0] = 127.0f;
    const auto b = quantize_one<block_q8_1>(DType::Q8_1, x);
    EXPECT_EQ(b.d, 0x3c00);
    EXPECT_EQ(b.s, 0x58f0);
    EXPECT_EQ(b.qs[0], 127);
    for (int j = 1; j < 32; ++j) EXPECT_EQ(b.qs[j], 1) << j;
}

// ------------------------------------------------------------------------- round trips

// Error bounds per element, from the formats: rounding to the nearest level gives d/2; the fp16
// rounding of d adds |q| times its rounding error (fp16_rounding_bound), and of m its own.
// Q4_0/Q5_0 clamp the top code, so elements of the opposite sign to the extreme may be off by a
// full step d.
TEST(QuantLegacy, RoundTripErrorBounds) {
    std::mt19937 rng(1234);
    const int n = 32 * 64;
    for (int rep = 0; rep < 20; ++rep) {
        const auto x = random_row(rng, n);
        const auto y4_0 = dequantize(DType::Q4_0, quantize(DType::Q4_0, x), n);
        const auto y4_1 = dequantize(DType::Q4_1, quantize(DType::Q4_1, x), n);
        const auto y5_0 = dequantize(DType::Q5_0, quantize(DType::Q5_0, x), n);
        const auto y5_1 = dequantize(DType::Q5_1, quantize(DType::Q5_1, x), n);
        const auto y8_0 = dequantize(DType::Q8_0, quantize(DType::Q8_0, x), n);
        const auto y8_1 = dequantize(DType::Q8_1, quantize(DType::Q8_1, x), n);
        for (int b = 0; b < n / 32; ++b) {
            float amax = 0, lo = x[b * 32], hi = x[b * 32];
            for (int j = 0; j < 32; ++j) {
                amax = std::max(amax, std::fabs(x[b * 32 + j]));
                lo = std::min(lo, x[b * 32 + j]);
                hi = std::max(hi, x[b * 32 + j]);
            }
            const float d4 = amax / 8, d5 = amax / 16, d8 = amax / 127;
            const float r4 = (hi - lo) / 15, r5 = (hi - lo) / 31;
            const float m_err = fp16_rounding_bound(lo) * 1.01f;
            const float slack = 1.0001f;
            for (int j = 0; j < 32; ++j) {
                const int i = b * 32 + j;
                EXPECT_LE(std::fabs(y4_0[i] - x[i]), (d4 + 8 * fp16_rounding_bound(d4)) * slack) << i;
                EXPECT_LE(std::fabs(y5_0[i] - x[i]), (d5 + 16 * fp16_rounding_bound(d5)) * slack) << i;
                EXPECT_LE(std::fabs(y4_1[i] - x[i]), (r4 / 2 + 15 * fp16_rounding_bound(r4)) * slack + m_err) << i;
                EXPECT_LE(std::fabs(y5_1[i] - x[i]), (r5 / 2 + 31 * fp16_rounding_bound(r5)) * slack + m_err) << i;
                EXPECT_LE(std::fabs(y8_0[i] - x[i]), (d8 / 2 + 127 * fp16_rounding_bound(d8)) * slack) << i;
                EXPECT_EQ(y8_1[i], y8_0[i]) << i;  // same d and quants
            }
        }
    }
}

TEST(QuantLegacy, RoundTripHalfStepAwayFromClamp) {
    // Away from the clamped top code, Q4_0 is within half a step (plus the fp16 term).
    std::mt19937 rng(99);
    const int n = 32 * 32;
    const auto x = random_row(rng, n);
    const auto y = dequantize(DType::Q4_0, quantize(DType::Q4_0, x), n);
    for (int b = 0; b < n / 32; ++b) {
        float amax = 0, max = 0;
        for (int j = 0; j < 32; ++j) {
            if (amax < std::fabs(x[b * 32 + j])) { amax = std::fabs(x[b * 32 + j]); max = x[b * 32 + j]; }
        }
        const float d = max / -8;
        for (int j = 0; j < 32; ++j) {
            const int i = b * 32 + j;
            if (x[i] / d > 7.4f) continue;  // clamped region
            EXPECT_LE(std::fabs(y[i] - x[i]), (std::fabs(d) * 0.5f + 8 * fp16_rounding_bound(d)) * 1.0001f) << i;
        }
    }
}

// ------------------------------------------------------------------------- edge cases

TEST(QuantLegacy, AllZeroRow) {
    const std::vector<float> x(64, 0.0f);
    const auto q4 = quantize(DType::Q4_0, x);
    ASSERT_EQ(q4.size(), 36u);
    EXPECT_EQ(q4[0], 0x00);  // d = 0 / -8 = -0.0: fp16 0x8000, as ggml writes it
    EXPECT_EQ(q4[1], 0x80);
    EXPECT_EQ(q4[2], 0x88);  // trunc(0 + 8.5) = 8 in both nibbles
    for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q8_1}) {
        const auto y = dequantize(t, quantize(t, x), 64);
        for (float v : y) EXPECT_EQ(v, 0.0f) << dtype_name(t);
    }
}

/// True when the bytes of block `b` of the quantized row equal those of quantizing that block
/// alone (blocks are independent).
bool block_matches_alone(DType t, const std::vector<float>& x, const std::vector<uint8_t>& q, int b) {
    const std::vector<float> part(x.begin() + b * 32, x.begin() + (b + 1) * 32);
    const auto alone = quantize(t, part);
    return std::memcmp(q.data() + b * alone.size(), alone.data(), alone.size()) == 0;
}

TEST(QuantLegacy, OneHugeValueStaysInItsBlock) {
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(96);
    for (auto& v : x) v = normal(rng);
    x[40] = 30000.0f;  // block 1
    for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q8_1}) {
        const auto q = quantize(t, x);
        const auto y = dequantize(t, q, 96);
        // The extreme maps to an end code: only the fp16 rounding of d (and m) remains.
        EXPECT_NEAR(y[40], 30000.0f, 30000.0f * 2 * kHalfUlp) << dtype_name(t);
        EXPECT_TRUE(block_matches_alone(t, x, q, 0)) << dtype_name(t);
        EXPECT_TRUE(block_matches_alone(t, x, q, 2)) << dtype_name(t);
        for (float v : y) EXPECT_TRUE(std::isfinite(v)) << dtype_name(t);
    }
}

TEST(QuantLegacy, NegativeDominantRowKeepsExtreme) {
    std::vector<float> x(32);
    for (int j = 0; j < 32; ++j) x[j] = -std::fabs(std::sin(0.7f * static_cast<float>(j))) - 0.01f;
    x[9] = -3.3f;
    for (DType t : {DType::Q4_0, DType::Q5_0, DType::Q8_0}) {
        const auto y = dequantize(t, quantize(t, x), 32);
        EXPECT_NEAR(y[9], -3.3f, 3.3f * kHalfUlp) << dtype_name(t);  // extreme maps to the end code
        for (int j = 0; j < 32; ++j) EXPECT_LE(y[j], 0.0f) << dtype_name(t) << " " << j;
    }
    for (DType t : {DType::Q4_1, DType::Q5_1}) {  // min is stored: extreme exact up to fp16(m)
        const auto y = dequantize(t, quantize(t, x), 32);
        EXPECT_NEAR(y[9], -3.3f, 3.3f * kHalfUlp) << dtype_name(t);
    }
}

TEST(QuantLegacy, FiniteInputsGiveFiniteOutputs) {
    std::mt19937 rng(77);
    std::uniform_real_distribution<float> exponent(-20.0f, 3.5f);
    std::uniform_int_distribution<int> sign(0, 1);
    std::vector<float> x(32 * 50);
    for (auto& v : x) v = std::pow(10.0f, exponent(rng)) * (sign(rng) ? 1.0f : -1.0f);
    for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q8_1}) {
        const auto y = dequantize(t, quantize(t, x), static_cast<int64_t>(x.size()));
        for (float v : y) ASSERT_TRUE(std::isfinite(v)) << dtype_name(t);
    }
}

TEST(QuantLegacy, NonFiniteInputDoesNotLeakIntoOtherBlocks) {
    std::vector<float> x(64);
    for (int j = 0; j < 64; ++j) x[j] = static_cast<float>(j % 7) - 3.0f;
    x[3] = std::nanf("");
    x[4] = INFINITY;
    for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q8_1}) {
        const auto q = quantize(t, x);
        EXPECT_TRUE(block_matches_alone(t, x, q, 1)) << dtype_name(t);
        const auto y = dequantize(t, q, 64);
        for (int j = 32; j < 64; ++j) EXPECT_TRUE(std::isfinite(y[j])) << dtype_name(t) << " " << j;
    }
}

TEST(QuantLegacy, RowBytesAndBadLength) {
    const std::vector<float> x(96, 1.0f);
    std::vector<uint8_t> buf(4096);
    EXPECT_EQ(quantize_row(DType::Q4_0, x.data(), buf.data(), 96), 3u * 18);
    EXPECT_EQ(quantize_row(DType::Q4_1, x.data(), buf.data(), 96), 3u * 20);
    EXPECT_EQ(quantize_row(DType::Q5_0, x.data(), buf.data(), 96), 3u * 22);
    EXPECT_EQ(quantize_row(DType::Q5_1, x.data(), buf.data(), 96), 3u * 24);
    EXPECT_EQ(quantize_row(DType::Q8_0, x.data(), buf.data(), 96), 3u * 34);
    EXPECT_EQ(quantize_row(DType::Q8_1, x.data(), buf.data(), 96), 3u * 36);
    try {
        quantize_row(DType::Q4_0, x.data(), buf.data(), 33);
        FAIL() << "n = 33 accepted for Q4_0";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    }
    std::vector<float> y(64);
    EXPECT_THROW(dequantize_row(DType::Q8_0, buf.data(), y.data(), 40), Error);
}

TEST(QuantLegacy, UnalignedBuffers) {
    // Blocks are copied through memcpy: an odd address works and gives the same values.
    std::vector<float> x(64);
    for (int j = 0; j < 64; ++j) x[j] = std::cos(0.3f * static_cast<float>(j));
    std::vector<uint8_t> aligned = quantize(DType::Q5_1, x);
    std::vector<uint8_t> raw(aligned.size() + 1);
    EXPECT_EQ(quantize_row(DType::Q5_1, x.data(), raw.data() + 1, 64), aligned.size());
    EXPECT_EQ(std::memcmp(raw.data() + 1, aligned.data(), aligned.size()), 0);
    std::vector<float> y(64);
    dequantize_row(DType::Q5_1, raw.data() + 1, y.data(), 64);
    EXPECT_EQ(y, dequantize(DType::Q5_1, aligned, 64));
}

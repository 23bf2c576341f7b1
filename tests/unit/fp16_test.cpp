#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/fp16.hpp"
#include "quant/quant.hpp"

using namespace tessel;

namespace {

// Reference: round an fp32 value to the nearest half by exhaustive neighbourhood search over
// exactly representable halves (slow but obviously correct).
uint16_t reference_fp16(float f) {
    if (std::isnan(f)) return 0;  // not used for NaN
    const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
    const double a = std::fabs(static_cast<double>(f));
    if (a >= 65520.0) return sign | 0x7c00;
    uint16_t best = 0;
    double best_err = std::numeric_limits<double>::infinity();
    // halves are monotonic in their bit pattern: binary search the bracket
    uint16_t lo = 0, hi = 0x7bff;
    while (hi - lo > 1) {
        uint16_t mid = static_cast<uint16_t>((lo + hi) / 2);
        if (fp16_to_fp32(mid) <= a) lo = mid; else hi = mid;
    }
    for (uint16_t c : {lo, hi}) {
        const double err = std::fabs(static_cast<double>(fp16_to_fp32(c)) - a);
        if (err < best_err || (err == best_err && (c & 1) == 0)) { best = c; best_err = err; }
    }
    return sign | best;
}

}  // namespace

TEST(Fp16, AllHalvesRoundTrip) {
    for (uint32_t h = 0; h < 0x10000; ++h) {
        const float f = fp16_to_fp32(static_cast<uint16_t>(h));
        if (std::isnan(f)) {
            EXPECT_TRUE(std::isnan(fp16_to_fp32(fp32_to_fp16(f))));
            continue;
        }
        ASSERT_EQ(fp32_to_fp16(f), h) << std::hex << h;
    }
}

TEST(Fp16, KnownValues) {
    EXPECT_EQ(fp16_to_fp32(0x3c00), 1.0f);
    EXPECT_EQ(fp16_to_fp32(0xc000), -2.0f);
    EXPECT_EQ(fp16_to_fp32(0x7bff), 65504.0f);
    EXPECT_EQ(fp16_to_fp32(0x0001), std::ldexp(1.0f, -24));
    EXPECT_EQ(fp32_to_fp16(65519.0f), 0x7bff);   // below the rounding point
    EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7c00);   // ties away to Inf
    EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -25)), 0x0000);  // tie to even (zero)
    EXPECT_EQ(fp32_to_fp16(std::ldexp(1.5f, -25)), 0x0001);
    EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie to even
    EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(3.0f, -11)), 0x3c02);  // tie to even (up)
    EXPECT_EQ(fp32_to_fp16(std::numeric_limits<float>::infinity()), 0x7c00);
    EXPECT_EQ(fp32_to_fp16(-std::numeric_limits<float>::infinity()), 0xfc00);
    const uint16_t nan = fp32_to_fp16(-std::numeric_limits<float>::quiet_NaN());
    EXPECT_EQ(nan & 0x7c00, 0x7c00);
    EXPECT_NE(nan & 0x03ff, 0);
    EXPECT_EQ(nan & 0x8000, 0x8000);
}

TEST(Fp16, MatchesReferenceRoundingOnFloatSweep) {
    // Every 97th float bit pattern below the Inf range, both signs.
    for (uint64_t u = 0; u < 0x7f800000ull; u += 97 * 4099) {
        for (uint32_t s : {0u, 0x80000000u}) {
            const float f = f32_from_bits(static_cast<uint32_t>(u) | s);
            ASSERT_EQ(fp32_to_fp16(f), reference_fp16(f)) << std::hex << (u | s);
        }
    }
}

TEST(Fp16, RowConversionMatchesScalar) {
    // The row functions may use F16C; they must agree with the scalar code bit for bit.
    std::vector<float> src;
    for (uint64_t u = 0; u < 0x100000000ull; u += 65537) src.push_back(f32_from_bits(static_cast<uint32_t>(u)));
    std::vector<uint16_t> h(src.size());
    fp32_to_fp16_row(src.data(), h.data(), static_cast<int64_t>(src.size()));
    for (size_t i = 0; i < src.size(); ++i) {
        if (std::isnan(src[i])) {
            ASSERT_EQ(h[i] & 0x7c00, 0x7c00);
            ASSERT_NE(h[i] & 0x03ff, 0);
            continue;
        }
        ASSERT_EQ(h[i], fp32_to_fp16(src[i])) << std::hex << f32_bits(src[i]);
    }
    std::vector<uint16_t> all(0x10000);
    for (uint32_t i = 0; i < 0x10000; ++i) all[i] = static_cast<uint16_t>(i);
    std::vector<float> back(all.size());
    fp16_to_fp32_row(all.data(), back.data(), static_cast<int64_t>(all.size()));
    for (uint32_t i = 0; i < 0x10000; ++i) {
        const float ref = fp16_to_fp32(static_cast<uint16_t>(i));
        if (std::isnan(ref)) ASSERT_TRUE(std::isnan(back[i]));
        else ASSERT_EQ(f32_bits(back[i]), f32_bits(ref)) << std::hex << i;
    }
}

TEST(Bf16, RoundToNearestEvenAndSpecials) {
    EXPECT_EQ(fp32_to_bf16(1.0f), 0x3f80);
    EXPECT_EQ(fp32_to_bf16(f32_from_bits(0x3f808000u)), 0x3f80);  // tie -> even
    EXPECT_EQ(fp32_to_bf16(f32_from_bits(0x3f818000u)), 0x3f82);  // tie -> even (up)
    EXPECT_EQ(fp32_to_bf16(f32_from_bits(0x3f808001u)), 0x3f81);
    EXPECT_EQ(fp32_to_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
    EXPECT_EQ(fp32_to_bf16(f32_from_bits(0x7f7fffffu)), 0x7f80);  // max float rounds to Inf
    const uint16_t nan = fp32_to_bf16(f32_from_bits(0x7f800001u));  // NaN with low payload only
    EXPECT_TRUE(std::isnan(bf16_to_fp32(nan)));
    for (uint32_t h = 0; h < 0x10000; ++h) {
        const float f = bf16_to_fp32(static_cast<uint16_t>(h));
        if (!std::isnan(f)) {
            ASSERT_EQ(fp32_to_bf16(f), h);
        }
    }
}

namespace tessel {
namespace {

// Rows of 16-bit floats at odd addresses (views at odd byte offsets) convert like aligned ones.
TEST(Fp16, MisalignedRowsConvertLikeAlignedOnes) {
    for (DType t : {DType::F16, DType::BF16}) {
        const int64_t n = 300;  // more than one internal chunk
        std::vector<float> src(n), back(n), want(n);
        for (int64_t i = 0; i < n; ++i) src[i] = std::sin(0.37f * static_cast<float>(i)) * 100.0f;
        std::vector<uint8_t> aligned(2 * n), odd(2 * n + 1);
        quant::quantize_row(t, src.data(), aligned.data(), n);
        quant::quantize_row(t, src.data(), odd.data() + 1, n);
        EXPECT_EQ(0, std::memcmp(aligned.data(), odd.data() + 1, 2 * n)) << dtype_name(t);
        quant::dequantize_row(t, aligned.data(), want.data(), n);
        quant::dequantize_row(t, odd.data() + 1, back.data(), n);
        EXPECT_EQ(0, std::memcmp(want.data(), back.data(), sizeof(float) * n)) << dtype_name(t);
        EXPECT_NEAR(back[7], src[7], std::fabs(src[7]) * 1e-2);
    }
}

}  // namespace
}  // namespace tessel

// The AVX2 row conversions of the data kernels (src/cpu/kernels/row_convert.hpp) against the
// reference conversions (quant::quantize_row / dequantize_row), bit for bit: random rows,
// random bit patterns (NaN, Inf, subnormals) and hand-made edge blocks (exact ties, zeros,
// subnormal and huge maxima). x86-64 only; needs the avx2 tier on the machine running it.
#if defined(__x86_64__)

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_features.hpp"
#include "core/dtype.hpp"
#include "cpu/kernels/kernel.hpp"
#include "cpu/kernels/row_convert.hpp"
#include "quant/quant.hpp"
#include "tessel/errors.hpp"

using namespace tessel;

namespace {

bool have_avx2() { return cpu::has_avx2_tier(cpu_features()); }

std::vector<uint8_t> reference_q8_0(const std::vector<float>& x) {
    std::vector<uint8_t> q(dtype_row_bytes(DType::Q8_0, static_cast<int64_t>(x.size())));
    quant::quantize_row(DType::Q8_0, x.data(), q.data(), static_cast<int64_t>(x.size()));
    return q;
}

std::vector<uint8_t> avx2_q8_0(const std::vector<float>& x) {
    // One byte of offset: the kernel must not rely on alignment.
    std::vector<uint8_t> q(dtype_row_bytes(DType::Q8_0, static_cast<int64_t>(x.size())) + 1, 0xAB);
    cpu::avx2::quantize_row_q8_0(x.data(), q.data() + 1, static_cast<int64_t>(x.size()));
    return std::vector<uint8_t>(q.begin() + 1, q.end());
}

void expect_same_q8_0(const std::vector<float>& x, const std::string& what) {
    const std::vector<uint8_t> want = reference_q8_0(x), got = avx2_q8_0(x);
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < want.size(); ++i)
        ASSERT_EQ(static_cast<int>(got[i]), static_cast<int>(want[i])) << what << ": byte " << i << " of block " << i / 34;
}

float from_bits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

}  // namespace

TEST(RowConvertAvx2, Q8_0MatchesReferenceOnRandomRows) {
    if (!have_avx2()) GTEST_SKIP() << "CPU lacks the avx2 tier";
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> exponent(-30.0f, 30.0f);
    for (int trial = 0; trial < 200; ++trial) {
        std::vector<float> x(32 * 16);
        for (size_t b = 0; b < x.size() / 32; ++b) {
            const float scale = std::pow(2.0f, exponent(rng));
            for (int j = 0; j < 32; ++j) x[b * 32 + j] = normal(rng) * scale;
        }
        expect_same_q8_0(x, std::string("random row ") + std::to_string(trial));
    }
}

TEST(RowConvertAvx2, Q8_0MatchesReferenceOnRandomBitPatterns) {
    if (!have_avx2()) GTEST_SKIP() << "CPU lacks the avx2 tier";
    std::mt19937 rng(11);
    for (int trial = 0; trial < 2000; ++trial) {
        std::vector<float> x(64);
        for (float& v : x) v = from_bits(static_cast<uint32_t>(rng()));
        expect_same_q8_0(x, std::string("bit patterns ") + std::to_string(trial));
    }
}

TEST(RowConvertAvx2, Q8_0MatchesReferenceOnEdgeBlocks) {
    if (!have_avx2()) GTEST_SKIP() << "CPU lacks the avx2 tier";
    const float inf = std::numeric_limits<float>::infinity();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<std::vector<float>> blocks;
    // amax 127 gives d = 1 and 1/d = 1: x = k + 0.5 are exact ties, rounded away from zero.
    for (int base : {-127, -64, -32, 0, 32, 64, 95}) {
        std::vector<float> b(32);
        b[0] = 127.0f;
        for (int j = 1; j < 32; ++j) b[j] = static_cast<float>(base + j) - 0.5f;
        blocks.push_back(b);
        for (float& v : b) v = -v;
        blocks.push_back(b);
    }
    // Scaled ties: x·(1/d) lands next to k + 0.5 after rounding of 1/d.
    for (float amax : {1.0f, 3.0f, 0.1f, 1000.0f, 6.02e23f}) {
        std::vector<float> b(32);
        b[0] = amax;
        for (int j = 1; j < 32; ++j) b[j] = amax * (static_cast<float>(j * 4 - 64) + 0.5f) / 127.0f;
        blocks.push_back(b);
    }
    blocks.push_back(std::vector<float>(32, 0.0f));
    blocks.push_back(std::vector<float>(32, -0.0f));
    std::vector<float> b(32, 1.0f);
    for (float special : {1e-45f, 3e-39f, 1e-38f, 2e-36f, 3.4e38f, -3.4e38f, inf, -inf}) {
        for (int j = 0; j < 32; ++j) b[j] = special * static_cast<float>(j % 5) / 4.0f;  // 0..special; Inf·0 = NaN
        if (!std::isinf(special)) blocks.push_back(b);
        b.assign(32, 1.0f);
        b[31] = special;  // one special element among ones
        blocks.push_back(b);
    }
    for (int pos : {0, 7, 8, 16, 31}) {  // NaN (and NaN with Inf) at positions the fold order matters for
        b.assign(32, 2.0f);
        b[static_cast<size_t>(pos)] = nan;
        blocks.push_back(b);
        b[static_cast<size_t>((pos + 9) % 32)] = -inf;
        blocks.push_back(b);
    }
    for (size_t i = 0; i < blocks.size(); ++i) expect_same_q8_0(blocks[i], std::string("edge block ") + std::to_string(i));
}

TEST(RowConvertAvx2, DequantizeMatchesReference) {
    if (!have_avx2()) GTEST_SKIP() << "CPU lacks the avx2 tier";
    std::mt19937 rng(5);
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q4_0, DType::Q4_1, DType::Q8_0, DType::Q4_K,
                    DType::IQ4_NL}) {
        const int64_t n = dtype_info(t).block_size == 1 ? 77 : dtype_info(t).block_size * 5;
        // Random bytes: block scales include NaN, Inf and subnormal halves.
        std::vector<uint8_t> src(dtype_row_bytes(t, n));
        for (uint8_t& v : src) v = static_cast<uint8_t>(rng());
        // The AVX2 decoder reads a copy one byte off alignment (the reference wants plain types aligned).
        std::vector<uint8_t> shifted(src.size() + 1);
        std::memcpy(shifted.data() + 1, src.data(), src.size());
        std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
        quant::dequantize_row(t, src.data(), want.data(), n);
        cpu::avx2::dequantize_row(t, shifted.data() + 1, got.data(), n);
        EXPECT_EQ(cpu::avx2::has_vector_dequantize(t), t != DType::Q4_K && t != DType::IQ4_NL);
        for (int64_t i = 0; i < n; ++i) {
            uint32_t a, b;
            std::memcpy(&a, &want[static_cast<size_t>(i)], 4);
            std::memcpy(&b, &got[static_cast<size_t>(i)], 4);
            ASSERT_EQ(b, a) << dtype_name(t) << " element " << i;
        }
    }
}

TEST(RowConvertAvx2, FloatConversionsMatchReference) {
    if (!have_avx2()) GTEST_SKIP() << "CPU lacks the avx2 tier";
    std::mt19937 rng(3);
    const DType types[] = {DType::F32, DType::F16, DType::BF16};
    for (DType from : types) {
        for (DType to : types) {
            const uint64_t in_bytes = dtype_info(from).block_bytes, out_bytes = dtype_info(to).block_bytes;
            for (int64_t stride_elems : {1, 3}) {
                const int64_t n = 43, stride = stride_elems * static_cast<int64_t>(in_bytes);
                std::vector<uint8_t> src(static_cast<size_t>(n * stride));
                for (uint8_t& v : src) v = static_cast<uint8_t>(rng());
                std::vector<uint8_t> want(static_cast<size_t>(n) * out_bytes), got(want.size());
                for (int64_t i = 0; i < n; ++i) {  // the reference: raw bits for equal types, else via float
                    const uint8_t* in = src.data() + i * stride;
                    uint8_t* out = want.data() + static_cast<uint64_t>(i) * out_bytes;
                    if (from == to) {
                        std::memcpy(out, in, in_bytes);
                    } else {
                        float f;
                        quant::dequantize_row(from, in, &f, 1);
                        quant::quantize_row(to, &f, out, 1);
                    }
                }
                cpu::avx2::convert_floats(from, src.data(), stride, to, got.data(), n);
                EXPECT_EQ(got, want) << dtype_name(from) << " -> " << dtype_name(to) << " stride " << stride;
            }
        }
    }
}

TEST(RowConvertAvx2, FloatConversionRejectsOtherTypes) {
    if (!have_avx2()) GTEST_SKIP() << "CPU lacks the avx2 tier";
    float x = 1.0f;
    uint8_t out[4];
    EXPECT_THROW(cpu::avx2::convert_floats(DType::F32, &x, 4, DType::Q8_0, out, 1), Error);
}

#endif  // __x86_64__

// K-quants (Q2_K..Q8_K): hand-built blocks with hand-computed values, packed-scale layouts,
// quantize -> dequantize error bounds, edge cases.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/dtype.hpp"
#include "quant/blocks.hpp"
#include "quant/kquant_layout.hpp"
#include "quant/quant.hpp"
#include "tessel/errors.hpp"

using namespace tessel;
using namespace tessel::quant;

namespace {

constexpr uint16_t kHalf_0_125 = 0x3000;  // fp16 bits of 0.125
constexpr uint16_t kHalf_0_25 = 0x3400;
constexpr uint16_t kHalf_0_5 = 0x3800;
constexpr uint16_t kHalf_1 = 0x3c00;

const DType kKQuants[] = {DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q8_K};

template <typename Block>
std::vector<float> dequant_block(DType t, const Block& b) {
    std::vector<float> y(QK_K, std::numeric_limits<float>::quiet_NaN());
    dequantize_row(t, &b, y.data(), QK_K);
    return y;
}

/// Every element equals `expected` except those listed in `special` (index, value).
void expect_values(const std::vector<float>& y, float expected, std::vector<std::pair<int, float>> special,
                   int first = 0, int last = QK_K) {
    for (int e = first; e < last; ++e) {
        float want = expected;
        for (const auto& [idx, v] : special) {
            if (idx == e) want = v;
        }
        EXPECT_EQ(y[e], want) << "element " << e;
    }
}

/// n samples of N(0,1): Box-Muller on std::mt19937 output, so every standard library gives
/// the same values (std::normal_distribution is implementation-defined).
std::vector<float> normal_row(int64_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<float> x(n);
    for (auto& v : x) {
        const double u1 = (static_cast<double>(rng()) + 0.5) / 4294967296.0;
        const double u2 = (static_cast<double>(rng()) + 0.5) / 4294967296.0;
        v = static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
    }
    return x;
}

/// Quantize then dequantize x with type t.
std::vector<float> round_trip(DType t, const std::vector<float>& x) {
    const int64_t n = static_cast<int64_t>(x.size());
    std::vector<uint8_t> q(dtype_row_bytes(t, n));
    EXPECT_EQ(quantize_row(t, x.data(), q.data(), n), q.size());
    std::vector<float> y(n);
    dequantize_row(t, q.data(), y.data(), n);
    return y;
}

double rmse(const std::vector<float>& x, const std::vector<float>& y, size_t first = 0, size_t last = SIZE_MAX) {
    last = std::min(last, x.size());
    double s = 0;
    for (size_t i = first; i < last; ++i) s += (static_cast<double>(x[i]) - y[i]) * (static_cast<double>(x[i]) - y[i]);
    return std::sqrt(s / static_cast<double>(last - first));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Known-answer dequantization of hand-built blocks (values worked out by hand from the layout).

TEST(KQuantDequant, Q2KHandBuilt) {
    block_q2_K b{};
    b.d = kHalf_0_5;
    b.dmin = kHalf_0_25;
    b.scales[5] = 0x3a;   // sub-block 5 (elements 80..95): scale 10, min 3
    b.scales[12] = 0xf1;  // sub-block 12 (elements 192..207): scale 1, min 15
    // element 80: half 0, group (80%128)/32 = 2 -> bits 4..5 of qs[80%32 = 16]: q = 2
    b.qs[16] = 0x20;
    // element 200: half 1, group 2, byte 32 + 8 = 40, bits 4..5: q = 3
    b.qs[40] = 0x30;
    const auto y = dequant_block(DType::Q2_K, b);
    // sub-block 5: 0.5*10*q - 0.25*3; element 80 -> 10 - 0.75, others -> -0.75
    expect_values(y, -0.75f, {{80, 9.25f}}, 80, 96);
    // sub-block 12: 0.5*1*q - 0.25*15; element 200 -> 1.5 - 3.75, others -> -3.75
    expect_values(y, -3.75f, {{200, -2.25f}}, 192, 208);
    // every other sub-block has scale 0 and min 0
    expect_values(y, 0.0f, {}, 0, 80);
    expect_values(y, 0.0f, {}, 96, 192);
    expect_values(y, 0.0f, {}, 208, 256);
}

TEST(KQuantDequant, Q3KHandBuilt) {
    block_q3_K b{};
    b.d = kHalf_0_5;
    // Stored scales are value + 32. Unused sub-blocks: 32 = 0b10'0000 -> low nibble 0, top bits 2.
    std::memset(b.scales + 8, 0xaa, 4);
    // sub-block 13 (elements 208..223): scale -19 -> stored 13 = 0b00'1101: low nibble in the
    // high nibble of byte 13-8 = 5, top bits 0 at bits 6..7 of byte 8 + 13%4 = 9.
    b.scales[5] = 0xd0;
    b.scales[9] = 0x2a;
    // sub-block 2 (elements 32..47): scale 31 -> stored 63: low nibble 15 in byte 2, top bits 3
    // at bits 0..1 of byte 10.
    b.scales[2] = 0x0f;
    b.scales[10] = 0xab;
    // element 210: half 1, group 2 -> bits 4..5 of qs[32 + 18]; high bit is bit 210/32 = 6 of hmask[18].
    b.qs[50] = 0x10;              // low bits 1
    b.hmask[18] = 1 << 6;         // high bit set: q = 1
    // element 211: low bits 3, high bit clear: q = 3 - 4 = -1
    b.qs[51] = 0x30;
    // element 40: half 0, group 1 -> bits 2..3 of qs[8]; high bit 1 of hmask[8]: q = 3
    b.qs[8] = 0x0c;
    b.hmask[8] = 1 << 1;
    const auto y = dequant_block(DType::Q3_K, b);
    // everything else has low bits 0 and high bit clear: q = -4
    expect_values(y, 0.5f * -19 * -4, {{210, -9.5f}, {211, 9.5f}}, 208, 224);
    expect_values(y, -62.0f, {{40, 46.5f}}, 32, 48);
    expect_values(y, 0.0f, {}, 0, 32);
    expect_values(y, 0.0f, {}, 48, 208);
    expect_values(y, 0.0f, {}, 224, 256);
}

TEST(KQuantDequant, Q4KHandBuilt) {
    block_q4_K b{};
    b.d = kHalf_0_25;
    b.dmin = kHalf_1;
    // sub-block 1 (elements 32..63): scale 5 in byte 1, min 2 in byte 5
    b.scales[1] = 5;
    b.scales[5] = 2;
    // sub-block 6 (elements 192..223): scale 37 = 0b10'0101, min 50 = 0b11'0010.
    // low nibbles in byte 6+4 = 10; scale top bits in bits 6..7 of byte 2, min top bits in byte 6.
    b.scales[10] = 0x25;
    b.scales[2] = 0x80;
    b.scales[6] = 0xc0;
    // element 33: byte 1, (33/32) odd -> high nibble: q = 15
    b.qs[1] = 0xf0;
    // element 200: byte 32*3 + 8 = 104, (200/32) = 6 even -> low nibble: q = 11
    b.qs[104] = 0x0b;
    const auto y = dequant_block(DType::Q4_K, b);
    expect_values(y, -2.0f, {{33, 16.75f}}, 32, 64);        // 0.25*5*15 - 2
    expect_values(y, -50.0f, {{200, 51.75f}}, 192, 224);    // 0.25*37*11 - 50
    expect_values(y, 0.0f, {}, 0, 32);
    expect_values(y, 0.0f, {}, 64, 192);
    expect_values(y, 0.0f, {}, 224, 256);
}

TEST(KQuantDequant, Q5KHandBuilt) {
    block_q5_K b{};
    b.d = kHalf_0_5;
    b.dmin = kHalf_0_5;
    // sub-block 5 (elements 160..191): scale 63 = 0b11'1111, min 1: low nibbles in byte 9,
    // scale top bits 3 in bits 6..7 of byte 1, min top bits 0 in byte 5.
    b.scales[9] = 0x1f;
    b.scales[1] = 0xc0;
    // element 170: byte 64 + 10 = 74, (170/32) = 5 odd -> high nibble 7; 5th bit = bit 5 of qh[10]
    b.qs[74] = 0x70;
    b.qh[10] = (1 << 5) | 1;  // bit 0 belongs to element 10 (sub-block 0: scale 0, min 0)
    // element 171: nibble 0, 5th bit set: q = 16
    b.qh[11] = 1 << 5;
    const auto y = dequant_block(DType::Q5_K, b);
    expect_values(y, -0.5f, {{170, 724.0f}, {171, 503.5f}}, 160, 192);  // 31.5*23 - 0.5, 31.5*16 - 0.5
    expect_values(y, 0.0f, {}, 0, 160);
    expect_values(y, 0.0f, {}, 192, 256);
}

TEST(KQuantDequant, Q6KHandBuilt) {
    block_q6_K b{};
    b.d = kHalf_0_125;
    b.scales[4] = 100;  // elements 64..79
    b.scales[11] = -3;  // elements 176..191
    // element 70: half 0, group 2 -> high nibble of ql[6], bits 4..5 of qh[6]: (15 | 1<<4) - 32 = -1
    b.ql[6] = 0xf0;
    b.qh[6] = 0x10;
    // element 180: half 1, group 1 -> low nibble of ql[64 + 32 + 20], bits 2..3 of qh[32 + 20]:
    // (5 | 3<<4) - 32 = 21
    b.ql[116] = 0x05;
    b.qh[52] = 0x0c;
    const auto y = dequant_block(DType::Q6_K, b);
    expect_values(y, 0.125f * 100 * -32, {{70, -12.5f}}, 64, 80);
    expect_values(y, 0.125f * -3 * -32, {{180, -7.875f}}, 176, 192);
    expect_values(y, 0.0f, {}, 0, 64);
    expect_values(y, 0.0f, {}, 80, 176);
    expect_values(y, 0.0f, {}, 192, 256);
}

TEST(KQuantDequant, Q8KHandBuilt) {
    block_q8_K b{};
    b.d = 0.5f;
    b.qs[7] = -128;
    b.qs[200] = 127;
    b.bsums[0] = 1234;  // not used by dequantization
    const auto y = dequant_block(DType::Q8_K, b);
    expect_values(y, 0.0f, {{7, -64.0f}, {200, 63.5f}});
}

TEST(KQuantDequant, UnalignedSourceGivesSameValues) {
    const auto x = normal_row(2 * QK_K, 7);
    for (DType t : kKQuants) {
        const uint64_t bytes = dtype_row_bytes(t, 2 * QK_K);
        std::vector<uint8_t> buf(bytes + 1);
        quantize_row(t, x.data(), buf.data() + 1, 2 * QK_K);
        std::vector<uint8_t> aligned(buf.begin() + 1, buf.end());
        std::vector<float> a(2 * QK_K), u(2 * QK_K);
        dequantize_row(t, aligned.data(), a.data(), 2 * QK_K);
        dequantize_row(t, buf.data() + 1, u.data(), 2 * QK_K);
        EXPECT_EQ(std::memcmp(a.data(), u.data(), a.size() * sizeof(float)), 0) << dtype_name(t);
    }
}

// ---------------------------------------------------------------------------------------------
// Packed scale layouts.

TEST(KQuantLayout, ScaleMinK4PackRoundTripsAndPlacesBits) {
    const uint8_t sc[8] = {1, 2, 3, 63, 37, 0, 17, 48};
    const uint8_t mn[8] = {63, 0, 9, 10, 50, 33, 1, 62};
    uint8_t packed[12];
    kq::pack_scale_min_k4(sc, mn, packed);
    // byte 0: scale 0 (1) | top bits of scale 4 (37 >> 4 = 2) << 6
    EXPECT_EQ(packed[0], 1 | (2 << 6));
    // byte 4: min 0 (63) | top bits of min 4 (50 >> 4 = 3) << 6
    EXPECT_EQ(packed[4], 63 | (3 << 6));
    // byte 8: low nibbles of scale 4 (5) and min 4 (2)
    EXPECT_EQ(packed[8], 0x25);
    // byte 11: scale 7 = 48 -> nibble 0, min 7 = 62 -> nibble 14
    EXPECT_EQ(packed[11], 0xe0);
    for (int j = 0; j < 8; ++j) {
        uint8_t s, m;
        kq::unpack_scale_min_k4(packed, j, s, m);
        EXPECT_EQ(s, sc[j]) << j;
        EXPECT_EQ(m, mn[j]) << j;
    }
}

TEST(KQuantLayout, Q3KScalesPackRoundTrip) {
    int8_t sc[16];
    for (int j = 0; j < 16; ++j) sc[j] = static_cast<int8_t>(-32 + 4 * j + (j % 3));  // -32 .. 31
    sc[15] = 31;
    uint8_t packed[12];
    kq::pack_scales_q3k(sc, packed);
    // scale 0 = -32 -> stored 0; scale 8 = 2 -> stored 34 = 0b10'0010: byte 0 = 0x20
    EXPECT_EQ(packed[0], 0x20);
    // byte 8: top bits of scales 0, 4, 8, 12 (stored 0, 17, 34, 51 -> 0, 1, 2, 3)
    EXPECT_EQ(packed[8], 0 | (1 << 2) | (2 << 4) | (3 << 6));
    for (int j = 0; j < 16; ++j) EXPECT_EQ(kq::unpack_scale_q3k(packed, j), sc[j]) << j;
}

TEST(KQuantLayout, RoundNearestTiesToEven) {
    EXPECT_EQ(kq::round_nearest(2.5f), 2);
    EXPECT_EQ(kq::round_nearest(3.5f), 4);
    EXPECT_EQ(kq::round_nearest(-2.5f), -2);
    EXPECT_EQ(kq::round_nearest(-0.7f), -1);
    EXPECT_EQ(kq::round_nearest(126.49f), 126);
    EXPECT_EQ(kq::round_clamped(std::numeric_limits<float>::infinity(), 0, 15), 15);
    EXPECT_EQ(kq::round_clamped(-std::numeric_limits<float>::infinity(), 0, 15), 0);
    EXPECT_EQ(kq::round_clamped(std::numeric_limits<float>::quiet_NaN(), -4, 3), -4);
}

// ---------------------------------------------------------------------------------------------
// Q8_K quantization follows ggml's arithmetic exactly.

TEST(KQuantQuantize, Q8KKnownAnswer) {
    std::vector<float> x(QK_K, 0.0f);
    x[0] = 1.0f;     // 1 * 63.5 = 63.5 -> ties to even: 64
    x[1] = -2.0f;    // largest magnitude: iscale = -127 / -2 = 63.5 -> -127
    x[2] = 0.5f;     // 31.75 -> 32
    x[3] = 0.25f;    // 15.875 -> 16
    x[20] = -0.75f;  // -47.625 -> -48
    block_q8_K b;
    EXPECT_EQ(quantize_row(DType::Q8_K, x.data(), &b, QK_K), sizeof(block_q8_K));
    EXPECT_EQ(b.d, 1.0f / 63.5f);
    EXPECT_EQ(b.qs[0], 64);
    EXPECT_EQ(b.qs[1], -127);
    EXPECT_EQ(b.qs[2], 32);
    EXPECT_EQ(b.qs[3], 16);
    EXPECT_EQ(b.qs[20], -48);
    EXPECT_EQ(b.bsums[0], 64 - 127 + 32 + 16);
    EXPECT_EQ(b.bsums[1], -48);
    for (int j = 2; j < 16; ++j) EXPECT_EQ(b.bsums[j], 0);
    int nonzero = 0;
    for (int e = 0; e < QK_K; ++e) nonzero += b.qs[e] != 0;
    EXPECT_EQ(nonzero, 5);
}

TEST(KQuantQuantize, Q8KPositiveMaxMapsToMinus127) {
    std::vector<float> x(QK_K, 0.0f);
    x[5] = 4.0f;   // iscale = -127/4 = -31.75 -> -127
    x[6] = -4.0f;  // -> 127
    x[7] = 1.0f;   // -31.75 -> -32
    block_q8_K b;
    quantize_row(DType::Q8_K, x.data(), &b, QK_K);
    EXPECT_EQ(b.d, 1.0f / -31.75f);
    EXPECT_EQ(b.qs[5], -127);
    EXPECT_EQ(b.qs[6], 127);
    EXPECT_EQ(b.qs[7], -32);
    EXPECT_EQ(b.bsums[0], -32);
}

// ---------------------------------------------------------------------------------------------
// Round trips on N(0,1) rows. The reference figures are llama.cpp's reference quantizers
// (quantize_row_q*_K_ref, i.e. ggml_quantize_chunk without an importance matrix, libggml
// 0.25.3) run on exactly this row (normal_row(1024 * QK_K, 1234)) and dequantized by ggml.
// tessel's own K-quant search must be no worse; Q8_K is ggml's arithmetic, so it matches.

struct LlamaReference {
    DType type;
    double rmse;
};
const LlamaReference kLlamaRmse[] = {{DType::Q2_K, 0.2967069}, {DType::Q3_K, 0.1509248}, {DType::Q4_K, 0.0715623},
                                     {DType::Q5_K, 0.0361758}, {DType::Q6_K, 0.0177760}, {DType::Q8_K, 0.0069731}};

TEST(KQuantQuantize, NormalRowsRmseNoWorseThanLlamaCppReference) {
    const auto x = normal_row(1024 * QK_K, 1234);
    for (const LlamaReference& ref : kLlamaRmse) {
        const auto y = round_trip(ref.type, x);
        const double e = rmse(x, y);
        std::printf("[ rmse     ] %s N(0,1): %.7f (llama.cpp reference %.7f, ratio %.4f)\n", dtype_name(ref.type), e,
                    ref.rmse, e / ref.rmse);
        if (ref.type == DType::Q8_K) {
            EXPECT_NEAR(e, ref.rmse, 1e-7);
        } else {
            EXPECT_LE(e, ref.rmse) << dtype_name(ref.type);
        }
    }
}

TEST(KQuantQuantize, ReturnsRowBytes) {
    const auto x = normal_row(2 * QK_K, 3);
    const uint64_t expected[] = {2 * 84, 2 * 110, 2 * 144, 2 * 176, 2 * 210, 2 * 292};
    int i = 0;
    for (DType t : kKQuants) {
        std::vector<uint8_t> q(expected[i]);
        EXPECT_EQ(quantize_row(t, x.data(), q.data(), 2 * QK_K), expected[i]) << dtype_name(t);
        EXPECT_EQ(dtype_row_bytes(t, 2 * QK_K), expected[i]) << dtype_name(t);
        ++i;
    }
}

TEST(KQuantQuantize, RejectsPartialBlock) {
    std::vector<float> x(QK_K + 16, 0.0f);
    std::vector<uint8_t> q(4096);
    for (DType t : kKQuants) {
        try {
            quantize_row(t, x.data(), q.data(), QK_K + 16);
            ADD_FAILURE() << "no error for " << dtype_name(t);
        } catch (const Error& e) {
            EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << dtype_name(t);
        }
    }
}

TEST(KQuantQuantize, Deterministic) {
    const auto x = normal_row(4 * QK_K, 99);
    for (DType t : kKQuants) {
        const uint64_t bytes = dtype_row_bytes(t, 4 * QK_K);
        std::vector<uint8_t> a(bytes), b(bytes);
        quantize_row(t, x.data(), a.data(), 4 * QK_K);
        quantize_row(t, x.data(), b.data(), 4 * QK_K);
        EXPECT_EQ(a, b) << dtype_name(t);
    }
}

// ---------------------------------------------------------------------------------------------
// Edge cases.

TEST(KQuantQuantize, AllZeroRowIsExact) {
    const std::vector<float> x(2 * QK_K, 0.0f);
    for (DType t : kKQuants) {
        const auto y = round_trip(t, x);
        for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], 0.0f) << dtype_name(t) << " element " << i;
    }
}

TEST(KQuantQuantize, ConstantRows) {
    for (float c : {3.0f, -2.5f, 0.001f}) {
        const std::vector<float> x(QK_K, c);
        for (DType t : kKQuants) {
            const auto y = round_trip(t, x);
            double worst = 0;
            for (float v : y) worst = std::max(worst, std::fabs(static_cast<double>(v) - c));
            std::printf("[ const    ] %s c=%g worst rel err %.3g\n", dtype_name(t), c, worst / std::fabs(c));
            EXPECT_LE(worst, 2e-3 * std::fabs(c)) << dtype_name(t) << " c = " << c;
        }
    }
}

TEST(KQuantQuantize, OneHugeValue) {
    auto x = normal_row(2 * QK_K, 5);
    x[100] = 1000.0f;  // in block 0; block 1 is plain N(0,1)
    for (const LlamaReference& ref : kLlamaRmse) {
        const DType t = ref.type;
        const auto y = round_trip(t, x);
        std::printf("[ huge     ] %s y=%g other-block rmse %.4f\n", dtype_name(t), y[100], rmse(x, y, QK_K, 2 * QK_K));
        EXPECT_NEAR(y[100], 1000.0f, 1.0f) << dtype_name(t);
        // the other super-block is unaffected (20% slack for a 256-value sample)
        EXPECT_LE(rmse(x, y, QK_K, 2 * QK_K), 1.2 * ref.rmse) << dtype_name(t);
    }
}

TEST(KQuantQuantize, AllNegativeRows) {
    auto x = normal_row(64 * QK_K, 11);
    for (auto& v : x) v = -std::fabs(v) - 0.5f;  // -0.5 .. about -5
    // tessel's RMSE on this row, plus 10%: the affine types (Q2_K, Q4_K, Q5_K) use their min;
    // the symmetric ones (Q3_K, Q6_K) spend half their levels on the unused positive side.
    const double bound[] = {0.162, 0.174, 0.043, 0.0215, 0.0219, 0.0090};
    int i = 0;
    for (DType t : kKQuants) {
        const auto y = round_trip(t, x);
        const double e = rmse(x, y);
        std::printf("[ negative ] %s rmse %.6f\n", dtype_name(t), e);
        EXPECT_LE(e, bound[i]) << dtype_name(t);
        for (size_t k = 0; k < y.size(); ++k) ASSERT_LE(y[k], 0.0f) << dtype_name(t) << " element " << k;
        ++i;
    }
}

TEST(KQuantQuantize, NonFiniteInputDoesNotCrash) {
    auto x = normal_row(2 * QK_K, 13);
    x[3] = std::numeric_limits<float>::quiet_NaN();
    x[40] = std::numeric_limits<float>::infinity();
    x[41] = -std::numeric_limits<float>::infinity();
    for (const LlamaReference& ref : kLlamaRmse) {
        std::vector<float> y;
        EXPECT_NO_THROW(y = round_trip(ref.type, x)) << dtype_name(ref.type);
        // the second super-block is finite and quantized normally (30% slack for 256 values)
        EXPECT_LE(rmse(x, y, QK_K, 2 * QK_K), 1.3 * ref.rmse) << dtype_name(ref.type);
    }
}

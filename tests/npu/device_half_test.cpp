// The device runtime's portable fp16 conversions (src/npu/device/half.h) against tessel's own
// (src/core/fp16.hpp): every half, and floats at and around every rounding boundary of the halves.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/fp16.hpp"
#include "npu/device/half.h"

namespace {

uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
float from_bits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

TEST(NpuHalf, EveryHalfToFloat) {
    for (uint32_t h = 0; h <= 0xffffu; ++h)
        ASSERT_EQ(bits(tsl_npu_half_to_float(static_cast<uint16_t>(h))),
                  bits(tessel::fp16_to_fp32(static_cast<uint16_t>(h))))
            << "half 0x" << std::hex << h;
}

void expect_same_half(uint32_t x) {
    const float f = from_bits(x);
    ASSERT_EQ(tsl_npu_float_to_half(f), tessel::fp32_to_fp16(f)) << "float bits 0x" << std::hex << x;
}

TEST(NpuHalf, FloatToHalfAtEveryBoundary) {
    // Each half, the exact midpoint to the next half (a tie) and one float ulp either side of both.
    for (uint32_t h = 0; h < 0x7c00u; ++h) {
        const double lo = tessel::fp16_to_fp32(static_cast<uint16_t>(h));
        const double hi = h + 1 < 0x7c00u ? tessel::fp16_to_fp32(static_cast<uint16_t>(h + 1)) : 65536.0;
        const uint32_t mid = bits(static_cast<float>((lo + hi) / 2));  // exact: 12 significant bits
        for (const uint32_t x : {bits(static_cast<float>(lo)), mid}) {
            for (const uint32_t sign : {0u, 0x80000000u}) {
                expect_same_half(sign | x);
                expect_same_half(sign | (x + 1));
                if (x > 0) expect_same_half(sign | (x - 1));
            }
        }
    }
}

TEST(NpuHalf, FloatToHalfSweepAndSpecials) {
    for (uint64_t x = 0; x <= 0xffffffffull; x += 65521) expect_same_half(static_cast<uint32_t>(x));
    const uint32_t specials[] = {0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u, 0xffffffffu, 0x7fa02000u,
                                 0x00000001u, 0x007fffffu, 0x33000000u, 0x33000001u, 0x477fefffu, 0x477ff000u,
                                 0x7f7fffffu, 0x38800000u, 0x387fffffu};
    for (const uint32_t x : specials) expect_same_half(x);
    EXPECT_EQ(tsl_npu_float_to_half(65520.0f), 0x7c00u);
    EXPECT_EQ(tsl_npu_float_to_half(65504.0f), 0x7bffu);
    EXPECT_EQ(tsl_npu_float_to_half(std::ldexp(1.0f, -24)), 0x0001u);
    EXPECT_EQ(tsl_npu_float_to_half(std::ldexp(1.0f, -25)), 0x0000u);  // tie to even
}

// The row helpers convert like the element functions, contiguous (stride 2) and strided.
TEST(NpuHalf, RowHelpersMatchTheElementFunctions) {
    std::vector<uint16_t> halves(0x10000);
    for (uint32_t h = 0; h <= 0xffffu; ++h) halves[h] = static_cast<uint16_t>(h);
    std::vector<float> out(0x10000);
    tsl_npu_half_row_to_float(reinterpret_cast<const uint8_t*>(halves.data()), 2, out.data(), 0x10000);
    for (uint32_t h = 0; h <= 0xffffu; ++h)
        ASSERT_EQ(bits(out[h]), bits(tessel::fp16_to_fp32(static_cast<uint16_t>(h)))) << std::hex << h;
    tsl_npu_half_row_to_float(reinterpret_cast<const uint8_t*>(halves.data()) + 6, 6, out.data(), 1000);
    for (uint32_t i = 0; i < 1000; ++i) ASSERT_EQ(bits(out[i]), bits(tessel::fp16_to_fp32(halves[3 + 3 * i])));

    std::vector<float> floats(4099);
    for (size_t i = 0; i < floats.size(); ++i) floats[i] = from_bits(static_cast<uint32_t>(i) * 1048573u);
    std::vector<uint16_t> back(floats.size() * 2, 0);
    tsl_npu_float_row_to_half(floats.data(), reinterpret_cast<uint8_t*>(back.data()), 2, 4099);
    for (size_t i = 0; i < floats.size(); ++i) ASSERT_EQ(back[i], tessel::fp32_to_fp16(floats[i])) << i;
    tsl_npu_float_row_to_half(floats.data(), reinterpret_cast<uint8_t*>(back.data()), 4, 2000);
    for (size_t i = 0; i < 2000; ++i) ASSERT_EQ(back[2 * i], tessel::fp32_to_fp16(floats[i])) << i;
}

}  // namespace

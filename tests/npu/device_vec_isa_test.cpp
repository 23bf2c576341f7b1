// vec.h's two implementations (plain C, AVX-512 intrinsics) and half.h's row conversion give the
// same results for the same inputs (vec.h's header promises bit-identical results): random
// vectors mixing ordinary values of every magnitude with the special ones (signed zeros,
// subnormals, infinities, NaN, the float range's ends), every lane count. NaN results must be NaN
// in both; their payloads are not compared (a compiler may swap a commutative operation's
// operands, and x86 keeps the first operand's payload). Without AVX-512 on the CPU, the plain C
// functions still run against the scalar forms.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/cpu_features.hpp"
#include "core/fp16.hpp"

extern "C" {
void tsl_test_vec_lanes_c(const float* a, const float* b, int n, float* out);
void tsl_test_half_row_c(const uint16_t* src, float* dst, int64_t n);
void tsl_test_transpose_c(const float* in, float* out);
#if defined(__x86_64__)
void tsl_test_vec_lanes_avx512(const float* a, const float* b, int n, float* out);
void tsl_test_transpose_avx512(const float* in, float* out);
void tsl_test_half_row_avx512(const uint16_t* src, float* dst, int64_t n);
void tsl_test_vec_lanes_avx2(const float* a, const float* b, int n, float* out);
void tsl_test_transpose_avx2(const float* in, float* out);
void tsl_test_half_row_avx2(const uint16_t* src, float* dst, int64_t n);
#endif
}

namespace tessel::test {
namespace {

constexpr int kResults = 256;  // floats written by tsl_test_vec_lanes_*

/// vec.h's ISA builds this CPU runs (x86: AVX2, AVX-512), as the functions of each.
struct IsaBuild {
    const char* name;
    void (*lanes)(const float* a, const float* b, int n, float* out);
    void (*transpose)(const float* in, float* out);
    void (*half_row)(const uint16_t* src, float* dst, int64_t n);
};
std::vector<IsaBuild> isa_builds() {
    std::vector<IsaBuild> out;
#if defined(__x86_64__)
    const CpuFeatures& f = cpu_features();  // as detected
    if (f.avx2 && f.fma && f.f16c)
        out.push_back({"avx2", tsl_test_vec_lanes_avx2, tsl_test_transpose_avx2, tsl_test_half_row_avx2});
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq"))
        out.push_back({"avx512", tsl_test_vec_lanes_avx512, tsl_test_transpose_avx512, tsl_test_half_row_avx512});
#endif
    return out;
}

// Equal bits, or both NaN.
bool same(float x, float y) {
    if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
    uint32_t bx, by;
    std::memcpy(&bx, &x, 4);
    std::memcpy(&by, &y, 4);
    return bx == by;
}

float special_or_random(std::mt19937& rng) {
    const float inf = std::numeric_limits<float>::infinity();
    const float specials[] = {0.0f, -0.0f, 1e-40f, -3e-42f, inf, -inf, std::numeric_limits<float>::quiet_NaN(),
                              std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(), 88.8f, -104.0f,
                              0.2f, -0.25f, 9.1f};
    std::uniform_int_distribution<int> pick(0, 3 * static_cast<int>(std::size(specials)));
    const int k = pick(rng);
    if (k < static_cast<int>(std::size(specials))) return specials[k];
    std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
    std::uniform_int_distribution<int> exp(-30, 30);
    return std::ldexp(mant(rng), exp(rng));
}

TEST(NpuDeviceVecIsa, IsaBuildLanesEqualThePlainCLanes) {
    std::mt19937 rng(2026);
    const std::vector<IsaBuild> builds = isa_builds();
    float a[16], b[16], c_out[kResults], x_out[kResults];
    for (int iter = 0; iter < 20000; ++iter) {
        for (int i = 0; i < 16; ++i) {
            a[i] = special_or_random(rng);
            b[i] = special_or_random(rng);
        }
        if (iter % 4 == 0) b[iter / 4 % 16] = -0.0f, b[(iter / 4 + 5) % 16] = 0.0f;  // zero maxima of both signs
        const int n = iter % 17;
        tsl_test_vec_lanes_c(a, b, n, c_out);
        // the plain C functions against their definitions, lane by lane
        for (int i = 0; i < 16; ++i) {
            ASSERT_TRUE(same(c_out[i], a[i] + b[i])) << iter;
            ASSERT_TRUE(same(c_out[64 + i], a[i] > b[i] ? a[i] : b[i])) << iter;
            ASSERT_TRUE(same(c_out[96 + i], a[i] * b[i] + a[i])) << iter;
            ASSERT_TRUE(same(c_out[128 + i], i < n ? a[i] : b[0])) << iter;
            ASSERT_TRUE(same(c_out[160 + i], i < n ? a[i] : b[i])) << iter;
        }
        float m = a[0];
        for (int i = 1; i < 16; ++i) m = a[i] > m ? a[i] : m;
        ASSERT_TRUE(same(c_out[225], m)) << iter;
        ASSERT_TRUE(same(c_out[228], c_out[176])) << iter;  // expf is lane 0 of the vector exp
        bool nlt = false;
        for (int i = 0; i < 16; ++i) nlt = nlt || !(a[i] < b[i]);
        ASSERT_EQ(c_out[231], nlt ? 1.0f : 0.0f) << iter;
        int8_t bytes[16];
        std::memcpy(bytes, a, 16);
        for (int i = 0; i < 16; ++i) ASSERT_EQ(c_out[240 + i], static_cast<float>(bytes[i])) << iter;
        for (const IsaBuild& build : builds) {
            build.lanes(a, b, n, x_out);
            for (int i = 0; i < kResults; ++i)
                ASSERT_TRUE(same(x_out[i], c_out[i])) << build.name << " iter " << iter << " float " << i;
        }
    }
}

TEST(NpuDeviceVecIsa, TransposeSwapsRowsAndColumns) {
    float in[256], c_out[256];
    for (int i = 0; i < 256; ++i) in[i] = static_cast<float>(i) + 0.5f;  // every entry distinct
    tsl_test_transpose_c(in, c_out);
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 16; ++j) ASSERT_EQ(c_out[16 * i + j], in[16 * j + i]) << i << "," << j;
    for (const IsaBuild& build : isa_builds()) {
        float x_out[256];
        build.transpose(in, x_out);
        ASSERT_EQ(std::memcmp(x_out, c_out, sizeof c_out), 0) << build.name;
    }
}

TEST(NpuDeviceVecIsa, HalfRowConversionEqualsTheScalarOneForEveryHalf) {
    std::vector<uint16_t> h(65536 + 5);  // + 5: a tail shorter than a vector
    for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint16_t>(i * 40503u);
    std::vector<float> c(h.size());
    tsl_test_half_row_c(h.data(), c.data(), static_cast<int64_t>(h.size()));
    for (size_t i = 0; i < h.size(); ++i) {
        const float want = fp16_to_fp32(h[i]);
        ASSERT_EQ(std::memcmp(&c[i], &want, 4), 0) << h[i];
    }
    for (const IsaBuild& build : isa_builds()) {
        std::vector<float> x(h.size());
        build.half_row(h.data(), x.data(), static_cast<int64_t>(h.size()));
        ASSERT_EQ(std::memcmp(x.data(), c.data(), c.size() * 4), 0) << build.name;  // NaN payloads included
    }
}

}  // namespace
}  // namespace tessel::test

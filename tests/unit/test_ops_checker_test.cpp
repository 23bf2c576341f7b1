// The checker of test-ops' quantizing cases (tools/tessel/dev/test_ops_compare.cpp) must be able to
// fail: for every type with a quantizer, an all-zero output and an output with one wrong element
// fail it, and the reference quantizer's own round trip passes it.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/dtype.hpp"
#include "quant/quant.hpp"
#include "test_ops.hpp"

using namespace tessel;
using tessel::cli::test_ops::compare_quantized;

namespace {

/// The lower-precision types a CPY / SET_ROWS can store into (every type with a quantizer but F32
/// and the integers).
std::vector<DType> quantized_types() {
    std::vector<DType> out;
    for (uint32_t id = 0; id < kDTypeIdEnd; ++id) {
        const DTypeInfo* info = dtype_info_from_id(id);
        if (!info || !quant::has_quantize(info->type) || !quant::has_dequantize(info->type)) continue;
        const DType t = info->type;
        if (t == DType::F32 || t == DType::F64 || t == DType::I8 || t == DType::I16 || t == DType::I32 || t == DType::I64)
            continue;
        out.push_back(t);
    }
    return out;
}

std::vector<float> round_trip(DType t, const std::vector<float>& x) {
    std::vector<uint8_t> q(dtype_row_bytes(t, static_cast<int64_t>(x.size())));
    quant::quantize_row(t, x.data(), q.data(), static_cast<int64_t>(x.size()));
    std::vector<float> y(x.size());
    quant::dequantize_row(t, q.data(), y.data(), static_cast<int64_t>(x.size()));
    return y;
}

TEST(TestOpsChecker, EveryQuantizedTypeIsChecked) {
    const std::vector<DType> types = quantized_types();
    ASSERT_GE(types.size(), 15u);  // F16, BF16, Q4_0 .. Q8_0, Q2_K .. Q6_K, IQ4_NL, IQ4_XS, MXFP4 at least
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (DType t : types) {
        SCOPED_TRACE(dtype_name(t));
        std::vector<float> stored(1024);  // four K-quant super-blocks
        for (float& v : stored) v = u(rng);
        const std::vector<float> ref = round_trip(t, stored);

        const auto same = compare_quantized(t, stored, ref, ref);
        EXPECT_TRUE(same.ok) << same.why;

        const auto zeros = compare_quantized(t, stored, ref, std::vector<float>(stored.size(), 0.0f));
        EXPECT_FALSE(zeros.ok) << "an all-zero output passed";

        // one element wrong: the block's largest value stored with its sign flipped
        for (size_t at : {size_t{0}, stored.size() / 2 + 3}) {
            const size_t bs = dtype_info(t).block_size;
            const size_t b = at / bs * bs;
            size_t big = b;
            for (size_t i = b; i < b + bs; ++i)
                if (std::fabs(stored[i]) > std::fabs(stored[big])) big = i;
            std::vector<float> one = ref;
            one[big] = -ref[big];
            const auto v = compare_quantized(t, stored, ref, one);
            EXPECT_FALSE(v.ok) << "one wrong element (" << big << ") passed";
        }
    }
}

TEST(TestOpsChecker, ANonFiniteOutputFails) {
    const std::vector<float> stored{0.5f, -0.25f, 1.0f, 0.0f};
    std::vector<float> got = stored;
    got[2] = NAN;
    EXPECT_FALSE(compare_quantized(DType::F16, stored, stored, got).ok);
}

}  // namespace

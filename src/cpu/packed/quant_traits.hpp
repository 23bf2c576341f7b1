// x86 helpers of the quantized packed kernels: two byte readers and the per-call activation scales,
// shared by the x86 per-ISA kernel files (the geometry is quant_layout.hpp's). Internal linkage: every
// ISA translation unit keeps its own copy (see cpu/kernels/kernel.hpp on inline code in ISA units);
// the includers are compiled with F16C enabled.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/dtype.hpp"
#include "cpu/packed/format.hpp"
#include "cpu/packed/kernel.hpp"
#include "cpu/packed/quant_layout.hpp"

namespace tessel::cpu::packed {
namespace {

/// The fp16 value at p (unaligned) as a float.
inline float half_at(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

/// The 32-bit integer at p (unaligned).
inline int32_t i32_at(const uint8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

/// Per-call activation data of a GEMM call: for each row and block, d_x and (Q4_0) the integer
/// correction -8 * sum q_x. AVX2 code: the includers are compiled with AVX2 at least.
struct RowPrep {
    UnitBuffer<float> d;
    UnitBuffer<int32_t> corr;
};

template <class W>
void prepare(const GemmArgs& a, RowPrep& p) {
    const int64_t nb = a.k / 32;
    p.d.resize(static_cast<size_t>(a.m * nb));
    if constexpr (W::kWeight == DType::Q4_0) p.corr.resize(static_cast<size_t>(a.m * nb));
    for (int64_t i = 0; i < a.m; ++i)
        for (int64_t b = 0; b < nb; ++b) {
            const uint8_t* blk = a.lhs + i * a.lhs_stride + b * W::kLhsBlockBytes;
            p.d[static_cast<size_t>(i * nb + b)] = half_at(blk);
            if constexpr (W::kWeight == DType::Q4_0) {
                const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
                const __m256i s16 = _mm256_maddubs_epi16(_mm256_set1_epi8(1), q);
                const __m256i s32 = _mm256_madd_epi16(s16, _mm256_set1_epi16(1));
                __m128i s = _mm_add_epi32(_mm256_castsi256_si128(s32), _mm256_extracti128_si256(s32, 1));
                s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
                s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
                p.corr[static_cast<size_t>(i * nb + b)] = -8 * _mm_cvtsi128_si32(s);
            }
        }
}

}  // namespace
}  // namespace tessel::cpu::packed

// Activation (LHS) quantization to Q8_K super-blocks with AVX2, bit-identical to
// quant::quantize_row(Q8_K) (ggml's quantize_row_q8_K_ref: the first value of largest magnitude m
// maps to -127, iscale = -127 / m, q = round-to-nearest-even(iscale * x) capped to [-128, 127],
// d = 1 / iscale, bsums = sums of 16 quants). Block: float d, int8 qs[256], int16 bsums[16] (292
// bytes). Included by the K-quant kernel units (AVX2 at least); internal linkage.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace tessel::cpu::packed {
namespace {

constexpr int64_t kQ8KBytes = 292;  ///< one Q8_K super-block of 256 elements

/// Quantizes m rows of k floats (row i at x + i * x_stride bytes; k % 256 == 0) into Q8_K blocks,
/// one row after another at dst.
inline void quantize_q8k_rows(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t i = 0; i < m; ++i) {
        const float* row = reinterpret_cast<const float*>(reinterpret_cast<const uint8_t*>(x) + i * x_stride);
        uint8_t* out = dst + i * (k / 256) * kQ8KBytes;
        for (int64_t b = 0; b < k / 256; ++b, out += kQ8KBytes) {
            const float* xb = row + 256 * b;
            __m256 amax = _mm256_setzero_ps();
            for (int c = 0; c < 32; ++c) amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, _mm256_loadu_ps(xb + 8 * c)));
            __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
            m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
            m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
            const float a = _mm_cvtss_f32(m4);
            if (a == 0.0f) {
                std::memset(out, 0, kQ8KBytes);
                continue;
            }
            float max = 0.0f;  // the first value of magnitude a, with its sign
            for (int c = 0; c < 32; ++c) {
                const int hit = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(xb + 8 * c)), _mm256_set1_ps(a), _CMP_EQ_OQ));
                if (hit) {
                    max = xb[8 * c + __builtin_ctz(static_cast<unsigned>(hit))];
                    break;
                }
            }
            const float iscale = -127.0f / max;
            const float d = 1.0f / iscale;
            std::memcpy(out, &d, 4);
            const __m256 is = _mm256_set1_ps(iscale);
            for (int s = 0; s < 16; ++s) {  // 16 quants per step: one bsum
                const __m256i q0 = _mm256_cvtps_epi32(_mm256_mul_ps(is, _mm256_loadu_ps(xb + 16 * s)));
                const __m256i q1 = _mm256_cvtps_epi32(_mm256_mul_ps(is, _mm256_loadu_ps(xb + 16 * s + 8)));
                // packs saturate to [-128, 127] (the reference's clamp); they work per 128-bit lane
                const __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(q0, q1), 0xd8);
                const __m128i q8 = _mm_packs_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
                _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 4 + 16 * s), q8);
                const __m256i s32 = _mm256_madd_epi16(_mm256_cvtepi8_epi16(q8), _mm256_set1_epi16(1));
                __m128i t = _mm_add_epi32(_mm256_castsi256_si128(s32), _mm256_extracti128_si256(s32, 1));
                t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4e));
                t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xb1));
                const int16_t sum = static_cast<int16_t>(_mm_cvtsi128_si32(t));
                std::memcpy(out + 260 + 2 * s, &sum, 2);
            }
        }
    }
}

}  // namespace
}  // namespace tessel::cpu::packed

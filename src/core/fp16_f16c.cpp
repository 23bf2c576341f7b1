// F16C row conversions. This translation unit is compiled with -mf16c and is only entered
// after a run-time check that the CPU supports F16C (see fp16.cpp).
#include <immintrin.h>

#include "core/fp16.hpp"

namespace tessel {

void fp16_to_fp32_row_f16c(const uint16_t* src, float* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
    }
    for (; i < n; ++i) dst[i] = fp16_to_fp32(src[i]);
}

void fp32_to_fp16_row_f16c(const float* src, uint16_t* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
    }
    for (; i < n; ++i) dst[i] = fp32_to_fp16(src[i]);
}

}  // namespace tessel

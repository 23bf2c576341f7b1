// The AVX2 int8 peak loop (int8_peak.hpp): kMaddubsChains chains of maddubs (u8 x s8 pairs -> s16),
// madd with ones (-> s32) and an s32 add, the sequence the avx2 packed kernels build on.
#include <immintrin.h>

#include "int8_peak.hpp"

namespace tessel::bench {

int32_t maddubs_peak_loop(int64_t iters) {
    __m256i acc[kMaddubsChains];
    for (int c = 0; c < kMaddubsChains; ++c) acc[c] = _mm256_set1_epi32(c);
    __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-5);
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t i = 0; i < iters; ++i)
        for (int c = 0; c < kMaddubsChains; ++c) {
            asm("" : "+x"(a));  // an opaque operand per chain: the products are neither shared nor hoisted
            acc[c] = _mm256_add_epi32(acc[c], _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), ones));
        }
    __m256i s = acc[0];
    for (int c = 1; c < kMaddubsChains; ++c) s = _mm256_add_epi32(s, acc[c]);
    __m128i h = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4e));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xb1));
    return _mm_cvtsi128_si32(h);
}

}  // namespace tessel::bench

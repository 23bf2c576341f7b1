// Vector math for the AVX2 kernels (include only from translation units built with -mavx2 -mfma).
//
// exp: range reduction x = n·ln2 + r with |r| ≤ ln2/2 (ln2 split in a high and a low part so
// n·ln2_hi is exact), e^r by its Taylor polynomial to degree 7 (truncation < 1e-9 relative on
// that interval), times 2^n built in the exponent field (so -126 ≤ n ≤ 127). Inputs below
// -87.33 give 0 (e^x would be subnormal), above 88.376 (= 127.5·ln2) give +inf although e^x is
// still finite up to 88.72: the kernels use exp on x ≤ 0 (softmax) or where the result is a
// divisor whose size no longer matters (SiLU). NaN propagates through the polynomial.
#pragma once

#include <immintrin.h>

namespace tessel::cpu::avx2 {

inline __m256 exp(__m256 x) {
    const __m256 hi_limit = _mm256_set1_ps(88.3762626647949f);
    const __m256 lo_limit = _mm256_set1_ps(-87.33654022216797f);
    const __m256 xc = _mm256_max_ps(_mm256_min_ps(x, hi_limit), lo_limit);
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), xc);       // ln2 high part (exact product)
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);             // ln2 low part
    // Horner: 1 + r(1 + r/2(1 + r/3(1 + r/4(1 + r/5(1 + r/6(1 + r/7))))))
    __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
    y = _mm256_blendv_ps(y, _mm256_setzero_ps(), _mm256_cmp_ps(x, lo_limit, _CMP_LT_OQ));
    y = _mm256_blendv_ps(y, _mm256_set1_ps(__builtin_inff()), _mm256_cmp_ps(x, hi_limit, _CMP_GT_OQ));
    return y;
}

/// Horizontal sum of 8 floats, folded in double.
inline double hsum_f64(__m256 v) {
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, v);
    double s = 0.0;
    for (float l : lanes) s += l;
    return s;
}

inline float hmax(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

}  // namespace tessel::cpu::avx2

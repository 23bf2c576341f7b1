// Vector math for the AVX2 kernels (include only from translation units built with -mavx2 -mfma).
//
// exp: range reduction x = n·ln2 + r with |r| ≤ ln2/2 (ln2 split in a high and a low part so
// n·ln2_hi is exact), e^r by its Taylor polynomial to degree 7 (truncation < 1e-9 relative on
// that interval), times 2^n built in the exponent field (so -126 ≤ n ≤ 127). Inputs below
// -87.33 give 0 (e^x would be subnormal), above 88.376 (= 127.5·ln2) give +inf although e^x is
// still finite up to 88.72: the kernels use exp on x ≤ 0 (softmax) or where the result is a
// divisor whose size no longer matters (SiLU). NaN propagates through the polynomial.
//
// tanh: 1 - 2/(e^(2x) + 1) with the exp above; saturates to ±1 where e^(2x) overflows or
// vanishes. Absolute error < 3e-7 (relative accuracy is lost near 0, where tanh x ≈ x).
//
// sincos (double): x = r + n·π/2 with |r| <= π/4 (π/2 split in a high and a low double, each
// product subtracted by FMA, so r is exact to ~1 ulp of r for |x| < 2^30), sin r and cos r by
// their Taylor polynomials to degree 13 and 14 (truncation < 3e-14 on that interval), then the
// quadrant n mod 4 swaps and negates them.
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

/// tanh of 8 floats (absolute error < 3e-7; see the file comment).
inline __m256 tanh(__m256 x) {
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 e = exp(_mm256_add_ps(x, x));
    return _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, one)));
}

/// sin(x) and cos(x) of 4 doubles with |x| < 2^30 (absolute error < 1e-13).
inline void sincos(__m256d x, __m256d& sin_x, __m256d& cos_x) {
    const __m256d n = _mm256_round_pd(_mm256_mul_pd(x, _mm256_set1_pd(0.63661977236758134308)),  // 2/π
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256d r = _mm256_fnmadd_pd(n, _mm256_set1_pd(1.5707963267948966), x);  // π/2, high part
    r = _mm256_fnmadd_pd(n, _mm256_set1_pd(6.123233995736766e-17), r);       // π/2, low part
    const __m256d r2 = _mm256_mul_pd(r, r);
    // sin r = r + r³·(-1/3! + r²/5! - ... + r¹⁰/13!)
    __m256d ps = _mm256_set1_pd(1.0 / 6227020800.0);
    ps = _mm256_fmadd_pd(ps, r2, _mm256_set1_pd(-1.0 / 39916800.0));
    ps = _mm256_fmadd_pd(ps, r2, _mm256_set1_pd(1.0 / 362880.0));
    ps = _mm256_fmadd_pd(ps, r2, _mm256_set1_pd(-1.0 / 5040.0));
    ps = _mm256_fmadd_pd(ps, r2, _mm256_set1_pd(1.0 / 120.0));
    ps = _mm256_fmadd_pd(ps, r2, _mm256_set1_pd(-1.0 / 6.0));
    const __m256d s = _mm256_fmadd_pd(_mm256_mul_pd(ps, r2), r, r);
    // cos r = 1 - r²/2! + r⁴/4! - ... + r¹⁴/14!
    __m256d pc = _mm256_set1_pd(-1.0 / 87178291200.0);
    pc = _mm256_fmadd_pd(pc, r2, _mm256_set1_pd(1.0 / 479001600.0));
    pc = _mm256_fmadd_pd(pc, r2, _mm256_set1_pd(-1.0 / 3628800.0));
    pc = _mm256_fmadd_pd(pc, r2, _mm256_set1_pd(1.0 / 40320.0));
    pc = _mm256_fmadd_pd(pc, r2, _mm256_set1_pd(-1.0 / 720.0));
    pc = _mm256_fmadd_pd(pc, r2, _mm256_set1_pd(1.0 / 24.0));
    pc = _mm256_fmadd_pd(pc, r2, _mm256_set1_pd(-0.5));
    const __m256d c = _mm256_fmadd_pd(pc, r2, _mm256_set1_pd(1.0));
    // quadrant q = n mod 4: (sin, cos) = (s, c), (c, -s), (-s, -c), (-c, s)
    const __m256i q = _mm256_cvtepi32_epi64(_mm256_cvtpd_epi32(n));
    const __m256d odd = _mm256_castsi256_pd(_mm256_cmpeq_epi64(_mm256_and_si256(q, _mm256_set1_epi64x(1)), _mm256_set1_epi64x(1)));
    const __m256d sin_sign = _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_and_si256(q, _mm256_set1_epi64x(2)), 62));
    const __m256d cos_sign = _mm256_castsi256_pd(
        _mm256_slli_epi64(_mm256_and_si256(_mm256_add_epi64(q, _mm256_set1_epi64x(1)), _mm256_set1_epi64x(2)), 62));
    sin_x = _mm256_xor_pd(_mm256_blendv_pd(s, c, odd), sin_sign);
    cos_x = _mm256_xor_pd(_mm256_blendv_pd(c, s, odd), cos_sign);
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

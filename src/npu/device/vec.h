/* The device kernels' vector abstraction: float vectors of TSL_VF_LANES lanes (16 floats, one
 * 512-bit register of the virtual NPU's vector unit, half an HVX 128-byte register).
 *
 * Three implementations behind the same names (kernels only use the functions below and a
 * vector's lanes as .v[i]):
 *   - plain C (the default): a struct of 16 floats and fixed-count lane loops, which compiles
 *     freestanding for Hexagon (-DTESSEL_HEXAGON=ON) and which host compilers auto-vectorise;
 *   - AVX-512 (a translation unit compiled with __AVX512F__, i.e. an ISA-suffixed device file such
 *     as ops_flash_attn_avx512.c, cmake/TesselFlags.cmake): a union of one __m512 and the 16
 *     floats, the functions on intrinsics. TSL_VF_AVX512 is defined then;
 *   - AVX2 (a translation unit compiled with __AVX2__ and __FMA__ but not __AVX512F__, i.e. an
 *     `_avx2`-suffixed device file): a union of two __m256 (lanes 0-7, 8-15) and the 16 floats,
 *     the same operations on 256-bit intrinsics (TSL_VF_AVX2).
 * All give bit-identical results for every input (tests/npu/device_vec_isa_test.cpp runs each):
 * each operation is the same IEEE operation per lane, hsum adds in the same pairwise tree, max/min
 * keep the C form's "b unless a > b (a < b)" rule (that of MAXPS/MINPS), and hmax returns the C
 * loop's lane (the first lane holding the maximum; NaN lanes never win unless lane 0 is NaN).
 * The vector type's alignment differs (64 bytes with AVX-512, 32 with AVX2): no struct shared between
 * translation units holds a tsl_vf.
 *
 * Arithmetic is IEEE single precision lane by lane, each operation rounded once (tsl_vf_madd is a
 * multiply then an add, not fused, so results equal the scalar C expression a * b + c compiled
 * with -ffp-contract=off, tessel's setting).
 *
 * exp and tanh are written here (no libm on the device):
 *   tsl_npu_expf(x): e^x from x = k ln2 + r, |r| <= ln2 / 2 (ln2 split in two parts so k ln2 is
 *     exact; k = x log2e rounded by adding and subtracting 1.5 * 2^23), e^r by its degree-7 Taylor
 *     polynomial (truncation < 5e-9), times 2^k built from the exponent bits (in two steps, so
 *     results down to the subnormal range are right). Relative
 *     error <= 1e-6 for normal results (measured 1.0e-7 on a dense grid, tests/npu/device_vec_test.cpp);
 *     x > 88.72284 gives +inf, x < -103.98 gives 0, NaN stays NaN.
 *   tsl_npu_tanhf(x): the odd Taylor series through x^11 for |x| < 0.25 (no cancellation near 0),
 *     else sign(x) (1 - 2 / (e^{2|x|} + 1)); +-1 from |x| >= 9.1. Relative error <= 1e-6 (measured 2.4e-7).
 * sigmoid and SiLU are built from expf: 1 / (1 + e^-x), x / (1 + e^-x).
 * All three are branch-free (the input clamped first, the special cases -- inf, 0, NaN, tanh's
 * series range -- chosen with lane masks at the end) and written on the compilers' generic
 * vectors: 4 lanes (vector_size(16), which GCC and clang lower to SSE2 / NEON / scalar code) in the
 * plain build, 16 lanes (one zmm register) in the AVX-512 one -- the same lane-wise operations, so
 * the same results; the scalar forms tsl_npu_expf, tsl_npu_tanhf and
 * tsl_npu_sigmoidf are lane 0 of the vector ones (equal results).
 *
 * The integer vectors (int8 x int8 -> int32 dot products of 4-element groups) are vec_i8.h.
 */
#ifndef TESSEL_NPU_DEVICE_VEC_H
#define TESSEL_NPU_DEVICE_VEC_H

#include <stdint.h>

#include "npu/device/half.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#define TSL_VF_AVX512 1
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define TSL_VF_AVX2 1
#endif

#define TSL_VF_LANES 16

#ifdef TSL_VF_AVX512
typedef union tsl_vf {
    __m512 m;
    float v[TSL_VF_LANES];
} tsl_vf;
static inline tsl_vf tsl_vf_of(__m512 m) {
    tsl_vf r;
    r.m = m;
    return r;
}
/* Lanes [0, n) set (0 <= n <= 16). */
static inline __mmask16 tsl_vf_first_n(int n) { return (__mmask16)((1u << n) - 1u); }
#elif defined(TSL_VF_AVX2)
typedef union tsl_vf {
    __m256 h[2]; /* lanes 0..7, 8..15 */
    float v[TSL_VF_LANES];
} tsl_vf;
static inline tsl_vf tsl_vf_of2(__m256 lo, __m256 hi) {
    tsl_vf r;
    r.h[0] = lo;
    r.h[1] = hi;
    return r;
}
/* Half `half`'s lanes among [0, n) as an all-ones mask (0 <= n <= 16). */
static inline __m256i tsl_vf_first_n2(int n, int half) {
    const __m256i idx = _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(8 * half));
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), idx);
}
#else
typedef struct tsl_vf {
    float v[TSL_VF_LANES];
} tsl_vf;
#endif

/* ---- vectors ----------------------------------------------------------------------------- */

static inline tsl_vf tsl_vf_splat(float x) {
#ifdef TSL_VF_AVX512
    return tsl_vf_of(_mm512_set1_ps(x));
#elif defined(TSL_VF_AVX2)
    return tsl_vf_of2(_mm256_set1_ps(x), _mm256_set1_ps(x));
#else
    tsl_vf r;
    for (int i = 0; i < TSL_VF_LANES; ++i) r.v[i] = x;
    return r;
#endif
}

/* p aligned to 64 bytes (a target implementation may use an aligned load). */
static inline tsl_vf tsl_vf_load(const float* p) {
#ifdef TSL_VF_AVX512
    return tsl_vf_of(_mm512_loadu_ps(p));
#elif defined(TSL_VF_AVX2)
    return tsl_vf_of2(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8));
#else
    tsl_vf r;
    __builtin_memcpy(r.v, p, sizeof r.v);
    return r;
#endif
}
/* p aligned to 4 bytes. */
static inline tsl_vf tsl_vf_loadu(const float* p) {
#ifdef TSL_VF_AVX512
    return tsl_vf_of(_mm512_loadu_ps(p));
#elif defined(TSL_VF_AVX2)
    return tsl_vf_of2(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8));
#else
    tsl_vf r;
    __builtin_memcpy(r.v, p, sizeof r.v);
    return r;
#endif
}
/* The first n lanes (0 <= n <= 16) from p, the others `fill`. */
static inline tsl_vf tsl_vf_load_n(const float* p, int n, float fill) {
#ifdef TSL_VF_AVX512
    return tsl_vf_of(_mm512_mask_loadu_ps(_mm512_set1_ps(fill), tsl_vf_first_n(n), p)); /* no fault past n */
#elif defined(TSL_VF_AVX2)
    tsl_vf r;
    for (int h = 0; h < 2; ++h) { /* masked loads: no fault past n */
        const __m256i m = tsl_vf_first_n2(n, h);
        r.h[h] = _mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p + 8 * h, m), _mm256_castsi256_ps(m));
    }
    return r;
#else
    tsl_vf r;
    for (int i = 0; i < TSL_VF_LANES; ++i) r.v[i] = i < n ? p[i] : fill;
    return r;
#endif
}
/* 16 int8 values from p (any alignment) as floats (exact). */
static inline tsl_vf tsl_vf_load_i8(const int8_t* p) {
#ifdef TSL_VF_AVX512
    return tsl_vf_of(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i*)(const void*)p))));
#elif defined(TSL_VF_AVX2)
    const __m128i b = _mm_loadu_si128((const __m128i*)(const void*)p);
    return tsl_vf_of2(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b)), _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(b, 8))));
#else
    tsl_vf r;
    for (int i = 0; i < TSL_VF_LANES; ++i) r.v[i] = (float)p[i];
    return r;
#endif
}
static inline void tsl_vf_store(float* p, tsl_vf a) { __builtin_memcpy(p, a.v, sizeof a.v); }
static inline void tsl_vf_storeu(float* p, tsl_vf a) { __builtin_memcpy(p, a.v, sizeof a.v); }
/* Stores the first n lanes (0 <= n <= 16). */
static inline void tsl_vf_store_n(float* p, tsl_vf a, int n) {
#ifdef TSL_VF_AVX512
    _mm512_mask_storeu_ps(p, tsl_vf_first_n(n), a.m);
#elif defined(TSL_VF_AVX2)
    for (int h = 0; h < 2; ++h) _mm256_maskstore_ps(p + 8 * h, tsl_vf_first_n2(n, h), a.h[h]);
#else
    for (int i = 0; i < n; ++i) p[i] = a.v[i];
#endif
}

#ifdef TSL_VF_AVX512
#define TSL_VF_LANEWISE2(name, expr, op) \
    static inline tsl_vf name(tsl_vf a, tsl_vf b) { return tsl_vf_of(_mm512_##op(a.m, b.m)); }
#elif defined(TSL_VF_AVX2)
#define TSL_VF_LANEWISE2(name, expr, op) \
    static inline tsl_vf name(tsl_vf a, tsl_vf b) { return tsl_vf_of2(_mm256_##op(a.h[0], b.h[0]), _mm256_##op(a.h[1], b.h[1])); }
#else
#define TSL_VF_LANEWISE2(name, expr, op)                        \
    static inline tsl_vf name(tsl_vf a, tsl_vf b) {             \
        tsl_vf r;                                               \
        for (int i = 0; i < TSL_VF_LANES; ++i) r.v[i] = (expr); \
        return r;                                               \
    }
#endif
TSL_VF_LANEWISE2(tsl_vf_add, a.v[i] + b.v[i], add_ps)
TSL_VF_LANEWISE2(tsl_vf_sub, a.v[i] - b.v[i], sub_ps)
TSL_VF_LANEWISE2(tsl_vf_mul, a.v[i] * b.v[i], mul_ps)
TSL_VF_LANEWISE2(tsl_vf_div, a.v[i] / b.v[i], div_ps)
/* max/min: b when the comparison is false (so a NaN in a gives b; MAXPS/MINPS's rule too) */
TSL_VF_LANEWISE2(tsl_vf_max, a.v[i] > b.v[i] ? a.v[i] : b.v[i], max_ps)
TSL_VF_LANEWISE2(tsl_vf_min, a.v[i] < b.v[i] ? a.v[i] : b.v[i], min_ps)
#undef TSL_VF_LANEWISE2

/* a * b + c, two roundings. */
static inline tsl_vf tsl_vf_madd(tsl_vf a, tsl_vf b, tsl_vf c) {
#ifdef TSL_VF_AVX512
    return tsl_vf_of(_mm512_add_ps(_mm512_mul_ps(a.m, b.m), c.m));
#elif defined(TSL_VF_AVX2)
    return tsl_vf_of2(_mm256_add_ps(_mm256_mul_ps(a.h[0], b.h[0]), c.h[0]), _mm256_add_ps(_mm256_mul_ps(a.h[1], b.h[1]), c.h[1]));
#else
    tsl_vf r;
    for (int i = 0; i < TSL_VF_LANES; ++i) r.v[i] = a.v[i] * b.v[i] + c.v[i];
    return r;
#endif
}

/* Lanes where a < b take x, the others y. */
static inline tsl_vf tsl_vf_select_lt(tsl_vf a, tsl_vf b, tsl_vf x, tsl_vf y) {
#ifdef TSL_VF_AVX512
    return tsl_vf_of(_mm512_mask_blend_ps(_mm512_cmp_ps_mask(a.m, b.m, _CMP_LT_OQ), y.m, x.m));
#elif defined(TSL_VF_AVX2)
    tsl_vf r;
    for (int h = 0; h < 2; ++h) r.h[h] = _mm256_blendv_ps(y.h[h], x.h[h], _mm256_cmp_ps(a.h[h], b.h[h], _CMP_LT_OQ));
    return r;
#else
    tsl_vf r;
    for (int i = 0; i < TSL_VF_LANES; ++i) r.v[i] = a.v[i] < b.v[i] ? x.v[i] : y.v[i];
    return r;
#endif
}

/* a with the lanes from n on (0 <= n <= 16) replaced by `fill`. */
static inline tsl_vf tsl_vf_keep_n(tsl_vf a, int n, float fill) {
#ifdef TSL_VF_AVX512
    return tsl_vf_of(_mm512_mask_blend_ps(tsl_vf_first_n(n), _mm512_set1_ps(fill), a.m));
#elif defined(TSL_VF_AVX2)
    for (int h = 0; h < 2; ++h)
        a.h[h] = _mm256_blendv_ps(_mm256_set1_ps(fill), a.h[h], _mm256_castsi256_ps(tsl_vf_first_n2(n, h)));
    return a;
#else
    for (int i = n; i < TSL_VF_LANES; ++i) a.v[i] = fill;
    return a;
#endif
}

/* Whether some lane has !(a < b) (a >= b, or either NaN). */
static inline int tsl_vf_any_nlt(tsl_vf a, tsl_vf b) {
#ifdef TSL_VF_AVX512
    return _mm512_cmp_ps_mask(a.m, b.m, _CMP_NLT_UQ) != 0;
#elif defined(TSL_VF_AVX2)
    return _mm256_movemask_ps(_mm256_or_ps(_mm256_cmp_ps(a.h[0], b.h[0], _CMP_NLT_UQ), _mm256_cmp_ps(a.h[1], b.h[1], _CMP_NLT_UQ))) != 0;
#else
    int any = 0;
    for (int i = 0; i < TSL_VF_LANES; ++i) any |= !(a.v[i] < b.v[i]);
    return any;
#endif
}

/* Transposes the 16 x 16 matrix whose row i is m[i], in place: afterwards lane j of m[i] holds
 * what lane i of m[j] held. */
static inline void tsl_vf_transpose16(tsl_vf* m) {
#ifdef TSL_VF_AVX512
    __m512 t[16], u[16];
    for (int i = 0; i < 16; i += 2) { /* per 128-bit lane: rows i, i + 1 interleaved */
        t[i] = _mm512_unpacklo_ps(m[i].m, m[i + 1].m);
        t[i + 1] = _mm512_unpackhi_ps(m[i].m, m[i + 1].m);
    }
    for (int g = 0; g < 4; ++g) { /* u[4g + c], 128-bit lane L: column 4L + c of rows 4g .. 4g + 3 */
        u[4 * g] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
        u[4 * g + 1] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0xee);
        u[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
        u[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xee);
    }
    for (int c = 0; c < 4; ++c) { /* column 4L + c: 128-bit lane L of u[c], u[4 + c], u[8 + c], u[12 + c] */
        const __m512 x0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x88), x1 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xdd);
        const __m512 y0 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x88);
        const __m512 y1 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xdd);
        m[c].m = _mm512_shuffle_f32x4(x0, y0, 0x88);
        m[4 + c].m = _mm512_shuffle_f32x4(x1, y1, 0x88);
        m[8 + c].m = _mm512_shuffle_f32x4(x0, y0, 0xdd);
        m[12 + c].m = _mm512_shuffle_f32x4(x1, y1, 0xdd);
    }
#elif defined(TSL_VF_AVX2)
    /* four 8 x 8 blocks: (rows 0-7 | 8-15) x (lanes 0-7 | 8-15); the off-diagonal ones swap */
    __m256 blk[4][8];
    for (int r = 0; r < 8; ++r) {
        blk[0][r] = m[r].h[0];
        blk[1][r] = m[r].h[1];
        blk[2][r] = m[8 + r].h[0];
        blk[3][r] = m[8 + r].h[1];
    }
    for (int b = 0; b < 4; ++b) {
        __m256* x = blk[b];
        __m256 t[8], u[8];
        for (int i = 0; i < 8; i += 2) {
            t[i] = _mm256_unpacklo_ps(x[i], x[i + 1]);
            t[i + 1] = _mm256_unpackhi_ps(x[i], x[i + 1]);
        }
        for (int g = 0; g < 2; ++g) { /* u[4g + c], 128-bit lane L: column 4L + c of rows 4g .. 4g + 3 */
            u[4 * g] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
            u[4 * g + 1] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], 0xee);
            u[4 * g + 2] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
            u[4 * g + 3] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xee);
        }
        for (int c = 0; c < 4; ++c) {
            x[c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x20);
            x[4 + c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x31);
        }
    }
    for (int r = 0; r < 8; ++r) {
        m[r].h[0] = blk[0][r];
        m[r].h[1] = blk[2][r];
        m[8 + r].h[0] = blk[1][r];
        m[8 + r].h[1] = blk[3][r];
    }
#else
    for (int i = 0; i < TSL_VF_LANES; ++i)
        for (int j = i + 1; j < TSL_VF_LANES; ++j) {
            const float x = m[i].v[j];
            m[i].v[j] = m[j].v[i];
            m[j].v[i] = x;
        }
#endif
}

/* Horizontal sum (pairwise tree: lanes i and i + 8, then i + 4, ...) and maximum. */
static inline float tsl_vf_hsum(tsl_vf a) {
#ifdef TSL_VF_AVX512
    const __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(a.m), _mm512_extractf32x8_ps(a.m, 1));
    const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
#elif defined(TSL_VF_AVX2)
    const __m256 s8 = _mm256_add_ps(a.h[0], a.h[1]);
    const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
#else
    for (int w = TSL_VF_LANES / 2; w >= 1; w /= 2)
        for (int i = 0; i < w; ++i) a.v[i] += a.v[i + w];
    return a.v[0];
#endif
}
static inline float tsl_vf_hmax(tsl_vf a) {
#ifdef TSL_VF_AVX512
    if (!(a.v[0] == a.v[0])) return a.v[0]; /* a NaN in lane 0 is never replaced */
    /* other NaN lanes never win: as -inf they cannot beat lane 0 */
    const __m512 x = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a.m, a.m, _CMP_UNORD_Q), a.m,
                                          _mm512_set1_ps(tsl_npu_f32_of_bits(0xff800000u)));
    const float mx = _mm512_reduce_max_ps(x);
    /* the C loop keeps the first lane holding the maximum (the sign of a zero maximum) */
    return a.v[__builtin_ctz(_mm512_cmp_ps_mask(x, _mm512_set1_ps(mx), _CMP_EQ_OQ))];
#elif defined(TSL_VF_AVX2)
    if (!(a.v[0] == a.v[0])) return a.v[0]; /* as the AVX-512 form: NaN lanes as -inf, lane 0 NaN wins */
    const __m256 ninf = _mm256_set1_ps(tsl_npu_f32_of_bits(0xff800000u));
    const __m256 x0 = _mm256_blendv_ps(a.h[0], ninf, _mm256_cmp_ps(a.h[0], a.h[0], _CMP_UNORD_Q));
    const __m256 x1 = _mm256_blendv_ps(a.h[1], ninf, _mm256_cmp_ps(a.h[1], a.h[1], _CMP_UNORD_Q));
    const __m256 m8 = _mm256_max_ps(x0, x1);
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m8), _mm256_extractf128_ps(m8, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
    const __m256 mx = _mm256_set1_ps(_mm_cvtss_f32(m4));
    const int eq = _mm256_movemask_ps(_mm256_cmp_ps(x0, mx, _CMP_EQ_OQ)) | (_mm256_movemask_ps(_mm256_cmp_ps(x1, mx, _CMP_EQ_OQ)) << 8);
    return a.v[__builtin_ctz((unsigned)eq)];
#else
    float m = a.v[0];
    for (int i = 1; i < TSL_VF_LANES; ++i) m = a.v[i] > m ? a.v[i] : m;
    return m;
#endif
}

/* ---- exp, tanh, sigmoid ------------------------------------------------------------------- */
/* Written on the compilers' generic vectors (GCC / clang vector_size; lowered to whatever the
 * target has: 4 SSE registers on a baseline x86-64 host, one zmm register in an AVX-512
 * translation unit, scalar code on Hexagon v67), branch-free:
 * the input is clamped first and the special cases (inf, 0, NaN, tanh's series range) are picked
 * with lane masks at the end. */

#ifdef TSL_VF_AVX512
typedef float tsl_vf_raw __attribute__((vector_size(64)));
typedef int32_t tsl_vi_raw __attribute__((vector_size(64)));
#define TSL_VF_RAW_LANES 16 /* the whole tsl_vf: one zmm register */
#elif defined(TSL_VF_AVX2)
typedef float tsl_vf_raw __attribute__((vector_size(32)));
typedef int32_t tsl_vi_raw __attribute__((vector_size(32)));
#define TSL_VF_RAW_LANES 8 /* half a tsl_vf: one ymm register */
#else
typedef float tsl_vf_raw __attribute__((vector_size(16)));
typedef int32_t tsl_vi_raw __attribute__((vector_size(16)));
#define TSL_VF_RAW_LANES 4 /* a part of a tsl_vf: 16-byte vectors map onto any SIMD unit (SSE2, NEON) */
#endif

/* Lanes where mask is all ones take a, the others b. */
#define TSL_VF_RAW_PICK(mask, a, b) ((tsl_vf_raw)(((tsl_vi_raw)(a) & (mask)) | ((tsl_vi_raw)(b) & ~(mask))))

static inline tsl_vf_raw tsl_vf_raw_exp(tsl_vf_raw x) {
    const float hi = 88.72283935546875f; /* above: +inf */
    const float lo = -103.98f;           /* below: 0 */
    const float ln2_hi = 0.693359375f;    /* 9 significant bits: k * ln2_hi is exact */
    const float ln2_lo = -2.12194440e-4f; /* ln2 - ln2_hi */
    const float round_shift = 12582912.0f; /* 1.5 * 2^23: t + it - it is t rounded to an integer */
    const tsl_vi_raw izero = (tsl_vi_raw)x ^ (tsl_vi_raw)x;
    const tsl_vf_raw zero = (tsl_vf_raw)izero;
    /* lanes whose result is picked below (inf, 0, NaN) compute e^0: the conversion below stays
     * defined, and -inf inputs (masked logits) do not go through subnormal products, which cost
     * microcode assists on x86 */
    const tsl_vf_raw xc = TSL_VF_RAW_PICK((x <= hi) & (x >= lo), x, zero);
    const tsl_vf_raw t = xc * 1.44269502f;
    const tsl_vf_raw kf = (t + round_shift) - round_shift;
    const tsl_vi_raw k = __builtin_convertvector(kf, tsl_vi_raw); /* -150 .. 128 */
    const tsl_vf_raw r = (xc - kf * ln2_hi) - kf * ln2_lo;
    tsl_vf_raw p = r * (1.0f / 5040.0f) + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    /* 2^k = 2^k1 * 2^k2 with both halves in the normal exponent range */
    const tsl_vi_raw k1 = k >> 1;
    const tsl_vi_raw k2 = k - k1;
    tsl_vf_raw e = p * (tsl_vf_raw)((k1 + 127) << 23) * (tsl_vf_raw)((k2 + 127) << 23);
    e = TSL_VF_RAW_PICK(x > hi, (tsl_vf_raw)(izero + 0x7f800000), e);
    e = TSL_VF_RAW_PICK(x < lo, zero, e);
    return TSL_VF_RAW_PICK(x != x, x, e);
}

static inline tsl_vf_raw tsl_vf_raw_tanh(tsl_vf_raw x) {
    const tsl_vi_raw sign = (tsl_vi_raw)x & (int32_t)0x80000000u;
    const tsl_vf_raw a = (tsl_vf_raw)((tsl_vi_raw)x & 0x7fffffff);
    /* |x| < 0.25: tanh x = x - x^3/3 + 2x^5/15 - 17x^7/315 + 62x^9/2835 - 1382x^11/155925 */
    const tsl_vf_raw x2 = x * x;
    tsl_vf_raw p = x2 * (-1382.0f / 155925.0f) + 62.0f / 2835.0f;
    p = p * x2 - 17.0f / 315.0f;
    p = p * x2 + 2.0f / 15.0f;
    p = p * x2 - 1.0f / 3.0f;
    const tsl_vf_raw small = x + x * x2 * p;
    /* else sign(x) (1 - 2 / (e^{2|x|} + 1)), and +-1 from |x| >= 9.1 (NaN lanes replaced below) */
    const tsl_vf_raw one = (tsl_vf_raw)(sign ^ sign) + 1.0f;
    const tsl_vf_raw ac = TSL_VF_RAW_PICK(a < 9.1f, a, one * 9.1f);
    tsl_vf_raw big = 1.0f - 2.0f / (tsl_vf_raw_exp(ac + ac) + 1.0f);
    big = TSL_VF_RAW_PICK(ac < 9.1f, big, one);
    const tsl_vf_raw r = TSL_VF_RAW_PICK(a < 0.25f, small, (tsl_vf_raw)((tsl_vi_raw)big | sign));
    return TSL_VF_RAW_PICK(x != x, x, r);
}

static inline tsl_vf_raw tsl_vf_raw_sigmoid(tsl_vf_raw x) { return 1.0f / (1.0f + tsl_vf_raw_exp(-x)); }

/* tsl_vf versions: the function on each 4-lane part. */
#define TSL_VF_RAW_MAP(name, raw_fn)                                          \
    static inline tsl_vf name(tsl_vf a) {                                     \
        for (int i = 0; i < TSL_VF_LANES; i += TSL_VF_RAW_LANES) {            \
            tsl_vf_raw x;                                                     \
            __builtin_memcpy(&x, a.v + i, sizeof x);                          \
            x = raw_fn(x);                                                    \
            __builtin_memcpy(a.v + i, &x, sizeof x);                          \
        }                                                                     \
        return a;                                                             \
    }
TSL_VF_RAW_MAP(tsl_vf_exp, tsl_vf_raw_exp)
TSL_VF_RAW_MAP(tsl_vf_tanh, tsl_vf_raw_tanh)
TSL_VF_RAW_MAP(tsl_vf_sigmoid, tsl_vf_raw_sigmoid)
#undef TSL_VF_RAW_MAP

/* The same functions on one float (lane 0 of a splat: results equal the vector lanes'). */
static inline float tsl_npu_expf(float x) { return tsl_vf_exp(tsl_vf_splat(x)).v[0]; }
static inline float tsl_npu_tanhf(float x) { return tsl_vf_tanh(tsl_vf_splat(x)).v[0]; }
static inline float tsl_npu_sigmoidf(float x) { return tsl_vf_sigmoid(tsl_vf_splat(x)).v[0]; }

#endif /* TESSEL_NPU_DEVICE_VEC_H */

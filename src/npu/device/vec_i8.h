/* The device kernels' int8 vector abstraction (the integer half of vec.h's float vectors): byte
 * vectors of TSL_VU8_LANES unsigned lanes and int32 vectors of TSL_VI32_LANES = TSL_VU8_LANES / 4
 * lanes (64 and 16; 128 and 32 on Hexagon HVX),
 * with dot products of 4-element groups: int32 lane i accumulates
 *     sum_{t<4} u8 lane (4i + t) x s8 value t of its group,
 * the shape of x86 AVX-512 VNNI `vpdpbusd` (unsigned x signed bytes) and of Hexagon HVX `vrmpy`
 * (a vector of unsigned bytes times four signed bytes). Kernels keep weights in the unsigned
 * operand (an offset code, e.g. q + 128, corrected with the activation block sum) and Q8
 * activations in the signed one.
 *
 * Plain C by default (freestanding, builds for Hexagon: -DTESSEL_HEXAGON=ON); a translation
 * unit compiled with AVX-512 BW + VNNI (the matmul's _avx512 kernel) gets the same functions on
 * intrinsics, one compiled with HVX (128-byte vectors, the _hvx kernels) on HVX vrmpy, whose
 * unsigned-by-signed byte form (vrmpybus, Hexagon V6 HVX Programmer's Reference) sums the same four
 * products per 32-bit lane. Results are identical: integer arithmetic has no rounding, and the sums stay far
 * below 2^31 for the kernels' 32-element blocks (|sum| <= 32 * 255 * 128).
 *
 * Also here: Q8 quantization of activations, bit-exact with tessel's Q8_0 reference quantizer
 * (src/quant/quant_legacy.cpp, after ggml's quantize_row_q8_0_ref): per block of 32,
 * d = amax / 127 in float, q = round-half-away-from-zero(x * (1/d)) (0 when d = 0), d stored as
 * fp16 (round to nearest even).
 */
#ifndef TESSEL_NPU_DEVICE_VEC_I8_H
#define TESSEL_NPU_DEVICE_VEC_I8_H

#include <stdint.h>

#include "npu/device/half.h"

#if defined(__AVX512BW__) && defined(__AVX512VNNI__)
#include <immintrin.h>
#define TSL_VI8_AVX512 1
#elif defined(__AVX2__) && defined(__F16C__)
#include <immintrin.h>
#define TSL_VI8_AVX2 1 /* only the quantizer below; the AVX2 matmul kernel has its own dot products */
#elif defined(__HVX__) && __HVX_LENGTH__ == 128
#include <hvx_hexagon_protos.h>
#define TSL_VI8_HVX 1
#endif

#ifdef TSL_VI8_HVX
#define TSL_VU8_LANES 128
#else
#define TSL_VU8_LANES 64
#endif
#define TSL_VI32_LANES (TSL_VU8_LANES / 4)

#ifdef TSL_VI8_AVX512
typedef __m512i tsl_vu8;
typedef __m512i tsl_vi32;
#elif defined(TSL_VI8_HVX)
typedef int32_t tsl_vu8 __attribute__((__vector_size__(128)));
typedef int32_t tsl_vi32 __attribute__((__vector_size__(128)));
typedef int32_t tsl_hvx_unaligned __attribute__((__vector_size__(128), __aligned__(1)));
#else
typedef struct tsl_vu8 {
    uint8_t v[TSL_VU8_LANES];
} tsl_vu8;
typedef struct tsl_vi32 {
    int32_t v[TSL_VI32_LANES];
} tsl_vi32;
#endif

/* TSL_VU8_LANES bytes from p (any alignment). */
static inline tsl_vu8 tsl_vu8_loadu(const uint8_t* p) {
#ifdef TSL_VI8_AVX512
    return _mm512_loadu_si512((const void*)p);
#elif defined(TSL_VI8_HVX)
    return *(const tsl_hvx_unaligned*)(const void*)p;
#else
    tsl_vu8 r;
    __builtin_memcpy(r.v, p, sizeof r.v);
    return r;
#endif
}

static inline tsl_vi32 tsl_vi32_zero(void) {
#ifdef TSL_VI8_AVX512
    return _mm512_setzero_si512();
#elif defined(TSL_VI8_HVX)
    return Q6_V_vzero();
#else
    tsl_vi32 r;
    for (int i = 0; i < TSL_VI32_LANES; ++i) r.v[i] = 0;
    return r;
#endif
}

/* acc lane i += sum_t a[4i + t] * b[4i + t]: a unsigned, b the TSL_VU8_LANES signed bytes at p. */
static inline tsl_vi32 tsl_vi32_dot4(tsl_vi32 acc, tsl_vu8 a, const int8_t* b) {
#ifdef TSL_VI8_AVX512
    return _mm512_dpbusd_epi32(acc, a, _mm512_loadu_si512((const void*)b));
#elif defined(TSL_VI8_HVX)
    return Q6_Vw_vrmpyacc_VwVubVb(acc, a, *(const tsl_hvx_unaligned*)(const void*)b);
#else
    for (int i = 0; i < TSL_VI32_LANES; ++i)
        for (int t = 0; t < 4; ++t) acc.v[i] += (int32_t)a.v[4 * i + t] * (int32_t)b[4 * i + t];
    return acc;
#endif
}

/* acc lane i += sum_t a[4i + t] * x4[t]: every group against the same four signed bytes. */
static inline tsl_vi32 tsl_vi32_dot4_bcast(tsl_vi32 acc, tsl_vu8 a, const int8_t* x4) {
#ifdef TSL_VI8_AVX512
    int32_t g;
    __builtin_memcpy(&g, x4, 4);
    return _mm512_dpbusd_epi32(acc, a, _mm512_set1_epi32(g));
#elif defined(TSL_VI8_HVX)
    int32_t g;
    __builtin_memcpy(&g, x4, 4);
    return Q6_Vw_vrmpyacc_VwVubRb(acc, a, g);
#else
    for (int i = 0; i < TSL_VI32_LANES; ++i)
        for (int t = 0; t < 4; ++t) acc.v[i] += (int32_t)a.v[4 * i + t] * (int32_t)x4[t];
    return acc;
#endif
}

/* Lanes as int32 values (out: TSL_VI32_LANES). */
static inline void tsl_vi32_store(int32_t* out, tsl_vi32 a) {
#ifdef TSL_VI8_AVX512
    _mm512_storeu_si512((void*)out, a);
#elif defined(TSL_VI8_HVX)
    *(tsl_hvx_unaligned*)(void*)out = a;
#else
    __builtin_memcpy(out, a.v, sizeof a.v);
#endif
}

/* Scalar int8 x int8 dot product of n elements (the reference of the vector forms). */
static inline int32_t tsl_npu_dot_i8(const int8_t* a, const int8_t* b, int n) {
    int32_t s = 0;
    for (int i = 0; i < n; ++i) s += (int32_t)a[i] * (int32_t)b[i];
    return s;
}

/* round-half-away-from-zero(v) as int8, for |v| <= 127.5 (NaN: 0, as tessel's reference). */
static inline int8_t tsl_npu_round_q8(float v) {
    if (!(v > -2147483648.0f && v < 2147483648.0f)) return 0;
    const float a = v < 0.0f ? -v : v;
    int32_t i = (int32_t)a; /* truncation; a - i is exact below 2^23 */
    if (a - (float)i >= 0.5f) ++i;
    return (int8_t)(v < 0.0f ? -i : i);
}

/* One block of 32 floats -> 32 quants q and their sum *qsum; returns d as fp16 bits. */
static inline uint16_t tsl_npu_quantize_q8_block(const float* x, int8_t* q, int32_t* qsum) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) {
        const float a = tsl_npu_f32_of_bits(tsl_npu_f32_bits(x[j]) & 0x7fffffffu); /* fabs, -0 -> +0 */
        amax = amax > a ? amax : a;
    }
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int32_t s = 0;
    for (int j = 0; j < 32; ++j) {
        q[j] = tsl_npu_round_q8(x[j] * id);
        s += q[j];
    }
    *qsum = s;
    return tsl_npu_float_to_half(d);
}

#ifdef TSL_VI8_AVX512
/* Block x's 32 quants at q from its inverse scale id (as tsl_npu_quantize_q8_block: the same IEEE
 * product per lane, the same truncate-then-compare rounding, |v| < 2^31 else 0 (Inf * 0)); returns
 * their sum (exact). */
static inline int32_t tsl_npu_q8_quants_avx512(const float* x, float id, int8_t* q) {
    __m512i qi[2];
    for (int h = 0; h < 2; ++h) {
        const __m512 v = _mm512_mul_ps(_mm512_loadu_ps(x + 16 * h), _mm512_set1_ps(id));
        const __m512 a = _mm512_abs_ps(v);
        const __mmask16 ok = _mm512_cmp_ps_mask(a, _mm512_set1_ps(2147483648.0f), _CMP_LT_OQ);
        __m512i i = _mm512_maskz_cvttps_epi32(ok, a);
        const __mmask16 up = _mm512_cmp_ps_mask(_mm512_sub_ps(a, _mm512_cvtepi32_ps(i)), _mm512_set1_ps(0.5f), _CMP_GE_OQ);
        i = _mm512_mask_add_epi32(i, up & ok, i, _mm512_set1_epi32(1));
        const __mmask16 neg = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ);
        qi[h] = _mm512_mask_sub_epi32(i, neg, _mm512_setzero_si512(), i);
        _mm_storeu_si128((__m128i*)(void*)(q + 16 * h), _mm512_cvtepi32_epi8(qi[h]));
    }
    return _mm512_reduce_add_epi32(_mm512_add_epi32(qi[0], qi[1]));
}

/* One block as tsl_npu_quantize_q8_block, bit-exact with it (d and 1 / d the same scalar float
 * operations; a block holding a NaN takes the scalar form). */
static inline uint16_t tsl_npu_quantize_q8_block_avx512(const float* x, int8_t* q, int32_t* qsum) {
    const __m512 lo = _mm512_loadu_ps(x), hi = _mm512_loadu_ps(x + 16);
    if (_mm512_cmp_ps_mask(lo, lo, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(hi, hi, _CMP_UNORD_Q))
        return tsl_npu_quantize_q8_block(x, q, qsum);
    const float d = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(lo), _mm512_abs_ps(hi))) / 127.0f;
    *qsum = tsl_npu_q8_quants_avx512(x, d != 0.0f ? 1.0f / d : 0.0f, q);
    return tsl_npu_float_to_half(d);
}

/* 16 consecutive blocks (512 floats) as tsl_npu_quantize_q8_row quantizes them, bit-exact with
 * tsl_npu_quantize_q8_block: each amax is a maximum (exact in any order); d = amax / 127, 1 / d and
 * d's fp16 rounding (IEEE round to nearest even, F16C) are the same IEEE operations done 16 blocks
 * at a time. A block holding a NaN is redone by the scalar form (its amax depends on the order). */
static inline void tsl_npu_quantize_q8_16_avx512(const float* x, int8_t* q, float* d, int32_t* sums) {
    _Alignas(64) float amax[16], id[16];
    __mmask16 nan = 0;
    for (int b = 0; b < 16; ++b) {
        const __m512 lo = _mm512_loadu_ps(x + 32 * b), hi = _mm512_loadu_ps(x + 32 * b + 16);
        if (_mm512_cmp_ps_mask(lo, lo, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(hi, hi, _CMP_UNORD_Q)) nan |= (__mmask16)(1u << b);
        amax[b] = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(lo), _mm512_abs_ps(hi)));
    }
    const __m512 dv = _mm512_div_ps(_mm512_load_ps(amax), _mm512_set1_ps(127.0f));
    const __mmask16 nz = _mm512_cmp_ps_mask(dv, _mm512_setzero_ps(), _CMP_NEQ_UQ);
    _mm512_store_ps(id, _mm512_maskz_div_ps(nz, _mm512_set1_ps(1.0f), dv));
    _mm512_storeu_ps(d, _mm512_cvtph_ps(_mm512_cvtps_ph(dv, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
    for (int b = 0; b < 16; ++b) {
        if (nan & (1u << b)) {
            d[b] = tsl_npu_half_to_float(tsl_npu_quantize_q8_block(x + 32 * b, q + 32 * b, &sums[b]));
            continue;
        }
        sums[b] = tsl_npu_q8_quants_avx512(x + 32 * b, id[b], q + 32 * b);
    }
}
#endif

#ifdef TSL_VI8_AVX2
/* Block x's 32 quants at q from its inverse scale id, as tsl_npu_q8_quants_avx512 computes them (the
 * same IEEE product, truncate-then-compare rounding and |v| < 2^31 test per lane) on four 8-lane
 * vectors; returns their sum (exact). */
static inline int32_t tsl_npu_q8_quants_avx2(const float* x, float id, int8_t* q) {
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256i qi[4];
    for (int h = 0; h < 4; ++h) {
        const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + 8 * h), _mm256_set1_ps(id));
        const __m256 a = _mm256_and_ps(v, abs_mask);
        const __m256i ok = _mm256_castps_si256(_mm256_cmp_ps(a, _mm256_set1_ps(2147483648.0f), _CMP_LT_OQ));
        __m256i i = _mm256_and_si256(_mm256_cvttps_epi32(a), ok);
        const __m256i up = _mm256_castps_si256(
            _mm256_cmp_ps(_mm256_sub_ps(a, _mm256_cvtepi32_ps(i)), _mm256_set1_ps(0.5f), _CMP_GE_OQ));
        i = _mm256_sub_epi32(i, _mm256_and_si256(up, ok)); /* a true mask is -1 */
        const __m256i neg = _mm256_castps_si256(_mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ));
        qi[h] = _mm256_sub_epi32(_mm256_xor_si256(i, neg), neg); /* negated where v < 0 */
    }
    /* |q| <= 127: the saturating packs are exact; they interleave 128-bit lanes, undone by the permute */
    const __m256i w01 = _mm256_packs_epi32(qi[0], qi[1]), w23 = _mm256_packs_epi32(qi[2], qi[3]);
    const __m256i b = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(w01, w23), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i*)(void*)q, b);
    __m256i s = _mm256_add_epi32(_mm256_add_epi32(qi[0], qi[1]), _mm256_add_epi32(qi[2], qi[3]));
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
    return _mm_cvtsi128_si32(s4);
}

/* The largest |x| of block x (32 floats; exact in any order when no lane is NaN); *has_nan: whether
 * one is. */
static inline float tsl_npu_q8_amax_avx2(const float* x, int* has_nan) {
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 m = _mm256_setzero_ps(), un = _mm256_setzero_ps();
    for (int h = 0; h < 4; ++h) {
        const __m256 v = _mm256_loadu_ps(x + 8 * h);
        un = _mm256_or_ps(un, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
        m = _mm256_max_ps(m, _mm256_and_ps(v, abs_mask));
    }
    *has_nan = _mm256_movemask_ps(un) != 0;
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
    return _mm_cvtss_f32(m4);
}

/* One block as tsl_npu_quantize_q8_block, bit-exact with it (d and 1 / d the same scalar float
 * operations; a block holding a NaN takes the scalar form). */
static inline uint16_t tsl_npu_quantize_q8_block_avx2(const float* x, int8_t* q, int32_t* qsum) {
    int has_nan;
    const float amax = tsl_npu_q8_amax_avx2(x, &has_nan);
    if (has_nan) return tsl_npu_quantize_q8_block(x, q, qsum);
    const float d = amax / 127.0f;
    *qsum = tsl_npu_q8_quants_avx2(x, d != 0.0f ? 1.0f / d : 0.0f, q);
    return tsl_npu_float_to_half(d);
}

/* 8 consecutive blocks (256 floats) as tsl_npu_quantize_q8_row quantizes them, bit-exact with
 * tsl_npu_quantize_q8_block: each amax a maximum of absolute values (exact in any order), then
 * d = amax / 127, 1 / d and d's fp16 rounding (F16C, round to nearest even) for the 8 blocks at
 * once. A block holding a NaN is redone by the scalar form (its amax depends on the order). */
static inline void tsl_npu_quantize_q8_8_avx2(const float* x, int8_t* q, float* d, int32_t* sums) {
    _Alignas(32) float amax[8], id[8];
    uint32_t nan = 0;
    for (int b = 0; b < 8; ++b) {
        int has_nan;
        amax[b] = tsl_npu_q8_amax_avx2(x + 32 * b, &has_nan);
        if (has_nan) nan |= 1u << b;
    }
    const __m256 dv = _mm256_div_ps(_mm256_load_ps(amax), _mm256_set1_ps(127.0f));
    const __m256 nz = _mm256_cmp_ps(dv, _mm256_setzero_ps(), _CMP_NEQ_UQ);
    _mm256_store_ps(id, _mm256_and_ps(_mm256_div_ps(_mm256_set1_ps(1.0f), dv), nz));
    _mm256_storeu_ps(d, _mm256_cvtph_ps(_mm256_cvtps_ph(dv, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
    for (int b = 0; b < 8; ++b) {
        if (nan & (1u << b)) {
            d[b] = tsl_npu_half_to_float(tsl_npu_quantize_q8_block(x + 32 * b, q + 32 * b, &sums[b]));
            continue;
        }
        sums[b] = tsl_npu_q8_quants_avx2(x + 32 * b, id[b], q + 32 * b);
    }
}
#endif

/* A row of k floats (k % 32 == 0) -> k quants, k/32 scales (the fp16 d widened to float, as the
 * Q8_0 block stores it) and k/32 quant sums. Same bits in every form (plain C; AVX-512: 16
 * blocks at a time, then one at a time; AVX2: 8 at a time, then one at a time). */
static inline void tsl_npu_quantize_q8_row(const float* x, int64_t k, int8_t* q, float* d, int32_t* sums) {
    int64_t b = 0;
#if defined(TSL_VI8_AVX512)
    for (; b + 16 <= k / 32; b += 16) tsl_npu_quantize_q8_16_avx512(x + 32 * b, q + 32 * b, d + b, sums + b);
    for (; b < k / 32; ++b) d[b] = tsl_npu_half_to_float(tsl_npu_quantize_q8_block_avx512(x + 32 * b, q + 32 * b, &sums[b]));
#elif defined(TSL_VI8_AVX2)
    for (; b + 8 <= k / 32; b += 8) tsl_npu_quantize_q8_8_avx2(x + 32 * b, q + 32 * b, d + b, sums + b);
    for (; b < k / 32; ++b) d[b] = tsl_npu_half_to_float(tsl_npu_quantize_q8_block_avx2(x + 32 * b, q + 32 * b, &sums[b]));
#else
    for (; b < k / 32; ++b) d[b] = tsl_npu_half_to_float(tsl_npu_quantize_q8_block(x + 32 * b, q + 32 * b, &sums[b]));
#endif
}

#ifdef TSL_VI8_AVX512
/* tsl_vi32_scale_acc below on registers: returns fma((float)(s - off), d * dx, acc), then
 * fma(*m, msx, that) (m NULL: no min term), the same operations in the same order. */
static inline __m512 tsl_vi32_scale_acc_v(__m512 acc, __m512i s, int32_t off, float dx, __m512 d, const __m512* m,
                                          float msx) {
    const __m512 dot = _mm512_cvtepi32_ps(_mm512_sub_epi32(s, _mm512_set1_epi32(off)));
    acc = _mm512_fmadd_ps(dot, _mm512_mul_ps(d, _mm512_set1_ps(dx)), acc);
    return m ? _mm512_fmadd_ps(*m, _mm512_set1_ps(msx), acc) : acc;
}
#endif

/* The float side of a quantized block product, TSL_VI32_LANES rows at once: for i < TSL_VI32_LANES,
 *   acc[i] = fma((float)(s[i] - off), d[i] * dx, acc[i]); with m: acc[i] = fma(m[i], msx, acc[i])
 * (each product and fused step rounded once, in this order, in every implementation: the fused
 * form is what the vector units do in one instruction, and C's fmaf is its exact definition). */
static inline void tsl_vi32_scale_acc(float* acc, tsl_vi32 s, int32_t off, float dx, const float* d, const float* m,
                                      float msx) {
#ifdef TSL_VI8_AVX512
    const __m512 mv = m ? _mm512_loadu_ps(m) : _mm512_setzero_ps();
    _mm512_storeu_ps(acc, tsl_vi32_scale_acc_v(_mm512_loadu_ps(acc), s, off, dx, _mm512_loadu_ps(d), m ? &mv : 0, msx));
#else
#ifdef TSL_VI8_HVX /* v67 HVX has no float lanes: the sums go through memory to the scalar core */
    _Alignas(128) int32_t sv[TSL_VI32_LANES];
    *(tsl_vi32*)(void*)sv = s;
#else
    const int32_t* sv = s.v;
#endif
    for (int i = 0; i < TSL_VI32_LANES; ++i) {
        const float a = __builtin_fmaf((float)(sv[i] - off), d[i] * dx, acc[i]);
        acc[i] = m ? __builtin_fmaf(m[i], msx, a) : a;
    }
#endif
}

#endif /* TESSEL_NPU_DEVICE_VEC_I8_H */

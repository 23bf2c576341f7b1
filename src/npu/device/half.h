/* IEEE binary16 <-> binary32 conversions of the device runtime, in portable C (no OS, no libc).
 *
 * Results equal src/core/fp16.hpp bit for bit, for every input: half -> float is exact (Inf kept,
 * a NaN made quiet with its payload kept); float -> half rounds to nearest, ties to even, values
 * from 65520 up become Inf, tiny ones become half subnormals or a signed zero, and a NaN stays a
 * quiet NaN keeping the top 10 payload bits. Source of the rules: IEEE 754-2008, binary16.
 */
#ifndef TESSEL_NPU_DEVICE_HALF_H
#define TESSEL_NPU_DEVICE_HALF_H

#include <stdint.h>

#if defined(__AVX512F__) || defined(__F16C__)
#include <immintrin.h>
#endif

static inline uint32_t tsl_npu_f32_bits(float f) {
    uint32_t u;
    __builtin_memcpy(&u, &f, 4);
    return u;
}

static inline float tsl_npu_f32_of_bits(uint32_t u) {
    float f;
    __builtin_memcpy(&f, &u, 4);
    return f;
}

/* binary16 bits -> float, exact. Branch-free (every case computed, one picked), so a loop over
 * a row vectorises (tsl_npu_half_row_to_float). */
static inline float tsl_npu_half_to_float(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t man = h & 0x3ffu;
    const uint32_t normal = ((exp + 112u) << 23) | (man << 13); /* rebias 15 -> 127 */
    /* Inf, or NaN with the quiet bit set and the payload kept */
    const uint32_t special = 0x7f800000u | (man << 13) | (man != 0 ? 0x00400000u : 0u);
    /* zero and subnormals: man * 2^-24, exact in float */
    const uint32_t tiny = tsl_npu_f32_bits((float)(int32_t)man * tsl_npu_f32_of_bits(0x33800000u));
    const uint32_t mag = exp == 0x1fu ? special : (exp == 0 ? tiny : normal);
    return tsl_npu_f32_of_bits(sign | mag);
}

/* float -> binary16 bits, round to nearest even. Branch-free like tsl_npu_half_to_float. */
static inline uint16_t tsl_npu_float_to_half(float f) {
    const uint32_t x = tsl_npu_f32_bits(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const int32_t mag = (int32_t)(x & 0x7fffffffu);
    /* normal half range (and overflow): rebias 127 -> 15 and round the 23-bit mantissa to 10,
     * ties to even (adding 0xfff plus the kept part's lowest bit carries exactly when the dropped
     * 13 bits are above half, or at half with an odd kept part); a carry out of the mantissa bumps
     * the exponent, and from 0x7c00 on the result is Inf (Inf itself included). */
    const uint32_t odd = ((uint32_t)mag >> 13) & 1u;
    uint32_t normal = ((uint32_t)mag - (112u << 23) + 0xfffu + odd) >> 13;
    normal = normal >= 0x7c00u ? 0x7c00u : normal;
    /* below 2^-14: |f| + 0.5 rounds |f| to a multiple of 2^-24 (0.5's ulp) to nearest even, and
     * the multiple is the subnormal half's bits (0x400, the smallest normal, when it rounds up) */
    const uint32_t tiny = tsl_npu_f32_bits(tsl_npu_f32_of_bits((uint32_t)mag) + 0.5f) - 0x3f000000u;
    const uint32_t nan = 0x7e00u | (((uint32_t)mag >> 13) & 0x3ffu); /* quiet, top payload bits */
    const uint32_t r = mag > 0x7f800000 ? nan : (mag >= (int32_t)(113u << 23) ? normal : tiny);
    return (uint16_t)(sign | r);
}

/* n halves, `stride` bytes apart from src (2-byte aligned), as floats into dst. A translation
 * unit compiled with AVX-512 F (F16C) converts 16 (8) contiguous halves at a time with VCVTPH2PS (exact, NaNs
 * quieted with their payload kept: the same bits as tsl_npu_half_to_float). */
static inline void tsl_npu_half_row_to_float(const uint8_t* src, uint64_t stride, float* dst, int64_t n) {
    if (stride == 2) {
        const uint16_t* h = (const uint16_t*)(const void*)src;
        int64_t i = 0;
#if defined(__AVX512F__)
        for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(h + i))));
#elif defined(__F16C__)
        for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(h + i))));
#endif
        for (; i < n; ++i) dst[i] = tsl_npu_half_to_float(h[i]);
        return;
    }
    for (int64_t i = 0; i < n; ++i) dst[i] = tsl_npu_half_to_float(*(const uint16_t*)(const void*)(src + (uint64_t)i * stride));
}

/* n floats from src as halves, `stride` bytes apart, into dst (2-byte aligned). */
static inline void tsl_npu_float_row_to_half(const float* src, uint8_t* dst, uint64_t stride, int64_t n) {
    if (stride == 2) {
        uint16_t* h = (uint16_t*)(void*)dst;
        for (int64_t i = 0; i < n; ++i) h[i] = tsl_npu_float_to_half(src[i]);
        return;
    }
    for (int64_t i = 0; i < n; ++i) *(uint16_t*)(void*)(dst + (uint64_t)i * stride) = tsl_npu_float_to_half(src[i]);
}

#endif /* TESSEL_NPU_DEVICE_HALF_H */

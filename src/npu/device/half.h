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

/* binary16 bits -> float, exact. */
static inline float tsl_npu_half_to_float(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1fu) { /* Inf, or NaN with the quiet bit set */
        const uint32_t quiet = man != 0 ? 0x00400000u : 0u;
        return tsl_npu_f32_of_bits(sign | 0x7f800000u | (man << 13) | quiet);
    }
    if (exp == 0) {
        if (man == 0) return tsl_npu_f32_of_bits(sign);
        /* subnormal man * 2^-24: shift the leading one into the hidden-bit position */
        uint32_t e = 113; /* float exponent field of 2^-14, the smallest normal half */
        while ((man & 0x400u) == 0) {
            man <<= 1;
            --e;
        }
        return tsl_npu_f32_of_bits(sign | (e << 23) | ((man & 0x3ffu) << 13));
    }
    return tsl_npu_f32_of_bits(sign | ((exp + 112u) << 23) | (man << 13));
}

/* Rounds v >> shift to nearest, ties to even (1 <= shift <= 31). */
static inline uint32_t tsl_npu_shift_round_even(uint32_t v, uint32_t shift) {
    const uint32_t kept = v >> shift;
    const uint32_t dropped = v & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1u);
    return kept + (dropped > halfway || (dropped == halfway && (kept & 1u)) ? 1u : 0u);
}

/* float -> binary16 bits, round to nearest even. */
static inline uint16_t tsl_npu_float_to_half(float f) {
    const uint32_t x = tsl_npu_f32_bits(f);
    const uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    const uint32_t mag = x & 0x7fffffffu;
    const uint32_t exp = mag >> 23;
    if (exp == 0xffu) { /* Inf stays Inf; NaN stays NaN, quiet */
        if (mag == 0x7f800000u) return (uint16_t)(sign | 0x7c00u);
        return (uint16_t)(sign | 0x7e00u | ((mag >> 13) & 0x3ffu));
    }
    if (exp >= 113u) {
        /* normal half range (or overflow): rebias 127 -> 15 and round the 23-bit mantissa to 10;
         * a carry out of the mantissa bumps the exponent, and past 0x7bff lands on Inf (0x7c00). */
        const uint32_t r = tsl_npu_shift_round_even(mag - (112u << 23), 13);
        return (uint16_t)(sign | (r >= 0x7c00u ? 0x7c00u : r));
    }
    if (exp < 102u) return sign; /* below 2^-25: rounds to zero */
    /* subnormal half: the value in units of 2^-24 is (1.m * 2^23) >> (126 - exp) */
    const uint32_t m = (mag & 0x7fffffu) | 0x800000u;
    return (uint16_t)(sign | tsl_npu_shift_round_even(m, 126u - exp));
}

#endif /* TESSEL_NPU_DEVICE_HALF_H */

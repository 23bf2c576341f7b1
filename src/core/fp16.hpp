// IEEE half (binary16) and bfloat16 conversions.
//
// fp32 -> fp16/bf16 round to nearest, ties to even; Inf stays Inf, NaN stays NaN (quiet,
// sign kept); fp32 values beyond the half range become Inf, tiny ones become half subnormals.
// Row conversions use the F16C instructions when usable_cpu_features() has F16C, i.e. the CPU has it
// and TESSEL_CPU_ISA does not cap it away (same results either way).
#pragma once

#include <cstdint>
#include <cstring>

namespace tessel {

struct CpuFeatures;  // core/cpu_features.hpp

// The scalar conversions have internal linkage (unnamed namespace): ISA translation units use
// them too, and a shared inline copy compiled with ISA flags could otherwise be the one the
// linker keeps for generic callers.
namespace {

inline uint32_t f32_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float f32_from_bits(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

/// binary16 bits -> float (exact).
inline float fp16_to_fp32(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1f;
    const uint32_t man = h & 0x3ffu;
    if (exp == 0x1f)  // Inf, or NaN made quiet (as F16C's vcvtph2ps does, so both paths agree)
        return f32_from_bits(sign | 0x7f800000u | (man << 13) | (man ? 0x00400000u : 0u));
    if (exp != 0) return f32_from_bits(sign | ((exp + 112) << 23) | (man << 13));
    if (man == 0) return f32_from_bits(sign);
    // subnormal: man * 2^-24
    float v = static_cast<float>(man) * 5.9604644775390625e-08f;
    return sign ? -v : v;
}

/// float -> binary16 bits, round to nearest even.
inline uint16_t fp32_to_fp16(float f) {
    const uint32_t x = f32_bits(f);
    const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
    const uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) {  // Inf or NaN
        if (ax == 0x7f800000u) return sign | 0x7c00u;
        return sign | 0x7e00u | static_cast<uint16_t>((ax >> 13) & 0x3ffu);
    }
    if (ax >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520 -> Inf
    if (ax < 0x38800000u) {  // below the smallest normal half (2^-14): subnormal or zero
        if (ax < 0x33000000u) return sign;  // < 2^-25 rounds to zero (2^-25 itself ties to 0)
        const uint32_t e = ax >> 23;
        const uint32_t m = (ax & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126 - e;  // to align to 2^-24 units, 14..24
        uint32_t q = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1);
        const uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1))) ++q;
        return sign | static_cast<uint16_t>(q);
    }
    // normal: rebias exponent, round mantissa from 23 to 10 bits
    uint32_t v = ax - 0x38000000u;  // exponent -112
    const uint32_t rem = v & 0x1fffu;
    v >>= 13;
    if (rem > 0x1000u || (rem == 0x1000u && (v & 1))) ++v;  // carry into exponent is correct
    return sign | static_cast<uint16_t>(v);
}

/// bfloat16 bits -> float (exact).
inline float bf16_to_fp32(uint16_t h) { return f32_from_bits(static_cast<uint32_t>(h) << 16); }

/// float -> bfloat16 bits, round to nearest even; NaN stays a quiet NaN.
inline uint16_t fp32_to_bf16(float f) {
    const uint32_t x = f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
    return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace

/// Convert n halves to floats (F16C when usable). Throws tessel::Error if TESSEL_CPU_ISA is invalid.
void fp16_to_fp32_row(const uint16_t* src, float* dst, int64_t n);
/// Convert n floats to halves, round to nearest even (F16C when usable). Throws as above.
void fp32_to_fp16_row(const float* src, uint16_t* dst, int64_t n);
/// The same with an explicit feature set (F16C iff use.f16c; `use` must not claim more than
/// the CPU has, e.g. usable_cpu_features() or a cap of it).
void fp16_to_fp32_row(const uint16_t* src, float* dst, int64_t n, const CpuFeatures& use);
void fp32_to_fp16_row(const float* src, uint16_t* dst, int64_t n, const CpuFeatures& use);
/// Convert n bfloat16 values to floats.
void bf16_to_fp32_row(const uint16_t* src, float* dst, int64_t n);
/// Convert n floats to bfloat16, round to nearest even.
void fp32_to_bf16_row(const float* src, uint16_t* dst, int64_t n);

}  // namespace tessel

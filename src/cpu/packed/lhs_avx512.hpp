// Activation (LHS) quantization to Q8_0 / Q8_1 blocks (or the scaled blocks of kernel.hpp's
// LhsLayout::Scaled) with AVX-512, bit-identical to quant::quantize_row (d = absmax / 127 rounded
// to fp16, q = round-half-away-from-zero(x / d), Q8_1's s = fp16(d * sum q)). Included by the AVX-512 tier translation units only; everything
// here has internal linkage, so no ISA code is shared with other units.
#pragma once

#include "cpu/kernels/avx512_intrinsics.hpp"  // first: <immintrin.h> without g++ 12's false warnings

#include <cstdint>
#include <cstring>

namespace tessel::cpu::packed {
namespace {

/// Round half away from zero (std::round), exact: nearest-even except at ties.
inline __m512 round_half_away(__m512 v) {
    const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m512 r = _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __mmask16 tie = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(v, t)), _mm512_set1_ps(0.5f), _CMP_EQ_OQ);
    const __m512 step = _mm512_or_ps(_mm512_set1_ps(1.0f), _mm512_and_ps(v, _mm512_set1_ps(-0.0f)));
    return _mm512_mask_blend_ps(tie, r, _mm512_add_ps(t, step));
}

inline uint16_t to_half(float f) { return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)); }

/// Quantizes m rows of k floats (k % 32 == 0) into blocks of kBlockBytes: fp16 d, (Q8_1: fp16
/// s), 32 int8 quants. kBias is added to every quant byte (0x80 makes them unsigned).
template <bool kQ81, uint8_t kBias>
void quantize_q8_rows(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k) {
    constexpr int64_t kHead = kQ81 ? 4 : 2;
    constexpr int64_t kBlockBytes = kHead + 32;
    const int64_t nb = k / 32;
    for (int64_t i = 0; i < m; ++i) {
        const float* row = reinterpret_cast<const float*>(reinterpret_cast<const uint8_t*>(x) + i * x_stride);
        uint8_t* out = dst + i * nb * kBlockBytes;
        for (int64_t b = 0; b < nb; ++b, out += kBlockBytes) {
            const __m512 x0 = _mm512_loadu_ps(row + 32 * b), x1 = _mm512_loadu_ps(row + 32 * b + 16);
            const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(x0), _mm512_abs_ps(x1)));
            const float d = amax / 127.0f;
            const float id = d != 0.0f ? 1.0f / d : 0.0f;
            const __m512i q0 = _mm512_cvttps_epi32(round_half_away(_mm512_mul_ps(x0, _mm512_set1_ps(id))));
            const __m512i q1 = _mm512_cvttps_epi32(round_half_away(_mm512_mul_ps(x1, _mm512_set1_ps(id))));
            const uint16_t dh = to_half(d);
            std::memcpy(out, &dh, 2);
            if constexpr (kQ81) {
                const int sum = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
                const uint16_t sh = to_half(static_cast<float>(sum) * d);
                std::memcpy(out + 2, &sh, 2);
            }
            const __m128i bias = _mm_set1_epi8(static_cast<char>(kBias));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(out + kHead), _mm_xor_si128(_mm512_cvtepi32_epi8(q0), bias));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(out + kHead + 16), _mm_xor_si128(_mm512_cvtepi32_epi8(q1), bias));
        }
    }
}

/// Quantizes m rows of k floats (k % 32 == 0) into scaled blocks (LhsLayout::Scaled of
/// kernel.hpp; row i at dst + i * k / 32 * 40): the quants and d of Q8_0 / Q8_1 blocks, and the
/// aux of kCorr (quant_traits.hpp's kScaledCorr): 0 -> Q8_1's s = fp16(d * sum q), else
/// -kCorr * sum q.
template <int kCorr>
void quantize_q8_scaled(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k) {
    const int64_t nb = k / 32;
    for (int64_t i = 0; i < m; ++i) {
        const float* row = reinterpret_cast<const float*>(reinterpret_cast<const uint8_t*>(x) + i * x_stride);
        for (int64_t b = 0; b < nb; ++b) {
            uint8_t* out = dst + (i * nb + b) * 40;
            const __m512 x0 = _mm512_loadu_ps(row + 32 * b), x1 = _mm512_loadu_ps(row + 32 * b + 16);
            const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(x0), _mm512_abs_ps(x1)));
            const float d = amax / 127.0f;
            const float id = d != 0.0f ? 1.0f / d : 0.0f;
            const __m512i q0 = _mm512_cvttps_epi32(round_half_away(_mm512_mul_ps(x0, _mm512_set1_ps(id))));
            const __m512i q1 = _mm512_cvttps_epi32(round_half_away(_mm512_mul_ps(x1, _mm512_set1_ps(id))));
            const float dh = _cvtsh_ss(to_half(d));
            std::memcpy(out + 32, &dh, 4);
            const int sum = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
            if constexpr (kCorr == 0) {
                const float s = _cvtsh_ss(to_half(static_cast<float>(sum) * d));
                std::memcpy(out + 36, &s, 4);
            } else {
                // wrapping: a NaN or inf activation quantizes to INT_MIN lanes whose sum overflows (that
                // block's outputs are NaN anyway); the correction must not be undefined behaviour
                const auto c = static_cast<int32_t>(0u - static_cast<uint32_t>(kCorr) * static_cast<uint32_t>(sum));
                std::memcpy(out + 36, &c, 4);
            }
            _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_cvtepi32_epi8(q0));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16), _mm512_cvtepi32_epi8(q1));
        }
    }
}

}  // namespace
}  // namespace tessel::cpu::packed

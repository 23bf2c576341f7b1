// Activation (LHS) quantization to Q8_0 / Q8_1 blocks, scaled (kernel.hpp's LhsLayout::Scaled) or
// as GGUF stores them (LhsLayout::Blocks), with AVX2, bit-identical to quant::quantize_row (d = absmax / 127 rounded to fp16, q = round-half-away-from-zero(x * (1/d)),
// Q8_1's s = fp16(float(sum q) * d); source: ggml's quantize_row_q8_0_ref / q8_1_ref). Included by
// the avx2 tier translation unit only; everything here has internal linkage.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace tessel::cpu::packed {
namespace {

/// Round half away from zero (std::round), exact: nearest-even except at ties.
inline __m256 round_half_away(__m256 v) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 r = _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256 tie = _mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_sub_ps(v, t)), _mm256_set1_ps(0.5f), _CMP_EQ_OQ);
    const __m256 step = _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_and_ps(v, sign));
    return _mm256_blendv_ps(r, _mm256_add_ps(t, step), tie);
}

inline uint16_t to_half(float f) { return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)); }

inline float hmax(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

inline int hsum(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

/// One 32-element block quantized as quant::quantize_row does: its 32 int8 quants in element
/// order, d (fp16-rounded, as a float) and the sum of the quants.
struct Q8Block {
    __m256i q;
    float d;
    int sum;
};

inline Q8Block quantize_q8_block(const float* x) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 v[4];
    for (int j = 0; j < 4; ++j) v[j] = _mm256_loadu_ps(x + 8 * j);
    const __m256 amax = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1])),
                                      _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3])));
    const float d = hmax(amax) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    __m256i q[4];
    for (int j = 0; j < 4; ++j) q[j] = _mm256_cvttps_epi32(round_half_away(_mm256_mul_ps(v[j], _mm256_set1_ps(id))));
    Q8Block b;
    b.d = d;
    b.sum = hsum(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
    // the packs work per 128-bit lane: dword 4l + j of their result holds quants 4l .. 4l+3 of
    // q[j] (l = lane); the permutation restores element order
    const __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
    b.q = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    return b;
}

/// Quantizes m rows of k floats (row i at x + i * x_stride bytes; k % 32 == 0) into scaled
/// blocks (LhsLayout::Scaled of kernel.hpp; row i at dst + i * k / 32 * 40): the quants and d of
/// Q8_0 / Q8_1 blocks, and the aux of kCorr (quant_traits.hpp's kScaledCorr): 0 -> Q8_1's
/// s = fp16(d * sum q), else -kCorr * sum q.
template <int kCorr>
void quantize_q8_scaled(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k) {
    const int64_t nb = k / 32;
    for (int64_t i = 0; i < m; ++i) {
        const float* row = reinterpret_cast<const float*>(reinterpret_cast<const uint8_t*>(x) + i * x_stride);
        for (int64_t b = 0; b < nb; ++b) {
            uint8_t* out = dst + (i * nb + b) * 40;
            const Q8Block q = quantize_q8_block(row + 32 * b);
            const float dh = _cvtsh_ss(to_half(q.d));
            std::memcpy(out + 32, &dh, 4);
            if constexpr (kCorr == 0) {
                const float s = _cvtsh_ss(to_half(static_cast<float>(q.sum) * q.d));
                std::memcpy(out + 36, &s, 4);
            } else {
                // wrapping: a NaN or inf activation quantizes to INT_MIN lanes whose sum overflows (that
                // block's outputs are NaN anyway); the correction must not be undefined behaviour
                const auto c = static_cast<int32_t>(0u - static_cast<uint32_t>(kCorr) * static_cast<uint32_t>(q.sum));
                std::memcpy(out + 36, &c, 4);
            }
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), q.q);
        }
    }
}

/// Quantizes m rows of k floats (row i at x + i * x_stride bytes; k % 32 == 0) into GGUF Q8_0
/// blocks (fp16 d, 32 int8 quants; 34 bytes) or, with kQ81, Q8_1 blocks (fp16 d, fp16 s, quants;
/// 36 bytes), one row after another at dst (LhsLayout::Blocks).
template <bool kQ81>
void quantize_q8_rows(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k) {
    constexpr int64_t kHead = kQ81 ? 4 : 2;
    constexpr int64_t kBlockBytes = kHead + 32;
    const int64_t nb = k / 32;
    for (int64_t i = 0; i < m; ++i) {
        const float* row = reinterpret_cast<const float*>(reinterpret_cast<const uint8_t*>(x) + i * x_stride);
        uint8_t* out = dst + i * nb * kBlockBytes;
        for (int64_t b = 0; b < nb; ++b, out += kBlockBytes) {
            const Q8Block q = quantize_q8_block(row + 32 * b);
            const uint16_t dh = to_half(q.d);
            std::memcpy(out, &dh, 2);
            if constexpr (kQ81) {
                const uint16_t sh = to_half(static_cast<float>(q.sum) * q.d);
                std::memcpy(out + 2, &sh, 2);
            }
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + kHead), q.q);
        }
    }
}

}  // namespace
}  // namespace tessel::cpu::packed

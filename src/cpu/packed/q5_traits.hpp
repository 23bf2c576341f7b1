// Geometry of the q5_0x16 format (format.hpp) and the per-call activation data of its kernels,
// shared by packed_q5_<isa>.cpp. Internal linkage: every ISA translation unit keeps its own copy
// (see cpu/kernels/kernel.hpp on inline code in ISA units); the includers are compiled with AVX2
// at least.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "cpu/packed/kernel.hpp"
#include "cpu/packed/quant_traits.hpp"

namespace tessel::cpu::packed {
namespace {

/// One 32-element block of a q5_0x16 group: d[16] fp16, the qh register, 4 nibble registers.
constexpr int64_t kQ5Head = 2 * kGroupRows;                         ///< bytes of d[16]
constexpr int64_t kQ5BlockBytes = kGroupRows * 22;                  ///< 352
constexpr int64_t kQ8_0Block = 34;                                  ///< fp16 d + 32 quants

inline size_t q5_group_bytes(int64_t k) { return static_cast<size_t>((k / 32) * kQ5BlockBytes); }

/// Per LHS row i and block b of a call: d_x and the integer correction -16 * sum q_x (the
/// kernels multiply unsigned 5-bit codes; value = code - 16).
struct Q5Prep {
    UnitBuffer<float> d;
    UnitBuffer<int32_t> corr;
};

inline void q5_prepare(const GemmArgs& a, Q5Prep& p) {
    const int64_t nb = a.k / 32;
    p.d.resize(static_cast<size_t>(a.m * nb));
    p.corr.resize(static_cast<size_t>(a.m * nb));
    for (int64_t i = 0; i < a.m; ++i)
        for (int64_t b = 0; b < nb; ++b) {
            const uint8_t* blk = a.lhs + i * a.lhs_stride + b * kQ8_0Block;
            const size_t o = static_cast<size_t>(i * nb + b);
            p.d[o] = half_at(blk);
            const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
            const __m256i s32 = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), q), _mm256_set1_epi16(1));
            __m128i s = _mm_add_epi32(_mm256_castsi256_si128(s32), _mm256_extracti128_si256(s32, 1));
            s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
            s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
            p.corr[o] = -16 * _mm_cvtsi128_si32(s);
        }
}

/// vpshufb control giving each row's dword 4 copies of its qh byte `byte` (0..3): a 128-bit lane
/// holds rows 4l..4l+3 at dwords 0..3.
inline __m128i qh_select(int byte) {
    return _mm_add_epi8(_mm_setr_epi32(0, 0x04040404, 0x08080808, 0x0c0c0c0c), _mm_set1_epi8(static_cast<char>(byte)));
}

/// Per-byte bit of a qh byte for K-element 4r + t (t = byte of the lane): bits 0..3 for even r,
/// 4..7 for odd r (qh byte r / 2 covers elements 8 (r / 2) .. +7).
inline int32_t qh_bits(int r) { return r % 2 ? static_cast<int32_t>(0x80402010u) : 0x08040201; }

}  // namespace
}  // namespace tessel::cpu::packed

// Geometry of the q5_0x16 format (format.hpp) and its high-bit selectors, shared by
// packed_q5_<isa>.cpp. Internal linkage: every ISA translation unit keeps its own copy (see
// cpu/kernels/kernel.hpp on inline code in ISA units); the includers are compiled with AVX2 at least.
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

inline size_t q5_group_bytes(int64_t k) { return static_cast<size_t>((k / 32) * kQ5BlockBytes); }

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

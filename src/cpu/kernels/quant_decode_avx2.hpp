// Block decoders of the quantized matrix products: one 32-weight block of a GGUF type -> 32
// bytes in element order plus its float scale (and min), with AVX2 (include only from
// translation units built with at least -mavx2 -mfma -mf16c: the AVX2 tile quant_tile_avx2.hpp
// and the AVX-512 VNNI kernels mul_mat_avx512vnni.cpp share them).
//
// Everything here sits in an unnamed namespace on purpose: translation units built for
// different ISAs include this header, and inline functions with external linkage would be
// merged by the linker, so one ISA's copy could run on a CPU that lacks it. For the same reason
// the decoders convert scales with intrinsics and local helpers, never with core's inline
// fp16/E8M0 functions.
//
// A decoder W provides:
//   Block                 the GGUF block struct (quant/blocks.hpp)
//   kSigned, kMin         quants are signed / the type has a min (x = d·q + m)
//   quants(b)             the 32 quants as bytes: signed if kSigned (never -128 for the
//                         quantizers' output), else 0..127
//   kOffset, codes(b)     quants + kOffset as unsigned bytes (0..255), for unsigned × signed
//                         products: q = code - kOffset (kOffset = 0 for unsigned types)
//   scale(b), min(b)      d and m as floats (exact conversions of the stored fields)
#pragma once

#include <immintrin.h>

#include <array>
#include <cstring>

#include "quant/blocks.hpp"

namespace tessel::cpu::avx2 {
namespace {

/// The 32 nibbles of a 16-byte array in element order (low nibbles = elements 0..15).
inline __m256i unpack_nibbles(const uint8_t* qs) {
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m128i lo = _mm_and_si128(packed, _mm_set1_epi8(0x0f));
    const __m128i hi = _mm_and_si128(_mm_srli_epi16(packed, 4), _mm_set1_epi8(0x0f));
    return _mm256_set_m128i(hi, lo);
}

inline __m256i load_bytes(const int8_t* qs) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs)); }

/// 0xff in byte j where bit j of the 32-bit little-endian field qh is set, else 0 (the 5th-bit
/// plane of Q5_0/Q5_1).
inline __m256i bit_plane_mask(const uint8_t* qh) {
    uint32_t bits;
    std::memcpy(&bits, qh, 4);
    // byte j takes byte j/8 of the field, then keeps bit j%8
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)),
                                               _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303));
    const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
    return _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
}

/// A 16-entry byte table in both 128-bit lanes, for _mm256_shuffle_epi8 lookups by nibble.
inline __m256i nibble_table(const int8_t* table) {
    return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(table)));
}

/// A signed 16-entry table plus 128, as unsigned bytes stored in int8_t (for codes()).
constexpr std::array<int8_t, 16> biased_table(const int8_t* table) {
    std::array<int8_t, 16> out{};
    for (int i = 0; i < 16; ++i) out[static_cast<size_t>(i)] = static_cast<int8_t>(static_cast<uint8_t>(table[i] + 128));
    return out;
}
constexpr std::array<int8_t, 16> kIQ4NLCodes = biased_table(quant::kValuesIQ4NL);
constexpr std::array<int8_t, 16> kMXFP4Codes = biased_table(quant::kValuesMXFP4x2);

/// binary16 bits -> float (F16C; exact).
inline float half_to_float(uint16_t h) { return _cvtsh_ss(h); }

/// The MXFP4 block scale for values times 2: 2^(e-128) (E8M0 e means 2^(e-127)); e = 0 and 1
/// give the subnormals 2^-128 and 2^-127, e = 255 gives 2^127 (as quant::e8m0_to_fp32_half).
inline float e8m0_half(uint8_t e) {
    const uint32_t bits = e < 2 ? (0x00200000u << e) : (static_cast<uint32_t>(e - 1) << 23);
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

struct DecQ8_0 {
    using Block = quant::block_q8_0;
    static constexpr bool kSigned = true, kMin = false;
    static constexpr int kOffset = 128;
    static __m256i quants(const Block& b) { return load_bytes(b.qs); }
    static __m256i codes(const Block& b) { return _mm256_xor_si256(load_bytes(b.qs), _mm256_set1_epi8(-128)); }
    static float scale(const Block& b) { return half_to_float(b.d); }
    static float min(const Block&) { return 0.0f; }
};

struct DecQ4_0 {
    using Block = quant::block_q4_0;
    static constexpr bool kSigned = true, kMin = false;
    static constexpr int kOffset = 8;
    static __m256i codes(const Block& b) { return unpack_nibbles(b.qs); }
    static __m256i quants(const Block& b) { return _mm256_sub_epi8(codes(b), _mm256_set1_epi8(kOffset)); }
    static float scale(const Block& b) { return half_to_float(b.d); }
    static float min(const Block&) { return 0.0f; }
};

struct DecQ4_1 {
    using Block = quant::block_q4_1;
    static constexpr bool kSigned = false, kMin = true;
    static constexpr int kOffset = 0;
    static __m256i quants(const Block& b) { return unpack_nibbles(b.qs); }
    static __m256i codes(const Block& b) { return quants(b); }
    static float scale(const Block& b) { return half_to_float(b.d); }
    static float min(const Block& b) { return half_to_float(b.m); }
};

struct DecQ5_0 {
    using Block = quant::block_q5_0;
    static constexpr bool kSigned = true, kMin = false;
    static constexpr int kOffset = 16;
    /// nibble + 16·bit - 16: subtract 16 where the 5th bit is clear.
    static __m256i quants(const Block& b) {
        return _mm256_sub_epi8(unpack_nibbles(b.qs), _mm256_andnot_si256(bit_plane_mask(b.qh), _mm256_set1_epi8(16)));
    }
    static __m256i codes(const Block& b) {
        return _mm256_or_si256(unpack_nibbles(b.qs), _mm256_and_si256(bit_plane_mask(b.qh), _mm256_set1_epi8(16)));
    }
    static float scale(const Block& b) { return half_to_float(b.d); }
    static float min(const Block&) { return 0.0f; }
};

struct DecQ5_1 {
    using Block = quant::block_q5_1;
    static constexpr bool kSigned = false, kMin = true;
    static constexpr int kOffset = 0;
    static __m256i quants(const Block& b) {
        return _mm256_or_si256(unpack_nibbles(b.qs), _mm256_and_si256(bit_plane_mask(b.qh), _mm256_set1_epi8(16)));
    }
    static __m256i codes(const Block& b) { return quants(b); }
    static float scale(const Block& b) { return half_to_float(b.d); }
    static float min(const Block& b) { return half_to_float(b.m); }
};

/// IQ4_NL: nibbles index the codebook kValuesIQ4NL (-127..113).
struct DecIQ4_NL {
    using Block = quant::block_iq4_nl;
    static constexpr bool kSigned = true, kMin = false;
    static constexpr int kOffset = 128;
    static __m256i quants(const Block& b) { return _mm256_shuffle_epi8(nibble_table(quant::kValuesIQ4NL), unpack_nibbles(b.qs)); }
    static __m256i codes(const Block& b) { return _mm256_shuffle_epi8(nibble_table(kIQ4NLCodes.data()), unpack_nibbles(b.qs)); }
    static float scale(const Block& b) { return half_to_float(b.d); }
    static float min(const Block&) { return 0.0f; }
};

/// MXFP4: nibbles index the doubled E2M1 values kValuesMXFP4x2 (-12..12, integers), and the
/// scale is the E8M0 power of two halved, so value·scale is the format's value and every
/// product with an activation is exact.
struct DecMXFP4 {
    using Block = quant::block_mxfp4;
    static constexpr bool kSigned = true, kMin = false;
    static constexpr int kOffset = 128;
    static __m256i quants(const Block& b) { return _mm256_shuffle_epi8(nibble_table(quant::kValuesMXFP4x2), unpack_nibbles(b.qs)); }
    static __m256i codes(const Block& b) { return _mm256_shuffle_epi8(nibble_table(kMXFP4Codes.data()), unpack_nibbles(b.qs)); }
    static float scale(const Block& b) { return e8m0_half(b.e); }
    static float min(const Block&) { return 0.0f; }
};

}  // namespace
}  // namespace tessel::cpu::avx2

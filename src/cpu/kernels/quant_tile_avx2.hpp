// AVX2 tiles of the quantized matrix products (include only from translation units built with
// -mavx2 -mfma -mf16c): block decoders per weight type, and one tile template that the
// MUL_MAT/MUL_MAT_ID driver (mul_mat_driver.hpp) expands per micro-kernel.
//
// A block of 32 weights pairs with one 32-element activation block (Q8_0, or Q8_1 whose stored
// s = d·Σq carries a weight type's min term). Per (activation row i, weight row j) and block:
//   dot = Σ q_w·q_x   exact in int32 (maddubs: unsigned bytes × signed bytes, pair sums ≤ 32512,
//                     then madd to int32; signed weights move their sign onto the activation)
//   acc += (d_w·d_x)·dot   in float lanes, summed across lanes at the end of the tile
//   min += m_w·s_x          (types with a min: x = d·q + m)
// so a tile's result depends only on its inputs, never on the thread count.
#pragma once

#include <immintrin.h>

#include <cstring>

#include "core/fp16.hpp"
#include "cpu/kernels/mul_mat_driver.hpp"
#include "quant/blocks.hpp"
#include "quant/quant_nonlinear.hpp"

namespace tessel::cpu::avx2 {

inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

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

// ---- weight block decoders: quants(b) as 32 bytes in element order, scale(b), min(b) --------
// kSigned: quants are signed (-128..127 with no -128 from the quantizers); else 0..127.

struct DecQ8_0 {
    using Block = quant::block_q8_0;
    static constexpr bool kSigned = true, kMin = false;
    static __m256i quants(const Block& b) { return load_bytes(b.qs); }
    static float scale(const Block& b) { return fp16_to_fp32(b.d); }
    static float min(const Block&) { return 0.0f; }
};

struct DecQ4_0 {
    using Block = quant::block_q4_0;
    static constexpr bool kSigned = true, kMin = false;
    static __m256i quants(const Block& b) { return _mm256_sub_epi8(unpack_nibbles(b.qs), _mm256_set1_epi8(8)); }
    static float scale(const Block& b) { return fp16_to_fp32(b.d); }
    static float min(const Block&) { return 0.0f; }
};

struct DecQ4_1 {
    using Block = quant::block_q4_1;
    static constexpr bool kSigned = false, kMin = true;
    static __m256i quants(const Block& b) { return unpack_nibbles(b.qs); }
    static float scale(const Block& b) { return fp16_to_fp32(b.d); }
    static float min(const Block& b) { return fp16_to_fp32(b.m); }
};

struct DecQ5_0 {
    using Block = quant::block_q5_0;
    static constexpr bool kSigned = true, kMin = false;
    /// nibble + 16·bit - 16: subtract 16 where the 5th bit is clear.
    static __m256i quants(const Block& b) {
        return _mm256_sub_epi8(unpack_nibbles(b.qs), _mm256_andnot_si256(bit_plane_mask(b.qh), _mm256_set1_epi8(16)));
    }
    static float scale(const Block& b) { return fp16_to_fp32(b.d); }
    static float min(const Block&) { return 0.0f; }
};

struct DecQ5_1 {
    using Block = quant::block_q5_1;
    static constexpr bool kSigned = false, kMin = true;
    static __m256i quants(const Block& b) {
        return _mm256_or_si256(unpack_nibbles(b.qs), _mm256_and_si256(bit_plane_mask(b.qh), _mm256_set1_epi8(16)));
    }
    static float scale(const Block& b) { return fp16_to_fp32(b.d); }
    static float min(const Block& b) { return fp16_to_fp32(b.m); }
};

/// IQ4_NL: nibbles index the codebook kValuesIQ4NL (-127..113).
struct DecIQ4_NL {
    using Block = quant::block_iq4_nl;
    static constexpr bool kSigned = true, kMin = false;
    static __m256i quants(const Block& b) { return _mm256_shuffle_epi8(nibble_table(quant::kValuesIQ4NL), unpack_nibbles(b.qs)); }
    static float scale(const Block& b) { return fp16_to_fp32(b.d); }
    static float min(const Block&) { return 0.0f; }
};

/// MXFP4: nibbles index the doubled E2M1 values kValuesMXFP4x2 (-12..12, integers), and the
/// scale is the E8M0 power of two halved, so value·scale is the format's value and every
/// product with an activation is exact.
struct DecMXFP4 {
    using Block = quant::block_mxfp4;
    static constexpr bool kSigned = true, kMin = false;
    static __m256i quants(const Block& b) { return _mm256_shuffle_epi8(nibble_table(quant::kValuesMXFP4x2), unpack_nibbles(b.qs)); }
    static float scale(const Block& b) { return quant::e8m0_to_fp32_half(b.e); }
    static float min(const Block&) { return 0.0f; }
};

// ---- the tile -----------------------------------------------------------------------------------

/// rows.out[i][j] = Σ over n_blocks blocks of weight row j (w + j·w_stride) · activation row i.
template <class W, class X, int MR, int NR>
void quant_tile(const uint8_t* w, size_t w_stride, const mm::TileRows<MR>& rows, int64_t n_blocks) {
    __m256 acc[MR][NR];
    float mins[MR][NR];
    for (int i = 0; i < MR; ++i)
        for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_setzero_ps(), mins[i][j] = 0.0f;
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t b = 0; b < n_blocks; ++b) {
        __m256i wq[NR], wu[NR];
        float wd[NR], wm[NR];
        for (int j = 0; j < NR; ++j) {
            const auto& blk = reinterpret_cast<const typename W::Block*>(w + j * w_stride)[b];
            wq[j] = W::quants(blk);
            wu[j] = W::kSigned ? _mm256_sign_epi8(wq[j], wq[j]) : wq[j];
            wd[j] = W::scale(blk);
            if constexpr (W::kMin) wm[j] = W::min(blk);
        }
        for (int i = 0; i < MR; ++i) {
            const X& xb = reinterpret_cast<const X*>(rows.x[i])[b];
            const __m256i xq = load_bytes(xb.qs);
            const float xd = fp16_to_fp32(xb.d);
            for (int j = 0; j < NR; ++j) {
                const __m256i xs = W::kSigned ? _mm256_sign_epi8(xq, wq[j]) : xq;
                const __m256i dot = _mm256_madd_epi16(_mm256_maddubs_epi16(wu[j], xs), ones);
                acc[i][j] = _mm256_fmadd_ps(_mm256_set1_ps(wd[j] * xd), _mm256_cvtepi32_ps(dot), acc[i][j]);
                if constexpr (W::kMin) mins[i][j] += wm[j] * fp16_to_fp32(xb.s);
            }
        }
    }
    for (int i = 0; i < MR; ++i)
        for (int j = 0; j < NR; ++j) rows.out[i][j] = hsum(acc[i][j]) + mins[i][j];
}

}  // namespace tessel::cpu::avx2

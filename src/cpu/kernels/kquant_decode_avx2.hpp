// AVX2 decoders of the super-block weight formats for kquant_tile_avx2.hpp (include only from
// translation units built with -mavx2 -mfma -mf16c). Bit layouts are the GGUF format's, as
// documented in quant/kquant_dequant.cpp and quant/kquant_layout.hpp.
//
// A decoder W provides, for one block of 256 weights:
//   Block; kSigned (quants are signed table values, else unsigned 0..63); kMin / kOffsetShift
//   (how corr enters, see kquant_tile_avx2.hpp); Head head(block) with d (and dmin) broadcast and,
//   where needed, corr = 16 int16 factors aligned with Q8_K's 16 bsums;
//   quants<H>(block, q[4]): q[v] = the 32 quants of elements 128·H + 32·v .. +31, one per byte;
//   scale<V>(head): 16 int16 lanes matching maddubs' pair lanes of elements 32·V .. 32·V+31
//   (lanes 0..7 = elements 0..15, lanes 8..15 = elements 16..31).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "quant/blocks.hpp"

namespace tessel::cpu::avx2 {

inline __m256i load_i16(const int16_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline __m256i load_u8(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

inline uint32_t load_u32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

/// In every byte: the Width-bit field at bit From moved to bit To, other bits cleared. The
/// 16-bit shifts cannot carry a bit of the neighbouring byte into the kept field.
template <int From, int Width, int To>
inline __m256i byte_field(__m256i v) {
    const __m256i mask = _mm256_set1_epi8(static_cast<char>(((1 << Width) - 1) << To));
    if constexpr (From < To) return _mm256_and_si256(_mm256_slli_epi16(v, To - From), mask);
    else if constexpr (From > To) return _mm256_and_si256(_mm256_srli_epi16(v, From - To), mask);
    else return _mm256_and_si256(v, mask);
}

/// Lane L (0..7) of each 128-bit half of v, in all 8 int16 lanes of that half.
template <int L>
inline __m256i bcast_lane16(__m256i v) {
    return _mm256_shuffle_epi8(v, _mm256_set1_epi16(static_cast<short>((2 * L) | ((2 * L + 1) << 8))));
}

/// Scales of 16-element sub-blocks: 16 int16 scales s0..s15 kept as s0..s7 and s8..s15, each
/// in both 128-bit halves; scale<V> is s[2V] in the low half and s[2V+1] in the high half.
struct PairScales {
    __m256i lo, hi;
    explicit PairScales(__m256i s16)
        : lo(_mm256_permute2x128_si256(s16, s16, 0x00)), hi(_mm256_permute2x128_si256(s16, s16, 0x11)) {}
    template <int V>
    __m256i scale() const {
        const __m256i src = V < 4 ? lo : hi;
        constexpr int a = (2 * V) % 8, b = (2 * V + 1) % 8;
        const __m256i ctl = _mm256_set_m128i(_mm_set1_epi16(static_cast<short>((2 * b) | ((2 * b + 1) << 8))),
                                             _mm_set1_epi16(static_cast<short>((2 * a) | ((2 * a + 1) << 8))));
        return _mm256_shuffle_epi8(src, ctl);
    }
};

/// Q4_K / Q5_K scales and mins from the 12 packed bytes at p (16 bytes are read: the block's
/// next field follows): bytes 0..7 = scale 0..7, bytes 8..15 = min 0..7, each 0..63.
inline __m128i unpack_scales_mins_k4(const uint8_t* p) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    // low bits: scale j<4 and min j<4 are bytes j and j+4 (6 bits); scale j>=4 and min j>=4 the
    // low and high nibble of byte j+4
    const __m128i a = _mm_shuffle_epi8(v, _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11));
    const __m128i low = _mm_or_si128(
        _mm_and_si128(a, _mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0)),
        _mm_and_si128(_mm_srli_epi16(a, 4), _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15)));
    // high 2 bits of scale / min j>=4: bits 6..7 of byte j-4 / byte j
    const __m128i b = _mm_shuffle_epi8(v, _mm_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7));
    return _mm_or_si128(low, _mm_and_si128(_mm_srli_epi16(b, 2), _mm_set1_epi8(0x30)));
}

/// float of a binary16 (F16C; exact, as quant's reference conversion).
inline float half_to_float(uint16_t h) { return _cvtsh_ss(h); }

/// Head of Q4_K / Q5_K: their d, dmin and packed scales sit at the block's start.
struct HeadK4 {
    __m256i sm;    ///< unpack_scales_mins_k4 in both 128-bit halves
    __m256i corr;  ///< the mins, each twice (m0, m0, m1, m1, ...: min s covers bsums 2s, 2s+1)
    __m256 d, dmin;
    template <class Block>
    explicit HeadK4(const Block& b)
        : sm(_mm256_broadcastsi128_si256(unpack_scales_mins_k4(b.scales))),
          corr(_mm256_shuffle_epi8(sm, _mm256_setr_epi8(8, -1, 8, -1, 9, -1, 9, -1, 10, -1, 10, -1, 11, -1, 11, -1,  //
                                                         12, -1, 12, -1, 13, -1, 13, -1, 14, -1, 14, -1, 15, -1, 15, -1))),
          d(_mm256_set1_ps(half_to_float(b.d))), dmin(_mm256_set1_ps(half_to_float(b.dmin))) {}
    /// Scale V (0..7) zero-extended into all 16 int16 lanes.
    template <int V>
    __m256i scale() const { return _mm256_shuffle_epi8(sm, _mm256_set1_epi16(static_cast<short>(0xff00 | V))); }
};

struct DecQ4_K {
    using Block = quant::block_q4_K;
    static constexpr bool kSigned = false, kMin = true;
    static constexpr int kOffsetShift = 0;
    using Head = HeadK4;
    static Head head(const Block& b) { return Head(b); }
    template <int H>
    static void quants(const Block& b, __m256i q[4]) {
        const __m256i p0 = load_u8(b.qs + 64 * H), p1 = load_u8(b.qs + 64 * H + 32);
        q[0] = byte_field<0, 4, 0>(p0), q[1] = byte_field<4, 4, 0>(p0), q[2] = byte_field<0, 4, 0>(p1), q[3] = byte_field<4, 4, 0>(p1);
    }
    template <int V>
    static __m256i scale(const Head& h) { return h.template scale<V>(); }
};

/// Q5_K: Q4_K plus the 5th bit of element e at bit e/32 of qh[e%32].
struct DecQ5_K : DecQ4_K {
    using Block = quant::block_q5_K;
    static Head head(const Block& b) { return Head(b); }
    template <int H>
    static void quants(const Block& b, __m256i q[4]) {
        const __m256i p0 = load_u8(b.qs + 64 * H), p1 = load_u8(b.qs + 64 * H + 32), qh = load_u8(b.qh);
        q[0] = _mm256_or_si256(byte_field<0, 4, 0>(p0), byte_field<4 * H + 0, 1, 4>(qh));
        q[1] = _mm256_or_si256(byte_field<4, 4, 0>(p0), byte_field<4 * H + 1, 1, 4>(qh));
        q[2] = _mm256_or_si256(byte_field<0, 4, 0>(p1), byte_field<4 * H + 2, 1, 4>(qh));
        q[3] = _mm256_or_si256(byte_field<4, 4, 0>(p1), byte_field<4 * H + 3, 1, 4>(qh));
    }
};

/// Q6_K: quants 0..63 (the format's −32 through corr = the 16 int8 scales); sub-blocks of 16.
struct DecQ6_K {
    using Block = quant::block_q6_K;
    static constexpr bool kSigned = false, kMin = false;
    static constexpr int kOffsetShift = 5;
    struct Head {
        PairScales sc;
        __m256i corr;
        __m256 d;  // broadcast
    };
    static Head head(const Block& b) {
        const __m256i s16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)));
        return {PairScales(s16), s16, _mm256_set1_ps(half_to_float(b.d))};
    }
    template <int H>
    static void quants(const Block& b, __m256i q[4]) {
        const __m256i l0 = load_u8(b.ql + 64 * H), l1 = load_u8(b.ql + 64 * H + 32), qh = load_u8(b.qh + 32 * H);
        q[0] = _mm256_or_si256(byte_field<0, 4, 0>(l0), byte_field<0, 2, 4>(qh));
        q[1] = _mm256_or_si256(byte_field<0, 4, 0>(l1), byte_field<2, 2, 4>(qh));
        q[2] = _mm256_or_si256(byte_field<4, 4, 0>(l0), byte_field<4, 2, 4>(qh));
        q[3] = _mm256_or_si256(byte_field<4, 4, 0>(l1), byte_field<6, 2, 4>(qh));
    }
    template <int V>
    static __m256i scale(const Head& h) { return h.sc.scale<V>(); }
};

/// Q3_K: quants q2 + 4·hbit in 0..7 (the format's −4 through corr = the 16 signed scales).
struct DecQ3_K {
    using Block = quant::block_q3_K;
    static constexpr bool kSigned = false, kMin = false;
    static constexpr int kOffsetShift = 2;
    using Head = DecQ6_K::Head;
    static Head head(const Block& b) {
        const uint32_t a = load_u32(b.scales), m = load_u32(b.scales + 4), c = load_u32(b.scales + 8);
        const uint32_t w0 = (a & 0x0f0f0f0fu) | ((c << 4) & 0x30303030u);
        const uint32_t w1 = (m & 0x0f0f0f0fu) | ((c << 2) & 0x30303030u);
        const uint32_t w2 = ((a >> 4) & 0x0f0f0f0fu) | (c & 0x30303030u);
        const uint32_t w3 = ((m >> 4) & 0x0f0f0f0fu) | ((c >> 2) & 0x30303030u);
        const __m128i biased = _mm_set_epi32(static_cast<int>(w3), static_cast<int>(w2), static_cast<int>(w1), static_cast<int>(w0));
        const __m256i s16 = _mm256_cvtepi8_epi16(_mm_sub_epi8(biased, _mm_set1_epi8(32)));
        return {PairScales(s16), s16, _mm256_set1_ps(half_to_float(b.d))};
    }
    template <int H>
    static void quants(const Block& b, __m256i q[4]) {
        const __m256i lo = load_u8(b.qs + 32 * H), hm = load_u8(b.hmask);
        q[0] = _mm256_or_si256(byte_field<0, 2, 0>(lo), byte_field<4 * H + 0, 1, 2>(hm));
        q[1] = _mm256_or_si256(byte_field<2, 2, 0>(lo), byte_field<4 * H + 1, 1, 2>(hm));
        q[2] = _mm256_or_si256(byte_field<4, 2, 0>(lo), byte_field<4 * H + 2, 1, 2>(hm));
        q[3] = _mm256_or_si256(byte_field<6, 2, 0>(lo), byte_field<4 * H + 3, 1, 2>(hm));
    }
    template <int V>
    static __m256i scale(const Head& h) { return h.sc.scale<V>(); }
};

/// Q2_K: quants 0..3; scales[s] holds scale (low nibble) and min (high nibble) of sub-block s.
struct DecQ2_K {
    using Block = quant::block_q2_K;
    static constexpr bool kSigned = false, kMin = true;
    static constexpr int kOffsetShift = 0;
    struct Head {
        PairScales sc;
        __m256i corr;
        __m256 d, dmin;  // broadcast
    };
    static Head head(const Block& b) {
        const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
        const __m128i nib = _mm_set1_epi8(0x0f);
        const __m256i s16 = _mm256_cvtepu8_epi16(_mm_and_si128(raw, nib));
        const __m256i m16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(raw, 4), nib));
        return {PairScales(s16), m16, _mm256_set1_ps(half_to_float(b.d)), _mm256_set1_ps(half_to_float(b.dmin))};
    }
    template <int H>
    static void quants(const Block& b, __m256i q[4]) {
        const __m256i p = load_u8(b.qs + 32 * H);
        q[0] = byte_field<0, 2, 0>(p), q[1] = byte_field<2, 2, 0>(p), q[2] = byte_field<4, 2, 0>(p), q[3] = byte_field<6, 2, 0>(p);
    }
    template <int V>
    static __m256i scale(const Head& h) { return h.sc.scale<V>(); }
};

/// IQ4_XS: signed codebook values (kValuesIQ4NL); sub-block ib's 6-bit scale has its low 4 bits
/// in nibble ib%2 of scales_l[ib/2] and its high 2 bits at bit 2·ib of scales_h, minus 32.
struct DecIQ4_XS {
    using Block = quant::block_iq4_xs;
    static constexpr bool kSigned = true, kMin = false;
    static constexpr int kOffsetShift = 0;
    struct Head {
        __m256i scales;
        __m256 d;  // broadcast
    };
    static Head head(const Block& b) {
        const __m128i packed = _mm_cvtsi32_si128(static_cast<int>(load_u32(b.scales_l)));
        const __m128i nib = _mm_set1_epi8(0x0f);
        const __m128i low = _mm_cvtepu8_epi16(_mm_unpacklo_epi8(_mm_and_si128(packed, nib),
                                                                _mm_and_si128(_mm_srli_epi16(packed, 4), nib)));
        // high bits: (scales_h & 3 << 2·ib) moved to bits 14..15 by a multiply, then down to 4..5 (the
        // multiply leaves nothing below bit 14)
        const __m128i hmask = _mm_and_si128(_mm_set1_epi16(static_cast<short>(b.scales_h)),
                                            _mm_setr_epi16(3, 3 << 2, 3 << 4, 3 << 6, 3 << 8, 3 << 10, 3 << 12, static_cast<short>(3 << 14)));
        const __m128i high = _mm_srli_epi16(_mm_mullo_epi16(hmask, _mm_setr_epi16(1 << 14, 1 << 12, 1 << 10, 1 << 8, 1 << 6, 1 << 4, 1 << 2, 1)), 10);
        const __m128i sc = _mm_sub_epi16(_mm_or_si128(low, high), _mm_set1_epi16(32));
        return {_mm256_broadcastsi128_si256(sc), _mm256_set1_ps(half_to_float(b.d))};
    }
    template <int H>
    static void quants(const Block& b, __m256i q[4]) {
        const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(quant::kValuesIQ4NL)));
        for (int v = 0; v < 4; ++v) {
            const __m128i p = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 16 * (4 * H + v)));
            const __m128i lo = _mm_and_si128(p, _mm_set1_epi8(0x0f)), hi = _mm_and_si128(_mm_srli_epi16(p, 4), _mm_set1_epi8(0x0f));
            q[v] = _mm256_shuffle_epi8(table, _mm256_set_m128i(hi, lo));
        }
    }
    template <int V>
    static __m256i scale(const Head& h) { return bcast_lane16<V>(h.scales); }
};

}  // namespace tessel::cpu::avx2

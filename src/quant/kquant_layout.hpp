// Bit layouts shared by the K-quant reference code: packed sub-block scales, rounding.
//
// Facts of the GGUF format (ggml-common.h / ggml-quants.c):
//  - Q4_K / Q5_K keep 8 unsigned 6-bit scales and 8 unsigned 6-bit mins in 12 bytes. For
//    sub-block j < 4, byte j holds scale j (low 6 bits) and byte j+4 holds min j (low 6 bits).
//    For j >= 4, byte j+4 holds the low 4 bits of scale j (low nibble) and of min j (high
//    nibble); the top 2 bits of scale j sit in bits 6..7 of byte j-4, those of min j in bits
//    6..7 of byte j.
//  - Q3_K keeps 16 signed 6-bit scales in 12 bytes, stored with a +32 offset. The low nibble of
//    scale j is byte j (j < 8, low nibble) or byte j-8 (j >= 8, high nibble); its top 2 bits are
//    bits 2*(j/4)..2*(j/4)+1 of byte 8 + j%4.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace tessel::quant::kq {

/// Round to the nearest integer, ties to even, for |v| <= 2^22 (larger magnitudes give a
/// wrong but defined result; NaN gives an arbitrary int). Adding 1.5 * 2^23 leaves the rounded
/// integer in the low mantissa bits; this is the rounding ggml's quantizers use, so results
/// match them bit for bit. Never converts a float to int directly, so no input is UB.
inline int round_nearest(float v) {
    const float shifted = v + 12582912.0f;
    uint32_t bits;
    std::memcpy(&bits, &shifted, sizeof bits);
    return static_cast<int>(bits & 0x007fffffu) - 0x00400000;
}

/// round_nearest(v) clamped to [lo, hi] (|lo|, |hi| <= 2^22). v is clamped first, so any
/// float is safe: -Inf gives lo, +Inf gives hi, NaN gives lo.
inline int round_clamped(float v, int lo, int hi) {
    const float flo = static_cast<float>(lo), fhi = static_cast<float>(hi);
    const float above = flo < v ? v : flo;  // NaN compares false: takes flo
    return round_nearest(above < fhi ? above : fhi);
}

/// Scale and min (each 0..63) of sub-block j (0..7) from the 12 packed bytes of Q4_K / Q5_K.
inline void unpack_scale_min_k4(const uint8_t* packed, int j, uint8_t& scale, uint8_t& min) {
    if (j < 4) {
        scale = packed[j] & 63;
        min = packed[j + 4] & 63;
    } else {
        scale = static_cast<uint8_t>((packed[j + 4] & 0x0f) | ((packed[j - 4] >> 6) << 4));
        min = static_cast<uint8_t>((packed[j + 4] >> 4) | ((packed[j] >> 6) << 4));
    }
}

/// Pack 8 scales and 8 mins (each 0..63; higher bits are dropped) into 12 bytes (Q4_K/Q5_K).
inline void pack_scale_min_k4(const uint8_t* scales, const uint8_t* mins, uint8_t* packed) {
    for (int j = 0; j < 4; ++j) {
        packed[j] = static_cast<uint8_t>((scales[j] & 63) | ((scales[j + 4] >> 4) << 6));
        packed[j + 4] = static_cast<uint8_t>((mins[j] & 63) | ((mins[j + 4] >> 4) << 6));
        packed[j + 8] = static_cast<uint8_t>((scales[j + 4] & 0x0f) | ((mins[j + 4] & 0x0f) << 4));
    }
}

/// Signed scale (-32..31) of sub-block j (0..15) from the 12 packed bytes of Q3_K.
inline int unpack_scale_q3k(const uint8_t* packed, int j) {
    const int low = j < 8 ? (packed[j] & 0x0f) : (packed[j - 8] >> 4);
    const int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
    return (low | (high << 4)) - 32;
}

/// Pack 16 signed scales (each -32..31) into 12 bytes (Q3_K).
inline void pack_scales_q3k(const int8_t* scales, uint8_t* packed) {
    std::memset(packed, 0, 12);
    for (int j = 0; j < 16; ++j) {
        const int u = (scales[j] + 32) & 63;
        if (j < 8) packed[j] |= static_cast<uint8_t>(u & 0x0f);
        else packed[j - 8] |= static_cast<uint8_t>((u & 0x0f) << 4);
        packed[8 + j % 4] |= static_cast<uint8_t>((u >> 4) << (2 * (j / 4)));
    }
}

}  // namespace tessel::quant::kq

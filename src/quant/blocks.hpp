// GGUF quantized block layouts (bit-exact with files written by ggml/llama.cpp).
//
// Facts of the format (ggml-common.h). fp16 fields are stored as raw binary16 bits.
// Every block is a packed byte layout; static_asserts pin the sizes to the dtype table.
#pragma once

#include <cstdint>
#include <cstring>

namespace tessel::quant {

inline constexpr int QK4_0 = 32, QK4_1 = 32, QK5_0 = 32, QK5_1 = 32, QK8_0 = 32, QK8_1 = 32;
inline constexpr int QK_K = 256;          ///< super-block size of the K-quants
inline constexpr int K_SCALE_SIZE = 12;   ///< packed 6-bit scales/mins of Q4_K/Q5_K
inline constexpr int QK4_NL = 32;
inline constexpr int QK_MXFP4 = 32;

/// Q4_0: x = d * (q - 8), q in 0..15; low nibbles hold elements 0..15, high nibbles 16..31.
struct block_q4_0 { uint16_t d; uint8_t qs[QK4_0 / 2]; };
/// Q4_1: x = d * q + m.
struct block_q4_1 { uint16_t d; uint16_t m; uint8_t qs[QK4_1 / 2]; };
/// Q5_0: x = d * (q - 16); qh bit j is the 5th bit of element j.
struct block_q5_0 { uint16_t d; uint8_t qh[4]; uint8_t qs[QK5_0 / 2]; };
/// Q5_1: x = d * q + m.
struct block_q5_1 { uint16_t d; uint16_t m; uint8_t qh[4]; uint8_t qs[QK5_1 / 2]; };
/// Q8_0: x = d * q.
struct block_q8_0 { uint16_t d; int8_t qs[QK8_0]; };
/// Q8_1: x = d * q; s = d * sum(q) (used by dot products with Q4_1/Q5_1).
struct block_q8_1 { uint16_t d; uint16_t s; int8_t qs[QK8_1]; };

/// Q2_K: 16 sub-blocks of 16; scales: low nibble = scale, high nibble = min (4 bits each).
struct block_q2_K { uint8_t scales[QK_K / 16]; uint8_t qs[QK_K / 4]; uint16_t d; uint16_t dmin; };
/// Q3_K: 16 sub-blocks of 16, 6-bit signed scales packed in 12 bytes; hmask is the 3rd bit.
struct block_q3_K { uint8_t hmask[QK_K / 8]; uint8_t qs[QK_K / 4]; uint8_t scales[12]; uint16_t d; };
/// Q4_K: 8 sub-blocks of 32, 6-bit scales and mins packed in 12 bytes.
struct block_q4_K { uint16_t d; uint16_t dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qs[QK_K / 2]; };
/// Q5_K: as Q4_K plus a 5th bit per element in qh.
struct block_q5_K { uint16_t d; uint16_t dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qh[QK_K / 8]; uint8_t qs[QK_K / 2]; };
/// Q6_K: 16 sub-blocks of 16, int8 scales; 4 low bits in ql, 2 high bits in qh.
struct block_q6_K { uint8_t ql[QK_K / 2]; uint8_t qh[QK_K / 4]; int8_t scales[QK_K / 16]; uint16_t d; };
/// Q8_K: float scale, int8 quants, bsums = sums of each group of 16 quants.
struct block_q8_K { float d; int8_t qs[QK_K]; int16_t bsums[QK_K / 16]; };

/// IQ4_NL: 4-bit indices into the non-linear table kvalues_iq4nl, nibble order as Q4_0.
struct block_iq4_nl { uint16_t d; uint8_t qs[QK4_NL / 2]; };
/// IQ4_XS: 8 sub-blocks of 32 with 6-bit scales (low 4 bits in scales_l, high 2 in scales_h).
struct block_iq4_xs { uint16_t d; uint16_t scales_h; uint8_t scales_l[QK_K / 64]; uint8_t qs[QK_K / 2]; };
/// MXFP4 (OCP microscaling): E8M0 shared exponent e, 4-bit E2M1 values, nibble order as Q4_0.
struct block_mxfp4 { uint8_t e; uint8_t qs[QK_MXFP4 / 2]; };

static_assert(sizeof(block_q4_0) == 18);
static_assert(sizeof(block_q4_1) == 20);
static_assert(sizeof(block_q5_0) == 22);
static_assert(sizeof(block_q5_1) == 24);
static_assert(sizeof(block_q8_0) == 34);
static_assert(sizeof(block_q8_1) == 36);
static_assert(sizeof(block_q2_K) == 84);
static_assert(sizeof(block_q3_K) == 110);
static_assert(sizeof(block_q4_K) == 144);
static_assert(sizeof(block_q5_K) == 176);
static_assert(sizeof(block_q6_K) == 210);
static_assert(sizeof(block_q8_K) == 292);
static_assert(sizeof(block_iq4_nl) == 18);
static_assert(sizeof(block_iq4_xs) == 136);
static_assert(sizeof(block_mxfp4) == 17);

/// Non-linear 4-bit codebook of IQ4_NL / IQ4_XS (format constant).
inline constexpr int8_t kValuesIQ4NL[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

/// E2M1 code -> value times 2 (format constant; MXFP4 dequant halves the E8M0 scale to match).
inline constexpr int8_t kValuesMXFP4x2[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/// Block number i of a packed row of blocks B (memcpy: `src` needs no alignment).
template <typename B>
inline B load_block(const void* src, int64_t i) {
    B b;
    std::memcpy(&b, static_cast<const char*>(src) + i * static_cast<int64_t>(sizeof(B)), sizeof(B));
    return b;
}

/// Writes block b as block number i of a packed row (`dst` needs no alignment).
template <typename B>
inline void store_block(void* dst, int64_t i, const B& b) {
    std::memcpy(static_cast<char*>(dst) + i * static_cast<int64_t>(sizeof(B)), &b, sizeof(B));
}

}  // namespace tessel::quant

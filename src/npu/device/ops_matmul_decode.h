/* Internal to the matmul kernels: a 32x32 weight tile (layout: src/npu/host/tiled.hpp) decoded
 * into 32 / L parts of 8 vectors of 4L bytes (L = vec_i8.h's TSL_VI32_LANES: 16, or 32 with HVX),
 * vector (h * 8 + j), byte 4i + t = the code of row L h + i, element 4j + t. That is the operand
 * layout of the vector unit's 4-element dot products (vec_i8.h) and, with L = 16, per half h (8
 * rows of 64 bytes) an AMX B tile (Intel SDM, "Intel AMX": B[k/4][4n + k%4]).
 * Codes are offset to be unsigned: Q4_0 and Q4_1 their nibble, Q8_0 q + 128, IQ4_NL and MXFP4
 * their table value + 128; code - offset is the quant's signed value.
 * Built with AVX-512 VBMI two-table byte permutes where the including file's flags have them
 * (TSL_MM_VBMI: one permute per output vector), else AVX-512 BW intrinsics (TSL_VI8_AVX512), else
 * plain C. */
#ifndef TESSEL_NPU_DEVICE_OPS_MATMUL_DECODE_H
#define TESSEL_NPU_DEVICE_OPS_MATMUL_DECODE_H

#include <stdint.h>

#include "npu/device/vec_i8.h"
#include "npu/proto/proto.h"

/* The unsigned code table of a 4-bit type (index: the nibble; NULL: the nibble itself) and the
 * offset of its codes. IQ4_NL: kvalues_iq4nl + 128; MXFP4: twice the E2M1 value + 128 (the values
 * of the GGUF formats). */
static inline const uint8_t* mm_lut(uint32_t type, int32_t* offset) {
    static const uint8_t k_iq4nl[16] = {1, 24, 45, 63, 79, 93, 106, 118, 129, 141, 153, 166, 181, 197, 217, 241};
    static const uint8_t k_mxfp4[16] = {128, 129, 130, 131, 132, 134, 136, 140, 128, 127, 126, 125, 124, 122, 120, 116};
    switch (type) {
    case TSL_NPU_TYPE_Q4_0: *offset = 8; return 0;
    case TSL_NPU_TYPE_Q4_1: *offset = 0; return 0;
    case TSL_NPU_TYPE_IQ4_NL: *offset = 128; return k_iq4nl;
    case TSL_NPU_TYPE_MXFP4: *offset = 128; return k_mxfp4;
    default: *offset = 128; return 0; /* Q8_0 */
    }
}

#if defined(TSL_VI8_AVX512) && defined(__AVX512VBMI__)
#define TSL_MM_VBMI 1

/* The byte permutes of one 4-element group: byte 4i + t of half h's vector comes from
 *  - 4-bit types, tables (lo, hi) = (low nibbles, high nibbles) of the group's 64 quant bytes
 *    (column pair 2j in bytes 0..31, 2j + 1 in 32..63, byte r = row r): element 4j + t of row
 *    r = 16h + i is in lo (t even) or hi (t odd), at byte r (t < 2) or 32 + r (t >= 2);
 *  - Q8_0, tables (a, b) = column pairs 2j and 2j + 1 (64 bytes each, bytes 2r and 2r + 1 = row
 *    r's two elements): elements 4j, 4j + 1 from a, 4j + 2, 4j + 3 from b.
 * Index bit 6 selects the second table (VPERMI2B / VPERMT2B, Intel SDM). */
#define MM_Q4_GROUP(i, h) (16 * (h) + (i)), (64 + 16 * (h) + (i)), (32 + 16 * (h) + (i)), (96 + 16 * (h) + (i))
#define MM_Q8_GROUP(i, h) (2 * (16 * (h) + (i))), (2 * (16 * (h) + (i)) + 1), (64 + 2 * (16 * (h) + (i))), (65 + 2 * (16 * (h) + (i)))
#define MM_HALF(G, h)                                                                                            \
    G(0, h), G(1, h), G(2, h), G(3, h), G(4, h), G(5, h), G(6, h), G(7, h), G(8, h), G(9, h), G(10, h), G(11, h), \
        G(12, h), G(13, h), G(14, h), G(15, h)
static const _Alignas(64) uint8_t k_mm_perm_q4[2][64] = {{MM_HALF(MM_Q4_GROUP, 0)}, {MM_HALF(MM_Q4_GROUP, 1)}};
static const _Alignas(64) uint8_t k_mm_perm_q8[2][64] = {{MM_HALF(MM_Q8_GROUP, 0)}, {MM_HALF(MM_Q8_GROUP, 1)}};
#undef MM_HALF
#undef MM_Q8_GROUP
#undef MM_Q4_GROUP

/* What the group decode needs, loaded once per kernel call. */
typedef struct mm_decoder {
    uint32_t type;
    int has_lut;
    __m512i lut, perm0, perm1;
} mm_decoder;

static inline mm_decoder mm_decoder_of(uint32_t type, const uint8_t* lut) {
    mm_decoder dc;
    dc.type = type;
    dc.has_lut = lut != 0;
    dc.lut = lut ? _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i*)lut)) : _mm512_setzero_si512();
    const uint8_t(*perm)[64] = type == TSL_NPU_TYPE_Q8_0 ? k_mm_perm_q8 : k_mm_perm_q4;
    dc.perm0 = _mm512_load_si512((const void*)perm[0]);
    dc.perm1 = _mm512_load_si512((const void*)perm[1]);
    return dc;
}

/* Group j (elements 4j..4j+3) of tile t: the vectors (h * 8 + j) of the layout above, h = 0 in
 * *v0, h = 1 in *v1. */
static inline void mm_decode_group(const mm_decoder* dc, const uint8_t* t, int j, __m512i* v0, __m512i* v1) {
    if (dc->type == TSL_NPU_TYPE_Q8_0) {
        const __m512i a = _mm512_loadu_si512((const void*)(t + 128 * j));
        const __m512i b = _mm512_loadu_si512((const void*)(t + 128 * j + 64));
        const __m512i sign = _mm512_set1_epi8((char)0x80);
        *v0 = _mm512_xor_si512(_mm512_permutex2var_epi8(a, dc->perm0, b), sign);
        *v1 = _mm512_xor_si512(_mm512_permutex2var_epi8(a, dc->perm1, b), sign);
        return;
    }
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    const __m512i raw = _mm512_loadu_si512((const void*)(t + 64 * j));
    __m512i lo = _mm512_and_si512(raw, low4);
    __m512i hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
    if (dc->has_lut) {
        lo = _mm512_shuffle_epi8(dc->lut, lo);
        hi = _mm512_shuffle_epi8(dc->lut, hi);
    }
    *v0 = _mm512_permutex2var_epi8(lo, dc->perm0, hi);
    *v1 = _mm512_permutex2var_epi8(lo, dc->perm1, hi);
}
#endif

/* Decodes tile t into out (16 vectors of 64 bytes, layout above). */
static inline void mm_decode(uint32_t type, const uint8_t* t, const uint8_t* lut, uint8_t* out) {
#if defined(TSL_MM_VBMI)
    const mm_decoder dc = mm_decoder_of(type, lut);
    for (int j = 0; j < 8; ++j) {
        __m512i v0, v1;
        mm_decode_group(&dc, t, j, &v0, &v1);
        _mm512_storeu_si512((void*)(out + j * 64), v0);
        _mm512_storeu_si512((void*)(out + (8 + j) * 64), v1);
    }
#elif defined(TSL_VI8_AVX512)
    const __m512i low4 = _mm512_set1_epi32(0x0f);
    const __m512i lut_v = lut ? _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i*)lut)) : _mm512_setzero_si512();
    for (int h = 0; h < 2; ++h)
        for (int j = 0; j < 8; ++j) {
            __m512i v;
            if (type == TSL_NPU_TYPE_Q8_0) {
                const __m512i a = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i*)(t + 2 * j * 64 + 32 * h)));
                const __m512i b = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i*)(t + (2 * j + 1) * 64 + 32 * h)));
                v = _mm512_xor_si512(_mm512_or_si512(a, _mm512_slli_epi32(b, 16)), _mm512_set1_epi32((int)0x80808080u));
            } else {
                const __m512i a = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)(t + 2 * j * 32 + 16 * h)));
                const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)(t + (2 * j + 1) * 32 + 16 * h)));
                v = _mm512_or_si512(
                    _mm512_or_si512(_mm512_and_si512(a, low4), _mm512_slli_epi32(_mm512_srli_epi32(a, 4), 8)),
                    _mm512_or_si512(_mm512_slli_epi32(_mm512_and_si512(b, low4), 16), _mm512_slli_epi32(_mm512_srli_epi32(b, 4), 24)));
                if (lut) v = _mm512_shuffle_epi8(lut_v, v);
            }
            _mm512_storeu_si512((void*)(out + (h * 8 + j) * 64), v);
        }
#else
    for (int r = 0; r < 32; ++r) {
        uint8_t* row = out + (r / TSL_VI32_LANES) * 8 * TSL_VU8_LANES + 4 * (r % TSL_VI32_LANES);
        for (int j = 0; j < 8; ++j) {
            uint8_t* o = row + j * TSL_VU8_LANES;
            if (type == TSL_NPU_TYPE_Q8_0) {
                o[0] = t[2 * j * 64 + 2 * r] ^ 0x80u;
                o[1] = t[2 * j * 64 + 2 * r + 1] ^ 0x80u;
                o[2] = t[(2 * j + 1) * 64 + 2 * r] ^ 0x80u;
                o[3] = t[(2 * j + 1) * 64 + 2 * r + 1] ^ 0x80u;
                continue;
            }
            const uint8_t b0 = t[2 * j * 32 + r], b1 = t[(2 * j + 1) * 32 + r];
            const uint8_t n[4] = {(uint8_t)(b0 & 15u), (uint8_t)(b0 >> 4), (uint8_t)(b1 & 15u), (uint8_t)(b1 >> 4)};
            for (int k = 0; k < 4; ++k) o[k] = lut ? lut[n[k]] : n[k];
        }
    }
#endif
}

#endif /* TESSEL_NPU_DEVICE_OPS_MATMUL_DECODE_H */

/* The matmul micro-kernels (tiled, and the flat pieces) on AVX2 + FMA + F16C, for x86 hosts
 * without AVX-512 (e.g. AMD Zen 2 / Zen 3); built with those flags by the _avx2 suffix rule of
 * cmake/, left out of the Hexagon check by its name. Results equal the plain C kernel's bit for bit:
 * the integer block dots are exact, and the float scaling is tsl_vi32_scale_acc's operations in its
 * order (vec_i8.h).
 *
 * AVX2 has no 4-element u8 x s8 -> s32 dot product. vpmaddubsw (u8 x s8, adjacent pairs summed to
 * a saturating s16) and vpmaddwd by ones (adjacent s16 pairs summed to s32) stand in for it:
 *  - Q4_0, Q4_1: the nibble codes (0..15, unsigned) times the Q8 activations (|x| <= 127): a pair sum
 *    is at most 2 * 15 * 127 = 3810, so a tile's 8 groups add up in s16 (<= 30480, no saturation)
 *    and one vpmaddwd per tile widens them; the code offset is taken back with the activation
 *    block's quant sum, as in the C kernel.
 *  - Q8_0, IQ4_NL, MXFP4: the signed values w (table values for the 4-bit ones):
 *    vpmaddubsw(|w|, x with w's sign) (a pair sum <= 2 * 128 * 127 = 32512), widened per group.
 * A 4-element group j of a tile (elements 4j..4j+3 of its 32 rows; layout src/npu/host/tiled.hpp)
 * is decoded into four vectors whose 32-bit lanes hold one row's 4 values each (the dot layout);
 * the rows come out in an order fixed by the unpacks, put back in order once per tile (mm2_rows).
 * One activation column (a decode step) decodes each group into registers and uses it at once; more
 * columns decode a tile once onto the stack and read it per column. */
#include <immintrin.h>

#include "npu/device/half.h"
#include "npu/device/ops_matmul.h"
#include "npu/device/ops_matmul_decode.h"
#include "npu/proto/proto.h"

/* What a kernel call decodes with. */
typedef struct mm2_decoder {
    uint32_t type;
    int is_signed; /* the signed path (Q8_0, IQ4_NL, MXFP4) */
    int has_lut;
    int32_t offset; /* the unsigned codes' offset (Q4_0 8, Q4_1 0); 0 on the signed path */
    __m256i lut;    /* IQ4_NL / MXFP4: the signed values of the 16 codes, in both 128-bit lanes */
} mm2_decoder;

static mm2_decoder mm2_decoder_of(uint32_t type) {
    mm2_decoder dc;
    int32_t offset;
    const uint8_t* lut = mm_lut(type, &offset);
    dc.type = type;
    dc.is_signed = !(type == TSL_NPU_TYPE_Q4_0 || type == TSL_NPU_TYPE_Q4_1);
    dc.has_lut = lut != 0;
    dc.offset = dc.is_signed ? 0 : offset;
    /* mm_lut's codes are value + 128: flipping bit 7 gives the value as a signed byte */
    dc.lut = lut ? _mm256_xor_si256(_mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i*)(const void*)lut)),
                                    _mm256_set1_epi8((char)0x80))
                 : _mm256_setzero_si256();
    return dc;
}

static inline __m256i mm2_load(const uint8_t* p) { return _mm256_loadu_si256((const __m256i*)(const void*)p); }

/* Group j of tile t in the dot layout. Rows per vector (128-bit lane 0 | lane 1):
 *   Q8_0:        v0 0-3 | 8-11,  v1 4-7 | 12-15,  v2 16-19 | 24-27,  v3 20-23 | 28-31
 *   4-bit types: v0 0-3 | 16-19, v1 4-7 | 20-23,  v2 8-11 | 24-27,   v3 12-15 | 28-31 */
static inline void mm2_group(const mm2_decoder* dc, const uint8_t* t, int j, __m256i v[4]) {
    if (dc->type == TSL_NPU_TYPE_Q8_0) { /* column pair p at 64p: bytes 2r, 2r + 1 = row r's two values */
        const uint8_t* p = t + 128 * j;
        const __m256i a0 = mm2_load(p), a1 = mm2_load(p + 32), c0 = mm2_load(p + 64), c1 = mm2_load(p + 96);
        v[0] = _mm256_unpacklo_epi16(a0, c0);
        v[1] = _mm256_unpackhi_epi16(a0, c0);
        v[2] = _mm256_unpacklo_epi16(a1, c1);
        v[3] = _mm256_unpackhi_epi16(a1, c1);
        return;
    }
    /* column pair p at 32p: byte r = row r's element 2p (low nibble) and 2p + 1 (high nibble) */
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    const __m256i b0 = mm2_load(t + 64 * j), b1 = mm2_load(t + 64 * j + 32);
    __m256i lo0 = _mm256_and_si256(b0, low4), hi0 = _mm256_and_si256(_mm256_srli_epi16(b0, 4), low4);
    __m256i lo1 = _mm256_and_si256(b1, low4), hi1 = _mm256_and_si256(_mm256_srli_epi16(b1, 4), low4);
    if (dc->has_lut) {
        lo0 = _mm256_shuffle_epi8(dc->lut, lo0);
        hi0 = _mm256_shuffle_epi8(dc->lut, hi0);
        lo1 = _mm256_shuffle_epi8(dc->lut, lo1);
        hi1 = _mm256_shuffle_epi8(dc->lut, hi1);
    }
    const __m256i w0 = _mm256_unpacklo_epi8(lo0, hi0), w1 = _mm256_unpackhi_epi8(lo0, hi0);
    const __m256i w2 = _mm256_unpacklo_epi8(lo1, hi1), w3 = _mm256_unpackhi_epi8(lo1, hi1);
    v[0] = _mm256_unpacklo_epi16(w0, w2);
    v[1] = _mm256_unpackhi_epi16(w0, w2);
    v[2] = _mm256_unpacklo_epi16(w1, w3);
    v[3] = _mm256_unpackhi_epi16(w1, w3);
}

/* A tile's dot sums, per dot-layout vector: s16 (unsigned path) or s32 (signed path). */
typedef struct mm2_sums {
    __m256i s[4];
} mm2_sums;

static inline void mm2_zero(mm2_sums* a) {
    for (int i = 0; i < 4; ++i) a->s[i] = _mm256_setzero_si256();
}

/* a += group v . the activation group xb (its 4 quants in every 32-bit lane). */
static inline void mm2_dot(const mm2_decoder* dc, mm2_sums* a, const __m256i v[4], __m256i xb) {
    if (!dc->is_signed) {
        for (int i = 0; i < 4; ++i) a->s[i] = _mm256_add_epi16(a->s[i], _mm256_maddubs_epi16(v[i], xb));
        return;
    }
    const __m256i ones = _mm256_set1_epi16(1);
    for (int i = 0; i < 4; ++i) {
        const __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(v[i], v[i]), _mm256_sign_epi8(xb, v[i]));
        a->s[i] = _mm256_add_epi32(a->s[i], _mm256_madd_epi16(p, ones));
    }
}

/* The tile's 32 row sums as s32 in row order: r[q] = rows 8q..8q+7. */
static inline void mm2_rows(const mm2_decoder* dc, const mm2_sums* a, __m256i r[4]) {
    __m256i s[4];
    const __m256i ones = _mm256_set1_epi16(1);
    for (int i = 0; i < 4; ++i) s[i] = dc->is_signed ? a->s[i] : _mm256_madd_epi16(a->s[i], ones);
    const __m256i e0 = _mm256_permute2x128_si256(s[0], s[1], 0x20), e1 = _mm256_permute2x128_si256(s[0], s[1], 0x31);
    const __m256i e2 = _mm256_permute2x128_si256(s[2], s[3], 0x20), e3 = _mm256_permute2x128_si256(s[2], s[3], 0x31);
    const int q8 = dc->type == TSL_NPU_TYPE_Q8_0;
    r[0] = e0;
    r[1] = q8 ? e1 : e2;
    r[2] = q8 ? e2 : e1;
    r[3] = e3;
}

/* A tile's row scales (and Q4_1's mins; else zeros) as floats, rows 8q..8q+7 in d[q], m[q]. */
static inline void mm2_scales(uint32_t type, const uint8_t* tile, __m256 d[4], __m256 m[4]) {
    if (type == TSL_NPU_TYPE_MXFP4) {
        float df[32], mf[32];
        tsl_npu_tile_scales(type, tile, df, mf);
        for (int q = 0; q < 4; ++q) {
            d[q] = _mm256_loadu_ps(df + 8 * q);
            m[q] = _mm256_setzero_ps();
        }
        return;
    }
    const uint8_t* s = tile + (type == TSL_NPU_TYPE_Q8_0 ? 1024 : 512);
    for (int q = 0; q < 4; ++q) {
        d[q] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(const void*)(s + 16 * q)));
        m[q] = type == TSL_NPU_TYPE_Q4_1 ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(const void*)(s + 64 + 16 * q)))
                                         : _mm256_setzero_ps();
    }
}

/* acc + (d * (dx * (float)(s - off)) [+ m * msx]): tsl_vi32_scale_acc's operations, 8 rows. */
static inline __m256 mm2_scale_acc(__m256 acc, __m256i s, int32_t off, float dx, __m256 d, __m256 m, int has_min,
                                   float msx) {
    const __m256 dot = _mm256_mul_ps(_mm256_set1_ps(dx), _mm256_cvtepi32_ps(_mm256_sub_epi32(s, _mm256_set1_epi32(off))));
    __m256 term = _mm256_mul_ps(d, dot);
    if (has_min) term = _mm256_add_ps(term, _mm256_mul_ps(m, _mm256_set1_ps(msx)));
    return _mm256_add_ps(acc, term);
}

static inline __m256i mm2_xgroup(const int8_t* xq) {
    int32_t g;
    __builtin_memcpy(&g, xq, 4);
    return _mm256_set1_epi32(g);
}

/* The kernels stream their row tile: at K tile kt they ask for the lines of tile kt + 4 (as the
 * other builds do; the next item's first tiles are the DMA stand-in's part: ops_matmul.c). */
static inline void mm2_prefetch_tile(const tsl_npu_mm_tile_args* a, int64_t kt) {
    if (kt + 4 >= a->n_kt) return;
    const uint8_t* t = a->tiles + (uint64_t)(kt + 4) * a->tile_bytes;
    for (uint32_t b = 0; b < a->tile_bytes; b += 64) __builtin_prefetch(t + b, 0, 3);
}

/* One activation column: groups decoded into registers, the 32 accumulators in four registers. */
static void mm2_gemv(const tsl_npu_mm_tile_args* a, const mm2_decoder* dc) {
    const int has_min = a->type == TSL_NPU_TYPE_Q4_1;
    const uint8_t* row = a->act[0];
    const float* dxs = (const float*)(row + a->q_bytes);
    const int32_t* sxs = (const int32_t*)(row + a->q_bytes + a->s_bytes);
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t kt = 0; kt < a->n_kt; ++kt) {
        const uint8_t* tile = a->tiles + (uint64_t)kt * a->tile_bytes;
        const int8_t* xq = (const int8_t*)row + kt * 32;
        mm2_prefetch_tile(a, kt);
        mm2_sums s;
        mm2_zero(&s);
        for (int j = 0; j < 8; ++j) {
            __m256i v[4];
            mm2_group(dc, tile, j, v);
            mm2_dot(dc, &s, v, mm2_xgroup(xq + 4 * j));
        }
        __m256i r[4];
        __m256 d[4], m[4];
        mm2_rows(dc, &s, r);
        mm2_scales(a->type, tile, d, m);
        const float dx = dxs[kt];
        const int32_t sx = sxs[kt];
        const float msx = dx * (float)sx;
        for (int q = 0; q < 4; ++q) acc[q] = mm2_scale_acc(acc[q], r[q], dc->offset * sx, dx, d[q], m[q], has_min, msx);
    }
    for (int q = 0; q < 4; ++q) _mm256_storeu_ps(a->acc + 8 * q, acc[q]);
}

void tsl_npu_mm_tile_cols_avx2(const tsl_npu_mm_tile_args* a) {
    const mm2_decoder dc = mm2_decoder_of(a->type);
    if (a->n_cols == 1) {
        mm2_gemv(a, &dc);
        return;
    }
    const int has_min = a->type == TSL_NPU_TYPE_Q4_1;
    __m256i codes[8][4];
    for (uint32_t i = 0; i < a->n_cols * 32u; ++i) a->acc[i] = 0.0f;
    for (int64_t kt = 0; kt < a->n_kt; ++kt) {
        const uint8_t* tile = a->tiles + (uint64_t)kt * a->tile_bytes;
        mm2_prefetch_tile(a, kt);
        for (int j = 0; j < 8; ++j) mm2_group(&dc, tile, j, codes[j]);
        __m256 d[4], m[4];
        mm2_scales(a->type, tile, d, m);
        for (uint32_t c = 0; c < a->n_cols; ++c) {
            const uint8_t* row = a->act[c];
            const int8_t* xq = (const int8_t*)row + kt * 32;
            const float dx = ((const float*)(row + a->q_bytes))[kt];
            const int32_t sx = ((const int32_t*)(row + a->q_bytes + a->s_bytes))[kt];
            const float msx = dx * (float)sx;
            mm2_sums s;
            mm2_zero(&s);
            for (int j = 0; j < 8; ++j) mm2_dot(&dc, &s, codes[j], mm2_xgroup(xq + 4 * j));
            __m256i r[4];
            mm2_rows(&dc, &s, r);
            float* acc = a->acc + c * 32u;
            for (int q = 0; q < 4; ++q)
                _mm256_storeu_ps(acc + 8 * q, mm2_scale_acc(_mm256_loadu_ps(acc + 8 * q), r[q], dc.offset * sx, dx, d[q],
                                                            m[q], has_min, msx));
        }
    }
}

void tsl_npu_mm_quantize_avx2(const float* x, int64_t k, int8_t* q, float* d, int32_t* sums) {
    tsl_npu_quantize_q8_row(x, k, q, d, sums);
}

/* The flat kernel's pieces: F16 widened 8 at a time (exact); the dot in the C form's 16 partial
 * sums (two registers of 8), each a product then a sum, added pairwise at the end: the same bits
 * as tsl_npu_mm_dot_c. */
void tsl_npu_mm_widen_avx2(const uint16_t* h, float* out, int64_t k) {
    int64_t i = 0;
    for (; i + 8 <= k; i += 8) _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(const void*)(h + i))));
    for (; i < k; ++i) out[i] = tsl_npu_half_to_float(h[i]);
}

float tsl_npu_mm_dot_avx2(const float* a, const float* b, int64_t k) {
    float s[16];
    int64_t i = 0;
    __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
    for (; i + 16 <= k; i += 16) {
        lo = _mm256_add_ps(lo, _mm256_mul_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
        hi = _mm256_add_ps(hi, _mm256_mul_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8)));
    }
    _mm256_storeu_ps(s, lo);
    _mm256_storeu_ps(s + 8, hi);
    for (int l = 0; i < k; ++i, ++l) s[l] += a[i] * b[i];
    for (int w = 8; w >= 1; w /= 2)
        for (int l = 0; l < w; ++l) s[l] += s[l + w];
    return s[0];
}

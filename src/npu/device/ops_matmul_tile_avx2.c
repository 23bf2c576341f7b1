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
 * columns decode a tile once onto the stack and read it for four columns at a time, one half of
 * the rows per pass (8 s16 sums in registers), the last n_cols % 4 columns one by one. */
#include <immintrin.h>

#include "npu/device/half.h"
#include "npu/device/ops_matmul.h"
#include "npu/device/ops_matmul_decode.h"
#include "npu/proto/proto.h"

/* What a kernel call decodes with. The flags are the weight type's; every function taking a
 * decoder is inlined into a body specialised per type class (mm2_body), so they are constants
 * there and the branches on them fold away. */
typedef struct mm2_decoder {
    int q8;         /* Q8_0 (its own layout) */
    int is_signed;  /* the signed path: Q8_0, IQ4_NL, MXFP4 */
    int has_lut;    /* IQ4_NL, MXFP4 */
    int has_min;    /* Q4_1 */
    int32_t offset; /* the unsigned codes' offset (Q4_0 8, Q4_1 0); 0 on the signed path */
    __m256i lut;    /* IQ4_NL / MXFP4: the signed values of the 16 codes, in both 128-bit lanes */
} mm2_decoder;

#define MM2_INLINE static inline __attribute__((always_inline))

MM2_INLINE mm2_decoder mm2_decoder_of(uint32_t type, int q8, int is_signed, int has_lut, int has_min) {
    mm2_decoder dc;
    int32_t offset;
    const uint8_t* lut = mm_lut(type, &offset);
    dc.q8 = q8;
    dc.is_signed = is_signed;
    dc.has_lut = has_lut;
    dc.has_min = has_min;
    dc.offset = is_signed ? 0 : offset;
    /* mm_lut's codes are value + 128: flipping bit 7 gives the value as a signed byte */
    dc.lut = has_lut ? _mm256_xor_si256(_mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i*)(const void*)lut)),
                                        _mm256_set1_epi8((char)0x80))
                     : _mm256_setzero_si256();
    return dc;
}

MM2_INLINE __m256i mm2_load(const uint8_t* p) { return _mm256_loadu_si256((const __m256i*)(const void*)p); }

/* Group j of tile t in the dot layout. Rows per vector (128-bit lane 0 | lane 1):
 *   Q8_0:        v0 0-3 | 8-11,  v1 4-7 | 12-15,  v2 16-19 | 24-27,  v3 20-23 | 28-31
 *   4-bit types: v0 0-3 | 16-19, v1 4-7 | 20-23,  v2 8-11 | 24-27,   v3 12-15 | 28-31 */
MM2_INLINE void mm2_group(const mm2_decoder* dc, const uint8_t* t, int j, __m256i v[4]) {
    if (dc->q8) { /* column pair p at 64p: bytes 2r, 2r + 1 = row r's two values */
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

/* sum += the dot of the code vector w (|w| in aw on the signed path) with the activation group
 * xb (its 4 quants in every 32-bit lane): s16 lanes on the unsigned path, s32 on the signed one. */
MM2_INLINE __m256i mm2_dot(const mm2_decoder* dc, __m256i sum, __m256i w, __m256i aw, __m256i xb) {
    if (!dc->is_signed)
        sum = _mm256_add_epi16(sum, _mm256_maddubs_epi16(w, xb));
    else
        sum = _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_maddubs_epi16(aw, _mm256_sign_epi8(xb, w)), _mm256_set1_epi16(1)));
    /* the sum is taken in its register here: GCC 12 otherwise reorders the unrolled chains into
     * all products first (spilled to the stack), then add trees */
    __asm__("" : "+x"(sum));
    return sum;
}

/* A finished tile sum as s32 (the unsigned path widens its s16 pairs). */
MM2_INLINE __m256i mm2_widen(const mm2_decoder* dc, __m256i sum) {
    return dc->is_signed ? sum : _mm256_madd_epi16(sum, _mm256_set1_epi16(1));
}

/* fma((float)(s - off), d * dx, acc) [then fma(m, msx, .)]: tsl_vi32_scale_acc's operations, 8 rows. */
MM2_INLINE __m256 mm2_scale_acc(const mm2_decoder* dc, __m256 acc, __m256i s, int32_t off, float dx, __m256 d, __m256 m,
                                float msx) {
    const __m256 dot = _mm256_cvtepi32_ps(dc->offset ? _mm256_sub_epi32(s, _mm256_set1_epi32(off)) : s);
    acc = _mm256_fmadd_ps(dot, _mm256_mul_ps(d, _mm256_set1_ps(dx)), acc);
    return dc->has_min ? _mm256_fmadd_ps(m, _mm256_set1_ps(msx), acc) : acc;
}

/* A tile's row scales (and Q4_1's mins; else zeros) as floats, rows 8q..8q+7 at d + 8q, m + 8q. */
MM2_INLINE void mm2_scales(uint32_t type, const mm2_decoder* dc, const uint8_t* tile, float* d, float* m) {
    if (type == TSL_NPU_TYPE_MXFP4) {
        tsl_npu_tile_scales(type, tile, d, m);
        return;
    }
    const uint8_t* s = tile + (dc->q8 ? 1024 : 512);
    for (int q = 0; q < 4; ++q) {
        _mm256_storeu_ps(d + 8 * q, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(const void*)(s + 16 * q))));
        _mm256_storeu_ps(m + 8 * q, dc->has_min ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(const void*)(s + 64 + 16 * q)))
                                                : _mm256_setzero_ps());
    }
}

MM2_INLINE __m256i mm2_xgroup(const int8_t* xq) {
    int32_t g;
    __builtin_memcpy(&g, xq, 4);
    return _mm256_set1_epi32(g);
}

/* The kernels stream their row tile: at K tile kt they ask for the lines of tile kt + 4 (as the
 * other builds do; the next item's first tiles are the DMA stand-in's part: ops_matmul.c). */
MM2_INLINE void mm2_prefetch_tile(const tsl_npu_mm_tile_args* a, int64_t kt) {
    if (kt + 4 >= a->n_kt) return;
    const uint8_t* t = a->tiles + (uint64_t)(kt + 4) * a->tile_bytes;
    for (uint32_t b = 0; b < a->tile_bytes; b += 64) __builtin_prefetch(t + b, 0, 3);
}

/* Scales the two s32 sums of dot-layout vectors 2h, 2h + 1 of one column into its accumulators:
 * they hold (mm2_group's row orders) the 8-row groups 2h, 2h + 1 (Q8_0) or h, h + 2 (4-bit). */
MM2_INLINE void mm2_scale_half(const mm2_decoder* dc, __m256i s0, __m256i s1, int h, const float* d, const float* m,
                               int32_t off, float dx, float msx, float* acc) {
    const int qa = dc->q8 ? 2 * h : h, qb = dc->q8 ? 2 * h + 1 : h + 2;
    const __m256i ra = _mm256_permute2x128_si256(s0, s1, 0x20), rb = _mm256_permute2x128_si256(s0, s1, 0x31);
    _mm256_storeu_ps(acc + 8 * qa, mm2_scale_acc(dc, _mm256_loadu_ps(acc + 8 * qa), ra, off, dx, _mm256_loadu_ps(d + 8 * qa),
                                                 _mm256_loadu_ps(m + 8 * qa), msx));
    _mm256_storeu_ps(acc + 8 * qb, mm2_scale_acc(dc, _mm256_loadu_ps(acc + 8 * qb), rb, off, dx, _mm256_loadu_ps(d + 8 * qb),
                                                 _mm256_loadu_ps(m + 8 * qb), msx));
}

/* One activation column: each group decoded into registers and used at once, the 32 accumulators
 * in a local 32-float buffer (scaled per half tile, as the column passes do). */
MM2_INLINE void mm2_gemv(const tsl_npu_mm_tile_args* a, const mm2_decoder* dc) {
    const uint8_t* row = a->act[0];
    const float* dxs = (const float*)(row + a->q_bytes);
    const int32_t* sxs = (const int32_t*)(row + a->q_bytes + a->s_bytes);
    _Alignas(32) float acc[32] = {0}, d[32], m[32];
    for (int64_t kt = 0; kt < a->n_kt; ++kt) {
        const uint8_t* tile = a->tiles + (uint64_t)kt * a->tile_bytes;
        const int8_t* xq = (const int8_t*)row + kt * 32;
        mm2_prefetch_tile(a, kt);
        __m256i s[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j) {
            __m256i v[4];
            mm2_group(dc, tile, j, v);
            const __m256i xb = mm2_xgroup(xq + 4 * j);
            for (int i = 0; i < 4; ++i) s[i] = mm2_dot(dc, s[i], v[i], dc->is_signed ? _mm256_sign_epi8(v[i], v[i]) : v[i], xb);
        }
        mm2_scales(a->type, dc, tile, d, m);
        const float dx = dxs[kt];
        const int32_t sx = sxs[kt];
        for (int h = 0; h < 2; ++h)
            mm2_scale_half(dc, mm2_widen(dc, s[2 * h]), mm2_widen(dc, s[2 * h + 1]), h, d, m, dc->offset * sx, dx,
                           dx * (float)sx, acc);
    }
    __builtin_memcpy(a->acc, acc, sizeof acc);
}

/* Columns [c, c + 4) over half h of a decoded tile (dot-layout vectors 2h, 2h + 1 of every group):
 * each code vector is loaded once for the four columns, the 8 sums stay in registers; then
 * scaled into the columns' accumulators. */
MM2_INLINE void mm2_cols4_half(const tsl_npu_mm_tile_args* a, const mm2_decoder* dc, const __m256i* codes,
                               const __m256i* absc, uint32_t c, int64_t kt, int h, const float* d, const float* m) {
    const int8_t* xq[4];
    for (int i = 0; i < 4; ++i) xq[i] = (const int8_t*)a->act[c + i] + kt * 32;
    __m256i acc[4][2];
    for (int i = 0; i < 4; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
        const __m256i w0 = codes[4 * j + 2 * h], w1 = codes[4 * j + 2 * h + 1];
        const __m256i a0 = dc->is_signed ? absc[4 * j + 2 * h] : w0, a1 = dc->is_signed ? absc[4 * j + 2 * h + 1] : w1;
        for (int i = 0; i < 4; ++i) {
            const __m256i xb = mm2_xgroup(xq[i] + 4 * j);
            acc[i][0] = mm2_dot(dc, acc[i][0], w0, a0, xb);
            acc[i][1] = mm2_dot(dc, acc[i][1], w1, a1, xb);
        }
    }
    for (int i = 0; i < 4; ++i) {
        const uint8_t* row = a->act[c + i];
        const float dx = ((const float*)(row + a->q_bytes))[kt];
        const int32_t sx = ((const int32_t*)(row + a->q_bytes + a->s_bytes))[kt];
        mm2_scale_half(dc, mm2_widen(dc, acc[i][0]), mm2_widen(dc, acc[i][1]), h, d, m, dc->offset * sx, dx, dx * (float)sx,
                       a->acc + (c + i) * 32u);
    }
}

/* Column c alone over a decoded tile (the last n_cols % 4 columns). */
MM2_INLINE void mm2_col1(const tsl_npu_mm_tile_args* a, const mm2_decoder* dc, const __m256i* codes, const __m256i* absc,
                         uint32_t c, int64_t kt, const float* d, const float* m) {
    const uint8_t* row = a->act[c];
    const int8_t* xq = (const int8_t*)row + kt * 32;
    __m256i s[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
    for (int j = 0; j < 8; ++j) {
        const __m256i xb = mm2_xgroup(xq + 4 * j);
        for (int i = 0; i < 4; ++i) s[i] = mm2_dot(dc, s[i], codes[4 * j + i], dc->is_signed ? absc[4 * j + i] : codes[4 * j + i], xb);
    }
    const float dx = ((const float*)(row + a->q_bytes))[kt];
    const int32_t sx = ((const int32_t*)(row + a->q_bytes + a->s_bytes))[kt];
    for (int h = 0; h < 2; ++h)
        mm2_scale_half(dc, mm2_widen(dc, s[2 * h]), mm2_widen(dc, s[2 * h + 1]), h, d, m, dc->offset * sx, dx, dx * (float)sx,
                       a->acc + c * 32u);
}

/* The kernel for one type class (the decoder's flags constants after inlining). */
MM2_INLINE void mm2_body(const tsl_npu_mm_tile_args* a, const mm2_decoder* dc) {
    if (a->n_cols == 1) {
        mm2_gemv(a, dc);
        return;
    }
    _Alignas(32) __m256i codes[32], absc[32];
    _Alignas(32) float d[32], m[32];
    for (uint32_t i = 0; i < a->n_cols * 32u; ++i) a->acc[i] = 0.0f;
    for (int64_t kt = 0; kt < a->n_kt; ++kt) {
        const uint8_t* tile = a->tiles + (uint64_t)kt * a->tile_bytes;
        mm2_prefetch_tile(a, kt);
        for (int j = 0; j < 8; ++j) {
            mm2_group(dc, tile, j, codes + 4 * j);
            if (dc->is_signed)
                for (int i = 0; i < 4; ++i) absc[4 * j + i] = _mm256_sign_epi8(codes[4 * j + i], codes[4 * j + i]);
        }
        mm2_scales(a->type, dc, tile, d, m);
        uint32_t c = 0;
        for (; c + 4 <= a->n_cols; c += 4)
            for (int h = 0; h < 2; ++h) mm2_cols4_half(a, dc, codes, absc, c, kt, h, d, m);
        for (; c < a->n_cols; ++c) mm2_col1(a, dc, codes, absc, c, kt, d, m);
    }
}

static void mm2_q4_0(const tsl_npu_mm_tile_args* a) {
    const mm2_decoder dc = mm2_decoder_of(TSL_NPU_TYPE_Q4_0, 0, 0, 0, 0);
    mm2_body(a, &dc);
}
static void mm2_q4_1(const tsl_npu_mm_tile_args* a) {
    const mm2_decoder dc = mm2_decoder_of(TSL_NPU_TYPE_Q4_1, 0, 0, 0, 1);
    mm2_body(a, &dc);
}
static void mm2_q8_0(const tsl_npu_mm_tile_args* a) {
    const mm2_decoder dc = mm2_decoder_of(TSL_NPU_TYPE_Q8_0, 1, 1, 0, 0);
    mm2_body(a, &dc);
}
static void mm2_lut4(const tsl_npu_mm_tile_args* a) { /* IQ4_NL, MXFP4 */
    const mm2_decoder dc = mm2_decoder_of(a->type, 0, 1, 1, 0);
    mm2_body(a, &dc);
}

void tsl_npu_mm_tile_cols_avx2(const tsl_npu_mm_tile_args* a) {
    switch (a->type) {
    case TSL_NPU_TYPE_Q4_0: mm2_q4_0(a); return;
    case TSL_NPU_TYPE_Q4_1: mm2_q4_1(a); return;
    case TSL_NPU_TYPE_Q8_0: mm2_q8_0(a); return;
    default: mm2_lut4(a); return;
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

/* The virtual NPU's matrix unit: the tiled matmul on Intel AMX-INT8 (x86 hosts only; built with
 * AMX + AVX-512 flags by the _amx suffix rule, left out of the Hexagon check by its name). Runs
 * only where tsl_npu_platform.isa has TSL_NPU_ISA_AMX_INT8 (ops_matmul.c).
 *
 * TDPBSSD (Intel SDM, "Intel AMX"): C[m][n] += sum_k A[m][k] * B[k / 4][4n + k % 4], signed int8
 * both sides, int32 C. Here A = 16 activation columns x one 32-quant block (Q8 quants, 16 rows of
 * 32 bytes), B = one half of a reshaped weight tile (16 weight rows x 32 K as 8 rows of 64 bytes),
 * C = 16 columns x 16 weight rows. Weights enter as their signed values (Q4_0 q - 8, Q4_1 q,
 * Q8_0 q, IQ4_NL and MXFP4 their table value), so no offset correction is needed; each block's C
 * is scaled in float by the weight row's scale times the column's scale (Q4_1: plus min x column
 * scale x quant sum) and summed over K in 16 AVX-512 accumulators (one per column). The column
 * scales (and Q4_1's scale x sum) of a group are laid out block-major once per chunk of blocks
 * (gathered 16 at a time when the columns are evenly spaced), so each block broadcasts them from
 * one array for both halves of the row tile. Tile sets alternate between even and odd blocks and
 * the products run ahead of the scaling (amx_half), so consecutive blocks do not wait on each
 * other.
 * Tiles: 0, 1 = C (16 x 64 bytes), 2, 3 = A (16 x 32 bytes), 4, 5 = B (8 x 64 bytes). */
#include "npu/device/ops_matmul.h"
#include "npu/device/ops_matmul_decode.h"

/* The LDTILECFG operand (palette 1): bytes per row and rows of tiles 0..15. */
typedef struct amx_config {
    uint8_t palette;
    uint8_t start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_config;

_Static_assert(sizeof(amx_config) == 64, "LDTILECFG operand is 64 bytes");

/* A constant object: the loadconfig intrinsic's asm declares only a pointer-sized read, so a
 * configuration built on the stack may lose its stores to the optimizer. */
static const _Alignas(64) amx_config k_amx_config = {
    .palette = 1,
    .colsb = {64, 64, 32, 32, 64, 64},
    .rows = {16, 16, 16, 16, 8, 8},
};

void tsl_npu_mm_amx_begin(void) { _tile_loadconfig(&k_amx_config); }

void tsl_npu_mm_amx_end(void) { _tile_release(); }

void tsl_npu_mm_amx_reshape(uint32_t type, uint32_t tile_bytes, int64_t n_kt, const uint8_t* tiles, uint8_t* out) {
    int32_t offset;
    const uint8_t* lut = mm_lut(type, &offset);
    const __m512i off = _mm512_set1_epi8((char)offset);
    for (int64_t kt = 0; kt < n_kt; ++kt) {
        const uint8_t* tile = tiles + (uint64_t)kt * tile_bytes;
        uint8_t* o = out + (uint64_t)kt * TSL_NPU_MM_MATRIX_TILE_BYTES;
        mm_decode(type, tile, lut, o); /* unsigned codes; code - offset wraps to the signed value */
        if (offset != 0)
            for (int v = 0; v < 16; ++v)
                _mm512_storeu_si512((void*)(o + 64 * v), _mm512_sub_epi8(_mm512_loadu_si512((const void*)(o + 64 * v)), off));
        float* d = (float*)(o + 1024);
        float* m = (float*)(o + 1152);
        if (type == TSL_NPU_TYPE_MXFP4) {
            tsl_npu_tile_scales(type, tile, d, m);
            continue;
        }
        /* the fp16 scales (and Q4_1's mins, after them) widened 16 at a time: exact, as the scalar form */
        const uint8_t* sc = tile + (type == TSL_NPU_TYPE_Q8_0 ? 1024 : 512);
        for (int h = 0; h < 2; ++h) {
            _mm512_storeu_ps(d + 16 * h, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(const void*)(sc + 32 * h))));
            _mm512_storeu_ps(m + 16 * h, type == TSL_NPU_TYPE_Q4_1
                                            ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(const void*)(sc + 64 + 32 * h)))
                                            : _mm512_setzero_ps());
        }
    }
}

/* C = A . B on tile set `set` (0: tiles 0/2/4, 1: tiles 1/3/5), left in the set's C tile; store
 * writes that C tile to c (16 x 16 int32). The tile numbers must be literals (the intrinsics paste
 * them into the instruction). */
static inline void amx_dot(int set, const uint8_t* a, uint64_t a_stride, const uint8_t* b) {
    if (set == 0) {
        _tile_zero(0);
        _tile_loadd(2, a, (long)a_stride);
        _tile_loadd(4, b, 64);
        _tile_dpbssd(0, 2, 4);
    } else {
        _tile_zero(1);
        _tile_loadd(3, a, (long)a_stride);
        _tile_loadd(5, b, 64);
        _tile_dpbssd(1, 3, 5);
    }
}

static inline void amx_store(int set, int32_t* c) {
    if (set == 0)
        _tile_stored(0, c, 64);
    else
        _tile_stored(1, c, 64);
}

/* Blocks whose column scales are laid out together (two stack arrays of AMX_CHUNK x 16 floats);
 * a K of up to 32 x AMX_CHUNK runs in one chunk, a longer one carries the accumulators through
 * a->acc between chunks. */
#define AMX_CHUNK 64

/* The scales of one group of n <= 16 columns for blocks kt0 .. kt0 + nk - 1, block-major:
 * dx[16 k + c] = column c's scale, msx[16 k + c] = that scale x the block's quant sum (Q4_1
 * only); lanes c >= n are 0. stride != 0: the 16 columns are evenly spaced (gathered 16 at once). */
static void amx_col_scales(const tsl_npu_mm_tile_args* a, const uint8_t* const* act, uint32_t n, uint64_t stride,
                           int64_t kt0, int64_t nk, int has_min, float* dx, float* msx) {
    if (stride) {
        const __m512i idx = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                               _mm512_set1_epi32((int32_t)stride));
        const uint8_t* sc = act[0] + a->q_bytes + 4 * kt0;
        for (int64_t k = 0; k < nk; ++k) {
            const __m512 d = _mm512_i32gather_ps(idx, (const void*)(sc + 4 * k), 1);
            _mm512_store_ps(dx + 16 * k, d);
            if (has_min) {
                const __m512i qs = _mm512_i32gather_epi32(idx, (const void*)(sc + a->s_bytes + 4 * k), 1);
                _mm512_store_ps(msx + 16 * k, _mm512_mul_ps(d, _mm512_cvtepi32_ps(qs)));
            }
        }
        return;
    }
    for (int64_t k = 0; k < nk; ++k)
        for (uint32_t c = 0; c < 16; ++c) {
            const float d = c < n ? ((const float*)(act[c] + a->q_bytes))[kt0 + k] : 0.0f;
            dx[16 * k + c] = d;
            if (has_min) msx[16 * k + c] = c < n ? d * (float)((const int32_t*)(act[c] + a->q_bytes + a->s_bytes))[kt0 + k] : 0.0f;
        }
}

/* Block kt's product for half h of a group on tile set kt & 1 (stored later with amx_store);
 * stride 0: the quants of the n columns are first gathered into gathered[kt & 1] (its rows past n
 * stay zero). */
static inline __attribute__((always_inline)) void amx_block(const tsl_npu_mm_tile_args* a, const uint8_t* const* act, uint32_t n,
                                                            uint64_t stride, int64_t kt, int h, uint8_t (*gathered)[16 * 32]) {
    const int set = (int)(kt & 1);
    const uint8_t* x = stride ? act[0] + kt * 32 : gathered[set];
    if (!stride)
        for (uint32_t c = 0; c < n; ++c) __builtin_memcpy(gathered[set] + 32 * c, act[c] + kt * 32, 32);
    amx_dot(set, x, stride ? stride : 32, a->tiles + (uint64_t)kt * TSL_NPU_MM_MATRIX_TILE_BYTES + 512 * h);
}

/* One half h (weight rows 16h .. 16h + 15) of one group of n columns over blocks kt0 .. kt0 + nk - 1:
 * per column c, 16 float accumulators (from out[32 c ..] when `carry`, else 0) += per block
 * float(C[c]) x (row scale x dx[c]) (Q4_1: + min x msx[c]), stored back to out[32 c ..] for c < n.
 * Software-pipelined two blocks deep: after block k is scaled (read from cbuf), block k + 1's
 * product (computed meanwhile) is stored and block k + 2's issued, so the matrix unit works while
 * the vector unit scales and the scaling never reads a buffer a tile store has just written. has_min is a literal at each call (the function is
 * inlined, the branch folds away). */
static inline __attribute__((always_inline)) void amx_half(const tsl_npu_mm_tile_args* a, const uint8_t* const* act, uint32_t n,
                                                           uint64_t stride, int64_t kt0, int64_t nk, int h, const int has_min,
                                                           const float* dx, const float* msx, int carry, float* out) {
    _Alignas(64) int32_t cbuf[2][16 * 16];
    _Alignas(64) uint8_t gathered[2][16 * 32];
    if (!stride) __builtin_memset(gathered, 0, sizeof gathered);
    __m512 acc[16];
#pragma GCC unroll 16
    for (int c = 0; c < 16; ++c) acc[c] = carry && (uint32_t)c < n ? _mm512_loadu_ps(out + 32 * c) : _mm512_setzero_ps();
    amx_block(a, act, n, stride, kt0, h, gathered);
    if (nk > 1) amx_block(a, act, n, stride, kt0 + 1, h, gathered);
    amx_store((int)(kt0 & 1), cbuf[kt0 & 1]);
    for (int64_t k = 0; k < nk; ++k) {
        const int64_t kt = kt0 + k;
        const uint8_t* w = a->tiles + (uint64_t)kt * TSL_NPU_MM_MATRIX_TILE_BYTES;
        const int32_t* cb = cbuf[kt & 1];
        const __m512 dw = _mm512_loadu_ps((const float*)(w + 1024) + 16 * h);
        const float* dxk = dx + 16 * k;
#pragma GCC unroll 16
        for (int c = 0; c < 16; ++c) {
            const __m512 cf = _mm512_cvtepi32_ps(_mm512_load_si512((const void*)(cb + 16 * c)));
            acc[c] = _mm512_fmadd_ps(cf, _mm512_mul_ps(dw, _mm512_set1_ps(dxk[c])), acc[c]);
        }
        if (has_min) {
            const __m512 mw = _mm512_loadu_ps((const float*)(w + 1152) + 16 * h);
            const float* msk = msx + 16 * k;
#pragma GCC unroll 16
            for (int c = 0; c < 16; ++c) acc[c] = _mm512_fmadd_ps(mw, _mm512_set1_ps(msk[c]), acc[c]);
        }
        if (k + 1 < nk) amx_store((int)((kt + 1) & 1), cbuf[(kt + 1) & 1]);
        if (k + 2 < nk) amx_block(a, act, n, stride, kt + 2, h, gathered);
    }
#pragma GCC unroll 16
    for (int c = 0; c < 16; ++c) /* constant indices keep acc in registers */
        if ((uint32_t)c < n) _mm512_storeu_ps(out + 32 * c, acc[c]);
}

void tsl_npu_mm_tile_cols_amx(const tsl_npu_mm_tile_args* a) {
    const int has_min = a->type == TSL_NPU_TYPE_Q4_1;
    _Alignas(64) float dx[AMX_CHUNK * 16];
    _Alignas(64) float msx[AMX_CHUNK * 16];
    for (uint32_t g = 0; g < a->n_cols; g += 16) {
        const uint32_t n = a->n_cols - g < 16 ? a->n_cols - g : 16;
        const uint8_t* const* act = a->act + g;
        /* a full group of evenly spaced columns is loaded in place (and its scales gathered 16 at
         * once), else its quants are gathered per block */
        uint64_t stride = n == 16 && act[1] > act[0] ? (uint64_t)(act[1] - act[0]) : 0;
        if (stride > 0x7fffffffu / 16u) stride = 0;
        for (uint32_t c = 2; stride && c < 16; ++c)
            if ((uint64_t)(act[c] - act[c - 1]) != stride) stride = 0;
        for (int64_t kt0 = 0; kt0 < a->n_kt; kt0 += AMX_CHUNK) {
            const int64_t nk = a->n_kt - kt0 < AMX_CHUNK ? a->n_kt - kt0 : AMX_CHUNK;
            amx_col_scales(a, act, n, stride, kt0, nk, has_min, dx, msx);
            for (int h = 0; h < 2; ++h) {
                float* out = a->acc + g * 32u + 16u * (uint32_t)h;
                if (has_min)
                    amx_half(a, act, n, stride, kt0, nk, h, 1, dx, msx, kt0 > 0, out);
                else
                    amx_half(a, act, n, stride, kt0, nk, h, 0, dx, msx, kt0 > 0, out);
            }
        }
    }
}

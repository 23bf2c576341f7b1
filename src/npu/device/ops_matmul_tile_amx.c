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
 * scale x quant sum) and summed over K in 16 AVX-512 accumulators (one per column). Tile sets
 * alternate between even and odd blocks so consecutive blocks do not wait on each other.
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
        tsl_npu_tile_scales(type, tile, (float*)(o + 1024), (float*)(o + 1152));
    }
}

/* C = A . B on tile set `set` (0: tiles 0/2/4, 1: tiles 1/3/5), stored to c (16 x 16 int32). The
 * tile numbers must be literals (the intrinsics paste them into the instruction). */
static inline void amx_dot(int set, const uint8_t* a, uint64_t a_stride, const uint8_t* b, int32_t* c) {
    if (set == 0) {
        _tile_zero(0);
        _tile_loadd(2, a, (long)a_stride);
        _tile_loadd(4, b, 64);
        _tile_dpbssd(0, 2, 4);
        _tile_stored(0, c, 64);
    } else {
        _tile_zero(1);
        _tile_loadd(3, a, (long)a_stride);
        _tile_loadd(5, b, 64);
        _tile_dpbssd(1, 3, 5);
        _tile_stored(1, c, 64);
    }
}

void tsl_npu_mm_tile_cols_amx(const tsl_npu_mm_tile_args* a) {
    const int has_min = a->type == TSL_NPU_TYPE_Q4_1;
    _Alignas(64) int32_t cbuf[2][16 * 16];
    _Alignas(64) uint8_t gathered[2][16 * 32];
    for (uint32_t g = 0; g < a->n_cols; g += 16) {
        const uint32_t n = a->n_cols - g < 16 ? a->n_cols - g : 16;
        const uint8_t* const* act = a->act + g;
        /* a full group of evenly spaced columns is loaded in place, else gathered per block */
        uint64_t stride = n == 16 && act[1] > act[0] ? (uint64_t)(act[1] - act[0]) : 0;
        for (uint32_t c = 2; stride && c < 16; ++c)
            if ((uint64_t)(act[c] - act[c - 1]) != stride) stride = 0;
        if (!stride) __builtin_memset(gathered, 0, sizeof gathered);
        for (int h = 0; h < 2; ++h) {
            __m512 acc[16];
#pragma GCC unroll 16
            for (int c = 0; c < 16; ++c) acc[c] = _mm512_setzero_ps();
            for (int64_t kt = 0; kt < a->n_kt; ++kt) {
                const int set = (int)(kt & 1);
                const uint8_t* w = a->tiles + (uint64_t)kt * TSL_NPU_MM_MATRIX_TILE_BYTES;
                const uint8_t* x = stride ? act[0] + kt * 32 : gathered[set];
                if (!stride)
                    for (uint32_t c = 0; c < n; ++c) __builtin_memcpy(gathered[set] + 32 * c, act[c] + kt * 32, 32);
                amx_dot(set, x, stride ? stride : 32, w + 512 * h, cbuf[set]);
                const __m512 dw = _mm512_loadu_ps((const float*)(w + 1024) + 16 * h);
                const __m512 mw = _mm512_loadu_ps((const float*)(w + 1152) + 16 * h);
                float dx[16] = {0}, msx[16] = {0};
                for (uint32_t c = 0; c < n; ++c) {
                    dx[c] = ((const float*)(act[c] + a->q_bytes))[kt];
                    msx[c] = dx[c] * (float)((const int32_t*)(act[c] + a->q_bytes + a->s_bytes))[kt];
                }
#pragma GCC unroll 16
                for (int c = 0; c < 16; ++c) {
                    const __m512 cf = _mm512_cvtepi32_ps(_mm512_load_si512((const void*)(cbuf[set] + 16 * c)));
                    acc[c] = _mm512_fmadd_ps(cf, _mm512_mul_ps(dw, _mm512_set1_ps(dx[c])), acc[c]);
                    if (has_min) acc[c] = _mm512_fmadd_ps(mw, _mm512_set1_ps(msx[c]), acc[c]);
                }
            }
            for (uint32_t c = 0; c < n; ++c) _mm512_storeu_ps(a->acc + (g + c) * 32u + 16u * (uint32_t)h, acc[c]);
        }
    }
}

/* Internal to the matmul ops (ops_matmul.c): the tiled micro-kernel's interface, built from one
 * generic source (ops_matmul_tile.inc) once in plain C (ops_matmul_tile.c, every target) and once
 * per host ISA (x86 only: ops_matmul_tile_avx512vnni.c, AVX-512 F/BW + VNNI;
 * ops_matmul_tile_avx512vbmi.c, the same + VBMI), plus an AVX2 kernel of its own for hosts without
 * AVX-512 (ops_matmul_tile_avx2.c: AVX2 has no 4-element byte dot product); and the matrix-unit
 * kernel (ops_matmul_tile_amx.c, x86 only: AMX-INT8). */
#ifndef TESSEL_NPU_DEVICE_OPS_MATMUL_H
#define TESSEL_NPU_DEVICE_OPS_MATMUL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One pass of the tiled kernel: the 32 rows of one row tile against up to TSL_NPU_MM_COLS
 * activation columns.
 *   tiles: the row tile's n_kt tiles of `type` (Q4_0, Q4_1, Q8_0, IQ4_NL, MXFP4), tile_bytes each,
 *          in the layout of src/npu/host/tiled.hpp;
 *   act[c]: column c's Q8 activation row (tsl_npu_q8_row_bytes(32 * n_kt) bytes: quants, float
 *          scales at q_bytes, int32 quant sums at q_bytes + s_bytes);
 *   acc: [n_cols][32] floats, overwritten: acc[c * 32 + r] = row r . column c.
 * Per block: the integer dot of the weight codes with the activation quants (codes offset to be
 * unsigned, the offset taken back with the block's quant sum), times the activation scale, times
 * the row's scale (Q4_1: plus min x activation scale x quant sum), summed over blocks in float. */
typedef struct tsl_npu_mm_tile_args {
    uint32_t type;
    uint32_t tile_bytes;
    int64_t n_kt;
    const uint8_t* tiles;
    uint32_t n_cols;
    const uint8_t* const* act;
    uint64_t q_bytes; /* offset of the scales in an activation row */
    uint64_t s_bytes; /* bytes of the scales part (and of the sums part) */
    float* acc;
} tsl_npu_mm_tile_args;

/* The flat kernel's pieces: k fp16 values widened to float (exact), and the float dot product
 * of a and b (k elements) in 16 partial sums, added pairwise at the end (AVX-512: fused
 * multiply-adds; plain C: a product then a sum). */
typedef void (*tsl_npu_mm_widen_fn)(const uint16_t* h, float* out, int64_t k);
typedef float (*tsl_npu_mm_dot_fn)(const float* a, const float* b, int64_t k);

/* The tiled kernels' activation quantizer: vec_i8.h's tsl_npu_quantize_q8_row (a row of k floats,
 * k % 32 == 0 -> k Q8 quants, k/32 float scales, k/32 int32 quant sums), one build per ISA;
 * both give the same bits. */
typedef void (*tsl_npu_mm_quantize_fn)(const float* x, int64_t k, int8_t* q, float* d, int32_t* sums);
/* The tiled kernel (one pass, as above) and the matrix unit's weight reshape (below). */
typedef void (*tsl_npu_mm_tile_fn)(const tsl_npu_mm_tile_args* a);
typedef void (*tsl_npu_mm_reshape_fn)(uint32_t type, uint32_t tile_bytes, int64_t n_kt, const uint8_t* tiles, uint8_t* out);

void tsl_npu_mm_tile_cols_c(const tsl_npu_mm_tile_args* a);
void tsl_npu_mm_widen_c(const uint16_t* h, float* out, int64_t k);
float tsl_npu_mm_dot_c(const float* a, const float* b, int64_t k);
void tsl_npu_mm_quantize_c(const float* x, int64_t k, int8_t* q, float* d, int32_t* sums);
#if defined(__hexagon__)
void tsl_npu_mm_tile_cols_hvx(const tsl_npu_mm_tile_args* a); /* HVX (ops_matmul_tile_hvx.c) */
#endif
#if defined(__x86_64__) || defined(__i386__)
void tsl_npu_mm_tile_cols_avx512vnni(const tsl_npu_mm_tile_args* a);
void tsl_npu_mm_widen_avx512vnni(const uint16_t* h, float* out, int64_t k);
float tsl_npu_mm_dot_avx512vnni(const float* a, const float* b, int64_t k);
void tsl_npu_mm_tile_cols_avx512vbmi(const tsl_npu_mm_tile_args* a);
void tsl_npu_mm_widen_avx512vbmi(const uint16_t* h, float* out, int64_t k);
float tsl_npu_mm_dot_avx512vbmi(const float* a, const float* b, int64_t k);
void tsl_npu_mm_quantize_avx512vnni(const float* x, int64_t k, int8_t* q, float* d, int32_t* sums);
void tsl_npu_mm_tile_cols_avx2(const tsl_npu_mm_tile_args* a);
void tsl_npu_mm_widen_avx2(const uint16_t* h, float* out, int64_t k);
float tsl_npu_mm_dot_avx2(const float* a, const float* b, int64_t k);
void tsl_npu_mm_quantize_avx2(const float* x, int64_t k, int8_t* q, float* d, int32_t* sums);

/* The matrix unit (AMX-INT8; only where the platform's isa has TSL_NPU_ISA_AMX_INT8):
 *  - begin loads the kernel's tile configuration on the calling thread, end releases the tiles;
 *    every worker brackets its AMX calls with them.
 *  - reshape: n_kt tiles of `type` (tile_bytes each, layout of src/npu/host/tiled.hpp) -> n_kt
 *    reshaped tiles of TSL_NPU_MM_MATRIX_TILE_BYTES at out (64-byte aligned): the 32x32 signed
 *    values (tsl_npu_tile_value) as two AMX B tiles, byte (h * 512 + 64 q + 4 i + t) = value of
 *    row 16h + i, element 4q + t; then the 32 row scales and the 32 mins (tsl_npu_tile_scales).
 *  - tile_cols_amx: as tsl_npu_mm_tile_args describes, except that `tiles` is the row tile's
 *    reshaped panel (tile_bytes is not read). */
void tsl_npu_mm_amx_begin(void);
void tsl_npu_mm_amx_end(void);
void tsl_npu_mm_amx_reshape(uint32_t type, uint32_t tile_bytes, int64_t n_kt, const uint8_t* tiles, uint8_t* out);
void tsl_npu_mm_tile_cols_amx(const tsl_npu_mm_tile_args* a);
#endif

/* A tile's 32 row scales as floats (fp16 d, or MXFP4's E8M0 exponent halved as its
 * dequantization defines it) and, for Q4_1, its 32 mins (else zeros). Shared with GET_ROWS. */
void tsl_npu_tile_scales(uint32_t type, const uint8_t* tile, float* d, float* m);

/* Quant j (0..31) of row r (0..31) of a tile as its signed value before scaling: Q4_0 q - 8,
 * Q4_1 q, Q8_0 q, IQ4_NL the non-linear table's value, MXFP4 twice the E2M1 value. */
int32_t tsl_npu_tile_value(uint32_t type, const uint8_t* tile, int r, int j);

#ifdef __cplusplus
}
#endif

#endif /* TESSEL_NPU_DEVICE_OPS_MATMUL_H */

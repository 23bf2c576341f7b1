/* The device's kernels for one ISA, chosen once when the device starts (tsl_npu_device_init) from
 * the isa bits its platform reports (device.h, TSL_NPU_ISA_*). Ops call through the table and never
 * test the ISA themselves; kernels.c is the one place that knows which kernels each ISA has.
 * Every entry of a table gives the same results as the plain C one (tests compare them). */
#ifndef TESSEL_NPU_DEVICE_KERNELS_H
#define TESSEL_NPU_DEVICE_KERNELS_H

#include <stdint.h>

#include "npu/device/ops_matmul.h"

#ifdef __cplusplus
extern "C" {
#endif

struct tsl_npu_op_ctx;

/* One row of an elementwise op at coordinates (i1, i2, i3) of dst[0] (tsl_npu_for_rows). */
typedef void (*tsl_npu_kernel_row_fn)(const struct tsl_npu_op_ctx* c, int64_t i1, int64_t i2, int64_t i3);
/* A worker's share of a parallel call: fn(arg, worker, n_workers). */
typedef void (*tsl_npu_kernel_part_fn)(void* arg, uint32_t worker, uint32_t n_workers);

typedef struct tsl_npu_kernels {
    const char* vector;  /* the vector unit's kernels: "c", "avx2", "avx512vnni", "avx512vbmi", "hvx" */
    const char* matrix;  /* the matrix unit's: "amx", or "" where there is none */
    /* MUL_MAT / MUL_MAT_ID (ops_matmul.h): the tiled kernel, the activation quantizer and the flat
     * kernel's pieces */
    tsl_npu_mm_tile_fn mm_tile_cols;
    tsl_npu_mm_quantize_fn mm_quantize;
    tsl_npu_mm_widen_fn mm_widen;
    tsl_npu_mm_dot_fn mm_dot;
    /* the matrix unit (ops_matmul.h): all NULL where there is none */
    void (*matrix_begin)(void);
    void (*matrix_end)(void);
    tsl_npu_mm_reshape_fn matrix_reshape;
    tsl_npu_mm_tile_fn matrix_tile_cols;
    tsl_npu_kernel_row_fn glu_row;      /* GLU (ops_act.h) */
    tsl_npu_kernel_part_fn fa_rows;     /* FLASH_ATTN_EXT (ops_flash_attn.h) */
} tsl_npu_kernels;

/* Fills *out with the kernels for the platform isa bits `isa`: the best each op has among the
 * extensions present (bits the build has no kernels for are ignored; 0: plain C). */
void tsl_npu_kernels_select(uint32_t isa, tsl_npu_kernels* out);

#ifdef __cplusplus
}
#endif

#endif /* TESSEL_NPU_DEVICE_KERNELS_H */

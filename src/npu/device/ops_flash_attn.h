/* Internal to FLASH_ATTN_EXT (ops_flash_attn.c): the kernel's interface, built from one generic
 * source (ops_flash_attn.inc) once in plain C (ops_flash_attn_rows.c, every target) and once with
 * AVX-512 F/BW/VL/DQ (ops_flash_attn_avx512.c, x86 only; picked when the platform's isa has
 * TSL_NPU_ISA_AVX512), else with AVX2 flags where the isa has TSL_NPU_ISA_AVX2 (ops_flash_attn_avx2.c:
 * the plain C vectors, compiler-vectorised). All compute the same float operations in the same order (vec.h's two
 * implementations give the same bits), so their outputs are identical. */
#ifndef TESSEL_NPU_DEVICE_OPS_FLASH_ATTN_H
#define TESSEL_NPU_DEVICE_OPS_FLASH_ATTN_H

#include "npu/device/ops.h"

/* One run of the op: its context, the workers' scratch (worker i's part at base + i *
 * worker_floats, tsl_npu_flash_attn_scratch), D and Dv rounded up to 16 (Dp, Dvp), and the query
 * rows per run (the host's q_tile, 1..TSL_NPU_FA_QTILE). */
typedef struct tsl_npu_fa_task {
    const tsl_npu_op_ctx* c;
    float* base;
    uint64_t worker_floats;
    int64_t Dp, Dvp;
    int q_tile;
} tsl_npu_fa_task;

/* Worker `worker` of n_workers computes its share of the query rows (arg: a tsl_npu_fa_task). */
void tsl_npu_fa_rows_c(void* arg, uint32_t worker, uint32_t n_workers);
#if defined(__x86_64__) || defined(__i386__)
void tsl_npu_fa_rows_avx512(void* arg, uint32_t worker, uint32_t n_workers);
void tsl_npu_fa_rows_avx2(void* arg, uint32_t worker, uint32_t n_workers);
#endif

#endif /* TESSEL_NPU_DEVICE_OPS_FLASH_ATTN_H */

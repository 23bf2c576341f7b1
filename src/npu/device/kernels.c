/* The kernel tables per ISA (kernels.h). Kernels of another architecture are not built (their files'
 * suffixes, src/CMakeLists.txt), so the architecture decides which tables exist here. */
#include "npu/device/kernels.h"

#include "npu/device/device.h"
#include "npu/device/ops_act.h"
#include "npu/device/ops_flash_attn.h"

void tsl_npu_kernels_select(uint32_t isa, tsl_npu_kernels* k) {
    __builtin_memset(k, 0, sizeof *k);
    k->vector = "c";
    k->matrix = "";
    k->mm_tile_cols = tsl_npu_mm_tile_cols_c;
    k->mm_quantize = tsl_npu_mm_quantize_c;
    k->mm_widen = tsl_npu_mm_widen_c;
    k->mm_dot = tsl_npu_mm_dot_c;
    k->glu_row = tsl_npu_glu_row_c;
    k->fa_rows = tsl_npu_fa_rows_c;
#if defined(__x86_64__) || defined(__i386__)
    if (isa & TSL_NPU_ISA_AVX2) {
        k->vector = "avx2";
        k->mm_tile_cols = tsl_npu_mm_tile_cols_avx2;
        k->mm_quantize = tsl_npu_mm_quantize_avx2;
        k->mm_widen = tsl_npu_mm_widen_avx2;
        k->mm_dot = tsl_npu_mm_dot_avx2;
        k->glu_row = tsl_npu_glu_row_avx2;
        k->fa_rows = tsl_npu_fa_rows_avx2;
    }
    if (isa & TSL_NPU_ISA_AVX512) { /* the float kernels */
        k->glu_row = tsl_npu_glu_row_avx512;
        k->fa_rows = tsl_npu_fa_rows_avx512;
    }
    if (isa & TSL_NPU_ISA_AVX512VNNI) {
        k->vector = "avx512vnni";
        k->mm_tile_cols = tsl_npu_mm_tile_cols_avx512vnni;
        k->mm_quantize = tsl_npu_mm_quantize_avx512vnni;
        k->mm_widen = tsl_npu_mm_widen_avx512vnni;
        k->mm_dot = tsl_npu_mm_dot_avx512vnni;
    }
    if (isa & TSL_NPU_ISA_AVX512VBMI) { /* VNNI's quantizer stays */
        k->vector = "avx512vbmi";
        k->mm_tile_cols = tsl_npu_mm_tile_cols_avx512vbmi;
        k->mm_widen = tsl_npu_mm_widen_avx512vbmi;
        k->mm_dot = tsl_npu_mm_dot_avx512vbmi;
    }
    if (isa & TSL_NPU_ISA_AMX_INT8) {
        k->matrix = "amx";
        k->matrix_begin = tsl_npu_mm_amx_begin;
        k->matrix_end = tsl_npu_mm_amx_end;
        k->matrix_reshape = tsl_npu_mm_amx_reshape;
        k->matrix_tile_cols = tsl_npu_mm_tile_cols_amx;
    }
#elif defined(__hexagon__)
    if (isa & TSL_NPU_ISA_HVX) { /* the integer dot products; float stays plain C (no HVX float in v67) */
        k->vector = "hvx";
        k->mm_tile_cols = tsl_npu_mm_tile_cols_hvx;
    }
#else
    (void)isa;
#endif
}

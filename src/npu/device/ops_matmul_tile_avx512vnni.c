/* The matmul micro-kernels (tiled, and the flat pieces) on AVX-512 F/BW + VNNI (x86 hosts only; built with those flags by
 * the _avx512vnni suffix rule of cmake/, left out of the Hexagon check by its name). */
#define TSL_MM_FN tsl_npu_mm_tile_cols_avx512vnni
#define TSL_MM_WIDEN_FN tsl_npu_mm_widen_avx512vnni
#define TSL_MM_DOT_FN tsl_npu_mm_dot_avx512vnni
#include "npu/device/ops_matmul_tile.inc"

void tsl_npu_mm_quantize_avx512vnni(const float* x, int64_t k, int8_t* q, float* d, int32_t* sums) {
    tsl_npu_quantize_q8_row(x, k, q, d, sums);
}

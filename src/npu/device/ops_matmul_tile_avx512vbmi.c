/* The matmul micro-kernels (tiled, and the flat pieces) on AVX-512 F/BW + VNNI + VBMI (x86 hosts only; built with those
 * flags by the _avx512vbmi suffix rule of cmake/, left out of the Hexagon check by its name): tiles decoded with
 * two-table byte permutes, one activation column straight from registers (ops_matmul_tile.inc). */
#define TSL_MM_FN tsl_npu_mm_tile_cols_avx512vbmi
#define TSL_MM_WIDEN_FN tsl_npu_mm_widen_avx512vbmi
#define TSL_MM_DOT_FN tsl_npu_mm_dot_avx512vbmi
#include "npu/device/ops_matmul_tile.inc"

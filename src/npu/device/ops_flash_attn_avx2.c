/* FLASH_ATTN_EXT's kernel built with AVX2 + FMA + F16C (x86 hosts without AVX-512; flags from the
 * _avx2 suffix rule of cmake/, left out of the Hexagon check by its name): vec.h's plain C form,
 * which the compiler vectorises to 256-bit registers here; the same operations, so the same
 * results as the plain build. */
#define TSL_FA_ROWS_FN tsl_npu_fa_rows_avx2
#include "npu/device/ops_flash_attn.inc"

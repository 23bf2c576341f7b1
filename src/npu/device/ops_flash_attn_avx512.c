/* FLASH_ATTN_EXT's kernel on AVX-512 F/BW/VL/DQ (x86 hosts only; built with those flags by the
 * _avx512 suffix rule of cmake/, left out of the Hexagon check by its name): vec.h's float vectors
 * and half.h's row conversion on intrinsics. */
#define TSL_FA_ROWS_FN tsl_npu_fa_rows_avx512
#include "npu/device/ops_flash_attn.inc"

/* FLASH_ATTN_EXT's kernel in plain C (every target, Hexagon included). */
#define TSL_FA_ROWS_FN tsl_npu_fa_rows_c
#include "npu/device/ops_flash_attn.inc"

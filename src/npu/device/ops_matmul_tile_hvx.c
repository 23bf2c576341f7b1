/* The tiled matmul micro-kernel on Hexagon HVX (v67, 128-byte vectors; built only for Hexagon, with
 * HVX flags, by the _hvx suffix rule of cmake/): the generic source with vec_i8.h's HVX dot products
 * (vrmpy: 32 weight rows of a 4-element group against four activation quants per instruction). The
 * float parts (scales, the flat kernel, the activation quantizer) stay plain C: v67 HVX has no float
 * lanes. Same bits as the plain C kernel for every tile type (tests/hexagon). */
#define TSL_MM_FN tsl_npu_mm_tile_cols_hvx
#include "npu/device/ops_matmul_tile.inc"

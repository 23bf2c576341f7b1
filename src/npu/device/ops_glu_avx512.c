/* GLU's row kernel on AVX-512 F/BW/VL/DQ (x86 hosts only; built with those flags by the _avx512
 * suffix rule of cmake/, left out of the Hexagon check by its name). */
#define TSL_GLU_ROW_FN tsl_npu_glu_row_avx512
#include "npu/device/ops_glu.inc"

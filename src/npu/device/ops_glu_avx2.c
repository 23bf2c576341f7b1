/* GLU's row kernel built with AVX2 + FMA + F16C (x86 hosts without AVX-512; flags from the _avx2
 * suffix rule of cmake/, left out of the Hexagon check by its name): vec.h's plain C form,
 * vectorised to 256-bit registers by the compiler; the same results as the plain build. */
#define TSL_GLU_ROW_FN tsl_npu_glu_row_avx2
#include "npu/device/ops_glu.inc"

/* vec_isa_lanes.inc on vec.h's AVX2 implementation (x86 only: the _avx2 suffix's flags). */
#define TSL_VEC_LANES_FN tsl_test_vec_lanes_avx2
#define TSL_TRANSPOSE_FN tsl_test_transpose_avx2
#define TSL_HALF_ROW_FN tsl_test_half_row_avx2
#include "vec_isa_lanes.inc"

/* vec_isa_lanes.inc on vec.h's AVX-512 implementation (x86 only: the _avx512 suffix's flags). */
#define TSL_VEC_LANES_FN tsl_test_vec_lanes_avx512
#define TSL_TRANSPOSE_FN tsl_test_transpose_avx512
#define TSL_HALF_ROW_FN tsl_test_half_row_avx512
#include "vec_isa_lanes.inc"

/* vec_isa_lanes.inc on vec.h's plain C implementation. */
#define TSL_VEC_LANES_FN tsl_test_vec_lanes_c
#define TSL_TRANSPOSE_FN tsl_test_transpose_c
#define TSL_HALF_ROW_FN tsl_test_half_row_c
#include "vec_isa_lanes.inc"

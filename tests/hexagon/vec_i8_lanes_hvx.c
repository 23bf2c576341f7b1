/* vec_i8.h's HVX implementation (this file gets HVX flags from its _hvx suffix) behind plain
 * functions over arrays, for kernels_check.c to compare lane by lane with the plain C build
 * (vec_i8_lanes_c.c). Lanes: 128 bytes, 32 int32. */
#include "hexagon/vec_i8_lanes.h"

#include "npu/device/vec_i8.h"

_Static_assert(TSL_VU8_LANES == 128 && TSL_VI32_LANES == 32, "the HVX build of vec_i8.h");

void lanes_hvx_dot4(int32_t* acc, const uint8_t* a, const int8_t* b) {
    tsl_vi32 s;
    __builtin_memcpy(&s, acc, 128);
    s = tsl_vi32_dot4(s, tsl_vu8_loadu(a), b);
    tsl_vi32_store(acc, s);
}

void lanes_hvx_dot4_bcast(int32_t* acc, const uint8_t* a, const int8_t* x4) {
    tsl_vi32 s = tsl_vi32_zero();
    s = tsl_vi32_dot4_bcast(s, tsl_vu8_loadu(a), x4);
    int32_t add[32];
    tsl_vi32_store(add, s);
    for (int i = 0; i < 32; ++i) acc[i] += add[i];
}

void lanes_hvx_scale_acc(float* acc, const int32_t* s, int32_t off, float dx, const float* d, const float* m, float msx) {
    tsl_vi32 v;
    __builtin_memcpy(&v, s, 128);
    tsl_vi32_scale_acc(acc, v, off, dx, d, m, msx);
}

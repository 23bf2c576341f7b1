/* vec_i8.h's plain C implementation (no HVX flags here) over the HVX functions' 128-byte lanes: two
 * of its 64-byte vectors per call (vec_i8_lanes.h). */
#include "hexagon/vec_i8_lanes.h"

#include "npu/device/vec_i8.h"

_Static_assert(TSL_VU8_LANES == 64 && TSL_VI32_LANES == 16, "the plain C build of vec_i8.h");

void lanes_c_dot4(int32_t* acc, const uint8_t* a, const int8_t* b) {
    for (int h = 0; h < 2; ++h) {
        tsl_vi32 s;
        __builtin_memcpy(s.v, acc + 16 * h, 64);
        s = tsl_vi32_dot4(s, tsl_vu8_loadu(a + 64 * h), b + 64 * h);
        tsl_vi32_store(acc + 16 * h, s);
    }
}

void lanes_c_dot4_bcast(int32_t* acc, const uint8_t* a, const int8_t* x4) {
    for (int h = 0; h < 2; ++h) {
        tsl_vi32 s;
        __builtin_memcpy(s.v, acc + 16 * h, 64);
        s = tsl_vi32_dot4_bcast(s, tsl_vu8_loadu(a + 64 * h), x4);
        tsl_vi32_store(acc + 16 * h, s);
    }
}

void lanes_c_scale_acc(float* acc, const int32_t* s, int32_t off, float dx, const float* d, const float* m, float msx) {
    for (int h = 0; h < 2; ++h) {
        tsl_vi32 v;
        __builtin_memcpy(v.v, s + 16 * h, 64);
        tsl_vi32_scale_acc(acc + 16 * h, v, off, dx, d + 16 * h, m ? m + 16 * h : 0, msx);
    }
}

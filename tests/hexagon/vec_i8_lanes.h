/* vec_i8.h's operations as functions over arrays of 128 unsigned / signed bytes and 32 int32 or
 * float lanes, once from its HVX build (lanes_hvx_*) and once from its plain C build (lanes_c_*):
 * kernels_check.c compares them lane by lane. */
#ifndef TESSEL_TESTS_HEXAGON_VEC_I8_LANES_H
#define TESSEL_TESTS_HEXAGON_VEC_I8_LANES_H

#include <stdint.h>

/* acc[i] += sum_t a[4i + t] * b[4i + t] */
void lanes_hvx_dot4(int32_t* acc, const uint8_t* a, const int8_t* b);
void lanes_c_dot4(int32_t* acc, const uint8_t* a, const int8_t* b);
/* acc[i] += sum_t a[4i + t] * x4[t] */
void lanes_hvx_dot4_bcast(int32_t* acc, const uint8_t* a, const int8_t* x4);
void lanes_c_dot4_bcast(int32_t* acc, const uint8_t* a, const int8_t* x4);
/* tsl_vi32_scale_acc over 32 lanes */
void lanes_hvx_scale_acc(float* acc, const int32_t* s, int32_t off, float dx, const float* d, const float* m, float msx);
void lanes_c_scale_acc(float* acc, const int32_t* s, int32_t off, float dx, const float* d, const float* m, float msx);

#endif

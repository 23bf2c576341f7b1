/* Activation functions shared by UNARY and GLU, on float vectors (vec.h): SiLU x / (1 + e^-x)
 * and GELU in its tanh form, 0.5 x (1 + tanh z) = x sigmoid(2z) with z = sqrt(2/pi) (x +
 * 0.044715 x^3) (the sigmoid form has no cancellation for very negative x), as tessel's
 * reference (src/cpu/ref/elementwise.cpp). */
#ifndef TESSEL_NPU_DEVICE_OPS_ACT_H
#define TESSEL_NPU_DEVICE_OPS_ACT_H

#include "npu/device/ops.h"

static inline tsl_vf tsl_npu_silu_vec(tsl_vf x) { return tsl_vf_mul(x, tsl_vf_sigmoid(x)); }

static inline tsl_vf tsl_npu_gelu_vec(tsl_vf x) {
    const tsl_vf x3 = tsl_vf_mul(tsl_vf_mul(x, x), x);
    const tsl_vf z = tsl_vf_mul(tsl_vf_splat(0.797884560802865f), tsl_vf_madd(tsl_vf_splat(0.044715f), x3, x));
    return tsl_vf_mul(x, tsl_vf_sigmoid(tsl_vf_add(z, z)));
}

#endif /* TESSEL_NPU_DEVICE_OPS_ACT_H */

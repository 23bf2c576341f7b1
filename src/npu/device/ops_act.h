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

/* GLU's row kernel (ops_glu.inc) per ISA: plain C, AVX-512 (x86 only; the platform's isa has
 * TSL_NPU_ISA_AVX512) and the plain C source built with AVX2 flags (TSL_NPU_ISA_AVX2, no AVX-512).
 * Rows as tsl_npu_for_rows gives them; the same results on each. */
void tsl_npu_glu_row_c(const tsl_npu_op_ctx* c, int64_t i1, int64_t i2, int64_t i3);
#if defined(__x86_64__) || defined(__i386__)
void tsl_npu_glu_row_avx512(const tsl_npu_op_ctx* c, int64_t i1, int64_t i2, int64_t i3);
void tsl_npu_glu_row_avx2(const tsl_npu_op_ctx* c, int64_t i1, int64_t i2, int64_t i3);
#endif

#endif /* TESSEL_NPU_DEVICE_OPS_ACT_H */

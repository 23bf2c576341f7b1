/* UNARY: dst = f(src0) element-wise, f = params[0] (enum tsl_npu_unary: SILU, GELU (tanh form),
 * SIGMOID, NEG, EXP, TANH; any other kind is BAD_TYPE). src0 and dst F32 or F16, same shape, any
 * strides. Computed in float with vec.h's exp/tanh (relative error ~1e-6), where tessel's
 * reference (src/cpu/ref/elementwise.cpp) evaluates in double: the same functions, with
 * sigmoid(x) = 1 / (1 + e^-x), silu(x) = x sigmoid(x) and gelu(x) = x sigmoid(2z),
 * z = sqrt(2/pi) (x + 0.044715 x^3). The GELU and SiLU helpers are shared with GLU (ops_act.h). */
#include "npu/device/ops_act.h"

int32_t tsl_npu_unary_check(const tsl_npu_op_ctx* c) {
    const tsl_npu_view* a = &c->src[0];
    const tsl_npu_view* d = &c->dst[0];
    if (!tsl_npu_is_float(a->type) || !tsl_npu_is_float(d->type) || !tsl_npu_same_shape(a, d))
        return TSL_NPU_ERR_BAD_TYPE;
    switch (c->op->params[0]) {
    case TSL_NPU_UNARY_SILU:
    case TSL_NPU_UNARY_GELU:
    case TSL_NPU_UNARY_SIGMOID:
    case TSL_NPU_UNARY_NEG:
    case TSL_NPU_UNARY_EXP:
    case TSL_NPU_UNARY_TANH: return TSL_NPU_OK;
    default: return TSL_NPU_ERR_BAD_TYPE;
    }
}

static tsl_vf unary_vec(int32_t kind, tsl_vf x) {
    switch (kind) {
    case TSL_NPU_UNARY_SILU: return tsl_npu_silu_vec(x);
    case TSL_NPU_UNARY_GELU: return tsl_npu_gelu_vec(x);
    case TSL_NPU_UNARY_SIGMOID: return tsl_vf_sigmoid(x);
    case TSL_NPU_UNARY_NEG: return tsl_vf_mul(tsl_vf_splat(-1.0f), x);
    case TSL_NPU_UNARY_EXP: return tsl_vf_exp(x);
    default: return tsl_vf_tanh(x);
    }
}

static void unary_row(const tsl_npu_op_ctx* c, int64_t i1, int64_t i2, int64_t i3) {
    const tsl_npu_view* a = &c->src[0];
    const tsl_npu_view* d = &c->dst[0];
    const int32_t kind = c->op->params[0];
    const int64_t n0 = d->ne[0];
    const uint8_t* pa = tsl_npu_elem(a, 0, i1, i2, i3);
    uint8_t* pd = tsl_npu_elem(d, 0, i1, i2, i3);
    for (int64_t i0 = 0; i0 < n0; i0 += TSL_VF_LANES) {
        const int n = tsl_npu_chunk(n0, i0);
        tsl_npu_row_store(d, pd, i0, n, unary_vec(kind, tsl_npu_row_load(a, pa, i0, n, 0.0f)));
    }
}

int32_t tsl_npu_unary_run(tsl_npu_op_ctx* c) {
    const int64_t n = tsl_npu_n_elements(&c->dst[0]);
    tsl_npu_for_rows(c, n, unary_row);
    c->bytes = (uint64_t)n * (tsl_npu_type_bytes(c->src[0].type) + tsl_npu_type_bytes(c->dst[0].type));
    return TSL_NPU_OK;
}

/* GLU: a gated linear unit, y = f(x) * g with f = params[0] (SWIGLU: SiLU, GEGLU: GELU tanh form;
 * others BAD_TYPE). One source src0 [2K, ...] -> dst [K, ...]: x is the first half of each row and
 * g the second, or the reverse when params[1] (swapped) is non-zero. Two sources src0 x, src1 g
 * [K, ...] of dst's shape (swapped ignored). F32/F16 in any combination and strides, computed in
 * float (ops_act.h), as tessel's reference (src/cpu/ref/elementwise.cpp, glu). The row kernel is
 * built per ISA (ops_glu.inc: here in plain C, ops_glu_avx512.c with AVX-512). */
#define TSL_GLU_ROW_FN tsl_npu_glu_row_c /* the plain C expansion of the row kernel */
#include "npu/device/ops_glu.inc"

int32_t tsl_npu_glu_check(const tsl_npu_op_ctx* c) {
    const tsl_npu_view* a = &c->src[0];
    const tsl_npu_view* b = &c->src[1];
    const tsl_npu_view* d = &c->dst[0];
    const int32_t kind = c->op->params[0];
    if (kind != TSL_NPU_GLU_SWIGLU && kind != TSL_NPU_GLU_GEGLU) return TSL_NPU_ERR_BAD_TYPE;
    if (!tsl_npu_is_float(a->type) || !tsl_npu_is_float(d->type)) return TSL_NPU_ERR_BAD_TYPE;
    if (b->data) return tsl_npu_is_float(b->type) && tsl_npu_same_shape(a, d) && tsl_npu_same_shape(b, d)
                            ? TSL_NPU_OK
                            : TSL_NPU_ERR_BAD_TYPE;
    if (a->ne[0] != 2 * d->ne[0] || a->ne[1] != d->ne[1] || a->ne[2] != d->ne[2] || a->ne[3] != d->ne[3])
        return TSL_NPU_ERR_BAD_TYPE;
    return TSL_NPU_OK;
}

int32_t tsl_npu_glu_run(tsl_npu_op_ctx* c) {
    const int64_t n = tsl_npu_n_elements(&c->dst[0]);
    tsl_npu_for_rows(c, 2 * n, c->kernels->glu_row);
    const uint32_t gate_type = c->src[1].data ? c->src[1].type : c->src[0].type;
    c->bytes = (uint64_t)n * (tsl_npu_type_bytes(c->src[0].type) + tsl_npu_type_bytes(gate_type) + tsl_npu_type_bytes(c->dst[0].type));
    return TSL_NPU_OK;
}

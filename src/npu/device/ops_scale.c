/* SCALE: dst = src0 * s + b with s = params[0], b = params[1] (float bit patterns copied from the
 * node's op_params); src0 and dst F32 or F16, same shape, any strides. Computed in float without
 * fused multiply-add, as tessel's reference kernel (src/cpu/ref/elementwise.cpp). */
#include "npu/device/ops.h"

int32_t tsl_npu_scale_check(const tsl_npu_op_ctx* c) {
    const tsl_npu_view* a = &c->src[0];
    const tsl_npu_view* d = &c->dst[0];
    if (!tsl_npu_is_float(a->type) || !tsl_npu_is_float(d->type) || !tsl_npu_same_shape(a, d))
        return TSL_NPU_ERR_BAD_TYPE;
    return TSL_NPU_OK;
}

static void scale_row(const tsl_npu_op_ctx* c, int64_t i1, int64_t i2, int64_t i3) {
    const tsl_npu_view* a = &c->src[0];
    const tsl_npu_view* d = &c->dst[0];
    const float s = tsl_npu_f32_of_bits((uint32_t)c->op->params[0]);
    const float bias = tsl_npu_f32_of_bits((uint32_t)c->op->params[1]);
    const int64_t n0 = d->ne[0];
    const uint8_t* pa = tsl_npu_elem(a, 0, i1, i2, i3);
    uint8_t* pd = tsl_npu_elem(d, 0, i1, i2, i3);
    if (a->type == TSL_NPU_TYPE_F32 && d->type == TSL_NPU_TYPE_F32 && a->nb[0] == 4 && d->nb[0] == 4) {
        const float* x = (const float*)pa;
        float* y = (float*)pd;
        for (int64_t i0 = 0; i0 < n0; ++i0) y[i0] = x[i0] * s + bias;
        return;
    }
    for (int64_t i0 = 0; i0 < n0; ++i0) {
        const float x = tsl_npu_load_float(a->type, pa + (uint64_t)i0 * a->nb[0]);
        tsl_npu_store_float(d->type, pd + (uint64_t)i0 * d->nb[0], x * s + bias);
    }
}

int32_t tsl_npu_scale_run(tsl_npu_op_ctx* c) {
    const int64_t n = tsl_npu_n_elements(&c->dst[0]);
    tsl_npu_for_rows(c, n, scale_row);
    c->bytes = (uint64_t)n * (tsl_npu_type_bytes(c->src[0].type) + tsl_npu_type_bytes(c->dst[0].type));
    return TSL_NPU_OK;
}

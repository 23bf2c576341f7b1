/* SUM_ROWS: dst [1, R, B2, B3] = the sum of each row of src0 [K, R, B2, B3]; F32 or F16 each,
 * any strides. Accumulated in float vectors (16 partial sums, then a pairwise tree), where
 * tessel's reference (src/cpu/ref/reduce.cpp) sums in double. */
#include "npu/device/ops.h"

int32_t tsl_npu_sum_rows_check(const tsl_npu_op_ctx* c) {
    const tsl_npu_view* a = &c->src[0];
    const tsl_npu_view* d = &c->dst[0];
    if (!tsl_npu_is_float(a->type) || !tsl_npu_is_float(d->type)) return TSL_NPU_ERR_BAD_TYPE;
    if (d->ne[0] != 1 || d->ne[1] != a->ne[1] || d->ne[2] != a->ne[2] || d->ne[3] != a->ne[3])
        return TSL_NPU_ERR_BAD_TYPE;
    return TSL_NPU_OK;
}

static void sum_row(const tsl_npu_op_ctx* c, int64_t i1, int64_t i2, int64_t i3) {
    const tsl_npu_view* a = &c->src[0];
    const tsl_npu_view* d = &c->dst[0];
    const int64_t n0 = a->ne[0];
    const uint8_t* pa = tsl_npu_elem(a, 0, i1, i2, i3);
    tsl_vf acc = tsl_vf_splat(0.0f);
    for (int64_t i0 = 0; i0 < n0; i0 += TSL_VF_LANES)
        acc = tsl_vf_add(acc, tsl_npu_row_load(a, pa, i0, tsl_npu_chunk(n0, i0), 0.0f));
    tsl_npu_store_float(d->type, tsl_npu_elem(d, 0, i1, i2, i3), tsl_vf_hsum(acc));
}

int32_t tsl_npu_sum_rows_run(tsl_npu_op_ctx* c) {
    const int64_t n = tsl_npu_n_elements(&c->src[0]);
    tsl_npu_for_rows(c, n, sum_row);
    c->bytes = (uint64_t)n * tsl_npu_type_bytes(c->src[0].type) +
               (uint64_t)tsl_npu_n_elements(&c->dst[0]) * tsl_npu_type_bytes(c->dst[0].type);
    return TSL_NPU_OK;
}

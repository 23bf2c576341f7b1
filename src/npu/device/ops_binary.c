/* ADD, SUB, MUL and DIV: dst = src0 op src1, src1 broadcast in every dimension (src1.ne[i] divides
 * src0.ne[i]); src0, src1 and dst are F32 or F16 with any strides, dst has src0's shape. Each
 * element is computed in float and stored in dst's type (F16 rounds to nearest even), as tessel's
 * reference kernel does (src/cpu/ref/elementwise.cpp). */
#include "npu/device/ops.h"

int32_t tsl_npu_binary_check(const tsl_npu_op_ctx* c) {
    const tsl_npu_view* a = &c->src[0];
    const tsl_npu_view* b = &c->src[1];
    const tsl_npu_view* d = &c->dst[0];
    if (!tsl_npu_is_float(a->type) || !tsl_npu_is_float(b->type) || !tsl_npu_is_float(d->type))
        return TSL_NPU_ERR_BAD_TYPE;
    if (!tsl_npu_same_shape(a, d)) return TSL_NPU_ERR_BAD_TYPE;
    for (int i = 0; i < 4; ++i)
        if (a->ne[i] % b->ne[i] != 0) return TSL_NPU_ERR_BAD_TYPE;
    return TSL_NPU_OK;
}

static float binary_value(uint32_t opcode, float x, float y) {
    switch (opcode) {
    case TSL_NPU_OP_ADD: return x + y;
    case TSL_NPU_OP_SUB: return x - y;
    case TSL_NPU_OP_MUL: return x * y;
    default: return x / y; /* DIV */
    }
}

static tsl_vf binary_vec(uint32_t opcode, tsl_vf x, tsl_vf y) {
    switch (opcode) {
    case TSL_NPU_OP_ADD: return tsl_vf_add(x, y);
    case TSL_NPU_OP_SUB: return tsl_vf_sub(x, y);
    case TSL_NPU_OP_MUL: return tsl_vf_mul(x, y);
    default: return tsl_vf_div(x, y);
    }
}

/* One row of all-F32, unit-stride tensors with src1's row as long as dst's. */
static void binary_row_f32(uint32_t opcode, float* d, const float* a, const float* b, int64_t n) {
    int64_t i = 0;
    for (; i + TSL_VF_LANES <= n; i += TSL_VF_LANES)
        tsl_vf_storeu(d + i, binary_vec(opcode, tsl_vf_loadu(a + i), tsl_vf_loadu(b + i)));
    for (; i < n; ++i) d[i] = binary_value(opcode, a[i], b[i]);
}

static void binary_row(const tsl_npu_op_ctx* c, int64_t i1, int64_t i2, int64_t i3) {
    const tsl_npu_view* a = &c->src[0];
    const tsl_npu_view* b = &c->src[1];
    const tsl_npu_view* d = &c->dst[0];
    const uint32_t opcode = c->op->opcode;
    const int64_t n0 = d->ne[0];
    const int fast = a->type == TSL_NPU_TYPE_F32 && b->type == TSL_NPU_TYPE_F32 && d->type == TSL_NPU_TYPE_F32 &&
                     a->nb[0] == 4 && b->nb[0] == 4 && d->nb[0] == 4 && b->ne[0] == n0;
    const uint8_t* pa = tsl_npu_elem(a, 0, i1, i2, i3);
    const uint8_t* pb = tsl_npu_elem(b, 0, i1 % b->ne[1], i2 % b->ne[2], i3 % b->ne[3]);
    uint8_t* pd = tsl_npu_elem(d, 0, i1, i2, i3);
    if (fast) {
        binary_row_f32(opcode, (float*)pd, (const float*)pa, (const float*)pb, n0);
        return;
    }
    for (int64_t i0 = 0; i0 < n0; ++i0) {
        const float x = tsl_npu_load_float(a->type, pa + (uint64_t)i0 * a->nb[0]);
        const float y = tsl_npu_load_float(b->type, pb + (uint64_t)(i0 % b->ne[0]) * b->nb[0]);
        tsl_npu_store_float(d->type, pd + (uint64_t)i0 * d->nb[0], binary_value(opcode, x, y));
    }
}

int32_t tsl_npu_binary_run(tsl_npu_op_ctx* c) {
    const int64_t n = tsl_npu_n_elements(&c->dst[0]);
    tsl_npu_for_rows(c, n, binary_row);
    c->bytes = (uint64_t)n * (tsl_npu_type_bytes(c->src[0].type) + tsl_npu_type_bytes(c->dst[0].type)) +
               (uint64_t)tsl_npu_n_elements(&c->src[1]) * tsl_npu_type_bytes(c->src[1].type);
    return TSL_NPU_OK;
}

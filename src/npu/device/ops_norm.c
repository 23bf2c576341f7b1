/* RMS_NORM and NORM per row of src0 (F32 or F16, any strides) into dst (F32 or F16, src0's
 * shape), eps = the float bits of params[0] (eps >= 0, else BAD_TYPE):
 *   RMS_NORM: y = x / sqrt(mean(x^2) + eps)
 *   NORM:     y = (x - mean) / sqrt(var + eps), var = mean((x - mean)^2) (two passes)
 * With src1 (a weight, F32 or F16, w.ne[0] == ne[0], each w.ne[i] dividing ne[i]: a row broadcast
 * or the same shape), y is multiplied by w's row (i1 % w.ne[1], i2 % w.ne[2], i3 % w.ne[3]) in
 * float before the store: the host's fusion of the norm with the MUL that follows it.
 * Row sums accumulate in float vectors (16 partial sums, then a pairwise tree); the divisor is
 * computed in double (dmath.h). tessel's reference (src/cpu/ref/reduce.cpp) sums in double: the
 * results agree to float rounding for rows of thousands of elements. */
#include "npu/device/dmath.h"
#include "npu/device/ops.h"

int32_t tsl_npu_norm_check(const tsl_npu_op_ctx* c) {
    const tsl_npu_view* a = &c->src[0];
    const tsl_npu_view* d = &c->dst[0];
    const tsl_npu_view* w = &c->src[1];
    if (!tsl_npu_is_float(a->type) || !tsl_npu_is_float(d->type) || !tsl_npu_same_shape(a, d))
        return TSL_NPU_ERR_BAD_TYPE;
    if (w->data) {
        if (!tsl_npu_is_float(w->type) || w->ne[0] != d->ne[0]) return TSL_NPU_ERR_BAD_TYPE;
        for (int i = 1; i < 4; ++i)
            if (w->ne[i] < 1 || d->ne[i] % w->ne[i] != 0) return TSL_NPU_ERR_BAD_TYPE;
    }
    const float eps = tsl_npu_f32_of_bits((uint32_t)c->op->params[0]);
    return eps >= 0.0f ? TSL_NPU_OK : TSL_NPU_ERR_BAD_TYPE;
}

/* Sum over the row of (x - shift)^2, or of x when `square` is 0. */
static double row_sum(const tsl_npu_view* a, const uint8_t* row, int square, float shift) {
    const int64_t n0 = a->ne[0];
    const tsl_vf s = tsl_vf_splat(shift);
    tsl_vf acc = tsl_vf_splat(0.0f);
    for (int64_t i0 = 0; i0 < n0; i0 += TSL_VF_LANES) {
        const int n = tsl_npu_chunk(n0, i0);
        const tsl_vf x = tsl_npu_row_load(a, row, i0, n, shift); /* padding lanes add 0 */
        if (square) {
            const tsl_vf dx = tsl_vf_sub(x, s);
            acc = tsl_vf_madd(dx, dx, acc);
        } else {
            acc = tsl_vf_add(acc, x);
        }
    }
    return (double)tsl_vf_hsum(acc);
}

static void norm_row(const tsl_npu_op_ctx* c, int64_t i1, int64_t i2, int64_t i3) {
    const tsl_npu_view* a = &c->src[0];
    const tsl_npu_view* d = &c->dst[0];
    const double eps = (double)tsl_npu_f32_of_bits((uint32_t)c->op->params[0]);
    const int centre = c->op->opcode == TSL_NPU_OP_NORM;
    const int64_t n0 = d->ne[0];
    const uint8_t* pa = tsl_npu_elem(a, 0, i1, i2, i3);
    uint8_t* pd = tsl_npu_elem(d, 0, i1, i2, i3);
    const float mean = centre ? (float)(row_sum(a, pa, 0, 0.0f) / (double)n0) : 0.0f;
    const double sq = row_sum(a, pa, 1, mean);
    const tsl_vf inv = tsl_vf_splat((float)tsl_npu_rsqrt(sq / (double)n0 + eps));
    const tsl_vf shift = tsl_vf_splat(mean);
    const tsl_npu_view* w = &c->src[1];
    const uint8_t* pw = w->data ? tsl_npu_elem(w, 0, i1 % w->ne[1], i2 % w->ne[2], i3 % w->ne[3]) : 0;
    for (int64_t i0 = 0; i0 < n0; i0 += TSL_VF_LANES) {
        const int n = tsl_npu_chunk(n0, i0);
        const tsl_vf x = tsl_npu_row_load(a, pa, i0, n, 0.0f);
        tsl_vf y = tsl_vf_mul(tsl_vf_sub(x, shift), inv);
        if (pw) y = tsl_vf_mul(y, tsl_npu_row_load(w, pw, i0, n, 0.0f));
        tsl_npu_row_store(d, pd, i0, n, y);
    }
}

int32_t tsl_npu_norm_run(tsl_npu_op_ctx* c) {
    const int64_t n = tsl_npu_n_elements(&c->dst[0]);
    tsl_npu_for_rows(c, 2 * n, norm_row);
    c->bytes = (uint64_t)n * (tsl_npu_type_bytes(c->src[0].type) + tsl_npu_type_bytes(c->dst[0].type));
    if (c->src[1].data) c->bytes += (uint64_t)tsl_npu_n_elements(&c->src[1]) * tsl_npu_type_bytes(c->src[1].type);
    return TSL_NPU_OK;
}

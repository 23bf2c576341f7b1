/* SOFT_MAX per row of src0 x F32 [K, M, H, B] into dst F32 (x's shape, any strides):
 *   z_k = x_k * scale + slope(h) * mask[k, i1, h % H', b % B']   (a -inf mask entry gives -inf)
 *   y_k = e^(z_k - max) / (sum_k e^(z_k - max) + e^(sink_h - max)),  max over z and the sink
 * scale = float bits of params[0]; params[1] (max_bias) only tells the host to plan the ALiBi
 * slopes, which arrive as tsl_npu_softmax_kparams (slope(h) = m0^(h+1) or m1^(2(h - n)+1)).
 * src1 mask F32/F16 [K, M' >= M, H', B'] with H % H' == 0, B % B' == 0, and src2 sinks F32 [H] are
 * optional. A row with every logit -inf (and no sink) gives zeros. As tessel's reference
 * (src/cpu/ref/softmax.cpp), which computes in double; here z, e^z (vec.h) and the sum are float.
 * Each worker keeps its row's z and e^z in a row buffer in VTCM (tsl_npu_softmax_scratch bytes in
 * all, stated in the kparams header): x and the mask are read once and dst written once. */
#include "npu/device/ops.h"

int32_t tsl_npu_soft_max_check(const tsl_npu_op_ctx* c) {
    const tsl_npu_view* x = &c->src[0];
    const tsl_npu_view* mask = &c->src[1];
    const tsl_npu_view* sinks = &c->src[2];
    const tsl_npu_view* d = &c->dst[0];
    if (x->type != TSL_NPU_TYPE_F32 || d->type != TSL_NPU_TYPE_F32 || !tsl_npu_same_shape(x, d))
        return TSL_NPU_ERR_BAD_TYPE;
    if (mask->data && (!tsl_npu_is_float(mask->type) || mask->ne[0] != x->ne[0] || mask->ne[1] < x->ne[1] ||
                       x->ne[2] % mask->ne[2] != 0 || x->ne[3] % mask->ne[3] != 0))
        return TSL_NPU_ERR_BAD_TYPE;
    if (sinks->data && (sinks->type != TSL_NPU_TYPE_F32 || sinks->ne[0] != x->ne[2] || tsl_npu_n_rows(sinks) != 1))
        return TSL_NPU_ERR_BAD_TYPE;
    return TSL_NPU_OK;
}

/* The op and each worker's row buffer in VTCM (row_floats floats apart, 64-byte aligned). */
typedef struct soft_max_task {
    const tsl_npu_op_ctx* c;
    float* scratch;
    uint64_t row_floats;
} soft_max_task;

static void soft_max_rows(void* arg, uint32_t worker, uint32_t n_workers) {
    const soft_max_task* t = (const soft_max_task*)arg;
    const tsl_npu_op_ctx* c = t->c;
    float* z = t->scratch + (uint64_t)worker * t->row_floats;
    const tsl_npu_view* x = &c->src[0];
    const tsl_npu_view* mask = c->src[1].data ? &c->src[1] : 0;
    const tsl_npu_view* sinks = c->src[2].data ? &c->src[2] : 0;
    const tsl_npu_view* d = &c->dst[0];
    tsl_npu_softmax_kparams kp;
    __builtin_memcpy(&kp, c->op->kparams + TSL_NPU_KPARAMS_BODY, sizeof kp);
    const tsl_vf scale = tsl_vf_splat(tsl_npu_f32_of_bits((uint32_t)c->op->params[0]));
    const float neg_inf = tsl_npu_f32_of_bits(0xff800000u);
    const tsl_vf vneg_inf = tsl_vf_splat(neg_inf);
    const tsl_vf lowest = tsl_vf_splat(-3.40282347e38f);
    const int64_t n0 = x->ne[0];
    int64_t begin, end, pending = 0;
    tsl_npu_split(tsl_npu_n_rows(d), worker, n_workers, &begin, &end);
    for (int64_t r = begin; r < end; ++r) {
        int64_t i1, i2, i3;
        tsl_npu_row_coords(d, r, &i1, &i2, &i3);
        tsl_npu_op_progress_work(c, &pending, 4 * n0); /* the row before this one is done */
        const uint8_t* px = tsl_npu_elem(x, 0, i1, i2, i3);
        const uint8_t* pm = mask ? tsl_npu_elem(mask, 0, i1, i2 % mask->ne[2], i3 % mask->ne[3]) : 0;
        uint8_t* pd = tsl_npu_elem(d, 0, i1, i2, i3);
        const float slope = (float)tsl_npu_alibi_slope(&kp, i2);
        const tsl_vf vslope = tsl_vf_splat(slope);
        /* pass 1: z into the row buffer (lanes past the row -inf), and its maximum */
        tsl_vf vmax = vneg_inf;
        for (int64_t i0 = 0; i0 < n0; i0 += TSL_VF_LANES) {
            const int n = tsl_npu_chunk(n0, i0);
            tsl_vf v = tsl_vf_mul(tsl_npu_row_load(x, px, i0, n, 0.0f), scale);
            if (pm) {
                const tsl_vf m = tsl_npu_row_load(mask, pm, i0, n, 0.0f);
                v = tsl_vf_select_lt(m, lowest, vneg_inf, tsl_vf_madd(vslope, m, v));
            }
            v = tsl_vf_keep_n(v, n, neg_inf);
            tsl_vf_store(z + i0, v);
            vmax = tsl_vf_max(vmax, v);
        }
        float max = tsl_vf_hmax(vmax);
        const float sink = sinks ? *(const float*)tsl_npu_elem(sinks, i2, 0, 0, 0) : neg_inf;
        max = sink > max ? sink : max;
        if (max == neg_inf) {
            for (int64_t i0 = 0; i0 < n0; i0 += TSL_VF_LANES)
                tsl_npu_row_store(d, pd, i0, tsl_npu_chunk(n0, i0), tsl_vf_splat(0.0f));
            continue;
        }
        /* pass 2: e^(z - max) in place, and the sum (e^-inf = 0 past the row) */
        const tsl_vf vm = tsl_vf_splat(max);
        tsl_vf acc = tsl_vf_splat(0.0f);
        for (int64_t i0 = 0; i0 < n0; i0 += TSL_VF_LANES) {
            const tsl_vf e = tsl_vf_exp(tsl_vf_sub(tsl_vf_load(z + i0), vm));
            tsl_vf_store(z + i0, e);
            acc = tsl_vf_add(acc, e);
        }
        const float sum = tsl_vf_hsum(acc) + (sinks ? tsl_npu_expf(sink - max) : 0.0f);
        /* pass 3: normalise into dst, its only write */
        const tsl_vf inv = tsl_vf_splat(1.0f / sum);
        for (int64_t i0 = 0; i0 < n0; i0 += TSL_VF_LANES)
            tsl_npu_row_store(d, pd, i0, tsl_npu_chunk(n0, i0), tsl_vf_mul(tsl_vf_load(z + i0), inv));
    }
}

int32_t tsl_npu_soft_max_run(tsl_npu_op_ctx* c) {
    const int64_t n0 = c->src[0].ne[0];
    const uint64_t bytes = tsl_npu_softmax_scratch(n0, c->platform->n_threads);
    soft_max_task t = {c, (float*)tsl_npu_vtcm_alloc(c->vtcm, bytes, TSL_NPU_VTCM_ALIGN),
                       tsl_npu_softmax_scratch(n0, 1) / 4u};
    if (!t.scratch) return TSL_NPU_ERR_NO_VTCM; /* the op stated less than its kernel takes */
    const int64_t n = tsl_npu_n_elements(&c->dst[0]);
    tsl_npu_ops_parallel(c, 4 * n, soft_max_rows, &t);
    c->bytes = (uint64_t)n * 8u;
    if (c->src[1].data) c->bytes += (uint64_t)n * tsl_npu_type_bytes(c->src[1].type);
    return TSL_NPU_OK;
}

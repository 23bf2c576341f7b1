/* ALLREDUCE: one rank's share of an all-reduce over the n ranks' F32 tensors dst[0..n) (proto.h).
 * The host fences the op on both sides (every rank's input is ready before any rank reads, and no
 * rank reads its result before every share is written); shares are disjoint, so the ranks' ops
 * never touch the same element. Each element is summed in rank order, ((x0 + x1) + x2) + x3. */
#include "npu/device/ops.h"

static uint32_t n_ranks(const tsl_npu_op_ctx* c) { return (uint32_t)c->op->params[1]; }

static int contiguous_f32(const tsl_npu_view* t) {
    uint64_t stride = sizeof(float);
    for (int i = 0; i < 4; ++i) {
        if (t->nb[i] != stride) return 0;
        stride *= (uint64_t)t->ne[i];
    }
    return 1;
}

int32_t tsl_npu_allreduce_check(const tsl_npu_op_ctx* c) {
    const uint32_t n = n_ranks(c), rank = (uint32_t)c->op->params[0], mode = (uint32_t)c->op->params[2];
    if (n < 2 || n > 4 || rank >= n || n > TSL_NPU_MAX_DST) return TSL_NPU_ERR_BAD_DESC;
    if (mode != TSL_NPU_ALLREDUCE_1D && mode != TSL_NPU_ALLREDUCE_2D) return TSL_NPU_ERR_BAD_DESC;
    for (uint32_t r = 0; r < n; ++r) {
        const tsl_npu_view* t = &c->dst[r];
        if (!t->data) return TSL_NPU_ERR_BAD_DESC;
        if (t->type != TSL_NPU_TYPE_F32 || !tsl_npu_same_shape(t, &c->dst[0]) || t->nb[0] != sizeof(float)) return TSL_NPU_ERR_BAD_TYPE;
        if (mode == TSL_NPU_ALLREDUCE_1D && !contiguous_f32(t)) return TSL_NPU_ERR_BAD_TYPE;
    }
    return TSL_NPU_OK;
}

typedef struct allreduce_job {
    tsl_npu_op_ctx* c;
    uint64_t lo, hi; /* the share: elements (1-D) or rows (2-D) */
} allreduce_job;

/* Sums `count` floats of ptr[0..n) (distinct tensors: restrict lets the loops vectorize) in rank
 * order and stores the sum in each. */
static void sum2(float* restrict a, float* restrict b, int64_t count) {
    for (int64_t i = 0; i < count; ++i) {
        const float s = a[i] + b[i];
        a[i] = s;
        b[i] = s;
    }
}

static void sum3(float* restrict a, float* restrict b, float* restrict c, int64_t count) {
    for (int64_t i = 0; i < count; ++i) {
        const float s = (a[i] + b[i]) + c[i];
        a[i] = s;
        b[i] = s;
        c[i] = s;
    }
}

static void sum4(float* restrict a, float* restrict b, float* restrict c, float* restrict d, int64_t count) {
    for (int64_t i = 0; i < count; ++i) {
        const float s = ((a[i] + b[i]) + c[i]) + d[i];
        a[i] = s;
        b[i] = s;
        c[i] = s;
        d[i] = s;
    }
}

static void sum_run(float* const* ptr, uint32_t n, int64_t count) {
    if (n == 2) sum2(ptr[0], ptr[1], count);
    else if (n == 3) sum3(ptr[0], ptr[1], ptr[2], count);
    else sum4(ptr[0], ptr[1], ptr[2], ptr[3], count);
}

static void allreduce_part(void* arg, uint32_t part, uint32_t n_parts) {
    const allreduce_job* j = (const allreduce_job*)arg;
    const tsl_npu_op_ctx* c = j->c;
    const uint32_t n = n_ranks(c);
    const uint64_t len = j->hi - j->lo;
    const uint64_t from = j->lo + len * part / n_parts, to = j->lo + len * (part + 1) / n_parts;
    float* ptr[4] = {0, 0, 0, 0};
    int64_t pending = 0;
    if ((uint32_t)c->op->params[2] == TSL_NPU_ALLREDUCE_1D) {
        for (uint32_t r = 0; r < n; ++r) ptr[r] = (float*)c->dst[r].data + from;
        sum_run(ptr, n, (int64_t)(to - from));
        tsl_npu_op_progress_work(c, &pending, (int64_t)(to - from) * n);
        return;
    }
    const tsl_npu_view* t0 = &c->dst[0];
    for (uint64_t row = from; row < to; ++row) {
        const int64_t i1 = (int64_t)(row % (uint64_t)t0->ne[1]);
        const int64_t i2 = (int64_t)(row / (uint64_t)t0->ne[1] % (uint64_t)t0->ne[2]);
        const int64_t i3 = (int64_t)(row / (uint64_t)t0->ne[1] / (uint64_t)t0->ne[2]);
        for (uint32_t r = 0; r < n; ++r) ptr[r] = (float*)tsl_npu_elem(&c->dst[r], 0, i1, i2, i3);
        sum_run(ptr, n, t0->ne[0]);
        tsl_npu_op_progress_work(c, &pending, t0->ne[0] * n);
    }
}

int32_t tsl_npu_allreduce_run(tsl_npu_op_ctx* c) {
    const uint32_t n = n_ranks(c), mode = (uint32_t)c->op->params[2];
    const tsl_npu_view* t0 = &c->dst[0];
    const uint64_t count = mode == TSL_NPU_ALLREDUCE_1D ? (uint64_t)tsl_npu_n_elements(t0) : (uint64_t)tsl_npu_n_rows(t0);
    allreduce_job j = {c, 0, 0};
    tsl_npu_allreduce_share(count, n, (uint32_t)c->op->params[0], mode, &j.lo, &j.hi);
    const uint64_t per = mode == TSL_NPU_ALLREDUCE_1D ? 1 : (uint64_t)t0->ne[0];
    tsl_npu_ops_parallel(c, (int64_t)((j.hi - j.lo) * per), allreduce_part, &j);
    c->bytes = (j.hi - j.lo) * per * sizeof(float) * 2u * n;
    return TSL_NPU_OK;
}

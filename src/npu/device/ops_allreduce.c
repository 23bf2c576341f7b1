/* ALLREDUCE and ALLREDUCE_ADD over the n ranks' F32 tensors (proto.h).
 *
 * ALLREDUCE: rank params[0] sums its share of the elements (1-D) or rows (2-D) and stores the sum
 * in every rank's tensor dst[0..n). The host fences the op on both sides (every rank's input is
 * ready before any rank reads, and no rank reads its result before every share is written);
 * shares are disjoint, so the ranks' ops never touch the same element.
 * ALLREDUCE_ADD: the ranks' tensors src[0..n) are only read; the rank writes the whole sum plus
 * the addend src[n] to its own dst[0].
 *
 * Each worker streams its piece through VTCM in blocks (tsl_npu_allreduce_kparams): the running
 * sum in one buffer (rank 0's block copied in), each further rank's block brought into the other
 * and added, so every element is summed in rank order, ((x0 + x1) + x2) + x3. */
#include "npu/device/ops.h"

static uint32_t n_ranks(const tsl_npu_op_ctx* c) { return (uint32_t)c->op->params[1]; }
static uint32_t ar_mode(const tsl_npu_op_ctx* c) { return (uint32_t)c->op->params[2]; }
static int fused(const tsl_npu_op_ctx* c) { return c->op->opcode == TSL_NPU_OP_ALLREDUCE_ADD; }

static int contiguous_f32(const tsl_npu_view* t) {
    uint64_t stride = sizeof(float);
    for (int i = 0; i < 4; ++i) {
        if (t->nb[i] != stride) return 0;
        stride *= (uint64_t)t->ne[i];
    }
    return 1;
}

/* The ranks' tensors: the outputs of ALLREDUCE, the inputs of ALLREDUCE_ADD. */
static const tsl_npu_view* rank_tensors(const tsl_npu_op_ctx* c) { return fused(c) ? c->src : c->dst; }

static int32_t check_f32_rows(const tsl_npu_view* t, const tsl_npu_view* shape, uint32_t mode) {
    if (!t->data) return TSL_NPU_ERR_BAD_DESC;
    if (t->type != TSL_NPU_TYPE_F32 || !tsl_npu_same_shape(t, shape) || t->nb[0] != sizeof(float)) return TSL_NPU_ERR_BAD_TYPE;
    if (mode == TSL_NPU_ALLREDUCE_1D && !contiguous_f32(t)) return TSL_NPU_ERR_BAD_TYPE;
    return TSL_NPU_OK;
}

int32_t tsl_npu_allreduce_check(const tsl_npu_op_ctx* c) {
    const uint32_t n = n_ranks(c), rank = (uint32_t)c->op->params[0], mode = ar_mode(c);
    if (n < 2 || n > 4 || rank >= n || n > TSL_NPU_MAX_DST) return TSL_NPU_ERR_BAD_DESC;
    if (mode != TSL_NPU_ALLREDUCE_1D && mode != TSL_NPU_ALLREDUCE_2D) return TSL_NPU_ERR_BAD_DESC;
    tsl_npu_allreduce_kparams kp;
    __builtin_memcpy(&kp, c->op->kparams + TSL_NPU_KPARAMS_BODY, sizeof kp);
    if (kp.block == 0 || (mode == TSL_NPU_ALLREDUCE_1D && kp.block % 128u != 0)) return TSL_NPU_ERR_BAD_DESC;
    const tsl_npu_view* x = rank_tensors(c);
    for (uint32_t r = 0; r < n; ++r) {
        const int32_t status = check_f32_rows(&x[r], &x[0], mode);
        if (status != TSL_NPU_OK) return status;
    }
    if (!fused(c)) return TSL_NPU_OK;
    const int32_t status = check_f32_rows(&c->dst[0], &x[0], mode);
    if (status != TSL_NPU_OK) return status;
    const tsl_npu_view* a = &c->src[n];
    if (!a->data) return TSL_NPU_ERR_BAD_DESC;
    if (a->type != TSL_NPU_TYPE_F32 || a->nb[0] != sizeof(float)) return TSL_NPU_ERR_BAD_TYPE;
    if (mode == TSL_NPU_ALLREDUCE_1D) return tsl_npu_same_shape(a, &x[0]) && contiguous_f32(a) ? TSL_NPU_OK : TSL_NPU_ERR_BAD_TYPE;
    if (a->ne[0] != x[0].ne[0]) return TSL_NPU_ERR_BAD_TYPE;
    for (int i = 1; i < 4; ++i)
        if (a->ne[i] != 1 && a->ne[i] != x[0].ne[i]) return TSL_NPU_ERR_BAD_TYPE;
    return TSL_NPU_OK;
}

typedef struct allreduce_job {
    tsl_npu_op_ctx* c;
    const tsl_npu_view* x; /* the n ranks' tensors */
    uint64_t lo, hi;       /* the units (elements or rows) this op covers */
    uint32_t block;        /* units per step */
    uint64_t unit;         /* VTCM bytes per unit */
    uint8_t* scratch;      /* per worker: the sum, then the staged block (2 x block x unit bytes) */
} allreduce_job;

/* Brings `bytes` at src near the worker: into dst when the platform copies (or `copy`), else read
 * in place; returns where to read them. */
static const float* fetch(const tsl_npu_op_ctx* c, uint32_t worker, void* dst, const void* src, uint64_t bytes, int copy) {
    const tsl_npu_platform* p = c->platform;
    const uint64_t t0 = tsl_npu_trace_clock(c);
    const void* at = src;
    if (p->dma_start && p->dma_wait) {
        at = p->dma_start(p->ctx, dst, src, bytes, copy ? TSL_NPU_DMA_COPY : 0u);
        p->dma_wait(p->ctx);
    } else if (copy) {
        __builtin_memcpy(dst, src, bytes);
        at = dst;
    }
    tsl_npu_trace_dma(c, worker, t0);
    return (const float*)at;
}

/* out[i] = a[i] + b[i]; out may be a (a running sum), never b. */
static void add_runs(float* out, const float* a, const float* restrict b, int64_t count) {
    if (out == a) {
        for (int64_t i = 0; i < count; ++i) out[i] += b[i];
        return;
    }
    for (int64_t i = 0; i < count; ++i) out[i] = a[i] + b[i];
}

/* Where run `idx` (an element index in 1-D, a row index in 2-D) starts in rank `which`'s tensor
 * (which < n), in the addend (which == n) or in the output (which == n + 1). */
static float* run_at(const allreduce_job* j, uint32_t which, uint64_t idx) {
    const tsl_npu_op_ctx* c = j->c;
    const uint32_t n = n_ranks(c);
    const tsl_npu_view* t = which < n ? &j->x[which] : which == n ? &c->src[n] : &c->dst[0];
    if (ar_mode(c) == TSL_NPU_ALLREDUCE_1D) return (float*)t->data + idx;
    const tsl_npu_view* t0 = &j->x[0];
    const int64_t i1 = (int64_t)(idx % (uint64_t)t0->ne[1]);
    const int64_t i2 = (int64_t)(idx / (uint64_t)t0->ne[1] % (uint64_t)t0->ne[2]);
    const int64_t i3 = (int64_t)(idx / (uint64_t)t0->ne[1] / (uint64_t)t0->ne[2]);
    return (float*)tsl_npu_elem(t, 0, i1 % t->ne[1], i2 % t->ne[2], i3 % t->ne[3]); /* the addend may broadcast */
}

/* One step of a worker: m runs of `count` floats from run `first` (1-D: one run of up to a block
 * of elements; 2-D: up to a block of rows). The sum of the ranks' runs in rank order lands in the
 * worker's sum buffer, then goes to every rank's tensor (ALLREDUCE) or, plus the addend, to the
 * output (ALLREDUCE_ADD). */
static void reduce_step(const allreduce_job* j, uint32_t worker, uint64_t first, uint64_t m, int64_t count) {
    const tsl_npu_op_ctx* c = j->c;
    const uint32_t n = n_ranks(c);
    uint8_t* acc = j->scratch + (uint64_t)worker * 2u * j->block * j->unit;
    uint8_t* stage = acc + (uint64_t)j->block * j->unit;
    const uint64_t bytes = (uint64_t)count * sizeof(float);
    for (uint32_t r = 1; r <= n; ++r) {
        if (r == n && !fused(c)) break;
        for (uint64_t k = 0; k < m; ++k) {
            float* sum = (float*)(acc + k * j->unit);
            /* rank 0's run lands in the sum buffer's place only for the first add (x0 + x1 there) */
            const float* x0 = r == 1 ? fetch(c, worker, acc + k * j->unit, run_at(j, 0, first + k), bytes, 0) : 0;
            const float* in = fetch(c, worker, stage + k * j->unit, run_at(j, r, first + k), bytes, 0);
            if (r == 1) add_runs(sum, x0, in, count);
            else if (r < n) add_runs(sum, sum, in, count);
            else add_runs(run_at(j, n + 1, first + k), sum, in, count);
        }
    }
    if (fused(c)) return;
    for (uint32_t r = 0; r < n; ++r)
        for (uint64_t k = 0; k < m; ++k) __builtin_memcpy(run_at(j, r, first + k), acc + k * j->unit, bytes);
}

static void allreduce_part(void* arg, uint32_t worker, uint32_t n_workers) {
    const allreduce_job* j = (const allreduce_job*)arg;
    const tsl_npu_op_ctx* c = j->c;
    const uint64_t len = j->hi - j->lo;
    const uint64_t from = j->lo + len * worker / n_workers, to = j->lo + len * (worker + 1) / n_workers;
    const int rows = ar_mode(c) == TSL_NPU_ALLREDUCE_2D;
    const int64_t ne0 = j->x[0].ne[0];
    int64_t pending = 0;
    for (uint64_t b = from; b < to; b += j->block) {
        const uint64_t step = to - b < j->block ? to - b : j->block;
        if (rows) reduce_step(j, worker, b, step, ne0);
        else reduce_step(j, worker, b, 1, (int64_t)step);
        tsl_npu_op_progress_work(c, &pending, (int64_t)step * (rows ? ne0 : 1) * n_ranks(c));
    }
}

int32_t tsl_npu_allreduce_run(tsl_npu_op_ctx* c) {
    const uint32_t n = n_ranks(c), mode = ar_mode(c);
    const tsl_npu_view* x = rank_tensors(c);
    tsl_npu_allreduce_kparams kp;
    __builtin_memcpy(&kp, c->op->kparams + TSL_NPU_KPARAMS_BODY, sizeof kp);
    allreduce_job j = {c, x, 0, 0, kp.block, tsl_npu_allreduce_unit_bytes(mode, x[0].ne[0]), 0};
    j.scratch = (uint8_t*)tsl_npu_vtcm_alloc(c->vtcm, tsl_npu_allreduce_scratch(mode, x[0].ne[0], kp.block, c->platform->n_threads),
                                             TSL_NPU_VTCM_ALIGN);
    if (!j.scratch) return TSL_NPU_ERR_NO_VTCM; /* the op stated less than its kernel takes */
    const uint64_t count = mode == TSL_NPU_ALLREDUCE_1D ? (uint64_t)tsl_npu_n_elements(&x[0]) : (uint64_t)tsl_npu_n_rows(&x[0]);
    if (fused(c)) j.hi = count; /* the whole tensor */
    else tsl_npu_allreduce_share(count, n, (uint32_t)c->op->params[0], mode, &j.lo, &j.hi);
    const uint64_t per = mode == TSL_NPU_ALLREDUCE_1D ? 1 : (uint64_t)x[0].ne[0];
    tsl_npu_ops_parallel(c, (int64_t)((j.hi - j.lo) * per), allreduce_part, &j);
    /* ALLREDUCE reads and writes n copies of its share; ALLREDUCE_ADD reads n + 1, writes one */
    c->bytes = (j.hi - j.lo) * per * sizeof(float) * (fused(c) ? n + 2u : 2u * n);
    return TSL_NPU_OK;
}

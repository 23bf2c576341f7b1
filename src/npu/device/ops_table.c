/* The op table: opcode -> implementation (ops.h), and the parallel helper ops share. */
#include "npu/device/ops.h"

static int32_t nop_check(const tsl_npu_op_ctx* c) {
    (void)c;
    return TSL_NPU_OK;
}

static int32_t nop_run(tsl_npu_op_ctx* c) {
    (void)c;
    return TSL_NPU_OK;
}

static const tsl_npu_op_kind k_ops[TSL_NPU_OP_COUNT] = {
    [TSL_NPU_OP_NOP] = {0, 0, nop_check, nop_run, 0},
    [TSL_NPU_OP_ADD] = {2, 1, tsl_npu_binary_check, tsl_npu_binary_run, 0},
    [TSL_NPU_OP_MUL] = {2, 1, tsl_npu_binary_check, tsl_npu_binary_run, 0},
    [TSL_NPU_OP_CPY] = {1, 1, tsl_npu_copy_check, tsl_npu_copy_run, 0},
    [TSL_NPU_OP_SCALE] = {1, 1, tsl_npu_scale_check, tsl_npu_scale_run, 0},
    [TSL_NPU_OP_FENCE] = {0, 1, tsl_npu_fence_check, tsl_npu_fence_run, 0},
    [TSL_NPU_OP_MEMCPY] = {1, 1, tsl_npu_memcpy_check, tsl_npu_memcpy_run, 0},
    [TSL_NPU_OP_SUB] = {2, 1, tsl_npu_binary_check, tsl_npu_binary_run, 0},
    [TSL_NPU_OP_DIV] = {2, 1, tsl_npu_binary_check, tsl_npu_binary_run, 0},
    [TSL_NPU_OP_RMS_NORM] = {1, 1, tsl_npu_norm_check, tsl_npu_norm_run, 0},
    [TSL_NPU_OP_NORM] = {1, 1, tsl_npu_norm_check, tsl_npu_norm_run, 0},
    [TSL_NPU_OP_UNARY] = {1, 1, tsl_npu_unary_check, tsl_npu_unary_run, 0},
    [TSL_NPU_OP_GLU] = {1, 1, tsl_npu_glu_check, tsl_npu_glu_run, 0},
    [TSL_NPU_OP_SUM_ROWS] = {1, 1, tsl_npu_sum_rows_check, tsl_npu_sum_rows_run, 0},
    [TSL_NPU_OP_SOFT_MAX] = {1, 1, tsl_npu_soft_max_check, tsl_npu_soft_max_run, 0},
    [TSL_NPU_OP_ROPE] = {2, 1, tsl_npu_rope_check, tsl_npu_rope_run, 0},
    [TSL_NPU_OP_GET_ROWS] = {2, 1, tsl_npu_get_rows_check, tsl_npu_get_rows_run, 1},
    [TSL_NPU_OP_SET_ROWS] = {2, 1, tsl_npu_set_rows_check, tsl_npu_set_rows_run, 0},
    [TSL_NPU_OP_ARGSORT] = {1, 1, tsl_npu_argsort_check, tsl_npu_argsort_run, 0},
    [TSL_NPU_OP_MUL_MAT] = {2, 1, tsl_npu_mul_mat_check, tsl_npu_mul_mat_run, 1},
    [TSL_NPU_OP_MUL_MAT_ID] = {3, 1, tsl_npu_mul_mat_id_check, tsl_npu_mul_mat_id_run, 1},
    [TSL_NPU_OP_FLASH_ATTN_EXT] = {3, 1, tsl_npu_flash_attn_check, tsl_npu_flash_attn_run, 0},
    [TSL_NPU_OP_FENCE_WAIT] = {1, 0, tsl_npu_fence_wait_check, tsl_npu_fence_wait_run, 0},
    [TSL_NPU_OP_ALLREDUCE] = {0, 2, tsl_npu_allreduce_check, tsl_npu_allreduce_run, 0},
    [TSL_NPU_OP_ALLREDUCE_ADD] = {3, 1, tsl_npu_allreduce_check, tsl_npu_allreduce_run, 0},
};

const tsl_npu_op_kind* tsl_npu_op_lookup(uint32_t opcode) {
    return opcode < TSL_NPU_OP_COUNT && k_ops[opcode].run ? &k_ops[opcode] : 0;
}

/* A parallel call of a traced op: each part records its span (ops_parallel). */
typedef struct traced_call {
    const tsl_npu_platform* p;
    tsl_npu_task_fn fn;
    void* arg;
    tsl_npu_span* spans; /* this call's, one per part */
} traced_call;

static void traced_part(void* arg, uint32_t i, uint32_t n) {
    const traced_call* t = (const traced_call*)arg;
    const tsl_npu_platform* p = t->p;
    tsl_npu_span* s = &t->spans[i];
    s->thread = p->thread_index ? p->thread_index(p->ctx) : 0;
    s->start_ns = p->now_ns(p->ctx);
    t->fn(t->arg, i, n);
    s->stop_ns = p->now_ns(p->ctx);
}

void tsl_npu_ops_parallel(const tsl_npu_op_ctx* c, int64_t elements, tsl_npu_task_fn fn, void* arg) {
    const tsl_npu_platform* p = c->platform;
    const int serial = elements < TSL_NPU_PARALLEL_MIN_ELEMENTS || p->n_threads <= 1 || !p->parallel;
    tsl_npu_op_trace* trace = c->trace;
    if (trace && trace->phase < TSL_NPU_TRACE_PHASES) {
        traced_call t = {p, fn, arg, trace->spans + trace->phase * trace->n_threads};
        ++trace->phase;
        if (serial)
            traced_part(&t, 0, 1);
        else
            p->parallel(p->ctx, traced_part, &t);
        return;
    }
    if (trace) ++trace->phase; /* past the recorded calls: tsl_npu_trace_dma ignores it */
    if (serial)
        fn(arg, 0, 1);
    else
        p->parallel(p->ctx, fn, arg);
}

typedef struct row_job {
    const tsl_npu_op_ctx* c;
    tsl_npu_row_fn row;
    int64_t row_work; /* the op's work per row (progress units) */
} row_job;

static void row_share(void* arg, uint32_t worker, uint32_t n_workers) {
    const row_job* j = (const row_job*)arg;
    const tsl_npu_view* d = &j->c->dst[0];
    int64_t begin, end, pending = 0;
    tsl_npu_split(tsl_npu_n_rows(d), worker, n_workers, &begin, &end);
    for (int64_t r = begin; r < end; ++r) {
        int64_t i1, i2, i3;
        tsl_npu_row_coords(d, r, &i1, &i2, &i3);
        j->row(j->c, i1, i2, i3);
        tsl_npu_op_progress_work(j->c, &pending, j->row_work);
    }
}

void tsl_npu_for_rows(const tsl_npu_op_ctx* c, int64_t elements, tsl_npu_row_fn row) {
    row_job j = {c, row, elements / tsl_npu_n_rows(&c->dst[0]) + 1};
    tsl_npu_ops_parallel(c, elements, row_share, &j);
}

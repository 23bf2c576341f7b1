/* Internal to the device runtime: the op table and what an op sees of a batch.
 *
 * The executor (device.c) resolves an op's src/dst tensor indices into views of device memory,
 * calls the op's check before running anything in the batch, then its run. Tensors of the types
 * ops read (F32, F16, I32) were already checked by the executor: every element lies inside the
 * tensor's [offset, offset + size) span of its buffer and is aligned to its element size.
 */
#ifndef TESSEL_NPU_DEVICE_OPS_H
#define TESSEL_NPU_DEVICE_OPS_H

#include "npu/device/device.h"
#include "npu/device/half.h"
#include "npu/device/vec.h"

/* A tensor of the batch in device memory: ne[0] innermost, nb[i] byte strides, size in bytes,
 * flags the descriptor's TSL_NPU_TENSOR_*. */
typedef struct tsl_npu_view {
    uint8_t* data;
    uint32_t type;
    uint32_t flags;
    int64_t ne[4];
    uint64_t nb[4];
    uint64_t size;
} tsl_npu_view;

/* The trace of a running op (TSL_NPU_BATCH_TRACE): its spans (proto.h, TSL_NPU_TRACE_PHASES x
 * n_threads) and the index of its next parallel call. */
typedef struct tsl_npu_op_trace {
    tsl_npu_span* spans;
    uint32_t n_threads;
    uint32_t phase;
} tsl_npu_op_trace;

/* One op of a batch: its descriptor and its resolved tensors (unused slots have data == NULL).
 * vtcm is the scratchpad, reset to the op's stated scratch_bytes (tsl_npu_op_scratch) before run;
 * NULL in check. */
typedef struct tsl_npu_op_ctx {
    const tsl_npu_platform* platform;
    const tsl_npu_kernels* kernels; /* the device's, for its platform's ISA (kernels.h) */
    const tsl_npu_op_desc* op;
    tsl_npu_vtcm* vtcm;
    tsl_npu_view src[TSL_NPU_MAX_SRC];
    tsl_npu_view dst[TSL_NPU_MAX_DST];
    uint64_t bytes; /* set by run: bytes read plus bytes written (profile counter 0) */
    uint64_t reshape_ns; /* set by run: ns its workers spent reshaping weights into a unit's operand
                            layout, summed over workers (profile counter 1; 0 when none) */
    volatile uint64_t* heartbeat; /* the host's progress counter (tsl_npu_op_progress); NULL: none */
    volatile const uint32_t* cancel; /* non-zero once the host cancels the batch (an op that waits looks); NULL: none */
    tsl_npu_op_trace* trace;      /* NULL unless the batch is traced */
} tsl_npu_op_ctx;

/* Trace hooks around a worker's DMA calls: t0 = tsl_npu_trace_clock(c) before, then
 * tsl_npu_trace_dma(c, worker, t0) after adds the time to the span of part `worker` of the
 * current parallel call. Both cost a test of c->trace when the batch is not traced. */
static inline uint64_t tsl_npu_trace_clock(const tsl_npu_op_ctx* c) {
    return c->trace ? c->platform->now_ns(c->platform->ctx) : 0;
}
static inline void tsl_npu_trace_dma(const tsl_npu_op_ctx* c, uint32_t worker, uint64_t t0) {
    const tsl_npu_op_trace* t = c->trace;
    if (!t || t->phase == 0 || t->phase > TSL_NPU_TRACE_PHASES || worker >= t->n_threads) return;
    t->spans[(t->phase - 1) * t->n_threads + worker].dma_ns += c->platform->now_ns(c->platform->ctx) - t0;
}

/* Progress inside an op. The host takes a heartbeat that stands still for its timeout for a stuck
 * device, so an op's workers beat while they work, not only the executor between ops: a long op
 * that makes progress is never cut. tsl_npu_op_progress advances the heartbeat (an atomic add
 * from any worker); tsl_npu_op_progress_work counts `work` units (what the op hands
 * tsl_npu_ops_parallel as its size: elements, multiply-adds, ...) into the worker's *pending and
 * beats once per TSL_NPU_PROGRESS_WORK of them, about a millisecond of work or less, so the add
 * costs nothing next to it. */
#define TSL_NPU_PROGRESS_WORK (1 << 20)

static inline void tsl_npu_op_progress(const tsl_npu_op_ctx* c) {
    if (c->heartbeat) __atomic_fetch_add(c->heartbeat, 1u, __ATOMIC_RELAXED);
}

static inline void tsl_npu_op_progress_work(const tsl_npu_op_ctx* c, int64_t* pending, int64_t work) {
    *pending += work;
    if (*pending >= TSL_NPU_PROGRESS_WORK) {
        *pending = 0;
        tsl_npu_op_progress(c);
    }
}

/* An opcode's implementation. check looks at types and shapes only (returns TSL_NPU_OK,
 * TSL_NPU_ERR_BAD_TYPE or TSL_NPU_ERR_BAD_DESC); run does the work and returns a status. */
typedef struct tsl_npu_op_kind {
    uint8_t n_src; /* src[0 .. n_src) must be present */
    uint8_t n_dst; /* dst[0 .. n_dst) must be present */
    int32_t (*check)(const tsl_npu_op_ctx* c);
    int32_t (*run)(tsl_npu_op_ctx* c);
    uint8_t reads_tiles; /* 1: operands may be 32x32 tiles (REPACKED); else the executor refuses them */
} tsl_npu_op_kind;

/* The kparams header of op `op` (proto.h): what the host planned for every op. */
static inline tsl_npu_kparams_header tsl_npu_op_header(const tsl_npu_op_desc* op) {
    tsl_npu_kparams_header h;
    __builtin_memcpy(&h, op->kparams, sizeof h);
    return h;
}

/* Scratch bytes op `op` states it needs. */
static inline uint64_t tsl_npu_op_scratch(const tsl_npu_op_desc* op) { return tsl_npu_op_header(op).scratch_bytes; }

/* The implementation of `opcode`, or NULL when the device has none. */
const tsl_npu_op_kind* tsl_npu_op_lookup(uint32_t opcode);

/* Bytes of one element of a plain type the ops read (F32, F16, I32, I64), or 0 for any other type. */
static inline uint32_t tsl_npu_type_bytes(uint32_t type) {
    switch (type) {
    case TSL_NPU_TYPE_F32: return 4;
    case TSL_NPU_TYPE_I32: return 4;
    case TSL_NPU_TYPE_I64: return 8;
    case TSL_NPU_TYPE_F16: return 2;
    default: return 0;
    }
}

static inline int tsl_npu_is_float(uint32_t type) { return type == TSL_NPU_TYPE_F32 || type == TSL_NPU_TYPE_F16; }

static inline int64_t tsl_npu_n_elements(const tsl_npu_view* t) { return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]; }
static inline int64_t tsl_npu_n_rows(const tsl_npu_view* t) { return t->ne[1] * t->ne[2] * t->ne[3]; }

static inline int tsl_npu_same_shape(const tsl_npu_view* a, const tsl_npu_view* b) {
    return a->ne[0] == b->ne[0] && a->ne[1] == b->ne[1] && a->ne[2] == b->ne[2] && a->ne[3] == b->ne[3];
}

/* Whether a present operand of the op is stored as 32x32 tiles (TSL_NPU_TENSOR_REPACKED): only
 * GET_ROWS, MUL_MAT and MUL_MAT_ID read tiles; the other ops' checks answer TSL_NPU_ERR_BAD_TYPE. */
static inline int tsl_npu_any_repacked(const tsl_npu_op_ctx* c) {
    for (int i = 0; i < TSL_NPU_MAX_SRC; ++i)
        if (c->src[i].data && (c->src[i].flags & TSL_NPU_TENSOR_REPACKED)) return 1;
    for (int i = 0; i < TSL_NPU_MAX_DST; ++i)
        if (c->dst[i].data && (c->dst[i].flags & TSL_NPU_TENSOR_REPACKED)) return 1;
    return 0;
}

/* Address of element (i0, i1, i2, i3) of a plain-type view. */
static inline uint8_t* tsl_npu_elem(const tsl_npu_view* t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return t->data + (uint64_t)i0 * t->nb[0] + (uint64_t)i1 * t->nb[1] + (uint64_t)i2 * t->nb[2] +
           (uint64_t)i3 * t->nb[3];
}

/* One F32 or F16 element as float, and the reverse (F16 rounds to nearest even). Elements are
 * aligned to their size (checked by the executor). */
static inline float tsl_npu_load_float(uint32_t type, const uint8_t* p) {
    if (type == TSL_NPU_TYPE_F16) return tsl_npu_half_to_float(*(const uint16_t*)p);
    return *(const float*)p;
}
static inline void tsl_npu_store_float(uint32_t type, uint8_t* p, float v) {
    if (type == TSL_NPU_TYPE_F16)
        *(uint16_t*)p = tsl_npu_float_to_half(v);
    else
        *(float*)p = v;
}

/* Elements [i0, i0 + n) (0 <= n <= TSL_VF_LANES) of the row of F32/F16 view t that starts at
 * `row`, as a vector; lanes past n hold `fill`. */
static inline tsl_vf tsl_npu_row_load(const tsl_npu_view* t, const uint8_t* row, int64_t i0, int n, float fill) {
    if (t->type == TSL_NPU_TYPE_F32 && t->nb[0] == 4) {
        const float* p = (const float*)row + i0;
        return n == TSL_VF_LANES ? tsl_vf_loadu(p) : tsl_vf_load_n(p, n, fill);
    }
    tsl_vf r = tsl_vf_splat(fill);
    if (t->type == TSL_NPU_TYPE_F16 && n == TSL_VF_LANES) {
        tsl_npu_half_row_to_float(row + (uint64_t)i0 * t->nb[0], t->nb[0], r.v, TSL_VF_LANES);
        return r;
    }
    for (int i = 0; i < n; ++i) r.v[i] = tsl_npu_load_float(t->type, row + (uint64_t)(i0 + i) * t->nb[0]);
    return r;
}

/* Elements [0, n) of the row of F32/F16 view t that starts at `row`, as floats into out (F16
 * converted a row at a time, tsl_npu_half_row_to_float). */
static inline void tsl_npu_row_to_floats(const tsl_npu_view* t, const uint8_t* row, int64_t n, float* out) {
    if (t->type == TSL_NPU_TYPE_F16) {
        tsl_npu_half_row_to_float(row, t->nb[0], out, n);
        return;
    }
    for (int64_t i = 0; i < n; ++i) out[i] = *(const float*)(const void*)(row + (uint64_t)i * t->nb[0]);
}

/* n floats of in as elements [0, n) of the row of F32/F16 view t that starts at `row` (F16
 * rounded to nearest even, a row at a time). */
static inline void tsl_npu_row_from_floats(const tsl_npu_view* t, uint8_t* row, int64_t n, const float* in) {
    if (t->type == TSL_NPU_TYPE_F16) {
        tsl_npu_float_row_to_half(in, row, t->nb[0], n);
        return;
    }
    for (int64_t i = 0; i < n; ++i) *(float*)(void*)(row + (uint64_t)i * t->nb[0]) = in[i];
}

/* Stores the first n lanes of v as elements [i0, i0 + n) of the row of t starting at `row`. */
static inline void tsl_npu_row_store(const tsl_npu_view* t, uint8_t* row, int64_t i0, int n, tsl_vf v) {
    if (t->type == TSL_NPU_TYPE_F32 && t->nb[0] == 4) {
        float* p = (float*)row + i0;
        if (n == TSL_VF_LANES)
            tsl_vf_storeu(p, v);
        else
            tsl_vf_store_n(p, v, n);
        return;
    }
    for (int i = 0; i < n; ++i) tsl_npu_store_float(t->type, row + (uint64_t)(i0 + i) * t->nb[0], v.v[i]);
}

/* Lanes of the chunk starting at i0 of a row of n elements. */
static inline int tsl_npu_chunk(int64_t n, int64_t i0) {
    return n - i0 < TSL_VF_LANES ? (int)(n - i0) : TSL_VF_LANES;
}

/* Bytes of a GGUF Q8_0 block: fp16 scale d, 32 int8 quants (value = d q). */
#define TSL_NPU_Q8_0_BYTES 34u

/* Whether every row of block-type view t (row_bytes each, rows nb[1..3] apart) lies inside its
 * `size` bytes (the executor checks elements of plain types only). */
static inline int tsl_npu_block_rows_inside(const tsl_npu_view* t, uint64_t row_bytes) {
    if (row_bytes > t->size) return 0;
    uint64_t room = t->size - row_bytes;
    for (int i = 1; i < 4; ++i) {
        const uint64_t steps = (uint64_t)(t->ne[i] - 1);
        if (steps == 0) continue;
        if (t->nb[i] > room / steps) return 0;
        room -= steps * t->nb[i];
    }
    return 1;
}

/* ALiBi slope of head h from the host's bases (tsl_npu_softmax_kparams): m0^(h + 1) below
 * n_head_log2, else m1^(2 (h - n_head_log2) + 1), by repeated squaring in double. */
static inline double tsl_npu_alibi_slope(const tsl_npu_softmax_kparams* kp, int64_t h) {
    double b = h < kp->n_head_log2 ? kp->m0 : kp->m1;
    int64_t e = h < kp->n_head_log2 ? h + 1 : 2 * (h - kp->n_head_log2) + 1;
    double r = 1.0;
    for (; e > 0; e >>= 1, b *= b)
        if (e & 1) r *= b;
    return r;
}

/* A row id of a plain I32 or I64 ids view. */
static inline int64_t tsl_npu_load_id(const tsl_npu_view* t, int64_t i0, int64_t i1, int64_t i2) {
    const uint8_t* p = tsl_npu_elem(t, i0, i1, i2, 0);
    if (t->type == TSL_NPU_TYPE_I64) return *(const int64_t*)p;
    return *(const int32_t*)p;
}

/* Coordinates of row r (rows numbered in ne order, i1 fastest). */
static inline void tsl_npu_row_coords(const tsl_npu_view* t, int64_t r, int64_t* i1, int64_t* i2, int64_t* i3) {
    *i1 = r % t->ne[1];
    *i2 = r / t->ne[1] % t->ne[2];
    *i3 = r / (t->ne[1] * t->ne[2]);
}

/* Worker i's share [*begin, *end) of n items out of n_workers, contiguous and in worker order. */
static inline void tsl_npu_split(int64_t n, uint32_t i, uint32_t n_workers, int64_t* begin, int64_t* end) {
    const int64_t per = (n + (int64_t)n_workers - 1) / (int64_t)n_workers;
    const int64_t b = per * (int64_t)i;
    *begin = b < n ? b : n;
    *end = b + per < n ? b + per : n;
}

/* Work below this many elements runs on the calling thread alone. */
#define TSL_NPU_PARALLEL_MIN_ELEMENTS 16384

/* Runs fn(arg, i, n) on the platform's workers when `elements` is large enough, else fn(arg, 0, 1). */
void tsl_npu_ops_parallel(const tsl_npu_op_ctx* c, int64_t elements, tsl_npu_task_fn fn, void* arg);

/* The body of a row-wise op: computes row (i1, i2, i3) of dst[0]. */
typedef void (*tsl_npu_row_fn)(const tsl_npu_op_ctx* c, int64_t i1, int64_t i2, int64_t i3);

/* Runs row(c, i1, i2, i3) for every row of dst[0], the rows split over the platform's workers in
 * contiguous shares (tsl_npu_split) when `elements` (the op's work) is large enough; each worker
 * reports its progress (`elements` / rows per row, tsl_npu_op_progress_work). */
void tsl_npu_for_rows(const tsl_npu_op_ctx* c, int64_t elements, tsl_npu_row_fn row);

/* The ops (ops_*.c). */
int32_t tsl_npu_binary_check(const tsl_npu_op_ctx* c);
int32_t tsl_npu_binary_run(tsl_npu_op_ctx* c); /* ADD, SUB, MUL, DIV */
int32_t tsl_npu_copy_check(const tsl_npu_op_ctx* c);
int32_t tsl_npu_copy_run(tsl_npu_op_ctx* c);   /* CPY */
int32_t tsl_npu_memcpy_check(const tsl_npu_op_ctx* c);
int32_t tsl_npu_memcpy_run(tsl_npu_op_ctx* c); /* MEMCPY */
int32_t tsl_npu_scale_check(const tsl_npu_op_ctx* c);
int32_t tsl_npu_scale_run(tsl_npu_op_ctx* c);  /* SCALE */
int32_t tsl_npu_fence_check(const tsl_npu_op_ctx* c);
int32_t tsl_npu_fence_run(tsl_npu_op_ctx* c);  /* FENCE */
int32_t tsl_npu_fence_wait_check(const tsl_npu_op_ctx* c);
int32_t tsl_npu_fence_wait_run(tsl_npu_op_ctx* c);  /* FENCE_WAIT */
int32_t tsl_npu_allreduce_check(const tsl_npu_op_ctx* c);
int32_t tsl_npu_allreduce_run(tsl_npu_op_ctx* c);  /* ALLREDUCE, ALLREDUCE_ADD */
int32_t tsl_npu_unary_check(const tsl_npu_op_ctx* c);
int32_t tsl_npu_unary_run(tsl_npu_op_ctx* c);  /* UNARY */
int32_t tsl_npu_glu_check(const tsl_npu_op_ctx* c);
int32_t tsl_npu_glu_run(tsl_npu_op_ctx* c);    /* GLU */
int32_t tsl_npu_norm_check(const tsl_npu_op_ctx* c);
int32_t tsl_npu_norm_run(tsl_npu_op_ctx* c);   /* RMS_NORM, NORM */
int32_t tsl_npu_sum_rows_check(const tsl_npu_op_ctx* c);
int32_t tsl_npu_sum_rows_run(tsl_npu_op_ctx* c); /* SUM_ROWS */
int32_t tsl_npu_soft_max_check(const tsl_npu_op_ctx* c);
int32_t tsl_npu_soft_max_run(tsl_npu_op_ctx* c); /* SOFT_MAX */
int32_t tsl_npu_rope_check(const tsl_npu_op_ctx* c);
int32_t tsl_npu_rope_run(tsl_npu_op_ctx* c);   /* ROPE */
int32_t tsl_npu_get_rows_check(const tsl_npu_op_ctx* c);
int32_t tsl_npu_get_rows_run(tsl_npu_op_ctx* c); /* GET_ROWS */
int32_t tsl_npu_set_rows_check(const tsl_npu_op_ctx* c);
int32_t tsl_npu_set_rows_run(tsl_npu_op_ctx* c); /* SET_ROWS */
int32_t tsl_npu_argsort_check(const tsl_npu_op_ctx* c);
int32_t tsl_npu_argsort_run(tsl_npu_op_ctx* c); /* ARGSORT */
int32_t tsl_npu_mul_mat_check(const tsl_npu_op_ctx* c);
int32_t tsl_npu_mul_mat_run(tsl_npu_op_ctx* c); /* MUL_MAT */
int32_t tsl_npu_mul_mat_id_check(const tsl_npu_op_ctx* c);
int32_t tsl_npu_mul_mat_id_run(tsl_npu_op_ctx* c); /* MUL_MAT_ID */
int32_t tsl_npu_flash_attn_check(const tsl_npu_op_ctx* c);
int32_t tsl_npu_flash_attn_run(tsl_npu_op_ctx* c); /* FLASH_ATTN_EXT */

#endif /* TESSEL_NPU_DEVICE_OPS_H */

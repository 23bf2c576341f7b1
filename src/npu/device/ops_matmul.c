/* MUL_MAT and MUL_MAT_ID (tessel's reference: src/cpu/ref/matmul.cpp; docs/npu.md, "Matmul
 * kernels").
 *
 * MUL_MAT: src0 weight [K, N, b2, b3], src1 F32 [K, M, B2, B3] (B2 % b2 == 0, B3 % b3 == 0,
 * rows contiguous: nb[0] = 4), dst F32 [N, M, B2, B3]: dst (n, m, i2, i3) = weight row
 * (n, i2 / (B2 / b2), i3 / (B3 / b3)) . src1 row (m, i2, i3).
 * MUL_MAT_ID: src0 experts [K, N, E], src1 F32 [K, U, T], src2 ids I32 [n_used, T]
 * (n_used % U == 0), dst F32 [N, n_used, T]: column (e, t) = expert ids[e, t] . src1 row
 * (e % U, t); an id outside [0, E) gives a zero column.
 *
 * The host picks the kernel (tsl_npu_matmul_kparams.kernel) and the check holds it to the weight:
 *  - TILED: the weight is REPACKED (32x32 tiles of Q4_0, Q4_1, Q8_0, IQ4_NL or MXFP4). The
 *    activations go in steps of kparams.act_rows src1 rows (the host's plan, sized to the VTCM): a
 *    step's rows are quantized to Q8 per 32-block into VTCM (workers split the rows), then the
 *    workers claim the items (a 32-row row tile of one weight matrix, with the step's activation
 *    columns it serves) in chunks of kparams.chunk from a shared atomic cursor and run the tile micro-kernel (ops_matmul.h) over up to TSL_NPU_MM_COLS
 *    columns per pass. With kparams.dma, each worker starts the transfer of the next item's row
 *    tile (its K tiles) into one of its two VTCM buffers through the platform's DMA stand-in while
 *    computing the current one from the other (dma 2: as copies even where the platform would
 *    prefetch and read in place); without, tiles are read in place.
 *  - MATRIX: as TILED, on the matrix unit (ops_matmul_tile_amx.c; only where the platform's isa
 *    has TSL_NPU_ISA_AMX_INT8, else the check refuses it): per item, after the DMA stand-in, the
 *    worker reshapes the row tile's K tiles into AMX B tiles in its VTCM panel (the time it takes
 *    is summed into the op's reshape_ns, profile counter 1), then every pass of columns reads them.
 *  - FLAT: a plain F16/F32 weight (rows contiguous: nb[0] = element size). Items as above; each
 *    F16 weight row is widened to F32 in the worker's VTCM row buffer (F32 rows are read in
 *    place) and dotted with the columns' F32 rows in float (16 partial sums).
 * Only kparams.threads workers take part (the others return at once).
 * Scratch: tsl_npu_matmul_scratch (proto.h) of one step's rows and the planned workers, exactly
 * what the host stated.
 *
 * Several outputs (the host's fusion of matmuls sharing src1): output o is dst[o] = weight o .
 * src1, the outputs present from dst[0] on (MUL_MAT at most 6, MUL_MAT_ID 8). Every
 * weight has src0's type, layout (REPACKED or not), K and batch dims (ne[2], ne[3]); its N is its
 * own. Weight o sits in src[0] for o = 0, else MUL_MAT src[1 + 2o], MUL_MAT_ID src[2 + o]. MUL_MAT
 * output o < 5 may have a bias (F32 [N_o], contiguous) in src[2 + 2o], added to every column in float
 * after the product (the fusion of the ADD that follows it). The activations are quantized once per
 * step; the items of all outputs share one cursor. */
#include "npu/device/ops.h"
#include "npu/device/ops_matmul.h"

/* One output of a matmul op: its weight, dst and (MUL_MAT) bias, N, row tiles per matrix, the row
 * tiles [rt0, rt0 + n_prt) this op computes (all, or its part), and the end of its items in the op's
 * item numbering. */
typedef struct mm_out {
    const tsl_npu_view *w, *d, *bias;
    int64_t n, n_rt, rt0, n_prt, item_end;
} mm_out;

typedef struct mm_job {
    tsl_npu_op_ctx* c;
    tsl_npu_matmul_kparams kp;
    int is_id;
    const tsl_npu_view *w, *x, *ids; /* w: output 0's weight (type, K, batch dims of all) */
    uint32_t n_out;
    mm_out out[TSL_NPU_MAX_DST];
    int64_t k, n_kt, n_items;
    int64_t r2, r3; /* MUL_MAT weight broadcast */
    uint32_t tile_bytes;
    uint8_t* act; /* TILED: the Q8 activation rows of the step */
    int64_t row0, row_end; /* the step: src1 rows [row0, row_end) (rows in ne order) */
    uint32_t threads;      /* workers that run the op (kparams.threads) */
    uint64_t act_row_bytes, q_bytes, s_bytes;
    uint8_t* worker_base;
    uint64_t worker_bytes;
    uint64_t panel_offset; /* MATRIX: the reshaped panel in a worker's area, then its 64-byte counters */
    const int32_t* expert_count; /* MUL_MAT_ID: columns routed to each expert */
    int64_t* cursor;             /* the next unclaimed item (workers claim chunks of `chunk` items) */
    int64_t chunk;
    void (*tile_fn)(const tsl_npu_mm_tile_args*);
    tsl_npu_mm_widen_fn widen_fn;
    tsl_npu_mm_dot_fn dot_fn;
    tsl_npu_mm_quantize_fn quantize_fn;
} mm_job;

static uint64_t align64(uint64_t n) { return tsl_npu_align_up(n, 64); }

/* The src slots of output o's weight and (MUL_MAT) bias; -1: none. */
static int weight_slot(int is_id, uint32_t o) { return o == 0 ? 0 : is_id ? 2 + (int)o : 1 + 2 * (int)o; }
static int bias_slot(int is_id, uint32_t o) { return is_id || 2 + 2 * (int)o >= TSL_NPU_MAX_SRC ? -1 : 2 + 2 * (int)o; }

/* Outputs of the op: the dsts present from dst[0] on, each with its weight slot in range. */
static uint32_t n_outputs(const tsl_npu_op_ctx* c, int is_id) {
    uint32_t n = 0;
    while (n < TSL_NPU_MAX_DST && c->dst[n].data && weight_slot(is_id, n) < TSL_NPU_MAX_SRC) ++n;
    return n;
}

static int32_t weight_check(const tsl_npu_view* w, const tsl_npu_matmul_kparams* kp, const tsl_npu_kernels* kernels) {
    if (w->flags & TSL_NPU_TENSOR_REPACKED) {
        const uint32_t tb = tsl_npu_tile_bytes(w->type);
        const int matrix_ok = kp->kernel == TSL_NPU_MM_MATRIX && kernels->matrix_tile_cols;
        if ((kp->kernel != TSL_NPU_MM_TILED && !matrix_ok) || tb == 0 || w->ne[0] % 32 != 0 || kp->dma > 2) return TSL_NPU_ERR_BAD_TYPE;
        const uint64_t tiles = (uint64_t)((w->ne[1] + 31) / 32) * (uint64_t)(w->ne[0] / 32) * (uint64_t)w->ne[2] *
                               (uint64_t)w->ne[3];
        return tiles > w->size / tb ? TSL_NPU_ERR_BAD_DESC : TSL_NPU_OK;
    }
    if (kp->kernel != TSL_NPU_MM_FLAT || !tsl_npu_is_float(w->type) || w->nb[0] != tsl_npu_type_bytes(w->type))
        return TSL_NPU_ERR_BAD_TYPE;
    return TSL_NPU_OK;
}

/* The kernel (kparams) held to every weight; the outputs past the first held to output 0's weight
 * and to dst0's columns (dst [N_o, dst0's ne[1..3]]), their biases to [N_o]; no operand past the
 * last output. */
static int32_t kernel_of(const tsl_npu_op_ctx* c, tsl_npu_matmul_kparams* kp, int is_id) {
    __builtin_memcpy(kp, c->op->kparams + TSL_NPU_KPARAMS_BODY, sizeof *kp);
    if (kp->n_parts > TSL_NPU_MM_MAX_PARTS || (kp->n_parts > 1 ? kp->part >= kp->n_parts : kp->part != 0)) return TSL_NPU_ERR_BAD_DESC;
    const tsl_npu_view *w0 = &c->src[0], *d0 = &c->dst[0];
    const uint32_t n_out = n_outputs(c, is_id);
    for (uint32_t o = n_out; o < TSL_NPU_MAX_DST; ++o) {
        const int ws = weight_slot(is_id, o), bs = bias_slot(is_id, o);
        if (c->dst[o].data) return TSL_NPU_ERR_BAD_DESC;
        if (ws < TSL_NPU_MAX_SRC && c->src[ws].data) return TSL_NPU_ERR_BAD_DESC;
        if (bs >= 0 && c->src[bs].data) return TSL_NPU_ERR_BAD_DESC;
    }
    for (uint32_t o = 0; o < n_out; ++o) {
        const tsl_npu_view *w = &c->src[weight_slot(is_id, o)], *d = &c->dst[o];
        if (!w->data) return TSL_NPU_ERR_BAD_DESC;
        if (w->type != w0->type || ((w->flags ^ w0->flags) & TSL_NPU_TENSOR_REPACKED) || w->ne[0] != w0->ne[0] ||
            w->ne[2] != w0->ne[2] || w->ne[3] != w0->ne[3])
            return TSL_NPU_ERR_BAD_TYPE;
        if (d->type != TSL_NPU_TYPE_F32 || (d->flags & TSL_NPU_TENSOR_REPACKED) || d->ne[0] != w->ne[1] ||
            d->ne[1] != d0->ne[1] || d->ne[2] != d0->ne[2] || d->ne[3] != d0->ne[3])
            return TSL_NPU_ERR_BAD_TYPE;
        const int bs = bias_slot(is_id, o);
        const tsl_npu_view* b = bs >= 0 ? &c->src[bs] : 0;
        if (b && b->data && (b->type != TSL_NPU_TYPE_F32 || (b->flags & TSL_NPU_TENSOR_REPACKED) || b->nb[0] != 4 ||
                             b->ne[0] != w->ne[1] || b->ne[1] != 1 || b->ne[2] != 1 || b->ne[3] != 1))
            return TSL_NPU_ERR_BAD_TYPE;
        const int32_t status = weight_check(w, kp, c->kernels);
        if (status != TSL_NPU_OK) return status;
    }
    return TSL_NPU_OK;
}

int32_t tsl_npu_mul_mat_check(const tsl_npu_op_ctx* c) {
    const tsl_npu_view *w = &c->src[0], *x = &c->src[1], *d = &c->dst[0];
    if (x->type != TSL_NPU_TYPE_F32 || x->nb[0] != 4 || d->type != TSL_NPU_TYPE_F32) return TSL_NPU_ERR_BAD_TYPE;
    if ((x->flags | d->flags) & TSL_NPU_TENSOR_REPACKED) return TSL_NPU_ERR_BAD_TYPE;
    if (x->ne[0] != w->ne[0] || x->ne[2] % w->ne[2] != 0 || x->ne[3] % w->ne[3] != 0) return TSL_NPU_ERR_BAD_TYPE;
    if (d->ne[0] != w->ne[1] || d->ne[1] != x->ne[1] || d->ne[2] != x->ne[2] || d->ne[3] != x->ne[3])
        return TSL_NPU_ERR_BAD_TYPE;
    tsl_npu_matmul_kparams kp;
    return kernel_of(c, &kp, 0);
}

int32_t tsl_npu_mul_mat_id_check(const tsl_npu_op_ctx* c) {
    const tsl_npu_view *w = &c->src[0], *x = &c->src[1], *ids = &c->src[2], *d = &c->dst[0];
    if (x->type != TSL_NPU_TYPE_F32 || x->nb[0] != 4 || d->type != TSL_NPU_TYPE_F32 || ids->type != TSL_NPU_TYPE_I32)
        return TSL_NPU_ERR_BAD_TYPE;
    if ((x->flags | d->flags | ids->flags) & TSL_NPU_TENSOR_REPACKED) return TSL_NPU_ERR_BAD_TYPE;
    if (w->ne[3] != 1 || x->ne[3] != 1 || ids->ne[2] != 1 || ids->ne[3] != 1) return TSL_NPU_ERR_BAD_TYPE;
    if (x->ne[0] != w->ne[0] || ids->ne[1] != x->ne[2] || ids->ne[0] % x->ne[1] != 0) return TSL_NPU_ERR_BAD_TYPE;
    if (d->ne[0] != w->ne[1] || d->ne[1] != ids->ne[0] || d->ne[2] != ids->ne[1] || d->ne[3] != 1)
        return TSL_NPU_ERR_BAD_TYPE;
    tsl_npu_matmul_kparams kp;
    return kernel_of(c, &kp, 1);
}

/* ---- items and their columns ------------------------------------------------------------- */

/* Item i's output, weight matrix and row tile; MUL_MAT also its activation batch (i2, i3). Items
 * run output by output: [0, out[0].item_end) are output 0's, and so on. */
static const mm_out* item_coords(const mm_job* j, int64_t item, int64_t* rt, int64_t* matrix, int64_t* i2, int64_t* i3) {
    uint32_t o = 0;
    while (item >= j->out[o].item_end) ++o;
    const mm_out* out = &j->out[o];
    if (o > 0) item -= j->out[o - 1].item_end;
    *rt = out->rt0 + item % out->n_prt;
    const int64_t rest = item / out->n_prt;
    if (j->is_id) {
        *matrix = rest;
        *i2 = *i3 = 0;
        return out;
    }
    *i2 = rest % j->x->ne[2];
    *i3 = rest / j->x->ne[2];
    *matrix = *i2 / j->r2 + j->w->ne[2] * (*i3 / j->r3);
    return out;
}

/* MUL_MAT: the item's activation batch has rows in the step; MUL_MAT_ID: its expert has columns
 * there (the counts are the step's). */
static int item_has_work(const mm_job* j, int64_t item) {
    int64_t rt, matrix, i2, i3;
    if (j->is_id) {
        item_coords(j, item, &rt, &matrix, &i2, &i3);
        return j->expert_count[matrix] > 0;
    }
    if (j->row0 == 0 && j->row_end == tsl_npu_n_rows(j->x)) return 1; /* one step: no division per claim */
    item_coords(j, item, &rt, &matrix, &i2, &i3);
    const int64_t base = j->x->ne[1] * (i2 + j->x->ne[2] * i3);
    return base < j->row_end && base + j->x->ne[1] > j->row0;
}

/* Items are handed out dynamically: a worker claims `chunk` consecutive items at a time from the
 * shared cursor (an atomic add), so a worker that runs slower (a busy or descheduled core) takes
 * fewer of them instead of holding the op up. Which worker computes an item does not change its
 * result. *cur, *end: the worker's current chunk. Returns the next item with work, or -1. */
static int64_t claim_item(const mm_job* j, int64_t* cur, int64_t* end) {
    for (;;) {
        if (*cur >= *end) {
            const int64_t b = __atomic_fetch_add(j->cursor, j->chunk, __ATOMIC_RELAXED);
            if (b >= j->n_items) return -1;
            *cur = b;
            *end = b + j->chunk < j->n_items ? b + j->chunk : j->n_items;
        }
        const int64_t item = (*cur)++;
        if (item_has_work(j, item)) return item;
    }
}

static int32_t id_at(const tsl_npu_view* ids, int64_t e, int64_t t) {
    return *(const int32_t*)tsl_npu_elem(ids, e, t, 0, 0);
}

/* The next up to TSL_NPU_MM_COLS columns of an item from *cursor on whose activation rows lie in the
 * step: each column's activation row index (into src1's rows) and its dst address at row 0 of the
 * row tile. Returns the count. */
static uint32_t next_cols(const mm_job* j, const mm_out* out, int64_t rt, int64_t matrix, int64_t i2, int64_t i3,
                          int64_t* cursor, int64_t* rows, uint8_t** outs) {
    uint32_t n = 0;
    if (!j->is_id) {
        const int64_t m_count = j->x->ne[1], base = m_count * (i2 + j->x->ne[2] * i3);
        const int64_t hi = j->row_end - base < m_count ? j->row_end - base : m_count;
        if (*cursor < j->row0 - base) *cursor = j->row0 - base;
        for (; *cursor < hi && n < TSL_NPU_MM_COLS; ++*cursor, ++n) {
            rows[n] = *cursor + base;
            outs[n] = tsl_npu_elem(out->d, rt * 32, *cursor, i2, i3);
        }
        return n;
    }
    const int64_t n_used = j->ids->ne[0], total = n_used * j->ids->ne[1], u = j->x->ne[1];
    for (; *cursor < total && n < TSL_NPU_MM_COLS; ++*cursor) {
        const int64_t e = *cursor % n_used, t = *cursor / n_used;
        if (id_at(j->ids, e, t) != matrix || e % u + u * t < j->row0 || e % u + u * t >= j->row_end) continue;
        rows[n] = e % u + u * t;
        outs[n] = tsl_npu_elem(out->d, rt * 32, e, t, 0);
        ++n;
    }
    return n;
}

/* Output row n's bias (0 without one): added to the product in float, as the ADD it replaces. */
static float bias_at(const mm_out* out, int64_t n) { return out->bias ? ((const float*)out->bias->data)[n] : 0.0f; }

/* Stores acc[c][r] (32 rows per column), plus the output's bias, into the item's dst rows below N. */
static void store_cols(const mm_out* out, int64_t rt, uint32_t n_cols, uint8_t* const* outs, float* acc) {
    const int64_t rows = out->n - rt * 32 < 32 ? out->n - rt * 32 : 32;
    if (out->bias)
        for (uint32_t c = 0; c < n_cols; ++c)
            for (int64_t r = 0; r < rows; ++r) acc[c * 32 + r] += bias_at(out, rt * 32 + r);
    if (out->d->nb[0] == 4) { /* contiguous dst rows: one block copy per column */
        for (uint32_t c = 0; c < n_cols; ++c) __builtin_memcpy(outs[c], acc + c * 32, (uint64_t)rows * 4u);
        return;
    }
    for (uint32_t c = 0; c < n_cols; ++c)
        for (int64_t r = 0; r < rows; ++r) *(float*)(outs[c] + (uint64_t)r * out->d->nb[0]) = acc[c * 32 + r];
}

/* ---- TILED ------------------------------------------------------------------------------- */

/* MATRIX: worker w's reshape time (ns), after its panel. */
static uint64_t* reshape_slot(const mm_job* j, uint32_t w) {
    return (uint64_t*)(j->worker_base + (uint64_t)w * j->worker_bytes + j->panel_offset +
                       (uint64_t)j->n_kt * TSL_NPU_MM_MATRIX_TILE_BYTES);
}

static const uint8_t* item_tiles(const mm_job* j, const mm_out* out, int64_t rt, int64_t matrix) {
    return out->w->data + (uint64_t)((matrix * out->n_rt + rt) * j->n_kt) * j->tile_bytes;
}

static void quantize_work(void* arg, uint32_t worker, uint32_t n_workers) {
    const mm_job* j = (const mm_job*)arg;
    int64_t begin, end, pending = 0;
    if (worker >= j->threads) return;
    tsl_npu_split(j->row_end - j->row0, worker, n_workers < j->threads ? n_workers : j->threads, &begin, &end);
    for (int64_t r = begin; r < end; ++r) {
        int64_t i1, i2, i3;
        tsl_npu_row_coords(j->x, j->row0 + r, &i1, &i2, &i3);
        uint8_t* row = j->act + (uint64_t)r * j->act_row_bytes;
        j->quantize_fn((const float*)tsl_npu_elem(j->x, 0, i1, i2, i3), j->k, (int8_t*)row,
                                (float*)(row + j->q_bytes), (int32_t*)(row + j->q_bytes + j->s_bytes));
        tsl_npu_op_progress_work(j->c, &pending, j->k);
    }
}

static void tiled_work(void* arg, uint32_t worker, uint32_t n_workers) {
    const mm_job* j = (const mm_job*)arg;
    if (worker >= j->threads) return;
    const tsl_npu_platform* p = j->c->platform;
    uint8_t* mine = j->worker_base + (uint64_t)worker * j->worker_bytes;
    float* acc = (float*)mine;
    const uint64_t buf_bytes = align64((uint64_t)j->n_kt * j->tile_bytes);
    uint8_t* bufs[2] = {mine + TSL_NPU_MM_COLS * 32u * 4u, mine + TSL_NPU_MM_COLS * 32u * 4u + buf_bytes};
    const int dma = j->kp.dma && p->dma_start && p->dma_wait;
    const uint32_t dma_flags = j->kp.dma == 2 ? TSL_NPU_DMA_COPY : 0u;
    const uint8_t* staged[2] = {0, 0}; /* where each buffer's transfer lands */
    const int amx = j->kp.kernel == TSL_NPU_MM_MATRIX;
    uint64_t reshape_ns = 0;
    const tsl_npu_kernels* k = j->c->kernels;
    if (amx) k->matrix_begin();
    (void)n_workers;
    int64_t cur = 0, end = 0, pending = 0;
    int64_t item = claim_item(j, &cur, &end);
    int64_t rt, matrix, i2, i3;
    if (dma && item >= 0) {
        const mm_out* out = item_coords(j, item, &rt, &matrix, &i2, &i3);
        staged[0] = (const uint8_t*)p->dma_start(p->ctx, bufs[0], item_tiles(j, out, rt, matrix), (uint64_t)j->n_kt * j->tile_bytes,
                                                 dma_flags);
    }
    int cur_buf = 0;
    int64_t rows[TSL_NPU_MM_COLS];
    uint8_t* outs[TSL_NPU_MM_COLS];
    const uint8_t* act[TSL_NPU_MM_COLS];
    while (item >= 0) {
        const int64_t next = claim_item(j, &cur, &end); /* claimed ahead: its transfer overlaps this item */
        const mm_out* out = item_coords(j, item, &rt, &matrix, &i2, &i3);
        const uint8_t* tiles = item_tiles(j, out, rt, matrix);
        if (dma) {
            const uint64_t dma_t0 = tsl_npu_trace_clock(j->c);
            p->dma_wait(p->ctx); /* this item's tiles have landed where staged[cur_buf] points */
            if (next >= 0) {
                int64_t nrt, nmatrix, n2, n3;
                const mm_out* nout = item_coords(j, next, &nrt, &nmatrix, &n2, &n3);
                staged[cur_buf ^ 1] = (const uint8_t*)p->dma_start(p->ctx, bufs[cur_buf ^ 1], item_tiles(j, nout, nrt, nmatrix),
                                                                   (uint64_t)j->n_kt * j->tile_bytes, dma_flags);
            }
            tsl_npu_trace_dma(j->c, worker, dma_t0);
            tiles = staged[cur_buf];
            cur_buf ^= 1;
        }
        if (amx) {
            const uint64_t t0 = p->now_ns(p->ctx);
            uint8_t* panel = mine + j->panel_offset;
            k->matrix_reshape(j->w->type, j->tile_bytes, j->n_kt, tiles, panel);
            reshape_ns += p->now_ns(p->ctx) - t0;
            tiles = panel;
        }
        int64_t cursor = 0;
        uint32_t n_cols;
        while ((n_cols = next_cols(j, out, rt, matrix, i2, i3, &cursor, rows, outs)) > 0) {
            for (uint32_t c = 0; c < n_cols; ++c) {
                act[c] = j->act + (uint64_t)(rows[c] - j->row0) * j->act_row_bytes;
                /* the columns' dst rows are far apart (N floats): ask for their lines now, for
                 * writing, so the misses overlap the pass instead of stalling store_cols */
                __builtin_prefetch(outs[c], 1, 3);
                __builtin_prefetch(outs[c] + 64, 1, 3);
            }
            const tsl_npu_mm_tile_args a = {j->w->type, j->tile_bytes, j->n_kt, tiles, n_cols, act,
                                            j->q_bytes,  j->s_bytes,    acc};
            j->tile_fn(&a);
            store_cols(out, rt, n_cols, outs, acc);
            tsl_npu_op_progress_work(j->c, &pending, 32 * (int64_t)n_cols * j->k); /* multiply-adds */
        }
        item = next;
    }
    if (amx) k->matrix_end();
    if (amx) *reshape_slot(j, worker) += reshape_ns;
}

/* ---- FLAT -------------------------------------------------------------------------------- */

static const uint8_t* weight_row(const mm_out* out, int64_t n, int64_t matrix) {
    const int64_t b2 = matrix % out->w->ne[2], b3 = matrix / out->w->ne[2];
    return tsl_npu_elem(out->w, 0, n, b2, b3);
}

static const float* x_row(const mm_job* j, int64_t row) {
    int64_t i1, i2, i3;
    tsl_npu_row_coords(j->x, row, &i1, &i2, &i3);
    return (const float*)tsl_npu_elem(j->x, 0, i1, i2, i3);
}

static void flat_work(void* arg, uint32_t worker, uint32_t n_workers) {
    const mm_job* j = (const mm_job*)arg;
    if (worker >= j->threads) return;
    float* wrow = (float*)(j->worker_base + (uint64_t)worker * j->worker_bytes);
    (void)n_workers;
    int64_t rows[TSL_NPU_MM_COLS];
    uint8_t* outs[TSL_NPU_MM_COLS];
    int64_t cur = 0, end = 0, pending = 0;
    for (int64_t item; (item = claim_item(j, &cur, &end)) >= 0;) {
        int64_t rt, matrix, i2, i3;
        const mm_out* out = item_coords(j, item, &rt, &matrix, &i2, &i3);
        const int64_t n_rows = out->n - rt * 32 < 32 ? out->n - rt * 32 : 32;
        int64_t cursor = 0;
        uint32_t n_cols;
        while ((n_cols = next_cols(j, out, rt, matrix, i2, i3, &cursor, rows, outs)) > 0) {
            for (int64_t r = 0; r < n_rows; ++r) {
                const uint8_t* src = weight_row(out, rt * 32 + r, matrix);
                const float bias = bias_at(out, rt * 32 + r);
                const float* w = (const float*)src; /* F32 rows are read in place */
                if (j->w->type == TSL_NPU_TYPE_F16) {
                    j->widen_fn((const uint16_t*)src, wrow, j->k);
                    w = wrow;
                }
                for (uint32_t c = 0; c < n_cols; ++c)
                    *(float*)(outs[c] + (uint64_t)r * out->d->nb[0]) = j->dot_fn(w, x_row(j, rows[c]), j->k) + bias;
            }
            tsl_npu_op_progress_work(j->c, &pending, n_rows * (int64_t)n_cols * j->k); /* multiply-adds */
        }
    }
}

/* ---- run --------------------------------------------------------------------------------- */

static int32_t mm_run(tsl_npu_op_ctx* c, int is_id) {
    mm_job j;
    __builtin_memset(&j, 0, sizeof j);
    j.c = c;
    j.is_id = is_id;
    j.w = &c->src[0];
    j.x = &c->src[1];
    j.ids = is_id ? &c->src[2] : 0;
    kernel_of(c, &j.kp, is_id);
    j.k = j.w->ne[0];
    j.n_kt = j.k / 32;
    j.r2 = j.x->ne[2] / j.w->ne[2];
    j.r3 = j.x->ne[3] / j.w->ne[3];
    j.n_out = n_outputs(c, is_id);
    int64_t n_total = 0; /* weight rows of all outputs */
    for (uint32_t o = 0; o < j.n_out; ++o) {
        mm_out* out = &j.out[o];
        out->w = &c->src[weight_slot(is_id, o)];
        out->d = &c->dst[o];
        const int bs = bias_slot(is_id, o);
        out->bias = bs >= 0 && c->src[bs].data ? &c->src[bs] : 0;
        out->n = out->w->ne[1];
        out->n_rt = (out->n + 31) / 32;
        /* part p of n_parts: the p-th of n_parts near-equal runs of row tiles (a group's rank) */
        const int64_t parts = j.kp.n_parts > 1 ? j.kp.n_parts : 1;
        out->rt0 = out->n_rt * j.kp.part / parts;
        out->n_prt = out->n_rt * (j.kp.part + 1) / parts - out->rt0;
        j.n_items += out->n_prt * (is_id ? j.w->ne[2] : j.x->ne[2] * j.x->ne[3]);
        out->item_end = j.n_items;
        n_total += out->n * out->n_prt / (out->n_rt ? out->n_rt : 1);
    }
    const uint32_t n_workers = c->platform->n_threads ? c->platform->n_threads : 1u;
    const uint32_t workers = j.kp.threads && j.kp.threads < n_workers ? j.kp.threads : n_workers;
    const int64_t n_rows = tsl_npu_n_rows(j.x);
    j.threads = workers;
    const int tiled = j.kp.kernel == TSL_NPU_MM_TILED || j.kp.kernel == TSL_NPU_MM_MATRIX;
    /* tiled kernels quantize and run the activations a step of kparams.act_rows rows at a time
     * (each item once per step, against the step's columns); flat reads them in place at once */
    const int64_t step = tiled && j.kp.act_rows && j.kp.act_rows < n_rows ? j.kp.act_rows : n_rows;
    const tsl_npu_kernels* k = c->kernels;
    j.tile_fn = j.kp.kernel == TSL_NPU_MM_MATRIX ? k->matrix_tile_cols : k->mm_tile_cols; /* the check saw the unit */
    j.widen_fn = k->mm_widen;
    j.dot_fn = k->mm_dot;
    j.quantize_fn = k->mm_quantize;
    if (tiled) {
        j.tile_bytes = tsl_npu_tile_bytes(j.w->type);
        j.q_bytes = align64((uint64_t)j.k);
        j.s_bytes = align64((uint64_t)j.n_kt * 4u);
        j.act_row_bytes = tsl_npu_q8_row_bytes(j.k);
        j.act = (uint8_t*)tsl_npu_vtcm_alloc(c->vtcm, (uint64_t)step * j.act_row_bytes, 0);
        j.panel_offset = (uint64_t)TSL_NPU_MM_COLS * 32u * 4u + (j.kp.dma ? 2u * align64((uint64_t)j.n_kt * j.tile_bytes) : 0u);
        j.worker_bytes = j.panel_offset;
        if (j.kp.kernel == TSL_NPU_MM_MATRIX) j.worker_bytes += (uint64_t)j.n_kt * TSL_NPU_MM_MATRIX_TILE_BYTES + 64u;
    } else {
        j.worker_bytes = align64((uint64_t)j.k * 4u);
    }
    j.worker_base = (uint8_t*)tsl_npu_vtcm_alloc(c->vtcm, workers * j.worker_bytes, 0);
    int32_t* counts = 0;
    if (is_id) counts = (int32_t*)tsl_npu_vtcm_alloc(c->vtcm, (uint64_t)j.w->ne[2] * 4u, 0);
    if ((tiled && !j.act) || !j.worker_base || (is_id && !counts)) return TSL_NPU_ERR_NO_VTCM;
    if (is_id) /* ids out of range: zero columns */
        for (int64_t t = 0; t < j.ids->ne[1]; ++t)
            for (int64_t e = 0; e < j.ids->ne[0]; ++e) {
                const int32_t id = id_at(j.ids, e, t);
                if (id < 0 || id >= j.w->ne[2])
                    for (uint32_t o = 0; o < j.n_out; ++o)
                        for (int64_t n = j.out[o].rt0 * 32; n < j.out[o].n && n < (j.out[o].rt0 + j.out[o].n_prt) * 32; ++n)
                            *(float*)tsl_npu_elem(j.out[o].d, n, e, t, 0) = 0.0f;
            }
    j.expert_count = counts;
    int64_t cursor = 0;
    j.cursor = &cursor;
    j.chunk = j.n_items / (4 * (int64_t)workers) > 1 ? j.n_items / (4 * (int64_t)workers) : 1; /* ~4 chunks a worker */
    if (j.kp.chunk) j.chunk = j.kp.chunk;
    if (j.kp.kernel == TSL_NPU_MM_MATRIX) /* a small op runs on worker 0 alone */
        for (uint32_t w = 0; w < workers; ++w) *reshape_slot(&j, w) = 0;
    for (j.row0 = 0; j.row0 < n_rows; j.row0 += step) {
        j.row_end = j.row0 + step < n_rows ? j.row0 + step : n_rows;
        if (is_id) { /* the step's columns per expert */
            const int64_t u = j.x->ne[1];
            for (int64_t e = 0; e < j.w->ne[2]; ++e) counts[e] = 0;
            for (int64_t t = 0; t < j.ids->ne[1]; ++t)
                for (int64_t e = 0; e < j.ids->ne[0]; ++e) {
                    const int32_t id = id_at(j.ids, e, t);
                    const int64_t row = e % u + u * t;
                    if (id >= 0 && id < j.w->ne[2] && row >= j.row0 && row < j.row_end) ++counts[id];
                }
        }
        cursor = 0;
        const int64_t work = n_total * (j.row_end - j.row0) * (tsl_npu_n_rows(j.out[0].d) / (n_rows ? n_rows : 1)) * j.k;
        if (tiled) tsl_npu_ops_parallel(c, (j.row_end - j.row0) * j.k, quantize_work, &j);
        tsl_npu_ops_parallel(c, work, tiled ? tiled_work : flat_work, &j); /* claims from cursor 0 */
    }
    if (j.kp.kernel == TSL_NPU_MM_MATRIX)
        for (uint32_t w = 0; w < workers; ++w) c->reshape_ns += *reshape_slot(&j, w);
    c->bytes = (uint64_t)tsl_npu_n_elements(j.x) * 4u;
    for (uint32_t o = 0; o < j.n_out; ++o)
        c->bytes += j.out[o].w->size + (uint64_t)tsl_npu_n_elements(j.out[o].d) * 4u + (j.out[o].bias ? j.out[o].bias->size : 0u);
    return TSL_NPU_OK;
}

int32_t tsl_npu_mul_mat_run(tsl_npu_op_ctx* c) { return mm_run(c, 0); }
int32_t tsl_npu_mul_mat_id_run(tsl_npu_op_ctx* c) { return mm_run(c, 1); }

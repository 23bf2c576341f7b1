/* GET_ROWS and SET_ROWS (tessel's reference: src/cpu/ref/data.cpp).
 *
 * GET_ROWS: src0 table [K, R, B2, B3] (F32, F16, or GGUF blocks Q4_0 / Q4_1 / Q8_0 with K a
 * multiple of 32 and nb[0] = the block's bytes), src1 ids I32 [n, B2, B3], dst F32 [K, n, B2, B3]:
 * dst row (i, b2, b3) = table row (ids[i, b2, b3], b2, b3) in float (blocks dequantized as GGUF
 * defines them: Q4_0 d (q - 8), Q4_1 d q + m, Q8_0 d q; product and sum rounded separately).
 * SET_ROWS: src0 rows F32 [K, n, B2, B3], src1 ids I32/I64 [n, C2, C3] (B2 % C2 == 0,
 * B3 % C3 == 0), dst0 F32/F16 [K, R, B2, B3], or Q8_0 blocks (K a multiple of 32, nb[0] = 34: a
 * quantized KV cache): dst row (ids[i, b2 % C2, b3 % C3], b2, b3) = rows row (i, b2, b3) (Q8_0:
 * quantized per 32-block as tessel's reference quantizer does, vec_i8.h); other rows kept; with repeated ids the last source row wins (each destination row
 * has one writer: worker = destination row mod workers, walking the source rows in order).
 * A REPACKED table (32x32 tiles of Q4_0, Q4_1, Q8_0, IQ4_NL or MXFP4, src/npu/host/tiled.hpp: the
 * token embeddings of a model whose weights are tiled) is read from its tiles: row id's values
 * come from tile row id % 32 of its row tile, dequantized with the same formulas (MXFP4: twice the
 * E2M1 value times half the E8M0 scale; IQ4_NL: the table value times d).
 * An id outside [0, R) is found while running: the op stops with BAD_DESC (rows done so far stay
 * written), where the reference throws. */
#include "npu/device/ops.h"
#include "npu/device/ops_matmul.h"
#include "npu/device/vec_i8.h"

/* Bytes of a GGUF block of 32 elements of a type GET_ROWS reads, or 0. */
static uint32_t block_bytes(uint32_t type) {
    switch (type) {
    case TSL_NPU_TYPE_Q4_0: return 18;
    case TSL_NPU_TYPE_Q4_1: return 20;
    case TSL_NPU_TYPE_Q8_0: return TSL_NPU_Q8_0_BYTES;
    default: return 0;
    }
}

/* Tiles of a REPACKED table [K, R, B2, B3]. */
static uint64_t n_tiles(const tsl_npu_view* t) {
    return (uint64_t)((t->ne[1] + 31) / 32) * (uint64_t)(t->ne[0] / 32) * (uint64_t)t->ne[2] * (uint64_t)t->ne[3];
}

int32_t tsl_npu_get_rows_check(const tsl_npu_op_ctx* c) {
    const tsl_npu_view* t = &c->src[0];
    const tsl_npu_view* ids = &c->src[1];
    const tsl_npu_view* d = &c->dst[0];
    if (ids->type != TSL_NPU_TYPE_I32 || d->type != TSL_NPU_TYPE_F32) return TSL_NPU_ERR_BAD_TYPE;
    if ((ids->flags | d->flags) & TSL_NPU_TENSOR_REPACKED) return TSL_NPU_ERR_BAD_TYPE;
    if (d->ne[0] != t->ne[0] || d->ne[1] != ids->ne[0] || d->ne[2] != ids->ne[1] || d->ne[3] != ids->ne[2] ||
        ids->ne[3] != 1 || t->ne[2] != ids->ne[1] || t->ne[3] != ids->ne[2])
        return TSL_NPU_ERR_BAD_TYPE;
    if (t->flags & TSL_NPU_TENSOR_REPACKED) {
        const uint32_t tb = tsl_npu_tile_bytes(t->type);
        if (tb == 0 || t->ne[0] % 32 != 0) return TSL_NPU_ERR_BAD_TYPE;
        return n_tiles(t) > t->size / tb ? TSL_NPU_ERR_BAD_DESC : TSL_NPU_OK;
    }
    if (tsl_npu_is_float(t->type)) return TSL_NPU_OK;
    const uint32_t bb = block_bytes(t->type);
    if (bb == 0 || t->ne[0] % 32 != 0 || t->nb[0] != bb) return TSL_NPU_ERR_BAD_TYPE;
    return tsl_npu_block_rows_inside(t, (uint64_t)(t->ne[0] / 32) * bb) ? TSL_NPU_OK : TSL_NPU_ERR_BAD_DESC;
}

static float f16_at(const uint8_t* p) {
    uint16_t h;
    __builtin_memcpy(&h, p, 2);
    return tsl_npu_half_to_float(h);
}

/* Row of `k` elements of block type `type` at p -> float y. */
static void dequant_row(uint32_t type, const uint8_t* p, int64_t k, float* y) {
    const uint32_t bb = block_bytes(type);
    for (int64_t b = 0; b < k / 32; ++b, p += bb, y += 32) {
        const float d = f16_at(p);
        if (type == TSL_NPU_TYPE_Q8_0) {
            for (int j = 0; j < 32; ++j) y[j] = (float)(int8_t)p[2 + j] * d;
            continue;
        }
        const int has_min = type == TSL_NPU_TYPE_Q4_1;
        const float m = has_min ? f16_at(p + 2) : 0.0f;
        const uint8_t* qs = p + (has_min ? 4 : 2);
        const int bias = has_min ? 0 : 8;
        for (int j = 0; j < 16; ++j) {
            const float lo = (float)((qs[j] & 0xf) - bias) * d;
            const float hi = (float)((qs[j] >> 4) - bias) * d;
            y[j] = has_min ? lo + m : lo;
            y[j + 16] = has_min ? hi + m : hi;
        }
    }
}

/* Row `id` of matrix (i2, i3) of a REPACKED table -> k floats at y (stride `stride` bytes). */
static void tiled_row(const tsl_npu_view* t, int64_t id, int64_t i2, int64_t i3, uint8_t* y, uint64_t stride) {
    const uint32_t tb = tsl_npu_tile_bytes(t->type);
    const int64_t n_kt = t->ne[0] / 32, n_rt = (t->ne[1] + 31) / 32;
    const int64_t matrix = i2 + t->ne[2] * i3;
    const int r = (int)(id % 32);
    const uint8_t* tile = t->data + (uint64_t)((matrix * n_rt + id / 32) * n_kt) * tb;
    float d[32], m[32];
    for (int64_t kt = 0; kt < n_kt; ++kt, tile += tb) {
        tsl_npu_tile_scales(t->type, tile, d, m);
        for (int j = 0; j < 32; ++j) {
            const float v = (float)tsl_npu_tile_value(t->type, tile, r, j) * d[r];
            *(float*)(y + (uint64_t)(kt * 32 + j) * stride) = t->type == TSL_NPU_TYPE_Q4_1 ? v + m[r] : v;
        }
    }
}

typedef struct rows_job {
    const tsl_npu_op_ctx* c;
    uint32_t bad_id; /* set (atomically) by a worker that met an id out of range */
} rows_job;

static void get_rows_work(void* arg, uint32_t worker, uint32_t n_workers) {
    rows_job* job = (rows_job*)arg;
    const tsl_npu_view* t = &job->c->src[0];
    const tsl_npu_view* ids = &job->c->src[1];
    const tsl_npu_view* d = &job->c->dst[0];
    const int64_t k = d->ne[0];
    int64_t begin, end, pending = 0;
    tsl_npu_split(tsl_npu_n_rows(d), worker, n_workers, &begin, &end);
    for (int64_t r = begin; r < end; ++r) {
        int64_t i1, i2, i3;
        tsl_npu_row_coords(d, r, &i1, &i2, &i3);
        tsl_npu_op_progress_work(job->c, &pending, k); /* the row before this one is done */
        const int64_t id = tsl_npu_load_id(ids, i1, i2, i3);
        if (id < 0 || id >= t->ne[1]) {
            __atomic_store_n(&job->bad_id, 1u, __ATOMIC_RELAXED);
            return;
        }
        uint8_t* to = tsl_npu_elem(d, 0, i1, i2, i3);
        if (t->flags & TSL_NPU_TENSOR_REPACKED) {
            tiled_row(t, id, i2, i3, to, d->nb[0]);
            continue;
        }
        const uint8_t* from = tsl_npu_elem(t, 0, id, i2, i3);
        if (!tsl_npu_is_float(t->type) && d->nb[0] == 4) {
            dequant_row(t->type, from, k, (float*)to);
            continue;
        }
        if (!tsl_npu_is_float(t->type)) {
            float block[32];
            for (int64_t b = 0; b < k / 32; ++b) {
                dequant_row(t->type, from + (uint64_t)b * t->nb[0], 32, block);
                for (int j = 0; j < 32; ++j) *(float*)(to + (uint64_t)(b * 32 + j) * d->nb[0]) = block[j];
            }
            continue;
        }
        for (int64_t i0 = 0; i0 < k; i0 += TSL_VF_LANES) {
            const int n = tsl_npu_chunk(k, i0);
            tsl_npu_row_store(d, to, i0, n, tsl_npu_row_load(t, from, i0, n, 0.0f));
        }
    }
}

int32_t tsl_npu_get_rows_run(tsl_npu_op_ctx* c) {
    rows_job job = {c, 0};
    const int64_t n = tsl_npu_n_elements(&c->dst[0]);
    tsl_npu_ops_parallel(c, n, get_rows_work, &job);
    c->bytes = (uint64_t)n * 4u * 2u;
    return job.bad_id ? TSL_NPU_ERR_BAD_DESC : TSL_NPU_OK;
}

int32_t tsl_npu_set_rows_check(const tsl_npu_op_ctx* c) {
    const tsl_npu_view* rows = &c->src[0];
    const tsl_npu_view* ids = &c->src[1];
    const tsl_npu_view* d = &c->dst[0];
    if (rows->type != TSL_NPU_TYPE_F32) return TSL_NPU_ERR_BAD_TYPE;
    const int q8 = d->type == TSL_NPU_TYPE_Q8_0;
    if (!tsl_npu_is_float(d->type) && !(q8 && d->ne[0] % 32 == 0 && d->nb[0] == TSL_NPU_Q8_0_BYTES))
        return TSL_NPU_ERR_BAD_TYPE;
    if ((rows->flags | ids->flags | d->flags) & TSL_NPU_TENSOR_REPACKED) return TSL_NPU_ERR_BAD_TYPE;
    if (ids->type != TSL_NPU_TYPE_I32 && ids->type != TSL_NPU_TYPE_I64) return TSL_NPU_ERR_BAD_TYPE;
    if (d->ne[0] != rows->ne[0] || d->ne[2] != rows->ne[2] || d->ne[3] != rows->ne[3] || rows->ne[1] != ids->ne[0] ||
        rows->ne[2] % ids->ne[1] != 0 || rows->ne[3] % ids->ne[2] != 0 || ids->ne[3] != 1)
        return TSL_NPU_ERR_BAD_TYPE;
    if (q8 && !tsl_npu_block_rows_inside(d, (uint64_t)(d->ne[0] / 32) * TSL_NPU_Q8_0_BYTES)) return TSL_NPU_ERR_BAD_DESC;
    return TSL_NPU_OK;
}

/* k floats (k % 32 == 0) -> k / 32 Q8_0 blocks (fp16 d, then 32 quants) at to. */
static void store_q8_0_row(const float* from, int64_t k, uint8_t* to) {
    for (int64_t b = 0; b < k / 32; ++b, to += TSL_NPU_Q8_0_BYTES) {
        int32_t sum;
        const uint16_t d = tsl_npu_quantize_q8_block(from + 32 * b, (int8_t*)(to + 2), &sum);
        __builtin_memcpy(to, &d, 2);
    }
}

static void set_rows_work(void* arg, uint32_t worker, uint32_t n_workers) {
    rows_job* job = (rows_job*)arg;
    const tsl_npu_view* rows = &job->c->src[0];
    const tsl_npu_view* ids = &job->c->src[1];
    const tsl_npu_view* d = &job->c->dst[0];
    const int64_t k = d->ne[0];
    const int64_t n_rows = tsl_npu_n_rows(rows);
    int64_t pending = 0;
    for (int64_t r = 0; r < n_rows; ++r) {
        int64_t i1, i2, i3;
        tsl_npu_row_coords(rows, r, &i1, &i2, &i3);
        tsl_npu_op_progress_work(job->c, &pending, k / (int64_t)n_workers + 1); /* rows are this worker's 1 in n */
        const int64_t id = tsl_npu_load_id(ids, i1, i2 % ids->ne[1], i3 % ids->ne[2]);
        if (id < 0 || id >= d->ne[1]) {
            __atomic_store_n(&job->bad_id, 1u, __ATOMIC_RELAXED);
            return;
        }
        const int64_t dst_row = id + d->ne[1] * (i2 + d->ne[2] * i3);
        if (dst_row % (int64_t)n_workers != (int64_t)worker) continue;
        const uint8_t* from = tsl_npu_elem(rows, 0, i1, i2, i3);
        uint8_t* to = tsl_npu_elem(d, 0, id, i2, i3);
        if (d->type == TSL_NPU_TYPE_Q8_0) {
            store_q8_0_row((const float*)from, k, to);
            continue;
        }
        for (int64_t i0 = 0; i0 < k; i0 += TSL_VF_LANES) {
            const int n = tsl_npu_chunk(k, i0);
            tsl_npu_row_store(d, to, i0, n, tsl_npu_row_load(rows, from, i0, n, 0.0f));
        }
    }
}

int32_t tsl_npu_set_rows_run(tsl_npu_op_ctx* c) {
    rows_job job = {c, 0};
    const int64_t n = tsl_npu_n_elements(&c->src[0]);
    tsl_npu_ops_parallel(c, n, set_rows_work, &job);
    const uint64_t out_bytes = c->dst[0].type == TSL_NPU_TYPE_Q8_0 ? (uint64_t)n / 32u * TSL_NPU_Q8_0_BYTES
                                                                  : (uint64_t)n * tsl_npu_type_bytes(c->dst[0].type);
    c->bytes = (uint64_t)n * 4u + out_bytes;
    return job.bad_id ? TSL_NPU_ERR_BAD_DESC : TSL_NPU_OK;
}

/* CPY: dst = src0 converted, F32 or F16 each way. Elements are matched in flattened ne order, so
 * dst may have another shape with the same element count, and either side may be strided or
 * permuted. Same type: the element's bytes are copied (NaN payloads kept); F32 <-> F16: through
 * float, F16 rounding to nearest even. As tessel's reference (src/cpu/ref/data.cpp, CPY). */
#include "npu/device/ops.h"

int32_t tsl_npu_copy_check(const tsl_npu_op_ctx* c) {
    const tsl_npu_view* s = &c->src[0];
    const tsl_npu_view* d = &c->dst[0];
    if (!tsl_npu_is_float(s->type) || !tsl_npu_is_float(d->type)) return TSL_NPU_ERR_BAD_TYPE;
    if (tsl_npu_n_elements(s) != tsl_npu_n_elements(d)) return TSL_NPU_ERR_BAD_TYPE;
    return TSL_NPU_OK;
}

static void copy_elem(uint32_t from_type, const uint8_t* from, uint32_t to_type, uint8_t* to) {
    if (from_type == to_type) {
        if (to_type == TSL_NPU_TYPE_F16)
            *(uint16_t*)to = *(const uint16_t*)from;
        else
            *(uint32_t*)to = *(const uint32_t*)from;
        return;
    }
    tsl_npu_store_float(to_type, to, tsl_npu_load_float(from_type, from));
}

static void copy_rows(void* arg, uint32_t worker, uint32_t n_workers) {
    const tsl_npu_op_ctx* c = (const tsl_npu_op_ctx*)arg;
    const tsl_npu_view* s = &c->src[0];
    const tsl_npu_view* d = &c->dst[0];
    const int64_t n0 = d->ne[0];
    int64_t begin, end, pending = 0;
    tsl_npu_split(tsl_npu_n_rows(d), worker, n_workers, &begin, &end);
    for (int64_t r = begin; r < end; ++r) {
        int64_t i1, i2, i3;
        tsl_npu_row_coords(d, r, &i1, &i2, &i3);
        tsl_npu_op_progress_work(c, &pending, n0); /* the row before this one is done */
        uint8_t* pd = tsl_npu_elem(d, 0, i1, i2, i3);
        if (s->ne[0] == n0) { /* rows correspond one to one */
            int64_t j1, j2, j3;
            tsl_npu_row_coords(s, r, &j1, &j2, &j3);
            const uint8_t* ps = tsl_npu_elem(s, 0, j1, j2, j3);
            for (int64_t i0 = 0; i0 < n0; ++i0)
                copy_elem(s->type, ps + (uint64_t)i0 * s->nb[0], d->type, pd + (uint64_t)i0 * d->nb[0]);
            continue;
        }
        /* source coordinates of this row's first element, then advanced with carries */
        const int64_t flat = r * n0;
        int64_t k[4];
        k[0] = flat % s->ne[0];
        k[1] = flat / s->ne[0] % s->ne[1];
        k[2] = flat / (s->ne[0] * s->ne[1]) % s->ne[2];
        k[3] = flat / (s->ne[0] * s->ne[1] * s->ne[2]);
        for (int64_t i0 = 0; i0 < n0; ++i0) {
            copy_elem(s->type, tsl_npu_elem(s, k[0], k[1], k[2], k[3]), d->type, pd + (uint64_t)i0 * d->nb[0]);
            for (int dim = 0; dim < 3 && ++k[dim] == s->ne[dim]; ++dim) k[dim] = 0;
        }
    }
}

int32_t tsl_npu_copy_run(tsl_npu_op_ctx* c) {
    const int64_t n = tsl_npu_n_elements(&c->dst[0]);
    tsl_npu_ops_parallel(c, n, copy_rows, c);
    c->bytes = (uint64_t)n * (tsl_npu_type_bytes(c->src[0].type) + tsl_npu_type_bytes(c->dst[0].type));
    return TSL_NPU_OK;
}

/* MEMCPY: the bytes of src0 into dst0, both `size` bytes (the host's asynchronous set/get of a
 * tensor through a staging buffer). Spans were checked against their buffers with the batch. */
int32_t tsl_npu_memcpy_check(const tsl_npu_op_ctx* c) {
    return c->src[0].size == c->dst[0].size ? TSL_NPU_OK : TSL_NPU_ERR_BAD_TYPE;
}

#define TSL_NPU_MEMCPY_CHUNK 65536u

static void memcpy_chunks(void* arg, uint32_t worker, uint32_t n_workers) {
    const tsl_npu_op_ctx* c = (const tsl_npu_op_ctx*)arg;
    const uint64_t size = c->src[0].size;
    const int64_t chunks = (int64_t)((size + TSL_NPU_MEMCPY_CHUNK - 1) / TSL_NPU_MEMCPY_CHUNK);
    int64_t begin, end, pending = 0;
    tsl_npu_split(chunks, worker, n_workers, &begin, &end);
    for (int64_t k = begin; k < end; ++k) {
        const uint64_t at = (uint64_t)k * TSL_NPU_MEMCPY_CHUNK;
        const uint64_t n = size - at < TSL_NPU_MEMCPY_CHUNK ? size - at : TSL_NPU_MEMCPY_CHUNK;
        __builtin_memcpy(c->dst[0].data + at, c->src[0].data + at, (size_t)n);
        tsl_npu_op_progress_work(c, &pending, (int64_t)(n / 4)); /* in the 4-byte units of its size */
    }
}

int32_t tsl_npu_memcpy_run(tsl_npu_op_ctx* c) {
    /* counted in 4-byte units for the parallel threshold */
    tsl_npu_ops_parallel(c, (int64_t)(c->src[0].size / 4), memcpy_chunks, c);
    c->bytes = 2 * c->src[0].size;
    return TSL_NPU_OK;
}

/* Checking and resolving a batch block (batch.h): every count, buffer, tensor and op descriptor
 * is checked before the first op runs, with overflow-safe u64 arithmetic (the device may be a
 * 32-bit DSP, and the block comes from another address space). */
#include "npu/device/batch.h"

#define TSL_NPU_MAX_ELEMENTS ((int64_t)1 << 48)

static const tsl_npu_mapping* find_mapping(const tsl_npu_device* d, int32_t host_fd) {
    for (uint32_t i = 0; i < TSL_NPU_DEVICE_MAX_MAPPINGS; ++i)
        if (d->mappings[i].host_fd == host_fd && d->mappings[i].base) return &d->mappings[i];
    return 0;
}

/* Whether every element of t lies in its first `size` bytes and is aligned to its element size. */
static int elements_inside(const tsl_npu_tensor_desc* t, uint32_t esize) {
    if (t->offset % esize != 0) return 0;
    uint64_t room = t->size;
    if (room < esize) return 0;
    room -= esize;
    for (int i = 0; i < 4; ++i) {
        if (t->nb[i] % esize != 0) return 0;
        const uint64_t steps = (uint64_t)(t->ne[i] - 1);
        if (steps == 0) continue;
        if (t->nb[i] > room / steps) return 0;
        room -= steps * t->nb[i];
    }
    return 1;
}

static int32_t check_tensor(const tsl_npu_tensor_desc* t, const tsl_npu_buf_desc* bufs, uint32_t n_bufs) {
    if (t->buf >= n_bufs) return TSL_NPU_ERR_BAD_DESC;
    const uint64_t buf_size = bufs[t->buf].size;
    if (t->offset > buf_size || t->size > buf_size - t->offset) return TSL_NPU_ERR_BAD_DESC;
    int64_t elements = 1;
    for (int i = 0; i < 4; ++i) {
        if (t->ne[i] < 1 || t->ne[i] > TSL_NPU_MAX_ELEMENTS / elements) return TSL_NPU_ERR_BAD_DESC;
        elements *= t->ne[i];
    }
    const uint32_t esize = tsl_npu_type_bytes(t->type);
    if (esize != 0 && !elements_inside(t, esize)) return TSL_NPU_ERR_BAD_DESC;
    return TSL_NPU_OK;
}

static int32_t check_slots(const uint16_t* slots, int n_slots, uint32_t n_required, uint32_t n_tensors) {
    for (int i = 0; i < n_slots; ++i) {
        if (slots[i] == TSL_NPU_NONE) {
            if ((uint32_t)i < n_required) return TSL_NPU_ERR_BAD_DESC;
        } else if (slots[i] >= n_tensors) {
            return TSL_NPU_ERR_BAD_DESC;
        }
    }
    return TSL_NPU_OK;
}

int32_t tsl_npu_batch_check(const tsl_npu_device* d, uint8_t* block, const tsl_npu_batch_req* req, tsl_npu_batch* b,
                            uint32_t* err_op) {
    *err_op = TSL_NPU_BATCH_REFUSED;
    if (!block || ((uintptr_t)block & 7u) != 0) return TSL_NPU_ERR_BAD_BATCH;
    if (req->n_bufs > TSL_NPU_MAX_BUFS || req->n_tensors > TSL_NPU_MAX_TENSORS) return TSL_NPU_ERR_BAD_BATCH;
    const uint64_t trace = (req->flags & TSL_NPU_BATCH_TRACE) ? tsl_npu_trace_bytes(req->n_ops, d->platform.n_threads) : 0;
    if (req->block_size != tsl_npu_block_size(req->n_bufs, req->n_tensors, req->n_ops) + trace) return TSL_NPU_ERR_BAD_BATCH;
    b->n_bufs = req->n_bufs;
    b->n_tensors = req->n_tensors;
    b->n_ops = req->n_ops;
    b->bufs = (const tsl_npu_buf_desc*)block;
    b->tensors = (const tsl_npu_tensor_desc*)(block + tsl_npu_block_tensors_offset(req->n_bufs));
    b->ops = (const tsl_npu_op_desc*)(block + tsl_npu_block_ops_offset(req->n_bufs, req->n_tensors));
    b->profile = (tsl_npu_profile*)(block + tsl_npu_block_profile_offset(req->n_bufs, req->n_tensors, req->n_ops));
    b->spans = trace ? (tsl_npu_span*)(block + tsl_npu_block_size(req->n_bufs, req->n_tensors, req->n_ops)) : 0;

    for (uint32_t i = 0; i < b->n_bufs; ++i) {
        const tsl_npu_mapping* m = find_mapping(d, b->bufs[i].fd);
        if (!m) return TSL_NPU_ERR_NO_MAPPING;
        if (b->bufs[i].size > m->size) return TSL_NPU_ERR_BAD_DESC;
        b->bases[i] = m->base;
    }
    for (uint32_t i = 0; i < b->n_tensors; ++i) {
        const int32_t status = check_tensor(&b->tensors[i], b->bufs, b->n_bufs);
        if (status != TSL_NPU_OK) return status;
    }
    for (uint32_t i = 0; i < b->n_ops; ++i) {
        *err_op = i;
        const tsl_npu_op_desc* op = &b->ops[i];
        const tsl_npu_op_kind* kind = tsl_npu_op_lookup(op->opcode);
        if (!kind) return TSL_NPU_ERR_UNKNOWN_OP;
        int32_t status = check_slots(op->src, TSL_NPU_MAX_SRC, kind->n_src, b->n_tensors);
        if (status == TSL_NPU_OK) status = check_slots(op->dst, TSL_NPU_MAX_DST, kind->n_dst, b->n_tensors);
        if (status != TSL_NPU_OK) return status;
        tsl_npu_op_ctx c;
        tsl_npu_batch_resolve(b, d, i, &c);
        /* a tile's bytes are not the tensor's: only ops written for tiles take them */
        status = !kind->reads_tiles && tsl_npu_any_repacked(&c) ? TSL_NPU_ERR_BAD_TYPE : kind->check(&c);
        if (status != TSL_NPU_OK) return status;
        const tsl_npu_kparams_header h = tsl_npu_op_header(op);
        if (h.flags != 0) return TSL_NPU_ERR_BAD_DESC;
        if (h.scratch_bytes > d->vtcm.size) return TSL_NPU_ERR_NO_VTCM;
    }
    *err_op = TSL_NPU_BATCH_REFUSED;
    return TSL_NPU_OK;
}

static void resolve_view(const tsl_npu_batch* b, uint16_t index, tsl_npu_view* v) {
    if (index == TSL_NPU_NONE) {
        __builtin_memset(v, 0, sizeof *v);
        return;
    }
    const tsl_npu_tensor_desc* t = &b->tensors[index];
    v->data = b->bases[t->buf] + (uintptr_t)t->offset; /* offset <= the mapping's size: fits */
    v->type = t->type;
    v->flags = t->flags;
    v->size = t->size;
    for (int i = 0; i < 4; ++i) {
        v->ne[i] = t->ne[i];
        v->nb[i] = t->nb[i];
    }
}

void tsl_npu_batch_resolve(const tsl_npu_batch* b, const tsl_npu_device* d, uint32_t i, tsl_npu_op_ctx* c) {
    const tsl_npu_op_desc* op = &b->ops[i];
    c->platform = &d->platform;
    c->kernels = &d->kernels;
    c->op = op;
    c->vtcm = 0;
    c->bytes = 0;
    c->reshape_ns = 0;
    c->heartbeat = 0; /* the executor sets it, cancel and trace for run */
    c->cancel = 0;
    c->trace = 0;
    for (int s = 0; s < TSL_NPU_MAX_SRC; ++s) resolve_view(b, op->src[s], &c->src[s]);
    for (int s = 0; s < TSL_NPU_MAX_DST; ++s) resolve_view(b, op->dst[s], &c->dst[s]);
}

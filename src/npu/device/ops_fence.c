/* FENCE: stores the u64 params[0] (low 32 bits) | params[1] (high) into slot params[2] of dst[0], a
 * tensor over a fence buffer of TSL_NPU_FENCE_SLOT_BYTES-byte slots. The store is atomic with
 * release order, so a host that sees the value also sees everything the batch wrote before. */
#include "npu/device/ops.h"

/* Byte offset of the slot's value inside dst[0], or -1 when the slot is outside it or misaligned. */
static int64_t slot_offset(const tsl_npu_op_ctx* c) {
    const uint64_t slot = (uint32_t)c->op->params[2];
    const uint64_t offset = slot * TSL_NPU_FENCE_SLOT_BYTES;
    const tsl_npu_view* t = &c->dst[0];
    if (t->size < sizeof(uint64_t) || offset > t->size - sizeof(uint64_t)) return -1;
    if (((uintptr_t)t->data + offset) % sizeof(uint64_t) != 0) return -1;
    return (int64_t)offset;
}

int32_t tsl_npu_fence_check(const tsl_npu_op_ctx* c) {
    return slot_offset(c) < 0 ? TSL_NPU_ERR_BAD_DESC : TSL_NPU_OK;
}

int32_t tsl_npu_fence_run(tsl_npu_op_ctx* c) {
    const int64_t offset = slot_offset(c);
    if (offset < 0) return TSL_NPU_ERR_BAD_DESC;
    const uint64_t value = (uint64_t)(uint32_t)c->op->params[0] | (uint64_t)(uint32_t)c->op->params[1] << 32;
    __atomic_store_n((uint64_t*)(c->dst[0].data + offset), value, __ATOMIC_RELEASE);
    c->bytes = sizeof(uint64_t);
    return TSL_NPU_OK;
}

/* Fences, 128-byte slots of a fence buffer holding a u64 value each (proto.h):
 *   FENCE stores params[0] (low 32 bits) | params[1] (high) into slot params[2] of dst[0], atomically
 *   with release order, so a host or device that sees the value also sees everything the batch wrote
 *   before it;
 *   FENCE_WAIT returns once slot params[2] of src[0] holds a value >= that u64 (acquire order), or
 *   TSL_NPU_ERR_CANCELLED once the host cancels the batch. */
#include "npu/device/ops.h"

/* Byte offset of slot params[2] inside `t`, or -1 when the slot is outside it or misaligned. */
static int64_t slot_offset(const tsl_npu_op_ctx* c, const tsl_npu_view* t) {
    const uint64_t slot = (uint32_t)c->op->params[2];
    const uint64_t offset = slot * TSL_NPU_FENCE_SLOT_BYTES;
    if (!t->data || t->size < sizeof(uint64_t) || offset > t->size - sizeof(uint64_t)) return -1;
    if (((uintptr_t)t->data + offset) % sizeof(uint64_t) != 0) return -1;
    return (int64_t)offset;
}

static uint64_t fence_value(const tsl_npu_op_ctx* c) {
    return (uint64_t)(uint32_t)c->op->params[0] | (uint64_t)(uint32_t)c->op->params[1] << 32;
}

int32_t tsl_npu_fence_check(const tsl_npu_op_ctx* c) {
    return slot_offset(c, &c->dst[0]) < 0 ? TSL_NPU_ERR_BAD_DESC : TSL_NPU_OK;
}

int32_t tsl_npu_fence_run(tsl_npu_op_ctx* c) {
    const int64_t offset = slot_offset(c, &c->dst[0]);
    if (offset < 0) return TSL_NPU_ERR_BAD_DESC;
    __atomic_store_n((uint64_t*)(c->dst[0].data + offset), fence_value(c), __ATOMIC_RELEASE);
    c->bytes = sizeof(uint64_t);
    return TSL_NPU_OK;
}

int32_t tsl_npu_fence_wait_check(const tsl_npu_op_ctx* c) {
    if (!(c->src[0].flags & TSL_NPU_TENSOR_FENCE)) return TSL_NPU_ERR_BAD_DESC;
    return slot_offset(c, &c->src[0]) < 0 ? TSL_NPU_ERR_BAD_DESC : TSL_NPU_OK;
}

/* Looks in a tight loop for the first TSL_NPU_FENCE_SPIN_NS (a peer's fence is often close), then
 * yields the processor between looks until TSL_NPU_FENCE_YIELD_NS (the peer may need this core),
 * then naps about a millisecond between looks. */
#define TSL_NPU_FENCE_SPIN_NS 20000u
#define TSL_NPU_FENCE_YIELD_NS 5000000u

int32_t tsl_npu_fence_wait_run(tsl_npu_op_ctx* c) {
    const int64_t offset = slot_offset(c, &c->src[0]);
    if (offset < 0) return TSL_NPU_ERR_BAD_DESC;
    const volatile uint64_t* slot = (const volatile uint64_t*)(c->src[0].data + offset);
    const uint64_t want = fence_value(c);
    const tsl_npu_platform* p = c->platform;
    const uint64_t t0 = p->now_ns(p->ctx);
    c->bytes = sizeof(uint64_t);
    for (;;) {
        for (int i = 0; i < 64; ++i)
            if (__atomic_load_n(slot, __ATOMIC_ACQUIRE) >= want) return TSL_NPU_OK;
        if (c->cancel && __atomic_load_n(c->cancel, __ATOMIC_ACQUIRE) != 0) return TSL_NPU_ERR_CANCELLED;
        const uint64_t waited = p->now_ns(p->ctx) - t0;
        if (waited < TSL_NPU_FENCE_SPIN_NS) continue;
        if (waited < TSL_NPU_FENCE_YIELD_NS && p->yield) p->yield(p->ctx);
        else if (p->idle) p->idle(p->ctx);
    }
}

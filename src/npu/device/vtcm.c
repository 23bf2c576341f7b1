/* The scratchpad allocator (vtcm.h). Arithmetic in u64 that cannot overflow: a limit comes from a
 * descriptor the host wrote. */
#include "npu/device/vtcm.h"

void tsl_npu_vtcm_init(tsl_npu_vtcm* v, void* base, uint64_t bytes) {
    v->base = 0;
    v->size = 0;
    v->limit = 0;
    v->used = 0;
    if (!base) return;
    const uintptr_t addr = (uintptr_t)base;
    const uint64_t skip = (uint64_t)((TSL_NPU_VTCM_ALIGN - addr % TSL_NPU_VTCM_ALIGN) % TSL_NPU_VTCM_ALIGN);
    if (bytes <= skip) return;
    v->base = (uint8_t*)base + skip;
    v->size = bytes - skip;
}

void tsl_npu_vtcm_reset(tsl_npu_vtcm* v, uint64_t limit) {
    v->limit = limit < v->size ? limit : v->size;
    v->used = 0;
}

void* tsl_npu_vtcm_alloc(tsl_npu_vtcm* v, uint64_t bytes, uint64_t align) {
    if (align < TSL_NPU_VTCM_ALIGN) align = TSL_NPU_VTCM_ALIGN;
    if ((align & (align - 1)) != 0 || !v->base) return 0;
    /* the block is TSL_NPU_VTCM_ALIGN-aligned; a larger alignment depends on its address */
    const uint64_t at = (uint64_t)(uintptr_t)v->base + v->used;
    const uint64_t pad = (align - at % align) % align;
    if (pad > v->limit - v->used || bytes > v->limit - v->used - pad) return 0;
    uint8_t* p = v->base + v->used + pad;
    v->used += pad + bytes;
    return p;
}

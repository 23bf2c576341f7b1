/* The Hexagon platform (platform_hexagon.h) on the system calls of sys.h. */
#include "npu/hexagon/platform_hexagon.h"

#include "npu/hexagon/sys.h"

typedef struct hexagon_ctx {
    void* scratch;
    uint64_t scratch_bytes;
} hexagon_ctx;

static hexagon_ctx g_ctx;

static void* hx_map(void* ctx, int32_t fd, uint64_t size) {
    (void)ctx;
    return tsl_map_shared(fd, size);
}

static void hx_unmap(void* ctx, void* base, uint64_t size) {
    (void)ctx;
    tsl_unmap(base, size);
}

static uint64_t hx_now_ns(void* ctx) {
    (void)ctx;
    return tsl_monotonic_ns();
}

static uint64_t hx_cycles(void* ctx) {
    (void)ctx;
    return 0;
}

static void hx_parallel(void* ctx, tsl_npu_task_fn fn, void* arg) {
    (void)ctx;
    fn(arg, 0, 1);
}

static void hx_idle(void* ctx) {
    (void)ctx;
    tsl_sleep_ns(1000000u);
}

static void* hx_scratch(void* ctx, uint64_t* bytes) {
    const hexagon_ctx* c = (const hexagon_ctx*)ctx;
    *bytes = c->scratch_bytes;
    return c->scratch;
}

/* The DSP's DMA lands the bytes in VTCM: a copy, done when it returns. */
static const void* hx_dma_start(void* ctx, void* dst, const void* src, uint64_t bytes, uint32_t flags) {
    (void)ctx;
    (void)flags;
    __builtin_memcpy(dst, src, (size_t)bytes);
    return dst;
}

static void hx_dma_wait(void* ctx) { (void)ctx; }

int32_t tsl_npu_hexagon_platform_create(uint64_t vtcm_bytes, tsl_npu_platform* out) {
    __builtin_memset(out, 0, sizeof *out);
    g_ctx.scratch = 0;
    g_ctx.scratch_bytes = 0;
    if (vtcm_bytes) {
        g_ctx.scratch = tsl_map_anonymous(vtcm_bytes);
        if (!g_ctx.scratch) return TSL_NPU_ERR_NO_MEMORY;
        g_ctx.scratch_bytes = vtcm_bytes;
    }
    out->ctx = &g_ctx;
    out->map = hx_map;
    out->unmap = hx_unmap;
    out->now_ns = hx_now_ns;
    out->cycles = hx_cycles;
    out->parallel = hx_parallel;
    out->idle = hx_idle;
    out->scratch = hx_scratch;
    out->dma_start = hx_dma_start;
    out->dma_wait = hx_dma_wait;
    out->n_threads = 1;
    out->isa = TSL_NPU_ISA_HVX;
    return TSL_NPU_OK;
}

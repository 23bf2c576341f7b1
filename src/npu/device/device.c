/* The device runtime's entry points (device.h): mappings, hardware report and the batch executor.
 * Freestanding C11: no libc, no OS headers; the platform supplies mapping, clock and threads. */
#include "npu/device/device.h"

#include "npu/device/batch.h"
#include "npu/device/faults.h"

/* Appends s to out[*n] within cap - 1 bytes. */
static void append(char* out, uint32_t* n, uint32_t cap, const char* s) {
    while (*s && *n + 1 < cap) out[(*n)++] = *s++;
    out[*n] = 0;
}

int32_t tsl_npu_device_init(tsl_npu_device* d, const tsl_npu_platform* platform) {
    __builtin_memset(d, 0, sizeof *d);
    d->platform = *platform;
    uint64_t scratch_bytes = 0;
    void* scratch = platform->scratch ? platform->scratch(platform->ctx, &scratch_bytes) : 0;
    tsl_npu_vtcm_init(&d->vtcm, scratch, scratch ? scratch_bytes : 0);
    tsl_npu_kernels_select(platform->isa, &d->kernels);
    for (uint32_t i = 0; i < TSL_NPU_DEVICE_MAX_MAPPINGS; ++i) {
        d->mappings[i].host_fd = -1;
        d->mappings[i].local_fd = -1;
    }
    return TSL_NPU_OK;
}

void tsl_npu_device_use_isa(tsl_npu_device* d, uint32_t isa) {
    d->platform.isa = isa;
    tsl_npu_kernels_select(isa, &d->kernels);
}

void tsl_npu_device_hwinfo(const tsl_npu_device* d, tsl_npu_hwinfo* out) {
    __builtin_memset(out, 0, sizeof *out);
    out->proto_version = TSL_NPU_PROTO_VERSION;
    out->n_threads = d->platform.n_threads;
    out->vtcm_bytes = d->vtcm.size;
    out->matrix_unit = d->kernels.matrix_tile_cols ? 1u : 0u;
    out->max_bufs = TSL_NPU_DEVICE_MAX_MAPPINGS;
    uint32_t n = 0; /* "tessel NPU (<vector>[+<matrix>] kernels)": which kernels its ops run */
    append(out->name, &n, sizeof out->name, "tessel NPU (");
    append(out->name, &n, sizeof out->name, d->kernels.vector);
    if (d->kernels.matrix[0]) append(out->name, &n, sizeof out->name, "+");
    append(out->name, &n, sizeof out->name, d->kernels.matrix);
    append(out->name, &n, sizeof out->name, " kernels)");
}

static tsl_npu_mapping* find_mapping(tsl_npu_device* d, int32_t host_fd) {
    for (uint32_t i = 0; i < TSL_NPU_DEVICE_MAX_MAPPINGS; ++i)
        if (d->mappings[i].host_fd == host_fd && d->mappings[i].base) return &d->mappings[i];
    return 0;
}

int32_t tsl_npu_device_map(tsl_npu_device* d, int32_t host_fd, int32_t local_fd, uint64_t size) {
    if (host_fd < 0 || size == 0) return TSL_NPU_ERR_BAD_DESC;
    const tsl_npu_mapping* known = find_mapping(d, host_fd);
    if (known) return known->size == size ? TSL_NPU_OK : TSL_NPU_ERR_BAD_DESC;
    tsl_npu_mapping* slot = 0;
    for (uint32_t i = 0; !slot && i < TSL_NPU_DEVICE_MAX_MAPPINGS; ++i)
        if (!d->mappings[i].base) slot = &d->mappings[i];
    if (!slot) return TSL_NPU_ERR_NO_MEMORY;
    void* base = d->platform.map(d->platform.ctx, local_fd, size);
    if (!base) return TSL_NPU_ERR_MAP_FAILED;
    slot->host_fd = host_fd;
    slot->local_fd = local_fd;
    slot->size = size;
    slot->base = (uint8_t*)base;
    ++d->n_mappings;
    return TSL_NPU_OK;
}

static void drop_mapping(tsl_npu_device* d, tsl_npu_mapping* m) {
    d->platform.unmap(d->platform.ctx, m->base, m->size);
    m->host_fd = -1;
    m->local_fd = -1;
    m->size = 0;
    m->base = 0;
    --d->n_mappings;
}

int32_t tsl_npu_device_unmap(tsl_npu_device* d, int32_t host_fd) {
    tsl_npu_mapping* m = find_mapping(d, host_fd);
    if (!m) return TSL_NPU_ERR_NO_MAPPING;
    drop_mapping(d, m);
    return TSL_NPU_OK;
}

uint8_t* tsl_npu_device_mapping(const tsl_npu_device* d, int32_t host_fd, uint64_t* size) {
    for (uint32_t i = 0; i < TSL_NPU_DEVICE_MAX_MAPPINGS; ++i) {
        const tsl_npu_mapping* m = &d->mappings[i];
        if (m->host_fd == host_fd && m->base) {
            if (size) *size = m->size;
            return m->base;
        }
    }
    return 0;
}

void tsl_npu_device_release(tsl_npu_device* d) {
    for (uint32_t i = 0; i < TSL_NPU_DEVICE_MAX_MAPPINGS; ++i)
        if (d->mappings[i].base) drop_mapping(d, &d->mappings[i]);
}

static int cancelled(volatile const uint32_t* cancel) { return cancel && __atomic_load_n(cancel, __ATOMIC_ACQUIRE) != 0; }

static void beat(volatile uint64_t* heartbeat) {
    /* an add, not a store: the workers of a running op beat the same counter (tsl_npu_op_progress) */
    if (heartbeat) __atomic_fetch_add(heartbeat, 1u, __ATOMIC_RELEASE);
}

/* The HANG fault: no progress and no answer until the host cancels (at once without a cancel flag,
 * which nobody could ever set). */
static int32_t hang(const tsl_npu_device* d, volatile const uint32_t* cancel) {
    while (cancel && !cancelled(cancel)) d->platform.idle(d->platform.ctx);
    return TSL_NPU_ERR_CANCELLED;
}

/* The STUCK fault: bumped by tsl_npu_device_release_stuck; a stuck op leaves once it changes. */
static uint32_t g_stuck_releases;

void tsl_npu_device_release_stuck(void) { __atomic_fetch_add(&g_stuck_releases, 1u, __ATOMIC_ACQ_REL); }

typedef struct stuck_job {
    const tsl_npu_platform* platform;
    uint32_t release; /* g_stuck_releases when the op started */
} stuck_job;

/* Each worker of a stuck op: a loop that never looks at the cancel flag and never beats. It naps
 * (the platform's idle) rather than spins, so a stuck test device does not take the cores. */
static void stuck_work(void* arg, uint32_t worker, uint32_t n_workers) {
    const stuck_job* j = (const stuck_job*)arg;
    (void)worker;
    (void)n_workers;
    while (__atomic_load_n(&g_stuck_releases, __ATOMIC_ACQUIRE) == j->release) j->platform->idle(j->platform->ctx);
}

/* Runs in place of an op's kernel, on every worker, as a kernel that loops forever would. */
static int32_t stuck_op(const tsl_npu_platform* p) {
    stuck_job j = {p, __atomic_load_n(&g_stuck_releases, __ATOMIC_ACQUIRE)};
    if (p->parallel && p->n_threads > 1)
        p->parallel(p->ctx, stuck_work, &j);
    else
        stuck_work(&j, 0, 1);
    return TSL_NPU_ERR_INJECTED;
}

#define N_EVENT_COUNTERS (TSL_NPU_N_COUNTERS - TSL_NPU_COUNTER_TASK_CLOCK)


/* Runs the ops of a checked batch in order; stops at the first failure or at a cancel. */
static int32_t run_ops(tsl_npu_device* d, const tsl_npu_batch* b, uint32_t flags, tsl_npu_batch_rsp* rsp,
                       volatile uint64_t* heartbeat, volatile const uint32_t* cancel) {
    const tsl_npu_platform* p = &d->platform;
    __builtin_memset(b->profile, 0, (uint64_t)b->n_ops * sizeof(tsl_npu_profile));
    const uint32_t n_threads = p->n_threads ? p->n_threads : 1u;
    if (b->spans) __builtin_memset(b->spans, 0, tsl_npu_trace_bytes(b->n_ops, n_threads));
    /* with TSL_NPU_BATCH_COUNTERS, the platform's event totals before and after each op */
    const int counting = (flags & TSL_NPU_BATCH_COUNTERS) && p->counters_read;
    uint64_t ev0[N_EVENT_COUNTERS] = {0}, ev1[N_EVENT_COUNTERS] = {0};
    if (counting) p->counters_read(p->ctx, ev0, N_EVENT_COUNTERS);
    for (uint32_t i = 0; i < b->n_ops; ++i) {
        if (cancelled(cancel)) {
            rsp->err_op = i;
            return TSL_NPU_ERR_CANCELLED;
        }
        tsl_npu_profile* prof = &b->profile[i];
        prof->start_ns = p->now_ns(p->ctx);
        const uint64_t cycles0 = p->cycles(p->ctx);
        tsl_npu_op_ctx c;
        tsl_npu_batch_resolve(b, d, i, &c);
        tsl_npu_vtcm_reset(&d->vtcm, tsl_npu_op_scratch(&b->ops[i]));
        c.vtcm = &d->vtcm;
        c.heartbeat = heartbeat;
        c.cancel = cancel;
        tsl_npu_op_trace trace = {b->spans ? b->spans + (uint64_t)i * TSL_NPU_TRACE_PHASES * n_threads : 0, n_threads, 0};
        c.trace = b->spans ? &trace : 0;
        const int32_t status = d->fault == TSL_NPU_FAULT_STUCK && i == 0 ? stuck_op(p)
                                                                          : tsl_npu_op_lookup(b->ops[i].opcode)->run(&c);
        prof->cycles = p->cycles(p->ctx) - cycles0;
        prof->stop_ns = p->now_ns(p->ctx);
        prof->counters[0] = c.bytes;
        prof->counters[1] = c.reshape_ns;
        if (counting) {
            p->counters_read(p->ctx, ev1, N_EVENT_COUNTERS);
            for (uint32_t k = 0; k < N_EVENT_COUNTERS; ++k) {
                prof->counters[TSL_NPU_COUNTER_TASK_CLOCK + k] = ev1[k] - ev0[k];
                ev0[k] = ev1[k];
            }
        }
        if (status != TSL_NPU_OK) {
            rsp->err_op = i;
            return status;
        }
        rsp->n_done = i + 1;
        beat(heartbeat);
    }
    return TSL_NPU_OK;
}

int32_t tsl_npu_device_run(tsl_npu_device* d, uint8_t* block, const tsl_npu_batch_req* req, tsl_npu_batch_rsp* rsp,
                           volatile uint64_t* heartbeat, volatile const uint32_t* cancel) {
    __builtin_memset(rsp, 0, sizeof *rsp);
    rsp->seq = d->fault == TSL_NPU_FAULT_SEQ ? req->seq + 1000u : req->seq;
    rsp->n_bufs = req->n_bufs;
    rsp->n_tensors = req->n_tensors;
    rsp->n_ops = req->n_ops;
    rsp->err_op = TSL_NPU_BATCH_REFUSED;
    rsp->start_ns = d->platform.now_ns(d->platform.ctx);
    int32_t status;
    if (d->fault == TSL_NPU_FAULT_STATUS) {
        status = TSL_NPU_ERR_INJECTED;
    } else if (d->fault == TSL_NPU_FAULT_HANG) {
        rsp->err_op = 0; /* cancelled before its first op */
        status = hang(d, cancel);
    } else {
        if (d->fault == TSL_NPU_FAULT_SLOW)
            for (int nap = 0; nap < 20; ++nap) d->platform.idle(d->platform.ctx);
        tsl_npu_batch b;
        status = tsl_npu_batch_check(d, block, req, &b, &rsp->err_op);
        if (status == TSL_NPU_OK) status = run_ops(d, &b, req->flags, rsp, heartbeat, cancel);
    }
    rsp->status = (uint32_t)status;
    rsp->stop_ns = d->platform.now_ns(d->platform.ctx);
    return status;
}

/* perf_event_open counters of the posix platform (platform_counters_posix.h). */
#define _GNU_SOURCE
#include "npu/posix/platform_counters_posix.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "npu/proto/proto.h"

#define N_SOFTWARE 3u
#define N_HARDWARE (TSL_NPU_N_COUNTERS - TSL_NPU_COUNTER_PMU)
#define N_EVENTS (N_SOFTWARE + N_HARDWARE)

typedef struct event_kind {
    const char* name;
    uint32_t type;
    uint64_t config;
} event_kind;

static const event_kind k_software[N_SOFTWARE] = {
    {"task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
    {"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
    {"context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
};

/* The names TESSEL_NPU_PMU takes (the host's config checks the variable: docs/config.md). */
static const event_kind k_hardware[] = {
    {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
    {"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
    {"branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
};
#define DEFAULT_PMU "cycles,instructions,cache-misses"

struct posix_counters {
    uint32_t n_threads;
    uint32_t n_kinds;
    event_kind kinds[N_EVENTS]; /* slot order: software, then the PMU list */
    int32_t* tids;
    int* fds; /* n_threads x N_EVENTS, -1 when closed */
};

static _Atomic int g_noted; /* the note about events that cannot be counted: once per process */

static int open_event(const event_kind* k, int32_t tid, int* err) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = k->type;
    a.config = k->config;
    a.exclude_hv = 1;
    long fd = syscall(SYS_perf_event_open, &a, (pid_t)tid, -1, -1, 0);
    if (fd < 0 && (errno == EACCES || errno == EPERM)) { /* perf_event_paranoid: the user side only */
        a.exclude_kernel = 1;
        fd = syscall(SYS_perf_event_open, &a, (pid_t)tid, -1, -1, 0);
    }
    *err = fd < 0 ? errno : 0;
    return (int)fd;
}

static void open_thread(posix_counters* c, uint32_t i) {
    char failed[128] = "";
    int first_err = 0;
    for (uint32_t k = 0; k < c->n_kinds; ++k) {
        int* fd = &c->fds[i * N_EVENTS + k];
        if (*fd >= 0) close(*fd);
        int err = 0;
        *fd = open_event(&c->kinds[k], c->tids[i], &err);
        if (*fd >= 0) continue;
        if (!first_err) first_err = err;
        if (strlen(failed) + strlen(c->kinds[k].name) + 3 < sizeof failed) {
            if (*failed) strcat(failed, ", ");
            strcat(failed, c->kinds[k].name);
        }
    }
    if (*failed && atomic_exchange(&g_noted, 1) == 0)
        fprintf(stderr, "tessel: note: the NPU device cannot count %s here (perf_event_open: %s); those profile "
                        "counters read 0\n",
                failed, strerror(first_err));
}

/* The PMU list of TESSEL_NPU_PMU into kinds[N_SOFTWARE..]; unknown names are skipped (the host
 * refuses them before a device starts). */
static void pick_hardware(posix_counters* c) {
    const char* env = getenv("TESSEL_NPU_PMU");
    const char* list = env && *env ? env : DEFAULT_PMU;
    c->n_kinds = N_SOFTWARE;
    if (strcmp(list, "off") == 0) return;
    const char* s = list;
    while (*s && c->n_kinds < N_EVENTS) {
        const char* comma = strchr(s, ',');
        const size_t len = comma ? (size_t)(comma - s) : strlen(s);
        for (size_t h = 0; h < sizeof k_hardware / sizeof k_hardware[0]; ++h)
            if (strlen(k_hardware[h].name) == len && strncmp(k_hardware[h].name, s, len) == 0)
                c->kinds[c->n_kinds++] = k_hardware[h];
        s += len + (comma ? 1 : 0);
    }
}

posix_counters* tsl_npu_posix_counters_open(const int32_t* tids, uint32_t n) {
    posix_counters* c = (posix_counters*)calloc(1, sizeof *c);
    if (!c) return NULL;
    c->n_threads = n;
    c->tids = (int32_t*)calloc(n ? n : 1, sizeof(int32_t));
    c->fds = (int*)malloc((size_t)(n ? n : 1) * N_EVENTS * sizeof(int));
    if (!c->tids || !c->fds) {
        tsl_npu_posix_counters_close(c);
        return NULL;
    }
    for (uint32_t i = 0; i < n * N_EVENTS; ++i) c->fds[i] = -1;
    for (uint32_t k = 0; k < N_SOFTWARE; ++k) c->kinds[k] = k_software[k];
    pick_hardware(c);
    for (uint32_t i = 0; i < n; ++i) {
        c->tids[i] = tids[i];
        open_thread(c, i);
    }
    return c;
}

void tsl_npu_posix_counters_retarget(posix_counters* c, uint32_t i, int32_t tid) {
    if (i >= c->n_threads) return;
    c->tids[i] = tid;
    open_thread(c, i);
}

int32_t tsl_npu_posix_counters_tid(const posix_counters* c, uint32_t i) { return i < c->n_threads ? c->tids[i] : 0; }

void tsl_npu_posix_counters_read(posix_counters* c, uint64_t* out, uint32_t n) {
    for (uint32_t k = 0; k < n; ++k) out[k] = 0;
    for (uint32_t i = 0; i < c->n_threads; ++i)
        for (uint32_t k = 0; k < c->n_kinds && k < n; ++k) {
            const int fd = c->fds[i * N_EVENTS + k];
            uint64_t v = 0;
            if (fd >= 0 && read(fd, &v, sizeof v) == (ssize_t)sizeof v) out[k] += v;
        }
}

void tsl_npu_posix_counters_close(posix_counters* c) {
    if (!c) return;
    if (c->fds)
        for (uint32_t i = 0; i < c->n_threads * N_EVENTS; ++i)
            if (c->fds[i] >= 0) close(c->fds[i]);
    free(c->fds);
    free(c->tids);
    free(c);
}

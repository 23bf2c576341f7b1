/* tsl_npu_platform on Linux (platform_posix.h). */
#define _GNU_SOURCE
#include "npu/device/platform_posix.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <x86intrin.h>
#endif

/* The worker pool: a call publishes fn/arg under a new generation number; every worker runs its
 * share once per generation and the last one to finish wakes the caller. Workers waiting for the
 * next generation, and the caller waiting for the last worker, spin (with the CPU's pause hint)
 * for up to POOL_SPIN_NS before they sleep on the condition variables: the ops of a batch follow
 * each other within microseconds, and a futex wake-up costs tens of them (a decode step of the
 * default model makes ~250 parallel calls: 5.7-7.4 ms per step without spinning, 3.5-5.1 ms with,
 * quiet machine); between batches the workers sleep. The CPU backend's pool spins as long. */
#define POOL_SPIN_NS 100000u

typedef struct posix_pool {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_cond_t done;
    _Atomic uint64_t generation;
    _Atomic uint32_t pending;
    _Atomic int stop;
    tsl_npu_task_fn fn; /* fn and arg: written before the generation's release */
    void* arg;
    uint32_t n_threads;
    uint32_t n_started;
    pthread_t* threads;
    void* scratch; /* the VTCM stand-in: scratch_bytes, 64-byte aligned (NULL when 0 bytes) */
    uint64_t scratch_bytes;
    uint64_t prefetch_head; /* bytes of a block the DMA stand-in prefetches (see posix_dma_start) */
} posix_pool;

typedef struct posix_worker_start {
    posix_pool* pool;
    uint32_t index;
} posix_worker_start;

static void* posix_map(void* ctx, int32_t fd, uint64_t size) {
    (void)ctx;
    if (size == 0 || size > (uint64_t)SIZE_MAX) return NULL;
    void* p = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void posix_unmap(void* ctx, void* base, uint64_t size) {
    (void)ctx;
    munmap(base, (size_t)size);
}

static uint64_t posix_now_ns(void* ctx) {
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t posix_cycles(void* ctx) {
    (void)ctx;
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#elif defined(__aarch64__)
    uint64_t v;
    __asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
    return v;
#else
    return 0;
#endif
}

static void posix_idle(void* ctx) {
    (void)ctx;
    const struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
}

static void* posix_scratch(void* ctx, uint64_t* bytes) {
    const posix_pool* pool = (const posix_pool*)ctx;
    *bytes = pool->scratch_bytes;
    return pool->scratch;
}

/* The DMA stand-in. Host memory is as near as the scratchpad, so by default the kernel reads in
 * place and the transfer is a prefetch of the block's first prefetch_head bytes (issued now,
 * overlapping the worker's current compute); the kernels stream the rest themselves a few tiles
 * ahead of use (ops_matmul_tile.inc). Prefetching a whole block at once filled the core's miss
 * buffers and stalled the worker on the prefetches (the loop took more samples than the kernel).
 * The head is PREFETCH_HEAD_BYTES on CPUs with AVX-512 (measured on such an Intel host: a decode
 * step faster with it) and 0 elsewhere: on an AMD Zen 3 host (AVX2) the prefetches cost more than
 * they saved (tg128 of the default model 116.6 t/s with a 4 KiB head, 121.1 with 1 KiB, 129.5
 * without; medians of 6 interleaved runs, the hardware prefetcher follows the tiles anyway).
 * With TSL_NPU_DMA_COPY it copies at once (a memcpy: there is no engine to overlap with), which is
 * what a copying platform costs here. */
#define PREFETCH_HEAD_BYTES 4096u

static const void* posix_dma_start(void* ctx, void* dst, const void* src, uint64_t bytes, uint32_t flags) {
    if (flags & TSL_NPU_DMA_COPY) {
        memcpy(dst, src, (size_t)bytes);
        return dst;
    }
    const uint64_t limit = ((const posix_pool*)ctx)->prefetch_head;
    const uint64_t head = bytes < limit ? bytes : limit;
    for (uint64_t i = 0; i < head; i += 64) __builtin_prefetch((const char*)src + i, 0, 3);
    return src;
}

static void posix_dma_wait(void* ctx) { (void)ctx; }

#if defined(__x86_64__) || defined(__i386__)
/* AMX tiles and INT8 usable by this process: CPUID.(7,0):EDX bits 24 (AMX-TILE) and 25
 * (AMX-INT8), XCR0 bits 17 and 18 (tile config and tile data state enabled by the OS), and
 * Linux's per-process permission for tile data (arch_prctl(ARCH_REQ_XCOMP_PERM = 0x1023,
 * XFEATURE_XTILEDATA = 18), kernel 5.16+) granted. The permission holds for every thread. */
static int posix_amx_int8(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !((d >> 24) & 1u) || !((d >> 25) & 1u)) return 0;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !((c >> 27) & 1u)) return 0; /* OSXSAVE: xgetbv is usable */
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & (3u << 17)) != (3u << 17)) return 0;
#if defined(__x86_64__) && defined(SYS_arch_prctl)
    return syscall(SYS_arch_prctl, 0x1023L, 18L) == 0;
#else
    return 0;
#endif
}
#endif

/* Vector and matrix extensions of this CPU (and enabled by its OS) the device kernels may use. */
static uint32_t posix_isa(void) {
    uint32_t isa = 0;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vnni"))
        isa |= TSL_NPU_ISA_AVX512VNNI;
    if ((isa & TSL_NPU_ISA_AVX512VNNI) && __builtin_cpu_supports("avx512vbmi")) isa |= TSL_NPU_ISA_AVX512VBMI;
    if ((isa & TSL_NPU_ISA_AVX512VNNI) && posix_amx_int8()) isa |= TSL_NPU_ISA_AMX_INT8;
    /* libgcc / compiler-rt report AVX-512 features only when XCR0 shows the OS saves zmm state */
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
        isa |= TSL_NPU_ISA_AVX512;
    /* F16C from CPUID.1:ECX bit 29 (clang 14's __builtin_cpu_supports has no "f16c"); AVX2 implies
     * the OS saves the ymm state (libgcc / compiler-rt check XCR0 for it) */
    unsigned a1, b1, c1, d1;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __get_cpuid(1, &a1, &b1, &c1, &d1) &&
        ((c1 >> 29) & 1u))
        isa |= TSL_NPU_ISA_AVX2;
#endif
    return isa;
}

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

/* A worker's wait: true once the generation differs from seen or the pool stops, false after
 * POOL_SPIN_NS of spinning. */
static int spin_for_generation(posix_pool* pool, uint64_t seen) {
    uint64_t start = 0;
    for (uint32_t i = 1;; ++i) {
        if (atomic_load_explicit(&pool->generation, memory_order_acquire) != seen ||
            atomic_load_explicit(&pool->stop, memory_order_relaxed))
            return 1;
        cpu_relax();
        if (i % 64u == 0) {
            const uint64_t now = posix_now_ns(NULL);
            if (start == 0) start = now;
            else if (now - start > POOL_SPIN_NS) return 0;
        }
    }
}

/* The caller's wait: true once every worker finished, false after POOL_SPIN_NS of spinning. */
static int spin_for_workers(posix_pool* pool) {
    uint64_t start = 0;
    for (uint32_t i = 1;; ++i) {
        if (atomic_load_explicit(&pool->pending, memory_order_acquire) == 0) return 1;
        cpu_relax();
        if (i % 64u == 0) {
            const uint64_t now = posix_now_ns(NULL);
            if (start == 0) start = now;
            else if (now - start > POOL_SPIN_NS) return 0;
        }
    }
}

static void* posix_worker(void* arg) {
    posix_worker_start* start = (posix_worker_start*)arg;
    posix_pool* pool = start->pool;
    const uint32_t index = start->index;
    free(start);
    uint64_t seen = 0;
    for (;;) {
        if (!spin_for_generation(pool, seen)) {
            pthread_mutex_lock(&pool->lock);
            while (!atomic_load(&pool->stop) && atomic_load(&pool->generation) == seen)
                pthread_cond_wait(&pool->wake, &pool->lock);
            pthread_mutex_unlock(&pool->lock);
        }
        if (atomic_load(&pool->stop)) break;
        seen = atomic_load_explicit(&pool->generation, memory_order_acquire);
        pool->fn(pool->arg, index, pool->n_threads);
        if (atomic_fetch_sub_explicit(&pool->pending, 1u, memory_order_acq_rel) == 1u) {
            pthread_mutex_lock(&pool->lock);
            pthread_cond_signal(&pool->done);
            pthread_mutex_unlock(&pool->lock);
        }
    }
    return NULL;
}

static void posix_parallel(void* ctx, tsl_npu_task_fn fn, void* arg) {
    posix_pool* pool = (posix_pool*)ctx;
    if (pool->n_threads <= 1) {
        fn(arg, 0, 1);
        return;
    }
    pool->fn = fn;
    pool->arg = arg;
    atomic_store_explicit(&pool->pending, pool->n_threads - 1, memory_order_relaxed);
    pthread_mutex_lock(&pool->lock);
    atomic_fetch_add_explicit(&pool->generation, 1u, memory_order_release);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    fn(arg, 0, pool->n_threads);
    if (spin_for_workers(pool)) return;
    pthread_mutex_lock(&pool->lock);
    while (atomic_load(&pool->pending) != 0) pthread_cond_wait(&pool->done, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
}

static void pool_stop(posix_pool* pool) {
    pthread_mutex_lock(&pool->lock);
    atomic_store(&pool->stop, 1);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    for (uint32_t i = 0; i < pool->n_started; ++i) pthread_join(pool->threads[i], NULL);
    pthread_cond_destroy(&pool->done);
    pthread_cond_destroy(&pool->wake);
    pthread_mutex_destroy(&pool->lock);
    free(pool->threads);
    free(pool->scratch);
    free(pool);
}

int32_t tsl_npu_posix_platform_create(uint32_t n_threads, uint64_t vtcm_bytes, tsl_npu_platform* out) {
    memset(out, 0, sizeof *out);
    if (n_threads == 0) n_threads = 1;
    if (vtcm_bytes > (uint64_t)SIZE_MAX - 63u) return TSL_NPU_ERR_NO_MEMORY;
    posix_pool* pool = (posix_pool*)calloc(1, sizeof *pool);
    if (!pool) return TSL_NPU_ERR_NO_MEMORY;
    pool->n_threads = n_threads;
    pool->threads = (pthread_t*)calloc(n_threads, sizeof(pthread_t));
    /* aligned_alloc wants a multiple of the alignment; the device sees vtcm_bytes of it */
    pool->scratch = vtcm_bytes ? aligned_alloc(64, (size_t)((vtcm_bytes + 63u) & ~(uint64_t)63u)) : NULL;
    pool->scratch_bytes = pool->scratch ? vtcm_bytes : 0;
    if (!pool->threads || (vtcm_bytes && !pool->scratch)) {
        free(pool->scratch);
        free(pool->threads);
        free(pool);
        return TSL_NPU_ERR_NO_MEMORY;
    }
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pthread_cond_init(&pool->done, NULL);
    for (uint32_t i = 1; i < n_threads; ++i) {
        posix_worker_start* start = (posix_worker_start*)malloc(sizeof *start);
        if (start) {
            start->pool = pool;
            start->index = i;
        }
        if (!start || pthread_create(&pool->threads[pool->n_started], NULL, posix_worker, start) != 0) {
            free(start);
            pool_stop(pool);
            return TSL_NPU_ERR_NO_MEMORY;
        }
        ++pool->n_started;
    }
    out->ctx = pool;
    out->map = posix_map;
    out->unmap = posix_unmap;
    out->now_ns = posix_now_ns;
    out->cycles = posix_cycles;
    out->parallel = posix_parallel;
    out->idle = posix_idle;
    out->scratch = posix_scratch;
    out->dma_start = posix_dma_start;
    out->dma_wait = posix_dma_wait;
    out->n_threads = n_threads;
    out->isa = posix_isa();
    pool->prefetch_head = (out->isa & TSL_NPU_ISA_AVX512) ? PREFETCH_HEAD_BYTES : 0u;
    return TSL_NPU_OK;
}

void tsl_npu_posix_platform_destroy(tsl_npu_platform* p) {
    if (p->ctx) pool_stop((posix_pool*)p->ctx);
    memset(p, 0, sizeof *p);
}

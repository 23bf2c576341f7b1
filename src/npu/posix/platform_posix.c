/* tsl_npu_platform on Linux (platform_posix.h). */
#define _GNU_SOURCE
#include "npu/posix/platform_posix.h"
#include "npu/posix/platform_counters_posix.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

/* The worker pool. A parallel call is P = n_threads parts; part p runs fn(arg, p, P) on whichever
 * thread claims it (a part's per-index scratch is then used by one thread at a time). The caller
 * publishes fn/arg and a new generation in the claim word (generation in the high bits, the next
 * part in the low CLAIM_PART_BITS) and claims parts itself; workers claim with a CAS on that word,
 * so a worker that wakes late for an old call fails its CAS and joins the current one instead, and
 * reads fn/arg only once it holds a part (the call cannot end while a part is held). The call ends
 * when all P parts are complete (a countdown), not when every worker has come: nobody waits for a
 * thread that is not working on the call.
 * A thread descheduled while it holds a part still holds the call up for a scheduler slice (ms,
 * while a decode op takes us). Of the two cures, redoing a part another thread holds would need
 * ops whose parts are idempotent and a way to drop the late thread's writes; shrinking the team
 * needs nothing from the ops, so the pool does that: when the caller has waited for the last parts
 * longer than max(BENCH_MIN_NS, 4x its own longest part of the call), it benches the workers that
 * hold (or are claiming) them. A benched worker finishes its part, then claims nothing and sleeps
 * for its probation: PROBATION_MIN_NS, doubled with each late event up to PROBATION_MAX_NS, back
 * to the start once the worker has taken part for a whole probation period without being late.
 * The caller is never benched, so one thread always works, and P stays n_threads.
 * Waiting gives the core back. A worker spins (with the CPU's pause hint) for up to POOL_SPIN_NS
 * for the next call, then sleeps on a condition variable: the ops of a batch follow each other
 * within microseconds and a futex wake-up costs tens of them (a decode step of the default model
 * makes ~250 parallel calls: 5.7-7.4 ms per step without spinning, 3.5-5.1 ms with, quiet
 * machine). But a worker that shares its core (it was off the core for over PREEMPTED_NS while
 * spinning: SHARED_NS of no spinning follow) or was late within its probation sleeps at once:
 * spinning there only takes time from the other threads on that core, and ages the worker in the
 * scheduler's eyes, so it is preempted sooner inside its next part (measured on a 2-core host
 * loaded by other processes: decode with 2 device threads at 0.65-0.8x of 1 thread when workers
 * always spin, 0.87-1.06x when they never do; docs/npu.md has the table of this design). The
 * caller waits for the tail of parts that started with its own, so it spins only CALLER_SPIN_NS
 * before it sleeps. */
#define POOL_SPIN_NS 100000u
#define CALLER_SPIN_NS 20000u
#define PREEMPTED_NS 30000u /* a gap between a spin's clock reads (a few us apart) that no interrupt makes */
#define SHARED_NS 1000000000u
#define BENCH_MIN_NS 250000u
#define PROBATION_MIN_NS 2000000u
#define PROBATION_MAX_NS 1000000000u
#define CLAIM_PART_BITS 24u /* generations wrap after 2^40 calls: a stale CAS can never match */
#define CLAIM_PART_MASK ((1ull << CLAIM_PART_BITS) - 1u)
#define POOL_MAX_THREADS CLAIM_PART_MASK

/* A worker's place in the pool, one cache line each: what the caller sees of it, and how it
 * learns it was late (the worker keeps its probation itself, since it starts when the worker is
 * back from the part it was late with). */
typedef struct posix_slot {
    _Atomic uint64_t holding; /* the generation whose part the worker holds or is claiming; 0: none */
    _Atomic uint64_t late;    /* when a caller that waited too long for the worker's part benched it; 0: not */
    _Atomic int32_t tid;      /* the worker's Linux thread id (event counters), once it runs */
    char pad[64 - 2 * sizeof(uint64_t) - sizeof(int32_t)];
} posix_slot;

typedef struct posix_pool {
    _Atomic uint64_t claim; /* generation << CLAIM_PART_BITS | next part */
    _Atomic uint32_t remaining; /* parts of the current call not complete */
    _Atomic uint32_t sleepers;  /* workers asleep on wake (the caller skips the wake-up when 0) */
    _Atomic uint32_t caller_asleep;
    _Atomic int stop;
    _Atomic(const tsl_npu_posix_hook*) hook;
    _Atomic uint64_t benched; /* bench events so far */
    uint64_t generation;      /* the caller's: the current call */
    tsl_npu_task_fn fn;       /* fn and arg: written before the generation's release */
    void* arg;
    pthread_mutex_t lock;
    pthread_cond_t wake; /* workers: a new call, or stop */
    pthread_cond_t done; /* the caller: the last part completed */
    pthread_cond_t rest; /* benched workers: stop (probation ends on a timeout) */
    uint32_t n_threads;
    uint32_t n_started;
    pthread_t* threads;
    posix_slot* slots; /* n_threads, 64-byte aligned; slot 0 is the caller's (unused) */
    void* scratch; /* the VTCM stand-in: scratch_bytes, 64-byte aligned (NULL when 0 bytes) */
    uint64_t scratch_bytes;
    uint64_t prefetch_head; /* bytes of a block the DMA stand-in prefetches (see posix_dma_start) */
    posix_counters* counters; /* event counters, opened by the first counters_read (its caller's thread) */
} posix_pool;

/* The calling thread's index in its pool (0: the thread that drives the device, or any other). */
static _Thread_local uint32_t tls_thread_index;

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

static void posix_yield(void* ctx) {
    (void)ctx;
    sched_yield();
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

static uint64_t claim_generation(uint64_t word) { return word >> CLAIM_PART_BITS; }

/* A worker's wait for a call after `seen`: spins with the pause hint for up to spin_ns (or until
 * the pool stops). Returns the last claim word read; *preempted is set when the spin stopped
 * because the thread was off its core between two clock reads (over PREEMPTED_NS apart). */
static uint64_t spin_for_call(posix_pool* pool, uint64_t seen, uint64_t spin_ns, int* preempted) {
    uint64_t start = 0, last = 0;
    for (uint32_t i = 1;; ++i) {
        const uint64_t w = atomic_load_explicit(&pool->claim, memory_order_relaxed);
        if (claim_generation(w) != seen || atomic_load_explicit(&pool->stop, memory_order_relaxed)) return w;
        cpu_relax();
        if (i % 64u == 0) {
            const uint64_t now = posix_now_ns(NULL);
            if (start == 0) start = now;
            else if (now - last > PREEMPTED_NS) *preempted = 1;
            if (*preempted || now - start > spin_ns) return w;
            last = now;
        }
    }
}

/* Claims the next part of call `generation`: its index, or -1 when every part is taken or another
 * call is current. Only a successful CAS gives a part, so a stale claim word never matches. */
static int64_t claim_part(posix_pool* pool, uint64_t generation) {
    uint64_t w = atomic_load_explicit(&pool->claim, memory_order_relaxed);
    for (;;) {
        if (claim_generation(w) != generation || (w & CLAIM_PART_MASK) >= pool->n_threads) return -1;
        if (atomic_compare_exchange_weak_explicit(&pool->claim, &w, w + 1u, memory_order_acquire,
                                                  memory_order_relaxed))
            return (int64_t)(w & CLAIM_PART_MASK);
    }
}

/* Marks a part complete; the last one wakes the caller if it sleeps. */
static void complete_part(posix_pool* pool) {
    /* seq_cst, as the caller's asleep store and its re-read of remaining: one of them sees the other */
    if (atomic_fetch_sub(&pool->remaining, 1u) != 1u) return;
    if (atomic_load(&pool->caller_asleep)) {
        pthread_mutex_lock(&pool->lock);
        pthread_cond_signal(&pool->done);
        pthread_mutex_unlock(&pool->lock);
    }
}

static void call_hook(posix_pool* pool, uint32_t index, uint32_t event) {
    const tsl_npu_posix_hook* hook = atomic_load_explicit(&pool->hook, memory_order_acquire);
    if (hook) hook->fn(hook->user, index, event);
}

/* A benched worker's probation: it sleeps until `until` (or the pool stops), giving its core back. */
static void sit_out(posix_pool* pool, uint64_t until) {
    const struct timespec ts = {(time_t)(until / 1000000000u), (long)(until % 1000000000u)};
    pthread_mutex_lock(&pool->lock);
    while (!atomic_load(&pool->stop) && posix_now_ns(NULL) < until)
        pthread_cond_timedwait(&pool->rest, &pool->lock, &ts);
    pthread_mutex_unlock(&pool->lock);
}

static void* posix_worker(void* arg) {
    posix_worker_start* start = (posix_worker_start*)arg;
    posix_pool* pool = start->pool;
    const uint32_t index = start->index;
    free(start);
    posix_slot* slot = &pool->slots[index];
    tls_thread_index = index;
    atomic_store(&slot->tid, (int32_t)syscall(SYS_gettid));
    uint64_t seen = 0;
    uint64_t probation_ns = PROBATION_MIN_NS, rejoin_ns = 0; /* the next probation; when the last ended */
    uint64_t shared_until = 0; /* no spinning before: the core was seen shared */
    for (;;) {
        /* a worker late within its last probation period sleeps at once: spinning would only age
         * it in the scheduler's eyes on a core it shares */
        uint64_t spin_ns = POOL_SPIN_NS;
        if (probation_ns != PROBATION_MIN_NS || shared_until) {
            const uint64_t now = posix_now_ns(NULL);
            if (now - rejoin_ns >= probation_ns) probation_ns = PROBATION_MIN_NS; /* a clean period */
            if (now >= shared_until) shared_until = 0;
            if (probation_ns != PROBATION_MIN_NS || shared_until) spin_ns = 0;
        }
        int preempted = 0;
        const uint64_t w = spin_for_call(pool, seen, spin_ns, &preempted);
        if (preempted) shared_until = posix_now_ns(NULL) + SHARED_NS;
        if (claim_generation(w) == seen && !atomic_load(&pool->stop)) {
            pthread_mutex_lock(&pool->lock);
            atomic_fetch_add(&pool->sleepers, 1u); /* seq_cst: the caller's claim store, then its sleepers load */
            while (!atomic_load(&pool->stop) && claim_generation(atomic_load(&pool->claim)) == seen)
                pthread_cond_wait(&pool->wake, &pool->lock);
            atomic_fetch_sub(&pool->sleepers, 1u);
            pthread_mutex_unlock(&pool->lock);
        }
        if (atomic_load(&pool->stop)) break;
        const uint64_t generation = claim_generation(atomic_load_explicit(&pool->claim, memory_order_relaxed));
        seen = generation;
        for (;;) {
            call_hook(pool, index, TSL_NPU_POSIX_HOOK_CLAIM);
            uint64_t late = atomic_load_explicit(&slot->late, memory_order_relaxed);
            if (late && (late = atomic_exchange_explicit(&slot->late, 0u, memory_order_relaxed)) != 0) {
                if (late - rejoin_ns >= probation_ns) probation_ns = PROBATION_MIN_NS; /* a clean period */
                sit_out(pool, posix_now_ns(NULL) + probation_ns);
                rejoin_ns = posix_now_ns(NULL);
                probation_ns = probation_ns * 2u < PROBATION_MAX_NS ? probation_ns * 2u : PROBATION_MAX_NS;
                break;
            }
            /* announced before the claim, so a caller that waits on the part finds its holder */
            atomic_store(&slot->holding, generation);
            const int64_t part = claim_part(pool, generation);
            if (part < 0) {
                atomic_store_explicit(&slot->holding, 0u, memory_order_relaxed);
                break;
            }
            call_hook(pool, index, TSL_NPU_POSIX_HOOK_HOLD);
            pool->fn(pool->arg, (uint32_t)part, pool->n_threads);
            atomic_store_explicit(&slot->holding, 0u, memory_order_relaxed);
            complete_part(pool);
        }
    }
    return NULL;
}

/* Benches the workers that hold (or are claiming) a part of `generation`: the caller has waited
 * for them too long. Each sits out its probation once it is back. */
static void bench_holders(posix_pool* pool, uint64_t generation) {
    const uint64_t now = posix_now_ns(NULL);
    for (uint32_t i = 1; i < pool->n_threads; ++i) {
        posix_slot* s = &pool->slots[i];
        if (atomic_load(&s->holding) != generation) continue;
        atomic_store_explicit(&s->late, now, memory_order_relaxed);
        atomic_fetch_add_explicit(&pool->benched, 1u, memory_order_relaxed);
    }
}

/* The caller, out of parts: waits until every part of `generation` is complete. Spins, then
 * sleeps; past max(BENCH_MIN_NS, 4 x longest_ns) it benches the holders and sleeps on. */
static void wait_parts(posix_pool* pool, uint64_t generation, uint64_t longest_ns) {
    const uint64_t start = posix_now_ns(NULL);
    const uint64_t limit = 4u * longest_ns > BENCH_MIN_NS ? 4u * longest_ns : BENCH_MIN_NS;
    for (uint32_t i = 1;; ++i) {
        if (atomic_load_explicit(&pool->remaining, memory_order_acquire) == 0) return;
        cpu_relax();
        if (i % 64u == 0 && posix_now_ns(NULL) - start > (CALLER_SPIN_NS < limit ? CALLER_SPIN_NS : limit)) break;
    }
    const uint64_t deadline = start + limit;
    const struct timespec ts = {(time_t)(deadline / 1000000000u), (long)(deadline % 1000000000u)};
    int benched = 0;
    pthread_mutex_lock(&pool->lock);
    atomic_store(&pool->caller_asleep, 1u); /* seq_cst: then remaining is read again below */
    while (atomic_load(&pool->remaining) != 0) {
        if (benched) {
            pthread_cond_wait(&pool->done, &pool->lock);
        } else if (posix_now_ns(NULL) >= deadline) {
            bench_holders(pool, generation);
            benched = 1;
        } else {
            pthread_cond_timedwait(&pool->done, &pool->lock, &ts);
        }
    }
    atomic_store_explicit(&pool->caller_asleep, 0u, memory_order_relaxed);
    pthread_mutex_unlock(&pool->lock);
}

static void posix_parallel(void* ctx, tsl_npu_task_fn fn, void* arg) {
    posix_pool* pool = (posix_pool*)ctx;
    const uint32_t n = pool->n_threads;
    if (n <= 1) {
        fn(arg, 0, 1);
        return;
    }
    pool->fn = fn;
    pool->arg = arg;
    atomic_store_explicit(&pool->remaining, n, memory_order_relaxed);
    const uint64_t generation = ++pool->generation;
    atomic_store(&pool->claim, generation << CLAIM_PART_BITS); /* seq_cst: before the sleepers load */
    if (atomic_load(&pool->sleepers)) {
        pthread_mutex_lock(&pool->lock);
        pthread_cond_broadcast(&pool->wake);
        pthread_mutex_unlock(&pool->lock);
    }
    uint64_t longest = 0;
    for (;;) {
        call_hook(pool, 0, TSL_NPU_POSIX_HOOK_CLAIM);
        const int64_t part = claim_part(pool, generation);
        if (part < 0) break;
        const uint64_t t0 = posix_now_ns(NULL);
        fn(arg, (uint32_t)part, n);
        const uint64_t t = posix_now_ns(NULL) - t0;
        if (t > longest) longest = t;
        atomic_fetch_sub_explicit(&pool->remaining, 1u, memory_order_relaxed);
    }
    wait_parts(pool, generation, longest);
}

static uint32_t posix_thread_index(void* ctx) {
    (void)ctx;
    return tls_thread_index;
}

/* counters_read: opens the events of every pool thread on the first call (the caller's as thread
 * 0, reopened when another thread drives the device), then sums them. */
static void posix_counters_read(void* ctx, uint64_t* out, uint32_t n) {
    posix_pool* pool = (posix_pool*)ctx;
    const int32_t self = (int32_t)syscall(SYS_gettid);
    if (!pool->counters) {
        int32_t* tids = (int32_t*)calloc(pool->n_threads, sizeof(int32_t));
        if (!tids) return;
        tids[0] = self;
        for (uint32_t i = 1; i < pool->n_threads; ++i)
            while ((tids[i] = atomic_load(&pool->slots[i].tid)) == 0) sched_yield(); /* a worker just started */
        pool->counters = tsl_npu_posix_counters_open(tids, pool->n_threads);
        free(tids);
        if (!pool->counters) return;
    } else if (tsl_npu_posix_counters_tid(pool->counters, 0) != self) {
        tsl_npu_posix_counters_retarget(pool->counters, 0, self);
    }
    tsl_npu_posix_counters_read(pool->counters, out, n);
}

void tsl_npu_posix_platform_set_test_hook(tsl_npu_platform* p, const tsl_npu_posix_hook* hook) {
    atomic_store_explicit(&((posix_pool*)p->ctx)->hook, hook, memory_order_release);
}

uint64_t tsl_npu_posix_platform_benched(const tsl_npu_platform* p) {
    return atomic_load_explicit(&((posix_pool*)p->ctx)->benched, memory_order_relaxed);
}

static void pool_stop(posix_pool* pool) {
    pthread_mutex_lock(&pool->lock);
    atomic_store(&pool->stop, 1);
    pthread_cond_broadcast(&pool->wake);
    pthread_cond_broadcast(&pool->rest);
    pthread_mutex_unlock(&pool->lock);
    for (uint32_t i = 0; i < pool->n_started; ++i) pthread_join(pool->threads[i], NULL);
    pthread_cond_destroy(&pool->rest);
    pthread_cond_destroy(&pool->done);
    pthread_cond_destroy(&pool->wake);
    pthread_mutex_destroy(&pool->lock);
    tsl_npu_posix_counters_close(pool->counters);
    free(pool->slots);
    free(pool->threads);
    free(pool->scratch);
    free(pool);
}

int32_t tsl_npu_posix_platform_create(uint32_t n_threads, uint64_t vtcm_bytes, tsl_npu_platform* out) {
    memset(out, 0, sizeof *out);
    if (n_threads == 0) n_threads = 1;
    if (n_threads > POOL_MAX_THREADS || vtcm_bytes > (uint64_t)SIZE_MAX - 63u) return TSL_NPU_ERR_NO_MEMORY;
    posix_pool* pool = (posix_pool*)calloc(1, sizeof *pool);
    if (!pool) return TSL_NPU_ERR_NO_MEMORY;
    pool->n_threads = n_threads;
    pool->threads = (pthread_t*)calloc(n_threads, sizeof(pthread_t));
    pool->slots = (posix_slot*)aligned_alloc(64, (size_t)n_threads * sizeof(posix_slot));
    /* aligned_alloc wants a multiple of the alignment; the device sees vtcm_bytes of it */
    pool->scratch = vtcm_bytes ? aligned_alloc(64, (size_t)((vtcm_bytes + 63u) & ~(uint64_t)63u)) : NULL;
    pool->scratch_bytes = pool->scratch ? vtcm_bytes : 0;
    if (!pool->threads || !pool->slots || (vtcm_bytes && !pool->scratch)) {
        free(pool->scratch);
        free(pool->slots);
        free(pool->threads);
        free(pool);
        return TSL_NPU_ERR_NO_MEMORY;
    }
    memset(pool->slots, 0, (size_t)n_threads * sizeof(posix_slot));
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->wake, NULL);
    /* the timed waits (the caller's bench deadline, a probation's end) count CLOCK_MONOTONIC */
    pthread_condattr_t monotonic;
    pthread_condattr_init(&monotonic);
    pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
    pthread_cond_init(&pool->done, &monotonic);
    pthread_cond_init(&pool->rest, &monotonic);
    pthread_condattr_destroy(&monotonic);
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
    out->yield = posix_yield;
    out->scratch = posix_scratch;
    out->dma_start = posix_dma_start;
    out->dma_wait = posix_dma_wait;
    out->counters_read = posix_counters_read;
    out->thread_index = posix_thread_index;
    out->n_threads = n_threads;
    out->isa = posix_isa();
    pool->prefetch_head = (out->isa & TSL_NPU_ISA_AVX512) ? PREFETCH_HEAD_BYTES : 0u;
    return TSL_NPU_OK;
}

void tsl_npu_posix_platform_destroy(tsl_npu_platform* p) {
    if (p->ctx) pool_stop((posix_pool*)p->ctx);
    memset(p, 0, sizeof *p);
}

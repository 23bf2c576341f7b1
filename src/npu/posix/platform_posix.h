/* The device runtime's operating-system services on Linux (host only; not built for a DSP):
 * buffers mapped with mmap(MAP_SHARED) of their fd, CLOCK_MONOTONIC, the CPU's cycle counter
 * (rdtsc on x86, cntvct_el0 on aarch64, 0 elsewhere), a 1 ms nanosleep as idle, and a pool of
 * n_threads - 1 pthreads that join the calling thread in every parallel call (n_threads parts
 * claimed by whichever thread comes first; a worker that holds a part too long is benched for a
 * while: platform_posix.c); a synchronous
 * memcpy as the DMA stand-in; the CPU's vector and matrix (AMX) extensions as isa (cpuid, with the
 * OS's consent: for AMX, create asks Linux for the process's tile-data permission); each pool
 * thread's index as thread_index; perf_event_open counters of every pool thread as counters_read
 * (platform_counters_posix.h). */
#ifndef TESSEL_NPU_PLATFORM_POSIX_H
#define TESSEL_NPU_PLATFORM_POSIX_H

#include "npu/device/device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fills *out with the services above, starts n_threads - 1 workers (n_threads 0 counts as 1) and
 * allocates a scratchpad of vtcm_bytes (0: none). Returns TSL_NPU_OK, or TSL_NPU_ERR_NO_MEMORY
 * when memory or a thread cannot be had (then nothing is left to destroy). */
int32_t tsl_npu_posix_platform_create(uint32_t n_threads, uint64_t vtcm_bytes, tsl_npu_platform* out);

/* Stops and joins the workers and frees what create allocated; *p is zeroed. Call once, when no
 * parallel call is running. */
void tsl_npu_posix_platform_destroy(tsl_npu_platform* p);

/* Tests only. A hook every pool thread calls with its index (0: the calling thread, which never
 * sees HOLD) and an event: CLAIM before each attempt to claim a part of a call, HOLD right after a
 * worker's claim, while it holds the part, before fn runs. A test holds a thread back in it, as a
 * descheduled one would be. A worker may call the hook after a parallel call has returned (it
 * comes late), so *hook and what user points to must stay valid until the platform is destroyed
 * even after the hook is replaced; NULL removes it. */
enum tsl_npu_posix_hook_event { TSL_NPU_POSIX_HOOK_CLAIM = 0, TSL_NPU_POSIX_HOOK_HOLD = 1 };
typedef struct tsl_npu_posix_hook {
    void (*fn)(void* user, uint32_t worker, uint32_t event);
    void* user;
} tsl_npu_posix_hook;
void tsl_npu_posix_platform_set_test_hook(tsl_npu_platform* p, const tsl_npu_posix_hook* hook);

/* Times a worker was benched so far (the calling thread waited past its bench threshold for a
 * part the worker held). */
uint64_t tsl_npu_posix_platform_benched(const tsl_npu_platform* p);

#ifdef __cplusplus
}
#endif

#endif /* TESSEL_NPU_PLATFORM_POSIX_H */

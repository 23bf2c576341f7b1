/* Per-thread event counters of the posix platform (tsl_npu_platform.counters_read) through
 * Linux's perf_event_open: the software events task-clock, page-faults and context-switches, and
 * the hardware events TESSEL_NPU_PMU names (default cycles,instructions,cache-misses; "off":
 * none; at most three, in profile slots 5..7). An event the kernel will not count (no PMU in a
 * VM: ENOENT; perf_event_paranoid) is reported once per process on stderr as a note and reads 0.
 * Kernel-side counts are included where perf_event_paranoid allows (else user-side only). */
#ifndef TESSEL_NPU_PLATFORM_COUNTERS_POSIX_H
#define TESSEL_NPU_PLATFORM_COUNTERS_POSIX_H

#include <stdint.h>

typedef struct posix_counters posix_counters;

/* Opens the events of the n threads with Linux thread ids tids[0..n); NULL when out of memory.
 * Events that cannot be opened stay closed (and read 0). */
posix_counters* tsl_npu_posix_counters_open(const int32_t* tids, uint32_t n);

/* Reopens the events of thread i, now Linux thread `tid` (the device's driving thread changed). */
void tsl_npu_posix_counters_retarget(posix_counters* c, uint32_t i, int32_t tid);

/* Linux thread id of thread i as last opened. */
int32_t tsl_npu_posix_counters_tid(const posix_counters* c, uint32_t i);

/* Running totals over all threads into out[0..n) in profile-slot order (proto.h, counters 2..). */
void tsl_npu_posix_counters_read(posix_counters* c, uint64_t* out, uint32_t n);

/* Closes every event and frees c (NULL: nothing). */
void tsl_npu_posix_counters_close(posix_counters* c);

#endif /* TESSEL_NPU_PLATFORM_COUNTERS_POSIX_H */

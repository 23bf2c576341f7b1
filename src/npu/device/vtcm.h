/* The device's scratchpad ("VTCM", a Hexagon DSP's vector tightly coupled memory) as one op sees
 * it: a bump allocator over the session's scratch block, reset by the executor before each op
 * with the op's stated budget (tsl_npu_kparams_header.scratch_bytes). Allocations live until the
 * next reset; there is no free. Not thread-safe: an op allocates on its calling thread (in run,
 * before a parallel call) and hands each worker its share.
 *
 * Freestanding C11 (no libc): builds for the DSP like the rest of src/npu/device.
 */
#ifndef TESSEL_NPU_DEVICE_VTCM_H
#define TESSEL_NPU_DEVICE_VTCM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Alignment of the block and of every allocation unless asked for more: one cache line, one
 * 16-lane float vector (vec.h's aligned loads). */
#define TSL_NPU_VTCM_ALIGN 64u

typedef struct tsl_npu_vtcm {
    uint8_t* base; /* TSL_NPU_VTCM_ALIGN-aligned start of the block (NULL: no scratchpad) */
    uint64_t size; /* bytes of the block */
    uint64_t limit; /* bytes the current op may use (<= size) */
    uint64_t used;  /* bytes handed out since the last reset, padding included */
} tsl_npu_vtcm;

/* Takes the block [base, base + bytes); a misaligned base is moved up to TSL_NPU_VTCM_ALIGN and
 * the size shrunk to match (to 0 when nothing aligned is left). The limit starts at 0. */
void tsl_npu_vtcm_init(tsl_npu_vtcm* v, void* base, uint64_t bytes);

/* Starts a new op: forgets every allocation and allows `limit` bytes (at most the block size). */
void tsl_npu_vtcm_reset(tsl_npu_vtcm* v, uint64_t limit);

/* `bytes` of scratch aligned to `align` (a power of two; smaller values mean TSL_NPU_VTCM_ALIGN),
 * or NULL when the padding plus `bytes` would pass the limit (nothing is taken then). bytes == 0
 * gives an aligned pointer that must not be written. */
void* tsl_npu_vtcm_alloc(tsl_npu_vtcm* v, uint64_t bytes, uint64_t align);

/* n rounded up to a multiple of `align` (a power of two), as planners size their requests. */
static inline uint64_t tsl_npu_align_up(uint64_t n, uint64_t align) { return (n + align - 1) & ~(align - 1); }

#ifdef __cplusplus
}
#endif

#endif /* TESSEL_NPU_DEVICE_VTCM_H */

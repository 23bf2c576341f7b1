/* The NPU device runtime (DESIGN.md, "The npu offload path"): maps shared buffers, resolves the
 * descriptors of a batch (offsets into mappings, never host pointers), runs the ops in order on
 * its worker threads, writes one profile record per op and fills the batch response.
 *
 * Plain C11, fixed-width types, status codes (enum tsl_npu_status), no allocation after
 * tsl_npu_device_init and nothing from src/core: the same source builds freestanding for a 32-bit
 * DSP. Everything the operating system provides (mapping a buffer by fd, a clock, worker threads)
 * comes through tsl_npu_platform; platform_posix.h supplies it on Linux.
 *
 * Thread safety: one thread drives a device (map, unmap, run are not concurrent with each other).
 */
#ifndef TESSEL_NPU_DEVICE_H
#define TESSEL_NPU_DEVICE_H

#include "npu/device/kernels.h"
#include "npu/device/vtcm.h"
#include "npu/proto/proto.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TSL_NPU_DEVICE_MAX_MAPPINGS 1024u

/* Work item run on the device's worker threads: fn(arg, i, n) for i in [0, n). */
typedef void (*tsl_npu_task_fn)(void* arg, uint32_t i, uint32_t n);

/* Operating-system services of the device. Every function receives `ctx`. */
typedef struct tsl_npu_platform {
    void* ctx;
    /* Maps `size` bytes of the shared buffer behind local descriptor `fd` read/write; returns its
     * base, or NULL on failure. */
    void* (*map)(void* ctx, int32_t fd, uint64_t size);
    void (*unmap)(void* ctx, void* base, uint64_t size);
    /* CLOCK_MONOTONIC, ns. */
    uint64_t (*now_ns)(void* ctx);
    /* Cycle counter (0 when the platform has none). */
    uint64_t (*cycles)(void* ctx);
    /* Runs fn(arg, i, n_threads) once for each part i in [0, n_threads) and returns when all
     * have returned. A part runs on one thread, any of the workers or the caller (a thread may run
     * several, one after another), so state indexed by i is never shared by two threads at once. */
    void (*parallel)(void* ctx, tsl_npu_task_fn fn, void* arg);
    /* Gives up the processor for about a millisecond (used while a hung test device waits). */
    void (*idle)(void* ctx);
    /* Lets another ready thread run now, if any (a fence wait's short waits); NULL: none. */
    void (*yield)(void* ctx);
    /* The session's scratchpad (VTCM): its base, 64-byte aligned, with its size in bytes in
     * *bytes; NULL and 0 when the platform has none (NULL function: none either). The block stays
     * valid until the platform is destroyed. */
    void* (*scratch)(void* ctx, uint64_t* bytes);
    /* The DMA stand-in: dma_start begins bringing `bytes` at src (a mapped buffer) close to the
     * calling worker and returns where the kernel reads them once dma_wait has returned: dst (a
     * scratchpad block of `bytes`) when the platform copies, or src itself when its memory is as
     * near as the scratchpad and it only prefetches (the posix platform, unless `flags` has
     * TSL_NPU_DMA_COPY). dma_wait returns when every transfer the calling worker started has
     * landed. A kernel overlaps its next transfer with its current compute (double buffering).
     * NULL functions: no DMA (kernels then read in place). */
    const void* (*dma_start)(void* ctx, void* dst, const void* src, uint64_t bytes, uint32_t flags);
    void (*dma_wait)(void* ctx);
    /* Event counts of the platform's threads (the workers and the caller), summed: out[0..n)
     * gets the running totals in the order of profile counters 2.. (proto.h: task-clock ns, page
     * faults, context switches, then the hardware events); an event it cannot count stays 0. The
     * first call sets the counting up. NULL: the platform counts nothing. */
    void (*counters_read)(void* ctx, uint64_t* out, uint32_t n);
    /* Index of the calling thread: 0 for the thread that drives the device, 1.. for the workers
     * (trace spans name it). NULL: every part counts as run by thread 0. */
    uint32_t (*thread_index)(void* ctx);
    uint32_t n_threads;
    uint32_t isa; /* TSL_NPU_ISA_* bits: vector and matrix extensions the device's kernels may use */
} tsl_npu_platform;

/* dma_start flags: land the bytes in dst even where the platform could read them in place. */
#define TSL_NPU_DMA_COPY 1u

/* tsl_npu_platform.isa bits (host CPUs acting as the virtual NPU's vector unit). */
#define TSL_NPU_ISA_AVX512VNNI 0x1u /* AVX-512 F + BW + VNNI: the _avx512 matmul kernel */
#define TSL_NPU_ISA_AMX_INT8 0x2u   /* AMX tiles + INT8 with the OS's tile-data permission, and AVX-512
                                       VNNI: the matrix unit (the _amx matmul kernel) */
#define TSL_NPU_ISA_AVX512 0x4u     /* AVX-512 F + BW + VL + DQ with the OS saving the zmm state: the
                                       _avx512 float kernels (FLASH_ATTN_EXT) */
#define TSL_NPU_ISA_AVX512VBMI 0x8u /* AVX512VNNI and VBMI (byte permutes): the _avx512vbmi matmul kernel */
#define TSL_NPU_ISA_HVX 0x20u       /* Hexagon HVX (v67, 128-byte vectors): the _hvx integer matmul kernels */
#define TSL_NPU_ISA_AVX2 0x10u      /* AVX2 + FMA + F16C with the OS saving the ymm state: the _avx2 matmul
                                       and float kernels, used where no AVX-512 bit is set */

typedef struct tsl_npu_mapping {
    int32_t host_fd; /* the host's fd: the name buffers have in batches; -1 = free entry */
    int32_t local_fd;
    uint64_t size;
    uint8_t* base;
} tsl_npu_mapping;

typedef struct tsl_npu_device {
    tsl_npu_platform platform;
    tsl_npu_vtcm vtcm; /* the platform's scratchpad; each op gets its stated share */
    tsl_npu_kernels kernels; /* chosen at init from platform.isa */
    uint32_t fault; /* enum tsl_npu_fault (faults.h): tests only, 0 otherwise */
    uint32_t n_mappings;
    tsl_npu_mapping mappings[TSL_NPU_DEVICE_MAX_MAPPINGS];
} tsl_npu_device;

/* Prepares `d` (caller-owned storage) with the platform's services; its VTCM is the platform's
 * scratch block (none when the platform has none) and its kernels those of platform->isa
 * (kernels.h). Returns TSL_NPU_OK. */
int32_t tsl_npu_device_init(tsl_npu_device* d, const tsl_npu_platform* platform);

/* Runs the device's ops with the kernels of `isa` instead (platform.isa becomes `isa`): tests
 * compare an ISA's kernels with plain C (isa 0) on one device. Not while a batch runs. */
void tsl_npu_device_use_isa(tsl_npu_device* d, uint32_t isa);

/* Fills what the device reports at session start (protocol version, threads, scratchpad). */
void tsl_npu_device_hwinfo(const tsl_npu_device* d, tsl_npu_hwinfo* out);

/* Maps the buffer the host calls `host_fd` (reachable here as local_fd), `size` bytes.
 * Mapping a host_fd again replaces nothing and returns TSL_NPU_OK when the size matches.
 * Errors: TSL_NPU_ERR_NO_MEMORY (table full), TSL_NPU_ERR_MAP_FAILED, TSL_NPU_ERR_BAD_DESC
 * (same host_fd with another size). */
int32_t tsl_npu_device_map(tsl_npu_device* d, int32_t host_fd, int32_t local_fd, uint64_t size);

/* Unmaps host_fd; TSL_NPU_ERR_NO_MAPPING when it is not mapped. Does not close local_fd. */
int32_t tsl_npu_device_unmap(tsl_npu_device* d, int32_t host_fd);

/* Base address of host_fd's mapping, or NULL. */
uint8_t* tsl_npu_device_mapping(const tsl_npu_device* d, int32_t host_fd, uint64_t* size);

/* Unmaps every buffer (session end). */
void tsl_npu_device_release(tsl_npu_device* d);

/* Runs the batch described by `req` whose block (req->block_size bytes) starts at `block`.
 * Validates counts and every descriptor before running anything, then runs the ops in order,
 * storing each op's profile record in the block; the VTCM allocator is reset to the op's stated
 * scratch_bytes before each op. Increments *heartbeat after every op and, inside an op, after
 * every chunk of work a worker finishes (progress the host watches: an op that makes progress is
 * never taken for a stall), and stops with TSL_NPU_ERR_CANCELLED when *cancel becomes non-zero
 * between ops (an op itself never looks at it).
 * Fills *rsp (seq, status, n_done, counts, err_op, start/stop) and returns rsp->status. */
int32_t tsl_npu_device_run(tsl_npu_device* d, uint8_t* block, const tsl_npu_batch_req* req, tsl_npu_batch_rsp* rsp,
                           volatile uint64_t* heartbeat, volatile const uint32_t* cancel);

#ifdef __cplusplus
}
#endif

#endif /* TESSEL_NPU_DEVICE_H */

/* The wire formats of the NPU's out-of-process links (docs/npu.md, "Links"), shared by the host
 * (src/npu/link) and every device program: `tessel npu-device` and the Hexagon device under QEMU
 * (src/npu/hexagon/device_main.c). Plain C, fixed-width types, the same layout in a 64-bit host and a
 * 32-bit device (checked below).
 *
 * Control messages: fixed-size records over a SOCK_SEQPACKET Unix socket, one per packet, a
 * buffer's fd riding along as SCM_RIGHTS ancillary data. Every request is answered by one message
 * with the same op and a status (enum tsl_npu_status).
 *   START     host -> device: region fd (the rings) + its size, device options; answer: hwinfo
 *   MAP       host -> device: buffer fd + the host's fd number (host_fd) + size + flags
 *   UNMAP     host -> device: host_fd
 *   SHUTDOWN  host -> device: the device cancels its batch, answers and exits
 *
 * The ring region, one shared buffer both sides map (byte offsets; capacity = entries per ring, a
 * power of two, at most 2^20):
 *     0      tsl_npu_control_page   (one 4 KiB page)
 *     4096   tsl_npu_ring_header    request ring  (head on one 64-byte line, tail on the next)
 *     4224   tsl_npu_ring_header    response ring
 *     4352   tsl_npu_request_entry x capacity
 *     ...    tsl_npu_batch_rsp x capacity
 * Each ring has one producer (advances head) and one consumer (advances tail), both counting
 * entries modulo 2^32 with atomic 32-bit accesses; a consumer about to sleep adds itself to
 * `sleepers` and FUTEX_WAITs (the shared form) on head, and a producer that sees sleepers after
 * publishing head FUTEX_WAKEs it.
 */
#ifndef TESSEL_NPU_PROTO_LINK_H
#define TESSEL_NPU_PROTO_LINK_H

#include <stddef.h>
#include <stdint.h>

#include "npu/proto/proto.h"

#ifdef __cplusplus
extern "C" {
#endif

enum tsl_npu_control_op {
    TSL_NPU_CONTROL_START = 1,
    TSL_NPU_CONTROL_MAP = 2,
    TSL_NPU_CONTROL_UNMAP = 3,
    TSL_NPU_CONTROL_SHUTDOWN = 4
};

typedef struct tsl_npu_control_msg {
    uint32_t op;          /* enum tsl_npu_control_op */
    int32_t status;       /* answers: enum tsl_npu_status */
    int32_t host_fd;      /* MAP/UNMAP: the buffer's name in batches (the host's fd number) */
    uint32_t flags;       /* MAP: TSL_NPU_BUF_* flags */
    uint64_t size;        /* START: region bytes; MAP: buffer bytes (page-rounded) */
    uint64_t vtcm_bytes;  /* START: the scratchpad budget */
    uint32_t n_threads;   /* START: device worker threads */
    uint32_t fault;       /* START: enum tsl_npu_fault (tests) */
    uint32_t poll;        /* START: 1 = the device loop spins on the request ring */
    uint32_t reserved;
    tsl_npu_hwinfo hwinfo; /* START's answer */
    uint64_t cpus[4];      /* START: CPUs 0..255 the device's threads run on (bit c of word c / 64); none set: anywhere */
} tsl_npu_control_msg;

/* The control page: device liveness and the host's requests to the device loop. */
typedef struct tsl_npu_control_page {
    uint32_t magic;    /* TSL_NPU_REGION_MAGIC once the host has initialised the region */
    uint32_t capacity; /* entries per ring */
    /* Bumped by the device at the start of every batch, after every op and per chunk of work
     * inside an op (the host's progress signal). */
    uint64_t heartbeat;
    uint32_t cancel; /* non-zero: the running batch stops between ops (TSL_NPU_ERR_CANCELLED) */
    uint32_t stop;   /* non-zero: the device loop exits after its current batch */
    uint32_t alive;  /* 1 while the device loop runs; 0 once it has left (for any reason) */
    uint32_t reserved;
} tsl_npu_control_page;

#define TSL_NPU_REGION_MAGIC 0x4b4c5354u /* "TSLK" */
#define TSL_NPU_REGION_RINGS TSL_NPU_PAGE_BYTES /* offset of the two ring headers */
#define TSL_NPU_REGION_MAX_CAPACITY (1u << 20)

/* A request-ring entry: the batch and the host fd of the op-queue buffer holding its block. */
typedef struct tsl_npu_request_entry {
    int32_t queue_fd;
    uint32_t reserved;
    tsl_npu_batch_req req;
} tsl_npu_request_entry;

/* A ring's positions, each on its own 64-byte line (the sleeper count beside head). */
typedef struct tsl_npu_ring_header {
    uint32_t head;
    uint32_t sleepers;
    uint8_t pad0[56];
    uint32_t tail;
    uint8_t pad1[60];
} tsl_npu_ring_header;

/* Bytes of a region with `capacity` entries per ring. */
static inline uint64_t tsl_npu_region_bytes(uint32_t capacity) {
    return TSL_NPU_REGION_RINGS + 2u * sizeof(tsl_npu_ring_header) +
           (uint64_t)capacity * (sizeof(tsl_npu_request_entry) + sizeof(tsl_npu_batch_rsp));
}

TSL_NPU_STATIC_ASSERT(sizeof(tsl_npu_control_msg) == 144, "control message layout");
TSL_NPU_STATIC_ASSERT(sizeof(tsl_npu_control_page) == 32, "control page layout");
TSL_NPU_STATIC_ASSERT(sizeof(tsl_npu_request_entry) == 48, "request entry layout");
TSL_NPU_STATIC_ASSERT(sizeof(tsl_npu_ring_header) == 128 && offsetof(tsl_npu_ring_header, tail) == 64,
                      "ring header layout");

#ifdef __cplusplus
}
#endif

#endif /* TESSEL_NPU_PROTO_LINK_H */

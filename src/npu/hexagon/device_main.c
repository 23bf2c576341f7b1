/* The Hexagon device program, tessel-npu-hexagon: the NPU device runtime as the child of the host's
 * hexagon link (src/npu/link/process_link.cpp), started as `QEMU tessel-npu-hexagon npu-device
 * --socket FD`. The wire formats are npu/proto/link.h's, as with `tessel npu-device`: START brings
 * the ring region's fd, MAP/UNMAP the buffers' fds, SHUTDOWN ends the program; batches come through
 * the request ring and their answers go back through the response ring.
 *
 * One thread does everything: between batches it runs the request ring, then the control socket
 * (without waiting), then sleeps on the request ring's futex for at most kWaitUs. A control message
 * that arrives while a batch runs waits for the batch (the host's wait is bounded by the heartbeat,
 * which the batch keeps beating). */
#include "npu/device/device.h"
#include "npu/device/faults.h"
#include "npu/hexagon/platform_hexagon.h"
#include "npu/hexagon/runtime.h"
#include "npu/hexagon/sys.h"
#include "npu/proto/link.h"

enum { kWaitUs = 2000 };

static tsl_npu_device g_device;

/* One ring of the region (npu/proto/link.h's protocol). */
typedef struct ring {
    tsl_npu_ring_header* h;
    uint8_t* entries;
    uint32_t capacity;
    uint32_t entry_bytes;
} ring;

static int ring_pop(const ring* r, void* out) {
    const uint32_t tail = __atomic_load_n(&r->h->tail, __ATOMIC_RELAXED);
    const uint32_t head = __atomic_load_n(&r->h->head, __ATOMIC_ACQUIRE);
    if (head == tail) return 0;
    __builtin_memcpy(out, r->entries + (tail & (r->capacity - 1u)) * r->entry_bytes, r->entry_bytes);
    __atomic_store_n(&r->h->tail, tail + 1u, __ATOMIC_RELEASE);
    return 1;
}

static int ring_push(const ring* r, const void* in) {
    const uint32_t head = __atomic_load_n(&r->h->head, __ATOMIC_RELAXED);
    const uint32_t tail = __atomic_load_n(&r->h->tail, __ATOMIC_ACQUIRE);
    if (head - tail >= r->capacity) return 0;
    __builtin_memcpy(r->entries + (head & (r->capacity - 1u)) * r->entry_bytes, in, r->entry_bytes);
    __atomic_store_n(&r->h->head, head + 1u, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&r->h->sleepers, __ATOMIC_SEQ_CST) != 0) tsl_futex_wake(&r->h->head);
    return 1;
}

/* Sleeps until the ring is not empty, about timeout_us, or a wake-up. */
static void ring_wait(const ring* r, uint32_t timeout_us) {
    const uint32_t seen = __atomic_load_n(&r->h->head, __ATOMIC_SEQ_CST);
    __atomic_fetch_add(&r->h->sleepers, 1u, __ATOMIC_SEQ_CST);
    if (seen == __atomic_load_n(&r->h->tail, __ATOMIC_RELAXED) && __atomic_load_n(&r->h->head, __ATOMIC_SEQ_CST) == seen)
        tsl_futex_wait(&r->h->head, seen, timeout_us);
    __atomic_fetch_sub(&r->h->sleepers, 1u, __ATOMIC_SEQ_CST);
}

static int flag(const uint32_t* word) { return __atomic_load_n(word, __ATOMIC_ACQUIRE) != 0; }

static int refuse(const char* what) {
    tsl_puts(2, "tessel-npu-hexagon: error: ");
    tsl_puts(2, what);
    tsl_puts(2, "\n");
    return 1;
}

static int32_t parse_fd(const char* s) {
    int32_t v = 0;
    if (!*s) return -1;
    for (; *s; ++s) {
        if (*s < '0' || *s > '9' || v > 100000) return -1;
        v = v * 10 + (*s - '0');
    }
    return v;
}

static tsl_npu_batch_rsp run_batch(tsl_npu_control_page* control, const tsl_npu_request_entry* e) {
    const tsl_npu_batch_req* req = &e->req;
    tsl_npu_batch_rsp rsp;
    __builtin_memset(&rsp, 0, sizeof rsp);
    rsp.seq = req->seq;
    rsp.n_bufs = req->n_bufs;
    rsp.n_tensors = req->n_tensors;
    rsp.n_ops = req->n_ops;
    rsp.err_op = 0xffffffffu;
    uint64_t size = 0;
    uint8_t* base = tsl_npu_device_mapping(&g_device, e->queue_fd, &size);
    if (!base)
        rsp.status = TSL_NPU_ERR_NO_MAPPING;
    else if (req->block_offset > size || req->block_size > size - req->block_offset)
        rsp.status = TSL_NPU_ERR_BAD_BATCH;
    else
        tsl_npu_device_run(&g_device, base + req->block_offset, req, &rsp, (volatile uint64_t*)&control->heartbeat,
                           (volatile const uint32_t*)&control->cancel);
    return rsp;
}

/* Answers one control message; returns 0 to go on, 1 after SHUTDOWN. */
static int serve_control(int32_t sock, tsl_npu_control_msg* msg, int32_t fd) {
    tsl_npu_control_msg answer = *msg;
    answer.status = TSL_NPU_OK;
    if (msg->op == TSL_NPU_CONTROL_MAP) {
        /* the size must not exceed the file: touching pages past its end would fault */
        const int64_t held = fd < 0 ? -1 : tsl_file_size(fd);
        answer.status = held < 0 || (uint64_t)held < msg->size ? TSL_NPU_ERR_MAP_FAILED
                                                               : tsl_npu_device_map(&g_device, msg->host_fd, fd, msg->size);
    } else if (msg->op == TSL_NPU_CONTROL_UNMAP) {
        answer.status = tsl_npu_device_unmap(&g_device, msg->host_fd);
    } else if (msg->op != TSL_NPU_CONTROL_SHUTDOWN) {
        answer.status = TSL_NPU_ERR_PROTOCOL;
    }
    if (fd >= 0) tsl_close(fd); /* a mapping outlives its fd */
    if (tsl_send_packet(sock, &answer, sizeof answer) != 0) return 1;
    return msg->op == TSL_NPU_CONTROL_SHUTDOWN;
}

int tsl_main(int argc, char** argv) {
    int32_t sock = -1;
    for (int i = 1; i < argc; ++i)
        if (argv[i][0] == '-' && argv[i][1] == '-' && argv[i][2] == 's' && i + 1 < argc) sock = parse_fd(argv[++i]);
    if (sock < 0) return refuse("usage: tessel-npu-hexagon npu-device --socket FD (started by the host's hexagon link)");
    tsl_npu_control_msg start;
    int32_t region_fd = -1;
    if (tsl_recv_packet(sock, &start, sizeof start, &region_fd, 0) != (int32_t)sizeof start || start.op != TSL_NPU_CONTROL_START ||
        region_fd < 0)
        return refuse("expected a start message with the ring region on the socket");
    const int64_t held = tsl_file_size(region_fd);
    if (held < 0 || (uint64_t)held < start.size) return refuse("the ring region is larger than the memory the host passed");
    uint8_t* base = (uint8_t*)tsl_map_shared(region_fd, start.size);
    tsl_close(region_fd);
    if (!base) return refuse("the ring region cannot be mapped");
    tsl_npu_control_page* control = (tsl_npu_control_page*)(void*)base;
    const uint32_t capacity = control->capacity;
    if (control->magic != TSL_NPU_REGION_MAGIC || capacity == 0 || (capacity & (capacity - 1u)) != 0 ||
        capacity > TSL_NPU_REGION_MAX_CAPACITY || tsl_npu_region_bytes(capacity) > start.size)
        return refuse("the ring region from the host is malformed");
    tsl_npu_ring_header* headers = (tsl_npu_ring_header*)(void*)(base + TSL_NPU_REGION_RINGS);
    uint8_t* req_entries = base + TSL_NPU_REGION_RINGS + 2u * sizeof(tsl_npu_ring_header);
    const ring requests = {&headers[0], req_entries, capacity, sizeof(tsl_npu_request_entry)};
    const ring responses = {&headers[1], req_entries + capacity * sizeof(tsl_npu_request_entry), capacity,
                            sizeof(tsl_npu_batch_rsp)};
    tsl_npu_platform platform;
    tsl_npu_control_msg answer = start;
    answer.status = tsl_npu_hexagon_platform_create(start.vtcm_bytes, &platform);
    if (answer.status == TSL_NPU_OK) {
        tsl_npu_device_init(&g_device, &platform);
        g_device.fault = start.fault;
        tsl_npu_device_hwinfo(&g_device, &answer.hwinfo);
        __atomic_store_n(&control->alive, 1u, __ATOMIC_RELEASE);
    }
    if (tsl_send_packet(sock, &answer, sizeof answer) != 0 || answer.status != TSL_NPU_OK) return 1;
    for (;;) {
        if (flag(&control->stop)) break;
        tsl_npu_request_entry entry;
        if (ring_pop(&requests, &entry)) {
            __atomic_fetch_add(&control->heartbeat, 1u, __ATOMIC_RELEASE);
            const tsl_npu_batch_rsp rsp = run_batch(control, &entry);
            if (g_device.fault == TSL_NPU_FAULT_DIE) tsl_exit(3);
            /* the host keeps at most `capacity` batches outstanding, so the ring has room */
            while (!ring_push(&responses, &rsp) && !flag(&control->stop)) tsl_sleep_ns(1000000u);
            continue;
        }
        tsl_npu_control_msg msg;
        int32_t fd = -1;
        const int32_t got = tsl_recv_packet(sock, &msg, sizeof msg, &fd, 1);
        if (got == (int32_t)sizeof msg) {
            if (serve_control(sock, &msg, fd)) break;
            continue;
        }
        if (fd >= 0) tsl_close(fd);
        if (got == -11) { /* EAGAIN: nothing to do */
            ring_wait(&requests, kWaitUs);
            continue;
        }
        break; /* the host closed the socket, or sent what no host sends */
    }
    __atomic_store_n(&control->alive, 0u, __ATOMIC_RELEASE);
    tsl_npu_device_release(&g_device);
    return 0;
}

/* The system calls of sys.h. */
#include "npu/hexagon/sys.h"

int32_t tsl_write_all(int32_t fd, const void* p, size_t n) {
    const uint8_t* b = (const uint8_t*)p;
    while (n > 0) {
        const int32_t r = tsl_sys(TSL_SYS_WRITE, fd, (int32_t)(uintptr_t)b, (int32_t)n, 0, 0, 0);
        if (r == -4) continue; /* EINTR */
        if (r <= 0) return r < 0 ? r : -5;
        b += r;
        n -= (size_t)r;
    }
    return 0;
}

_Noreturn void tsl_exit(int32_t status) {
    for (;;) tsl_sys(TSL_SYS_EXIT_GROUP, status, 0, 0, 0, 0, 0);
}

uint64_t tsl_monotonic_ns(void) {
    tsl_timespec t = {0, 0};
    tsl_sys(TSL_SYS_CLOCK_GETTIME, 1 /* CLOCK_MONOTONIC */, (int32_t)(uintptr_t)&t, 0, 0, 0, 0);
    return (uint64_t)(uint32_t)t.tv_sec * 1000000000ull + (uint64_t)(uint32_t)t.tv_nsec;
}

void tsl_sleep_ns(uint64_t ns) {
    tsl_timespec t = {(int32_t)(ns / 1000000000ull), (int32_t)(ns % 1000000000ull)};
    tsl_sys(TSL_SYS_NANOSLEEP, (int32_t)(uintptr_t)&t, 0, 0, 0, 0, 0);
}

enum { PROT_RW = 3, MAP_SHARED = 1, MAP_PRIVATE = 2, MAP_ANONYMOUS = 0x20 };

static void* mapped(int32_t r) {
    return (uint32_t)r >= 0xfffff000u ? 0 : (void*)(uintptr_t)(uint32_t)r; /* -4095..-1: -errno */
}

void* tsl_map_shared(int32_t fd, uint64_t size) {
    if (size == 0 || size > 0xfffff000ull) return 0; /* a 32-bit address space */
    return mapped(tsl_sys(TSL_SYS_MMAP2, 0, (int32_t)size, PROT_RW, MAP_SHARED, fd, 0));
}

void* tsl_map_anonymous(uint64_t size) {
    if (size == 0 || size > 0xfffff000ull) return 0;
    return mapped(tsl_sys(TSL_SYS_MMAP2, 0, (int32_t)size, PROT_RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
}

void tsl_unmap(void* p, uint64_t size) {
    if (p) tsl_sys(TSL_SYS_MUNMAP, (int32_t)(uintptr_t)p, (int32_t)size, 0, 0, 0, 0);
}

int64_t tsl_file_size(int32_t fd) {
    int64_t end = -1;
    const int32_t r = tsl_sys(TSL_SYS_LLSEEK, fd, 0, 0, (int32_t)(uintptr_t)&end, 2 /* SEEK_END */, 0);
    return r < 0 ? -1 : end;
}

void tsl_close(int32_t fd) { tsl_sys(TSL_SYS_CLOSE, fd, 0, 0, 0, 0, 0); }

void tsl_futex_wait(uint32_t* word, uint32_t expected, uint32_t timeout_us) {
    tsl_timespec t = {(int32_t)(timeout_us / 1000000u), (int32_t)(timeout_us % 1000000u) * 1000};
    tsl_sys(TSL_SYS_FUTEX, (int32_t)(uintptr_t)word, 0 /* FUTEX_WAIT */, (int32_t)expected, (int32_t)(uintptr_t)&t, 0, 0);
}

void tsl_futex_wake(uint32_t* word) {
    tsl_sys(TSL_SYS_FUTEX, (int32_t)(uintptr_t)word, 1 /* FUTEX_WAKE */, 0x7fffffff, 0, 0, 0);
}

/* The 32-bit Linux ABI's msghdr, iovec and cmsghdr (include/linux/socket.h, uio.h). */
typedef struct tsl_iovec {
    void* base;
    uint32_t len;
} tsl_iovec;
typedef struct tsl_msghdr {
    void* name;
    uint32_t namelen;
    tsl_iovec* iov;
    uint32_t iovlen;
    void* control;
    uint32_t controllen;
    int32_t flags;
} tsl_msghdr;
enum { SOL_SOCKET = 1, SCM_RIGHTS = 1, MSG_CTRUNC = 0x8, MSG_TRUNC = 0x20, MSG_DONTWAIT = 0x40, MSG_NOSIGNAL = 0x4000,
       MSG_CMSG_CLOEXEC = 0x40000000, CMSG_HEADER = 12 };

int32_t tsl_recv_packet(int32_t sock, void* buf, uint32_t bytes, int32_t* fd, int dontwait) {
    *fd = -1;
    tsl_iovec iov = {buf, bytes};
    _Alignas(8) uint8_t control[32];
    __builtin_memset(control, 0, sizeof control);
    tsl_msghdr h = {0, 0, &iov, 1, control, sizeof control, 0};
    int32_t n;
    do {
        n = tsl_sys(TSL_SYS_RECVMSG, sock, (int32_t)(uintptr_t)&h, MSG_CMSG_CLOEXEC | (dontwait ? MSG_DONTWAIT : 0), 0, 0, 0);
    } while (n == -4); /* EINTR */
    if (n < 0) return n;
    for (uint32_t at = 0; at + CMSG_HEADER <= h.controllen;) { /* cmsghdr: len, level, type, data */
        uint32_t len;
        int32_t level, type;
        __builtin_memcpy(&len, control + at, 4);
        __builtin_memcpy(&level, control + at + 4, 4);
        __builtin_memcpy(&type, control + at + 8, 4);
        if (len < CMSG_HEADER) break;
        if (level == SOL_SOCKET && type == SCM_RIGHTS && len == CMSG_HEADER + 4) __builtin_memcpy(fd, control + at + CMSG_HEADER, 4);
        at += (len + 3u) & ~3u;
    }
    if (h.flags & (MSG_TRUNC | MSG_CTRUNC)) {
        if (*fd >= 0) tsl_close(*fd);
        *fd = -1;
        return -90;
    }
    return n;
}

int32_t tsl_send_packet(int32_t sock, const void* buf, uint32_t bytes) {
    tsl_iovec iov = {(void*)(uintptr_t)buf, bytes};
    tsl_msghdr h = {0, 0, &iov, 1, 0, 0, 0};
    int32_t n;
    do {
        n = tsl_sys(TSL_SYS_SENDMSG, sock, (int32_t)(uintptr_t)&h, MSG_NOSIGNAL, 0, 0, 0);
    } while (n == -4);
    return n < 0 ? n : (n == (int32_t)bytes ? 0 : -90);
}

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

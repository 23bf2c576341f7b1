/* The memory functions the compiler emits calls to (memcpy for struct copies and __builtin_memcpy,
 * memset for zeroing, ...). no_builtin keeps the compiler from turning these loops back into calls
 * to themselves. Also the programs' small formatting helpers (runtime.h). */
#include "npu/hexagon/runtime.h"
#include "npu/hexagon/sys.h"

void* memcpy(void* restrict dst, const void* restrict src, size_t n);
void* memmove(void* dst, const void* src, size_t n);
void* memset(void* dst, int c, size_t n);
int memcmp(const void* a, const void* b, size_t n);
void* __hexagon_memcpy_likely_aligned_min32bytes_mult8bytes(void* dst, const void* src, size_t n);

__attribute__((no_builtin)) void* memcpy(void* restrict dst, const void* restrict src, size_t n) {
    uint8_t* d = (uint8_t*)dst;
    const uint8_t* s = (const uint8_t*)src;
    if ((((uintptr_t)d | (uintptr_t)s) & 7u) == 0) /* both 8-byte aligned: words first */
        for (; n >= 8; n -= 8, d += 8, s += 8) *(uint64_t*)(void*)d = *(const uint64_t*)(const void*)s;
    for (; n > 0; --n) *d++ = *s++;
    return dst;
}

/* clang's call for a copy it knows is 8-byte aligned, a multiple of 8 and at least 32 bytes
 * (compiler-rt's name): the general copy serves. */
void* __hexagon_memcpy_likely_aligned_min32bytes_mult8bytes(void* dst, const void* src, size_t n) {
    return memcpy(dst, src, n);
}

__attribute__((no_builtin)) void* memmove(void* dst, const void* src, size_t n) {
    uint8_t* d = (uint8_t*)dst;
    const uint8_t* s = (const uint8_t*)src;
    if (d < s || d >= s + n) {
        for (; n > 0; --n) *d++ = *s++;
    } else {
        for (d += n, s += n; n > 0; --n) *--d = *--s;
    }
    return dst;
}

__attribute__((no_builtin)) void* memset(void* dst, int c, size_t n) {
    uint8_t* d = (uint8_t*)dst;
    const uint8_t b = (uint8_t)c;
    if (((uintptr_t)d & 7u) == 0) {
        uint64_t w = b;
        w |= w << 8;
        w |= w << 16;
        w |= w << 32;
        for (; n >= 8; n -= 8, d += 8) *(uint64_t*)(void*)d = w;
    }
    for (; n > 0; --n) *d++ = b;
    return dst;
}

__attribute__((no_builtin)) int memcmp(const void* a, const void* b, size_t n) {
    const uint8_t* x = (const uint8_t*)a;
    const uint8_t* y = (const uint8_t*)b;
    for (; n > 0; --n, ++x, ++y)
        if (*x != *y) return *x < *y ? -1 : 1;
    return 0;
}

void tsl_puts(int32_t fd, const char* s) {
    size_t n = 0;
    while (s[n]) ++n;
    tsl_write_all(fd, s, n);
}

char* tsl_fmt_i64(char* out, int64_t v) {
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? 0u - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + (int)(u % 10u));
        u /= 10u;
    } while (u);
    if (v < 0) *out++ = '-';
    while (n > 0) *out++ = tmp[--n];
    *out = 0;
    return out;
}

char* tsl_fmt_hex(char* out, uint64_t v, int bytes) {
    static const char k_digits[] = "0123456789abcdef";
    for (int i = 2 * bytes - 1; i >= 0; --i) *out++ = k_digits[(v >> (4 * i)) & 15u];
    *out = 0;
    return out;
}

/* The integer division helpers clang calls on Hexagon, which has no divide instruction (compiler-rt's
 * names; the standard calling convention). Shift-and-subtract long division: the quotient's bits
 * from the top, one compare per bit. Division by zero gives an all-ones quotient and the dividend
 * as remainder (C leaves it undefined; the device never divides by zero on purpose). Signed forms
 * truncate toward zero, the remainder taking the dividend's sign, as C does. */
#include <stdint.h>

uint32_t __hexagon_udivsi3(uint32_t n, uint32_t d);
uint32_t __hexagon_umodsi3(uint32_t n, uint32_t d);
int32_t __hexagon_divsi3(int32_t n, int32_t d);
int32_t __hexagon_modsi3(int32_t n, int32_t d);
uint64_t __hexagon_udivdi3(uint64_t n, uint64_t d);
uint64_t __hexagon_umoddi3(uint64_t n, uint64_t d);
int64_t __hexagon_divdi3(int64_t n, int64_t d);
int64_t __hexagon_moddi3(int64_t n, int64_t d);

static uint64_t udivmod64(uint64_t n, uint64_t d, uint64_t* rem) {
    if (d == 0) {
        *rem = n;
        return ~0ull;
    }
    if (d > n) {
        *rem = n;
        return 0;
    }
    const int shift = __builtin_clzll(d) - __builtin_clzll(n); /* d's top bit under n's */
    uint64_t q = 0;
    d <<= shift;
    for (int i = 0; i <= shift; ++i) {
        q <<= 1;
        if (n >= d) {
            n -= d;
            q |= 1u;
        }
        d >>= 1;
    }
    *rem = n;
    return q;
}

/* 32-bit forms through the 64-bit one: the same loop, as many steps as the quotient has bits. */
static uint32_t udivmod32(uint32_t n, uint32_t d, uint32_t* rem) {
    uint64_t r;
    const uint64_t q = udivmod64(n, d, &r);
    *rem = (uint32_t)r;
    return d == 0 ? ~0u : (uint32_t)q;
}

uint32_t __hexagon_udivsi3(uint32_t n, uint32_t d) {
    uint32_t r;
    return udivmod32(n, d, &r);
}

uint32_t __hexagon_umodsi3(uint32_t n, uint32_t d) {
    uint32_t r;
    udivmod32(n, d, &r);
    return r;
}

static uint32_t mag32(int32_t v) { return v < 0 ? 0u - (uint32_t)v : (uint32_t)v; }
static uint64_t mag64(int64_t v) { return v < 0 ? 0u - (uint64_t)v : (uint64_t)v; }

int32_t __hexagon_divsi3(int32_t n, int32_t d) {
    uint32_t r;
    const uint32_t q = udivmod32(mag32(n), mag32(d), &r);
    return (int32_t)((n < 0) != (d < 0) ? 0u - q : q);
}

int32_t __hexagon_modsi3(int32_t n, int32_t d) {
    uint32_t r;
    udivmod32(mag32(n), mag32(d), &r);
    return (int32_t)(n < 0 ? 0u - r : r);
}

uint64_t __hexagon_udivdi3(uint64_t n, uint64_t d) {
    uint64_t r;
    return udivmod64(n, d, &r);
}

uint64_t __hexagon_umoddi3(uint64_t n, uint64_t d) {
    uint64_t r;
    udivmod64(n, d, &r);
    return r;
}

int64_t __hexagon_divdi3(int64_t n, int64_t d) {
    uint64_t r;
    const uint64_t q = udivmod64(mag64(n), mag64(d), &r);
    return (int64_t)((n < 0) != (d < 0) ? 0u - q : q);
}

int64_t __hexagon_moddi3(int64_t n, int64_t d) {
    uint64_t r;
    udivmod64(mag64(n), mag64(d), &r);
    return (int64_t)(n < 0 ? 0u - r : r);
}

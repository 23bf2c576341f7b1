/* A Hexagon program (run under qemu-hexagon by hexagon_runtime_test.cpp): prints the results of the
 * freestanding runtime's helpers (src/npu/hexagon/arith.c, fmath.c) for edge cases and for
 * pseudo-random operands, one line each: "<helper> <operands...> <result>" in hex. The host test
 * recomputes every line with its own arithmetic. Operands pass through volatile so the compiler
 * calls the helpers instead of folding constants. */
#include "npu/hexagon/runtime.h"

float sqrtf(float x);
float fmaf(float x, float y, float z);
float floorf(float x);

static uint64_t g_state = 0x9e3779b97f4a7c15ull;

static uint64_t next(void) { /* xorshift64 */
    g_state ^= g_state << 13;
    g_state ^= g_state >> 7;
    g_state ^= g_state << 17;
    return g_state;
}

static char g_line[160];

static void line(const char* name, int bytes, int n, const uint64_t* v) {
    char* p = g_line;
    for (const char* s = name; *s;) *p++ = *s++;
    for (int i = 0; i < n; ++i) {
        *p++ = ' ';
        p = tsl_fmt_hex(p, v[i], bytes);
    }
    *p++ = '\n';
    *p = 0;
    tsl_puts(1, g_line);
}

static float f32(uint32_t u) {
    float f;
    __builtin_memcpy(&f, &u, 4);
    return f;
}
static uint32_t u32(float f) {
    uint32_t u;
    __builtin_memcpy(&u, &f, 4);
    return u;
}
static double f64(uint64_t u) {
    double d;
    __builtin_memcpy(&d, &u, 8);
    return d;
}
static uint64_t u64(double d) {
    uint64_t u;
    __builtin_memcpy(&u, &d, 8);
    return u;
}

/* Operands: edge cases first, then random bits, then random values of every magnitude. */
static const uint32_t k_f32_edges[] = {0x00000000u, 0x80000000u, 0x3f800000u, 0xbf800000u, 0x7f800000u, 0xff800000u,
                                       0x7fc00000u, 0x00000001u, 0x807fffffu, 0x00800000u, 0x7f7fffffu, 0x40490fdbu,
                                       0x3fc00000u, 0xbfc00000u, 0x4b000001u, 0x3effffffu, 0x34000000u, 0x00400000u};
static const uint64_t k_f64_edges[] = {0x0ull, 0x8000000000000000ull, 0x3ff0000000000000ull, 0x7ff0000000000000ull,
                                       0xfff0000000000000ull, 0x7ff8000000000000ull, 0x1ull, 0x000fffffffffffffull,
                                       0x0010000000000000ull, 0x7fefffffffffffffull, 0x400921fb54442d18ull,
                                       0x3fe0000000000001ull, 0xbff8000000000000ull};
#define N_F32_EDGES (sizeof k_f32_edges / sizeof k_f32_edges[0])
#define N_F64_EDGES (sizeof k_f64_edges / sizeof k_f64_edges[0])
#define N_RANDOM 400

static uint32_t f32_operand(int i) {
    if (i < (int)N_F32_EDGES) return k_f32_edges[i];
    const uint64_t r = next();
    if (i & 1) return (uint32_t)r;                                       /* any bits */
    return (uint32_t)(r & 0x807fffffu) | (uint32_t)(((r >> 32) % 254u + 1u) << 23); /* a normal */
}

static uint64_t f64_operand(int i) {
    if (i < (int)N_F64_EDGES) return k_f64_edges[i];
    const uint64_t r = next();
    if (i & 1) return r;
    return (r & 0x800fffffffffffffull) | (((next() % 2046u) + 1u) << 52);
}

int tsl_main(int argc, char** argv) {
    (void)argc;
    (void)argv;
    volatile uint32_t a32, b32;
    volatile uint64_t a64, b64;
    for (int i = 0; i < N_RANDOM; ++i) {
        const uint64_t r = next(), s = next();
        /* divisors of every size, never 0 */
        a32 = (uint32_t)r >> (r >> 59);
        b32 = ((uint32_t)s >> (s >> 59)) | 1u;
        uint64_t v[3] = {a32, b32, a32 / b32};
        line("udivsi3", 4, 3, v);
        v[2] = a32 % b32;
        line("umodsi3", 4, 3, v);
        const int32_t sa = (int32_t)a32 * ((i & 1) ? -1 : 1), sb = (int32_t)(b32 >> 1 | 1u) * ((i & 2) ? -1 : 1);
        volatile int32_t x = sa, y = sb;
        v[0] = (uint32_t)x;
        v[1] = (uint32_t)y;
        v[2] = (uint32_t)(x / y);
        line("divsi3", 4, 3, v);
        v[2] = (uint32_t)(x % y);
        line("modsi3", 4, 3, v);
        a64 = r >> (s >> 58);
        b64 = (s >> (r >> 58)) | 1u;
        v[0] = a64;
        v[1] = b64;
        v[2] = a64 / b64;
        line("udivdi3", 8, 3, v);
        v[2] = a64 % b64;
        line("umoddi3", 8, 3, v);
        volatile int64_t p = (int64_t)(a64 >> 1) * ((i & 1) ? -1 : 1), q = (int64_t)(b64 >> 1 | 1u) * ((i & 2) ? -1 : 1);
        v[0] = (uint64_t)p;
        v[1] = (uint64_t)q;
        v[2] = (uint64_t)(p / q);
        line("divdi3", 8, 3, v);
        v[2] = (uint64_t)(p % q);
        line("moddi3", 8, 3, v);
    }
    const int n32 = (int)N_F32_EDGES + N_RANDOM, n64 = (int)N_F64_EDGES + N_RANDOM;
    for (int i = 0; i < n32; ++i) {
        const uint32_t a = f32_operand(i);
        volatile float fa = f32(a);
        uint64_t v[4] = {a, u32(sqrtf(fa))};
        line("sqrtf", 4, 2, v);
        v[1] = u32(floorf(fa));
        line("floorf", 4, 2, v);
        for (int j = 0; j < (i < (int)N_F32_EDGES ? (int)N_F32_EDGES : 1); ++j) { /* edges: every pair */
            const uint32_t b = i < (int)N_F32_EDGES ? k_f32_edges[j] : f32_operand(i + 1);
            volatile float fb = f32(b);
            v[1] = b;
            v[2] = u32(fa / fb);
            line("divsf3", 4, 3, v);
            const uint32_t c = f32_operand((int)N_F32_EDGES + (int)(next() % 64u));
            volatile float fc = f32(c);
            v[2] = c;
            v[3] = u32(fmaf(fa, fb, fc));
            line("fmaf", 4, 4, v);
        }
    }
    for (int i = 0; i < n64; ++i) {
        const uint64_t a = f64_operand(i);
        volatile double da = f64(a);
        for (int j = 0; j < (i < (int)N_F64_EDGES ? (int)N_F64_EDGES : 1); ++j) {
            const uint64_t b = i < (int)N_F64_EDGES ? k_f64_edges[j] : f64_operand(i + 1);
            volatile double db = f64(b);
            uint64_t v[3] = {a, b, u64(da / db)};
            line("divdf3", 8, 3, v);
        }
    }
    /* results near the subnormal boundary, where rounding shifts the most */
    for (int i = 0; i < N_RANDOM; ++i) {
        const uint64_t r = next();
        volatile double da = f64((r & 0x000fffffffffffffull) | (((r >> 52) % 40u + 1u) << 52));
        volatile double db = f64((next() & 0x000fffffffffffffull) | ((uint64_t)(1000u + next() % 60u) << 52));
        uint64_t v[3] = {u64(da), u64(db), u64(da / db)};
        line("divdf3", 8, 3, v);
        volatile float fa = f32((uint32_t)(r & 0x007fffffu) | (uint32_t)((r >> 40) % 20u + 1u) << 23);
        volatile float fb = f32((uint32_t)(next() & 0x007fffffu) | (uint32_t)(110u + next() % 30u) << 23);
        uint64_t w[3] = {u32(fa), u32(fb), u32(fa / fb)};
        line("divsf3", 4, 3, w);
    }
    tsl_puts(1, "end\n");
    return 0;
}

/* IEEE 754 helpers the Hexagon build calls (v67 has float multiply-add but no divide or square root
 * instruction): binary64 division, binary32 division and square root, correctly rounded (to nearest,
 * ties to even), with IEEE's zeros, infinities, NaNs and subnormals; fmaf on the core's fused
 * multiply-add (sffma), floorf by bits. Integer arithmetic only: no call back into these helpers. */
#include <stdint.h>

double __hexagon_divdf3(double a, double b);
float __hexagon_divsf3(float a, float b);
float sqrtf(float x);
float fmaf(float x, float y, float z);
float floorf(float x);

static uint64_t bits64(double d) {
    uint64_t u;
    __builtin_memcpy(&u, &d, 8);
    return u;
}
static double from64(uint64_t u) {
    double d;
    __builtin_memcpy(&d, &u, 8);
    return d;
}
static uint32_t bits32(float f) {
    uint32_t u;
    __builtin_memcpy(&u, &f, 4);
    return u;
}
static float from32(uint32_t u) {
    float f;
    __builtin_memcpy(&f, &u, 4);
    return f;
}

#define F64_FRAC 0x000fffffffffffffull
#define F64_SIGN 0x8000000000000000ull
#define F64_INF 0x7ff0000000000000ull
#define F64_QNAN 0x7ff8000000000000ull

/* The significand of a finite non-zero binary64 with its exponent: m in [2^52, 2^53), value
 * m * 2^(e - 1075). */
static uint64_t unpack64(uint64_t u, int* e) {
    int ex = (int)((u >> 52) & 0x7ffu);
    uint64_t m = u & F64_FRAC;
    if (ex == 0) { /* subnormal: normalise */
        const int s = __builtin_clzll(m) - 11;
        m <<= s;
        ex = 1 - s;
    } else {
        m |= 1ull << 52;
    }
    *e = ex;
    return m;
}

double __hexagon_divdf3(double a, double b) {
    const uint64_t ua = bits64(a), ub = bits64(b);
    const uint64_t sign = (ua ^ ub) & F64_SIGN;
    const uint64_t aa = ua & ~F64_SIGN, ab = ub & ~F64_SIGN;
    if (aa > F64_INF) return from64(ua | (1ull << 51)); /* NaN: quieted */
    if (ab > F64_INF) return from64(ub | (1ull << 51));
    if (aa == F64_INF) return from64(ab == F64_INF ? F64_QNAN : sign | F64_INF);
    if (ab == F64_INF) return from64(sign);
    if (ab == 0) return from64(aa == 0 ? F64_QNAN : sign | F64_INF);
    if (aa == 0) return from64(sign);
    int ea, eb;
    uint64_t ma = unpack64(aa, &ea);
    const uint64_t mb = unpack64(ab, &eb);
    int e = ea - eb + 1023; /* the quotient's biased exponent when ma >= mb */
    if (ma < mb) {
        ma <<= 1;
        --e;
    }
    /* ma / mb in [1, 2): 55 quotient bits (52 fraction bits, guard, round), the rest sticky */
    uint64_t q = 0, r = ma;
    for (int i = 0; i < 55; ++i) {
        q <<= 1;
        if (r >= mb) {
            r -= mb;
            q |= 1u;
        }
        r <<= 1;
    }
    if (e >= 2047) return from64(sign | F64_INF);
    int shift = 2; /* bits below the result's last place */
    if (e <= 0) shift += 1 - e; /* subnormal: fewer places */
    uint64_t m, half, rest;
    if (shift >= 64) {
        m = 0;
        half = 0;
        rest = 1;
    } else {
        m = q >> shift;
        half = (q >> (shift - 1)) & 1u;
        rest = (q & ((1ull << (shift - 1)) - 1u)) | r;
    }
    if (half && (rest || (m & 1u))) ++m;
    if (e <= 0) return from64(sign | m); /* m == 2^52 after rounding is the smallest normal */
    if (m == (1ull << 53)) {
        m >>= 1;
        if (++e >= 2047) return from64(sign | F64_INF);
    }
    return from64(sign | ((uint64_t)e << 52) | (m & F64_FRAC));
}

/* binary32 division through binary64: the quotient rounded to 53 bits, then to 24, is the correctly
 * rounded binary32 quotient (53 >= 2 x 24 + 2: S. A. Figueroa, "When is double rounding
 * innocuous?", SIGNUM 1995). The conversions are exact or single instructions. */
float __hexagon_divsf3(float a, float b) { return (float)__hexagon_divdf3((double)a, (double)b); }

float sqrtf(float x) {
    const uint32_t u = bits32(x);
    if ((u & 0x7fffffffu) == 0) return x;             /* +-0 */
    if ((u & 0x7fffffffu) > 0x7f800000u) return from32(u | 0x00400000u); /* NaN: quieted */
    if (u & 0x80000000u) return from32(0x7fc00000u);  /* negative: NaN */
    if (u == 0x7f800000u) return x;                   /* +inf */
    int e = (int)(u >> 23);
    uint32_t m = u & 0x7fffffu;
    if (e == 0) {
        const int s = __builtin_clz(m) - 8;
        m <<= s;
        e = 1 - s;
    } else {
        m |= 0x800000u;
    }
    int ue = e - 127; /* value = m * 2^(ue - 23), m in [2^23, 2^24) */
    if (ue & 1) {     /* an even exponent to halve */
        m <<= 1;
        ue -= 1;
    }
    /* floor(sqrt(m * 2^25)) in [2^24, 2^25): 24 result bits and a round bit, bit by bit */
    uint64_t rem = (uint64_t)m << 25, res = 0, bit = 1ull << 48;
    while (bit) {
        if (rem >= res + bit) {
            rem -= res + bit;
            res = (res >> 1) + bit;
        } else {
            res >>= 1;
        }
        bit >>= 2;
    }
    /* a square root is never exactly half-way between two floats: the round bit decides */
    uint32_t mant = (uint32_t)(res >> 1) + (uint32_t)(res & 1u);
    int be = ue / 2 + 127;
    if (mant == 0x1000000u) {
        mant >>= 1;
        ++be;
    }
    return from32(((uint32_t)be << 23) | (mant & 0x7fffffu));
}

float fmaf(float x, float y, float z) { return __builtin_HEXAGON_F2_sffma(z, x, y); }

float floorf(float x) {
    const uint32_t u = bits32(x);
    const int e = (int)((u >> 23) & 0xffu) - 127;
    if (e >= 23) return x; /* integral already, inf or NaN */
    if (e < 0) {            /* |x| < 1 */
        if ((u & 0x7fffffffu) == 0) return x;
        return (u & 0x80000000u) ? -1.0f : 0.0f;
    }
    const uint32_t frac = 0x7fffffu >> e;
    if ((u & frac) == 0) return x;
    uint32_t r = u & ~frac;
    if (u & 0x80000000u) r += 0x800000u >> e; /* negative: one more toward -inf */
    return from32(r);
}

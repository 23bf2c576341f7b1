/* The device kernels' vector abstraction: float vectors of TSL_VF_LANES lanes (16 floats, one
 * 512-bit register of the virtual NPU's vector unit, half an HVX 128-byte register).
 *
 * This is the plain-C implementation: a struct of 16 floats and fixed-count lane loops, which
 * compiles freestanding for Hexagon (scripts/check-hexagon.sh) and which host compilers
 * auto-vectorise. A target-specific implementation (AVX-512 intrinsics, HVX) can replace the
 * bodies behind the same names later; kernels only use the functions below.
 *
 * Arithmetic is IEEE single precision lane by lane, each operation rounded once (tsl_vf_madd is a
 * multiply then an add, not fused, so results equal the scalar C expression a * b + c compiled
 * with -ffp-contract=off, tessel's setting).
 *
 * exp and tanh are written here (no libm on the device):
 *   tsl_npu_expf(x): e^x from x = k ln2 + r, |r| <= ln2 / 2 (ln2 split in two parts so k ln2 is
 *     exact), e^r by its degree-7 Taylor polynomial (truncation < 5e-9), times 2^k built from the
 *     exponent bits (in two steps, so results down to the subnormal range are right). Relative
 *     error <= 1e-6 for normal results (measured 1.0e-7 on a dense grid, tests/npu/device_vec_test.cpp);
 *     x > 88.72284 gives +inf, x < -103.98 gives 0, NaN stays NaN.
 *   tsl_npu_tanhf(x): the odd Taylor series through x^11 for |x| < 0.25 (no cancellation near 0),
 *     else sign(x) (1 - 2 / (e^{2|x|} + 1)); +-1 from |x| >= 9.1. Relative error <= 1e-6 (measured 2.4e-7).
 * sigmoid and SiLU are built from expf: 1 / (1 + e^-x), x / (1 + e^-x).
 *
 * What comes next: the matmul work adds int8 vectors (64 lanes) with int8 x int8 -> int32 dot
 * products of 4-element groups (AVX-512 VNNI / HVX vrmpy), which the quantized-tile kernels use.
 */
#ifndef TESSEL_NPU_DEVICE_VEC_H
#define TESSEL_NPU_DEVICE_VEC_H

#include <stdint.h>

#include "npu/device/half.h"

#define TSL_VF_LANES 16

typedef struct tsl_vf {
    float v[TSL_VF_LANES];
} tsl_vf;

/* ---- scalar functions ------------------------------------------------------------------- */

static inline float tsl_npu_expf(float x) {
    if (x != x) return x;
    if (x > 88.72283935546875f) return tsl_npu_f32_of_bits(0x7f800000u);
    if (x < -103.98f) return 0.0f;
    const float log2e = 1.44269502f;
    const float ln2_hi = 0.693359375f;    /* 9 significant bits: k * ln2_hi is exact */
    const float ln2_lo = -2.12194440e-4f; /* ln2 - ln2_hi */
    const float t = x * log2e;
    const int32_t k = (int32_t)(t + (t >= 0.0f ? 0.5f : -0.5f));
    const float r = (x - (float)k * ln2_hi) - (float)k * ln2_lo;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    /* 2^k = 2^k1 * 2^k2 with both halves in the normal exponent range */
    const int32_t k1 = k / 2;
    const int32_t k2 = k - k1;
    return p * tsl_npu_f32_of_bits((uint32_t)(k1 + 127) << 23) * tsl_npu_f32_of_bits((uint32_t)(k2 + 127) << 23);
}

static inline float tsl_npu_tanhf(float x) {
    const float a = x < 0.0f ? -x : x;
    if (a < 0.25f) {
        const float x2 = x * x;
        /* tanh x = x - x^3/3 + 2x^5/15 - 17x^7/315 + 62x^9/2835 - 1382x^11/155925 */
        float p = -1382.0f / 155925.0f;
        p = p * x2 + 62.0f / 2835.0f;
        p = p * x2 - 17.0f / 315.0f;
        p = p * x2 + 2.0f / 15.0f;
        p = p * x2 - 1.0f / 3.0f;
        return x + x * x2 * p;
    }
    if (a != a) return x;
    const float t = a >= 9.1f ? 1.0f : 1.0f - 2.0f / (tsl_npu_expf(2.0f * a) + 1.0f);
    return x < 0.0f ? -t : t;
}

static inline float tsl_npu_sigmoidf(float x) { return 1.0f / (1.0f + tsl_npu_expf(-x)); }

/* ---- vectors ----------------------------------------------------------------------------- */

static inline tsl_vf tsl_vf_splat(float x) {
    tsl_vf r;
    for (int i = 0; i < TSL_VF_LANES; ++i) r.v[i] = x;
    return r;
}

/* p aligned to 64 bytes (a target implementation may use an aligned load). */
static inline tsl_vf tsl_vf_load(const float* p) {
    tsl_vf r;
    __builtin_memcpy(r.v, p, sizeof r.v);
    return r;
}
/* p aligned to 4 bytes. */
static inline tsl_vf tsl_vf_loadu(const float* p) {
    tsl_vf r;
    __builtin_memcpy(r.v, p, sizeof r.v);
    return r;
}
/* The first n lanes (0 <= n <= 16) from p, the others `fill`. */
static inline tsl_vf tsl_vf_load_n(const float* p, int n, float fill) {
    tsl_vf r;
    for (int i = 0; i < TSL_VF_LANES; ++i) r.v[i] = i < n ? p[i] : fill;
    return r;
}
static inline void tsl_vf_store(float* p, tsl_vf a) { __builtin_memcpy(p, a.v, sizeof a.v); }
static inline void tsl_vf_storeu(float* p, tsl_vf a) { __builtin_memcpy(p, a.v, sizeof a.v); }
/* Stores the first n lanes (0 <= n <= 16). */
static inline void tsl_vf_store_n(float* p, tsl_vf a, int n) {
    for (int i = 0; i < n; ++i) p[i] = a.v[i];
}

#define TSL_VF_LANEWISE2(name, expr)                            \
    static inline tsl_vf name(tsl_vf a, tsl_vf b) {             \
        tsl_vf r;                                               \
        for (int i = 0; i < TSL_VF_LANES; ++i) r.v[i] = (expr); \
        return r;                                               \
    }
TSL_VF_LANEWISE2(tsl_vf_add, a.v[i] + b.v[i])
TSL_VF_LANEWISE2(tsl_vf_sub, a.v[i] - b.v[i])
TSL_VF_LANEWISE2(tsl_vf_mul, a.v[i] * b.v[i])
TSL_VF_LANEWISE2(tsl_vf_div, a.v[i] / b.v[i])
/* max/min: b when the comparison is false (so a NaN in a gives b) */
TSL_VF_LANEWISE2(tsl_vf_max, a.v[i] > b.v[i] ? a.v[i] : b.v[i])
TSL_VF_LANEWISE2(tsl_vf_min, a.v[i] < b.v[i] ? a.v[i] : b.v[i])
#undef TSL_VF_LANEWISE2

/* a * b + c, two roundings. */
static inline tsl_vf tsl_vf_madd(tsl_vf a, tsl_vf b, tsl_vf c) {
    tsl_vf r;
    for (int i = 0; i < TSL_VF_LANES; ++i) r.v[i] = a.v[i] * b.v[i] + c.v[i];
    return r;
}

/* Lanes where a < b take x, the others y. */
static inline tsl_vf tsl_vf_select_lt(tsl_vf a, tsl_vf b, tsl_vf x, tsl_vf y) {
    tsl_vf r;
    for (int i = 0; i < TSL_VF_LANES; ++i) r.v[i] = a.v[i] < b.v[i] ? x.v[i] : y.v[i];
    return r;
}

/* a with the lanes from n on (0 <= n <= 16) replaced by `fill`. */
static inline tsl_vf tsl_vf_keep_n(tsl_vf a, int n, float fill) {
    for (int i = n; i < TSL_VF_LANES; ++i) a.v[i] = fill;
    return a;
}

/* Horizontal sum (pairwise tree: lanes i and i + 8, then i + 4, ...) and maximum. */
static inline float tsl_vf_hsum(tsl_vf a) {
    for (int w = TSL_VF_LANES / 2; w >= 1; w /= 2)
        for (int i = 0; i < w; ++i) a.v[i] += a.v[i + w];
    return a.v[0];
}
static inline float tsl_vf_hmax(tsl_vf a) {
    float m = a.v[0];
    for (int i = 1; i < TSL_VF_LANES; ++i) m = a.v[i] > m ? a.v[i] : m;
    return m;
}

#define TSL_VF_LANEWISE1(name, fn)                                  \
    static inline tsl_vf name(tsl_vf a) {                           \
        tsl_vf r;                                                   \
        for (int i = 0; i < TSL_VF_LANES; ++i) r.v[i] = fn(a.v[i]); \
        return r;                                                   \
    }
TSL_VF_LANEWISE1(tsl_vf_exp, tsl_npu_expf)
TSL_VF_LANEWISE1(tsl_vf_tanh, tsl_npu_tanhf)
TSL_VF_LANEWISE1(tsl_vf_sigmoid, tsl_npu_sigmoidf)
#undef TSL_VF_LANEWISE1

#endif /* TESSEL_NPU_DEVICE_VEC_H */

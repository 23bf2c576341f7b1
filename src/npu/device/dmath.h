/* Scalar double-precision functions of the device kernels (no libm on the device): a reciprocal
 * square root for the normalisations and sine/cosine for ROPE.
 *
 * tsl_npu_rsqrt(v): 1/sqrt(v) for v > 0 by Newton's iteration y <- y (3 - v y^2) / 2 from the
 *   classic exponent-halving first guess (relative error < 4% -> < 1e-15 after four steps);
 *   v == 0 gives +inf, v < 0 or NaN gives NaN, +inf gives 0.
 * tsl_npu_sincos(x): x = k pi/2 + r with pi/2 split in three parts of 33 significant bits (each
 *   k * part exact for |k| < 2^20, so r is exact to ~1e-16 for |x| < 1.6e6 rad), then the Taylor
 *   series of sin r through r^15 and of cos r through r^16 on |r| <= pi/4 (truncation < 1e-16)
 *   and the quadrant k mod 4. Larger |x| lose accuracy (ROPE angles stay below: positions times
 *   frequencies <= 1 of a context of a million tokens).
 */
#ifndef TESSEL_NPU_DEVICE_DMATH_H
#define TESSEL_NPU_DEVICE_DMATH_H

#include <stdint.h>

static inline double tsl_npu_rsqrt(double v) {
    if (v != v || v < 0.0) return (v - v) / (v - v); /* NaN */
    if (v == 0.0) return 1.0 / v;
    if (v > 1.7976931348623157e308) return 0.0;
    if (v < 2.2250738585072014e-308) /* subnormal: scale into the normal range first */
        return tsl_npu_rsqrt(v * 18446744073709551616.0) * 4294967296.0;
    uint64_t bits;
    __builtin_memcpy(&bits, &v, 8);
    bits = 0x5fe6eb50c7b537a9ull - (bits >> 1);
    double y;
    __builtin_memcpy(&y, &bits, 8);
    for (int i = 0; i < 4; ++i) y = y * (1.5 - 0.5 * v * y * y);
    return y;
}

static inline void tsl_npu_sincos(double x, double* s, double* c) {
    const double two_over_pi = 0.63661977236758134308;
    const double pio2_1 = 1.57079632673412561417e+00;
    const double pio2_2 = 6.07710050650619224932e-11;
    const double pio2_3 = 2.02226624879595063154e-21;
    const double t = x * two_over_pi;
    const int64_t k = (int64_t)(t + (t >= 0.0 ? 0.5 : -0.5));
    const double kd = (double)k;
    const double r = ((x - kd * pio2_1) - kd * pio2_2) - kd * pio2_3;
    const double r2 = r * r;
    /* sin r = r (1 - r^2/3! + r^4/5! - ... - r^14/15!); cos r = 1 - r^2/2! + ... + r^16/16! */
    double ps = -1.0 / 1307674368000.0;
    ps = ps * r2 + 1.0 / 6227020800.0;
    ps = ps * r2 - 1.0 / 39916800.0;
    ps = ps * r2 + 1.0 / 362880.0;
    ps = ps * r2 - 1.0 / 5040.0;
    ps = ps * r2 + 1.0 / 120.0;
    ps = ps * r2 - 1.0 / 6.0;
    const double sr = r + r * r2 * ps;
    double pc = 1.0 / 20922789888000.0;
    pc = pc * r2 - 1.0 / 87178291200.0;
    pc = pc * r2 + 1.0 / 479001600.0;
    pc = pc * r2 - 1.0 / 3628800.0;
    pc = pc * r2 + 1.0 / 40320.0;
    pc = pc * r2 - 1.0 / 720.0;
    pc = pc * r2 + 1.0 / 24.0;
    pc = pc * r2 - 0.5;
    const double cr = 1.0 + r2 * pc;
    switch ((int)(k & 3)) {
    case 0: *s = sr; *c = cr; break;
    case 1: *s = cr; *c = -sr; break;
    case 2: *s = -sr; *c = -cr; break;
    default: *s = -cr; *c = sr; break;
    }
}

#endif /* TESSEL_NPU_DEVICE_DMATH_H */

// Scale search for the K-quant quantizers; see kquant_fit.hpp for the method.
#include "quant/kquant_fit.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/fp16.hpp"
#include "quant/kquant_layout.hpp"

namespace tessel::quant::kq {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// Smallest sub-block magnitude treated as non-zero by the symmetric fit.
constexpr float kZeroEps = 1e-15f;

/// Number of stage-2 passes (each refits the super-block scales by least squares).
constexpr int kSuperPasses = 3;

/// Stage-2 search radius around the rounded ideal sub-block integers. Affine types search
/// scale and min jointly ((2r+1)^2 pairs); a wider radius pays off there (the 4-bit Q2_K
/// levels are coarse), while symmetric types gain almost nothing beyond 1.
constexpr int kAffineRadius = 2;
constexpr int kSymmetricRadius = 1;

/// Sums over a sub-block for a given set of quants l: sum l, sum l^2, sum x*l.
struct QuantSums {
    int sl = 0;
    int sll = 0;
    float sxl = 0.0f;
};

/// An affine candidate x ~= a*l + b and its squared error.
struct AffineCandidate {
    double a = 0.0;
    double b = 0.0;
    double sse = kInf;
};

double affine_sse(int n, double sx, double sxx, const QuantSums& s, double a, double b) {
    return sxx - 2.0 * a * s.sxl - 2.0 * b * sx + a * a * s.sll + 2.0 * a * b * s.sl + n * b * b;
}

/// Least-squares a, b for fixed quants, constrained to a >= 0 and b <= 0 (the format's
/// non-negative scale and min). The objective is a convex quadratic, so when the free optimum
/// is infeasible the constrained one lies on the a = 0 or b = 0 edge: both are tried.
AffineCandidate solve_affine(int n, double sx, double sxx, const QuantSums& s) {
    AffineCandidate best;
    auto consider = [&](double a, double b) {
        const double e = affine_sse(n, sx, sxx, s, a, b);
        if (e < best.sse) best = {a, b, e};
    };
    const double det = static_cast<double>(n) * s.sll - static_cast<double>(s.sl) * s.sl;
    if (det > 0) {
        const double a = (n * static_cast<double>(s.sxl) - sx * s.sl) / det;
        const double b = (static_cast<double>(s.sll) * sx - s.sl * static_cast<double>(s.sxl)) / det;
        if (a >= 0 && b <= 0) {
            consider(a, b);
            return best;
        }
    }
    if (s.sll > 0) consider(std::max(0.0, s.sxl / static_cast<double>(s.sll)), 0.0);
    consider(0.0, std::min(0.0, sx / n));
    return best;
}

// The loops below keep kLanes independent float accumulators (n is a multiple of kLanes) so
// the compiler can vectorise them; the lanes are added in a fixed order, so results stay
// deterministic.
constexpr int kLanes = 8;

float lane_sum(const float* acc) {
    float s = 0.0f;
    for (int k = 0; k < kLanes; ++k) s += acc[k];
    return s;
}

/// Quants l = round((x - lo) * iscale) clamped to 0..nmax, summed.
QuantSums affine_sums(const float* x, int n, int nmax, float lo, float iscale) {
    QuantSums s;
    float sxl[kLanes] = {};
    for (int i = 0; i < n; i += kLanes) {
        for (int k = 0; k < kLanes; ++k) {
            const int l = round_clamped((x[i + k] - lo) * iscale, 0, nmax);
            s.sl += l;
            s.sll += l * l;
            sxl[k] += x[i + k] * static_cast<float>(l);
        }
    }
    s.sxl = lane_sum(sxl);
    return s;
}

/// Quants l = round(x * iscale) clamped to -nneg..nneg-1, summed.
QuantSums symmetric_sums(const float* x, int n, int nneg, float iscale) {
    QuantSums s;
    float sxl[kLanes] = {};
    for (int i = 0; i < n; i += kLanes) {
        for (int k = 0; k < kLanes; ++k) {
            const int l = round_clamped(x[i + k] * iscale, -nneg, nneg - 1);
            s.sll += l * l;
            sxl[k] += x[i + k] * static_cast<float>(l);
        }
    }
    s.sxl = lane_sum(sxl);
    return s;
}

/// Squared error of a sub-block dequantized as ds*q - dm with q = nearest level in 0..nmax
/// (q = 0 when ds is 0); the products use float exactly as the dequantizer does. Writes q
/// when q_out is non-null.
float affine_error(const float* x, int n, int nmax, float ds, float dm, uint8_t* q_out) {
    const float inv = ds > 0.0f ? 1.0f / ds : 0.0f;
    const int top = ds > 0.0f ? nmax : 0;
    float err[kLanes] = {};
    for (int i = 0; i < n; i += kLanes) {
        for (int k = 0; k < kLanes; ++k) {
            const int l = round_clamped((x[i + k] + dm) * inv, 0, top);
            const float diff = x[i + k] - (ds * static_cast<float>(l) - dm);
            err[k] += diff * diff;
            if (q_out) q_out[i + k] = static_cast<uint8_t>(l);
        }
    }
    return lane_sum(err);
}

/// Squared error of a sub-block dequantized as ds*q with q the nearest level in -nneg..nneg-1
/// (q = 0 when ds is 0). Writes q when q_out is non-null.
float symmetric_error(const float* x, int n, int nneg, float ds, int8_t* q_out) {
    const float inv = ds != 0.0f ? 1.0f / ds : 0.0f;
    float err[kLanes] = {};
    for (int i = 0; i < n; i += kLanes) {
        for (int k = 0; k < kLanes; ++k) {
            const int l = round_clamped(x[i + k] * inv, -nneg, nneg - 1);
            const float diff = x[i + k] - ds * static_cast<float>(l);
            err[k] += diff * diff;
            if (q_out) q_out[i + k] = static_cast<int8_t>(l);
        }
    }
    return lane_sum(err);
}

/// Stage 2, one affine sub-block: picks scale/min integers near fit/d, fit/dmin
/// with the least error, stores them and the element quants in out. Returns the error.
float choose_affine_levels(const float* x, int len, int nmax, int lmax, float d, float dmin,
                           const AffineFit& fit, int sub, AffineBlock& out) {
    const int ls0 = d > 0.0f ? round_clamped(fit.scale / d, 0, lmax) : 0;
    const int lm0 = dmin > 0.0f ? round_clamped(fit.min / dmin, 0, lmax) : 0;
    float best = std::numeric_limits<float>::infinity();
    int best_ls = ls0, best_lm = lm0;
    for (int ls = std::max(0, ls0 - kAffineRadius); ls <= std::min(lmax, ls0 + kAffineRadius); ++ls) {
        for (int lm = std::max(0, lm0 - kAffineRadius); lm <= std::min(lmax, lm0 + kAffineRadius); ++lm) {
            const float e = affine_error(x, len, nmax, d * static_cast<float>(ls), dmin * static_cast<float>(lm), nullptr);
            if (e < best) {
                best = e;
                best_ls = ls;
                best_lm = lm;
            }
        }
    }
    out.scale[sub] = static_cast<uint8_t>(best_ls);
    out.min[sub] = static_cast<uint8_t>(best_lm);
    return affine_error(x, len, nmax, d * static_cast<float>(best_ls), dmin * static_cast<float>(best_lm),
                        out.q + sub * len);
}

/// Least-squares d, dmin for the integers in blk: x ~= d*(scale_j*q) - dmin*min_j, with
/// dmin >= 0. Returns false when there is nothing to fit (all scale_j*q zero).
bool refit_affine_super(const float* x, int len, const AffineBlock& blk, float& d, float& dmin) {
    double saa = 0, sab = 0, sbb = 0, sxa = 0, sxb = 0;
    for (int i = 0; i < QK_K; ++i) {
        const int sub = i / len;
        const double a = static_cast<double>(blk.scale[sub]) * blk.q[i];
        const double b = -static_cast<double>(blk.min[sub]);
        saa += a * a;
        sab += a * b;
        sbb += b * b;
        sxa += x[i] * a;
        sxb += x[i] * b;
    }
    if (saa <= 0) return false;
    const double det = saa * sbb - sab * sab;
    double nd = sxa / saa, nm = 0.0;
    if (sbb > 0 && det > 0) {
        const double cd = (sbb * sxa - sab * sxb) / det;
        const double cm = (saa * sxb - sab * sxa) / det;
        if (cm >= 0 && cd > 0) {
            nd = cd;
            nm = cm;
        }
    }
    if (!(nd > 0) || !std::isfinite(nd) || !std::isfinite(nm)) return false;
    d = static_cast<float>(nd);
    if (sbb > 0) dmin = static_cast<float>(nm);
    return true;
}

/// Stage 2, one symmetric sub-block: the integer scale near s/d with the least error.
float choose_symmetric_level(const float* x, int nneg, int lmin, int lmax, float d, float s, int sub,
                             SymmetricBlock& out) {
    constexpr int len = 16;
    const int l0 = d != 0.0f ? round_clamped(s / d, lmin, lmax) : 0;
    float best = std::numeric_limits<float>::infinity();
    int best_l = l0;
    for (int l = std::max(lmin, l0 - kSymmetricRadius); l <= std::min(lmax, l0 + kSymmetricRadius); ++l) {
        const float e = symmetric_error(x, len, nneg, d * static_cast<float>(l), nullptr);
        if (e < best) {
            best = e;
            best_l = l;
        }
    }
    out.scale[sub] = static_cast<int8_t>(best_l);
    return symmetric_error(x, len, nneg, d * static_cast<float>(best_l), out.q + sub * len);
}

/// Least-squares d for x ~= d*(scale_j*q). Returns false when all scale_j*q are zero.
bool refit_symmetric_super(const float* x, const SymmetricBlock& blk, float& d) {
    double saa = 0, sxa = 0;
    for (int i = 0; i < QK_K; ++i) {
        const double a = static_cast<double>(blk.scale[i / 16]) * blk.q[i];
        saa += a * a;
        sxa += x[i] * a;
    }
    if (saa <= 0) return false;
    const double nd = sxa / saa;
    if (!std::isfinite(nd) || nd == 0.0) return false;
    d = static_cast<float>(nd);
    return true;
}

/// fp16 subnormal spacing, 2^-24.
constexpr float kHalfSubnormalStep = 5.9604644775390625e-08f;

/// Super-block scales below this many fp16 subnormal steps keep only a few significant bits.
constexpr float kCoarseSteps = 64.0f;
constexpr int kCoarseCandidates = 4;

/// Starting super-block scales to try for the ideal scale d: d itself; or, when d is tiny
/// enough that fp16 keeps few significant bits, the kCoarseCandidates fp16 subnormals from
/// just below |d| upwards (a slightly different d lets the sub-block integers reach the ideal
/// products more closely). Returns how many were written to out.
int start_scales(float d, float* out) {
    const float steps = std::fabs(d) / kHalfSubnormalStep;
    if (!(steps < kCoarseSteps)) {
        out[0] = d;
        return 1;
    }
    const float first = std::max(1.0f, std::floor(steps));
    for (int j = 0; j < kCoarseCandidates; ++j) {
        out[j] = std::copysign((first + static_cast<float>(j)) * kHalfSubnormalStep, d);
    }
    return kCoarseCandidates;
}

/// Stage-2 passes for an affine block from starting super-block scales d, dmin: assign the
/// sub-block integers, refit d and dmin, repeat. Leaves the best pass in out; returns its error.
double affine_passes(const float* x, int sub_len, int nmax, int lmax, const AffineFit* fits, float d, float dmin,
                     AffineBlock& out) {
    double best = kInf;
    AffineBlock trial;
    for (int pass = 0; pass < kSuperPasses; ++pass) {
        trial.d = fp32_to_fp16(d);
        trial.dmin = fp32_to_fp16(dmin);
        const float df = fp16_to_fp32(trial.d), mf = fp16_to_fp32(trial.dmin);
        double total = 0.0;
        for (int j = 0; j < QK_K / sub_len; ++j) {
            total += choose_affine_levels(x + j * sub_len, sub_len, nmax, lmax, df, mf, fits[j], j, trial);
        }
        if (total < best) {
            best = total;
            out = trial;
        }
        if (!refit_affine_super(x, sub_len, trial, d, dmin)) break;
    }
    return best;
}

/// Stage-2 passes for a symmetric block from a starting super-block scale d (as affine_passes).
double symmetric_passes(const float* x, int nneg, int lmin, int lmax, const float* scales, float d,
                        SymmetricBlock& out) {
    double best = kInf;
    SymmetricBlock trial;
    for (int pass = 0; pass < kSuperPasses; ++pass) {
        trial.d = fp32_to_fp16(d);
        const float df = fp16_to_fp32(trial.d);
        double total = 0.0;
        for (int j = 0; j < QK_K / 16; ++j) {
            total += choose_symmetric_level(x + j * 16, nneg, lmin, lmax, df, scales[j], j, trial);
        }
        if (total < best) {
            best = total;
            out = trial;
        }
        if (!refit_symmetric_super(x, trial, d)) break;
    }
    return best;
}

}  // namespace

AffineFit fit_affine(const float* x, int n, int nmax, const FitGrid& grid) {
    float lo = x[0], hi = x[0];
    double sx = 0, sxx = 0;
    for (int i = 0; i < n; ++i) {
        lo = std::min(lo, x[i]);
        hi = std::max(hi, x[i]);
        sx += x[i];
        sxx += static_cast<double>(x[i]) * x[i];
    }
    lo = std::min(lo, 0.0f);
    if (!(hi > lo) || !std::isfinite(hi - lo)) return {0.0f, -lo};
    const float range = hi - lo;

    AffineCandidate best;
    best.a = range / nmax;
    best.b = lo;
    for (int k = 0; k < grid.count; ++k) {
        const float iscale = (static_cast<float>(nmax) + grid.first + grid.step * static_cast<float>(k)) / range;
        const AffineCandidate c = solve_affine(n, sx, sxx, affine_sums(x, n, nmax, lo, iscale));
        if (c.sse < best.sse) best = c;
    }
    // Refine: re-round with the fitted parameters, refit, while the error falls.
    for (int iter = 0; iter < 4 && best.a > 0; ++iter) {
        const float b = static_cast<float>(best.b);
        const AffineCandidate c = solve_affine(n, sx, sxx, affine_sums(x, n, nmax, b, static_cast<float>(1.0 / best.a)));
        if (!(c.sse < best.sse)) break;
        best = c;
    }
    return {static_cast<float>(best.a), static_cast<float>(-best.b)};
}

float fit_symmetric(const float* x, int n, int nneg, const FitGrid& grid) {
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < n; ++i) {
        if (std::fabs(x[i]) > amax) {
            amax = std::fabs(x[i]);
            max = x[i];
        }
    }
    if (!(amax >= kZeroEps) || !std::isfinite(amax)) return 0.0f;

    // Maximising sxl^2/sll minimises the error of the least-squares scale sxl/sll.
    double best_ratio = -1.0, best_scale = 0.0;
    auto consider = [&](const QuantSums& s) {
        if (s.sll <= 0) return false;
        const double ratio = static_cast<double>(s.sxl) * s.sxl / s.sll;
        if (!(ratio > best_ratio)) return false;
        best_ratio = ratio;
        best_scale = s.sxl / static_cast<double>(s.sll);
        return true;
    };
    for (int k = 0; k < grid.count; ++k) {
        const float t = grid.first + grid.step * static_cast<float>(k);
        consider(symmetric_sums(x, n, nneg, -(static_cast<float>(nneg) + t) / max));     // max -> -nneg side
        consider(symmetric_sums(x, n, nneg, (static_cast<float>(nneg - 1) + t) / max));  // max -> +side
    }
    for (int iter = 0; iter < 4 && best_scale != 0.0; ++iter) {
        if (!consider(symmetric_sums(x, n, nneg, static_cast<float>(1.0 / best_scale)))) break;
    }
    return static_cast<float>(best_scale);
}

void quantize_affine_block(const float* x, int sub_len, int nmax, int lmax, const FitGrid& grid, AffineBlock& out) {
    const int nsub = QK_K / sub_len;
    AffineFit fits[16];
    float max_scale = 0.0f, max_min = 0.0f;
    for (int j = 0; j < nsub; ++j) {
        fits[j] = fit_affine(x + j * sub_len, sub_len, nmax, grid);
        if (fits[j].scale > max_scale) max_scale = fits[j].scale;
        if (fits[j].min > max_min) max_min = fits[j].min;
    }
    float d_starts[kCoarseCandidates], m_starts[kCoarseCandidates];
    const int nd = start_scales(max_scale / static_cast<float>(lmax), d_starts);
    const int nm = start_scales(max_min / static_cast<float>(lmax), m_starts);

    out = AffineBlock{};
    double best = kInf;
    AffineBlock trial;
    for (int i = 0; i < nd; ++i) {
        for (int k = 0; k < nm; ++k) {
            const double e = affine_passes(x, sub_len, nmax, lmax, fits, d_starts[i], m_starts[k], trial);
            if (e < best) {
                best = e;
                out = trial;
            }
        }
    }
}

void quantize_symmetric_block(const float* x, int nneg, int lmin, int lmax, const FitGrid& grid,
                              SymmetricBlock& out) {
    float scales[QK_K / 16];
    float big = 0.0f;
    for (int j = 0; j < QK_K / 16; ++j) {
        scales[j] = fit_symmetric(x + j * 16, 16, nneg, grid);
        if (std::fabs(scales[j]) > std::fabs(big)) big = scales[j];
    }
    out = SymmetricBlock{};
    if (!(std::fabs(big) >= kZeroEps)) return;
    // The largest scale takes the negative end of the integer range, which is one longer.
    float d_starts[kCoarseCandidates];
    const int nd = start_scales(big / static_cast<float>(lmin), d_starts);

    double best = kInf;
    SymmetricBlock trial;
    for (int i = 0; i < nd; ++i) {
        const double e = symmetric_passes(x, nneg, lmin, lmax, scales, d_starts[i], trial);
        if (e < best) {
            best = e;
            out = trial;
        }
    }
}

}  // namespace tessel::quant::kq

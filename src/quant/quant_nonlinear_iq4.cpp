// IQ4_NL / IQ4_XS block quantizers: tessel's own scale search over the non-linear codebook.
//
// A group of 32 values x is stored as indices q into kValuesIQ4NL and a scale d, x ~ d*v[q].
// For a fixed scale the best indices are the nearest codebook entries to x/d; for fixed
// indices the best scale is the least-squares one, sum(v*x)/sum(v*v). The search alternates
// the two, starting from candidate scales that put the group's extreme element on or near
// either end of the (asymmetric) codebook, and scores every candidate by the plain squared
// error of the reconstruction the dequantizer will produce (fp16 or 6-bit-quantized scale
// included), so it minimises RMSE directly. Non-finite inputs are treated as 0 by the search,
// so a NaN or Inf cannot spoil the scale of the other elements of its (super-)block.
#include <algorithm>
#include <array>
#include <cmath>

#include "core/fp16.hpp"
#include "quant/quant_nonlinear.hpp"

namespace tessel::quant {
namespace {

constexpr int kGroup = 32;
constexpr int kCodes = 16;
constexpr int kSubBlocks = QK_K / kGroup;  // IQ4_XS: 8 groups per super-block

/// Thresholds between consecutive codebook entries (half-integers, exact in float).
constexpr std::array<float, kCodes - 1> make_midpoints() {
    std::array<float, kCodes - 1> m{};
    for (int k = 0; k < kCodes - 1; ++k) m[k] = 0.5f * static_cast<float>(kValuesIQ4NL[k] + kValuesIQ4NL[k + 1]);
    return m;
}
constexpr std::array<float, kCodes - 1> kMidpoints = make_midpoints();

/// Candidate positions of the extreme element, in codebook units, around each end of the
/// codebook (-127 and 113): anchor + kOffsetStep * t for t in [-kOffsets, kOffsets].
constexpr int kOffsets = 20;
constexpr float kOffsetStep = 1.0f;
/// Candidates refined (alternating assignment and least squares) after the first scoring.
constexpr int kRefined = 4;
/// Assignment / least-squares rounds per refined candidate.
constexpr int kRounds = 3;

double sum_of_squares(const float* x, int n) {
    double s = 0;
    for (int j = 0; j < n; ++j) s += static_cast<double>(x[j]) * x[j];
    return s;
}

/// The element of largest magnitude with its sign (NaNs skipped); 0 for an all-zero group.
float signed_extreme(const float* x, int n) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; ++j) {
        const float a = std::fabs(x[j]);
        if (a > amax) {
            amax = a;
            max = x[j];
        }
    }
    return max;
}

/// Nearest-code indices of the group for inverse scale id.
void assign_codes(const float* x, float id, uint8_t* idx) {
    for (int j = 0; j < kGroup; ++j) idx[j] = static_cast<uint8_t>(iq4nl_nearest_index(x[j] * id));
}

struct LeastSquares {
    float scale;     ///< sum(v*x) / sum(v*v), 0 when sum(v*v) is 0
    double residual; ///< sum(x*x) - scale*sum(v*x): squared error with the unrounded scale
};

/// Least-squares scale for fixed indices.
LeastSquares fit_scale(const float* x, const uint8_t* idx, double sumx2) {
    double sqx = 0, sq2 = 0;
    for (int j = 0; j < kGroup; ++j) {
        const double v = kValuesIQ4NL[idx[j]];
        sqx += v * x[j];
        sq2 += v * v;
    }
    if (!(sq2 > 0)) return {0.0f, sumx2};
    return {static_cast<float>(sqx / sq2), sumx2 - sqx * sqx / sq2};
}

/// Squared error of the reconstruction d * v[idx] with the nearest codes for scale d, as the
/// dequantizer computes it (float product); writes the codes.
double reconstruction_error(const float* x, float d, uint8_t* idx) {
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    double err = 0;
    for (int j = 0; j < kGroup; ++j) {
        const int q = iq4nl_nearest_index(x[j] * id);
        idx[j] = static_cast<uint8_t>(q);
        const double e = static_cast<double>(d * static_cast<float>(kValuesIQ4NL[q])) - x[j];
        err += e * e;
    }
    return err;
}

float round_to_fp16(float d) { return fp16_to_fp32(fp32_to_fp16(d)); }

struct GroupFit {
    float scale = 0.0f;  ///< best scale (fp16-representable when the search rounds)
    double error = 0;    ///< squared error of the group with that scale
    uint8_t idx[kGroup] = {};
};

/// Copies n values, replacing NaN and Inf by 0.
void copy_finite(const float* x, int n, float* out) {
    for (int j = 0; j < n; ++j) out[j] = std::isfinite(x[j]) ? x[j] : 0.0f;
}

/// Best scale for one group of 32 finite values. With `fp16_scale`, every scale tried is first
/// rounded to fp16 (IQ4_NL stores it so); without, scales stay float (IQ4_XS sub-blocks,
/// quantized later).
GroupFit search_group(const float* x, bool fp16_scale) {
    GroupFit best;
    const double sumx2 = sum_of_squares(x, kGroup);
    best.error = sumx2;  // scale 0: every element reconstructs as 0
    best.scale = 0.0f;
    for (int j = 0; j < kGroup; ++j) best.idx[j] = static_cast<uint8_t>(iq4nl_nearest_index(0.0f));
    const float max = signed_extreme(x, kGroup);
    if (max == 0.0f || !std::isfinite(max)) return best;

    // First pass: score each candidate by the residual of its least-squares scale.
    struct Candidate { float scale; double residual; };
    std::array<Candidate, 2 * (2 * kOffsets + 1)> cands{};
    int n_cands = 0;
    uint8_t idx[kGroup];
    for (const float anchor : {static_cast<float>(kValuesIQ4NL[0]), static_cast<float>(kValuesIQ4NL[kCodes - 1])}) {
        for (int t = -kOffsets; t <= kOffsets; ++t) {
            assign_codes(x, (anchor + kOffsetStep * static_cast<float>(t)) / max, idx);
            const LeastSquares ls = fit_scale(x, idx, sumx2);
            if (ls.scale != 0.0f && std::isfinite(ls.scale)) cands[n_cands++] = {ls.scale, ls.residual};
        }
    }
    const int n_keep = std::min(n_cands, kRefined);
    std::partial_sort(cands.begin(), cands.begin() + n_keep, cands.begin() + n_cands,
                      [](const Candidate& a, const Candidate& b) { return a.residual < b.residual; });

    // Second pass: alternate (rounded) scale -> nearest codes -> least squares.
    for (int c = 0; c < n_keep; ++c) {
        float d = cands[c].scale;
        for (int round = 0; round < kRounds; ++round) {
            const float stored = fp16_scale ? round_to_fp16(d) : d;
            const double err = reconstruction_error(x, stored, idx);
            if (err < best.error) {
                best.error = err;
                best.scale = stored;
                std::copy(idx, idx + kGroup, best.idx);
            }
            const LeastSquares ls = fit_scale(x, idx, sumx2);
            if (ls.scale == d || ls.scale == 0.0f) break;
            d = ls.scale;
        }
    }
    return best;
}

/// Packs 32 codes into split-half nibbles (element j in the low nibble of byte j, element
/// j+16 in its high nibble).
void pack_group(const uint8_t* idx, uint8_t* qs) {
    for (int j = 0; j < kGroup / 2; ++j) qs[j] = static_cast<uint8_t>(idx[j] | (idx[j + kGroup / 2] << 4));
}

// ---------------------------------------------------------------- IQ4_XS super-block scale

/// Relative perturbations of the super-block scale tried around each base candidate.
constexpr int kSuperSteps = 3;
constexpr float kSuperStep = 0.012f;

struct SubChoice {
    int level = 0;  ///< 6-bit signed level l in [-32, 31]
    double error = 0;
    uint8_t idx[kGroup] = {};
};

int clamp_level(int l) { return std::clamp(l, -32, 31); }

/// Best 6-bit level for one sub-block under super-block scale d: the levels nearest to the
/// sub-block's own best scale, scored with the scale d*l the dequantizer uses.
SubChoice choose_level(const float* x, float d, float scale, double sumx2) {
    SubChoice best;
    best.error = sumx2;  // level 0
    for (int j = 0; j < kGroup; ++j) best.idx[j] = static_cast<uint8_t>(iq4nl_nearest_index(0.0f));
    const float ratio = scale / d;
    if (!std::isfinite(ratio)) return best;
    const int centre = clamp_level(static_cast<int>(std::lround(std::clamp(ratio, -40.0f, 40.0f))));
    uint8_t idx[kGroup];
    for (int l = clamp_level(centre - 1); l <= clamp_level(centre + 1); ++l) {
        if (l == 0) continue;
        const float dl = d * static_cast<float>(l);
        const double err = reconstruction_error(x, dl, idx);
        if (err < best.error) {
            best.error = err;
            best.level = l;
            std::copy(idx, idx + kGroup, best.idx);
        }
    }
    return best;
}

}  // namespace

int iq4nl_nearest_index(float t) {
    int i = 0;
    for (const float m : kMidpoints) i += t > m ? 1 : 0;
    return i;
}

block_iq4_nl quantize_block_iq4_nl(const float* src) {
    float x[kGroup];
    copy_finite(src, kGroup, x);
    const GroupFit fit = search_group(x, true);
    block_iq4_nl b;
    b.d = fp32_to_fp16(fit.scale);
    pack_group(fit.idx, b.qs);
    return b;
}

block_iq4_xs quantize_block_iq4_xs(const float* src) {
    float x[QK_K];
    copy_finite(src, QK_K, x);
    float scales[kSubBlocks];
    double sumx2[kSubBlocks];
    float max_scale = 0.0f;
    for (int ib = 0; ib < kSubBlocks; ++ib) {
        scales[ib] = search_group(x + ib * kGroup, false).scale;
        sumx2[ib] = sum_of_squares(x + ib * kGroup, kGroup);
        if (std::fabs(scales[ib]) > std::fabs(max_scale)) max_scale = scales[ib];
    }

    block_iq4_xs b{};
    SubChoice best_choice[kSubBlocks];
    double best_total = 0;
    for (int ib = 0; ib < kSubBlocks; ++ib) best_total += sumx2[ib];
    float best_d = 0.0f;
    for (int ib = 0; ib < kSubBlocks; ++ib) best_choice[ib] = choose_level(x + ib * kGroup, 0.0f, 0.0f, sumx2[ib]);

    if (max_scale != 0.0f) {
        // The largest sub-block scale lands on level -32 or 31; perturbations trade its
        // accuracy against finer levels for the others.
        for (const float top : {-32.0f, 31.0f}) {
            for (int s = -kSuperSteps; s <= kSuperSteps; ++s) {
                const float d = round_to_fp16(max_scale / top * (1.0f + kSuperStep * static_cast<float>(s)));
                if (d == 0.0f || !std::isfinite(d)) continue;
                SubChoice choice[kSubBlocks];
                double total = 0;
                for (int ib = 0; ib < kSubBlocks && total < best_total; ++ib) {
                    choice[ib] = choose_level(x + ib * kGroup, d, scales[ib], sumx2[ib]);
                    total += choice[ib].error;
                }
                if (total < best_total) {
                    best_total = total;
                    best_d = d;
                    std::copy(choice, choice + kSubBlocks, best_choice);
                }
            }
        }
    }

    b.d = fp32_to_fp16(best_d);
    b.scales_h = 0;
    for (int ib = 0; ib < kSubBlocks; ++ib) {
        const int biased = best_choice[ib].level + 32;  // stored as l + 32 in 0..63
        if (ib % 2 == 0) b.scales_l[ib / 2] = static_cast<uint8_t>(biased & 0x0f);
        else b.scales_l[ib / 2] |= static_cast<uint8_t>((biased & 0x0f) << 4);
        b.scales_h |= static_cast<uint16_t>((biased >> 4) << (2 * ib));
        pack_group(best_choice[ib].idx, b.qs + ib * (kGroup / 2));
    }
    return b;
}

}  // namespace tessel::quant

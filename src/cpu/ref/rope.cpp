// Reference kernel for ROPE (semantics and op_params in graph/op.hpp).
//
// For a row x of head dim D at position p, pair j (0 <= j < n_dims/2) is rotated by the angle
//   theta_j = p · freq_base^(-2j/n_dims) / ff_j          (ff = freq factors, 1 without src2)
// interpolated for context extension:
//   theta_j' = freq_scale·theta_j                              when ext_factor == 0
//   theta_j' = freq_scale·theta_j·(1 - mix_j) + theta_j·mix_j  otherwise (YaRN), where
//     mix_j = ext_factor · ramp_j, ramp_j = 1 - clamp((j - lo) / max(0.001, hi - lo), 0, 1),
//     lo = max(0, floor(c(beta_fast))), hi = min(n_dims - 1, ceil(c(beta_slow))),
//     c(b) = n_dims · ln(n_ctx_orig / (2π·b)) / (2 ln freq_base)   (the dim where b rotations
//     fit in the original context),
// and the rotated pair is scaled by m = attn_factor (times 1 + 0.1·ln(1/freq_scale) with YaRN).
// NORM mode pairs elements (2j, 2j+1); NEOX pairs (j, j + n_dims/2). Elements past n_dims are
// copied. Angles, sines and cosines are computed in double from the closed form (not by a
// running product), so this is the exact rotation for float positions.
//
// Threads split rows (head × token × batch); each row is done by one thread.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "core/fp16.hpp"
#include "cpu/ref/attention.hpp"
#include "cpu/ref/tensor_util.hpp"

namespace tessel::cpu::ref {
namespace {

struct RopeConfig {
    int64_t n_dims;
    int32_t mode;
    int32_t n_ctx_orig;
    double freq_base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow;

    explicit RopeConfig(const Tensor& dst)
        : n_dims(dst.op_params[1]),
          mode(dst.op_params[2]),
          n_ctx_orig(dst.op_params[4]),
          freq_base(dst.op_param_f32(5)),
          freq_scale(dst.op_param_f32(6)),
          ext_factor(dst.op_param_f32(7)),
          attn_factor(dst.op_param_f32(8)),
          beta_fast(dst.op_param_f32(9)),
          beta_slow(dst.op_param_f32(10)) {}

    // Pair index where `rotations` full turns fit in the original context.
    double correction_dim(double rotations) const {
        return static_cast<double>(n_dims) * std::log(n_ctx_orig / (rotations * 2.0 * std::numbers::pi)) /
               (2.0 * std::log(freq_base));
    }
};

bool supports_rope(const Tensor& dst) {
    const Tensor* x = dst.src[0];
    const Tensor* pos = dst.src[1];
    const Tensor* ff = dst.src[2];
    if (!x || !pos) return false;
    if (x->type != DType::F32 && x->type != DType::F16) return false;
    if (dst.type != x->type || dst.ne != x->ne) return false;
    if (pos->type != DType::I32 || pos->ne[0] != x->ne[2] || pos->n_rows() != 1) return false;
    const RopeConfig c(dst);
    if (c.mode != kRopeModeNorm && c.mode != kRopeModeNeox) return false;
    if (c.n_dims <= 0 || c.n_dims % 2 != 0 || c.n_dims > x->ne[0]) return false;
    if (ff && (ff->type != DType::F32 || ff->ne[0] < c.n_dims / 2)) return false;
    return true;
}

void store(Tensor& dst, uint8_t* p, float v) {
    if (dst.type == DType::F32)
        *reinterpret_cast<float*>(p) = v;
    else
        *reinterpret_cast<uint16_t*>(p) = fp32_to_fp16(v);
}

void run_rope(Tensor& dst, ThreadContext& ctx) {
    const Tensor& x = *dst.src[0];
    const Tensor& pos = *dst.src[1];
    const Tensor* ff = dst.src[2];
    const RopeConfig c(dst);
    const int64_t D = x.ne[0], H = x.ne[1], T = x.ne[2], half = c.n_dims / 2;

    double lo = 0.0, hi = 0.0;
    if (c.ext_factor != 0.0) {
        lo = std::max(0.0, std::floor(c.correction_dim(c.beta_fast)));
        hi = std::min(static_cast<double>(c.n_dims - 1), std::ceil(c.correction_dim(c.beta_slow)));
    }
    double mscale = c.attn_factor;
    if (c.ext_factor != 0.0) mscale *= 1.0 + 0.1 * std::log(1.0 / c.freq_scale);

    std::vector<double> cos_t(static_cast<size_t>(half)), sin_t(static_cast<size_t>(half));
    std::vector<float> in(static_cast<size_t>(D)), out(static_cast<size_t>(D));
    int64_t cached_token = -1;
    const Range mine = thread_range(x.n_rows(), ctx);
    for (int64_t r = mine.begin; r < mine.end; ++r) {
        const int64_t i1 = r % H, i2 = (r / H) % T, i3 = r / (H * T);
        if (i2 != cached_token) {  // rows of one token share the angles
            cached_token = i2;
            const double p = *reinterpret_cast<const int32_t*>(elem_ptr(pos, i2, 0));
            for (int64_t j = 0; j < half; ++j) {
                const double factor = ff ? *reinterpret_cast<const float*>(elem_ptr(*ff, j, 0)) : 1.0;
                const double extrap = p * std::pow(c.freq_base, -2.0 * static_cast<double>(j) / c.n_dims) / factor;
                double theta = c.freq_scale * extrap;
                if (c.ext_factor != 0.0) {
                    const double y = (static_cast<double>(j) - lo) / std::max(0.001, hi - lo);
                    const double mix = c.ext_factor * (1.0 - std::clamp(y, 0.0, 1.0));
                    theta = theta * (1.0 - mix) + extrap * mix;
                }
                cos_t[j] = std::cos(theta) * mscale;
                sin_t[j] = std::sin(theta) * mscale;
            }
        }
        load_row(x, elem_ptr(x, 0, i1, i2, i3), in.data());
        std::copy(in.begin() + c.n_dims, in.end(), out.begin() + c.n_dims);
        for (int64_t j = 0; j < half; ++j) {
            const int64_t a = c.mode == kRopeModeNeox ? j : 2 * j;
            const int64_t b = c.mode == kRopeModeNeox ? j + half : 2 * j + 1;
            const double x0 = in[a], x1 = in[b];
            out[a] = static_cast<float>(x0 * cos_t[j] - x1 * sin_t[j]);
            out[b] = static_cast<float>(x0 * sin_t[j] + x1 * cos_t[j]);
        }
        uint8_t* row = elem_ptr(dst, 0, i1, i2, i3);
        for (int64_t i = 0; i < D; ++i) store(dst, row + i * dst.nb[0], out[i]);
    }
}

}  // namespace

void register_rope_op(KernelTable& t) { t.set(Op::ROPE, supports_rope, run_rope); }

}  // namespace tessel::cpu::ref

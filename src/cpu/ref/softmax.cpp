// Reference kernel for SOFT_MAX (semantics and op_params in graph/op.hpp).
//
// Row (i1, i2, i3) of x [K, M, H, B] becomes softmax over k of
//   z_k = x_k · scale + slope(i2) · mask[k, i1, i2 % H', i3 % B']
// where slope is the ALiBi slope of head i2 of H (1 when max_bias is 0) and mask [K, M', H', B']
// (M' >= M) is optional; a -inf in the mask always masks (even if the slope underflows).
// An optional sink s = sinks[i2] (not scaled) is one more logit of the row: it enters the
// maximum and the normaliser but yields no output. All arithmetic is in double.
// A row whose logits are all -inf (fully masked, no sink) produces zeros, not NaN.
//
// Threads split rows; each row is done by one thread.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "cpu/ref/attention.hpp"
#include "cpu/ref/tensor_util.hpp"

namespace tessel::cpu::ref {
namespace {

bool supports_soft_max(const Tensor& dst) {
    const Tensor* x = dst.src[0];
    const Tensor* mask = dst.src[1];
    const Tensor* sinks = dst.src[2];
    if (!x || x->type != DType::F32 || dst.type != DType::F32 || dst.ne != x->ne) return false;
    if (mask) {
        if (mask->type != DType::F32 && mask->type != DType::F16) return false;
        if (mask->ne[0] != x->ne[0] || mask->ne[1] < x->ne[1]) return false;
        if (x->ne[2] % mask->ne[2] != 0 || x->ne[3] % mask->ne[3] != 0) return false;
    }
    if (sinks && (sinks->type != DType::F32 || sinks->ne[0] != x->ne[2] || sinks->n_rows() != 1)) return false;
    return true;
}

void run_soft_max(Tensor& dst, ThreadContext& ctx) {
    const Tensor& x = *dst.src[0];
    const Tensor* mask = dst.src[1];
    const Tensor* sinks = dst.src[2];
    const double scale = dst.op_param_f32(0);
    const float max_bias = dst.op_param_f32(1);
    const int64_t K = x.ne[0], M = x.ne[1], H = x.ne[2];
    const double neg_inf = -std::numeric_limits<double>::infinity();

    std::vector<float> xrow(static_cast<size_t>(K)), mrow(static_cast<size_t>(K));
    std::vector<double> z(static_cast<size_t>(K));
    const Range mine = thread_range(x.n_rows(), ctx);
    for (int64_t r = mine.begin; r < mine.end; ++r) {
        const int64_t i1 = r % M, i2 = (r / M) % H, i3 = r / (M * H);
        load_row(x, elem_ptr(x, 0, i1, i2, i3), xrow.data());
        if (mask) load_row(*mask, elem_ptr(*mask, 0, i1, i2 % mask->ne[2], i3 % mask->ne[3]), mrow.data());
        const double slope = alibi_slope(i2, H, max_bias);

        double max = neg_inf;
        for (int64_t k = 0; k < K; ++k) {
            z[k] = xrow[k] * scale;
            if (mask) z[k] = std::isinf(mrow[k]) && mrow[k] < 0 ? neg_inf : z[k] + slope * mrow[k];
            max = std::max(max, z[k]);
        }
        const double sink = sinks ? *reinterpret_cast<const float*>(elem_ptr(*sinks, i2, 0)) : neg_inf;
        max = std::max(max, sink);

        auto* out = static_cast<uint8_t*>(elem_ptr(dst, 0, i1, i2, i3));
        if (max == neg_inf) {  // every logit is -inf: nothing to normalise
            for (int64_t k = 0; k < K; ++k) *reinterpret_cast<float*>(out + k * dst.nb[0]) = 0.0f;
            continue;
        }
        double sum = sinks ? std::exp(sink - max) : 0.0;
        for (int64_t k = 0; k < K; ++k) {
            z[k] = std::exp(z[k] - max);
            sum += z[k];
        }
        for (int64_t k = 0; k < K; ++k) *reinterpret_cast<float*>(out + k * dst.nb[0]) = static_cast<float>(z[k] / sum);
    }
}

}  // namespace

void register_soft_max_op(KernelTable& t) { t.set(Op::SOFT_MAX, supports_soft_max, run_soft_max); }

}  // namespace tessel::cpu::ref

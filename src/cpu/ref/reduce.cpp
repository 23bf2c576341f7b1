// Reference kernels for row reductions and normalisation: SUM_ROWS, MEAN, ARGMAX, ARGSORT,
// CUMSUM, NORM, RMS_NORM, L2_NORM (semantics in graph/op.hpp).
//
// Every op works on rows (ne[0]) of a F32/F16/BF16 source, which may be strided; each thread
// owns whole rows. Sums over a row accumulate in double and are rounded to float once.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "cpu/ref/ref.hpp"
#include "cpu/ref/tensor_util.hpp"

namespace tessel::cpu::ref {
namespace {

bool floats(const Tensor* t) { return t && is_float_type(t->type); }

// Row r of a float-type tensor as doubles.
void load_row(const Tensor& t, const RowIndex& i, std::vector<double>& out) {
    out.resize(static_cast<size_t>(t.ne[0]));
    for (int64_t i0 = 0; i0 < t.ne[0]; ++i0) out[static_cast<size_t>(i0)] = get_f32(t, i0, i.i1, i.i2, i.i3);
}

// ---- SUM_ROWS / MEAN ---------------------------------------------------------------------------

bool sum_supports(const Tensor& dst) {
    const Tensor* a = dst.src[0];
    return floats(a) && is_float_type(dst.type) && dst.ne[0] == 1 && dst.ne[1] == a->ne[1] && dst.ne[2] == a->ne[2] &&
           dst.ne[3] == a->ne[3];
}

void sum_run(Tensor& dst, ThreadContext& ctx) {
    const Tensor& a = *dst.src[0];
    const Range rows = thread_range(dst.n_rows(), ctx);
    for (int64_t r = rows.begin; r < rows.end; ++r) {
        const RowIndex d = row_index(dst, r);
        double sum = 0.0;
        for (int64_t i0 = 0; i0 < a.ne[0]; ++i0) sum += get_f32(a, i0, d.i1, d.i2, d.i3);
        if (dst.op == Op::MEAN) sum /= static_cast<double>(a.ne[0]);
        set_f32(dst, 0, d.i1, d.i2, d.i3, static_cast<float>(sum));
    }
}

// ---- ARGMAX ------------------------------------------------------------------------------------
// a [K, R, B2, B3] -> I32 [R, B2, B3]: index of the first largest value of each row. NaN never
// compares larger, so it is chosen only when it is element 0 and nothing else is larger.

bool argmax_supports(const Tensor& dst) {
    const Tensor* a = dst.src[0];
    return floats(a) && dst.type == DType::I32 && dst.ne[0] == a->ne[1] && dst.ne[1] == a->ne[2] &&
           dst.ne[2] == a->ne[3] && dst.ne[3] == 1 && a->ne[0] <= INT32_MAX;
}

void argmax_run(Tensor& dst, ThreadContext& ctx) {
    const Tensor& a = *dst.src[0];
    const Range rows = thread_range(a.n_rows(), ctx);
    for (int64_t r = rows.begin; r < rows.end; ++r) {
        const RowIndex s = row_index(a, r);
        int32_t best = 0;
        float best_value = get_f32(a, 0, s.i1, s.i2, s.i3);
        for (int64_t i0 = 1; i0 < a.ne[0]; ++i0) {
            const float v = get_f32(a, i0, s.i1, s.i2, s.i3);
            if (v > best_value) {
                best_value = v;
                best = static_cast<int32_t>(i0);
            }
        }
        std::memcpy(plain_ptr(dst, s.i1, s.i2, s.i3, 0), &best, sizeof best);
    }
}

// ---- ARGSORT -----------------------------------------------------------------------------------
// Stable: equal values keep their index order in both directions. NaN sorts as the largest
// value (last ascending, first descending), which keeps the order strict and weak.

bool sorts_before(double x, double y) { return x < y || (std::isnan(y) && !std::isnan(x)); }

bool argsort_supports(const Tensor& dst) {
    const Tensor* a = dst.src[0];
    return floats(a) && dst.type == DType::I32 && same_shape(*a, dst) && a->ne[0] <= INT32_MAX &&
           (dst.op_params[0] == 0 || dst.op_params[0] == 1);
}

void argsort_run(Tensor& dst, ThreadContext& ctx) {
    const Tensor& a = *dst.src[0];
    const bool descending = dst.op_params[0] == 1;
    std::vector<double> values;
    std::vector<int32_t> order(static_cast<size_t>(a.ne[0]));
    const Range rows = thread_range(dst.n_rows(), ctx);
    for (int64_t r = rows.begin; r < rows.end; ++r) {
        const RowIndex d = row_index(dst, r);
        load_row(a, d, values);
        std::iota(order.begin(), order.end(), 0);
        if (descending)
            std::stable_sort(order.begin(), order.end(), [&](int32_t x, int32_t y) { return sorts_before(values[y], values[x]); });
        else
            std::stable_sort(order.begin(), order.end(), [&](int32_t x, int32_t y) { return sorts_before(values[x], values[y]); });
        for (int64_t i0 = 0; i0 < dst.ne[0]; ++i0)
            std::memcpy(plain_ptr(dst, i0, d.i1, d.i2, d.i3), &order[static_cast<size_t>(i0)], sizeof(int32_t));
    }
}

// ---- CUMSUM ------------------------------------------------------------------------------------

bool same_shape_floats(const Tensor& dst) {
    const Tensor* a = dst.src[0];
    return floats(a) && is_float_type(dst.type) && same_shape(*a, dst);
}

void cumsum_run(Tensor& dst, ThreadContext& ctx) {
    const Tensor& a = *dst.src[0];
    const Range rows = thread_range(dst.n_rows(), ctx);
    for (int64_t r = rows.begin; r < rows.end; ++r) {
        const RowIndex d = row_index(dst, r);
        double sum = 0.0;
        for (int64_t i0 = 0; i0 < dst.ne[0]; ++i0) {
            sum += get_f32(a, i0, d.i1, d.i2, d.i3);
            set_f32(dst, i0, d.i1, d.i2, d.i3, static_cast<float>(sum));
        }
    }
}

// ---- NORM / RMS_NORM / L2_NORM -----------------------------------------------------------------

bool norm_supports(const Tensor& dst) { return same_shape_floats(dst) && dst.op_param_f32(0) >= 0.0f; }

void norm_run(Tensor& dst, ThreadContext& ctx) {
    const Tensor& a = *dst.src[0];
    const double eps = dst.op_param_f32(0);
    const double n = static_cast<double>(a.ne[0]);
    std::vector<double> x;
    const Range rows = thread_range(dst.n_rows(), ctx);
    for (int64_t r = rows.begin; r < rows.end; ++r) {
        const RowIndex d = row_index(dst, r);
        load_row(a, d, x);
        double shift = 0.0, divisor = 1.0;  // y = (x - shift) / divisor
        if (dst.op == Op::NORM) {
            double sum = 0.0;
            for (double v : x) sum += v;
            shift = sum / n;
            double var = 0.0;
            for (double v : x) var += (v - shift) * (v - shift);
            divisor = std::sqrt(var / n + eps);
        } else {
            double sum_sq = 0.0;
            for (double v : x) sum_sq += v * v;
            divisor = dst.op == Op::RMS_NORM ? std::sqrt(sum_sq / n + eps) : std::max(std::sqrt(sum_sq), eps);
        }
        for (int64_t i0 = 0; i0 < dst.ne[0]; ++i0)
            set_f32(dst, i0, d.i1, d.i2, d.i3, static_cast<float>((x[static_cast<size_t>(i0)] - shift) / divisor));
    }
}

}  // namespace

void register_reduce_ops(KernelTable& t) {
    t.set(Op::SUM_ROWS, sum_supports, sum_run);
    t.set(Op::MEAN, sum_supports, sum_run);
    t.set(Op::ARGMAX, argmax_supports, argmax_run);
    t.set(Op::ARGSORT, argsort_supports, argsort_run);
    t.set(Op::CUMSUM, same_shape_floats, cumsum_run);
    t.set(Op::NORM, norm_supports, norm_run);
    t.set(Op::RMS_NORM, norm_supports, norm_run);
    t.set(Op::L2_NORM, norm_supports, norm_run);
}

}  // namespace tessel::cpu::ref

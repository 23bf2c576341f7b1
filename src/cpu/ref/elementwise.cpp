// Reference kernels for element-wise ops: ADD, SUB, MUL, DIV, ADD_ID, SCALE, CLAMP, SQR, SQRT, LOG,
// UNARY, GLU (semantics in graph/op.hpp).
//
// Sources and destination may be F32, F16 or BF16 (read and written through float) and may be
// strided. Arithmetic ops (+ - * /, scale, clamp, square) are computed in float, as the field
// does; transcendental functions (sqrt, log, the UNARY and GLU functions) are evaluated in
// double and rounded once to float, so they are the most accurate float answer available.
#include <algorithm>
#include <cmath>
#include <string>

#include "cpu/ref/ref.hpp"
#include "cpu/ref/tensor_util.hpp"
#include "tessel/errors.hpp"

namespace tessel::cpu::ref {
namespace {

// ---- scalar functions (double in, double out) --------------------------------------------------

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double silu(double x) { return x * sigmoid(x); }
// 0.5 x (1 + tanh z) with z = √(2/π) (x + 0.044715 x³), written as x · sigmoid(2z), which is the
// same function without the cancellation of 1 + tanh z for very negative x.
double gelu_tanh(double x) {
    const double sqrt_2_over_pi = 0.79788456080286535588;
    const double z = sqrt_2_over_pi * (x + 0.044715 * x * x * x);
    return x * sigmoid(2.0 * z);
}
// 0.5 x (1 + erf(x / √2)) = 0.5 x erfc(-x / √2) (no cancellation for very negative x).
double gelu_erf(double x) { return 0.5 * x * std::erfc(-x * 0.70710678118654752440); }
double gelu_quick(double x) { return x * sigmoid(1.702 * x); }
double softplus(double x) { return std::max(x, 0.0) + std::log1p(std::exp(-std::fabs(x))); }

double unary_value(UnaryOp op, double x) {
    switch (op) {
        case UnaryOp::SILU: return silu(x);
        case UnaryOp::GELU: return gelu_tanh(x);
        case UnaryOp::GELU_ERF: return gelu_erf(x);
        case UnaryOp::GELU_QUICK: return gelu_quick(x);
        case UnaryOp::SIGMOID: return sigmoid(x);
        case UnaryOp::NEG: return -x;
        case UnaryOp::EXP: return std::exp(x);
        case UnaryOp::SOFTPLUS: return softplus(x);
        case UnaryOp::TANH: return std::tanh(x);
        case UnaryOp::ABS: return std::fabs(x);
        case UnaryOp::RELU: return x > 0.0 ? x : 0.0;
        default: return x;  // rejected by supports()
    }
}

bool floats(const Tensor* t) { return t && is_float_type(t->type); }

// ---- ADD / SUB / MUL / DIV ---------------------------------------------------------------------

bool binary_supports(const Tensor& dst) {
    const Tensor* a = dst.src[0];
    const Tensor* b = dst.src[1];
    if (!floats(a) || !floats(b) || !is_float_type(dst.type) || !same_shape(*a, dst)) return false;
    for (int d = 0; d < kMaxDims; ++d)
        if (a->ne[d] % b->ne[d] != 0) return false;
    return true;
}

float binary_value(Op op, float x, float y) {
    switch (op) {
        case Op::ADD: return x + y;
        case Op::SUB: return x - y;
        case Op::MUL: return x * y;
        default: return x / y;  // DIV
    }
}

void binary_run(Tensor& dst, ThreadContext& ctx) {
    const Tensor& a = *dst.src[0];
    const Tensor& b = *dst.src[1];
    const Range rows = thread_range(dst.n_rows(), ctx);
    for (int64_t r = rows.begin; r < rows.end; ++r) {
        const RowIndex d = row_index(dst, r);
        const int64_t j1 = d.i1 % b.ne[1], j2 = d.i2 % b.ne[2], j3 = d.i3 % b.ne[3];
        for (int64_t i0 = 0; i0 < dst.ne[0]; ++i0) {
            const float x = get_f32(a, i0, d.i1, d.i2, d.i3);
            const float y = get_f32(b, i0 % b.ne[0], j1, j2, j3);
            set_f32(dst, i0, d.i1, d.i2, d.i3, binary_value(dst.op, x, y));
        }
    }
}

// ---- ADD_ID ------------------------------------------------------------------------------------
// a [K, E_used, T, B], bias [K, E], ids I32 [E_used, T, B]: dst[:, e, t] = a[:, e, t] + bias[:, ids[e, t]].

bool add_id_supports(const Tensor& dst) {
    const Tensor* a = dst.src[0];
    const Tensor* bias = dst.src[1];
    const Tensor* ids = dst.src[2];
    return floats(a) && floats(bias) && ids && ids->type == DType::I32 && is_float_type(dst.type) &&
           same_shape(*a, dst) && bias->ne[0] == a->ne[0] && bias->ne[2] == 1 && bias->ne[3] == 1 &&
           ids->ne[0] == a->ne[1] && ids->ne[1] == a->ne[2] && ids->ne[2] == a->ne[3] && ids->ne[3] == 1;
}

void add_id_run(Tensor& dst, ThreadContext& ctx) {
    const Tensor& a = *dst.src[0];
    const Tensor& bias = *dst.src[1];
    const Tensor& ids = *dst.src[2];
    const Range rows = thread_range(dst.n_rows(), ctx);
    for (int64_t r = rows.begin; r < rows.end; ++r) {
        const RowIndex d = row_index(dst, r);
        const int64_t id = get_id(ids, d.i1, d.i2, d.i3, 0);
        if (id < 0 || id >= bias.ne[1])
            throw Error(ErrorCode::InvalidArgument, "ADD_ID: id " + std::to_string(id) + " in " + describe(ids) +
                                                        " is outside [0, " + std::to_string(bias.ne[1]) + ")");
        for (int64_t i0 = 0; i0 < dst.ne[0]; ++i0)
            set_f32(dst, i0, d.i1, d.i2, d.i3, get_f32(a, i0, d.i1, d.i2, d.i3) + get_f32(bias, i0, id, 0, 0));
    }
}

// ---- one-source maps: SCALE, CLAMP, SQR, SQRT, LOG, UNARY -------------------------------------

bool map_supports(const Tensor& dst) {
    const Tensor* a = dst.src[0];
    if (!floats(a) || !is_float_type(dst.type) || !same_shape(*a, dst)) return false;
    if (dst.op == Op::UNARY) return dst.op_params[0] >= 0 && dst.op_params[0] < static_cast<int32_t>(UnaryOp::COUNT_);
    return true;
}

float map_value(const Tensor& dst, float x) {
    switch (dst.op) {
        case Op::SCALE: return x * dst.op_param_f32(0) + dst.op_param_f32(1);
        case Op::CLAMP: return std::min(std::max(x, dst.op_param_f32(0)), dst.op_param_f32(1));
        case Op::SQR: return x * x;
        case Op::SQRT: return static_cast<float>(std::sqrt(static_cast<double>(x)));
        case Op::LOG: return static_cast<float>(std::log(static_cast<double>(x)));
        default: return static_cast<float>(unary_value(static_cast<UnaryOp>(dst.op_params[0]), x));  // UNARY
    }
}

void map_run(Tensor& dst, ThreadContext& ctx) {
    const Tensor& a = *dst.src[0];
    const Range rows = thread_range(dst.n_rows(), ctx);
    for (int64_t r = rows.begin; r < rows.end; ++r) {
        const RowIndex d = row_index(dst, r);
        for (int64_t i0 = 0; i0 < dst.ne[0]; ++i0)
            set_f32(dst, i0, d.i1, d.i2, d.i3, map_value(dst, get_f32(a, i0, d.i1, d.i2, d.i3)));
    }
}

// ---- GLU ---------------------------------------------------------------------------------------
// One source [2K, ...]: x is the first half and the gate g the second (swapped: the reverse).
// Two sources a, b [K, ...]: x = a, g = b. Result f(x) * g; SWIGLU_OAI clamps first:
// x = min(x, limit), g = clamp(g, -limit, limit), result = x * sigmoid(alpha * x) * (g + 1).

bool glu_supports(const Tensor& dst) {
    const Tensor* a = dst.src[0];
    const Tensor* b = dst.src[1];
    const int32_t op = dst.op_params[0];
    if (!floats(a) || !is_float_type(dst.type) || op < 0 || op >= static_cast<int32_t>(GluOp::COUNT_)) return false;
    if (b) return floats(b) && same_shape(*a, *b) && same_shape(*a, dst);
    return a->ne[0] == 2 * dst.ne[0] && a->ne[1] == dst.ne[1] && a->ne[2] == dst.ne[2] && a->ne[3] == dst.ne[3];
}

void glu_run(Tensor& dst, ThreadContext& ctx) {
    const Tensor& a = *dst.src[0];
    const Tensor* b = dst.src[1];
    const auto op = static_cast<GluOp>(dst.op_params[0]);
    const bool swapped = dst.op_params[1] != 0;
    const double alpha = dst.op_param_f32(2);
    const double limit = dst.op_param_f32(3);
    const int64_t k = dst.ne[0];
    // Offsets of x and g within a's row (one-source form).
    const int64_t x_off = b ? 0 : (swapped ? k : 0);
    const int64_t g_off = b ? 0 : (swapped ? 0 : k);
    const Tensor& gate_src = b ? *b : a;
    const Range rows = thread_range(dst.n_rows(), ctx);
    for (int64_t r = rows.begin; r < rows.end; ++r) {
        const RowIndex d = row_index(dst, r);
        for (int64_t i0 = 0; i0 < k; ++i0) {
            double x = get_f32(a, i0 + x_off, d.i1, d.i2, d.i3);
            double g = get_f32(gate_src, i0 + g_off, d.i1, d.i2, d.i3);
            double y;
            switch (op) {
                case GluOp::SWIGLU: y = silu(x) * g; break;
                case GluOp::GEGLU: y = gelu_tanh(x) * g; break;
                default:  // SWIGLU_OAI
                    x = std::min(x, limit);
                    g = std::clamp(g, -limit, limit);
                    y = x * sigmoid(alpha * x) * (g + 1.0);
                    break;
            }
            set_f32(dst, i0, d.i1, d.i2, d.i3, static_cast<float>(y));
        }
    }
}

}  // namespace

void register_elementwise_ops(KernelTable& t) {
    for (Op op : {Op::ADD, Op::SUB, Op::MUL, Op::DIV}) t.set(op, binary_supports, binary_run);
    t.set(Op::ADD_ID, add_id_supports, add_id_run);
    for (Op op : {Op::SCALE, Op::CLAMP, Op::SQR, Op::SQRT, Op::LOG, Op::UNARY}) t.set(op, map_supports, map_run);
    t.set(Op::GLU, glu_supports, glu_run);
}

}  // namespace tessel::cpu::ref

#include "graph/builder.hpp"

#include "tessel/errors.hpp"

namespace tessel::build {
namespace {

[[noreturn]] void fail(Op op, const std::string& what) {
    throw Error(ErrorCode::InvalidArgument, std::string(op_name(op)) + ": " + what);
}

bool can_broadcast(const Tensor& a, const Tensor& b) {
    for (int d = 0; d < kMaxDims; ++d)
        if (a.ne[d] % b.ne[d] != 0) return false;
    return true;
}

Tensor* binary(Graph& g, Op op, Tensor* a, Tensor* b) {
    if (!can_broadcast(*a, *b)) fail(op, describe(*b) + " does not broadcast to " + describe(*a));
    if (a->type != DType::F32 && a->type != DType::F16) fail(op, describe(*a) + ": F32 or F16 expected");
    if (b->type != DType::F32 && b->type != DType::F16) fail(op, describe(*b) + ": F32 or F16 expected");
    return g.new_node(op, DType::F32, a->ne, {a, b});
}

}  // namespace

Tensor* add(Graph& g, Tensor* a, Tensor* b) { return binary(g, Op::ADD, a, b); }
Tensor* sub(Graph& g, Tensor* a, Tensor* b) { return binary(g, Op::SUB, a, b); }
Tensor* mul(Graph& g, Tensor* a, Tensor* b) { return binary(g, Op::MUL, a, b); }
Tensor* div(Graph& g, Tensor* a, Tensor* b) { return binary(g, Op::DIV, a, b); }

Tensor* scale(Graph& g, Tensor* a, float s, float b) {
    Tensor* t = g.new_node(Op::SCALE, DType::F32, a->ne, {a});
    t->set_op_param_f32(0, s);
    t->set_op_param_f32(1, b);
    return t;
}

Tensor* unary(Graph& g, Tensor* a, UnaryOp op) {
    if (static_cast<int32_t>(op) < 0 || op >= UnaryOp::COUNT_) fail(Op::UNARY, "unknown unary op");
    Tensor* t = g.new_node(Op::UNARY, DType::F32, a->ne, {a});
    t->op_params[0] = static_cast<int32_t>(op);
    return t;
}

Tensor* rms_norm(Graph& g, Tensor* x, float eps) {
    if (!(eps >= 0.0f)) fail(Op::RMS_NORM, "eps must be >= 0");
    Tensor* t = g.new_node(Op::RMS_NORM, DType::F32, x->ne, {x});
    t->set_op_param_f32(0, eps);
    return t;
}

Tensor* mul_mat(Graph& g, Tensor* w, Tensor* x) {
    if (w->ne[0] != x->ne[0])
        fail(Op::MUL_MAT, "inner dimensions differ: " + describe(*w) + " vs " + describe(*x));
    if (x->ne[2] % w->ne[2] != 0 || x->ne[3] % w->ne[3] != 0)
        fail(Op::MUL_MAT, describe(*w) + " batch dims do not broadcast over " + describe(*x));
    if (x->type != DType::F32) fail(Op::MUL_MAT, describe(*x) + ": F32 activations expected");
    require_supported(w->type, w->name);
    return g.new_node(Op::MUL_MAT, DType::F32, {w->ne[1], x->ne[1], x->ne[2], x->ne[3]}, {w, x});
}

Tensor* get_rows(Graph& g, Tensor* table, Tensor* ids) {
    if (ids->type != DType::I32) fail(Op::GET_ROWS, describe(*ids) + ": I32 row ids expected");
    if (ids->ne[1] != 1 || ids->ne[2] != 1 || ids->ne[3] != 1 || table->ne[2] != 1 || table->ne[3] != 1)
        fail(Op::GET_ROWS, "only a 2-D table and 1-D ids are supported: " + describe(*table) + ", " + describe(*ids));
    require_supported(table->type, table->name);
    return g.new_node(Op::GET_ROWS, DType::F32, {table->ne[0], ids->ne[0], 1, 1}, {table, ids});
}

Tensor* reshape(Graph& g, Tensor* a, std::initializer_list<int64_t> dims) {
    if (!a->is_contiguous()) fail(Op::RESHAPE, describe(*a) + " is not contiguous");
    Tensor shape;
    shape.name = a->name;
    shape.set_shape(a->type, dims);
    if (shape.n_elements() != a->n_elements())
        fail(Op::RESHAPE, describe(*a) + " cannot become " + describe(shape) + ": element counts differ");
    return g.new_view(Op::RESHAPE, a, shape.ne, shape.nb, 0);
}

Tensor* permute(Graph& g, Tensor* a, int ax0, int ax1, int ax2, int ax3) {
    const int axes[kMaxDims] = {ax0, ax1, ax2, ax3};
    bool seen[kMaxDims] = {};
    for (int ax : axes) {
        if (ax < 0 || ax >= kMaxDims || seen[ax]) fail(Op::PERMUTE, "axes must be a permutation of 0..3");
        seen[ax] = true;
    }
    std::array<int64_t, kMaxDims> ne{};
    std::array<uint64_t, kMaxDims> nb{};
    for (int d = 0; d < kMaxDims; ++d) {
        ne[axes[d]] = a->ne[d];
        nb[axes[d]] = a->nb[d];
    }
    Tensor* t = g.new_view(Op::PERMUTE, a, ne, nb, 0);
    for (int d = 0; d < kMaxDims; ++d) t->op_params[d] = axes[d];
    return t;
}

Tensor* transpose(Graph& g, Tensor* a) {
    Tensor* t = permute(g, a, 1, 0, 2, 3);
    t->op = Op::TRANSPOSE;
    return t;
}

Tensor* cont(Graph& g, Tensor* a) { return g.new_node(Op::CONT, a->type, a->ne, {a}); }

}  // namespace tessel::build

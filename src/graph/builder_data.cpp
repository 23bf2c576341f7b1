// Op builders for data movement (GET_ROWS, SET_ROWS, CPY, CONT, DUP, CONCAT, REPEAT, PAD, FILL,
// DIAG, TRI) and views (RESHAPE, VIEW, PERMUTE, TRANSPOSE). Declarations in graph/builder.hpp.
#include <string>

#include "graph/builder.hpp"
#include "quant/quant.hpp"
#include "tessel/errors.hpp"

namespace tessel::build {
namespace {

[[noreturn]] void fail(Op op, const std::string& what) {
    throw Error(ErrorCode::InvalidArgument, std::string(op_name(op)) + ": " + what);
}

bool is_plain(DType t) { return dtype_info(t).block_size == 1; }
bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

void require_float_type(Op op, const Tensor* a) {
    if (!is_float(a->type)) fail(op, describe(*a) + ": F32, F16 or BF16 expected");
}

void require_plain(Op op, const Tensor* a) {
    if (!is_plain(a->type)) fail(op, describe(*a) + ": a plain (not block-quantized) type expected");
}

std::string shape_str(const std::array<int64_t, kMaxDims>& ne) {
    std::string s = "[";
    for (int d = 0; d < kMaxDims; ++d) {
        if (d) s.append(", ");
        s.append(std::to_string(ne[d]));
    }
    s.append("]");
    return s;
}

// Checks that a copy from `src` into something of type dt and shape ne is computable (see cpy()).
void check_copy(Op op, const Tensor* src, DType dt, const std::array<int64_t, kMaxDims>& ne, const std::string& what) {
    const int64_t n = ne[0] * ne[1] * ne[2] * ne[3];
    if (src->n_elements() != n) fail(op, describe(*src) + " and " + what + " differ in element count");
    if (src->type == dt && is_plain(dt)) return;
    if (is_float(src->type) && is_float(dt)) return;
    if (src->ne[0] != ne[0])
        fail(op, describe(*src) + " -> " + what + ": copies involving block types need equal ne[0]");
    if (src->type == dt) return;  // same block type: rows copied as bytes
    if (!quant::has_dequantize(src->type)) fail(op, describe(*src) + ": no conversion from " + dtype_name(src->type));
    if (!quant::has_quantize(dt)) fail(op, what + ": no conversion to " + dtype_name(dt));
}

}  // namespace

// ---- rows -------------------------------------------------------------------------------------

Tensor* get_rows(Graph& g, Tensor* table, Tensor* ids) {
    if (ids->type != DType::I32) fail(Op::GET_ROWS, describe(*ids) + ": I32 row ids expected");
    if (ids->ne[3] != 1 || table->ne[2] != ids->ne[1] || table->ne[3] != ids->ne[2])
        fail(Op::GET_ROWS, "ids " + describe(*ids) + " must be [n, B2, B3] for table " + describe(*table));
    const DType out = table->type == DType::I32 ? DType::I32 : DType::F32;
    if (out != DType::I32) {
        require_supported(table->type, table->name);
        if (!quant::has_dequantize(table->type))
            fail(Op::GET_ROWS, describe(*table) + ": no reference dequantizer for this type");
    }
    return g.new_node(Op::GET_ROWS, out, {table->ne[0], ids->ne[0], ids->ne[1], ids->ne[2]}, {table, ids});
}

Tensor* set_rows(Graph& g, Tensor* dst, Tensor* rows, Tensor* ids) {
    if (rows->type != DType::F32 && rows->type != DType::F16)
        fail(Op::SET_ROWS, describe(*rows) + ": F32 or F16 rows expected");
    if (ids->type != DType::I64 && ids->type != DType::I32)
        fail(Op::SET_ROWS, describe(*ids) + ": I64 or I32 row ids expected");
    if (!quant::has_quantize(dst->type)) fail(Op::SET_ROWS, describe(*dst) + ": no conversion to this type");
    if (dtype_info(dst->type).block_size > 1 && dst->nb[0] != dtype_info(dst->type).block_bytes)
        fail(Op::SET_ROWS, describe(*dst) + ": rows of a block type must be packed");
    if (rows->ne[0] != dst->ne[0] || rows->ne[2] != dst->ne[2] || rows->ne[3] != dst->ne[3])
        fail(Op::SET_ROWS, describe(*rows) + " rows do not fit " + describe(*dst));
    if (ids->ne[0] != rows->ne[1] || rows->ne[2] % ids->ne[1] != 0 || rows->ne[3] % ids->ne[2] != 0 || ids->ne[3] != 1)
        fail(Op::SET_ROWS, "ids " + describe(*ids) + " do not match rows " + describe(*rows));
    Tensor* t = g.new_view(Op::SET_ROWS, dst, dst->ne, dst->nb, 0);
    t->src[0] = dst;
    t->src[1] = rows;
    t->src[2] = ids;
    return t;
}

// ---- copies -----------------------------------------------------------------------------------

Tensor* cpy(Graph& g, Tensor* src, Tensor* dst) {
    check_copy(Op::CPY, src, dst->type, dst->ne, describe(*dst));
    if (!is_plain(dst->type) && dst->nb[0] != dtype_info(dst->type).block_bytes)
        fail(Op::CPY, describe(*dst) + ": rows of a block type must be packed");
    Tensor* t = g.new_view(Op::CPY, dst, dst->ne, dst->nb, 0);
    t->src[0] = src;
    t->src[1] = dst;
    return t;
}

Tensor* cast(Graph& g, Tensor* a, DType type) {
    if (a->ne[0] % dtype_info(type).block_size != 0)
        fail(Op::CPY, describe(*a) + ": ne[0] is not a multiple of the " + dtype_name(type) + " block size");
    check_copy(Op::CPY, a, type, a->ne, std::string(dtype_name(type)) + " " + shape_str(a->ne));
    return g.new_node(Op::CPY, type, a->ne, {a});
}

Tensor* cont(Graph& g, Tensor* a) { return g.new_node(Op::CONT, a->type, a->ne, {a}); }

Tensor* cont(Graph& g, Tensor* a, std::initializer_list<int64_t> dims) {
    Tensor shape;
    shape.name = a->name;
    shape.set_shape(a->type, dims);
    check_copy(Op::CONT, a, a->type, shape.ne, describe(shape));
    return g.new_node(Op::CONT, a->type, shape.ne, {a});
}

Tensor* dup(Graph& g, Tensor* a) { return g.new_node(Op::DUP, a->type, a->ne, {a}); }

// ---- shape building ---------------------------------------------------------------------------

Tensor* concat(Graph& g, Tensor* a, Tensor* b, int dim) {
    if (dim < 0 || dim >= kMaxDims) fail(Op::CONCAT, "dim must be 0..3, got " + std::to_string(dim));
    if (a->type != b->type) fail(Op::CONCAT, describe(*a) + " and " + describe(*b) + " differ in type");
    require_plain(Op::CONCAT, a);
    std::array<int64_t, kMaxDims> ne = a->ne;
    for (int d = 0; d < kMaxDims; ++d) {
        if (d == dim)
            ne[d] = a->ne[d] + b->ne[d];
        else if (a->ne[d] != b->ne[d])
            fail(Op::CONCAT, describe(*a) + " and " + describe(*b) + " differ in dim " + std::to_string(d));
    }
    Tensor* t = g.new_node(Op::CONCAT, a->type, ne, {a, b});
    t->op_params[0] = dim;
    return t;
}

Tensor* repeat(Graph& g, Tensor* a, std::initializer_list<int64_t> dims) {
    Tensor shape;
    shape.name = a->name;
    require_plain(Op::REPEAT, a);
    shape.set_shape(a->type, dims);
    for (int d = 0; d < kMaxDims; ++d)
        if (shape.ne[d] % a->ne[d] != 0) fail(Op::REPEAT, describe(*a) + " does not tile " + shape_str(shape.ne));
    return g.new_node(Op::REPEAT, a->type, shape.ne, {a});
}

Tensor* repeat(Graph& g, Tensor* a, const Tensor* like) {
    return repeat(g, a, {like->ne[0], like->ne[1], like->ne[2], like->ne[3]});
}

Tensor* pad(Graph& g, Tensor* a, int p0, int p1, int p2, int p3) { return pad_ext(g, a, 0, p0, 0, p1, 0, p2, 0, p3); }

Tensor* pad_ext(Graph& g, Tensor* a, int lp0, int rp0, int lp1, int rp1, int lp2, int rp2, int lp3, int rp3) {
    require_plain(Op::PAD, a);
    const int p[2 * kMaxDims] = {lp0, rp0, lp1, rp1, lp2, rp2, lp3, rp3};
    std::array<int64_t, kMaxDims> ne = a->ne;
    for (int d = 0; d < kMaxDims; ++d) {
        if (p[2 * d] < 0 || p[2 * d + 1] < 0) fail(Op::PAD, "padding must be >= 0");
        ne[d] += p[2 * d] + p[2 * d + 1];
    }
    Tensor* t = g.new_node(Op::PAD, a->type, ne, {a});
    for (int i = 0; i < 2 * kMaxDims; ++i) t->op_params[i] = p[i];
    return t;
}

Tensor* fill(Graph& g, Tensor* a, float value) {
    require_float_type(Op::FILL, a);
    Tensor* t = g.new_node(Op::FILL, a->type, a->ne, {a});
    t->set_op_param_f32(0, value);
    return t;
}

Tensor* diag(Graph& g, Tensor* a) {
    require_float_type(Op::DIAG, a);
    if (a->ne[1] != 1) fail(Op::DIAG, describe(*a) + ": ne[1] must be 1");
    return g.new_node(Op::DIAG, a->type, {a->ne[0], a->ne[0], a->ne[2], a->ne[3]}, {a});
}

Tensor* tri(Graph& g, Tensor* a, TriType type) {
    require_float_type(Op::TRI, a);
    if (static_cast<int32_t>(type) < 0 || type >= TriType::COUNT_) fail(Op::TRI, "unknown triangle type");
    if (a->ne[0] != a->ne[1]) fail(Op::TRI, describe(*a) + ": ne[0] and ne[1] must be equal (square)");
    Tensor* t = g.new_node(Op::TRI, a->type, a->ne, {a});
    t->op_params[0] = static_cast<int32_t>(type);
    return t;
}

// ---- views ------------------------------------------------------------------------------------

Tensor* reshape(Graph& g, Tensor* a, std::initializer_list<int64_t> dims) {
    if (!a->is_contiguous()) fail(Op::RESHAPE, describe(*a) + " is not contiguous");
    Tensor shape;
    shape.name = a->name;
    shape.set_shape(a->type, dims);
    if (shape.n_elements() != a->n_elements())
        fail(Op::RESHAPE, describe(*a) + " cannot become " + describe(shape) + ": element counts differ");
    return g.new_view(Op::RESHAPE, a, shape.ne, shape.nb, 0);
}

Tensor* view_4d(Graph& g, Tensor* a, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3, uint64_t nb1, uint64_t nb2,
                uint64_t nb3, uint64_t offset) {
    Tensor v;
    v.name = a->name;
    v.set_shape(a->type, {ne0, ne1, ne2, ne3});  // checks dims >= 1 and the block multiple
    v.nb = {dtype_info(a->type).block_bytes, nb1, nb2, nb3};
    const Tensor* owner = a->view_src ? a->view_src : a;
    const uint64_t start = (a->view_src ? a->view_offset : 0) + offset;
    if (start + v.n_bytes() > owner->n_bytes())
        fail(Op::VIEW, describe(v) + " at offset " + std::to_string(offset) + " runs past the end of " +
                           describe(*owner) + " (" + std::to_string(owner->n_bytes()) + " bytes)");
    Tensor* t = g.new_view(Op::VIEW, a, v.ne, v.nb, offset);
    t->op_params[0] = static_cast<int32_t>(offset & 0xffffffffu);  // informational: byte offset
    t->op_params[1] = static_cast<int32_t>(offset >> 32);
    return t;
}

Tensor* view_3d(Graph& g, Tensor* a, int64_t ne0, int64_t ne1, int64_t ne2, uint64_t nb1, uint64_t nb2,
                uint64_t offset) {
    return view_4d(g, a, ne0, ne1, ne2, 1, nb1, nb2, nb2 * static_cast<uint64_t>(ne2), offset);
}

Tensor* view_2d(Graph& g, Tensor* a, int64_t ne0, int64_t ne1, uint64_t nb1, uint64_t offset) {
    const uint64_t nb2 = nb1 * static_cast<uint64_t>(ne1);
    return view_4d(g, a, ne0, ne1, 1, 1, nb1, nb2, nb2, offset);
}

Tensor* view_1d(Graph& g, Tensor* a, int64_t ne0, uint64_t offset) {
    const uint64_t nb1 = dtype_row_bytes(a->type, ne0);
    return view_4d(g, a, ne0, 1, 1, 1, nb1, nb1, nb1, offset);
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

}  // namespace tessel::build

// Reference kernels for data movement: GET_ROWS, SET_ROWS, CPY, CONT, DUP, CONCAT, REPEAT, PAD,
// FILL, DIAG, TRI (semantics in graph/op.hpp).
//
// Copies between tensors of the same plain type move raw element bytes, so any plain type
// (F32, F16, BF16, I8..I64, F64) copies exactly. Conversions go through float: plain float types
// element by element, block-quantized types a row at a time (dequantize_row / quantize_row).
#include <cstring>
#include <string>
#include <vector>

#include "cpu/ref/ref.hpp"
#include "cpu/ref/tensor_util.hpp"
#include "tessel/errors.hpp"

namespace tessel::cpu::ref {
namespace {

bool is_plain(DType t) { return dtype_info(t).block_size == 1; }
uint64_t elem_bytes(DType t) { return dtype_info(t).block_bytes; }

[[noreturn]] void bad_id(const Tensor& dst, const Tensor& ids, int64_t id, int64_t limit) {
    throw Error(ErrorCode::InvalidArgument, std::string(op_name(dst.op)) + ": row id " + std::to_string(id) + " in " +
                                                describe(ids) + " is outside [0, " + std::to_string(limit) + ")");
}

// ---- GET_ROWS ---------------------------------------------------------------------------------
// table [K, R, B2, B3], ids I32 [n, B2, B3] -> dst [K, n, B2, B3]; dst row (i, b2, b3) is table row
// (ids[i, b2, b3], b2, b3).

bool get_rows_supports(const Tensor& dst) {
    const Tensor* table = dst.src[0];
    const Tensor* ids = dst.src[1];
    if (!table || !ids || ids->type != DType::I32) return false;
    if (dst.ne[0] != table->ne[0] || dst.ne[1] != ids->ne[0] || dst.ne[2] != ids->ne[1] || dst.ne[3] != ids->ne[2] ||
        ids->ne[3] != 1 || table->ne[2] != ids->ne[1] || table->ne[3] != ids->ne[2])
        return false;
    if (table->type == dst.type && is_plain(dst.type)) return true;  // exact copy (e.g. I32 -> I32)
    return rows_readable(*table) && rows_writable(dst);
}

void get_rows_run(Tensor& dst, ThreadContext& ctx) {
    const Tensor& table = *dst.src[0];
    const Tensor& ids = *dst.src[1];
    const bool raw = table.type == dst.type && is_plain(dst.type);
    const uint64_t esize = elem_bytes(dst.type);
    std::vector<float> buf(raw ? 0 : static_cast<size_t>(dst.ne[0]));
    const Range rows = thread_range(dst.n_rows(), ctx);
    for (int64_t r = rows.begin; r < rows.end; ++r) {
        const RowIndex d = row_index(dst, r);
        const int64_t id = get_id(ids, d.i1, d.i2, d.i3, 0);
        if (id < 0 || id >= table.ne[1]) bad_id(dst, ids, id, table.ne[1]);
        if (raw) {
            for (int64_t i0 = 0; i0 < dst.ne[0]; ++i0)
                std::memcpy(plain_ptr(dst, i0, d.i1, d.i2, d.i3), plain_ptr(table, i0, id, d.i2, d.i3), esize);
        } else {
            read_row_f32(table, id, d.i2, d.i3, buf.data());
            write_row_f32(dst, d.i1, d.i2, d.i3, buf.data());
        }
    }
}

// ---- SET_ROWS ---------------------------------------------------------------------------------
// dst (a view of src0) [K, R, B2, B3], rows src1 [K, n, B2, B3], ids src2 I64/I32 [n, C2, C3] with
// B2 % C2 == 0, B3 % C3 == 0: dst row (ids[i, b2 % C2, b3 % C3], b2, b3) = rows row (i, b2, b3).

bool set_rows_supports(const Tensor& dst) {
    const Tensor* rows = dst.src[1];
    const Tensor* ids = dst.src[2];
    if (!dst.src[0] || !rows || !ids) return false;
    if (ids->type != DType::I32 && ids->type != DType::I64) return false;
    if (dst.ne[0] != rows->ne[0] || dst.ne[2] != rows->ne[2] || dst.ne[3] != rows->ne[3] || rows->ne[1] != ids->ne[0] ||
        rows->ne[2] % ids->ne[1] != 0 || rows->ne[3] % ids->ne[2] != 0 || ids->ne[3] != 1)
        return false;
    return rows_readable(*rows) && rows_writable(dst);
}

void set_rows_run(Tensor& dst, ThreadContext& ctx) {
    const Tensor& rows = *dst.src[1];
    const Tensor& ids = *dst.src[2];
    std::vector<float> buf(static_cast<size_t>(dst.ne[0]));
    // Every thread walks all source rows in order and writes those whose destination row it
    // owns (destination row number modulo nth). Each destination row thus has one writer, and
    // when ids repeat, the last source row wins, whatever the thread count.
    for (int64_t r = 0; r < rows.n_rows(); ++r) {
        const RowIndex s = row_index(rows, r);
        const int64_t id = get_id(ids, s.i1, s.i2 % ids.ne[1], s.i3 % ids.ne[2], 0);
        if (id < 0 || id >= dst.ne[1]) bad_id(dst, ids, id, dst.ne[1]);
        const int64_t dst_row = id + dst.ne[1] * (s.i2 + dst.ne[2] * s.i3);
        if (dst_row % ctx.nth != ctx.ith) continue;
        read_row_f32(rows, s.i1, s.i2, s.i3, buf.data());
        write_row_f32(dst, id, s.i2, s.i3, buf.data());
    }
}

// ---- CPY / CONT / DUP -------------------------------------------------------------------------
// Elements are matched in flattened ne order (so shapes may differ when counts agree). When a
// block-quantized type is involved, rows are matched instead: equal ne[0] and row counts.

enum class CopyMode { RawElements, FloatElements, Rows };

CopyMode copy_mode(const Tensor& src, const Tensor& dst) {
    if (src.type == dst.type && is_plain(src.type)) return CopyMode::RawElements;
    if (is_float_type(src.type) && is_float_type(dst.type)) return CopyMode::FloatElements;
    return CopyMode::Rows;
}

bool copy_supports(const Tensor& dst) {
    const Tensor* src = dst.src[0];
    if (!src || src->n_elements() != dst.n_elements()) return false;
    if (dst.op != Op::CPY && src->type != dst.type) return false;  // CONT and DUP keep the type
    if (copy_mode(*src, dst) != CopyMode::Rows) return true;
    if (src->ne[0] != dst.ne[0]) return false;  // rows matched one to one
    if (src->type == dst.type) return dtype_info(src->type).block_bytes == src->nb[0] && dst.nb[0] == src->nb[0];
    return rows_readable(*src) && rows_writable(dst);
}

void copy_run(Tensor& dst, ThreadContext& ctx) {
    const Tensor& src = *dst.src[0];
    const CopyMode mode = copy_mode(src, dst);
    const Range rows = thread_range(dst.n_rows(), ctx);
    if (mode == CopyMode::Rows) {
        std::vector<float> buf(static_cast<size_t>(dst.ne[0]));
        const uint64_t row_bytes = dtype_row_bytes(dst.type, dst.ne[0]);
        for (int64_t r = rows.begin; r < rows.end; ++r) {
            const RowIndex d = row_index(dst, r);
            const RowIndex s = row_index(src, r);
            if (src.type == dst.type) {
                std::memcpy(row_ptr(dst, d.i1, d.i2, d.i3), row_ptr(src, s.i1, s.i2, s.i3), row_bytes);
            } else {
                read_row_f32(src, s.i1, s.i2, s.i3, buf.data());
                write_row_f32(dst, d.i1, d.i2, d.i3, buf.data());
            }
        }
        return;
    }
    const uint64_t esize = elem_bytes(dst.type);
    for (int64_t r = rows.begin; r < rows.end; ++r) {
        const RowIndex d = row_index(dst, r);
        // Source coordinates of this row's first element, then advanced with carries.
        const int64_t flat = r * dst.ne[0];
        int64_t s[4] = {flat % src.ne[0], flat / src.ne[0] % src.ne[1], flat / (src.ne[0] * src.ne[1]) % src.ne[2],
                        flat / (src.ne[0] * src.ne[1] * src.ne[2])};
        for (int64_t i0 = 0; i0 < dst.ne[0]; ++i0) {
            const uint8_t* from = plain_ptr(src, s[0], s[1], s[2], s[3]);
            uint8_t* to = plain_ptr(dst, i0, d.i1, d.i2, d.i3);
            if (mode == CopyMode::RawElements)
                std::memcpy(to, from, esize);
            else
                store_float(dst.type, to, load_float(src.type, from));
            for (int k = 0; k < kMaxDims - 1 && ++s[k] == src.ne[k]; ++k) s[k] = 0;
        }
    }
}

// ---- CONCAT -----------------------------------------------------------------------------------

bool concat_supports(const Tensor& dst) {
    const Tensor* a = dst.src[0];
    const Tensor* b = dst.src[1];
    const int dim = dst.op_params[0];
    if (!a || !b || dim < 0 || dim >= kMaxDims) return false;
    if (!is_plain(dst.type) || a->type != dst.type || b->type != dst.type) return false;
    for (int d = 0; d < kMaxDims; ++d) {
        if (d == dim ? dst.ne[d] != a->ne[d] + b->ne[d] : (dst.ne[d] != a->ne[d] || dst.ne[d] != b->ne[d]))
            return false;
    }
    return true;
}

void concat_run(Tensor& dst, ThreadContext& ctx) {
    const Tensor& a = *dst.src[0];
    const Tensor& b = *dst.src[1];
    const int dim = dst.op_params[0];
    const uint64_t esize = elem_bytes(dst.type);
    const Range rows = thread_range(dst.n_rows(), ctx);
    for (int64_t r = rows.begin; r < rows.end; ++r) {
        const RowIndex d = row_index(dst, r);
        for (int64_t i0 = 0; i0 < dst.ne[0]; ++i0) {
            int64_t c[4] = {i0, d.i1, d.i2, d.i3};
            const Tensor* from = &a;
            if (c[dim] >= a.ne[dim]) {
                c[dim] -= a.ne[dim];
                from = &b;
            }
            std::memcpy(plain_ptr(dst, i0, d.i1, d.i2, d.i3), plain_ptr(*from, c[0], c[1], c[2], c[3]), esize);
        }
    }
}

// ---- REPEAT -----------------------------------------------------------------------------------

bool repeat_supports(const Tensor& dst) {
    const Tensor* a = dst.src[0];
    if (!a || a->type != dst.type || !is_plain(dst.type)) return false;
    for (int d = 0; d < kMaxDims; ++d)
        if (dst.ne[d] % a->ne[d] != 0) return false;
    return true;
}

void repeat_run(Tensor& dst, ThreadContext& ctx) {
    const Tensor& a = *dst.src[0];
    const uint64_t esize = elem_bytes(dst.type);
    const Range rows = thread_range(dst.n_rows(), ctx);
    for (int64_t r = rows.begin; r < rows.end; ++r) {
        const RowIndex d = row_index(dst, r);
        for (int64_t i0 = 0; i0 < dst.ne[0]; ++i0)
            std::memcpy(plain_ptr(dst, i0, d.i1, d.i2, d.i3),
                        plain_ptr(a, i0 % a.ne[0], d.i1 % a.ne[1], d.i2 % a.ne[2], d.i3 % a.ne[3]), esize);
    }
}

// ---- PAD --------------------------------------------------------------------------------------
// op_params [2d] = zeros before dim d, [2d + 1] = zeros after it.

bool pad_supports(const Tensor& dst) {
    const Tensor* a = dst.src[0];
    if (!a || a->type != dst.type || !is_plain(dst.type)) return false;
    for (int d = 0; d < kMaxDims; ++d) {
        const int32_t before = dst.op_params[2 * d], after = dst.op_params[2 * d + 1];
        if (before < 0 || after < 0 || dst.ne[d] != a->ne[d] + before + after) return false;
    }
    return true;
}

void pad_run(Tensor& dst, ThreadContext& ctx) {
    const Tensor& a = *dst.src[0];
    const uint64_t esize = elem_bytes(dst.type);
    const Range rows = thread_range(dst.n_rows(), ctx);
    for (int64_t r = rows.begin; r < rows.end; ++r) {
        const RowIndex d = row_index(dst, r);
        const int64_t i[4] = {0, d.i1, d.i2, d.i3};
        int64_t s[4];
        bool inside = true;
        for (int k = 1; k < kMaxDims; ++k) {
            s[k] = i[k] - dst.op_params[2 * k];
            inside = inside && s[k] >= 0 && s[k] < a.ne[k];
        }
        for (int64_t i0 = 0; i0 < dst.ne[0]; ++i0) {
            uint8_t* to = plain_ptr(dst, i0, d.i1, d.i2, d.i3);
            s[0] = i0 - dst.op_params[0];
            if (inside && s[0] >= 0 && s[0] < a.ne[0])
                std::memcpy(to, plain_ptr(a, s[0], s[1], s[2], s[3]), esize);
            else
                std::memset(to, 0, esize);
        }
    }
}

// ---- FILL / DIAG / TRI ------------------------------------------------------------------------

bool fill_supports(const Tensor& dst) { return is_float_type(dst.type); }

void fill_run(Tensor& dst, ThreadContext& ctx) {
    const float value = dst.op_param_f32(0);
    const Range rows = thread_range(dst.n_rows(), ctx);
    for (int64_t r = rows.begin; r < rows.end; ++r) {
        const RowIndex d = row_index(dst, r);
        for (int64_t i0 = 0; i0 < dst.ne[0]; ++i0) set_f32(dst, i0, d.i1, d.i2, d.i3, value);
    }
}

bool diag_supports(const Tensor& dst) {
    const Tensor* a = dst.src[0];
    return a && is_float_type(a->type) && is_float_type(dst.type) && a->ne[1] == 1 && dst.ne[0] == a->ne[0] &&
           dst.ne[1] == a->ne[0] && dst.ne[2] == a->ne[2] && dst.ne[3] == a->ne[3];
}

void diag_run(Tensor& dst, ThreadContext& ctx) {
    const Tensor& a = *dst.src[0];
    const Range rows = thread_range(dst.n_rows(), ctx);
    for (int64_t r = rows.begin; r < rows.end; ++r) {
        const RowIndex d = row_index(dst, r);
        for (int64_t i0 = 0; i0 < dst.ne[0]; ++i0)
            set_f32(dst, i0, d.i1, d.i2, d.i3, i0 == d.i1 ? get_f32(a, i0, 0, d.i2, d.i3) : 0.0f);
    }
}

bool tri_keeps(TriType type, int64_t col, int64_t row) {
    switch (type) {
        case TriType::LOWER: return col < row;
        case TriType::LOWER_DIAG: return col <= row;
        case TriType::UPPER: return col > row;
        default: return col >= row;  // UPPER_DIAG
    }
}

bool tri_supports(const Tensor& dst) {
    const Tensor* a = dst.src[0];
    const int32_t type = dst.op_params[0];
    return a && is_float_type(a->type) && is_float_type(dst.type) && same_shape(*a, dst) && a->ne[0] == a->ne[1] &&
           type >= 0 && type < static_cast<int32_t>(TriType::COUNT_);
}

void tri_run(Tensor& dst, ThreadContext& ctx) {
    const Tensor& a = *dst.src[0];
    const auto type = static_cast<TriType>(dst.op_params[0]);
    const Range rows = thread_range(dst.n_rows(), ctx);
    for (int64_t r = rows.begin; r < rows.end; ++r) {
        const RowIndex d = row_index(dst, r);
        for (int64_t i0 = 0; i0 < dst.ne[0]; ++i0)
            set_f32(dst, i0, d.i1, d.i2, d.i3, tri_keeps(type, i0, d.i1) ? get_f32(a, i0, d.i1, d.i2, d.i3) : 0.0f);
    }
}

}  // namespace

void register_data_ops(KernelTable& t) {
    t.set(Op::GET_ROWS, get_rows_supports, get_rows_run);
    t.set(Op::SET_ROWS, set_rows_supports, set_rows_run);
    t.set(Op::CPY, copy_supports, copy_run);
    t.set(Op::CONT, copy_supports, copy_run);
    t.set(Op::DUP, copy_supports, copy_run);
    t.set(Op::CONCAT, concat_supports, concat_run);
    t.set(Op::REPEAT, repeat_supports, repeat_run);
    t.set(Op::PAD, pad_supports, pad_run);
    t.set(Op::FILL, fill_supports, fill_run);
    t.set(Op::DIAG, diag_supports, diag_run);
    t.set(Op::TRI, tri_supports, tri_run);
}

}  // namespace tessel::cpu::ref

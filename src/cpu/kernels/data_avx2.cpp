// Data movement kernels, AVX2 tier (compiled with -mavx2 -mfma -mf16c; selected only when the
// usable CPU features include the avx2 tier): GET_ROWS, SET_ROWS and CPY / CONT / DUP. The
// conversions are row_convert.hpp's (bit-exact with the reference); what these kernels add is
// whole-row work instead of the reference's per-element addressing and type dispatch.
//
// Semantics and accepted shapes are the reference's (src/cpu/ref/data.cpp, graph/op.hpp); every
// kernel also needs destination rows whose elements (or blocks) lie back to back (nb[0] = element
// or block size) and falls back to the reference otherwise. GET_ROWS and the copies split the
// destination rows into one contiguous range per thread; SET_ROWS keeps the reference's scheme
// (see set_rows_run), so repeated ids resolve the same way for any thread count.
#include <algorithm>
#include <cstring>
#include <string>

#include "cpu/kernels/kernel.hpp"
#include "cpu/kernels/row_convert.hpp"
#include "quant/quant.hpp"
#include "tessel/errors.hpp"

namespace tessel::cpu {
namespace {

struct RowCoords {
    int64_t i1, i2, i3;
};

/// Coordinates of row r of t, rows numbered in ne order (i1 fastest).
RowCoords row_coords(const Tensor& t, int64_t r) {
    return {r % t.ne[1], r / t.ne[1] % t.ne[2], r / (t.ne[1] * t.ne[2])};
}

uint8_t* row_at(const Tensor& t, int64_t i1, int64_t i2, int64_t i3) {
    return static_cast<uint8_t*>(t.data) + static_cast<uint64_t>(i1) * t.nb[1] + static_cast<uint64_t>(i2) * t.nb[2] +
           static_cast<uint64_t>(i3) * t.nb[3];
}
uint8_t* row_at(const Tensor& t, RowCoords c) { return row_at(t, c.i1, c.i2, c.i3); }

/// Elements (plain types) or blocks of each row of t lie back to back.
bool dense_rows(const Tensor& t) { return t.nb[0] == dtype_info(t.type).block_bytes; }

/// Integer id (I32 or I64) at (i0, i1, i2) of ids.
int64_t read_id(const Tensor& ids, int64_t i0, int64_t i1, int64_t i2) {
    const uint8_t* p = row_at(ids, i1, i2, 0) + static_cast<uint64_t>(i0) * ids.nb[0];
    if (ids.type == DType::I64) {
        int64_t v;
        std::memcpy(&v, p, 8);
        return v;
    }
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

/// The reference's error for an id outside the table.
[[noreturn]] void bad_id(const Tensor& dst, const Tensor& ids, int64_t id, int64_t limit) {
    throw Error(ErrorCode::InvalidArgument, std::string(op_name(dst.op)) + ": row id " + std::to_string(id) + " in " +
                                                describe(ids) + " is outside [0, " + std::to_string(limit) + ")");
}

// ---- GET_ROWS ---------------------------------------------------------------------------------
// table [K, R, B2, B3] (blocks back to back), ids I32 [n, B2, B3] -> F32 [K, n, B2, B3].

bool get_rows_accepts(const Tensor& dst) {
    const Tensor* table = dst.src[0];
    const Tensor* ids = dst.src[1];
    if (dst.op != Op::GET_ROWS || !table || !ids || ids->type != DType::I32 || !f32_rows(dst)) return false;
    if (dst.ne[0] != table->ne[0] || dst.ne[1] != ids->ne[0] || dst.ne[2] != ids->ne[1] || dst.ne[3] != ids->ne[2] ||
        ids->ne[3] != 1 || table->ne[2] != ids->ne[1] || table->ne[3] != ids->ne[2])
        return false;
    return quant::has_dequantize(table->type) && dense_rows(*table) &&
           table->ne[0] % dtype_info(table->type).block_size == 0;
}

/// kVector: tables with an AVX2 decoder (F32, F16, BF16, Q4_0, Q4_1, Q8_0); otherwise every other
/// type with a reference dequantizer, decoded a row at a time by quant::dequantize_row.
template <bool kVector>
bool get_rows_supports(const Tensor& dst) {
    return get_rows_accepts(dst) && avx2::has_vector_dequantize(dst.src[0]->type) == kVector;
}

void get_rows_run(Tensor& dst, ThreadContext& ctx, void*) {
    const Tensor& table = *dst.src[0];
    const Tensor& ids = *dst.src[1];
    int64_t begin, end;
    thread_rows(dst.n_rows(), ctx, begin, end);
    for (int64_t r = begin; r < end; ++r) {
        const RowCoords c = row_coords(dst, r);
        const int64_t id = read_id(ids, c.i1, c.i2, c.i3);
        if (id < 0 || id >= table.ne[1]) bad_id(dst, ids, id, table.ne[1]);
        avx2::dequantize_row(table.type, row_at(table, id, c.i2, c.i3), reinterpret_cast<float*>(row_at(dst, c)),
                             dst.ne[0]);
    }
}

// ---- SET_ROWS ---------------------------------------------------------------------------------
// dst (a view of src0) [K, R, B2, B3] F32/F16/BF16/Q8_0, rows F32 [K, n, B2, B3], ids I64/I32
// [n, C2, C3]: dst row (ids[i, b2 % C2, b3 % C3], b2, b3) = rows row (i, b2, b3).

bool set_rows_supports(const Tensor& dst) {
    const Tensor* rows = dst.src[1];
    const Tensor* ids = dst.src[2];
    if (dst.op != Op::SET_ROWS || !dst.src[0] || !rows || !ids || !f32_rows(*rows)) return false;
    if (ids->type != DType::I32 && ids->type != DType::I64) return false;
    if (dst.ne[0] != rows->ne[0] || dst.ne[2] != rows->ne[2] || dst.ne[3] != rows->ne[3] || rows->ne[1] != ids->ne[0] ||
        rows->ne[2] % ids->ne[1] != 0 || rows->ne[3] % ids->ne[2] != 0 || ids->ne[3] != 1)
        return false;
    return (avx2::is_float_type(dst.type) || dst.type == DType::Q8_0) && dense_rows(dst);
}

void set_rows_run(Tensor& dst, ThreadContext& ctx, void*) {
    const Tensor& rows = *dst.src[1];
    const Tensor& ids = *dst.src[2];
    const int64_t K = dst.ne[0];
    // As the reference: every thread reads all ids in order and writes the destination rows it
    // owns (row number modulo nth), so each row has one writer and the last repeat wins.
    for (int64_t r = 0; r < rows.n_rows(); ++r) {
        const RowCoords s = row_coords(rows, r);
        const int64_t id = read_id(ids, s.i1, s.i2 % ids.ne[1], s.i3 % ids.ne[2]);
        if (id < 0 || id >= dst.ne[1]) bad_id(dst, ids, id, dst.ne[1]);
        if ((id + dst.ne[1] * (s.i2 + dst.ne[2] * s.i3)) % ctx.nth != ctx.ith) continue;
        const auto* x = reinterpret_cast<const float*>(row_at(rows, s));
        uint8_t* out = row_at(dst, id, s.i2, s.i3);
        if (dst.type == DType::Q8_0)
            avx2::quantize_row_q8_0(x, out, K);
        else
            avx2::convert_floats(DType::F32, x, sizeof(float), dst.type, out, K);
    }
}

// ---- CPY / CONT / DUP -------------------------------------------------------------------------

/// The source of a copy node that writes dense destination rows: as many elements; CONT and DUP
/// keep the type. nullptr otherwise.
const Tensor* copy_source(const Tensor& dst) {
    if (dst.op != Op::CPY && dst.op != Op::CONT && dst.op != Op::DUP) return nullptr;
    const Tensor* src = dst.src[0];
    if (!src || src->n_elements() != dst.n_elements() || !dense_rows(dst)) return nullptr;
    if (dst.op != Op::CPY && src->type != dst.type) return nullptr;
    return src;
}

/// Plain types, elements matched in flattened ne order (shapes may differ): the same type (raw
/// bytes), or a conversion between F32, F16 and BF16. Sources of any strides.
bool copy_elements_supports(const Tensor& dst) {
    const Tensor* src = copy_source(dst);
    if (!src) return false;
    if (src->type == dst.type) return dtype_info(dst.type).block_size == 1;
    return avx2::is_float_type(src->type) && avx2::is_float_type(dst.type);
}

/// n elements of `bytes` each, `stride` bytes apart at src, to contiguous dst.
void copy_strided(const uint8_t* src, uint64_t stride, uint8_t* dst, int64_t n, uint64_t bytes) {
    if (stride == bytes) {
        std::memcpy(dst, src, static_cast<size_t>(n) * bytes);
        return;
    }
    for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * bytes, src + i * stride, bytes);
}

void copy_elements_run(Tensor& dst, ThreadContext& ctx, void*) {
    const Tensor& src = *dst.src[0];
    const int64_t K = dst.ne[0];
    const uint64_t out_bytes = dtype_info(dst.type).block_bytes;
    int64_t begin, end;
    thread_rows(dst.n_rows(), ctx, begin, end);
    for (int64_t r = begin; r < end; ++r) {
        uint8_t* out = row_at(dst, row_coords(dst, r));
        // Flattened index r·K starts at element s0 of source row s_row; the destination row is
        // filled from runs along source rows (one run when the ne[0] agree).
        int64_t s0 = r * K % src.ne[0];
        int64_t s_row = r * K / src.ne[0];
        for (int64_t done = 0; done < K; s0 = 0, ++s_row) {
            const int64_t n = std::min(src.ne[0] - s0, K - done);
            const uint8_t* in = row_at(src, row_coords(src, s_row)) + static_cast<uint64_t>(s0) * src.nb[0];
            if (src.type == dst.type)
                copy_strided(in, src.nb[0], out + done * out_bytes, n, out_bytes);
            else
                avx2::convert_floats(src.type, in, static_cast<int64_t>(src.nb[0]), dst.type, out + done * out_bytes, n);
            done += n;
        }
    }
}

/// The same block type, rows matched one to one, source blocks back to back: row memcpy.
bool copy_blocks_supports(const Tensor& dst) {
    const Tensor* src = copy_source(dst);
    return src && src->type == dst.type && dtype_info(dst.type).block_size > 1 && src->ne[0] == dst.ne[0] &&
           dense_rows(*src);
}

void copy_blocks_run(Tensor& dst, ThreadContext& ctx, void*) {
    const Tensor& src = *dst.src[0];
    const uint64_t bytes = dtype_row_bytes(dst.type, dst.ne[0]);
    int64_t begin, end;
    thread_rows(dst.n_rows(), ctx, begin, end);
    for (int64_t r = begin; r < end; ++r) std::memcpy(row_at(dst, row_coords(dst, r)), row_at(src, row_coords(src, r)), bytes);
}

/// F32, F16 or BF16 rows (any element stride) -> Q8_0 rows, matched one to one.
bool copy_q8_0_supports(const Tensor& dst) {
    const Tensor* src = copy_source(dst);
    return src && dst.type == DType::Q8_0 && avx2::is_float_type(src->type) && src->ne[0] == dst.ne[0];
}

/// One float row per thread, for sources that are not dense F32 (64-byte multiples).
uint64_t q8_0_buffer_bytes(const Tensor& dst) { return (static_cast<uint64_t>(dst.ne[0]) * sizeof(float) + 63) / 64 * 64; }

size_t copy_q8_0_work(const Tensor& dst, int nth) { return q8_0_buffer_bytes(dst) * static_cast<uint64_t>(nth); }

void copy_q8_0_run(Tensor& dst, ThreadContext& ctx, void* work) {
    const Tensor& src = *dst.src[0];
    const int64_t K = dst.ne[0];
    const bool direct = f32_rows(src);
    auto* buf = reinterpret_cast<float*>(static_cast<uint8_t*>(work) + q8_0_buffer_bytes(dst) * ctx.ith);
    int64_t begin, end;
    thread_rows(dst.n_rows(), ctx, begin, end);
    for (int64_t r = begin; r < end; ++r) {
        const uint8_t* in = row_at(src, row_coords(src, r));
        if (!direct) avx2::convert_floats(src.type, in, static_cast<int64_t>(src.nb[0]), DType::F32, buf, K);
        avx2::quantize_row_q8_0(direct ? reinterpret_cast<const float*>(in) : buf, row_at(dst, row_coords(dst, r)), K);
    }
}

/// Q4_0, Q4_1 or Q8_0 rows (blocks back to back) -> F32 rows, matched one to one.
bool copy_dequant_supports(const Tensor& dst) {
    const Tensor* src = copy_source(dst);
    return src && dst.type == DType::F32 && dtype_info(src->type).block_size > 1 &&
           avx2::has_vector_dequantize(src->type) && src->ne[0] == dst.ne[0] && dense_rows(*src);
}

void copy_dequant_run(Tensor& dst, ThreadContext& ctx, void*) {
    const Tensor& src = *dst.src[0];
    int64_t begin, end;
    thread_rows(dst.n_rows(), ctx, begin, end);
    for (int64_t r = begin; r < end; ++r)
        avx2::dequantize_row(src.type, row_at(src, row_coords(src, r)),
                             reinterpret_cast<float*>(row_at(dst, row_coords(dst, r))), dst.ne[0]);
}

constexpr FastKernel kGetRows = {"get_rows_avx2", has_avx2_tier, get_rows_supports<true>, no_work, get_rows_run};
constexpr FastKernel kGetRowsRowwise = {"get_rows_rowwise_avx2", has_avx2_tier, get_rows_supports<false>, no_work,
                                    get_rows_run};
constexpr FastKernel kSetRows = {"set_rows_avx2", has_avx2_tier, set_rows_supports, no_work, set_rows_run};
constexpr FastKernel kCopyElements = {"copy_avx2", has_avx2_tier, copy_elements_supports, no_work, copy_elements_run};
constexpr FastKernel kCopyBlocks = {"copy_blocks_avx2", has_avx2_tier, copy_blocks_supports, no_work, copy_blocks_run};
constexpr FastKernel kCopyQ8_0 = {"copy_q8_0_avx2", has_avx2_tier, copy_q8_0_supports, copy_q8_0_work, copy_q8_0_run};
constexpr FastKernel kCopyDequant = {"copy_dequant_avx2", has_avx2_tier, copy_dequant_supports, no_work, copy_dequant_run};

constexpr FastKernel kTable[] = {kGetRows, kGetRowsRowwise, kSetRows, kCopyElements, kCopyBlocks, kCopyQ8_0, kCopyDequant};

}  // namespace

constinit const std::span<const FastKernel> kAvx2DataKernels{kTable};

}  // namespace tessel::cpu

// Helpers shared by the reference kernels: element addressing through nb strides, element and
// row conversion to and from float for any type, and splitting rows across threads.
//
// Kernels split their rows into one contiguous range per thread (thread_rows); each row is
// computed the same way whichever thread owns it, so results are identical for any thread count.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "core/dtype.hpp"
#include "core/fp16.hpp"
#include "cpu/threadpool.hpp"
#include "graph/tensor.hpp"
#include "quant/quant.hpp"

namespace tessel::cpu::ref {

/// Address of element (i0, i1, i2, i3) of t (for a block type, i0 must start a block).
inline uint8_t* elem_ptr(const Tensor& t, int64_t i0, int64_t i1, int64_t i2 = 0, int64_t i3 = 0) {
    const uint64_t block = dtype_info(t.type).block_size;
    return static_cast<uint8_t*>(t.data) + static_cast<uint64_t>(i0) / block * t.nb[0] +
           static_cast<uint64_t>(i1) * t.nb[1] + static_cast<uint64_t>(i2) * t.nb[2] +
           static_cast<uint64_t>(i3) * t.nb[3];
}

/// Address of element (i0, i1, i2, i3) of a plain (block size 1) tensor: nb[0] is the element stride.
inline uint8_t* plain_ptr(const Tensor& t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return static_cast<uint8_t*>(t.data) + static_cast<uint64_t>(i0) * t.nb[0] + static_cast<uint64_t>(i1) * t.nb[1] +
           static_cast<uint64_t>(i2) * t.nb[2] + static_cast<uint64_t>(i3) * t.nb[3];
}

/// Address of the first element of row (i1, i2, i3).
inline uint8_t* row_ptr(const Tensor& t, int64_t i1, int64_t i2, int64_t i3) { return elem_ptr(t, 0, i1, i2, i3); }

/// Coordinates of row r of t, rows numbered in ne order (i1 fastest).
struct RowIndex {
    int64_t i1, i2, i3;
};
inline RowIndex row_index(const Tensor& t, int64_t r) {
    const int64_t i1 = r % t.ne[1];
    const int64_t i2 = r / t.ne[1] % t.ne[2];
    const int64_t i3 = r / (t.ne[1] * t.ne[2]);
    return {i1, i2, i3};
}

/// This thread's share [begin, end) of n items: equal contiguous ranges in thread order.
struct Range {
    int64_t begin, end;
};
inline Range thread_range(int64_t n, const ThreadContext& ctx) {
    const int64_t per = (n + ctx.nth - 1) / ctx.nth;
    const int64_t begin = per * ctx.ith < n ? per * ctx.ith : n;
    const int64_t end = begin + per < n ? begin + per : n;
    return {begin, end};
}

/// F32, F16 or BF16: the types element-wise kernels read and write directly.
inline bool is_float_type(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

/// One element of a float type as float.
inline float load_float(DType t, const void* p) {
    uint16_t h;
    switch (t) {
        case DType::F16: std::memcpy(&h, p, 2); return fp16_to_fp32(h);
        case DType::BF16: std::memcpy(&h, p, 2); return bf16_to_fp32(h);
        default: {
            float f;
            std::memcpy(&f, p, 4);
            return f;
        }
    }
}

/// Stores v into one element of a float type (F16/BF16 round to nearest even).
inline void store_float(DType t, void* p, float v) {
    uint16_t h;
    switch (t) {
        case DType::F16: h = fp32_to_fp16(v); std::memcpy(p, &h, 2); return;
        case DType::BF16: h = fp32_to_bf16(v); std::memcpy(p, &h, 2); return;
        default: std::memcpy(p, &v, 4); return;
    }
}

/// Element (i0, i1, i2, i3) of a float-type tensor as float.
inline float get_f32(const Tensor& t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return load_float(t.type, plain_ptr(t, i0, i1, i2, i3));
}
inline void set_f32(Tensor& t, int64_t i0, int64_t i1, int64_t i2, int64_t i3, float v) {
    store_float(t.type, plain_ptr(t, i0, i1, i2, i3), v);
}

/// Whether whole rows of t can be converted to float (read_row_f32): a type with a reference
/// dequantizer whose blocks lie back to back when it is block-quantized.
inline bool rows_readable(const Tensor& t) {
    const DTypeInfo& info = dtype_info(t.type);
    if (!quant::has_dequantize(t.type) || t.ne[0] % info.block_size != 0) return false;
    return info.block_size == 1 || t.nb[0] == info.block_bytes;
}

/// Whether rows of t can be written from float (write_row_f32).
inline bool rows_writable(const Tensor& t) {
    const DTypeInfo& info = dtype_info(t.type);
    if (!quant::has_quantize(t.type)) return false;
    return info.block_size == 1 || t.nb[0] == info.block_bytes;
}

/// Converts the t.ne[0] elements of the row starting at `row` (any readable type, strided or
/// not) to floats. Requires rows_readable(t).
inline void load_row(const Tensor& t, const uint8_t* row, float* out) {
    const DTypeInfo& info = dtype_info(t.type);
    if (info.block_size > 1 || t.nb[0] == info.block_bytes) {
        quant::dequantize_row(t.type, row, out, t.ne[0]);
        return;
    }
    for (int64_t i = 0; i < t.ne[0]; ++i) quant::dequantize_row(t.type, row + i * t.nb[0], out + i, 1);
}

/// Converts row (i1, i2, i3) of t to floats (see load_row).
inline void read_row_f32(const Tensor& t, int64_t i1, int64_t i2, int64_t i3, float* out) {
    load_row(t, row_ptr(t, i1, i2, i3), out);
}

/// Σ a[i]·b[i] in double. Element i goes to running sum i % 4 and the sums are combined as
/// (s0 + s1) + (s2 + s3): a fixed order (results never depend on threads) whose independent
/// additions run several times faster than one chain. Float products are exact in double.
inline double dot_f64(const float* a, const float* b, int64_t n) {
    double s[4] = {0.0, 0.0, 0.0, 0.0};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int l = 0; l < 4; ++l) s[l] += static_cast<double>(a[i + l]) * static_cast<double>(b[i + l]);
    for (; i < n; ++i) s[i % 4] += static_cast<double>(a[i]) * static_cast<double>(b[i]);
    return (s[0] + s[1]) + (s[2] + s[3]);
}

/// Converts ne[0] floats into row (i1, i2, i3) of t (any writable type, strided or not).
inline void write_row_f32(Tensor& t, int64_t i1, int64_t i2, int64_t i3, const float* in) {
    uint8_t* p = row_ptr(t, i1, i2, i3);
    const DTypeInfo& info = dtype_info(t.type);
    if (info.block_size > 1 || t.nb[0] == info.block_bytes) {
        quant::quantize_row(t.type, in, p, t.ne[0]);
        return;
    }
    for (int64_t i = 0; i < t.ne[0]; ++i) quant::quantize_row(t.type, in + i, p + i * t.nb[0], 1);
}

/// Same ne in every dim.
inline bool same_shape(const Tensor& a, const Tensor& b) { return a.ne == b.ne; }

/// Reads an integer id (I32 or I64 tensor element) at (i0, i1, i2, i3).
inline int64_t get_id(const Tensor& t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const uint8_t* p = plain_ptr(t, i0, i1, i2, i3);
    if (t.type == DType::I64) {
        int64_t v;
        std::memcpy(&v, p, 8);
        return v;
    }
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

}  // namespace tessel::cpu::ref

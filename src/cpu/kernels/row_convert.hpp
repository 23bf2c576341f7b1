// Row conversions of the AVX2 data kernels (GET_ROWS, SET_ROWS, CPY/CONT/DUP): float types to
// and from each other, dequantization to F32, quantization to Q8_0.
//
// Defined in row_convert_avx2.cpp (built with -mavx2 -mfma -mf16c): call them only when the usable
// CPU features include the avx2 tier (has_avx2_tier). This header itself holds no ISA code, so
// tests may include it and check the functions bit-exactly against the reference (quant::).
// Every function gives exactly the bytes of the reference conversion it names.
#pragma once

#include <cstdint>

#include "core/dtype.hpp"

namespace tessel::cpu::avx2 {

/// True for the float types convert_floats() accepts: F32, F16, BF16.
bool is_float_type(DType t);

/// Converts n elements of float type `from` at src, `src_stride` bytes apart (e.g. the element
/// size, or a row size for a transposed source), into n contiguous elements of float type `to`
/// at dst. F16/BF16 results round to nearest even, as core/fp16.hpp's scalar conversions (the
/// reference's load_float / store_float); equal types copy the raw bits. Eight elements per step
/// (F16C for F16).
void convert_floats(DType from, const void* src, int64_t src_stride, DType to, void* dst, int64_t n);

/// Whether dequantize_row() has an AVX2 decoder for t (F32, F16, BF16, Q4_0, Q4_1, Q8_0) rather
/// than passing it on to quant::dequantize_row.
bool has_vector_dequantize(DType t);

/// Dequantizes one row: n elements (a multiple of t's block size) of type t at src (blocks back to
/// back, any alignment) into n floats at dst; the same floats as quant::dequantize_row (x = q·d,
/// then + m, rounded separately). Types without an AVX2 decoder go through quant::dequantize_row.
/// Throws what quant::dequantize_row throws for a type without a reference.
void dequantize_row(DType t, const void* src, float* dst, int64_t n);

/// Quantizes n floats (n a multiple of 32) into n/32 Q8_0 blocks at dst (34 bytes each, any
/// alignment): the same bytes as quant::quantize_row(DType::Q8_0, ...) for every input, i.e.
/// d = amax/127 stored as fp16, q = round-half-away-from-zero(x · (1/d)) as int8. A block
/// holding a NaN is passed to the reference (its amax depends on the NaN's position).
void quantize_row_q8_0(const float* src, void* dst, int64_t n);

}  // namespace tessel::cpu::avx2

// Reference (scalar) quantize / dequantize of GGUF block formats.
//
// These are the correctness references every fast kernel is checked against. Results are
// bit-exact with ggml for dequantization and for the quantization of Q4_0, Q4_1, Q5_0, Q5_1,
// Q8_0, Q8_1 and MXFP4; the K-quants, IQ4_NL and IQ4_XS use tessel's own scale search
// (RMSE checked against llama.cpp's in tests/data).
#pragma once

#include <cstdint>

#include "core/dtype.hpp"

namespace tessel::quant {

/// Dequantize one row: `n` elements (a multiple of the type's block size) of type `t` at `src`
/// into `dst` floats. Plain types (F32, F16, BF16, F64, I8..I64) are converted to float too.
/// Throws tessel::Error(Unsupported) for a type without a reference, InvalidArgument for a bad n.
void dequantize_row(DType t, const void* src, float* dst, int64_t n);

/// Quantize one row of `n` floats (a multiple of the block size) into `dst`, which must hold
/// dtype_row_bytes(t, n) bytes. Returns the bytes written. F32/F16/BF16 are plain conversions.
/// Throws tessel::Error(Unsupported) for a type without a reference quantizer.
uint64_t quantize_row(DType t, const float* src, void* dst, int64_t n);

/// Quantize n_rows rows of n_per_row floats each (row r at src + r * n_per_row) into consecutive
/// rows of dtype_row_bytes(t, n_per_row) bytes at dst: a whole contiguous tensor of type t with
/// ne[0] = n_per_row. Returns the bytes written. Errors as quantize_row.
uint64_t quantize_rows(DType t, const float* src, void* dst, int64_t n_rows, int64_t n_per_row);

/// True when dequantize_row / quantize_row accept type t.
bool has_dequantize(DType t);
bool has_quantize(DType t);

/// Per-family function tables, filled by each family's translation unit.
using DequantFn = void (*)(const void* src, float* dst, int64_t n);
using QuantFn = void (*)(const float* src, void* dst, int64_t n);
struct Kernels {
    DequantFn dequant[kDTypeIdEnd] = {};
    QuantFn quant[kDTypeIdEnd] = {};
    void set(DType t, DequantFn d, QuantFn q) {
        dequant[static_cast<uint32_t>(t)] = d;
        quant[static_cast<uint32_t>(t)] = q;
    }
};
void register_plain(Kernels& k);    ///< F32, F16, BF16, F64, I8..I64 (quant_plain.cpp)
void register_legacy(Kernels& k);   ///< Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1 (quant_legacy.cpp)
void register_kquants(Kernels& k);  ///< Q2_K..Q8_K (quant_kquants.cpp)
void register_nonlinear(Kernels& k); ///< IQ4_NL, IQ4_XS, MXFP4 (quant_nonlinear.cpp)

}  // namespace tessel::quant

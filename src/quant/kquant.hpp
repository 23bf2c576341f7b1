// Reference K-quant rows: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K (super-blocks of QK_K = 256).
//
// Dequantization is bit-exact with ggml's dequantize_row_q*_K (same element order and the same
// float evaluation order: sub-block scale d*sc first, then times the quant, minus d_min*m).
// Q8_K quantization is bit-exact with ggml's quantize_row_q8_K_ref. Q2_K..Q6_K quantization is
// tessel's own: a least-squares scale (and min) search per sub-block, sub-block scales rounded
// to their bit widths under fp16 super-block scales with a local search, and the elements
// re-quantized with the final scales (see kquant_fit.hpp).
//
// Every function takes `n` elements, a multiple of QK_K (the caller, quant.cpp, checks it);
// src/dst need no alignment. Quantizers never fail: NaN/Inf inputs give some valid block.
#pragma once

#include <cstdint>

namespace tessel::quant::kq {

void dequantize_q2_K(const void* src, float* dst, int64_t n);
void dequantize_q3_K(const void* src, float* dst, int64_t n);
void dequantize_q4_K(const void* src, float* dst, int64_t n);
void dequantize_q5_K(const void* src, float* dst, int64_t n);
void dequantize_q6_K(const void* src, float* dst, int64_t n);
void dequantize_q8_K(const void* src, float* dst, int64_t n);

void quantize_q2_K(const float* src, void* dst, int64_t n);
void quantize_q3_K(const float* src, void* dst, int64_t n);
void quantize_q4_K(const float* src, void* dst, int64_t n);
void quantize_q5_K(const float* src, void* dst, int64_t n);
void quantize_q6_K(const float* src, void* dst, int64_t n);
void quantize_q8_K(const float* src, void* dst, int64_t n);

}  // namespace tessel::quant::kq

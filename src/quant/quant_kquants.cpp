// Reference quantize/dequantize: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K.
// The row functions live in kquant_dequant.cpp and kquant_quantize.cpp.
#include "quant/blocks.hpp"
#include "quant/kquant.hpp"
#include "quant/quant.hpp"

namespace tessel::quant {

void register_kquants(Kernels& k) {
    k.set(DType::Q2_K, kq::dequantize_q2_K, kq::quantize_q2_K);
    k.set(DType::Q3_K, kq::dequantize_q3_K, kq::quantize_q3_K);
    k.set(DType::Q4_K, kq::dequantize_q4_K, kq::quantize_q4_K);
    k.set(DType::Q5_K, kq::dequantize_q5_K, kq::quantize_q5_K);
    k.set(DType::Q6_K, kq::dequantize_q6_K, kq::quantize_q6_K);
    k.set(DType::Q8_K, kq::dequantize_q8_K, kq::quantize_q8_K);
}

}  // namespace tessel::quant

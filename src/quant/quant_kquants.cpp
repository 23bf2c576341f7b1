// Reference quantize/dequantize: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K.
#include "quant/blocks.hpp"
#include "quant/quant.hpp"

namespace tessel::quant {

void register_kquants(Kernels& k) { (void)k; }

}  // namespace tessel::quant

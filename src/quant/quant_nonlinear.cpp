// Reference quantize/dequantize: IQ4_NL, IQ4_XS, MXFP4.
#include "quant/blocks.hpp"
#include "quant/quant.hpp"

namespace tessel::quant {

void register_nonlinear(Kernels& k) { (void)k; }

}  // namespace tessel::quant

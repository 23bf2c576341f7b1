// Packed micro-kernels, dotprod tier (aarch64): not written yet.
#include "cpu/packed/kernel.hpp"

namespace tessel::cpu::packed {

constinit const std::span<Kernel> kDotprodKernels{};

}  // namespace tessel::cpu::packed

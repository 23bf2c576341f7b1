// Packed micro-kernels, i8mm tier (aarch64): not written yet.
#include "cpu/packed/kernel.hpp"

namespace tessel::cpu::packed {

constinit const std::span<Kernel> kI8mmKernels{};

}  // namespace tessel::cpu::packed

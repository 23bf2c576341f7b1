// Packed micro-kernels, sme tier (aarch64): not written yet.
#include "cpu/packed/kernel.hpp"

namespace tessel::cpu::packed {

constinit const std::span<Kernel> kSmeKernels{};
constinit const std::span<const Kernel> kSmeRowsKernels{};

}  // namespace tessel::cpu::packed

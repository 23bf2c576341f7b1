// Packed micro-kernels, neon tier (aarch64): not written yet.
#include "cpu/packed/kernel.hpp"

namespace tessel::cpu::packed {

constinit const std::span<Kernel> kNeonKernels{};
constinit const std::span<const Kernel> kNeonRowsKernels{};

}  // namespace tessel::cpu::packed

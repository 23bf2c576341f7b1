// Packed micro-kernels, sve tier (aarch64): not written yet.
#include "cpu/packed/kernel.hpp"

namespace tessel::cpu::packed {

constinit const std::span<Kernel> kSveKernels{};
constinit const std::span<const Kernel> kSveRowsKernels{};

}  // namespace tessel::cpu::packed

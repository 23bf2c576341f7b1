// Packed micro-kernels, avx2 tier (placeholder: no kernels yet).
#include "cpu/packed/kernel.hpp"

namespace tessel::cpu::packed {

std::vector<const Kernel*> avx2_kernels() { return {}; }

}  // namespace tessel::cpu::packed

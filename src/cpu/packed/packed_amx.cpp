// Packed micro-kernels, amx tier (placeholder: no kernels yet).
#include "cpu/packed/kernel.hpp"

namespace tessel::cpu::packed {

std::vector<const Kernel*> amx_kernels() { return {}; }

}  // namespace tessel::cpu::packed

// Reference kernels: see register_attention_ops in cpu/ref/ref.hpp for the ops of this group.
#include "cpu/ref/ref.hpp"

namespace tessel::cpu::ref {

void register_attention_ops(KernelTable& t) { (void)t; }

}  // namespace tessel::cpu::ref

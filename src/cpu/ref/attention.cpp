// Reference kernels: see register_attention_ops in cpu/ref/ref.hpp for the ops of this group.
// The kernels themselves are in rope.cpp, softmax.cpp and flash_attn.cpp (cpu/ref/attention.hpp).
#include "cpu/ref/attention.hpp"

#include <cmath>

namespace tessel::cpu::ref {

double alibi_slope(int64_t h, int64_t n_head, float max_bias) {
    if (!(max_bias > 0.0f)) return 1.0;
    int64_t p = 1;  // largest power of two <= n_head
    while (p * 2 <= n_head) p *= 2;
    const double bias = static_cast<double>(max_bias);
    if (h < p) return std::exp2(-bias * static_cast<double>(h + 1) / static_cast<double>(p));
    return std::exp2(-bias * static_cast<double>(2 * (h - p) + 1) / static_cast<double>(2 * p));
}

void register_attention_ops(KernelTable& t) {
    register_rope_op(t);
    register_soft_max_op(t);
    register_flash_attn_op(t);
}

}  // namespace tessel::cpu::ref

// Internal to the attention reference kernels (cpu/ref): each op of register_attention_ops
// lives in its own translation unit (rope.cpp, softmax.cpp, flash_attn.cpp); attention.cpp is
// the one entry point. Also the ALiBi slope shared by SOFT_MAX and FLASH_ATTN_EXT.
#pragma once

#include <cstdint>

#include "cpu/ref/ref.hpp"

namespace tessel::cpu::ref {

void register_rope_op(KernelTable& t);        ///< ROPE (rope.cpp)
void register_soft_max_op(KernelTable& t);    ///< SOFT_MAX (softmax.cpp)
void register_flash_attn_op(KernelTable& t);  ///< FLASH_ATTN_EXT (flash_attn.cpp)

/// ALiBi slope of head h among n_head heads for max_bias (1 when max_bias <= 0).
/// With p = the largest power of two <= n_head: heads h < p get 2^(-max_bias·(h+1)/p); the
/// remaining heads interleave between them: 2^(-max_bias·(2(h-p)+1)/(2p)).
double alibi_slope(int64_t h, int64_t n_head, float max_bias);

}  // namespace tessel::cpu::ref

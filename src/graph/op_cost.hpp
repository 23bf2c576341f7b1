// The work of one node: floating-point operations and bytes moved, the figures that rates are
// reported in (`tessel test-ops perf`, bench/kernels).
#pragma once

#include "graph/tensor.hpp"

namespace tessel {

/// Floating-point operations of one run of node t (a multiply and an add count as two):
///   MUL_MAT, MUL_MAT_ID: 2 * K * (elements of t), K = src[0]->ne[0] (2·M·N·K for y[N,M]);
///   FLASH_ATTN_EXT: 2 * n_kv * (D_k + D_v) * (query rows), n_kv = K's ne[1], D_k = Q's ne[0],
///   D_v = V's ne[0] (the Q·Kᵀ and P·V products);
///   every other op: 0.
double op_flops(const Tensor& t);

/// Bytes of t's sources and of t itself in their plain (GGUF) layouts: what the node reads and
/// writes when each is touched once.
double op_bytes(const Tensor& t);

}  // namespace tessel

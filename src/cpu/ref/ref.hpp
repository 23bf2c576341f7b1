// Scalar reference kernels: one readable implementation of every op, the truth every other
// kernel (SIMD, packed, NPU) is compared against by `tessel test-ops`.
//
// A kernel computes node `dst` from dst.src[] (semantics and op_params in graph/op.hpp). All
// data pointers are host memory; tensors may be non-contiguous (kernels walk nb strides) unless
// a kernel's supports() says otherwise. The kernel computes part ctx.ith of ctx.nth parts of dst
// (usually a range of rows; the CPU backend runs the parts on whichever threads claim them,
// ThreadContext::parts) and never writes outside dst. Accumulations use double where a sum runs over a row.
#pragma once

#include "cpu/threadpool.hpp"
#include "graph/tensor.hpp"

namespace tessel::cpu::ref {

/// Computes part ctx.ith of ctx.nth of dst (see above).
using Kernel = void (*)(Tensor& dst, ThreadContext& ctx);

/// One op's entry: whether this node (its types/shapes/params) is supported, and the kernel.
struct OpKernel {
    bool (*supports)(const Tensor& dst) = nullptr;
    Kernel run = nullptr;
};

/// Kernels by op, filled by each group's translation unit.
struct KernelTable {
    OpKernel ops[static_cast<int>(Op::COUNT_)];
    void set(Op op, bool (*supports)(const Tensor&), Kernel run) { ops[static_cast<int>(op)] = {supports, run}; }
};

void register_data_ops(KernelTable& t);        ///< GET_ROWS, SET_ROWS, CPY, CONT, DUP, CONCAT, REPEAT, PAD, FILL, DIAG, TRI
void register_elementwise_ops(KernelTable& t); ///< ADD, SUB, MUL, DIV, ADD_ID, SCALE, CLAMP, SQR, SQRT, LOG, UNARY, GLU
void register_reduce_ops(KernelTable& t);      ///< SUM_ROWS, MEAN, ARGMAX, ARGSORT, CUMSUM, NORM, RMS_NORM, L2_NORM
void register_matmul_ops(KernelTable& t);      ///< MUL_MAT, MUL_MAT_ID
void register_attention_ops(KernelTable& t);   ///< ROPE, SOFT_MAX, FLASH_ATTN_EXT

/// True when a reference kernel exists for this node. View ops (RESHAPE, VIEW, PERMUTE,
/// TRANSPOSE, NONE) are supported and compute nothing.
bool supports(const Tensor& dst);

/// Runs the reference kernel for dst on this thread's share of the work. Every thread of the
/// run must call it. Throws tessel::Error(Unsupported) naming the op and tensor when unsupported.
void compute(Tensor& dst, ThreadContext& ctx);

}  // namespace tessel::cpu::ref

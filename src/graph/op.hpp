// The op enum: every node of a tessel graph computes one of these.
//
// Semantics are ggml's (the field's standard), so graphs built from GGUF models mean what
// llama.cpp means. Shapes are in ne order: ne[0] is the innermost, contiguous dimension.
// "Broadcast" below means: src1's dims must divide src0's dims (ne0 % ne1 == 0 per dim) and
// src1 is repeated to src0's shape. Op parameters live in Tensor::op_params (int32[16]; floats
// stored bit-for-bit), at the indices listed per op.
#pragma once

#include <cstdint>

namespace tessel {

enum class Op : uint8_t {
    NONE,       ///< a leaf: input, weight or constant; no computation
    // ---- data movement --------------------------------------------------------------------
    GET_ROWS,   ///< src0 [K, R, B2, B3] any type, src1 I32 [n, B2', B3] row ids -> F32 [K, n, B2, B3]
    SET_ROWS,   ///< dst=src0 view [K, R, ...] (any type), src1 F32 [K, n, ...] rows, src2 I64/I32 [n] ids:
                ///< writes src1's rows (converted to dst's type) into rows src2 of dst
    CPY,        ///< src0 -> src1's storage, converted to src1's type; same element count
    CONT,       ///< contiguous copy of a (possibly permuted/strided) src0, same type
    DUP,        ///< copy of src0 with the same shape and type
    RESHAPE,    ///< view of contiguous src0 with a new shape (same element count); no computation
    VIEW,       ///< view of src0 at a byte offset with given ne/nb; no computation
    PERMUTE,    ///< view of src0 with axes permuted (op_params[0..3] = destination axis of each src axis)
    TRANSPOSE,  ///< view of src0 with ne[0], ne[1] swapped
    // ---- element-wise ---------------------------------------------------------------------
    ADD,        ///< src0 + broadcast(src1), F32 (src0 may be F16)
    SUB,        ///< src0 - broadcast(src1)
    MUL,        ///< src0 * broadcast(src1)
    DIV,        ///< src0 / broadcast(src1)
    ADD_ID,     ///< src0 [K, E_used, T] + src1 [K, E] row chosen by src2 I32 [E_used, T] ids (MoE biases)
    SCALE,      ///< src0 * s + b; op_params f32 [0]=s, [1]=b
    CLAMP,      ///< min(max(src0, lo), hi); op_params f32 [0]=lo, [1]=hi
    SQR,        ///< src0²
    SQRT,       ///< √src0
    LOG,        ///< ln src0
    UNARY,      ///< op_params[0] = UnaryOp applied element-wise
    GLU,        ///< gated linear unit: op_params[0] = GluOp; [1] = swapped (gate is the second half).
                ///< One src [2K, ...] -> [K, ...] (halves), or two srcs a, b [K, ...] -> f(a) * b.
                ///< SWIGLU_OAI: op_params f32 [2] = alpha, [3] = limit
    // ---- reductions and normalisation -----------------------------------------------------
    SUM_ROWS,   ///< [K, ...] -> [1, ...] sums over ne[0]
    MEAN,       ///< [K, ...] -> [1, ...] means over ne[0]
    ARGMAX,     ///< F32 [K, R] -> I32 [R]: index of the largest value of each row (first on ties)
    ARGSORT,    ///< F32 [K, ...] -> I32 [K, ...]: per-row index order; op_params[0] 0 = ascending, 1 = descending
    NORM,       ///< (x - mean) / sqrt(var + eps) per row; op_params f32 [0] = eps
    RMS_NORM,   ///< x / sqrt(mean(x²) + eps) per row; op_params f32 [0] = eps
    L2_NORM,    ///< x / max(‖x‖₂, eps) per row; op_params f32 [0] = eps
    // ---- matrix products ------------------------------------------------------------------
    MUL_MAT,    ///< src0 w [K, N, B2, B3] (any supported type), src1 x F32 [K, M, B2', B3'] -> F32 [N, M, B2', B3'];
                ///< y = x · wᵀ; w's batch dims broadcast over x's (B2' % B2 == 0, B3' % B3 == 0)
    MUL_MAT_ID, ///< src0 experts [K, N, E], src1 x [K, U, T] (U = 1 or E_used), src2 ids I32 [E_used, T]
                ///< -> F32 [N, E_used, T]: y[:, e, t] = experts[ids[e, t]] · x[:, e % U, t]
    // ---- attention --------------------------------------------------------------------------
    ROPE,       ///< rotary position embedding of src0 F32 [D, H, T, 1] with positions src1 I32 [T]
                ///< (optional src2 freq factors F32 [n_dims/2]); op_params: [1] n_dims, [2] mode
                ///< (0 NORM: adjacent pairs, 2 NEOX: halves), [4] n_ctx_orig, f32 [5] freq_base,
                ///< [6] freq_scale, [7] ext_factor, [8] attn_factor, [9] beta_fast, [10] beta_slow (YaRN)
    SOFT_MAX,   ///< softmax(src0 * scale + mask * slope) per row; src1 mask F32/F16 [K, M'] (optional, broadcast
                ///< over rows and heads), src2 sinks F32 [H] (optional); op_params f32 [0] scale, [1] max_bias (ALiBi)
    FLASH_ATTN_EXT, ///< q F32 [D, T, H, B], k [D, KV, H_kv, B], v [Dv, KV, H_kv, B] (F32/F16/Q8_0), mask F16 [KV, T']
                    ///< optional, sinks F32 [H] optional -> F32 [Dv, H, T, B] (permuted, as ggml);
                    ///< op_params f32 [0] scale, [1] max_bias, [2] logit_softcap
    // ---- shape building -------------------------------------------------------------------
    CONCAT,     ///< src0, src1 joined along op_params[0] (dim)
    REPEAT,     ///< src0 tiled to the shape of the node (src1 gives the shape)
    PAD,        ///< src0 zero-padded at the end of each dim by op_params[0..3] (and at the front by [4..7])
    CUMSUM,     ///< inclusive prefix sum along ne[0]
    FILL,       ///< every element = op_params f32 [0]
    DIAG,       ///< src0 [K, 1, ...] -> [K, K, ...] with src0 on the diagonal
    TRI,        ///< keeps a triangle of square src0, zero elsewhere; op_params[0] = TriType
    // ---- multi-device ---------------------------------------------------------------------
    ALLREDUCE,  ///< reserved: sum of src0 across all ranks of a communicator (same shape on each rank);
                ///< implemented with the multi-device NPU path
    COUNT_,
};

enum class UnaryOp : int32_t { SILU, GELU, GELU_ERF, GELU_QUICK, SIGMOID, NEG, EXP, SOFTPLUS, TANH, ABS, RELU, COUNT_ };
enum class GluOp : int32_t { SWIGLU, GEGLU, SWIGLU_OAI, COUNT_ };
/// TRI variants: which triangle survives (the diagonal included or not).
enum class TriType : int32_t { LOWER, LOWER_DIAG, UPPER, UPPER_DIAG, COUNT_ };
/// ROPE modes (op_params[2]).
inline constexpr int32_t kRopeModeNorm = 0;
inline constexpr int32_t kRopeModeNeox = 2;

/// Field-standard name of an op, e.g. "MUL_MAT".
const char* op_name(Op op);
const char* unary_op_name(UnaryOp op);
const char* glu_op_name(GluOp op);

/// True for ops that only reinterpret memory (RESHAPE, VIEW, PERMUTE, TRANSPOSE, NONE).
bool op_is_view(Op op);

}  // namespace tessel

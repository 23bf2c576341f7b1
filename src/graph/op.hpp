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
    GET_ROWS,   ///< src0 [K, R, B2, B3] any type, src1 I32 [n, B2, B3] row ids -> F32 [K, n, B2, B3]:
                ///< dst row (i, b2, b3) = src0 row (src1[i, b2, b3], b2, b3); an I32 src0 gives I32
    SET_ROWS,   ///< the node is a view of src0 [K, R, B2, B3] (any type), src1 F32 [K, n, B2, B3] rows,
                ///< src2 I64/I32 [n, C2, C3] ids (B2 % C2 == 0, B3 % C3 == 0): row (src2[i, b2 % C2, b3 % C3],
                ///< b2, b3) of src0 = src1 row (i, b2, b3) converted to src0's type; other rows kept
    CPY,        ///< src0 -> src1's storage (the node is a view of src1), converted to src1's type; same
                ///< element count, matched in ne order; with a block type, equal ne[0] and rows matched.
                ///< Without src1 (a cast) the node's own storage and type are the destination
    CONT,       ///< contiguous copy of a (possibly permuted/strided) src0, same type; the node's shape may
                ///< differ (same element count, elements in ne order)
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
                ///< SWIGLU: silu(x) * g; GEGLU: gelu_tanh(x) * g; SWIGLU_OAI: op_params f32 [2] = alpha,
                ///< [3] = limit, x' = min(x, limit), g' = clamp(g, -limit, limit), x' * sigmoid(alpha x') * (g' + 1).
                ///< The swapped flag applies to the one-src form only
    // ---- reductions and normalisation -----------------------------------------------------
    SUM_ROWS,   ///< [K, ...] -> [1, ...] sums over ne[0]
    MEAN,       ///< [K, ...] -> [1, ...] means over ne[0]
    ARGMAX,     ///< F32 [K, R, B2, B3] -> I32 [R, B2, B3]: index of the largest value of each row (first on ties)
    ARGSORT,    ///< F32 [K, ...] -> I32 [K, ...]: per-row index order, stable; op_params[0] 0 = ascending,
                ///< 1 = descending
    NORM,       ///< (x - mean) / sqrt(var + eps) per row; op_params f32 [0] = eps
    RMS_NORM,   ///< x / sqrt(mean(x²) + eps) per row; op_params f32 [0] = eps
    L2_NORM,    ///< x / max(‖x‖₂, eps) per row; op_params f32 [0] = eps
    // ---- matrix products ------------------------------------------------------------------
    MUL_MAT,    ///< src0 w [K, N, B2, B3] (any supported type), src1 x F32 [K, M, B2', B3'] -> F32 [N, M, B2', B3'];
                ///< y = x · wᵀ; w's batch dims broadcast over x's (B2' % B2 == 0, B3' % B3 == 0) by
                ///< division, not modulo: x batch i2 uses w batch i2 / (B2'/B2) (likewise i3), so
                ///< consecutive x batches share a w matrix (GQA). x may be non-contiguous (and F16/BF16)
    MUL_MAT_ID, ///< src0 experts [K, N, E], src1 x [K, U, T] (E_used % U == 0: U = 1 or E_used), src2 ids I32 [E_used, T]
                ///< -> F32 [N, E_used, T]: y[:, e, t] = experts[ids[e, t]] · x[:, e % U, t];
                ///< an id outside [0, E) yields a zero column y[:, e, t] (data cannot be validated earlier)
    // ---- attention --------------------------------------------------------------------------
    ROPE,       ///< rotary position embedding of src0 F32/F16 [D, H, T, B] with positions src1 I32 [T]
                ///< (optional src2 freq factors F32 [n_dims/2]) -> src0's type and shape; op_params: [1] n_dims
                ///< (even, <= D; dims past it copied), [2] mode (0 NORM: adjacent pairs, 2 NEOX: halves),
                ///< [4] n_ctx_orig, f32 [5] freq_base, [6] freq_scale, [7] ext_factor, [8] attn_factor,
                ///< [9] beta_fast, [10] beta_slow (YaRN); [0] and [3] unused (formula in cpu/ref/rope.cpp)
    SOFT_MAX,   ///< softmax(src0 * scale + mask * slope) per row of src0 F32 [K, M, H, B]; src1 mask F32/F16
                ///< [K, M', H', B'] optional, M' >= M, row i1 of head i2, batch i3 uses mask row
                ///< (i1, i2 % H', i3 % B'); src2 sinks F32 [H] optional: an extra unscaled logit per head in the
                ///< normaliser, no output; slope = ALiBi slope of head i2 (1 if max_bias = 0);
                ///< op_params f32 [0] scale, [1] max_bias. A row that is all -inf gives zeros (not NaN)
    FLASH_ATTN_EXT, ///< src0 q F32 [D, T, H, B], src1 k [D, KV, H_kv, B_kv], src2 v [Dv, KV, H_v, B_v]
                    ///< (F32/F16/Q8_0 or any supported type; GQA: head h uses K/V head h / (H / H_kv), likewise
                    ///< batch), src3 mask F16/F32 [KV, T', M2, M3] optional (T' >= T, padded; used as
                    ///< mask[:, t, h % M2, b % M3]), src4 sinks F32 [H] optional -> F32 [Dv, H, T, B] (permuted, as
                    ///< ggml); op_params f32 [0] scale, [1] max_bias, [2] logit_softcap:
                    ///< s = softcap·tanh(scale·q·k / softcap) (if softcap != 0) + slope·mask, softmax over KV
                    ///< (with the sink), times V. A query whose scores are all -inf gives zeros (not NaN)
    // ---- shape building -------------------------------------------------------------------
    CONCAT,     ///< src0, src1 joined along op_params[0] (dim)
    REPEAT,     ///< src0 tiled to the shape of the node (each dim a multiple of src0's)
    PAD,        ///< src0 zero-padded per dim d: op_params[2d] zeros before, [2d + 1] zeros after
                ///< (lp0, rp0, lp1, rp1, ... as ggml)
    CUMSUM,     ///< inclusive prefix sum along ne[0]
    FILL,       ///< every element = op_params f32 [0]; src0 only gives the shape and type
    DIAG,       ///< src0 [K, 1, ...] -> [K, K, ...] with src0 on the diagonal
    TRI,        ///< keeps a triangle of square src0, zero elsewhere; op_params[0] = TriType: element
                ///< [i0, i1] kept when i0 < i1 (LOWER), i0 <= i1 (LOWER_DIAG), i0 > i1 (UPPER), i0 >= i1 (UPPER_DIAG)
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

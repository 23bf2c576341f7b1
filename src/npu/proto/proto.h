/* The wire format between tessel's NPU host runtime and its device runtime (DESIGN.md, "The npu
 * offload path"). Plain C with fixed-width types so the device can be built freestanding for a
 * 32-bit DSP: no pointers cross the link, only buffer indices and byte offsets. Every struct is a
 * multiple of 8 bytes (checked below) and is read at the same layout by both sides.
 *
 * A batch is one contiguous block in the op-queue buffer:
 *     [tsl_npu_buf_desc x n_bufs][tsl_npu_tensor_desc x n_tensors][tsl_npu_op_desc x n_ops]
 *     [tsl_npu_profile x n_ops] ([tsl_npu_span ...] with TSL_NPU_BATCH_TRACE, see tsl_npu_span)
 * The host writes the first three arrays and a tsl_npu_batch_req naming the block; the device
 * runs the ops in order, fills the profile records and answers with a tsl_npu_batch_rsp.
 *
 * Every op's kparams (TSL_NPU_KPARAMS_BYTES) start with a tsl_npu_kparams_header that the host
 * fills for every op it plans (zero for ops it does not plan, e.g. FENCE and MEMCPY):
 *     bytes [0, 4)   scratch_bytes: VTCM bytes the op's kernel needs (0: none)
 *     bytes [4, 8)   flags: reserved, 0
 *     bytes [8, 256) the op's own parameters (tsl_npu_rope_kparams, tsl_npu_softmax_kparams,
 *                    tsl_npu_flash_attn_kparams, tsl_npu_matmul_kparams), at
 *                    TSL_NPU_KPARAMS_BODY (8-byte aligned: kparams sits at byte 72 of the op)
 * The device refuses a batch with an op whose scratch_bytes exceed its VTCM (TSL_NPU_ERR_NO_VTCM,
 * err_op = that op) before running any op, and gives each op's kernel at most scratch_bytes.
 *
 * Type codes are GGUF's ggml_type ids (a fact of the format, shared with src/core/dtype.hpp).
 */
#ifndef TESSEL_NPU_PROTO_H
#define TESSEL_NPU_PROTO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on any change of a struct below or of an opcode's meaning; the host refuses a device
 * that reports another version. */
#define TSL_NPU_PROTO_VERSION 8u

#define TSL_NPU_MAX_SRC 12          /* enough for an N-way fused matmul or a 4-rank all-reduce + residual */
#define TSL_NPU_MAX_DST 8
#define TSL_NPU_NONE 0xffffu        /* unused src/dst slot */
#define TSL_NPU_MAX_TENSORS 0xfffeu /* tensor indices are u16; 0xffff means none */
#define TSL_NPU_MAX_BUFS 256u       /* buffer descriptors per batch */
#define TSL_NPU_OP_PARAMS 16        /* int32 op params, copied from the node */
#define TSL_NPU_KPARAMS_BYTES 256   /* kernel parameters planned by the host */
#define TSL_NPU_N_COUNTERS 8        /* profile counters per op */
#define TSL_NPU_FENCE_SLOT_BYTES 128u
#define TSL_NPU_PAGE_BYTES 4096u    /* shared buffers are rounded to pages, plus one guard page */

/* Status codes: 0 is success. The device answers with 1..10 and 15; the host adds the link-level
 * ones (11..14) when a device stops answering. */
enum tsl_npu_status {
    TSL_NPU_OK = 0,
    TSL_NPU_ERR_UNKNOWN_OP = 1,   /* opcode the device does not implement */
    TSL_NPU_ERR_BAD_DESC = 2,     /* tensor/buffer index out of range, offset + size past a buffer */
    TSL_NPU_ERR_BAD_TYPE = 3,     /* type or shape combination the op does not take */
    TSL_NPU_ERR_BAD_BATCH = 4,    /* counts or block size inconsistent */
    TSL_NPU_ERR_NO_MAPPING = 5,   /* buffer fd not mapped on the device */
    TSL_NPU_ERR_MAP_FAILED = 6,   /* the device could not map a buffer */
    TSL_NPU_ERR_NO_MEMORY = 7,    /* scratch or table exhausted */
    TSL_NPU_ERR_VERSION = 8,      /* protocol version mismatch */
    TSL_NPU_ERR_CANCELLED = 9,    /* the host cancelled the batch */
    TSL_NPU_ERR_INJECTED = 10,    /* fault injection (tests) */
    TSL_NPU_ERR_TIMEOUT = 11,     /* host: no progress within TESSEL_NPU_TIMEOUT_MS */
    TSL_NPU_ERR_DEVICE_LOST = 12, /* host: the device process exited */
    TSL_NPU_ERR_PROTOCOL = 13,    /* host: a response with a wrong size or sequence */
    TSL_NPU_ERR_QUEUE_FULL = 14,  /* host: no free slot in the request ring */
    TSL_NPU_ERR_NO_VTCM = 15      /* an op states more scratch than the device's VTCM, or its kernel
                                     asked for more than the op stated */
};

/* Opcodes (the device's own numbering; the host maps tessel ops onto them). */
enum tsl_npu_opcode {
    TSL_NPU_OP_NOP = 0,
    TSL_NPU_OP_ADD = 1,   /* dst = src0 + src1 (src1 broadcast in every dim: src1.ne[i] divides src0.ne[i]) */
    TSL_NPU_OP_MUL = 2,   /* dst = src0 * src1 (broadcast like ADD) */
    TSL_NPU_OP_CPY = 3,   /* dst = src0 converted (F32/F16 each way), element order of ne */
    TSL_NPU_OP_SCALE = 4, /* dst = src0 * params[0] + params[1] (floats stored as bits) */
    TSL_NPU_OP_FENCE = 5, /* writes the u64 in params[0..1] to fence slot params[2] of buffer dst0 */
    TSL_NPU_OP_MEMCPY = 6, /* copies the bytes of src0 to dst0 (equal `size`; types ignored) */
    TSL_NPU_OP_SUB = 7,      /* dst = src0 - src1 (broadcast like ADD) */
    TSL_NPU_OP_DIV = 8,      /* dst = src0 / src1 (broadcast like ADD) */
    TSL_NPU_OP_RMS_NORM = 9, /* dst = x / sqrt(mean(x^2) + eps) per row; eps = float bits of params[0];
                                optional src1 weight [ne0, ...] (broadcast like ADD): times it (fused MUL) */
    TSL_NPU_OP_NORM = 10,    /* dst = (x - mean) / sqrt(var + eps) per row; eps, src1 weight as RMS_NORM */
    TSL_NPU_OP_UNARY = 11,   /* dst = f(src0), f = params[0]: tessel's UnaryOp numbering (op.hpp) */
    TSL_NPU_OP_GLU = 12,     /* params[0] = GluOp, params[1] = swapped; src0 [2K] halves, or src0, src1 [K] */
    TSL_NPU_OP_SUM_ROWS = 13, /* dst [1, ...] = sum of each row of src0 */
    TSL_NPU_OP_SOFT_MAX = 14, /* softmax(src0 * scale + slope * src1 mask) with src2 sinks; kparams: ALiBi bases */
    TSL_NPU_OP_ROPE = 15,     /* src0 x, src1 I32 positions, src2 freq factors; kparams: tsl_npu_rope_kparams */
    TSL_NPU_OP_GET_ROWS = 16, /* dst F32 row (i, b2, b3) = src0 row (src1[i, b2, b3], b2, b3) */
    TSL_NPU_OP_SET_ROWS = 17, /* dst0 row (src1[i, b2 % C2, b3 % C3], b2, b3) = src0 row (i, b2, b3) */
    TSL_NPU_OP_ARGSORT = 18,  /* dst I32 = stable index order of each row of src0; params[0] 1 = descending */
    TSL_NPU_OP_MUL_MAT = 19,  /* dst F32 [N, M, B2, B3] = src1 [K, M, B2, B3] . src0 [K, N, b2, b3]^T (weight batch
                                 broadcast); kparams: tsl_npu_matmul_kparams. Fused forms: optional src2 bias
                                 F32 [N] added; more outputs dst[o] from weight src[1 + 2o], bias src[2 + 2o]
                                 (all weights of src0's type, K and batch dims; ops_matmul.c) */
    TSL_NPU_OP_MUL_MAT_ID = 20, /* dst F32 [N, n_used, T] column (e, t) = src0 expert src2[e, t] . src1 [K, U, T]
                                   column (e % U, t); ids out of range give zero columns; more outputs dst[o]
                                   from weight src[2 + o] (same ids and activations) */
    TSL_NPU_OP_FLASH_ATTN_EXT = 21, /* src0 q, src1 k, src2 v, src3 mask, src4 sinks; kparams: tsl_npu_flash_attn_kparams */
    TSL_NPU_OP_FENCE_WAIT = 22, /* waits until the u64 in fence slot params[2] of src0 (this or another session's
                                   fence buffer) is >= params[0] (low 32 bits) | params[1] (high): a session's
                                   fence values only grow. No heartbeat while it waits: a wait longer than the
                                   host's timeout ends in its cancel (TSL_NPU_ERR_CANCELLED) */
    TSL_NPU_OP_ALLREDUCE = 23, /* dst[0..n) are the F32 tensors (same shape) of the n = params[1] ranks (2..4) of an
                                  all-reduce, in rank order; rank params[0] sums its share (tsl_npu_allreduce_share,
                                  params[2] a tsl_npu_allreduce_mode) over the n tensors in rank order and stores
                                  the sum in every one, so all ranks end with the same bits; kparams:
                                  tsl_npu_allreduce_kparams */
    TSL_NPU_OP_ALLREDUCE_ADD = 24, /* ALLREDUCE fused with the ADD after it: src[0..n) the n = params[1] ranks'
                                      F32 tensors (read only), src[n] the F32 addend (dst's shape, or
                                      broadcast along ne[1..3]), dst[0] this rank's F32 output (the tensors'
                                      shape): every element, ((x0 + x1) + x2) + x3 + addend, params[0] the
                                      rank, params[2] a tsl_npu_allreduce_mode (how workers split it);
                                      kparams: tsl_npu_allreduce_kparams */
    TSL_NPU_OP_COUNT = 25
};

/* All-reduce shares. 1-D: the tensors are contiguous and their elements are split in pieces of a
 * multiple of 128 (the last ranks' pieces may be shorter or empty); 2-D: rows (ne[1..3] together)
 * split evenly, any row stride. Rank `rank` of `n` owns [*lo, *hi) of `count` elements or rows. */
enum tsl_npu_allreduce_mode { TSL_NPU_ALLREDUCE_1D = 0, TSL_NPU_ALLREDUCE_2D = 1 };

static inline void tsl_npu_allreduce_share(uint64_t count, uint32_t n, uint32_t rank, uint32_t mode, uint64_t* lo, uint64_t* hi) {
    if (mode == TSL_NPU_ALLREDUCE_1D) {
        const uint64_t piece = ((count + n - 1) / n + 127) / 128 * 128;
        *lo = rank * piece < count ? rank * piece : count;
        *hi = *lo + piece < count ? *lo + piece : count;
    } else {
        *lo = count * rank / n;
        *hi = count * (rank + 1) / n;
    }
}

/* Kernel parameters of ALLREDUCE and ALLREDUCE_ADD (at TSL_NPU_KPARAMS_BODY): the host's plan
 * (src/npu/host/allreduce.cpp). Each worker streams its piece through two VTCM buffers (the
 * running sum and the next rank's block) of `block` elements (1-D) or rows (2-D) each. */
typedef struct tsl_npu_allreduce_kparams {
    uint32_t block;    /* elements (1-D, a multiple of 128) or rows (2-D) per step */
    uint32_t reserved; /* 0 */
} tsl_npu_allreduce_kparams;

/* Bytes of one element (1-D) or row of ne0 floats (2-D, rounded up to 64 bytes) in VTCM. */
static inline uint64_t tsl_npu_allreduce_unit_bytes(uint32_t mode, int64_t ne0) {
    return mode == TSL_NPU_ALLREDUCE_1D ? 4u : (((uint64_t)ne0 * 4u + 63u) & ~(uint64_t)63u);
}

/* VTCM bytes ALLREDUCE and ALLREDUCE_ADD state (and their kernels take): two buffers of `block`
 * units per device worker thread (n_threads 0 counts as 1). */
static inline uint64_t tsl_npu_allreduce_scratch(uint32_t mode, int64_t ne0, uint32_t block, uint32_t n_threads) {
    return 2u * (uint64_t)block * tsl_npu_allreduce_unit_bytes(mode, ne0) * (n_threads ? n_threads : 1u);
}

/* UNARY kinds the device implements (params[0]), numbered as tessel's UnaryOp (src/graph/op.hpp). */
enum tsl_npu_unary {
    TSL_NPU_UNARY_SILU = 0,
    TSL_NPU_UNARY_GELU = 1, /* the tanh approximation */
    TSL_NPU_UNARY_SIGMOID = 4,
    TSL_NPU_UNARY_NEG = 5,
    TSL_NPU_UNARY_EXP = 6,
    TSL_NPU_UNARY_TANH = 8
};

/* GLU kinds the device implements (params[0]), numbered as tessel's GluOp. */
enum tsl_npu_glu { TSL_NPU_GLU_SWIGLU = 0, TSL_NPU_GLU_GEGLU = 1 };

/* GGUF type ids the device knows (ggml_type numbering). */
enum tsl_npu_type {
    TSL_NPU_TYPE_F32 = 0,
    TSL_NPU_TYPE_F16 = 1,
    TSL_NPU_TYPE_Q4_0 = 2,
    TSL_NPU_TYPE_Q4_1 = 3,
    TSL_NPU_TYPE_Q8_0 = 8,
    TSL_NPU_TYPE_IQ4_NL = 20,
    TSL_NPU_TYPE_I32 = 26,
    TSL_NPU_TYPE_I64 = 27,
    TSL_NPU_TYPE_MXFP4 = 39
};

/* Buffer flags. */
#define TSL_NPU_BUF_WEIGHTS 0x1u /* holds model weights (may be repacked) */
#define TSL_NPU_BUF_HOST 0x2u    /* host-visible compute memory */
#define TSL_NPU_BUF_FENCE 0x4u   /* fence slots */

/* Tensor flags. */
#define TSL_NPU_TENSOR_WEIGHT 0x1u
#define TSL_NPU_TENSOR_REPACKED 0x2u
#define TSL_NPU_TENSOR_FENCE 0x4u

/* One shared buffer used by a batch, named by the host's fd (the device keeps its own mapping
 * per host fd). size is the mapped size in bytes (page-rounded, without the guard page). */
typedef struct tsl_npu_buf_desc {
    int32_t fd;
    uint32_t flags;
    uint64_t size;
} tsl_npu_buf_desc;

/* One tensor: bytes [offset, offset + size) of buffer `buf`. ne/nb follow GGUF (ne[0] innermost,
 * nb[i] byte strides); size is the span of the data in bytes. */
typedef struct tsl_npu_tensor_desc {
    uint32_t buf;
    uint32_t type;
    uint64_t offset;
    uint64_t size;
    int64_t ne[4];
    uint64_t nb[4];
    uint32_t flags;
    uint32_t reserved;
} tsl_npu_tensor_desc;

/* One op: inputs src[] and outputs dst[] are tensor indices into the batch's table. */
typedef struct tsl_npu_op_desc {
    uint32_t opcode;
    uint32_t flags;
    int32_t params[TSL_NPU_OP_PARAMS];
    uint8_t kparams[TSL_NPU_KPARAMS_BYTES];
    uint16_t src[TSL_NPU_MAX_SRC];
    uint16_t dst[TSL_NPU_MAX_DST];
} tsl_npu_op_desc;

/* The first bytes of every op's kparams (see the layout above). */
typedef struct tsl_npu_kparams_header {
    uint32_t scratch_bytes; /* VTCM bytes the op's kernel needs (0: none) */
    uint32_t flags;         /* reserved, 0 */
} tsl_npu_kparams_header;

/* Byte offset of an op's own parameters in kparams, after the header. */
#define TSL_NPU_KPARAMS_BODY 8u

/* Kernel parameters of ROPE (at TSL_NPU_KPARAMS_BODY of the op's kparams), planned by the host in double precision from the node's
 * op_params (formulas in src/cpu/ref/rope.cpp): pair j of a row at position p turns by
 * theta_j = p * theta_scale^j / ff_j, interpolated with ramp(j) = 1 - clamp((j - corr_lo) /
 * max(0.001, corr_hi - corr_lo), 0, 1); ext_factor == 0 means no YaRN mix. */
typedef struct tsl_npu_rope_kparams {
    double theta_scale; /* freq_base^(-2 / n_dims) */
    double freq_scale;
    double ext_factor;
    double mscale; /* attn_factor, times 1 + 0.1 ln(1 / freq_scale) with YaRN */
    double corr_lo;
    double corr_hi;
} tsl_npu_rope_kparams;

/* Kernel parameters of SOFT_MAX (at TSL_NPU_KPARAMS_BODY of the op's kparams; FLASH_ATTN_EXT's start with them): the ALiBi slope of head h is m0^(h + 1) for h < n_head_log2,
 * else m1^(2 (h - n_head_log2) + 1) (all slopes 1 when max_bias == 0: m0 = m1 = 1). */
typedef struct tsl_npu_softmax_kparams {
    double m0;
    double m1;
    int64_t n_head_log2;
} tsl_npu_softmax_kparams;

/* VTCM bytes SOFT_MAX states (and its kernel takes): one F32 row buffer of ne0 logits per device
 * worker thread (hwinfo.n_threads), each rounded up to 64 bytes (whole 16-lane float vectors). */
static inline uint64_t tsl_npu_softmax_scratch(int64_t ne0, uint32_t n_threads) {
    const uint64_t row = ((uint64_t)ne0 * 4u + 63u) & ~(uint64_t)63u;
    return row * (n_threads ? n_threads : 1u);
}

/* Matmul kernels (MUL_MAT, MUL_MAT_ID), chosen by the host (docs/npu.md, "Matmul kernels"). */
enum tsl_npu_mm_kernel {
    TSL_NPU_MM_FLAT = 1,  /* plain F16/F32 weight rows, float dot products */
    TSL_NPU_MM_TILED = 2, /* 32x32 weight tiles (REPACKED), activations quantized to Q8 per 32-block */
    TSL_NPU_MM_MATRIX = 3 /* the matrix unit on 32x32 weight tiles (virtual NPU: AMX-INT8), Q8 activations */
};

/* Kernel parameters of MUL_MAT and MUL_MAT_ID (at TSL_NPU_KPARAMS_BODY of the op's kparams). */
/* The host's plan (src/npu/host/plan_matmul.hpp); a 0 in the last three fields means the kernel's
 * default: every activation row in one step, ~4 claims per worker, every worker. */
typedef struct tsl_npu_matmul_kparams {
    uint32_t kernel; /* enum tsl_npu_mm_kernel */
    uint32_t dma;    /* TILED: 0 reads tiles in place; 1 streams each row tile's K tiles through the platform's DMA
                        stand-in (double-buffered; a platform may prefetch and read in place); 2 the same as copies */
    uint32_t act_rows; /* TILED, MATRIX: src1 rows quantized to Q8 into VTCM per step (rows in ne order); every
                          item runs once per step against that step's columns */
    uint32_t chunk;    /* items (row tiles) a worker claims at a time */
    uint32_t threads;  /* workers that run the op (<= hwinfo.n_threads); the others return at once */
    uint16_t part;     /* with n_parts > 1: the op computes only part `part` of every output's row tiles, */
    uint16_t n_parts;  /* row tiles [n_rt * part / n_parts, n_rt * (part + 1) / n_parts) (a group's rank);
                          0 or 1: all rows */
} tsl_npu_matmul_kparams;

/* Most parts a matmul's rows may be split into (tsl_npu_matmul_kparams.n_parts). */
#define TSL_NPU_MM_MAX_PARTS 16u

/* Activation columns a matmul kernel computes per pass over a row tile (its accumulators). */
#define TSL_NPU_MM_COLS 64u

/* Bytes of one weight tile reshaped for the matrix unit: its 32 x 32 int8 values as two AMX B
 * tiles (rows 0-15, 16-31; 8 rows of 64 bytes each), then its 32 row scales and 32 mins as floats. */
#define TSL_NPU_MM_MATRIX_TILE_BYTES 1280u

/* Bytes of one 32x32 tile of a tileable weight type (src/npu/host/tiled.hpp), 0 for others. */
static inline uint32_t tsl_npu_tile_bytes(uint32_t type) {
    switch (type) {
    case TSL_NPU_TYPE_Q4_0: return 576;
    case TSL_NPU_TYPE_Q4_1: return 640;
    case TSL_NPU_TYPE_Q8_0: return 1088;
    case TSL_NPU_TYPE_IQ4_NL: return 576;
    case TSL_NPU_TYPE_MXFP4: return 544;
    default: return 0;
    }
}

/* VTCM bytes of one activation row of k elements (k % 32 == 0) quantized to Q8: k int8 quants,
 * then k/32 float scales, then k/32 int32 quant sums, each part rounded up to 64 bytes. */
static inline uint64_t tsl_npu_q8_row_bytes(int64_t k) {
    const uint64_t q = ((uint64_t)k + 63u) & ~(uint64_t)63u;
    const uint64_t s = ((uint64_t)(k / 32) * 4u + 63u) & ~(uint64_t)63u;
    return q + 2u * s;
}

/* VTCM bytes a matmul states (and its kernel takes), every piece rounded up to 64 bytes:
 *  FLAT:  per worker one F32 weight row (k floats).
 *  TILED: the Q8 activations of one step (act_rows rows of tsl_npu_q8_row_bytes(k)); per worker the
 *         accumulators (TSL_NPU_MM_COLS x 32 floats) and, with dma, two buffers of one row tile's
 *         k/32 tiles (tile_bytes each).
 *  MATRIX: as TILED, plus per worker one row tile's k/32 reshaped tiles
 *         (TSL_NPU_MM_MATRIX_TILE_BYTES each) and 64 bytes of counters.
 *  All, for MUL_MAT_ID (n_experts > 0): a column count per expert (int32).
 * n_threads: the workers that run it (kparams.threads); 0 counts as 1. */
static inline uint64_t tsl_npu_matmul_scratch(uint32_t kernel, uint32_t dma, uint32_t tile_bytes, int64_t k,
                                              int64_t act_rows, int64_t n_experts, uint32_t n_threads) {
    const uint64_t workers = n_threads ? n_threads : 1u;
    const uint64_t experts = ((uint64_t)n_experts * 4u + 63u) & ~(uint64_t)63u;
    if (kernel == TSL_NPU_MM_FLAT) return workers * (((uint64_t)k * 4u + 63u) & ~(uint64_t)63u) + experts;
    uint64_t per_worker = (uint64_t)TSL_NPU_MM_COLS * 32u * 4u;
    if (dma) per_worker += 2u * (((uint64_t)(k / 32) * tile_bytes + 63u) & ~(uint64_t)63u);
    if (kernel == TSL_NPU_MM_MATRIX) per_worker += (uint64_t)(k / 32) * TSL_NPU_MM_MATRIX_TILE_BYTES + 64u;
    return (uint64_t)act_rows * tsl_npu_q8_row_bytes(k) + workers * per_worker + experts;
}

/* Most query rows FLASH_ATTN_EXT's kernel runs together against each converted block of 16 keys
 * (its per-row state lives on the worker's stack); the host plans q_tile <= this. */
#define TSL_NPU_FA_QTILE 64

/* Kernel parameters of FLASH_ATTN_EXT (at TSL_NPU_KPARAMS_BODY): the ALiBi bases as SOFT_MAX's,
 * then the host's plan (src/npu/host/plan.hpp): q_tile query rows per run (1..TSL_NPU_FA_QTILE;
 * 0: TSL_NPU_FA_QTILE). */
typedef struct tsl_npu_flash_attn_kparams {
    tsl_npu_softmax_kparams alibi;
    uint32_t q_tile;
    uint32_t reserved; /* 0 */
} tsl_npu_flash_attn_kparams;

/* VTCM bytes FLASH_ATTN_EXT states (and its kernel takes) for head dims D (q, k) and Dv (v), per
 * device worker thread: with D and Dv rounded up to 16 floats (Dp, Dvp), q_tile query rows (Dp)
 * and accumulators (Dvp), a block of 16 keys converted to F32 (16 x Dp, transposed) and of 16
 * values (16 x Dvp); 4 bytes each (every part a multiple of 64 bytes). q_tile 0 counts as
 * TSL_NPU_FA_QTILE, n_threads 0 as 1. */
static inline uint64_t tsl_npu_flash_attn_scratch(int64_t D, int64_t Dv, uint32_t q_tile, uint32_t n_threads) {
    const uint64_t dp = ((uint64_t)D + 15u) & ~(uint64_t)15u;
    const uint64_t dvp = ((uint64_t)Dv + 15u) & ~(uint64_t)15u;
    const uint64_t per_worker = ((q_tile ? q_tile : TSL_NPU_FA_QTILE) + 16u) * (dp + dvp) * 4u;
    return per_worker * (n_threads ? n_threads : 1u);
}

/* Host -> device: run the batch at block_offset of the op-queue buffer. */
typedef struct tsl_npu_batch_req {
    uint64_t seq; /* 1, 2, 3, ... per session */
    uint64_t block_offset;
    uint64_t block_size; /* bytes, == tsl_npu_block_size(n_bufs, n_tensors, n_ops) */
    uint32_t n_bufs;
    uint32_t n_tensors;
    uint32_t n_ops;
    uint32_t flags; /* TSL_NPU_BATCH_*; block_size includes the trace spans with TSL_NPU_BATCH_TRACE */
} tsl_npu_batch_req;

/* Device -> host: the batch with sequence `seq` ended. On failure, err_op is the index of the op
 * that failed (0xffffffff when the batch itself was refused) and n_done the ops that completed. */
typedef struct tsl_npu_batch_rsp {
    uint64_t seq;
    uint32_t status;
    uint32_t n_done;
    uint32_t n_bufs;
    uint32_t n_tensors;
    uint32_t n_ops;
    uint32_t err_op;
    uint64_t start_ns; /* CLOCK_MONOTONIC on the device */
    uint64_t stop_ns;
} tsl_npu_batch_rsp;

/* Per-op profile record, written by the device: CLOCK_MONOTONIC ns, cycles, counters:
 *   0: bytes read plus written; 1: ns the op's workers spent reshaping weights into the matrix
 *      unit's layout, summed over workers;
 *   with TSL_NPU_BATCH_COUNTERS (else 0), the platform's event counts during the op summed over
 *   every worker thread (0 where the platform cannot count the event):
 *   2: task-clock ns; 3: page faults; 4: context switches;
 *   5, 6, 7: the hardware events TESSEL_NPU_PMU names, in its order (cycles, instructions,
 *            cache-misses, branch-misses: at most three). */
typedef struct tsl_npu_profile {
    uint64_t start_ns;
    uint64_t stop_ns;
    uint64_t cycles;
    uint64_t counters[TSL_NPU_N_COUNTERS];
} tsl_npu_profile;

#define TSL_NPU_COUNTER_TASK_CLOCK 2
#define TSL_NPU_COUNTER_PAGE_FAULTS 3
#define TSL_NPU_COUNTER_CONTEXT_SWITCHES 4
#define TSL_NPU_COUNTER_PMU 5 /* the first of TSL_NPU_N_COUNTERS - 5 hardware-event slots */

/* tsl_npu_batch_req.flags. */
#define TSL_NPU_BATCH_COUNTERS 0x1u /* fill profile counters 2..7 (per-op event counts) */
#define TSL_NPU_BATCH_TRACE 0x2u    /* the block ends with the batch's trace spans (below) */

/* Parallel calls per op a trace records (TILED/MATRIX matmuls: activation quantization, then
 * compute); a further call is not recorded. */
#define TSL_NPU_TRACE_PHASES 2u

/* With TSL_NPU_BATCH_TRACE, the block continues after the profile records with
 * [tsl_npu_span x n_ops x TSL_NPU_TRACE_PHASES x n_threads] (hwinfo.n_threads): span
 * (op, phase, part) is the part'th share of the op's phase'th parallel call (an op run serially
 * has one part, 0). The device zeroes them before the batch runs; a span with stop_ns 0 did not run. */
typedef struct tsl_npu_span {
    uint64_t start_ns; /* CLOCK_MONOTONIC */
    uint64_t stop_ns;
    uint64_t dma_ns; /* ns of the part inside the platform's DMA calls (weight transfers) */
    uint32_t thread; /* the worker thread that ran the part (0: the executor's own) */
    uint32_t reserved;
} tsl_npu_span;

/* Bytes of a batch's trace spans. */
static inline uint64_t tsl_npu_trace_bytes(uint32_t n_ops, uint32_t n_threads) {
    return (uint64_t)n_ops * TSL_NPU_TRACE_PHASES * (n_threads ? n_threads : 1u) * sizeof(tsl_npu_span);
}

/* What a device reports at session start. */
typedef struct tsl_npu_hwinfo {
    uint32_t proto_version;
    uint32_t n_threads;
    uint64_t vtcm_bytes; /* scratchpad per session */
    uint32_t matrix_unit; /* 1 when the device has a matrix unit */
    uint32_t max_bufs;    /* mappings the device can hold */
    char name[40];
} tsl_npu_hwinfo;

/* A fence slot: the device stores `value` when the FENCE op runs. */
typedef struct tsl_npu_fence_slot {
    uint64_t value;
    uint8_t pad[TSL_NPU_FENCE_SLOT_BYTES - 8];
} tsl_npu_fence_slot;

#if defined(__cplusplus)
#define TSL_NPU_STATIC_ASSERT static_assert
#else
#define TSL_NPU_STATIC_ASSERT _Static_assert
#endif
TSL_NPU_STATIC_ASSERT(sizeof(tsl_npu_buf_desc) == 16, "buf desc layout");
TSL_NPU_STATIC_ASSERT(sizeof(tsl_npu_tensor_desc) == 96, "tensor desc layout");
TSL_NPU_STATIC_ASSERT(sizeof(tsl_npu_op_desc) == 368, "op desc layout");
TSL_NPU_STATIC_ASSERT(sizeof(tsl_npu_batch_req) == 40, "batch req layout");
TSL_NPU_STATIC_ASSERT(sizeof(tsl_npu_batch_rsp) == 48, "batch rsp layout");
TSL_NPU_STATIC_ASSERT(sizeof(tsl_npu_profile) == 88, "profile layout");
TSL_NPU_STATIC_ASSERT(sizeof(tsl_npu_hwinfo) == 64, "hwinfo layout");
TSL_NPU_STATIC_ASSERT(sizeof(tsl_npu_span) == 32, "span layout");
TSL_NPU_STATIC_ASSERT(sizeof(tsl_npu_kparams_header) == TSL_NPU_KPARAMS_BODY, "kparams header layout");
TSL_NPU_STATIC_ASSERT(offsetof(tsl_npu_op_desc, kparams) % 8 == 0, "kparams 8-byte aligned");
TSL_NPU_STATIC_ASSERT(sizeof(tsl_npu_rope_kparams) <= TSL_NPU_KPARAMS_BYTES - TSL_NPU_KPARAMS_BODY, "rope kparams fit");
TSL_NPU_STATIC_ASSERT(sizeof(tsl_npu_softmax_kparams) <= TSL_NPU_KPARAMS_BYTES - TSL_NPU_KPARAMS_BODY,
                      "softmax kparams fit");
TSL_NPU_STATIC_ASSERT(sizeof(tsl_npu_matmul_kparams) == 24 &&
                          sizeof(tsl_npu_matmul_kparams) <= TSL_NPU_KPARAMS_BYTES - TSL_NPU_KPARAMS_BODY,
                      "matmul kparams layout");
TSL_NPU_STATIC_ASSERT(sizeof(tsl_npu_flash_attn_kparams) == 32 &&
                          offsetof(tsl_npu_flash_attn_kparams, alibi) == 0 &&
                          sizeof(tsl_npu_flash_attn_kparams) <= TSL_NPU_KPARAMS_BYTES - TSL_NPU_KPARAMS_BODY,
                      "flash attn kparams layout");
TSL_NPU_STATIC_ASSERT(sizeof(tsl_npu_fence_slot) == TSL_NPU_FENCE_SLOT_BYTES, "fence slot layout");

/* Byte offsets of the arrays of a batch block, and its total size. */
static inline uint64_t tsl_npu_block_tensors_offset(uint32_t n_bufs) {
    return (uint64_t)n_bufs * sizeof(tsl_npu_buf_desc);
}
static inline uint64_t tsl_npu_block_ops_offset(uint32_t n_bufs, uint32_t n_tensors) {
    return tsl_npu_block_tensors_offset(n_bufs) + (uint64_t)n_tensors * sizeof(tsl_npu_tensor_desc);
}
static inline uint64_t tsl_npu_block_profile_offset(uint32_t n_bufs, uint32_t n_tensors, uint32_t n_ops) {
    return tsl_npu_block_ops_offset(n_bufs, n_tensors) + (uint64_t)n_ops * sizeof(tsl_npu_op_desc);
}
static inline uint64_t tsl_npu_block_size(uint32_t n_bufs, uint32_t n_tensors, uint32_t n_ops) {
    return tsl_npu_block_profile_offset(n_bufs, n_tensors, n_ops) + (uint64_t)n_ops * sizeof(tsl_npu_profile);
}

/* Short name of a status code ("OK", "UNKNOWN_OP", ...), for messages. */
static inline const char* tsl_npu_status_name(uint32_t s) {
    switch (s) {
    case TSL_NPU_OK: return "OK";
    case TSL_NPU_ERR_UNKNOWN_OP: return "UNKNOWN_OP";
    case TSL_NPU_ERR_BAD_DESC: return "BAD_DESC";
    case TSL_NPU_ERR_BAD_TYPE: return "BAD_TYPE";
    case TSL_NPU_ERR_BAD_BATCH: return "BAD_BATCH";
    case TSL_NPU_ERR_NO_MAPPING: return "NO_MAPPING";
    case TSL_NPU_ERR_MAP_FAILED: return "MAP_FAILED";
    case TSL_NPU_ERR_NO_MEMORY: return "NO_MEMORY";
    case TSL_NPU_ERR_VERSION: return "VERSION";
    case TSL_NPU_ERR_CANCELLED: return "CANCELLED";
    case TSL_NPU_ERR_INJECTED: return "INJECTED";
    case TSL_NPU_ERR_TIMEOUT: return "TIMEOUT";
    case TSL_NPU_ERR_DEVICE_LOST: return "DEVICE_LOST";
    case TSL_NPU_ERR_PROTOCOL: return "PROTOCOL";
    case TSL_NPU_ERR_QUEUE_FULL: return "QUEUE_FULL";
    case TSL_NPU_ERR_NO_VTCM: return "NO_VTCM";
    default: return "UNKNOWN_STATUS";
    }
}

#ifdef __cplusplus
}
#endif

#endif /* TESSEL_NPU_PROTO_H */

// The host's plan of a device op's resources (docs/npu.md, "Scratchpad (VTCM)"): the scratch
// bytes its kernel will take from the device's VTCM, computed from the node's shapes and what the
// device reported at session start, and the kernels' chunking (matmuls: plan_matmul.hpp;
// FLASH_ATTN_EXT: its query tile). A node whose plan does not fit is not claimed (the CPU takes
// it); a claimed node's plan travels in its op's kparams (proto.h).
#pragma once

#include <cstdint>
#include <string>

#include "graph/tensor.hpp"
#include "npu/host/plan_matmul.hpp"
#include "npu/proto/proto.h"

namespace tessel::npu {

/// What planning needs to know of a device: its scratchpad, its worker threads, and the matmul
/// kernels the configuration allows.
struct DeviceBudget {
    uint64_t vtcm_bytes = 0;  ///< scratchpad bytes (hwinfo.vtcm_bytes, or TESSEL_NPU_VTCM before the session opens)
    uint32_t n_threads = 1;   ///< device worker threads (hwinfo.n_threads, or TESSEL_NPU_THREADS)
    uint32_t mm_kernels = 0;  ///< allowed matmul kernels, bits 1 << tsl_npu_mm_kernel (TESSEL_NPU_MM_SELECT; 0: all)
    bool matrix_unit = false; ///< hwinfo.matrix_unit, unless TESSEL_NPU_MATRIX=0
    uint32_t dma = 1;         ///< weight tiles: 0 in place, 1 streamed, 2 streamed as copies (TESSEL_NPU_DMA)
};

/// The budget a device reports in its hwinfo (every matmul kernel allowed, DMA on).
DeviceBudget budget_of(const tsl_npu_hwinfo& hw);

/// MUL_MAT / MUL_MAT_ID node t as the planner's shape (plan_matmul.hpp): src0 the weight [K, N, ...]
/// (tiled: tile_bytes of its type; a plain F16/F32 weight: float_bytes), src1 the activations,
/// MUL_MAT_ID's src2 the ids [n_used, T]. Requires src0 and src1.
MatmulShape matmul_shape(const Tensor& t);

/// The plan of MUL_MAT / MUL_MAT_ID node t under `budget` (plan_matmul on matmul_shape(t));
/// kernel 0 for other nodes and when nothing fits.
MatmulPlan plan_matmul(const Tensor& t, const DeviceBudget& budget);

/// The matmul kernel (enum tsl_npu_mm_kernel) of node t's plan, or 0 when none applies or fits.
/// Does not judge the other operands (translate_ops.cpp does).
uint32_t plan_matmul_kernel(const Tensor& t, const DeviceBudget& budget);

/// Query rows per run of FLASH_ATTN_EXT node t's kernel (tsl_npu_flash_attn_kparams.q_tile): the
/// largest tile up to TSL_NPU_FA_QTILE whose scratch fits, as fewer runs convert each key block
/// fewer times; 0 for other nodes and when not even one row fits.
uint32_t plan_flash_attn_qtile(const Tensor& t, const DeviceBudget& budget);

/// Bytes of VTCM node t's device kernel takes: SOFT_MAX one F32 row of src0->ne[0] per worker
/// (tsl_npu_softmax_scratch); MUL_MAT / MUL_MAT_ID its plan's scratch (tsl_npu_matmul_scratch of
/// one step's Q8 activations, per-worker accumulators, DMA buffers and panels; none fitting: the
/// smallest plan's, the tiled or flat kernel on one worker, one row a step, no DMA); FLASH_ATTN_EXT its planned query
/// tile's rows, accumulators and a converted block of 16 keys and values per worker, from the head
/// dims q->ne[0] and v->ne[0] (tsl_npu_flash_attn_scratch; none fitting: a tile of one row);
/// 0 for every other op.
uint64_t plan_scratch(const Tensor& t, const DeviceBudget& budget);

/// True when node t's plan fits the device: plan_scratch(t) <= budget.vtcm_bytes (<= UINT32_MAX,
/// the header's field) and, for MUL_MAT / MUL_MAT_ID, a matmul plan exists.
bool plan_fits(const Tensor& t, const DeviceBudget& budget);

/// The kparams header of node t's op under `budget`. Throws tessel::Error(Unsupported) naming the
/// tensor when the plan does not fit.
tsl_npu_kparams_header plan_header(const Tensor& t, const DeviceBudget& budget);

/// Node t's plan in one line for TESSEL_NPU_VERBOSE=2 (matmuls: plan_text; FLASH_ATTN_EXT: its
/// query tile and scratch); empty for ops without a plan of their own.
std::string plan_text(const Tensor& t, const DeviceBudget& budget);

}  // namespace tessel::npu

// The host's plan of a device op's resources (docs/npu.md, "Scratchpad (VTCM)"): the scratch
// bytes its kernel will take from the device's VTCM, computed from the node's shapes and what the
// device reported at session start. A node whose plan does not fit is not claimed (the CPU takes
// it); a claimed node's plan travels in its op's kparams header (proto.h).
#pragma once

#include <cstdint>

#include "graph/tensor.hpp"
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

/// Activation columns per weight matrix (MUL_MAT: src1's ne[1]; MUL_MAT_ID: routed columns per
/// expert, on average) from which the matrix unit takes a tiled matmul: below it the vector
/// kernel is faster on the virtual NPU (AMX vs AVX-512 VNNI, measured: bench/results/npu-matrix-threshold-2026-12-01.md).
inline constexpr int64_t kMatrixMinColumns = 16;

/// The budget a device reports in its hwinfo (every matmul kernel allowed, DMA on).
DeviceBudget budget_of(const tsl_npu_hwinfo& hw);

/// The matmul kernel (enum tsl_npu_mm_kernel) for MUL_MAT / MUL_MAT_ID node t, or 0 when none
/// applies: the chain matrix unit -> tiled vector -> flat vector, each taken when allowed
/// (mm_kernels), when t's weight has its layout (matrix and tiled: the weight stored as tiles,
/// tiled.hpp; flat: a plain F16/F32 weight) and when its scratch fits the VTCM; the matrix unit
/// also needs budget.matrix_unit and at least kMatrixMinColumns columns per weight matrix.
/// Does not judge the other operands (translate_ops.cpp does).
uint32_t plan_matmul_kernel(const Tensor& t, const DeviceBudget& budget);

/// Bytes of VTCM node t's device kernel takes: SOFT_MAX one F32 row of src0->ne[0] per worker
/// (tsl_npu_softmax_scratch); MUL_MAT / MUL_MAT_ID tsl_npu_matmul_scratch of the kernel
/// plan_matmul_kernel picks (the Q8 activations of every src1 row, per-worker accumulators and,
/// with DMA, two row-tile buffers; none fitting: the tiled kernel's need); FLASH_ATTN_EXT query
/// rows, accumulators and a converted block of 16 keys and values per worker, from the head dims
/// q->ne[0] and v->ne[0] (tsl_npu_flash_attn_scratch); 0 for every other op.
uint64_t plan_scratch(const Tensor& t, const DeviceBudget& budget);

/// True when node t's plan fits the device: plan_scratch(t) <= budget.vtcm_bytes (<= UINT32_MAX,
/// the header's field) and, for MUL_MAT / MUL_MAT_ID, plan_matmul_kernel finds a kernel.
bool plan_fits(const Tensor& t, const DeviceBudget& budget);

/// The kparams header of node t's op under `budget`. Throws tessel::Error(Unsupported) naming the
/// tensor when the plan does not fit.
tsl_npu_kparams_header plan_header(const Tensor& t, const DeviceBudget& budget);

}  // namespace tessel::npu

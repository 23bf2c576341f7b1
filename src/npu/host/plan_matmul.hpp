// The matmul planner (docs/npu.md, "Planning"): for a MUL_MAT / MUL_MAT_ID shape and a device's
// budget, the kernel (matrix unit, tiled vector, flat vector), the activation rows quantized per
// step, the items claimed at a time, double buffering and the workers, chosen by a cost model
// among the plans whose scratch (tsl_npu_matmul_scratch) fits the VTCM. A pure function of its
// inputs; plan.hpp applies it to graph nodes.
#pragma once

#include <cstdint>
#include <string>

#include "npu/proto/proto.h"

namespace tessel::npu {

struct DeviceBudget;

/// What the planner needs of a matmul. Counts are elements, rows or columns, all >= 0.
struct MatmulShape {
    int64_t k = 0;         ///< the dot products' length (weight and activation ne[0])
    int64_t n = 0;         ///< weight rows (the output's ne[0])
    int64_t rows = 0;      ///< src1 rows, the activation rows the tiled kernels quantize (ne[1] x ne[2] x ne[3])
    int64_t matrices = 0;  ///< weight matrices the items walk: MUL_MAT src1's ne[2] x ne[3], MUL_MAT_ID the experts
    int64_t columns = 0;   ///< activation columns computed: MUL_MAT `rows`, MUL_MAT_ID the routed ones (ids ne[0] x ne[1])
    int64_t n_experts = 0; ///< MUL_MAT_ID: the experts (a count per expert in VTCM); 0 for MUL_MAT
    uint32_t tile_bytes = 0; ///< a tiled weight: bytes per 32x32 tile (tsl_npu_tile_bytes); 0 otherwise
    uint32_t float_bytes = 0; ///< a plain F16/F32 weight: 2 or 4; 0 otherwise
};

/// A plan; kernel 0 means none fits (the node stays on the CPU).
struct MatmulPlan {
    uint32_t kernel = 0;    ///< enum tsl_npu_mm_kernel
    uint32_t dma = 0;       ///< the weight tiles' transfer (tsl_npu_matmul_kparams.dma): 0 in place, else the budget's mode
    int64_t act_rows = 0;   ///< activation rows quantized per step (FLAT: all rows, read in place)
    int64_t steps = 0;      ///< ceil(rows / act_rows): passes over the weight
    int64_t chunk = 0;      ///< items (32-row tiles of one matrix) a worker claims at a time
    uint32_t threads = 0;   ///< device workers used
    uint64_t scratch = 0;   ///< VTCM bytes: tsl_npu_matmul_scratch of the above
    double cost_ns = 0.0;   ///< the cost model's estimate of the op's device time
};

/// The cheapest plan by the cost model (plan_matmul.cpp) among those allowed by `budget`
/// (mm_kernels, matrix_unit, dma, n_threads) whose scratch fits min(vtcm_bytes, UINT32_MAX):
/// tiled weights (tile_bytes > 0, k % 32 == 0) take MATRIX or TILED, plain float weights FLAT.
/// A larger budget never gives a plan of higher cost. Returns kernel 0 when nothing fits or the
/// weight has neither layout.
MatmulPlan plan_matmul(const MatmulShape& shape, const DeviceBudget& budget);

/// The model's device time (ns) of running `shape` as `plan` (its kernel, dma, steps, threads).
double matmul_cost_ns(const MatmulShape& shape, const MatmulPlan& plan);

/// The plan as its kparams (act_rows, chunk and threads saturated to uint32).
tsl_npu_matmul_kparams matmul_kparams_of(const MatmulPlan& plan);

/// One line for TESSEL_NPU_VERBOSE=2: "kernel=tiled steps=2x256 chunk=4 dma=1 threads=2 scratch=... cost=...us".
std::string plan_text(const MatmulPlan& plan);

}  // namespace tessel::npu

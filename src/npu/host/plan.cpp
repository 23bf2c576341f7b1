// Resource plans of device ops (plan.hpp).
#include "npu/host/plan.hpp"

#include <algorithm>
#include <string>

#include "npu/host/buffer.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {
namespace {

bool allowed(const DeviceBudget& b, uint32_t kernel) { return b.mm_kernels == 0 || (b.mm_kernels & (1u << kernel)); }

/// Scratch of MUL_MAT / MUL_MAT_ID node t with `kernel`.
uint64_t matmul_scratch(const Tensor& t, const DeviceBudget& b, uint32_t kernel) {
    const Tensor& w = *t.src[0];
    const Tensor& x = *t.src[1];
    const uint32_t tile = tsl_npu_tile_bytes(static_cast<uint32_t>(w.type));
    const int64_t experts = t.op == Op::MUL_MAT_ID ? w.ne[2] : 0;
    return tsl_npu_matmul_scratch(kernel, b.dma, tile, w.ne[0], x.n_rows(), experts, b.n_threads);
}

bool fits(uint64_t scratch, const DeviceBudget& b) { return scratch <= std::min<uint64_t>(b.vtcm_bytes, UINT32_MAX); }

/// Activation columns per weight matrix: MUL_MAT src1's ne[1]; MUL_MAT_ID the routed columns
/// (ids' ne[0] x ne[1]) over the experts, rounded down.
int64_t columns_per_matrix(const Tensor& t) {
    if (t.op == Op::MUL_MAT || !t.src[2]) return t.src[1]->ne[1];
    return t.src[2]->ne[0] * t.src[2]->ne[1] / std::max<int64_t>(t.src[0]->ne[2], 1);
}

}  // namespace

DeviceBudget budget_of(const tsl_npu_hwinfo& hw) {
    DeviceBudget b{hw.vtcm_bytes, hw.n_threads};
    b.matrix_unit = hw.matrix_unit != 0;
    return b;
}

uint32_t plan_matmul_kernel(const Tensor& t, const DeviceBudget& budget) {
    if ((t.op != Op::MUL_MAT && t.op != Op::MUL_MAT_ID) || !t.src[0] || !t.src[1]) return 0;
    const Tensor& w = *t.src[0];
    if (stored_tiled(w)) {
        if (budget.matrix_unit && allowed(budget, TSL_NPU_MM_MATRIX) && columns_per_matrix(t) >= kMatrixMinColumns &&
            fits(matmul_scratch(t, budget, TSL_NPU_MM_MATRIX), budget))
            return TSL_NPU_MM_MATRIX;
        const bool ok = allowed(budget, TSL_NPU_MM_TILED) && fits(matmul_scratch(t, budget, TSL_NPU_MM_TILED), budget);
        return ok ? TSL_NPU_MM_TILED : 0;
    }
    const bool plain_float = (w.type == DType::F32 || w.type == DType::F16) && !reads_tiled(w);
    if (plain_float && allowed(budget, TSL_NPU_MM_FLAT) && fits(matmul_scratch(t, budget, TSL_NPU_MM_FLAT), budget))
        return TSL_NPU_MM_FLAT;
    return 0;
}

uint64_t plan_scratch(const Tensor& t, const DeviceBudget& budget) {
    switch (t.op) {
    case Op::SOFT_MAX: return t.src[0] ? tsl_npu_softmax_scratch(t.src[0]->ne[0], budget.n_threads) : 0;
    case Op::MUL_MAT:
    case Op::MUL_MAT_ID: {
        if (!t.src[0] || !t.src[1]) return 0;
        const uint32_t k = plan_matmul_kernel(t, budget);
        const uint32_t fallback = stored_tiled(*t.src[0]) ? uint32_t{TSL_NPU_MM_TILED} : uint32_t{TSL_NPU_MM_FLAT};
        return matmul_scratch(t, budget, k ? k : fallback);
    }
    case Op::FLASH_ATTN_EXT:
        return t.src[0] && t.src[2] ? tsl_npu_flash_attn_scratch(t.src[0]->ne[0], t.src[2]->ne[0], budget.n_threads) : 0;
    default: return 0;
    }
}

bool plan_fits(const Tensor& t, const DeviceBudget& budget) {
    if ((t.op == Op::MUL_MAT || t.op == Op::MUL_MAT_ID) && plan_matmul_kernel(t, budget) == 0) return false;
    return fits(plan_scratch(t, budget), budget);
}

tsl_npu_kparams_header plan_header(const Tensor& t, const DeviceBudget& budget) {
    const uint64_t scratch = plan_scratch(t, budget);
    if (!plan_fits(t, budget))
        throw Error(ErrorCode::Unsupported, std::string("NPU: ") + describe(t) + " (" + op_name(t.op) + ") needs " +
                                                std::to_string(scratch) + " bytes of VTCM, the device has " +
                                                std::to_string(budget.vtcm_bytes) + " (TESSEL_NPU_VTCM)");
    return tsl_npu_kparams_header{static_cast<uint32_t>(scratch), 0};
}

}  // namespace tessel::npu

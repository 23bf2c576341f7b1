// Resource plans of device ops (plan.hpp).
#include "npu/host/plan.hpp"

#include <algorithm>
#include <string>

#include "npu/host/buffer.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {
namespace {

bool fits(uint64_t scratch, const DeviceBudget& b) { return scratch <= std::min<uint64_t>(b.vtcm_bytes, UINT32_MAX); }

uint64_t flash_attn_scratch(const Tensor& t, uint32_t q_tile, const DeviceBudget& b) {
    return tsl_npu_flash_attn_scratch(t.src[0]->ne[0], t.src[2]->ne[0], q_tile, b.n_threads);
}

}  // namespace

DeviceBudget budget_of(const tsl_npu_hwinfo& hw) {
    DeviceBudget b{hw.vtcm_bytes, hw.n_threads};
    b.matrix_unit = hw.matrix_unit != 0;
    return b;
}

MatmulShape matmul_shape(const Tensor& t) {
    const Tensor& w = *t.src[0];
    const Tensor& x = *t.src[1];
    MatmulShape s;
    s.k = w.ne[0];
    s.n = w.ne[1];
    s.rows = x.n_rows();
    s.matrices = x.ne[2] * x.ne[3];
    s.columns = s.rows;
    if (t.op == Op::MUL_MAT_ID) {
        s.matrices = s.n_experts = w.ne[2];
        if (t.src[2]) s.columns = t.src[2]->ne[0] * t.src[2]->ne[1];
    }
    if (stored_tiled(w))
        s.tile_bytes = tsl_npu_tile_bytes(static_cast<uint32_t>(w.type));
    else if ((w.type == DType::F32 || w.type == DType::F16) && !reads_tiled(w))
        s.float_bytes = w.type == DType::F32 ? 4 : 2;
    return s;
}

MatmulPlan plan_matmul(const Tensor& t, const DeviceBudget& budget) {
    if ((t.op != Op::MUL_MAT && t.op != Op::MUL_MAT_ID) || !t.src[0] || !t.src[1]) return {};
    return plan_matmul(matmul_shape(t), budget);
}

uint32_t plan_matmul_kernel(const Tensor& t, const DeviceBudget& budget) { return plan_matmul(t, budget).kernel; }

uint32_t plan_flash_attn_qtile(const Tensor& t, const DeviceBudget& budget) {
    if (t.op != Op::FLASH_ATTN_EXT || !t.src[0] || !t.src[2]) return 0;
    for (uint32_t q_tile = TSL_NPU_FA_QTILE; q_tile >= 1; --q_tile)
        if (fits(flash_attn_scratch(t, q_tile, budget), budget)) return q_tile;
    return 0;
}

uint64_t plan_scratch(const Tensor& t, const DeviceBudget& budget) {
    switch (t.op) {
    case Op::SOFT_MAX: return t.src[0] ? tsl_npu_softmax_scratch(t.src[0]->ne[0], budget.n_threads) : 0;
    case Op::MUL_MAT:
    case Op::MUL_MAT_ID: {
        if (!t.src[0] || !t.src[1]) return 0;
        const MatmulPlan p = plan_matmul(t, budget);
        if (p.kernel != 0) return p.scratch;
        const MatmulShape s = matmul_shape(t);
        const uint32_t kernel = s.tile_bytes ? uint32_t{TSL_NPU_MM_TILED} : uint32_t{TSL_NPU_MM_FLAT};
        return tsl_npu_matmul_scratch(kernel, 0, s.tile_bytes, s.k, std::min<int64_t>(s.rows, 1), s.n_experts, 1);
    }
    case Op::FLASH_ATTN_EXT: {
        if (!t.src[0] || !t.src[2]) return 0;
        const uint32_t q_tile = plan_flash_attn_qtile(t, budget);
        return flash_attn_scratch(t, q_tile ? q_tile : 1, budget);
    }
    default: return 0;
    }
}

bool plan_fits(const Tensor& t, const DeviceBudget& budget) {
    if ((t.op == Op::MUL_MAT || t.op == Op::MUL_MAT_ID) && plan_matmul_kernel(t, budget) == 0) return false;
    if (t.op == Op::FLASH_ATTN_EXT && plan_flash_attn_qtile(t, budget) == 0) return false;
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

std::string plan_text(const Tensor& t, const DeviceBudget& budget) {
    if (t.op == Op::MUL_MAT || t.op == Op::MUL_MAT_ID) return plan_text(plan_matmul(t, budget));
    if (t.op != Op::FLASH_ATTN_EXT) return {};
    return "q_tile=" + std::to_string(plan_flash_attn_qtile(t, budget)) + " threads=" + std::to_string(budget.n_threads) +
           " scratch=" + std::to_string(plan_scratch(t, budget));
}

}  // namespace tessel::npu

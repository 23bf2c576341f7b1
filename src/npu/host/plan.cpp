// Resource plans of device ops (plan.hpp).
#include "npu/host/plan.hpp"

#include <algorithm>
#include <string>

#include "tessel/errors.hpp"

namespace tessel::npu {

DeviceBudget budget_of(const tsl_npu_hwinfo& hw) { return DeviceBudget{hw.vtcm_bytes, hw.n_threads}; }

uint64_t plan_scratch(const Tensor& t, const DeviceBudget& budget) {
    switch (t.op) {
    case Op::SOFT_MAX: return t.src[0] ? tsl_npu_softmax_scratch(t.src[0]->ne[0], budget.n_threads) : 0;
    case Op::FLASH_ATTN_EXT:
        return t.src[0] && t.src[2] ? tsl_npu_flash_attn_scratch(t.src[0]->ne[0], t.src[2]->ne[0], budget.n_threads) : 0;
    default: return 0;
    }
}

bool plan_fits(const Tensor& t, const DeviceBudget& budget) {
    return plan_scratch(t, budget) <= std::min<uint64_t>(budget.vtcm_bytes, UINT32_MAX);
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

#include "cpu/kernels/kernel.hpp"

namespace tessel::cpu {
namespace {

const std::vector<const FastKernel*>& all_kernels() {
    static const std::vector<const FastKernel*> table = [] {
        std::vector<const FastKernel*> t;
#if defined(__x86_64__)
        for (const FastKernel* k : avx2_mul_mat_kernels()) t.push_back(k);
        for (const FastKernel* k : avx2_kquant_mul_mat_kernels()) t.push_back(k);
        for (const FastKernel* k : avx2_row_kernels()) t.push_back(k);
        for (const FastKernel* k : avx2_activation_kernels()) t.push_back(k);
        for (const FastKernel* k : avx2_float_mul_mat_kernels()) t.push_back(k);
        for (const FastKernel* k : avx2_rope_kernels()) t.push_back(k);
        for (const FastKernel* k : avx2_flash_attn_kernels()) t.push_back(k);
        for (const FastKernel* k : avx2_data_kernels()) t.push_back(k);
#endif
        return t;
    }();
    return table;
}

}  // namespace

const char* kernel_path_name(const FastKernel& k, const Tensor& dst) {
    if (!k.gemv_name) return k.name;
    const bool one_row = (dst.op == Op::MUL_MAT && dst.src[1]->ne[1] == 1) ||
                         (dst.op == Op::MUL_MAT_ID && dst.src[2]->ne[1] == 1);
    return one_row ? k.gemv_name : k.name;
}

const FastKernel* select_kernel(const Tensor& dst, const CpuFeatures& f) {
    for (const FastKernel* k : all_kernels())
        if (k->usable(f) && k->supports(dst)) return k;
    return nullptr;
}

}  // namespace tessel::cpu

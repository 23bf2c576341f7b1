#include "cpu/kernels/kernel.hpp"

namespace tessel::cpu {
namespace {

const std::vector<const FastKernel*>& all_kernels() {
    static const std::vector<const FastKernel*> table = [] {
        std::vector<const FastKernel*> t;
#if defined(__x86_64__)
        for (const FastKernel* k : avx512vnni_mul_mat_kernels()) t.push_back(k);
        for (const FastKernel* k : avx512_float_mul_mat_kernels()) t.push_back(k);
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

bool has_avx2_tier(const CpuFeatures& f) { return f.avx2 && f.fma && f.f16c; }
bool has_avx512_tier(const CpuFeatures& f) { return has_avx2_tier(f) && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq; }
bool has_avx512vnni_tier(const CpuFeatures& f) { return has_avx512_tier(f) && f.avx512vnni; }
size_t no_work(const Tensor&, int) { return 0; }

void thread_rows(int64_t n, const ThreadContext& ctx, int64_t& begin, int64_t& end) {
    const int64_t per = (n + ctx.nth - 1) / ctx.nth;
    begin = per * ctx.ith < n ? per * ctx.ith : n;
    end = begin + per < n ? begin + per : n;
}

bool f32_rows(const Tensor& t) { return t.type == DType::F32 && t.nb[0] == sizeof(float); }

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

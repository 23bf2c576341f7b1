#include "cpu/packed/kernel.hpp"
#include "core/env.hpp"

#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <new>
#include <string>

#include "tessel/errors.hpp"

namespace tessel::cpu::packed {

size_t lhs_row_bytes(const Kernel& kern, int64_t k) {
    if (kern.lhs_layout == LhsLayout::Scaled) return static_cast<size_t>(k / 32 * 40);
    return static_cast<size_t>(dtype_row_bytes(kern.lhs, k));
}
size_t lhs_packed_bytes(const Kernel& kern, int64_t m, int64_t k) { return static_cast<size_t>(m) * lhs_row_bytes(kern, k); }
size_t lhs_offset(const Kernel& kern, int64_t m_idx, int64_t k) { return static_cast<size_t>(m_idx) * lhs_row_bytes(kern, k); }
size_t rhs_packed_bytes(const Kernel& kern, int64_t n, int64_t k) { return packed_bytes(*kern.format, n, k); }
size_t rhs_offset(const Kernel& kern, int64_t n_idx, int64_t k) { return group_offset(*kern.format, n_idx, k); }

void pack_f32_rows(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k) {
    const size_t row = static_cast<size_t>(k) * sizeof(float);
    for (int64_t i = 0; i < m; ++i) std::memcpy(dst + static_cast<size_t>(i) * row, reinterpret_cast<const uint8_t*>(x) + i * x_stride, row);
}

void throw_scratch_alloc(size_t bytes) {
    (void)bytes;
    throw std::bad_alloc();
}

const std::vector<const Kernel*>& all_kernels() {
    static const std::vector<const Kernel*> table = [] {
        std::vector<const Kernel*> t;
        [[maybe_unused]] auto add_packed = [&t](std::initializer_list<std::span<Kernel>> tabs) {
            for (std::span<Kernel> tab : tabs)
                for (Kernel& k : tab) {
                    k.format = format_for(k.weight);
                    t.push_back(&k);
                }
        };
        [[maybe_unused]] auto add_rows = [&t](std::initializer_list<std::span<const Kernel>> tabs) {
            for (std::span<const Kernel> tab : tabs)
                for (const Kernel& k : tab) t.push_back(&k);
        };
#if defined(__x86_64__)
        add_packed({kAmxKernels, kAvx512VnniKernels, kQ5Avx512VnniKernels, kKquantAvx512VnniKernels, kIq4nlAvx512VnniKernels});
        add_rows({kAvx512VnniRowsKernels});
        add_packed({kAvx512Kernels});
        add_rows({kAvx512FloatRowsKernels});
        add_packed({kAvx2Kernels, kQ5Avx2Kernels, kKquantAvx2Kernels, kIq4nlAvx2Kernels});
        add_rows({kAvx2RowsKernels, kAvx2KquantRowsKernels, kAvx2FloatRowsKernels});
#elif defined(__aarch64__)
        add_packed({kSmeKernels});
        add_rows({kSmeRowsKernels});
        add_packed({kSveKernels});
        add_rows({kSveRowsKernels});
        add_packed({kI8mmKernels, kDotprodKernels, kNeonKernels});
        add_rows({kNeonRowsKernels});
#endif
        for (const Kernel& k : ref_kernels()) t.push_back(&k);
        return t;
    }();
    return table;
}

bool usable(const Kernel& k, const CpuFeatures& f) { return tier_supported(f, k.tier); }

std::vector<const Kernel*> chain(DType t, const CpuFeatures& f) {
    std::vector<const Kernel*> out;
    for (const Kernel* k : all_kernels())
        if (k->weight == t && usable(*k, f)) out.push_back(k);
    return out;
}

std::vector<const Kernel*> chain(DType t, const CpuFeatures& f, RhsLayout layout) {
    std::vector<const Kernel*> out;
    for (const Kernel* k : chain(t, f))
        if (k->rhs_layout == layout) out.push_back(k);
    return out;
}

int default_matrix_thread_cap(const CpuFeatures& f) {
    if (f.arch != CpuArch::Arm || !f.sme) return 0;
    return f.sme_units > 0 ? f.sme_units : 1;
}

int matrix_thread_cap() {
    static const int cap = [] {
        const int fallback = default_matrix_thread_cap(cpu_features());
        return static_cast<int>(env::whole_number("TESSEL_CPU_MATRIX_THREADS", 0, 1024, static_cast<uint64_t>(fallback)));
    }();
    return cap;
}

Plan plan(const std::vector<const Kernel*>& c, int64_t M, int nth, int cap) {
    Plan p;
    for (const Kernel* k : c)
        if (M >= k->min_m) {
            p.main = k;
            break;
        }
    if (!p.main) p.main = c.back();
    p.main_threads = nth;
    if (p.main->matrix_unit && cap > 0 && cap < nth) {
        for (const Kernel* k : c)
            if (!k->matrix_unit) {
                p.fallback = k;
                break;
            }
        if (p.fallback) p.main_threads = cap;
    }
    return p;
}

}  // namespace tessel::cpu::packed

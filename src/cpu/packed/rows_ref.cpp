// The reference kernels, last in every chain (kernel.hpp): per weight type the reference
// dequantizes, a Rows kernel of tier scalar (every architecture) with F32 activations that
// computes each output as src/cpu/ref/matmul.cpp does: the weight row dequantized with the
// reference dequantizer, dotted with the F32 activation row in double (ref::dot_f64), so at
// TESSEL_CPU_ISA=scalar the driver's results equal the reference bit for bit.
#include <array>
#include <cctype>
#include <string>
#include <utility>
#include <vector>

#include "cpu/packed/kernel.hpp"
#include "cpu/ref/tensor_util.hpp"
#include "quant/quant.hpp"

namespace tessel::cpu::packed {
namespace {

/// out[i][j] = dot_f64(dequant(w_j), x_i): one weight row dequantized at a time into this thread's
/// scratch (grown once per thread and K, then reused).
template <DType T>
void ref_gemm(const GemmArgs& a) {
    thread_local std::vector<float> row;
    if (row.size() < static_cast<size_t>(a.k)) row.resize(static_cast<size_t>(a.k));
    for (int64_t n = 0; n < a.n; ++n) {
        quant::dequantize_row(T, a.rhs + static_cast<size_t>(n) * a.rhs_stride, row.data(), a.k);
        for (int64_t m = 0; m < a.m; ++m) {
            const auto* x = reinterpret_cast<const float*>(a.lhs + static_cast<size_t>(m) * a.lhs_stride);
            float* out = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(a.dst) + static_cast<size_t>(m) * a.dst_stride);
            out[n] = static_cast<float>(ref::dot_f64(row.data(), x, a.k));
        }
    }
}

using GemmFn = void (*)(const GemmArgs&);
template <uint32_t... Ids>
constexpr std::array<GemmFn, sizeof...(Ids)> gemm_table(std::integer_sequence<uint32_t, Ids...>) {
    return {ref_gemm<static_cast<DType>(Ids)>...};
}
constexpr std::array<GemmFn, kDTypeIdEnd> kGemm = gemm_table(std::make_integer_sequence<uint32_t, kDTypeIdEnd>{});

/// The kernel-name spelling of a type: lower case but the K of the K-quants ("q4_K", "iq4_xs").
std::string name_of(DType t) {
    std::string s = dtype_name(t);
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (s.size() > 2 && s.compare(s.size() - 2, 2, "_k") == 0) s.back() = 'K';
    return s;
}

}  // namespace

std::span<const Kernel> ref_kernels() {
    struct Table {
        std::array<std::string, kDTypeIdEnd> gemm_names, gemv_names;  // stable storage of the names
        std::vector<Kernel> kernels;
    };
    static const Table table = [] {
        Table t;
        for (uint32_t id = 0; id < kDTypeIdEnd; ++id) {
            const DTypeInfo* info = dtype_info_from_id(id);
            if (!info || !quant::has_dequantize(info->type)) continue;
            t.gemm_names[id] = name_of(info->type) + "_f32_gemm_ref";
            t.gemv_names[id] = name_of(info->type) + "_f32_gemv_ref";
        }
        for (uint32_t id = 0; id < kDTypeIdEnd; ++id) {
            if (t.gemm_names[id].empty()) continue;
            t.kernels.push_back(Kernel{t.gemm_names[id].c_str(), t.gemv_names[id].c_str(), CpuTier::Scalar, false,
                                       static_cast<DType>(id), DType::F32, 1, 1, 0, 0, 1, 16, 1, pack_f32_rows, kGemm[id],
                                       kGemm[id], LhsLayout::Blocks, nullptr, RhsLayout::Rows});
        }
        return t;
    }();
    return table.kernels;
}

}  // namespace tessel::cpu::packed

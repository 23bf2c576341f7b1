// Rows kernels (src/cpu/packed/kernel.hpp) of MUL_MAT for F16, BF16 or F32 weight rows with F32
// activations, tier avx2 (compiled with -mavx2 -mfma -mf16c; run only when the usable CPU features
// include AVX2, FMA and F16C). Serve the attention products too (K and V caches read through
// permuted views: any row stride). Each output is one dot product of float lanes with FMA, summed
// across lanes at the end.
#include <immintrin.h>

#include <cstring>

#include "cpu/packed/kernel.hpp"
#include "cpu/kernels/vec_math_avx2.hpp"

namespace tessel::cpu {
namespace {

__m256 load8(const float* p) { return _mm256_loadu_ps(p); }
__m256 load8(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
float load1(const float* p) { return *p; }
float load1(const uint16_t* p) { return _cvtsh_ss(*p); }

/// A BF16 weight element (raw bits), distinct from F16's uint16_t. BF16 -> F32 is exact: the
/// bits become the float's upper half.
struct Bf16 {
    uint16_t bits;
};
__m256 load8(const Bf16* p) {
    const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}
float load1(const Bf16* p) {
    const uint32_t bits = static_cast<uint32_t>(p->bits) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

template <class W>
float dot(const W* w, const float* x, int64_t K) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= K; i += 16) {
        acc0 = _mm256_fmadd_ps(load8(w + i), _mm256_loadu_ps(x + i), acc0);
        acc1 = _mm256_fmadd_ps(load8(w + i + 8), _mm256_loadu_ps(x + i + 8), acc1);
    }
    for (; i + 8 <= K; i += 8) acc0 = _mm256_fmadd_ps(load8(w + i), _mm256_loadu_ps(x + i), acc0);
    double sum = avx2::hsum_f64(_mm256_add_ps(acc0, acc1));
    for (; i < K; ++i) sum += static_cast<double>(load1(w + i)) * x[i];
    return static_cast<float>(sum);
}


/// gemm and gemv: out[i][j] = dot(w_j, x_i), one output at a time.
template <class W>
void gemm(const packed::GemmArgs& a) {
    for (int64_t n = 0; n < a.n; ++n) {
        const auto* wrow = reinterpret_cast<const W*>(a.rhs + static_cast<size_t>(n) * a.rhs_stride);
        for (int64_t m = 0; m < a.m; ++m) {
            const auto* xrow = reinterpret_cast<const float*>(a.lhs + static_cast<size_t>(m) * a.lhs_stride);
            reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(a.dst) + static_cast<size_t>(m) * a.dst_stride)[n] = dot(wrow, xrow, a.k);
        }
    }
}

template <class W, DType kType>
constexpr packed::Kernel rows_kernel(const char* gemm_name, const char* gemv_name) {
    return {gemm_name, gemv_name, CpuTier::Avx2, false, kType, DType::F32, 1, 1, 0, 0, 1, 16, 1, packed::pack_f32_rows,
            gemm<W>, gemm<W>, packed::LhsLayout::Blocks, nullptr, packed::RhsLayout::Rows};
}

constexpr packed::Kernel kTable[] = {
    rows_kernel<uint16_t, DType::F16>("f16_f32_gemm_1x1_avx2", "f16_f32_gemv_1x1_avx2"),
    rows_kernel<Bf16, DType::BF16>("bf16_f32_gemm_1x1_avx2", "bf16_f32_gemv_1x1_avx2"),
    rows_kernel<float, DType::F32>("f32_f32_gemm_1x1_avx2", "f32_f32_gemv_1x1_avx2"),
};

}  // namespace

namespace packed {
constinit const std::span<const Kernel> kAvx2FloatRowsKernels{kTable};
}  // namespace packed

}  // namespace tessel::cpu

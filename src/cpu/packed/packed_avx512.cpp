// Packed micro-kernels, avx512 tier (AVX-512 F/BW/VL/DQ): F16 weights (format f16x16 of
// format.hpp) times F32 activations. Per K-element the group's 16 fp16 values are one 32-byte
// load and one vcvtph2ps into a zmm whose lane j is weight row j; each activation value x[i][k]
// is broadcast and FMA-ed into row i's accumulator, so 16 output columns grow per FMA with no
// horizontal sums. The result of an output depends only on its inputs (never on the thread
// count or the call's column range).
#include "cpu/kernels/avx512_intrinsics.hpp"  // first: <immintrin.h> without g++ 12's false warnings

#include <algorithm>

#include "cpu/packed/kernel.hpp"
#include "cpu/packed/row_tiles.hpp"

namespace tessel::cpu::packed {
namespace {

__m512 cvt16h(const uint8_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }

float* out_row(const GemmArgs& a, int64_t i, int64_t n0) {
    return reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(a.dst) + i * a.dst_stride) + n0;
}

__mmask16 column_mask(int n_cols) { return n_cols >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n_cols) - 1); }

/// MR F32 activation rows (starting at row i0) times one f16x16 group over all of K.
template <int MR>
void f16_tile(const GemmArgs& a, int64_t i0, const uint8_t* group, int64_t n0, int n_cols) {
    __m512 acc[MR];
    for (int i = 0; i < MR; ++i) acc[i] = _mm512_setzero_ps();
    const float* x[MR];
    for (int i = 0; i < MR; ++i) x[i] = reinterpret_cast<const float*>(a.lhs + (i0 + i) * a.lhs_stride);
    for (int64_t e = 0; e < a.k; ++e) {
        const __m512 w = cvt16h(group + 32 * e);
        for (int i = 0; i < MR; ++i) acc[i] = _mm512_fmadd_ps(w, _mm512_set1_ps(x[i][e]), acc[i]);
    }
    const __mmask16 mask = column_mask(n_cols);
    for (int i = 0; i < MR; ++i) _mm512_mask_storeu_ps(out_row(a, i0 + i, n0), mask, acc[i]);
}

constexpr int kMr = 8;

void f16_gemm(const GemmArgs& a) {
    const size_t group_bytes = static_cast<size_t>(kGroupRows * a.k * 2);
    for (int64_t n0 = 0; n0 < a.n; n0 += kGroupRows) {
        const uint8_t* group = a.rhs + static_cast<size_t>(n0 / kGroupRows) * group_bytes;
        const int n_cols = static_cast<int>(std::min<int64_t>(kGroupRows, a.n - n0));
        for_row_tiles<kMr>(a.m, [&](auto rows, int64_t i0) { f16_tile<decltype(rows)::value>(a, i0, group, n0, n_cols); });
    }
}

/// One activation row: 8 K-elements per step into separate accumulators (8 independent FMA
/// chains), added at the end.
void f16_gemv(const GemmArgs& a) {
    constexpr int kU = 8;
    const size_t group_bytes = static_cast<size_t>(kGroupRows * a.k * 2);
    const float* x = reinterpret_cast<const float*>(a.lhs);
    for (int64_t n0 = 0; n0 < a.n; n0 += kGroupRows) {
        const uint8_t* group = a.rhs + static_cast<size_t>(n0 / kGroupRows) * group_bytes;
        __m512 acc[kU];
        for (__m512& c : acc) c = _mm512_setzero_ps();
        int64_t e = 0;
        for (; e + kU <= a.k; e += kU)
            for (int u = 0; u < kU; ++u) acc[u] = _mm512_fmadd_ps(cvt16h(group + 32 * (e + u)), _mm512_set1_ps(x[e + u]), acc[u]);
        for (; e < a.k; ++e) acc[0] = _mm512_fmadd_ps(cvt16h(group + 32 * e), _mm512_set1_ps(x[e]), acc[0]);
        for (int s = kU / 2; s > 0; s /= 2)
            for (int u = 0; u < s; ++u) acc[u] = _mm512_add_ps(acc[u], acc[u + s]);
        _mm512_mask_storeu_ps(out_row(a, 0, n0), column_mask(static_cast<int>(std::min<int64_t>(kGroupRows, a.n - n0))), acc[0]);
    }
}


constexpr Kernel kF16 = {"f16_f32_gemm_8x16_avx512", "f16_f32_gemv_1x16_avx512", CpuTier::Avx512, false, DType::F16, DType::F32,
                     kMr, 16, 2, 1, kMr, 16, 1, pack_f32_rows, f16_gemm, f16_gemv};

constinit Kernel table[] = {kF16};

}  // namespace

constinit const std::span<Kernel> kAvx512Kernels{table};

}  // namespace tessel::cpu::packed

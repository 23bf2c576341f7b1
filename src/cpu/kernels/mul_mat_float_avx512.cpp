// Rows kernels (src/cpu/packed/kernel.hpp) of MUL_MAT for F16, BF16 or F32 weight rows with F32
// activations, tier avx512 (compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx2 -mfma
// -mf16c; run only when the usable CPU features include the avx512 tier), as
// mul_mat_float_avx2.cpp.
//
// Tiles of 8 weight rows × 2 activation rows (the best of 1..8 × 1..6 measured on Sapphire
// Rapids for F16/BF16; F32 rows would prefer 4 × 4): each 16-element step loads and widens 8
// weight vectors and 2 activation vectors for 16 FMAs in 16 float lanes; the K tail is a masked
// step (zeros past the end). Each output's lanes are summed in double at the end, so an output's
// arithmetic depends on its two rows only, never on the tile, chunk or thread count.
#include "cpu/kernels/avx512_intrinsics.hpp"  // first: <immintrin.h> without g++ 12's false warnings

#include "cpu/packed/kernel.hpp"

namespace tessel::cpu {
namespace {

constexpr int kWr = 8, kXr = 2;        // tile: weight rows × activation rows

/// Element types of the weight rows: widen(p, mask) gives 16 floats (masked-off lanes 0).
struct F16 {
    uint16_t bits;
    static __m512 widen(const F16* p, __mmask16 m) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p)); }
};
struct Bf16 {
    uint16_t bits;
    static __m512 widen(const Bf16* p, __mmask16 m) {
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
    }
};
struct F32 {
    float value;
    static __m512 widen(const F32* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
};

/// Σ of the 16 lanes in double.
double hsum_f64(__m512 v) {
    const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    const __m512d hi = _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1));
    return _mm512_reduce_add_pd(_mm512_add_pd(lo, hi));
}

/// out[i][j] = w_j · x_i over K for NW weight rows and NX activation rows (the outputs of
/// adjacent weight rows are adjacent: dst.nb[0] = 4).
template <class W, int NW, int NX>
[[gnu::always_inline]] inline void tile(const W* const (&w)[NW], const float* const (&x)[NX], float* const (&out)[NX], int64_t K) {
    __m512 acc[NX][NW];
    for (int i = 0; i < NX; ++i)
        for (int j = 0; j < NW; ++j) acc[i][j] = _mm512_setzero_ps();
    auto step = [&](int64_t k, __mmask16 m) {
        __m512 wv[NW];
        for (int j = 0; j < NW; ++j) wv[j] = W::widen(w[j] + k, m);
        for (int i = 0; i < NX; ++i) {
            const __m512 xv = _mm512_maskz_loadu_ps(m, x[i] + k);
            for (int j = 0; j < NW; ++j) acc[i][j] = _mm512_fmadd_ps(wv[j], xv, acc[i][j]);
        }
    };
    int64_t k = 0;
    for (; k + 16 <= K; k += 16) step(k, 0xffff);
    if (k < K) step(k, static_cast<__mmask16>((1u << (K - k)) - 1));
    for (int i = 0; i < NX; ++i)
        for (int j = 0; j < NW; ++j) out[i][j] = static_cast<float>(hsum_f64(acc[i][j]));
}

/// Runs the tiles of weight rows w[0..NW) (output columns n..n+NW-1) against every activation
/// row of call a.
template <class W, int NW>
void weight_rows(const W* const (&w)[NW], const packed::GemmArgs& a, int64_t n) {
    auto x_row = [&](int64_t m) { return reinterpret_cast<const float*>(a.lhs + static_cast<size_t>(m) * a.lhs_stride); };
    auto o_row = [&](int64_t m) { return reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(a.dst) + static_cast<size_t>(m) * a.dst_stride) + n; };
    int64_t m = 0;
    for (; m + kXr <= a.m; m += kXr) {
        const float* xs[kXr];
        float* os[kXr];
        for (int i = 0; i < kXr; ++i) xs[i] = x_row(m + i), os[i] = o_row(m + i);
        tile<W, NW, kXr>(w, xs, os, a.k);
    }
    for (; m < a.m; ++m) {
        const float* xs[1] = {x_row(m)};
        float* os[1] = {o_row(m)};
        tile<W, NW, 1>(w, xs, os, a.k);
    }
}

/// gemm and gemv: tiles of kWr weight rows, the last < kWr rows of the call one by one.
template <class W>
void gemm(const packed::GemmArgs& a) {
    auto w_row = [&](int64_t r) { return reinterpret_cast<const W*>(a.rhs + static_cast<size_t>(r) * a.rhs_stride); };
    int64_t n = 0;
    for (; n + kWr <= a.n; n += kWr) {
        const W* rows[kWr];
        for (int j = 0; j < kWr; ++j) rows[j] = w_row(n + j);
        weight_rows<W, kWr>(rows, a, n);
    }
    for (; n < a.n; ++n) {
        const W* rows[1] = {w_row(n)};
        weight_rows<W, 1>(rows, a, n);
    }
}

template <class W, DType kType>
constexpr packed::Kernel rows_kernel(const char* gemm_name, const char* gemv_name) {
    return {gemm_name, gemv_name, CpuTier::Avx512, false, kType, DType::F32, kXr, kWr, 0, 0, kXr, 16, 1, packed::pack_f32_rows,
            gemm<W>, gemm<W>, packed::LhsLayout::Blocks, nullptr, packed::RhsLayout::Rows};
}

constexpr packed::Kernel kTable[] = {
    rows_kernel<F16, DType::F16>("f16_f32_gemm_2x8_avx512", "f16_f32_gemv_1x8_avx512"),
    rows_kernel<Bf16, DType::BF16>("bf16_f32_gemm_2x8_avx512", "bf16_f32_gemv_1x8_avx512"),
    rows_kernel<F32, DType::F32>("f32_f32_gemm_2x8_avx512", "f32_f32_gemv_1x8_avx512"),
};

}  // namespace

namespace packed {
constinit const std::span<const Kernel> kAvx512FloatRowsKernels{kTable};
}  // namespace packed

}  // namespace tessel::cpu

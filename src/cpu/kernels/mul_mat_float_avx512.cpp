// MUL_MAT of F16, BF16 or F32 weights with F32 activations, AVX-512 (compiled with -mavx512f
// -mavx512bw -mavx512vl -mavx512dq -mavx2 -mfma -mf16c; selected only when the usable CPU
// features include the avx512 tier). Same contract as mul_mat_float_avx2.cpp: weight and
// activation rows contiguous (nb[0] = element size), other strides free, weight batches shared
// by division (x batch i2 reads weight batch i2 / (B2'/B2)).
//
// Tiles of 8 weight rows × 2 activation rows (the best of 1..8 × 1..6 measured on Sapphire
// Rapids for F16/BF16; F32 rows would prefer 4 × 4): each 16-element step loads and widens 8
// weight vectors and 2 activation vectors for 16 FMAs in 16 float lanes; the K tail is a masked
// step (zeros past the end). Each output's lanes are summed in double at the end. Work items (8
// weight rows, or the last < 8 one by one, × batch) come from the pool's chunk counter; an
// output's arithmetic depends on the shape only, never on the thread count.
#include "cpu/kernels/avx512_intrinsics.hpp"  // first: <immintrin.h> without g++ 12's false warnings

#include "cpu/kernels/kernel.hpp"

namespace tessel::cpu {
namespace {

constexpr int kWr = 8, kXr = 2;        // tile: weight rows × activation rows
constexpr int64_t kItemsPerChunk = 2;  // work items (weight row groups) per claim

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
void tile(const W* const (&w)[NW], const float* const (&x)[NX], float* const (&out)[NX], int64_t K) {
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

template <class W, DType kType>
bool supports(const Tensor& dst) {
    if (dst.op != Op::MUL_MAT) return false;
    const Tensor* w = dst.src[0];
    const Tensor* x = dst.src[1];
    return w->type == kType && x->type == DType::F32 && dst.type == DType::F32 && w->nb[0] == sizeof(W) &&
           x->nb[0] == sizeof(float) && dst.nb[0] == sizeof(float) && w->ne[0] == x->ne[0] &&
           x->ne[2] % w->ne[2] == 0 && x->ne[3] % w->ne[3] == 0;
}

/// Runs the tiles of weight rows w[0..NW) against every activation row of one batch.
template <class W, int NW>
void weight_rows(const W* const (&w)[NW], const Tensor& x, const Tensor& dst, int64_t n, int64_t i2, int64_t i3) {
    const int64_t K = x.ne[0], M = x.ne[1];
    const auto* xb = static_cast<const uint8_t*>(x.data) + i2 * x.nb[2] + i3 * x.nb[3];
    auto* ob = static_cast<uint8_t*>(dst.data) + n * sizeof(float) + i2 * dst.nb[2] + i3 * dst.nb[3];
    auto x_row = [&](int64_t m) { return reinterpret_cast<const float*>(xb + m * x.nb[1]); };
    auto o_row = [&](int64_t m) { return reinterpret_cast<float*>(ob + m * dst.nb[1]); };
    int64_t m = 0;
    for (; m + kXr <= M; m += kXr) {
        const float* xs[kXr];
        float* os[kXr];
        for (int i = 0; i < kXr; ++i) xs[i] = x_row(m + i), os[i] = o_row(m + i);
        tile<W, NW, kXr>(w, xs, os, K);
    }
    for (; m < M; ++m) {
        const float* xs[1] = {x_row(m)};
        float* os[1] = {o_row(m)};
        tile<W, NW, 1>(w, xs, os, K);
    }
}

template <class W>
void run(Tensor& dst, ThreadContext& ctx, void*) {
    const Tensor& w = *dst.src[0];
    const Tensor& x = *dst.src[1];
    const int64_t N = w.ne[1], B2 = x.ne[2], B3 = x.ne[3];
    const int64_t r2 = B2 / w.ne[2], r3 = B3 / w.ne[3];
    const int64_t groups = (N + kWr - 1) / kWr;
    ctx.for_chunks(groups * B2 * B3, kItemsPerChunk, [&](int64_t begin, int64_t end) {
        for (int64_t item = begin; item < end; ++item) {
            const int64_t n = item % groups * kWr, i2 = item / groups % B2, i3 = item / (groups * B2);
            auto w_row = [&](int64_t r) {
                return reinterpret_cast<const W*>(static_cast<const uint8_t*>(w.data) + r * w.nb[1] + (i2 / r2) * w.nb[2] +
                                                  (i3 / r3) * w.nb[3]);
            };
            if (n + kWr <= N) {
                const W* rows[kWr];
                for (int j = 0; j < kWr; ++j) rows[j] = w_row(n + j);
                weight_rows<W, kWr>(rows, x, dst, n, i2, i3);
            } else {
                for (int64_t r = n; r < N; ++r) {
                    const W* rows[1] = {w_row(r)};
                    weight_rows<W, 1>(rows, x, dst, r, i2, i3);
                }
            }
        }
    });
}

constexpr FastKernel kF16 = {"f16_f32_gemm_2x8_avx512", has_avx512_tier, supports<F16, DType::F16>, no_work, run<F16>};
constexpr FastKernel kBf16 = {"bf16_f32_gemm_2x8_avx512", has_avx512_tier, supports<Bf16, DType::BF16>, no_work, run<Bf16>};
constexpr FastKernel kF32 = {"f32_f32_gemm_2x8_avx512", has_avx512_tier, supports<F32, DType::F32>, no_work, run<F32>};

constexpr FastKernel kTable[] = {kF16, kBf16, kF32};

}  // namespace

constinit const std::span<const FastKernel> kAvx512FloatMulMatKernels{kTable};

}  // namespace tessel::cpu

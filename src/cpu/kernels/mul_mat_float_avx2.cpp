// MUL_MAT of F16, BF16 or F32 weights with F32 activations, AVX2 (compiled with -mavx2 -mfma -mf16c;
// selected only when the usable CPU features include AVX2, FMA and F16C). Serves the attention
// products too (K and V caches read through permuted views): weight and activation rows must be
// contiguous (nb[0] = element size), other strides are free, and the weight's batch dims are
// shared by division as in the reference (x batch i2 reads weight batch i2 / (B2'/B2)).
// Each output is one dot product of float lanes with FMA, summed across lanes at the end; work
// items (weight row × batch) are handed out in chunks from the pool's chunk counter.
#include <immintrin.h>

#include <cstring>

#include "cpu/kernels/kernel.hpp"
#include "cpu/kernels/vec_math_avx2.hpp"

namespace tessel::cpu {
namespace {

constexpr int64_t kItemsPerChunk = 16;

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


template <class W, DType kType>
bool supports(const Tensor& dst) {
    if (dst.op != Op::MUL_MAT) return false;
    const Tensor* w = dst.src[0];
    const Tensor* x = dst.src[1];
    return w->type == kType && x->type == DType::F32 && dst.type == DType::F32 && w->nb[0] == sizeof(W) &&
           x->nb[0] == sizeof(float) && dst.nb[0] == sizeof(float) && w->ne[0] == x->ne[0] &&
           x->ne[2] % w->ne[2] == 0 && x->ne[3] % w->ne[3] == 0;
}

template <class W>
void run(Tensor& dst, ThreadContext& ctx, void*) {
    const Tensor& w = *dst.src[0];
    const Tensor& x = *dst.src[1];
    const int64_t K = w.ne[0], N = w.ne[1], M = x.ne[1], B2 = x.ne[2], B3 = x.ne[3];
    const int64_t r2 = B2 / w.ne[2], r3 = B3 / w.ne[3];
    ctx.for_chunks(N * B2 * B3, kItemsPerChunk, [&](int64_t begin, int64_t end) {
        for (int64_t item = begin; item < end; ++item) {
            const int64_t n = item % N, i2 = item / N % B2, i3 = item / (N * B2);
            const auto* wrow = reinterpret_cast<const W*>(static_cast<const uint8_t*>(w.data) + n * w.nb[1] +
                                                          (i2 / r2) * w.nb[2] + (i3 / r3) * w.nb[3]);
            for (int64_t m = 0; m < M; ++m) {
                const auto* xrow = reinterpret_cast<const float*>(static_cast<const uint8_t*>(x.data) + m * x.nb[1] +
                                                                  i2 * x.nb[2] + i3 * x.nb[3]);
                auto* out = reinterpret_cast<float*>(static_cast<uint8_t*>(dst.data) + n * dst.nb[0] + m * dst.nb[1] +
                                                     i2 * dst.nb[2] + i3 * dst.nb[3]);
                *out = dot(wrow, xrow, K);
            }
        }
    });
}

constexpr FastKernel kF16 = {"f16_f32_gemm_1x1_avx2", has_avx2_tier, supports<uint16_t, DType::F16>, no_work, run<uint16_t>};
constexpr FastKernel kBf16 = {"bf16_f32_gemm_1x1_avx2", has_avx2_tier, supports<Bf16, DType::BF16>, no_work, run<Bf16>};
constexpr FastKernel kF32 = {"f32_f32_gemm_1x1_avx2", has_avx2_tier, supports<float, DType::F32>, no_work, run<float>};

constexpr FastKernel kTable[] = {kF16, kBf16, kF32};

}  // namespace

constinit const std::span<const FastKernel> kAvx2FloatMulMatKernels{kTable};

}  // namespace tessel::cpu

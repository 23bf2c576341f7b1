// MUL_MAT of Q8_0 weights with F32 activations, AVX2 (compiled with -mavx2 -mfma -mf16c; only
// selected when the usable CPU features include AVX2, FMA and F16C).
//
// Phase 1: every thread quantizes its share of the activation rows to Q8_0 into the shared
// work buffer (quant::quantize_row, bit-exact with the reference quantizer); barrier.
// Phase 2: weight rows are handed out in chunks from the pool's chunk counter; each output is
// Σ over blocks d_w·d_x·Σ q_w·q_x with the int8 products summed exactly in int32 (AVX2
// maddubs on |q_w| and sign-adjusted q_x) and the block sums accumulated in float.
#include <immintrin.h>

#include "core/fp16.hpp"
#include "cpu/kernels/kernel.hpp"
#include "quant/blocks.hpp"
#include "quant/quant.hpp"

namespace tessel::cpu {
namespace {

using quant::block_q8_0;
using quant::QK8_0;

constexpr int64_t kRowsPerChunk = 16;

float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/// Σ over n blocks of d_a·d_b·(q_a · q_b).
float dot_q8_0(const block_q8_0* a, const block_q8_0* b, int64_t n) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n; ++i) {
        const __m256i qa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[i].qs));
        const __m256i qb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[i].qs));
        // maddubs multiplies unsigned by signed bytes: move a's sign onto b.
        const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(qa, qa), _mm256_sign_epi8(qb, qa));
        const __m256i sums = _mm256_madd_epi16(pairs, ones);
        const __m256 d = _mm256_set1_ps(fp16_to_fp32(a[i].d) * fp16_to_fp32(b[i].d));
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(sums), acc);
    }
    return hsum(acc);
}

bool usable(const CpuFeatures& f) { return f.avx2 && f.fma && f.f16c; }

bool supports(const Tensor& dst) {
    if (dst.op != Op::MUL_MAT) return false;
    const Tensor* w = dst.src[0];
    const Tensor* x = dst.src[1];
    const int64_t K = w->ne[0];
    return w->type == DType::Q8_0 && x->type == DType::F32 && dst.type == DType::F32 && K % QK8_0 == 0 &&
           w->nb[0] == sizeof(block_q8_0) && w->nb[1] == dtype_row_bytes(DType::Q8_0, K) && x->nb[0] == sizeof(float) &&
           w->ne[2] == 1 && w->ne[3] == 1 && x->ne[2] == 1 && x->ne[3] == 1 && dst.is_contiguous();
}

size_t work_size(const Tensor& dst, int) {
    const Tensor* x = dst.src[1];
    return dtype_row_bytes(DType::Q8_0, x->ne[0]) * static_cast<size_t>(x->ne[1]);
}

void run(Tensor& dst, ThreadContext& ctx, void* work) {
    const Tensor& w = *dst.src[0];
    const Tensor& x = *dst.src[1];
    const int64_t K = w.ne[0], N = w.ne[1], M = x.ne[1];
    const uint64_t xq_row = dtype_row_bytes(DType::Q8_0, K);
    auto* xq = static_cast<uint8_t*>(work);
    for (int64_t m = ctx.ith; m < M; m += ctx.nth)
        quant::quantize_row(DType::Q8_0, reinterpret_cast<const float*>(static_cast<const uint8_t*>(x.data) + m * x.nb[1]),
                            xq + m * xq_row, K);
    ctx.barrier();
    const int64_t nblocks = K / QK8_0;
    ctx.for_chunks(N, kRowsPerChunk, [&](int64_t n0, int64_t n1) {
        for (int64_t n = n0; n < n1; ++n) {
            const auto* wrow = reinterpret_cast<const block_q8_0*>(static_cast<const uint8_t*>(w.data) + n * w.nb[1]);
            for (int64_t m = 0; m < M; ++m) {
                const auto* xrow = reinterpret_cast<const block_q8_0*>(xq + m * xq_row);
                auto* out = reinterpret_cast<float*>(static_cast<uint8_t*>(dst.data) + m * dst.nb[1] + n * dst.nb[0]);
                *out = dot_q8_0(wrow, xrow, nblocks);
            }
        }
    });
}

const FastKernel kMulMatQ8_0 = {"q8_0_q8_0_gemm_1x1_avx2", usable, supports, work_size, run};

}  // namespace

std::vector<const FastKernel*> avx2_kernels() { return {&kMulMatQ8_0}; }

}  // namespace tessel::cpu

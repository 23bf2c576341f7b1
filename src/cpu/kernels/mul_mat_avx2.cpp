// MUL_MAT of Q8_0 / Q4_0 / Q4_1 weights with F32 activations, AVX2 (compiled with -mavx2 -mfma
// -mf16c; selected only when the usable CPU features include AVX2, FMA and F16C).
//
// Phase 1: every thread quantizes its share of the activation rows into the shared work buffer,
// to the activation type the weight type pairs with (Q8_0 for Q8_0/Q4_0, Q8_1 for Q4_1, whose
// stored d·Σq carries the min term), using quant::quantize_row (bit-exact with the reference).
// Barrier. Phase 2: weight rows are handed out in chunks from the pool's chunk counter; each
// output is a sum over 32-element blocks whose integer part is exact in int32 (AVX2 maddubs)
// and whose scales are applied in float.
#include <immintrin.h>

#include "core/fp16.hpp"
#include "cpu/kernels/kernel.hpp"
#include "quant/blocks.hpp"
#include "quant/quant.hpp"

namespace tessel::cpu {
namespace {

using namespace quant;

constexpr int64_t kRowsPerChunk = 16;

float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/// Eight int32 lanes of Σ a·b over 32 signed byte pairs (exact).
__m256i dot_i8(__m256i a, __m256i b) {
    // maddubs multiplies unsigned by signed bytes: move a's sign onto b.
    const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(a, a), _mm256_sign_epi8(b, a));
    return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

/// The 32 nibbles of a Q4 block in element order (low nibbles = elements 0..15) as bytes 0..15.
__m256i unpack_nibbles(const uint8_t* qs) {
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m128i lo = _mm_and_si128(packed, _mm_set1_epi8(0x0f));
    const __m128i hi = _mm_and_si128(_mm_srli_epi16(packed, 4), _mm_set1_epi8(0x0f));
    return _mm256_set_m128i(hi, lo);
}

__m256i load_q8(const int8_t* qs) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs)); }

struct Q8_0xQ8_0 {
    using WBlock = block_q8_0;
    using XBlock = block_q8_0;
    static constexpr DType kWeight = DType::Q8_0, kAct = DType::Q8_0;
    static constexpr const char* kName = "q8_0_q8_0_gemm_1x1_avx2";
    static float dot(const WBlock* w, const XBlock* x, int64_t n) {
        __m256 acc = _mm256_setzero_ps();
        for (int64_t i = 0; i < n; ++i) {
            const __m256 d = _mm256_set1_ps(fp16_to_fp32(w[i].d) * fp16_to_fp32(x[i].d));
            acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_i8(load_q8(w[i].qs), load_q8(x[i].qs))), acc);
        }
        return hsum(acc);
    }
};

struct Q4_0xQ8_0 {
    using WBlock = block_q4_0;
    using XBlock = block_q8_0;
    static constexpr DType kWeight = DType::Q4_0, kAct = DType::Q8_0;
    static constexpr const char* kName = "q4_0_q8_0_gemm_1x1_avx2";
    static float dot(const WBlock* w, const XBlock* x, int64_t n) {
        __m256 acc = _mm256_setzero_ps();
        for (int64_t i = 0; i < n; ++i) {
            const __m256i q = _mm256_sub_epi8(unpack_nibbles(w[i].qs), _mm256_set1_epi8(8));  // x = d·(q - 8)
            const __m256 d = _mm256_set1_ps(fp16_to_fp32(w[i].d) * fp16_to_fp32(x[i].d));
            acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_i8(q, load_q8(x[i].qs))), acc);
        }
        return hsum(acc);
    }
};

struct Q4_1xQ8_1 {
    using WBlock = block_q4_1;
    using XBlock = block_q8_1;
    static constexpr DType kWeight = DType::Q4_1, kAct = DType::Q8_1;
    static constexpr const char* kName = "q4_1_q8_1_gemm_1x1_avx2";
    // Σ (d_w q + m_w)(d_x y) = d_w d_x Σ q·y + m_w · (d_x Σ y), the last factor stored as s.
    static float dot(const WBlock* w, const XBlock* x, int64_t n) {
        __m256 acc = _mm256_setzero_ps();
        float mins = 0.0f;
        for (int64_t i = 0; i < n; ++i) {
            const __m256i q = unpack_nibbles(w[i].qs);  // 0..15: already unsigned for maddubs
            const __m256i pairs = _mm256_maddubs_epi16(q, load_q8(x[i].qs));
            const __m256i sums = _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
            const __m256 d = _mm256_set1_ps(fp16_to_fp32(w[i].d) * fp16_to_fp32(x[i].d));
            acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(sums), acc);
            mins += fp16_to_fp32(w[i].m) * fp16_to_fp32(x[i].s);
        }
        return hsum(acc) + mins;
    }
};


template <class T>
bool supports(const Tensor& dst) {
    if (dst.op != Op::MUL_MAT) return false;
    const Tensor* w = dst.src[0];
    const Tensor* x = dst.src[1];
    const int64_t K = w->ne[0];
    return w->type == T::kWeight && x->type == DType::F32 && dst.type == DType::F32 && K % 32 == 0 &&
           w->nb[0] == sizeof(typename T::WBlock) && w->nb[1] == dtype_row_bytes(T::kWeight, K) &&
           x->nb[0] == sizeof(float) && w->ne[2] == 1 && w->ne[3] == 1 && x->ne[2] == 1 && x->ne[3] == 1 &&
           dst.is_contiguous();
}

template <class T>
size_t work_size(const Tensor& dst, int) {
    const Tensor* x = dst.src[1];
    return dtype_row_bytes(T::kAct, x->ne[0]) * static_cast<size_t>(x->ne[1]);
}

template <class T>
void run(Tensor& dst, ThreadContext& ctx, void* work) {
    const Tensor& w = *dst.src[0];
    const Tensor& x = *dst.src[1];
    const int64_t K = w.ne[0], N = w.ne[1], M = x.ne[1];
    const uint64_t xq_row = dtype_row_bytes(T::kAct, K);
    auto* xq = static_cast<uint8_t*>(work);
    for (int64_t m = ctx.ith; m < M; m += ctx.nth)
        quantize_row(T::kAct, reinterpret_cast<const float*>(static_cast<const uint8_t*>(x.data) + m * x.nb[1]),
                     xq + m * xq_row, K);
    ctx.barrier();
    const int64_t nblocks = K / 32;
    ctx.for_chunks(N, kRowsPerChunk, [&](int64_t n0, int64_t n1) {
        for (int64_t n = n0; n < n1; ++n) {
            const auto* wrow = reinterpret_cast<const typename T::WBlock*>(static_cast<const uint8_t*>(w.data) + n * w.nb[1]);
            for (int64_t m = 0; m < M; ++m) {
                const auto* xrow = reinterpret_cast<const typename T::XBlock*>(xq + m * xq_row);
                auto* out = reinterpret_cast<float*>(static_cast<uint8_t*>(dst.data) + m * dst.nb[1] + n * dst.nb[0]);
                *out = T::dot(wrow, xrow, nblocks);
            }
        }
    });
}

template <class T>
constexpr FastKernel kernel_of() {
    return {T::kName, has_avx2_tier, supports<T>, work_size<T>, run<T>};
}

const FastKernel kQ8_0 = kernel_of<Q8_0xQ8_0>();
const FastKernel kQ4_0 = kernel_of<Q4_0xQ8_0>();
const FastKernel kQ4_1 = kernel_of<Q4_1xQ8_1>();

}  // namespace

std::vector<const FastKernel*> avx2_kernels() { return {&kQ8_0, &kQ4_0, &kQ4_1}; }

}  // namespace tessel::cpu

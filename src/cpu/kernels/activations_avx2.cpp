// SOFT_MAX and SWIGLU on F32 rows, AVX2 (compiled with -mavx2 -mfma -mf16c; selected only when
// the usable CPU features include AVX2, FMA and F16C). exp is vec_math_avx2.hpp's.
// SOFT_MAX takes every variant of the reference with F32 rows: scale, F32/F16 mask (broadcast
// over heads and batches), ALiBi slopes (cpu/ref's alibi_slope, so both use the same slope) and
// sinks. Rows are split into one contiguous range per thread, so results do not depend on the
// thread count. Unsupported variants (GEGLU, SWIGLU_OAI, strided elements) run the reference
// kernels.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "cpu/kernels/kernel.hpp"
#include "cpu/kernels/vec_math_avx2.hpp"
#include "cpu/ref/attention.hpp"

namespace tessel::cpu {
namespace {


const uint8_t* row_at(const Tensor& t, int64_t i1, int64_t i2, int64_t i3) {
    return static_cast<const uint8_t*>(t.data) + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
}

// ---- SOFT_MAX: softmax(x·scale + slope·mask) per row, with an optional sink logit --------------

bool softmax_supports(const Tensor& dst) {
    const Tensor* x = dst.src[0];
    const Tensor* mask = dst.src[1];
    const Tensor* sinks = dst.src[2];
    if (dst.op != Op::SOFT_MAX || !f32_rows(dst) || !f32_rows(*x) || x->ne != dst.ne) return false;
    if (sinks && (sinks->type != DType::F32 || sinks->ne[0] != x->ne[2] || sinks->n_rows() != 1)) return false;
    if (!mask) return true;
    const bool mask_rows = (mask->type == DType::F32 && mask->nb[0] == 4) || (mask->type == DType::F16 && mask->nb[0] == 2);
    return mask_rows && mask->ne[0] == x->ne[0] && mask->ne[1] >= x->ne[1] && x->ne[2] % mask->ne[2] == 0 &&
           x->ne[3] % mask->ne[3] == 0;
}

__m256 load_mask(const Tensor& mask, const uint8_t* row, int64_t i) {
    if (mask.type == DType::F32) return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + i);
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(reinterpret_cast<const uint16_t*>(row) + i)));
}

float mask_at(const Tensor& mask, const uint8_t* row, int64_t i) {
    if (mask.type == DType::F32) return reinterpret_cast<const float*>(row)[i];
    return _cvtsh_ss(reinterpret_cast<const uint16_t*>(row)[i]);
}

void softmax_run(Tensor& dst, ThreadContext& ctx, void*) {
    const Tensor& x = *dst.src[0];
    const Tensor* mask = dst.src[1];
    const Tensor* sinks = dst.src[2];
    const float scale = dst.op_param_f32(0), max_bias = dst.op_param_f32(1);
    const int64_t K = x.ne[0], M = x.ne[1], H = x.ne[2];
    const float neg_inf = -std::numeric_limits<float>::infinity();
    const __m256 vneg_inf = _mm256_set1_ps(neg_inf);
    int64_t begin, end;
    thread_rows(x.n_rows(), ctx, begin, end);
    for (int64_t r = begin; r < end; ++r) {
        const int64_t i1 = r % M, i2 = r / M % H, i3 = r / (M * H);
        const auto* in = reinterpret_cast<const float*>(row_at(x, i1, i2, i3));
        auto* out = reinterpret_cast<float*>(const_cast<uint8_t*>(row_at(dst, i1, i2, i3)));
        const uint8_t* mrow = mask ? row_at(*mask, i1, i2 % mask->ne[2], i3 % mask->ne[3]) : nullptr;
        const auto slope = static_cast<float>(ref::alibi_slope(i2, H, max_bias));
        const __m256 vslope = _mm256_set1_ps(slope);
        // z = x·scale + slope·mask (a -inf mask entry gives -inf whatever the slope), kept in
        // out; running max
        __m256 vmax = vneg_inf;
        int64_t i = 0;
        for (; i + 8 <= K; i += 8) {
            __m256 z = _mm256_mul_ps(_mm256_loadu_ps(in + i), _mm256_set1_ps(scale));
            if (mrow) {
                const __m256 m = load_mask(*mask, mrow, i);
                z = _mm256_blendv_ps(_mm256_fmadd_ps(vslope, m, z), vneg_inf, _mm256_cmp_ps(m, vneg_inf, _CMP_EQ_OQ));
            }
            _mm256_storeu_ps(out + i, z);
            vmax = _mm256_max_ps(vmax, z);
        }
        float max = avx2::hmax(vmax);
        for (; i < K; ++i) {
            out[i] = in[i] * scale;
            if (mrow) {
                const float m = mask_at(*mask, mrow, i);
                out[i] = m == neg_inf ? neg_inf : std::fma(slope, m, out[i]);
            }
            max = std::max(max, out[i]);
        }
        const float sink =
            sinks ? *reinterpret_cast<const float*>(static_cast<const uint8_t*>(sinks->data) + i2 * sinks->nb[0]) : neg_inf;
        max = std::max(max, sink);
        if (max == neg_inf) {  // every logit is -inf: zeros, as the reference
            std::fill(out, out + K, 0.0f);
            continue;
        }
        __m256 vsum = _mm256_setzero_ps();
        for (i = 0; i + 8 <= K; i += 8) {
            const __m256 e = avx2::exp(_mm256_sub_ps(_mm256_loadu_ps(out + i), _mm256_set1_ps(max)));
            _mm256_storeu_ps(out + i, e);
            vsum = _mm256_add_ps(vsum, e);
        }
        double sum = avx2::hsum_f64(vsum) + (sinks ? std::exp(static_cast<double>(sink) - max) : 0.0);
        for (; i < K; ++i) {
            alignas(32) float tmp[8] = {out[i] - max, 0, 0, 0, 0, 0, 0, 0};
            _mm256_store_ps(tmp, avx2::exp(_mm256_load_ps(tmp)));
            out[i] = tmp[0];
            sum += tmp[0];
        }
        const __m256 inv = _mm256_set1_ps(static_cast<float>(1.0 / sum));
        for (i = 0; i + 8 <= K; i += 8) _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(out + i), inv));
        for (; i < K; ++i) out[i] = static_cast<float>(out[i] / sum);
    }
}

// ---- GLU SWIGLU: silu(x) · g -----------------------------------------------------------------

bool swiglu_supports(const Tensor& dst) {
    if (dst.op != Op::GLU || static_cast<GluOp>(dst.op_params[0]) != GluOp::SWIGLU) return false;
    const Tensor* a = dst.src[0];
    const Tensor* b = dst.src[1];
    if (!f32_rows(dst) || !f32_rows(*a) || (b && !f32_rows(*b))) return false;
    if (b) return a->ne == dst.ne && b->ne == dst.ne;
    return a->ne[0] == 2 * dst.ne[0] && a->ne[1] == dst.ne[1] && a->ne[2] == dst.ne[2] && a->ne[3] == dst.ne[3];
}

void swiglu_run(Tensor& dst, ThreadContext& ctx, void*) {
    const Tensor& a = *dst.src[0];
    const Tensor* b = dst.src[1];
    const int64_t K = dst.ne[0];
    const bool swapped = dst.op_params[1] != 0;
    const int64_t x_off = b ? 0 : (swapped ? K : 0);
    const int64_t g_off = b ? 0 : (swapped ? 0 : K);
    int64_t begin, end;
    thread_rows(dst.n_rows(), ctx, begin, end);
    for (int64_t r = begin; r < end; ++r) {
        const int64_t i1 = r % dst.ne[1], i2 = r / dst.ne[1] % dst.ne[2], i3 = r / (dst.ne[1] * dst.ne[2]);
        const auto* x = reinterpret_cast<const float*>(row_at(a, i1, i2, i3)) + x_off;
        const auto* g = reinterpret_cast<const float*>(row_at(b ? *b : a, i1, i2, i3)) + g_off;
        auto* out = reinterpret_cast<float*>(const_cast<uint8_t*>(row_at(dst, i1, i2, i3)));
        const __m256 one = _mm256_set1_ps(1.0f);
        auto silu_times = [&](__m256 xv, __m256 gv) {
            const __m256 e = avx2::exp(_mm256_sub_ps(_mm256_setzero_ps(), xv));  // e^-x
            return _mm256_mul_ps(_mm256_div_ps(xv, _mm256_add_ps(one, e)), gv);
        };
        int64_t i = 0;
        for (; i + 8 <= K; i += 8) _mm256_storeu_ps(out + i, silu_times(_mm256_loadu_ps(x + i), _mm256_loadu_ps(g + i)));
        if (i < K) {  // tail through a padded vector
            alignas(32) float xt[8] = {}, gt[8] = {}, yt[8];
            std::copy(x + i, x + K, xt);
            std::copy(g + i, g + K, gt);
            _mm256_store_ps(yt, silu_times(_mm256_load_ps(xt), _mm256_load_ps(gt)));
            std::copy(yt, yt + (K - i), out + i);
        }
    }
}

constexpr FastKernel kSoftMax = {"soft_max_f32_avx2", has_avx2_tier, softmax_supports, no_work, softmax_run};
constexpr FastKernel kSwiglu = {"swiglu_f32_avx2", has_avx2_tier, swiglu_supports, no_work, swiglu_run};

constexpr FastKernel kTable[] = {kSoftMax, kSwiglu};

}  // namespace

constinit const std::span<const FastKernel> kAvx2ActivationKernels{kTable};

}  // namespace tessel::cpu

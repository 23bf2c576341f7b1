// Row-wise F32 kernels, AVX2 (compiled with -mavx2 -mfma -mf16c; selected only when the usable
// CPU features include the avx2 tier): RMS_NORM, and ADD / MUL with src1 broadcast over rows.
// Rows are split into one contiguous range per thread; every row is computed the same way
// whichever thread owns it, so results do not depend on the thread count.
#include <immintrin.h>

#include <cmath>

#include "cpu/kernels/kernel.hpp"

namespace tessel::cpu {
namespace {


/// Row r (ne order, i1 fastest) of t as a float pointer; t has contiguous rows (nb[0] = 4).
float* row_of(const Tensor& t, int64_t r) {
    const int64_t i1 = r % t.ne[1], i2 = r / t.ne[1] % t.ne[2], i3 = r / (t.ne[1] * t.ne[2]);
    return reinterpret_cast<float*>(static_cast<uint8_t*>(t.data) + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3]);
}

// ---- RMS_NORM ------------------------------------------------------------------------------

bool rms_supports(const Tensor& dst) {
    const Tensor* a = dst.src[0];
    return dst.op == Op::RMS_NORM && f32_rows(dst) && f32_rows(*a) && a->ne == dst.ne && dst.op_param_f32(0) >= 0.0f;
}

void rms_run(Tensor& dst, ThreadContext& ctx, void*) {
    const Tensor& a = *dst.src[0];
    const int64_t K = dst.ne[0];
    const double eps = dst.op_param_f32(0);
    int64_t begin, end;
    thread_rows(dst.n_rows(), ctx, begin, end);
    for (int64_t r = begin; r < end; ++r) {
        const float* x = row_of(a, r);
        float* y = row_of(dst, r);
        // Σx² in eight float lanes, each lane's partial sums short enough to stay accurate,
        // folded in double (the reference sums in double).
        __m256 acc = _mm256_setzero_ps();
        int64_t i = 0;
        for (; i + 8 <= K; i += 8) {
            const __m256 v = _mm256_loadu_ps(x + i);
            acc = _mm256_fmadd_ps(v, v, acc);
        }
        alignas(32) float lanes[8];
        _mm256_store_ps(lanes, acc);
        double sum_sq = 0.0;
        for (float l : lanes) sum_sq += l;
        for (; i < K; ++i) sum_sq += static_cast<double>(x[i]) * x[i];
        const double divisor = std::sqrt(sum_sq / static_cast<double>(K) + eps);
        const __m256 scale = _mm256_set1_ps(static_cast<float>(1.0 / divisor));
        for (i = 0; i + 8 <= K; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), scale));
        for (; i < K; ++i) y[i] = static_cast<float>(x[i] / divisor);
    }
}

// ---- ADD / MUL with row broadcast ----------------------------------------------------------

template <Op kOp>
bool binary_supports(const Tensor& dst) {
    const Tensor* a = dst.src[0];
    const Tensor* b = dst.src[1];
    if (dst.op != kOp || !f32_rows(dst) || !f32_rows(*a) || !f32_rows(*b) || a->ne != dst.ne) return false;
    if (b->ne[0] != dst.ne[0]) return false;  // broadcast of whole rows only
    for (int d = 1; d < kMaxDims; ++d)
        if (dst.ne[d] % b->ne[d] != 0) return false;
    return true;
}

template <Op kOp>
void binary_run(Tensor& dst, ThreadContext& ctx, void*) {
    const Tensor& a = *dst.src[0];
    const Tensor& b = *dst.src[1];
    const int64_t K = dst.ne[0];
    int64_t begin, end;
    thread_rows(dst.n_rows(), ctx, begin, end);
    for (int64_t r = begin; r < end; ++r) {
        const int64_t i1 = r % dst.ne[1], i2 = r / dst.ne[1] % dst.ne[2], i3 = r / (dst.ne[1] * dst.ne[2]);
        const float* x = row_of(a, r);
        const auto* y = reinterpret_cast<const float*>(static_cast<const uint8_t*>(b.data) + (i1 % b.ne[1]) * b.nb[1] +
                                                       (i2 % b.ne[2]) * b.nb[2] + (i3 % b.ne[3]) * b.nb[3]);
        float* out = row_of(dst, r);
        int64_t i = 0;
        for (; i + 8 <= K; i += 8) {
            const __m256 u = _mm256_loadu_ps(x + i), v = _mm256_loadu_ps(y + i);
            _mm256_storeu_ps(out + i, kOp == Op::ADD ? _mm256_add_ps(u, v) : _mm256_mul_ps(u, v));
        }
        for (; i < K; ++i) out[i] = kOp == Op::ADD ? x[i] + y[i] : x[i] * y[i];
    }
}

constexpr FastKernel kRmsNorm = {"rms_norm_f32_avx2", has_avx2_tier, rms_supports, no_work, rms_run};
constexpr FastKernel kAdd = {"add_f32_avx2", has_avx2_tier, binary_supports<Op::ADD>, no_work, binary_run<Op::ADD>};
constexpr FastKernel kMul = {"mul_f32_avx2", has_avx2_tier, binary_supports<Op::MUL>, no_work, binary_run<Op::MUL>};

constexpr FastKernel kTable[] = {kRmsNorm, kAdd, kMul};

}  // namespace

constinit const std::span<const FastKernel> kAvx2RowKernels{kTable};

}  // namespace tessel::cpu

// ROPE on F32 and F16 rows, AVX2 (compiled with -mavx2 -mfma -mf16c; selected only when the
// usable CPU features include the avx2 tier).
//
// Same rotation as the reference (cpu/ref/rope.cpp, formula there): every thread first computes
// each pair's angle coefficient c_j in double (theta_j = p·c_j, with freq_base^(-2j/n_dims),
// freq factors, freq_scale and the YaRN mix folded in), then per token the cosines and sines of
// p·c_j in double (vec_math_avx2.hpp's sincos, times the magnitude scale), rounded to float
// tables that the rows of the token share. The rotation itself runs on 8 floats at a time (F16 rows converted with F16C,
// stored rounding to nearest even); elements past n_dims are copied. In-place safe (each pair
// is loaded before it is stored).
//
// Rows (head fastest, then token, then batch) are split into one contiguous range per thread;
// each row is computed the same way whichever thread owns it.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>

#include "core/fp16.hpp"
#include "cpu/kernels/kernel.hpp"
#include "cpu/kernels/vec_math_avx2.hpp"

namespace tessel::cpu {
namespace {

struct RopeShape {
    int64_t n_dims, half;
    bool neox;
    size_t elem;  // bytes per element of the row type

    explicit RopeShape(const Tensor& dst)
        : n_dims(dst.op_params[1]),
          half(dst.op_params[1] / 2),
          neox(dst.op_params[2] == kRopeModeNeox),
          elem(dst.type == DType::F32 ? 4 : 2) {}

    /// Per-thread scratch: c_j (double) and the cos / sin tables (float, n_dims each).
    size_t scratch_bytes() const {
        const size_t bytes = static_cast<size_t>(half) * sizeof(double) + 2 * static_cast<size_t>(n_dims) * sizeof(float);
        return (bytes + 63) / 64 * 64;
    }
};

template <DType kType>
bool rope_supports(const Tensor& dst) {
    if (dst.op != Op::ROPE || dst.type != kType) return false;
    const Tensor* x = dst.src[0];
    const Tensor* pos = dst.src[1];
    const Tensor* ff = dst.src[2];
    if (!x || !pos || (x->type != DType::F32 && x->type != DType::F16) || dst.type != x->type || dst.ne != x->ne)
        return false;
    const size_t elem = x->type == DType::F32 ? 4 : 2;
    if (x->nb[0] != elem || dst.nb[0] != elem) return false;
    if (pos->type != DType::I32 || pos->ne[0] != x->ne[2] || pos->n_rows() != 1) return false;
    const int32_t n_dims = dst.op_params[1], mode = dst.op_params[2];
    if (mode != kRopeModeNorm && mode != kRopeModeNeox) return false;
    if (n_dims <= 0 || n_dims % 2 != 0 || n_dims > x->ne[0]) return false;
    return !ff || (ff->type == DType::F32 && ff->ne[0] >= n_dims / 2);
}

size_t rope_work_size(const Tensor& dst, int nth) { return static_cast<size_t>(nth) * RopeShape(dst).scratch_bytes(); }

/// c_j for every pair j: theta_j = p·c_j is the reference's angle at position p.
void angle_coefficients(const Tensor& dst, const RopeShape& s, double* coef) {
    const Tensor* ff = dst.src[2];
    const double freq_base = dst.op_param_f32(5), freq_scale = dst.op_param_f32(6);
    const double ext_factor = dst.op_param_f32(7), beta_fast = dst.op_param_f32(9), beta_slow = dst.op_param_f32(10);
    const double n_ctx_orig = dst.op_params[4];
    const auto n_dims = static_cast<double>(s.n_dims);
    auto correction_dim = [&](double rotations) {
        return n_dims * std::log(n_ctx_orig / (rotations * 2.0 * std::numbers::pi)) / (2.0 * std::log(freq_base));
    };
    double lo = 0.0, hi = 0.0;
    if (ext_factor != 0.0) {
        lo = std::max(0.0, std::floor(correction_dim(beta_fast)));
        hi = std::min(n_dims - 1.0, std::ceil(correction_dim(beta_slow)));
    }
    for (int64_t j = 0; j < s.half; ++j) {
        const double factor =
            ff ? *reinterpret_cast<const float*>(static_cast<const uint8_t*>(ff->data) + j * ff->nb[0]) : 1.0;
        const double extrap = std::pow(freq_base, -2.0 * static_cast<double>(j) / n_dims) / factor;
        double interp = freq_scale;  // theta = extrap·(freq_scale·(1 - mix) + mix)
        if (ext_factor != 0.0) {
            const double y = (static_cast<double>(j) - lo) / std::max(0.001, hi - lo);
            const double mix = ext_factor * (1.0 - std::clamp(y, 0.0, 1.0));
            interp = freq_scale * (1.0 - mix) + mix;
        }
        coef[j] = extrap * interp;
    }
}

/// cos / sin tables of position p laid out for the mode: NEOX cos[j], sin[j] (j < half); NORM
/// per element, cos[2j] = cos[2j+1] = cos_j, sin[2j] = -sin_j, sin[2j+1] = sin_j. Four pairs at
/// a time through avx2::sincos in double, the rest through std::sin / std::cos.
void angle_tables(const RopeShape& s, const double* coef, double p, double mscale, float* cos_t, float* sin_t) {
    const __m256d vp = _mm256_set1_pd(p), vm = _mm256_set1_pd(mscale);
    int64_t j = 0;
    for (; j + 4 <= s.half; j += 4) {
        __m256d sn, cs;
        avx2::sincos(_mm256_mul_pd(vp, _mm256_loadu_pd(coef + j)), sn, cs);
        const __m128 c4 = _mm256_cvtpd_ps(_mm256_mul_pd(cs, vm)), s4 = _mm256_cvtpd_ps(_mm256_mul_pd(sn, vm));
        if (s.neox) {
            _mm_storeu_ps(cos_t + j, c4);
            _mm_storeu_ps(sin_t + j, s4);
        } else {
            const __m128 neg = _mm_sub_ps(_mm_setzero_ps(), s4);
            _mm_storeu_ps(cos_t + 2 * j, _mm_unpacklo_ps(c4, c4));
            _mm_storeu_ps(cos_t + 2 * j + 4, _mm_unpackhi_ps(c4, c4));
            _mm_storeu_ps(sin_t + 2 * j, _mm_unpacklo_ps(neg, s4));
            _mm_storeu_ps(sin_t + 2 * j + 4, _mm_unpackhi_ps(neg, s4));
        }
    }
    for (; j < s.half; ++j) {
        const double theta = p * coef[j];
        const auto c = static_cast<float>(std::cos(theta) * mscale);
        const auto sn = static_cast<float>(std::sin(theta) * mscale);
        if (s.neox) {
            cos_t[j] = c;
            sin_t[j] = sn;
        } else {
            cos_t[2 * j] = cos_t[2 * j + 1] = c;
            sin_t[2 * j] = -sn;
            sin_t[2 * j + 1] = sn;
        }
    }
}

// Row element access for F32 and F16 rows: 8 at a time or one.
struct F32Row {
    static __m256 load8(const void* p, int64_t i) { return _mm256_loadu_ps(static_cast<const float*>(p) + i); }
    static void store8(void* p, int64_t i, __m256 v) { _mm256_storeu_ps(static_cast<float*>(p) + i, v); }
    static float load1(const void* p, int64_t i) { return static_cast<const float*>(p)[i]; }
    static void store1(void* p, int64_t i, float v) { static_cast<float*>(p)[i] = v; }
};
struct F16Row {
    static __m256 load8(const void* p, int64_t i) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(p) + i)));
    }
    static void store8(void* p, int64_t i, __m256 v) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(static_cast<uint16_t*>(p) + i),
                         _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    static float load1(const void* p, int64_t i) { return fp16_to_fp32(static_cast<const uint16_t*>(p)[i]); }
    static void store1(void* p, int64_t i, float v) { static_cast<uint16_t*>(p)[i] = fp32_to_fp16(v); }
};

/// Rotates the first n_dims elements of row `in` into `out` (may be the same row).
template <class Row>
void rotate_row(const RopeShape& s, const float* cos_t, const float* sin_t, const void* in, void* out) {
    int64_t i = 0;
    if (s.neox) {  // pairs (j, j + half)
        const int64_t h = s.half;
        for (; i + 8 <= h; i += 8) {
            const __m256 a = Row::load8(in, i), b = Row::load8(in, i + h);
            const __m256 c = _mm256_loadu_ps(cos_t + i), sn = _mm256_loadu_ps(sin_t + i);
            Row::store8(out, i, _mm256_fmsub_ps(a, c, _mm256_mul_ps(b, sn)));
            Row::store8(out, i + h, _mm256_fmadd_ps(a, sn, _mm256_mul_ps(b, c)));
        }
        for (; i < h; ++i) {
            const float a = Row::load1(in, i), b = Row::load1(in, i + h);
            Row::store1(out, i, a * cos_t[i] - b * sin_t[i]);
            Row::store1(out, i + h, a * sin_t[i] + b * cos_t[i]);
        }
        return;
    }
    // NORM, pairs (2j, 2j + 1): out = x·cos + swap_pairs(x)·(signed sin)
    for (; i + 8 <= s.n_dims; i += 8) {
        const __m256 x = Row::load8(in, i);
        const __m256 swapped = _mm256_permute_ps(x, 0xB1);
        Row::store8(out, i, _mm256_fmadd_ps(x, _mm256_loadu_ps(cos_t + i), _mm256_mul_ps(swapped, _mm256_loadu_ps(sin_t + i))));
    }
    for (; i < s.n_dims; i += 2) {
        const float a = Row::load1(in, i), b = Row::load1(in, i + 1);
        Row::store1(out, i, a * cos_t[i] + b * sin_t[i]);
        Row::store1(out, i + 1, b * cos_t[i + 1] + a * sin_t[i + 1]);
    }
}

void rope_run(Tensor& dst, ThreadContext& ctx, void* work) {
    const Tensor& x = *dst.src[0];
    const Tensor& pos = *dst.src[1];
    const RopeShape s(dst);
    const int64_t D = x.ne[0], H = x.ne[1], T = x.ne[2];
    int64_t begin, end;
    thread_rows(x.n_rows(), ctx, begin, end);
    if (begin >= end) return;

    auto* scratch = static_cast<uint8_t*>(work) + static_cast<size_t>(ctx.ith) * s.scratch_bytes();
    auto* coef = reinterpret_cast<double*>(scratch);
    float* cos_t = reinterpret_cast<float*>(coef + s.half);
    float* sin_t = cos_t + s.n_dims;
    angle_coefficients(dst, s, coef);
    double mscale = dst.op_param_f32(8);
    if (dst.op_param_f32(7) != 0.0f) mscale *= 1.0 + 0.1 * std::log(1.0 / static_cast<double>(dst.op_param_f32(6)));

    const size_t tail_bytes = static_cast<size_t>(D - s.n_dims) * s.elem;
    int64_t cached_token = -1;
    for (int64_t r = begin; r < end; ++r) {
        const int64_t i1 = r % H, i2 = r / H % T, i3 = r / (H * T);
        if (i2 != cached_token) {  // the rows of one token share the tables
            cached_token = i2;
            const int32_t p = *reinterpret_cast<const int32_t*>(static_cast<const uint8_t*>(pos.data) + i2 * pos.nb[0]);
            angle_tables(s, coef, p, mscale, cos_t, sin_t);
        }
        const uint8_t* in = static_cast<const uint8_t*>(x.data) + i1 * x.nb[1] + i2 * x.nb[2] + i3 * x.nb[3];
        uint8_t* out = static_cast<uint8_t*>(dst.data) + i1 * dst.nb[1] + i2 * dst.nb[2] + i3 * dst.nb[3];
        if (dst.type == DType::F32)
            rotate_row<F32Row>(s, cos_t, sin_t, in, out);
        else
            rotate_row<F16Row>(s, cos_t, sin_t, in, out);
        if (tail_bytes) std::memmove(out + s.n_dims * s.elem, in + s.n_dims * s.elem, tail_bytes);
    }
}

constexpr FastKernel kRopeF32 = {"rope_f32_avx2", has_avx2_tier, rope_supports<DType::F32>, rope_work_size, rope_run};
constexpr FastKernel kRopeF16 = {"rope_f16_avx2", has_avx2_tier, rope_supports<DType::F16>, rope_work_size, rope_run};

constexpr FastKernel kTable[] = {kRopeF32, kRopeF16};

}  // namespace

constinit const std::span<const FastKernel> kAvx2RopeKernels{kTable};

}  // namespace tessel::cpu

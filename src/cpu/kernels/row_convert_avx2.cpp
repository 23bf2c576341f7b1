// Row conversions for the AVX2 data kernels (see row_convert.hpp). Compiled with -mavx2 -mfma
// -mf16c; entered only after the avx2-tier feature check of the kernel that calls it.
//
// Every conversion reproduces the reference's arithmetic exactly: float types through the same
// rounding as core/fp16.hpp, dequantization as q·d then + m (two roundings, never an FMA), Q8_0
// quantization with the reference's d, 1/d and round-half-away-from-zero.
#include <immintrin.h>

#include <cstddef>
#include <cstring>
#include <string>

#include "core/fp16.hpp"
#include "cpu/kernels/row_convert.hpp"
#include "quant/blocks.hpp"
#include "quant/quant.hpp"
#include "tessel/errors.hpp"

namespace tessel::cpu::avx2 {
namespace {

// ---- float types: eight lanes at a time -------------------------------------------------------

template <DType T>
struct Lanes;

template <>
struct Lanes<DType::F32> {
    static constexpr int kBytes = 4;
    static __m256 load(const uint8_t* p) { return _mm256_loadu_ps(reinterpret_cast<const float*>(p)); }
    static void store(uint8_t* p, __m256 v) { _mm256_storeu_ps(reinterpret_cast<float*>(p), v); }
    static float load1(const uint8_t* p) {
        float f;
        std::memcpy(&f, p, 4);
        return f;
    }
    static void store1(uint8_t* p, float v) { std::memcpy(p, &v, 4); }
};

uint16_t load_u16(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return h;
}

template <>
struct Lanes<DType::F16> {
    static constexpr int kBytes = 2;
    static __m256 load(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
    static void store(uint8_t* p, __m256 v) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    static float load1(const uint8_t* p) { return fp16_to_fp32(load_u16(p)); }
    static void store1(uint8_t* p, float v) {
        const uint16_t h = fp32_to_fp16(v);
        std::memcpy(p, &h, 2);
    }
};

template <>
struct Lanes<DType::BF16> {
    static constexpr int kBytes = 2;
    static __m256 load(const uint8_t* p) {
        const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
    }
    /// Round to nearest even on the bits (x + 0x7fff + lsb) >> 16; a NaN keeps its top half, made quiet.
    static void store(uint8_t* p, __m256 v) {
        const __m256i x = _mm256_castps_si256(v);
        const __m256i high = _mm256_srli_epi32(x, 16);
        const __m256i lsb = _mm256_and_si256(high, _mm256_set1_epi32(1));
        const __m256i biased = _mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), lsb);
        const __m256i rounded = _mm256_srli_epi32(biased, 16);
        const __m256i quiet = _mm256_or_si256(high, _mm256_set1_epi32(0x40));
        const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
        const __m256i bits = _mm256_blendv_epi8(rounded, quiet, nan);
        // Values fit in 16 bits, so the saturating pack keeps them; gather the two halves' results.
        const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(bits, bits), 0x08);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(packed));
    }
    static float load1(const uint8_t* p) { return bf16_to_fp32(load_u16(p)); }
    static void store1(uint8_t* p, float v) {
        const uint16_t h = fp32_to_bf16(v);
        std::memcpy(p, &h, 2);
    }
};

using ConvertFn = void (*)(const uint8_t* src, int64_t stride, uint8_t* dst, int64_t n);

/// From -> To, 8 lanes per step; strided sources are gathered 8 elements at a time first.
template <DType From, DType To>
void convert(const uint8_t* src, int64_t stride, uint8_t* dst, int64_t n) {
    using S = Lanes<From>;
    using D = Lanes<To>;
    int64_t i = 0;
    if (stride == S::kBytes) {
        for (; i + 8 <= n; i += 8) D::store(dst + i * D::kBytes, S::load(src + i * S::kBytes));
    } else {
        alignas(32) uint8_t gathered[8 * S::kBytes];
        for (; i + 8 <= n; i += 8) {
            for (int l = 0; l < 8; ++l) std::memcpy(gathered + l * S::kBytes, src + (i + l) * stride, S::kBytes);
            D::store(dst + i * D::kBytes, S::load(gathered));
        }
    }
    for (; i < n; ++i) D::store1(dst + i * D::kBytes, S::load1(src + i * stride));
}

/// Same type: the raw bits (a NaN's payload included), never through float.
template <int kBytes>
void copy_bits(const uint8_t* src, int64_t stride, uint8_t* dst, int64_t n) {
    if (stride == kBytes) {
        std::memcpy(dst, src, static_cast<size_t>(n) * kBytes);
        return;
    }
    for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * kBytes, src + i * stride, kBytes);
}

int float_index(DType t) {
    switch (t) {
        case DType::F32: return 0;
        case DType::F16: return 1;
        case DType::BF16: return 2;
        default: return -1;
    }
}

// ---- dequantization ---------------------------------------------------------------------------

float half_at(const uint8_t* p) { return _cvtsh_ss(load_u16(p)); }

/// y[0..8) = float(q) · d for the 8 signed bytes in the low half of q8.
void scale8(float* y, __m128i q8, __m256 d) {
    _mm256_storeu_ps(y, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8)), d));
}

/// y[0..8) = float(q) · d + m, product and sum rounded separately (as the reference).
void scale8_min(float* y, __m128i q8, __m256 d, __m256 m) {
    const __m256 product = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8)), d);
    _mm256_storeu_ps(y, _mm256_add_ps(product, m));
}

/// The 32 nibbles of a Q4 block as bytes: lo = elements 0..15, hi = elements 16..31.
void nibbles(const uint8_t* qs, __m128i& lo, __m128i& hi) {
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m128i mask = _mm_set1_epi8(0x0f);
    lo = _mm_and_si128(packed, mask);
    hi = _mm_and_si128(_mm_srli_epi16(packed, 4), mask);
}

void dequant_q4_0(const uint8_t* src, float* dst, int64_t n) {
    for (int64_t b = 0; b < n / 32; ++b, src += sizeof(quant::block_q4_0), dst += 32) {
        const __m256 d = _mm256_set1_ps(half_at(src + offsetof(quant::block_q4_0, d)));
        __m128i lo, hi;
        nibbles(src + offsetof(quant::block_q4_0, qs), lo, hi);
        lo = _mm_sub_epi8(lo, _mm_set1_epi8(8));
        hi = _mm_sub_epi8(hi, _mm_set1_epi8(8));
        scale8(dst, lo, d);
        scale8(dst + 8, _mm_srli_si128(lo, 8), d);
        scale8(dst + 16, hi, d);
        scale8(dst + 24, _mm_srli_si128(hi, 8), d);
    }
}

void dequant_q4_1(const uint8_t* src, float* dst, int64_t n) {
    for (int64_t b = 0; b < n / 32; ++b, src += sizeof(quant::block_q4_1), dst += 32) {
        const __m256 d = _mm256_set1_ps(half_at(src + offsetof(quant::block_q4_1, d)));
        const __m256 m = _mm256_set1_ps(half_at(src + offsetof(quant::block_q4_1, m)));
        __m128i lo, hi;
        nibbles(src + offsetof(quant::block_q4_1, qs), lo, hi);
        scale8_min(dst, lo, d, m);
        scale8_min(dst + 8, _mm_srli_si128(lo, 8), d, m);
        scale8_min(dst + 16, hi, d, m);
        scale8_min(dst + 24, _mm_srli_si128(hi, 8), d, m);
    }
}

void dequant_q8_0(const uint8_t* src, float* dst, int64_t n) {
    for (int64_t b = 0; b < n / 32; ++b, src += sizeof(quant::block_q8_0), dst += 32) {
        const __m256 d = _mm256_set1_ps(half_at(src + offsetof(quant::block_q8_0, d)));
        const uint8_t* qs = src + offsetof(quant::block_q8_0, qs);
        for (int g = 0; g < 4; ++g) scale8(dst + 8 * g, _mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + 8 * g)), d);
    }
}

// ---- Q8_0 quantization ------------------------------------------------------------------------

float hmax(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

/// std::round (half away from zero) per lane: t = trunc(v), plus ±1 when |v - t| ≥ 0.5 (v - t
/// is exact). Inf and NaN stay as they are.
__m256 round_half_away(__m256 v) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 frac = _mm256_andnot_ps(sign, _mm256_sub_ps(v, t));
    const __m256 up = _mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
    const __m256 step = _mm256_or_ps(_mm256_and_ps(v, sign), _mm256_set1_ps(1.0f));
    return _mm256_add_ps(t, _mm256_and_ps(up, step));
}

/// Low byte of each int32 lane of q0..q3, in order: C's int -> int8 conversion. cvtt gives
/// INT_MIN (low byte 0) where the reference's range check gives 0.
__m256i low_bytes(__m256i q0, __m256i q1, __m256i q2, __m256i q3) {
    const __m256i mask = _mm256_set1_epi32(0xff);
    const __m256i p01 = _mm256_packus_epi32(_mm256_and_si256(q0, mask), _mm256_and_si256(q1, mask));
    const __m256i p23 = _mm256_packus_epi32(_mm256_and_si256(q2, mask), _mm256_and_si256(q3, mask));
    // Each 128-bit half now holds 4 bytes of q0, q1, q2, q3 in turn (low half: lanes 0..3).
    return _mm256_permutevar8x32_epi32(_mm256_packus_epi16(p01, p23), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

}  // namespace

bool is_float_type(DType t) { return float_index(t) >= 0; }

void convert_floats(DType from, const void* src, int64_t src_stride, DType to, void* dst, int64_t n) {
    static constexpr ConvertFn kTable[3][3] = {
        {copy_bits<4>, convert<DType::F32, DType::F16>, convert<DType::F32, DType::BF16>},
        {convert<DType::F16, DType::F32>, copy_bits<2>, convert<DType::F16, DType::BF16>},
        {convert<DType::BF16, DType::F32>, convert<DType::BF16, DType::F16>, copy_bits<2>},
    };
    const int f = float_index(from), t = float_index(to);
    if (f < 0 || t < 0)
        throw Error(ErrorCode::InvalidArgument, std::string("convert_floats: ") + dtype_name(from) + " -> " +
                                                    dtype_name(to) + " is not a conversion between F32, F16 and BF16");
    kTable[f][t](static_cast<const uint8_t*>(src), src_stride, static_cast<uint8_t*>(dst), n);
}

bool has_vector_dequantize(DType t) {
    return is_float_type(t) || t == DType::Q4_0 || t == DType::Q4_1 || t == DType::Q8_0;
}

void dequantize_row(DType t, const void* src, float* dst, int64_t n) {
    const auto* p = static_cast<const uint8_t*>(src);
    switch (t) {
        case DType::F32:
        case DType::F16:
        case DType::BF16: convert_floats(t, src, dtype_info(t).block_bytes, DType::F32, dst, n); return;
        case DType::Q4_0: dequant_q4_0(p, dst, n); return;
        case DType::Q4_1: dequant_q4_1(p, dst, n); return;
        case DType::Q8_0: dequant_q8_0(p, dst, n); return;
        default: quant::dequantize_row(t, src, dst, n); return;
    }
}

void quantize_row_q8_0(const float* src, void* dst, int64_t n) {
    auto* out = static_cast<uint8_t*>(dst);
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t b = 0; b < n / 32; ++b, src += 32, out += sizeof(quant::block_q8_0)) {
        __m256 v[4];
        __m256 nan = _mm256_setzero_ps(), amax = _mm256_setzero_ps();
        for (int k = 0; k < 4; ++k) {
            v[k] = _mm256_loadu_ps(src + 8 * k);
            nan = _mm256_or_ps(nan, _mm256_cmp_ps(v[k], v[k], _CMP_UNORD_Q));
            amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, v[k]));
        }
        if (_mm256_movemask_ps(nan) != 0) {
            quant::quantize_row(DType::Q8_0, src, out, 32);
            continue;
        }
        const float d = hmax(amax) / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        const uint16_t dh = fp32_to_fp16(d);
        std::memcpy(out + offsetof(quant::block_q8_0, d), &dh, 2);
        const __m256 scale = _mm256_set1_ps(id);
        __m256i q[4];
        for (int k = 0; k < 4; ++k) q[k] = _mm256_cvttps_epi32(round_half_away(_mm256_mul_ps(v[k], scale)));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + offsetof(quant::block_q8_0, qs)),
                            low_bytes(q[0], q[1], q[2], q[3]));
    }
}

}  // namespace tessel::cpu::avx2

// Plain (non-block) types: conversions to and from float.
#include <cstring>

#include "core/fp16.hpp"
#include "quant/quant.hpp"

namespace tessel::quant {
namespace {

template <typename T>
void int_to_f32(const void* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        T v;
        std::memcpy(&v, static_cast<const char*>(src) + i * sizeof(T), sizeof(T));
        dst[i] = static_cast<float>(v);
    }
}

void f32_to_f32(const void* src, float* dst, int64_t n) { std::memcpy(dst, src, n * sizeof(float)); }
void f32_from_f32(const float* src, void* dst, int64_t n) { std::memcpy(dst, src, n * sizeof(float)); }
// 16-bit rows may sit at odd addresses (e.g. a view at an odd byte offset): those are converted
// through an aligned copy in chunks, so no uint16_t is read or written misaligned.
constexpr int64_t kChunk = 256;

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % alignof(uint16_t) == 0; }

template <void (*Row)(const uint16_t*, float*, int64_t)>
void half_to_f32(const void* src, float* dst, int64_t n) {
    if (aligned16(src)) return Row(static_cast<const uint16_t*>(src), dst, n);
    uint16_t tmp[kChunk];
    for (int64_t i = 0; i < n; i += kChunk) {
        const int64_t m = n - i < kChunk ? n - i : kChunk;
        std::memcpy(tmp, static_cast<const char*>(src) + i * 2, static_cast<size_t>(m) * 2);
        Row(tmp, dst + i, m);
    }
}

template <void (*Row)(const float*, uint16_t*, int64_t)>
void half_from_f32(const float* src, void* dst, int64_t n) {
    if (aligned16(dst)) return Row(src, static_cast<uint16_t*>(dst), n);
    uint16_t tmp[kChunk];
    for (int64_t i = 0; i < n; i += kChunk) {
        const int64_t m = n - i < kChunk ? n - i : kChunk;
        Row(src + i, tmp, m);
        std::memcpy(static_cast<char*>(dst) + i * 2, tmp, static_cast<size_t>(m) * 2);
    }
}

constexpr auto f16_to_f32 = half_to_f32<fp16_to_fp32_row>;
constexpr auto f16_from_f32 = half_from_f32<fp32_to_fp16_row>;
constexpr auto bf16_to_f32 = half_to_f32<bf16_to_fp32_row>;
constexpr auto bf16_from_f32 = half_from_f32<fp32_to_bf16_row>;
void f64_from_f32(const float* src, void* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const double v = src[i];
        std::memcpy(static_cast<char*>(dst) + i * 8, &v, 8);
    }
}

}  // namespace

void register_plain(Kernels& k) {
    k.set(DType::F32, f32_to_f32, f32_from_f32);
    k.set(DType::F16, f16_to_f32, f16_from_f32);
    k.set(DType::BF16, bf16_to_f32, bf16_from_f32);
    k.set(DType::F64, int_to_f32<double>, f64_from_f32);
    k.set(DType::I8, int_to_f32<int8_t>, nullptr);
    k.set(DType::I16, int_to_f32<int16_t>, nullptr);
    k.set(DType::I32, int_to_f32<int32_t>, nullptr);
    k.set(DType::I64, int_to_f32<int64_t>, nullptr);
}

}  // namespace tessel::quant

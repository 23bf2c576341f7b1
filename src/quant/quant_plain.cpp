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
void f16_to_f32(const void* src, float* dst, int64_t n) { fp16_to_fp32_row(static_cast<const uint16_t*>(src), dst, n); }
void f16_from_f32(const float* src, void* dst, int64_t n) { fp32_to_fp16_row(src, static_cast<uint16_t*>(dst), n); }
void bf16_to_f32(const void* src, float* dst, int64_t n) { bf16_to_fp32_row(static_cast<const uint16_t*>(src), dst, n); }
void bf16_from_f32(const float* src, void* dst, int64_t n) { fp32_to_bf16_row(src, static_cast<uint16_t*>(dst), n); }
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

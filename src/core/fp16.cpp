#include "core/fp16.hpp"

#include "core/cpu_features.hpp"

namespace tessel {

#if defined(__x86_64__) || defined(__i386__)
// Defined in fp16_f16c.cpp, compiled with -mf16c; only called when F16C is usable.
void fp16_to_fp32_row_f16c(const uint16_t* src, float* dst, int64_t n);
void fp32_to_fp16_row_f16c(const float* src, uint16_t* dst, int64_t n);
#endif

void fp16_to_fp32_row(const uint16_t* src, float* dst, int64_t n, const CpuFeatures& use) {
#if defined(__x86_64__) || defined(__i386__)
    if (use.f16c) return fp16_to_fp32_row_f16c(src, dst, n);
#else
    (void)use;
#endif
    for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(src[i]);
}

void fp32_to_fp16_row(const float* src, uint16_t* dst, int64_t n, const CpuFeatures& use) {
#if defined(__x86_64__) || defined(__i386__)
    if (use.f16c) return fp32_to_fp16_row_f16c(src, dst, n);
#else
    (void)use;
#endif
    for (int64_t i = 0; i < n; ++i) dst[i] = fp32_to_fp16(src[i]);
}

void fp16_to_fp32_row(const uint16_t* src, float* dst, int64_t n) {
    fp16_to_fp32_row(src, dst, n, usable_cpu_features());
}

void fp32_to_fp16_row(const float* src, uint16_t* dst, int64_t n) {
    fp32_to_fp16_row(src, dst, n, usable_cpu_features());
}

void bf16_to_fp32_row(const uint16_t* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(src[i]);
}

void fp32_to_bf16_row(const float* src, uint16_t* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = fp32_to_bf16(src[i]);
}

}  // namespace tessel

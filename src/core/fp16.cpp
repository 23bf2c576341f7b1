#include "core/fp16.hpp"

namespace tessel {

#if defined(__x86_64__) || defined(__i386__)
// Defined in fp16_f16c.cpp, compiled with -mf16c; only called when the CPU has F16C.
void fp16_to_fp32_row_f16c(const uint16_t* src, float* dst, int64_t n);
void fp32_to_fp16_row_f16c(const float* src, uint16_t* dst, int64_t n);
namespace {
const bool kHasF16C = __builtin_cpu_supports("f16c");
}
#endif

void fp16_to_fp32_row(const uint16_t* src, float* dst, int64_t n) {
#if defined(__x86_64__) || defined(__i386__)
    if (kHasF16C) return fp16_to_fp32_row_f16c(src, dst, n);
#endif
    for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(src[i]);
}

void fp32_to_fp16_row(const float* src, uint16_t* dst, int64_t n) {
#if defined(__x86_64__) || defined(__i386__)
    if (kHasF16C) return fp32_to_fp16_row_f16c(src, dst, n);
#endif
    for (int64_t i = 0; i < n; ++i) dst[i] = fp32_to_fp16(src[i]);
}

void bf16_to_fp32_row(const uint16_t* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(src[i]);
}

void fp32_to_bf16_row(const float* src, uint16_t* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = fp32_to_bf16(src[i]);
}

}  // namespace tessel

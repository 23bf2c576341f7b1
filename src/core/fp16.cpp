#include "core/fp16.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace tessel {

#if defined(__x86_64__) || defined(__i386__)
// Defined in fp16_f16c.cpp, compiled with -mf16c; only called when the CPU has F16C.
void fp16_to_fp32_row_f16c(const uint16_t* src, float* dst, int64_t n);
void fp32_to_fp16_row_f16c(const float* src, uint16_t* dst, int64_t n);
namespace {
// F16C (CPUID.1:ECX bit 29) is VEX-encoded, so the OS must also save AVX state
// (OSXSAVE bit 27 and XCR0 bits 1..2).
bool cpu_has_f16c() {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
    const bool f16c = c & (1u << 29), osxsave = c & (1u << 27), avx = c & (1u << 28);
    if (!(f16c && osxsave && avx)) return false;
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (lo & 6u) == 6u;
}
const bool kHasF16C = cpu_has_f16c();
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

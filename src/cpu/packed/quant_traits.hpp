// Compile-time geometry of the quantized packed formats (format.hpp) and their activation blocks,
// two byte readers and the per-call activation scales, shared by the per-ISA kernel files. Internal linkage: every ISA
// translation unit keeps its own copy (see cpu/kernels/kernel.hpp on inline code in ISA units);
// the includers are compiled with F16C enabled.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/dtype.hpp"
#include "cpu/packed/format.hpp"
#include "cpu/packed/kernel.hpp"

namespace tessel::cpu::packed {
namespace {

/// A grow-only scratch array for the per-ISA kernel units, in place of std::vector: its code has
/// internal linkage, so each unit's copy (built with that unit's ISA flags) serves that unit only.
/// A std::vector member the compiler did not inline became a weak symbol the linker could pick for
/// every unit of the program (seen in the sanitizer build: std::vector<float>::_M_default_append
/// from the AVX-512 unit), code a CPU without the ISA could then run.
template <class T>
class UnitBuffer {
public:
    UnitBuffer() = default;
    UnitBuffer(const UnitBuffer&) = delete;
    UnitBuffer& operator=(const UnitBuffer&) = delete;
    ~UnitBuffer() { std::free(p_); }
    /// Room for n elements; elements past the previous size are unspecified. Throws
    /// std::bad_alloc (from kernel.cpp) when the memory cannot be had.
    void resize(size_t n) {
        if (n <= cap_) return;
        void* q = std::realloc(p_, n * sizeof(T));
        if (!q) throw_scratch_alloc(n * sizeof(T));
        p_ = static_cast<T*>(q);
        cap_ = n;
    }
    /// n elements, each v.
    void assign(size_t n, T v) {
        resize(n);
        for (size_t i = 0; i < n; ++i) p_[i] = v;
    }
    T* data() { return p_; }
    const T* data() const { return p_; }
    T& operator[](size_t i) { return p_[i]; }
    const T& operator[](size_t i) const { return p_[i]; }

private:
    T* p_ = nullptr;
    size_t cap_ = 0;
};

/// A weight format: kScales fp16 values (d, then m) and kQs quant bytes per row and 32-element
/// block, with activations packed as kLhs blocks (Q8_0: fp16 d + 32 quants; Q8_1: d, s + 32).
template <int kScales_, int kQs_, DType kWeight_, DType kLhs_>
struct Weight {
    static constexpr int kScales = kScales_, kQs = kQs_;
    static constexpr DType kWeight = kWeight_, kLhs = kLhs_;
    static constexpr int64_t kGroupBlockBytes = kGroupRows * (2 * kScales + kQs);  ///< one block of 16 rows
    static constexpr int64_t kLhsHead = kLhs == DType::Q8_1 ? 4 : 2;              ///< bytes before the quants
    static constexpr int64_t kLhsBlockBytes = kLhsHead + 32;
};
using Q4_0W = Weight<1, 16, DType::Q4_0, DType::Q8_0>;
using Q4_1W = Weight<2, 16, DType::Q4_1, DType::Q8_1>;
using Q8_0W = Weight<1, 32, DType::Q8_0, DType::Q8_0>;

/// Scaled LHS blocks (LhsLayout::Scaled of kernel.hpp): bytes per block and field offsets.
constexpr int64_t kScaledBlockBytes = 40, kScaledD = 32, kScaledAux = 36;

/// The aux of a scaled block for weight W: 0 -> Q8_1's s as f32; c > 0 -> the integer -c * sum q
/// (c = 8 for Q4_0, 128 for Q8_0; the Q5_0 and IQ4_NL kernels pass their c, 16 and 128, to
/// quantize_q8_scaled themselves).
template <class W>
inline constexpr int kScaledCorr = W::kWeight == DType::Q4_0 ? 8 : W::kWeight == DType::Q8_0 ? 128 : 0;

/// The fp16 value at p (unaligned) as a float.
inline float half_at(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

/// The 32-bit integer at p (unaligned).
inline int32_t i32_at(const uint8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

/// Per-call activation data of a GEMM call: for each row and block, d_x and (Q4_0) the integer
/// correction -8 * sum q_x. AVX2 code: the includers are compiled with AVX2 at least.
struct RowPrep {
    UnitBuffer<float> d;
    UnitBuffer<int32_t> corr;
};

template <class W>
void prepare(const GemmArgs& a, RowPrep& p) {
    const int64_t nb = a.k / 32;
    p.d.resize(static_cast<size_t>(a.m * nb));
    if constexpr (W::kWeight == DType::Q4_0) p.corr.resize(static_cast<size_t>(a.m * nb));
    for (int64_t i = 0; i < a.m; ++i)
        for (int64_t b = 0; b < nb; ++b) {
            const uint8_t* blk = a.lhs + i * a.lhs_stride + b * W::kLhsBlockBytes;
            p.d[static_cast<size_t>(i * nb + b)] = half_at(blk);
            if constexpr (W::kWeight == DType::Q4_0) {
                const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
                const __m256i s16 = _mm256_maddubs_epi16(_mm256_set1_epi8(1), q);
                const __m256i s32 = _mm256_madd_epi16(s16, _mm256_set1_epi16(1));
                __m128i s = _mm_add_epi32(_mm256_castsi256_si128(s32), _mm256_extracti128_si256(s32, 1));
                s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
                s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
                p.corr[static_cast<size_t>(i * nb + b)] = -8 * _mm_cvtsi128_si32(s);
            }
        }
}

}  // namespace
}  // namespace tessel::cpu::packed

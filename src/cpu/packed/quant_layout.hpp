// Compile-time geometry of the quantized packed formats (format.hpp) and their activation blocks,
// and the per-unit scratch array, shared by the per-ISA kernel files of every architecture.
// Internal linkage: every ISA translation unit keeps its own copy (see cpu/kernels/kernel.hpp on
// inline code in ISA units).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>

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

}  // namespace
}  // namespace tessel::cpu::packed

// Helpers of the SVE packed kernels (packed_sve.cpp, packed_kquant_sve.cpp), vector-length
// agnostic. A packed register's 16 weight rows (32-bit lane j = row j) are read in chunks of
// chunk_rows() rows: the 32-bit lanes of one vector (4 at 128 bits, 16 at 512 bits), at most the
// group's 16 (predicate chunk_pred(); wider vectors leave their upper lanes inactive). SVE types are
// sizeless (no arrays of them), so a tile keeps one named variable per activation row, picked by
// index with pick<I>. Included only by *_sve.cpp units; internal linkage (see
// cpu/kernels/kernel.hpp on inline code in ISA units).
#pragma once

#include <arm_sve.h>

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "cpu/packed/format.hpp"
#include "cpu/packed/kernel.hpp"

namespace tessel::cpu::packed {
namespace {

/// Weight rows of a group per chunk: min(16, 32-bit lanes of a vector).
inline int64_t chunk_rows() { return svcntw() < 16 ? static_cast<int64_t>(svcntw()) : kGroupRows; }
/// The chunk's 32-bit lanes (one per weight row).
inline svbool_t chunk_pred() { return svwhilelt_b32(int64_t{0}, chunk_rows()); }
/// The chunk's bytes of a packed register (4 per weight row).
inline svbool_t chunk_pred_b8() { return svwhilelt_b8(int64_t{0}, 4 * chunk_rows()); }

/// The fp16 values of a chunk's rows at p (one per row), widened to f32 lanes.
inline svfloat32_t load_f16(svbool_t pg, const uint8_t* p) {
    return svcvt_f32_f16_x(pg, svreinterpret_f16_u32(svld1uh_u32(pg, reinterpret_cast<const uint16_t*>(p))));
}

/// Scalar readers (unaligned).
inline float half_at(const uint8_t* p) {
    __fp16 h;
    std::memcpy(&h, p, 2);
    return static_cast<float>(h);
}
inline float f32_at(const uint8_t* p) {
    float v;
    std::memcpy(&v, p, 4);
    return v;
}
inline int32_t i16_at(const uint8_t* p) {
    int16_t v;
    std::memcpy(&v, p, 2);
    return v;
}

/// The I-th of four named per-row variables.
template <int I, class T>
[[gnu::always_inline]] inline T& pick(T& v0, T& v1, T& v2, T& v3) {
    static_assert(I >= 0 && I < 4);
    if constexpr (I == 0) return v0;
    else if constexpr (I == 1) return v1;
    else if constexpr (I == 2) return v2;
    else return v3;
}

/// Calls f(std::integral_constant<int, I>{}) for I = 0 .. MR - 1 (MR <= 4).
template <int MR, class F>
[[gnu::always_inline]] inline void each_row(F&& f) {
    static_assert(MR >= 1 && MR <= 4);
    [&]<int... I>(std::integer_sequence<int, I...>) { (f(std::integral_constant<int, I>{}), ...); }(std::make_integer_sequence<int, MR>{});
}

/// Output row i of a call, from column col.
inline float* out_at(const GemmArgs& a, int64_t i, int64_t col) {
    return reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(a.dst) + i * a.dst_stride) + col;
}

/// Stores a chunk's columns col .. col + chunk_rows() - 1 of row i, those below a.n only.
inline void store_chunk(const GemmArgs& a, int64_t i, int64_t col, svfloat32_t v) {
    const svbool_t pg = chunk_pred();
    svst1_f32(svand_b_z(pg, pg, svwhilelt_b32(col, a.n)), out_at(a, i, col), v);
}

}  // namespace
}  // namespace tessel::cpu::packed

// Row tiling shared by the packed micro-kernels: full tiles of MR activation rows, then one tile
// of the remaining m % MR rows with its own compile-time height (so a tail keeps its rows in
// registers instead of running them one by one). ISA-free; internal linkage, so every ISA
// translation unit keeps its own copy (see cpu/kernels/kernel.hpp on inline code in ISA units).
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

namespace tessel::cpu::packed {
namespace {

/// Calls f(std::integral_constant<int, R>{}, i0) for row tiles [i0, i0 + R) covering [0, m):
/// R = MR for full tiles, then R = m % MR once if non-zero.
template <int MR, class F>
void for_row_tiles(int64_t m, F&& f) {
    int64_t i = 0;
    for (; i + MR <= m; i += MR) f(std::integral_constant<int, MR>{}, i);
    const int rest = static_cast<int>(m - i);
    if (rest == 0) return;
    [&]<int... R>(std::integer_sequence<int, R...>) {
        ((rest == R + 1 ? f(std::integral_constant<int, R + 1>{}, i) : void()), ...);
    }(std::make_integer_sequence<int, MR - 1>{});
}

}  // namespace
}  // namespace tessel::cpu::packed

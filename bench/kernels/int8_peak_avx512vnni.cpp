// The AVX-512 VNNI int8 peak loop (int8_peak.hpp): kVnniChains vpdpbusd zmm chains.
#include "cpu/kernels/avx512_intrinsics.hpp"  // first: <immintrin.h> without g++ 12's false warnings

#include "int8_peak.hpp"

namespace tessel::bench {

int32_t vnni_peak_loop(int64_t iters) {
    __m512i acc[kVnniChains];
    for (int c = 0; c < kVnniChains; ++c) acc[c] = _mm512_set1_epi32(c);
    __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-5);
    for (int64_t i = 0; i < iters; ++i) {
        asm("" : "+v"(a), "+v"(b));  // opaque operands: nothing is hoisted or folded
        for (int c = 0; c < kVnniChains; ++c) acc[c] = _mm512_dpbusd_epi32(acc[c], a, b);
    }
    __m512i s = acc[0];
    for (int c = 1; c < kVnniChains; ++c) s = _mm512_add_epi32(s, acc[c]);
    return _mm512_reduce_add_epi32(s);
}

}  // namespace tessel::bench

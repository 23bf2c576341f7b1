// Packed micro-kernels, avx512vnni tier: Q5_0 weights (format q5_0x16 of format.hpp) times Q8_0
// activations as scaled blocks (kernel.hpp's LhsLayout::Scaled), with the 8-row vpdpbusd tile of
// scaled_tile_avx512vnni.hpp. A block's 8 operand registers are the Q4_0 nibbles plus the fifth
// bit: vpshufb copies a row's qh byte into its lane's 4 bytes, vptestmb picks the byte's bit and a
// masked add sets bit 4. The 5-bit codes are unsigned (value = code - 16), so each row's dot starts
// at its block's aux, -16 * sum q_x. The result of an output depends only on its inputs (never on
// the thread count or the call's column range).
#include "cpu/packed/scaled_tile_avx512vnni.hpp"  // first: it includes <immintrin.h> with g++'s false warnings silenced

#include "cpu/packed/q5_traits.hpp"

namespace tessel::cpu::packed {
namespace {

struct Q5Decoder {
    static constexpr int64_t kBlockBytes = kQ5BlockBytes;
    static constexpr int kCorr = 16;
    /// op[r] = elements 4r.., op[r + 4] = 16 + 4r.. of block `gb` of a group.
    void decode(const uint8_t* gb, __m512i (&op)[8]) const {
        const __m512i qh = _mm512_loadu_si512(gb + kQ5Head);
        const __m512i low = _mm512_set1_epi8(0x0f), bit4 = _mm512_set1_epi8(0x10);
        #pragma GCC unroll 4
        for (int r = 0; r < 4; ++r) {
            const __m512i v = _mm512_loadu_si512(gb + kQ5Head + 64 * (r + 1));
            const __m512i bits = _mm512_set1_epi32(qh_bits(r));
            const __m512i lo_h = _mm512_shuffle_epi8(qh, _mm512_broadcast_i32x4(qh_select(r / 2)));
            const __m512i hi_h = _mm512_shuffle_epi8(qh, _mm512_broadcast_i32x4(qh_select(2 + r / 2)));
            const __m512i lo = _mm512_and_si512(v, low), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
            op[r] = _mm512_mask_add_epi8(lo, _mm512_test_epi8_mask(lo_h, bits), lo, bit4);
            op[r + 4] = _mm512_mask_add_epi8(hi, _mm512_test_epi8_mask(hi_h, bits), hi, bit4);
        }
    }
};

void pack_q8_0(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k) { quantize_q8_scaled<Q5Decoder::kCorr>(x, x_stride, dst, m, k); }

constexpr int kMr = 8;

constinit Kernel table[] = {
    {"q5_0_q8_0_gemm_8x16_avx512vnni", "q5_0_q8_0_gemv_1x16_avx512vnni", CpuTier::Avx512Vnni, false, DType::Q5_0, DType::Q8_0,
     kMr, 16, 4, 2, kMr, 16, 1, pack_q8_0, scaled_gemm<Q5Decoder, kMr>, scaled_gemm<Q5Decoder, 1>, LhsLayout::Scaled},
};

}  // namespace

constinit const std::span<Kernel> kQ5Avx512VnniKernels{table};

}  // namespace tessel::cpu::packed

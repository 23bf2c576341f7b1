// Packed micro-kernels, avx512vnni tier: IQ4_NL weights (format iq4_nlx16 of format.hpp, the
// q4_0x16 layout) times Q8_0 activations as scaled blocks (kernel.hpp's LhsLayout::Scaled), with
// the 8-row vpdpbusd tile of scaled_tile_avx512vnni.hpp. A nibble indexes the non-linear table
// kvalues (int8, -127..113; quant/blocks.hpp); one vpshufb per register maps 64 nibbles to
// kvalues + 128 (1..241), the unsigned operand, so each row's dot starts at its block's aux,
// -128 * sum q_x. The result of an output depends only on its inputs.
#include "cpu/packed/scaled_tile_avx512vnni.hpp"  // first: it includes <immintrin.h> with g++'s false warnings silenced

namespace tessel::cpu::packed {
namespace {

struct Iq4nlDecoder {
    static constexpr int64_t kBlockBytes = kGroupRows * 18;  ///< d[16], 4 nibble registers
    static constexpr int kCorr = 128;
    /// kvalues + 128 in each 128-bit lane (vpshufb indexes within a lane).
    const __m512i table = _mm512_xor_si512(
        _mm512_broadcast_i32x4(_mm_setr_epi8(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113)),
        _mm512_set1_epi8(static_cast<char>(0x80)));
    /// op[r] = elements 4r.., op[r + 4] = 16 + 4r.. of block `gb` of a group.
    void decode(const uint8_t* gb, __m512i (&op)[8]) const {
        const __m512i low = _mm512_set1_epi8(0x0f);
        #pragma GCC unroll 4
        for (int r = 0; r < 4; ++r) {
            const __m512i v = _mm512_loadu_si512(gb + 2 * kGroupRows + 64 * r);
            op[r] = _mm512_shuffle_epi8(table, _mm512_and_si512(v, low));
            op[r + 4] = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(v, 4), low));
        }
    }
};

void pack_q8_0(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k) { quantize_q8_scaled<Iq4nlDecoder::kCorr>(x, x_stride, dst, m, k); }

constexpr int kMr = 8;

constinit Kernel table[] = {
    {"iq4_nl_q8_0_gemm_8x16_avx512vnni", "iq4_nl_q8_0_gemv_1x16_avx512vnni", CpuTier::Avx512Vnni, false, DType::IQ4_NL, DType::Q8_0,
     kMr, 16, 4, 2, kMr, 16, 1, pack_q8_0, scaled_gemm<Iq4nlDecoder, kMr>, scaled_gemm<Iq4nlDecoder, 1>, LhsLayout::Scaled},
};

}  // namespace

constinit const std::span<Kernel> kIq4nlAvx512VnniKernels{table};

}  // namespace tessel::cpu::packed

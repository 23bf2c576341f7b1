// Packed micro-kernels, avx512vnni tier: Q4_0, Q4_1 and Q8_0 weights (formats q4_0x16, q4_1x16,
// q8_0x16 of format.hpp) times Q8 activations, with vpdpbusd (u8 x s8 -> s32, 4 products per
// 32-bit lane). One 64-byte packed register holds 4 K-bytes of each of 16 weight rows, so a
// vpdpbusd against one broadcast 4-byte group of an activation row adds 4 products to all 16
// output columns at once; no horizontal sums anywhere.
//
// The tile (kMr activation rows x 16 columns, each weight register decoded once per block for the
// kMr rows) is scaled_tile_avx512vnni.hpp's; the weights are the unsigned operand, the activations
// (scaled blocks, kernel.hpp's LhsLayout::Scaled, made once per op by pack_lhs) the signed one.
// Per activation row i, block b (32 elements), the integer dot of the 16 columns:
//   Q4_0  sum (code - 8) * q_x = vpdpbusd(codes, q_x) starting from aux = -8 * sum q_x
//   Q4_1  sum code * q_x; the min adds m_w * s_x (s_x: the scaled block's aux, the Q8_1 block's s)
//   Q8_0  the weights get +128 (xor 0x80) to be unsigned: sum (q_w + 128) * q_x starting from
//         aux = -128 * sum q_x
// then acc += (d_w * d_x) * dot in float lanes. Every output is computed by the same sequence of
// operations whatever the tile it falls in, so it depends only on its inputs (never on the
// thread count or the call's column range); the GEMV is the 1-row tile.
#include "cpu/packed/scaled_tile_avx512vnni.hpp"  // first: it includes <immintrin.h> with g++'s false warnings silenced

namespace tessel::cpu::packed {
namespace {

/// Q4_0 and Q4_1 (W): op[r] = the low nibbles of register r (elements 4r..), op[r + 4] = its high
/// nibbles (16 + 4r..), the registers following the fp16 d[16] (and Q4_1's m[16]).
template <class W>
struct NibbleDecoder {
    static constexpr int64_t kBlockBytes = W::kGroupBlockBytes;
    static constexpr int kCorr = kScaledCorr<W>;
    void decode(const uint8_t* gb, __m512i (&op)[8]) const {
        const uint8_t* qs = gb + 2 * W::kScales * kGroupRows;
        const __m512i low = _mm512_set1_epi8(0x0f);
        #pragma GCC unroll 4
        for (int r = 0; r < 4; ++r) {
            const __m512i v = _mm512_loadu_si512(qs + 64 * r);
            op[r] = _mm512_and_si512(v, low);
            op[r + 4] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
        }
    }
};

/// Q8_0: op[r] = register r (elements 4r..) + 128, unsigned.
struct Q8Decoder {
    static constexpr int64_t kBlockBytes = Q8_0W::kGroupBlockBytes;
    static constexpr int kCorr = kScaledCorr<Q8_0W>;
    void decode(const uint8_t* gb, __m512i (&op)[8]) const {
        const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
        #pragma GCC unroll 8
        for (int r = 0; r < 8; ++r) op[r] = _mm512_xor_si512(_mm512_loadu_si512(gb + 2 * kGroupRows + 64 * r), bias);
    }
};

using Q4_0Decoder = NibbleDecoder<Q4_0W>;
using Q4_1Decoder = NibbleDecoder<Q4_1W>;

void pack_q4_0(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k) { quantize_q8_scaled<kScaledCorr<Q4_0W>>(x, x_stride, dst, m, k); }
void pack_q4_1(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k) { quantize_q8_scaled<kScaledCorr<Q4_1W>>(x, x_stride, dst, m, k); }
void pack_q8_0(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k) { quantize_q8_scaled<kScaledCorr<Q8_0W>>(x, x_stride, dst, m, k); }

constexpr int kMr = 8;

constexpr Kernel kQ4_0 = {"q4_0_q8_0_gemm_8x16_avx512vnni", "q4_0_q8_0_gemv_1x16_avx512vnni", CpuTier::Avx512Vnni, false,
                      DType::Q4_0, DType::Q8_0, kMr, 16, 4, 2, kMr, 16, 1, pack_q4_0, scaled_gemm<Q4_0Decoder, kMr>, scaled_gemm<Q4_0Decoder, 1>, LhsLayout::Scaled};
constexpr Kernel kQ4_1 = {"q4_1_q8_1_gemm_8x16_avx512vnni", "q4_1_q8_1_gemv_1x16_avx512vnni", CpuTier::Avx512Vnni, false,
                      DType::Q4_1, DType::Q8_1, kMr, 16, 4, 2, kMr, 16, 1, pack_q4_1, scaled_gemm<Q4_1Decoder, kMr>, scaled_gemm<Q4_1Decoder, 1>, LhsLayout::Scaled};
constexpr Kernel kQ8_0 = {"q8_0_q8_0_gemm_8x16_avx512vnni", "q8_0_q8_0_gemv_1x16_avx512vnni", CpuTier::Avx512Vnni, false,
                      DType::Q8_0, DType::Q8_0, kMr, 16, 4, 1, kMr, 16, 1, pack_q8_0, scaled_gemm<Q8Decoder, kMr>, scaled_gemm<Q8Decoder, 1>, LhsLayout::Scaled};

constinit Kernel table[] = {kQ4_0, kQ4_1, kQ8_0};

}  // namespace

constinit const std::span<Kernel> kAvx512VnniKernels{table};

}  // namespace tessel::cpu::packed

// Rows kernels (src/cpu/packed/kernel.hpp) of MUL_MAT and MUL_MAT_ID for plain GGUF rows of
// quantized weights (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4) with F32 activations, tier
// avx512vnni (compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mavx2 -mfma
// -mf16c; run only when the usable CPU features include the avx512vnni tier). Activations are
// quantized to Q8_0 / Q8_1 (mul_mat_driver.hpp's pack_lhs); the driver is packed/mul_mat.cpp, the
// block decoders quant_decode_avx2.hpp.
//
// Per (activation row i, weight row j) and 32-element block:
//   dot = vpdpbusd(-kOffset·Σq_x, code_w, q_x) = Σ (code_w - kOffset)·q_x = Σ q_w·q_x
//         exact in int32 lanes (unsigned codes × signed activations, no saturation); the
//         activation term -kOffset·Σq_x is one vpdpbusd per activation row and block, shared by
//         the tile's weight rows
//   acc += (d_w·d_x)·dot   in float lanes, summed across lanes at the end of the tile
//   min += m_w·s_x         (types with a min: x = d·q + m; Q8_1's s = d·Σq), a vector over j
// so a tile's result depends only on its inputs, never on the thread count.
//
// Two tiles (measured on Sapphire Rapids against each other and against two blocks per 512-bit
// register, which lost to both): the GEMM tile 4x8 holds two weight rows per 512-bit register
// (the activation block broadcast to both halves); the GEMV tile 1x8 uses 256-bit registers,
// whose cheaper decoding wins when each weight block meets one activation row.
#include "cpu/kernels/avx512_intrinsics.hpp"  // first: <immintrin.h> without g++ 12's false warnings

#include "cpu/kernels/mul_mat_driver.hpp"
#include "cpu/kernels/quant_decode_avx2.hpp"

namespace tessel::cpu {
namespace {

using namespace quant;
using avx2::half_to_float;
using avx2::load_bytes;

/// Two 256-bit halves as one 512-bit register (lo in bits 0..255).
__m512i join(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }
/// lo in the lower 8 lanes, hi in the upper 8.
__m512 join(float lo, float hi) { return _mm512_insertf32x8(_mm512_set1_ps(lo), _mm256_set1_ps(hi), 1); }

float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/// The mins of weight rows 0..NR-1 (NR ≤ 8) for block b as lanes of a vector (others 0).
template <class W, int NR>
__m256 block_mins(const uint8_t* w, size_t w_stride, int64_t b) {
    auto m = [&](int j) { return j < NR ? W::min(reinterpret_cast<const typename W::Block*>(w + j * w_stride)[b]) : 0.0f; };
    return _mm256_setr_ps(m(0), m(1), m(2), m(3), m(4), m(5), m(6), m(7));
}

/// Writes rows.out[i][j] = Σ lanes of the row's j-th 256-bit accumulator + mins[i] lane j.
template <int MR, int NR, class AccAt>
void store_tile(const mm::TileRows<MR>& rows, AccAt acc_at, const __m256 (&mins)[MR]) {
    for (int i = 0; i < MR; ++i) {
        alignas(32) float m[8];
        _mm256_store_ps(m, mins[i]);
        for (int j = 0; j < NR; ++j) rows.out[i][j] = hsum(acc_at(i, j)) + m[j];
    }
}

/// GEMM tile (NR ≤ 8): weight rows 2p and 2p+1 share a 512-bit register (an odd last row pairs
/// with zeros); each activation block is broadcast to both halves.
template <class W, class X, int MR, int NR>
void pair_tile(const uint8_t* w, size_t w_stride, const mm::TileRows<MR>& rows, int64_t n_blocks) {
    using Block = typename W::Block;
    constexpr int NP = (NR + 1) / 2;
    __m512 acc[MR][NP];
    __m256 mins[MR];
    for (int i = 0; i < MR; ++i) {
        for (int p = 0; p < NP; ++p) acc[i][p] = _mm512_setzero_ps();
        mins[i] = _mm256_setzero_ps();
    }
    const __m512i offset = _mm512_set1_epi8(static_cast<char>(W::kOffset));
    for (int64_t b = 0; b < n_blocks; ++b) {
        __m512i wc[NP];
        __m512 wd[NP];
        for (int p = 0; p < NP; ++p) {
            const Block& lo = reinterpret_cast<const Block*>(w + 2 * p * w_stride)[b];
            if (2 * p + 1 < NR) {
                const Block& hi = reinterpret_cast<const Block*>(w + (2 * p + 1) * w_stride)[b];
                wc[p] = join(W::codes(lo), W::codes(hi));
                wd[p] = join(W::scale(lo), W::scale(hi));
            } else {
                wc[p] = _mm512_zextsi256_si512(W::codes(lo));
                wd[p] = join(W::scale(lo), 0.0f);
            }
        }
        __m256 wm = _mm256_setzero_ps();
        if constexpr (W::kMin) wm = block_mins<W, NR>(w, w_stride, b);
        for (int i = 0; i < MR; ++i) {
            const X& xb = reinterpret_cast<const X*>(rows.x[i])[b];
            const __m512i xq = _mm512_broadcast_i64x4(load_bytes(xb.qs));
            const __m512 xd = _mm512_set1_ps(half_to_float(xb.d));
            __m512i base = _mm512_setzero_si512();
            if constexpr (W::kOffset != 0) base = _mm512_sub_epi32(base, _mm512_dpbusd_epi32(base, offset, xq));
            for (int p = 0; p < NP; ++p) {
                const __m512i dot = _mm512_dpbusd_epi32(base, wc[p], xq);
                acc[i][p] = _mm512_fmadd_ps(_mm512_mul_ps(wd[p], xd), _mm512_cvtepi32_ps(dot), acc[i][p]);
            }
            if constexpr (W::kMin) mins[i] = _mm256_fmadd_ps(wm, _mm256_set1_ps(half_to_float(xb.s)), mins[i]);
        }
    }
    store_tile<MR, NR>(rows, [&](int i, int j) {
        return j % 2 ? _mm512_extractf32x8_ps(acc[i][j / 2], 1) : _mm512_castps512_ps256(acc[i][j / 2]);
    }, mins);
}

/// GEMV tile (NR ≤ 8): one weight row per 256-bit register.
template <class W, class X, int MR, int NR>
void row_tile(const uint8_t* w, size_t w_stride, const mm::TileRows<MR>& rows, int64_t n_blocks) {
    using Block = typename W::Block;
    __m256 acc[MR][NR];
    __m256 mins[MR];
    for (int i = 0; i < MR; ++i) {
        for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_setzero_ps();
        mins[i] = _mm256_setzero_ps();
    }
    const __m256i offset = _mm256_set1_epi8(static_cast<char>(W::kOffset));
    for (int64_t b = 0; b < n_blocks; ++b) {
        __m256i wc[NR];
        __m256 wd[NR];
        for (int j = 0; j < NR; ++j) {
            const Block& blk = reinterpret_cast<const Block*>(w + j * w_stride)[b];
            wc[j] = W::codes(blk);
            wd[j] = _mm256_set1_ps(W::scale(blk));
        }
        __m256 wm = _mm256_setzero_ps();
        if constexpr (W::kMin) wm = block_mins<W, NR>(w, w_stride, b);
        for (int i = 0; i < MR; ++i) {
            const X& xb = reinterpret_cast<const X*>(rows.x[i])[b];
            const __m256i xq = load_bytes(xb.qs);
            const __m256 xd = _mm256_set1_ps(half_to_float(xb.d));
            __m256i base = _mm256_setzero_si256();
            if constexpr (W::kOffset != 0) base = _mm256_sub_epi32(base, _mm256_dpbusd_epi32(base, offset, xq));
            for (int j = 0; j < NR; ++j) {
                const __m256i dot = _mm256_dpbusd_epi32(base, wc[j], xq);
                acc[i][j] = _mm256_fmadd_ps(_mm256_mul_ps(wd[j], xd), _mm256_cvtepi32_ps(dot), acc[i][j]);
            }
            if constexpr (W::kMin) mins[i] = _mm256_fmadd_ps(wm, _mm256_set1_ps(half_to_float(xb.s)), mins[i]);
        }
    }
    store_tile<MR, NR>(rows, [&](int i, int j) { return acc[i][j]; }, mins);
}

template <class Dec, class X, DType kW, DType kX>
struct VnniKernel {
    static constexpr DType kWeight = kW, kAct = kX;
    static constexpr int kMr = 4, kNr = 8, kGemvNr = 8, kNStep = 16;
    static constexpr CpuTier kTier = CpuTier::Avx512Vnni;
    template <int MR, int NR>
    static void tile(const uint8_t* w, size_t w_stride, const mm::TileRows<MR>& rows, int64_t n_blocks) {
        if constexpr (MR == 1) row_tile<Dec, X, MR, NR>(w, w_stride, rows, n_blocks);
        else pair_tile<Dec, X, MR, NR>(w, w_stride, rows, n_blocks);
    }
};

struct Q8_0K : VnniKernel<avx2::DecQ8_0, block_q8_0, DType::Q8_0, DType::Q8_0> {
    static constexpr const char* kGemmName = "q8_0_q8_0_gemm_4x8_avx512vnni";
    static constexpr const char* kGemvName = "q8_0_q8_0_gemv_1x8_avx512vnni";
};
struct Q4_0K : VnniKernel<avx2::DecQ4_0, block_q8_0, DType::Q4_0, DType::Q8_0> {
    static constexpr const char* kGemmName = "q4_0_q8_0_gemm_4x8_avx512vnni";
    static constexpr const char* kGemvName = "q4_0_q8_0_gemv_1x8_avx512vnni";
};
struct Q4_1K : VnniKernel<avx2::DecQ4_1, block_q8_1, DType::Q4_1, DType::Q8_1> {
    static constexpr const char* kGemmName = "q4_1_q8_1_gemm_4x8_avx512vnni";
    static constexpr const char* kGemvName = "q4_1_q8_1_gemv_1x8_avx512vnni";
};
struct Q5_0K : VnniKernel<avx2::DecQ5_0, block_q8_0, DType::Q5_0, DType::Q8_0> {
    static constexpr const char* kGemmName = "q5_0_q8_0_gemm_4x8_avx512vnni";
    static constexpr const char* kGemvName = "q5_0_q8_0_gemv_1x8_avx512vnni";
};
struct Q5_1K : VnniKernel<avx2::DecQ5_1, block_q8_1, DType::Q5_1, DType::Q8_1> {
    static constexpr const char* kGemmName = "q5_1_q8_1_gemm_4x8_avx512vnni";
    static constexpr const char* kGemvName = "q5_1_q8_1_gemv_1x8_avx512vnni";
};
struct IQ4_NLK : VnniKernel<avx2::DecIQ4_NL, block_q8_0, DType::IQ4_NL, DType::Q8_0> {
    static constexpr const char* kGemmName = "iq4_nl_q8_0_gemm_4x8_avx512vnni";
    static constexpr const char* kGemvName = "iq4_nl_q8_0_gemv_1x8_avx512vnni";
};
struct MXFP4K : VnniKernel<avx2::DecMXFP4, block_q8_0, DType::MXFP4, DType::Q8_0> {
    static constexpr const char* kGemmName = "mxfp4_q8_0_gemm_4x8_avx512vnni";
    static constexpr const char* kGemvName = "mxfp4_q8_0_gemv_1x8_avx512vnni";
};

}  // namespace

namespace packed {
constinit const std::span<const Kernel> kAvx512VnniRowsKernels{mm::kRowsTable<Q8_0K, Q4_0K, Q4_1K, Q5_0K, Q5_1K, IQ4_NLK, MXFP4K>};
}  // namespace packed

}  // namespace tessel::cpu

// Packed micro-kernels, amx tier: Q4_0, Q4_1 and Q8_0 weights (formats q4_0x16, q4_1x16, q8_0x16
// of format.hpp) times Q8 activations on AMX int8 tiles (Intel SDM / ISA extensions reference,
// "Intel AMX": TDPBSSD, C[m][n] += sum_k A[m][k] * B[k/4][4n + k%4], signed int8 both sides).
//
// One 32-element block b of a 16-row group is one TDPBSSD:
//   A  16 activation rows x 32 quant bytes of block b, loaded in place (stride = LHS row bytes)
//   B  8 rows x 64 bytes: row r = K-elements 4r..4r+3 of the 16 weight rows. A q8_0x16 block's 8
//      packed registers are exactly this tile (loaded from the packed weights, stride 64); a Q4
//      block's 4 registers give rows r (low nibbles) and r + 4 (high nibbles), unpacked once per
//      group into a scratch of int8 tiles (Q4_0: code - 8, Q4_1: code) reused by every A tile
//   C  16 x 16 int32 dots, stored and scaled in zmm lanes:
//        acc[m] += float(C[m]) * (d_w[16] * d_x[m, b])   (Q4_1: + m_w[16] * s_x[m, b])
// The scales change per block, so each TDPBSSD's C is scaled by the vector unit; two C tiles
// alternate between even and odd blocks so a block's TDPBSSD overlaps the previous one's scaling.
// M tails (< 16 rows) are copied into a zero-padded 16-row scratch: tiles never read past the m
// rows of the caller's LHS. The result of an output depends only on its inputs.
#include "cpu/packed/lhs_avx512.hpp"  // first: it includes <immintrin.h> with g++'s false warnings silenced

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "cpu/packed/kernel.hpp"

namespace tessel::cpu::packed {
namespace {

constexpr int kTileRows = 16;  ///< A and C rows: activation rows per tile
constexpr int kBlock = 32;     ///< K-elements per block (one TDPBSSD)
constexpr int kBRows = kBlock / 4;
constexpr int kBTileBytes = kBRows * 64;

template <int kScales_, int kQs_, DType kWeight_, DType kLhs_>
struct Weight {
    static constexpr int kScales = kScales_, kQs = kQs_;
    static constexpr DType kWeight = kWeight_, kLhs = kLhs_;
    static constexpr int64_t kGroupBlockBytes = kGroupRows * (2 * kScales + kQs);  ///< one block of 16 rows
    static constexpr int64_t kLhsHead = kLhs == DType::Q8_1 ? 4 : 2;              ///< bytes before the quants
    static constexpr int64_t kLhsBlockBytes = kLhsHead + kBlock;
};
using Q4_0W = Weight<1, 16, DType::Q4_0, DType::Q8_0>;
using Q4_1W = Weight<2, 16, DType::Q4_1, DType::Q8_1>;
using Q8_0W = Weight<1, 32, DType::Q8_0, DType::Q8_0>;

/// The LDTILECFG operand (palette 1): tiles 0, 1 = C (16 x 64 bytes), 2, 3 = A (16 x 32 bytes),
/// 4, 5 = B (8 x 64 bytes); even blocks use tiles 0/2/4, odd blocks 1/3/5.
struct alignas(64) TileConfig {
    uint8_t palette = 1;
    uint8_t start_row = 0;
    uint8_t reserved[14] = {};
    uint16_t colsb[16] = {64, 64, kBlock, kBlock, 64, 64};
    uint8_t rows[16] = {kTileRows, kTileRows, kTileRows, kTileRows, kBRows, kBRows};
};
static_assert(sizeof(TileConfig) == 64);

/// Loads this unit's tile configuration unless the thread already holds it (other AMX code on
/// the thread may have loaded another).
void configure_tiles() {
    static const TileConfig want;
    TileConfig have;
    _tile_storeconfig(&have);
    if (std::memcmp(&have, &want, sizeof want) != 0) _tile_loadconfig(&want);
}

float half_at(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

/// Per-call scratch of a thread: activation scales, the unpacked Q4 group, the M tail and C.
struct Scratch {
    std::vector<float> d, s;      ///< d_x, s_x (Q8_1) per [row][block], rows padded to 16 with 0
    std::vector<uint8_t> b;       ///< one group's B tiles, kBTileBytes per block (Q4 only)
    std::vector<uint8_t> tail;    ///< the last m % 16 LHS rows, padded with zero rows
    alignas(64) int32_t c[2][kTileRows * 16];
};

template <class W>
void prepare(const GemmArgs& a, int64_t m_pad, Scratch& sc) {
    const int64_t nb = a.k / kBlock;
    sc.d.assign(static_cast<size_t>(m_pad * nb), 0.0f);
    if constexpr (W::kLhs == DType::Q8_1) sc.s.assign(static_cast<size_t>(m_pad * nb), 0.0f);
    for (int64_t i = 0; i < a.m; ++i)
        for (int64_t b = 0; b < nb; ++b) {
            const uint8_t* blk = a.lhs + i * a.lhs_stride + b * W::kLhsBlockBytes;
            sc.d[static_cast<size_t>(i * nb + b)] = half_at(blk);
            if constexpr (W::kLhs == DType::Q8_1) sc.s[static_cast<size_t>(i * nb + b)] = half_at(blk + 2);
        }
}

/// Unpacks the Q4 quants of one group (all blocks) into int8 B tiles.
template <class W>
void unpack_group(const uint8_t* group, int64_t nb, uint8_t* out) {
    const __m512i low = _mm512_set1_epi8(0x0f);
    const __m512i bias = _mm512_set1_epi8(W::kWeight == DType::Q4_0 ? 8 : 0);
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* qs = group + b * W::kGroupBlockBytes + 2 * W::kScales * kGroupRows;
        uint8_t* tile = out + b * kBTileBytes;
        for (int r = 0; r < 4; ++r) {
            const __m512i v = _mm512_loadu_si512(qs + 64 * r);
            _mm512_storeu_si512(tile + 64 * r, _mm512_sub_epi8(_mm512_and_si512(v, low), bias));
            _mm512_storeu_si512(tile + 64 * (r + 4), _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(v, 4), low), bias));
        }
    }
}

/// C = A . B on tile set kSet (0: tiles 0/2/4, 1: tiles 1/3/5), stored to c (16 x 16 int32).
/// The tile numbers are literals: g++'s intrinsics paste them into the instruction text.
template <int kSet>
inline void tile_dot(const uint8_t* x, size_t x_stride, const uint8_t* bt, int32_t* c) {
    if constexpr (kSet == 0) {
        _tile_zero(0);
        _tile_loadd(2, x, x_stride);
        _tile_loadd(4, bt, 64);
        _tile_dpbssd(0, 2, 4);
        _tile_stored(0, c, 64);
    } else {
        _tile_zero(1);
        _tile_loadd(3, x, x_stride);
        _tile_loadd(5, bt, 64);
        _tile_dpbssd(1, 3, 5);
        _tile_stored(1, c, 64);
    }
}

/// One block: C = A(block b) . B(block b), then acc[r] += C[r] * d_w * d_x[r] (+ m_w * s_x[r]).
template <class W, int kSet>
inline void block_step(const uint8_t* x, size_t x_stride, const uint8_t* bt, const uint8_t* gb,
                       const float* dx, const float* sx, int64_t nb, int32_t* cbuf, __m512 (&acc)[kTileRows]) {
    tile_dot<kSet>(x, x_stride, bt, cbuf);
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb)));
    [[maybe_unused]] __m512 mw;
    if constexpr (W::kWeight == DType::Q4_1) mw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb + 2 * kGroupRows)));
    for (int r = 0; r < kTileRows; ++r) {
        const __m512 c = _mm512_cvtepi32_ps(_mm512_load_si512(cbuf + 16 * r));
        acc[r] = _mm512_fmadd_ps(c, _mm512_mul_ps(dw, _mm512_set1_ps(dx[r * nb])), acc[r]);
        if constexpr (W::kWeight == DType::Q4_1) acc[r] = _mm512_fmadd_ps(mw, _mm512_set1_ps(sx[r * nb]), acc[r]);
    }
}

/// 16 activation rows (quants of row 0 at x, stride x_stride; scales from row i0 of the scratch)
/// times one group (16 columns) over all blocks; writes rows < m_rows, columns < n_cols.
template <class W>
void tile(const uint8_t* x, size_t x_stride, int64_t i0, const uint8_t* group, int64_t nb, Scratch& sc,
          const GemmArgs& a, int64_t n0, int m_rows, int n_cols) {
    __m512 acc[kTileRows];
    for (__m512& v : acc) v = _mm512_setzero_ps();
    const float* dx = sc.d.data() + i0 * nb;
    const float* sx = W::kLhs == DType::Q8_1 ? sc.s.data() + i0 * nb : nullptr;
    constexpr bool kInPlace = W::kWeight == DType::Q8_0;  // B tiles straight from the packed weights
    const uint8_t* bt = kInPlace ? group + 2 * kGroupRows : sc.b.data();
    const int64_t bt_step = kInPlace ? W::kGroupBlockBytes : kBTileBytes;
    auto step = [&](int64_t b, auto c_tile) {
        constexpr int kSet = decltype(c_tile)::value;
        block_step<W, kSet>(x + b * W::kLhsBlockBytes, x_stride, bt + b * bt_step, group + b * W::kGroupBlockBytes,
                                         dx + b, sx ? sx + b : nullptr, nb, sc.c[kSet], acc);
    };
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        step(b, std::integral_constant<int, 0>{});
        step(b + 1, std::integral_constant<int, 1>{});
    }
    if (b < nb) step(b, std::integral_constant<int, 0>{});
    const __mmask16 mask = n_cols >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n_cols) - 1);
    for (int r = 0; r < m_rows; ++r) {
        float* out = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(a.dst) + (i0 + r) * a.dst_stride) + n0;
        _mm512_mask_storeu_ps(out, mask, acc[r]);
    }
}

template <class W>
void gemm(const GemmArgs& a) {
    thread_local Scratch sc;
    configure_tiles();
    const int64_t nb = a.k / kBlock;
    const int64_t m_full = a.m / kTileRows * kTileRows, m_tail = a.m - m_full;
    const int64_t m_pad = m_full + (m_tail ? kTileRows : 0);
    prepare<W>(a, m_pad, sc);
    const size_t row_bytes = static_cast<size_t>(nb * W::kLhsBlockBytes);
    if (m_tail) {
        sc.tail.assign(static_cast<size_t>(kTileRows) * row_bytes, 0);
        for (int64_t i = 0; i < m_tail; ++i)
            std::memcpy(sc.tail.data() + i * row_bytes, a.lhs + (m_full + i) * a.lhs_stride, row_bytes);
    }
    if constexpr (W::kWeight != DType::Q8_0) sc.b.resize(static_cast<size_t>(nb * kBTileBytes));
    const size_t group_bytes = static_cast<size_t>(nb * W::kGroupBlockBytes);
    for (int64_t n0 = 0; n0 < a.n; n0 += kGroupRows) {
        const uint8_t* group = a.rhs + static_cast<size_t>(n0 / kGroupRows) * group_bytes;
        const int n_cols = static_cast<int>(std::min<int64_t>(kGroupRows, a.n - n0));
        if constexpr (W::kWeight != DType::Q8_0) unpack_group<W>(group, nb, sc.b.data());
        for (int64_t i = 0; i < m_full; i += kTileRows)
            tile<W>(a.lhs + i * a.lhs_stride + W::kLhsHead, a.lhs_stride, i, group, nb, sc, a, n0, kTileRows, n_cols);
        if (m_tail)
            tile<W>(sc.tail.data() + W::kLhsHead, row_bytes, m_full, group, nb, sc, a, n0, static_cast<int>(m_tail), n_cols);
    }
}

void pack_q8_0(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k) { quantize_q8_rows<false, 0>(x, x_stride, dst, m, k); }
void pack_q8_1(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k) { quantize_q8_rows<true, 0>(x, x_stride, dst, m, k); }

/// The chain uses AMX from this many activation rows on (below: the VNNI kernels; measured, see
/// bench/README.md).
constexpr int64_t kMinM = 16;

const Kernel kQ4_0 = {"q4_0_q8_0_gemm_16x16_amx", "q4_0_q8_0_gemv_1x16_amx", CpuTier::Amx, true,
                      nullptr, DType::Q8_0, kTileRows, 16, 4, 2, kTileRows, 16, kMinM, pack_q8_0, gemm<Q4_0W>, gemm<Q4_0W>};
const Kernel kQ4_1 = {"q4_1_q8_1_gemm_16x16_amx", "q4_1_q8_1_gemv_1x16_amx", CpuTier::Amx, true,
                      nullptr, DType::Q8_1, kTileRows, 16, 4, 2, kTileRows, 16, kMinM, pack_q8_1, gemm<Q4_1W>, gemm<Q4_1W>};
const Kernel kQ8_0 = {"q8_0_q8_0_gemm_16x16_amx", "q8_0_q8_0_gemv_1x16_amx", CpuTier::Amx, true,
                      nullptr, DType::Q8_0, kTileRows, 16, 4, 1, kTileRows, 16, kMinM, pack_q8_0, gemm<Q8_0W>, gemm<Q8_0W>};

}  // namespace

std::vector<const Kernel*> amx_kernels() {
    static const Kernel table[] = {
        [] { Kernel k = kQ4_0; k.format = format_for(DType::Q4_0); return k; }(),
        [] { Kernel k = kQ4_1; k.format = format_for(DType::Q4_1); return k; }(),
        [] { Kernel k = kQ8_0; k.format = format_for(DType::Q8_0); return k; }(),
    };
    return {&table[0], &table[1], &table[2]};
}

}  // namespace tessel::cpu::packed

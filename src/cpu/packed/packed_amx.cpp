// Packed micro-kernels, amx tier: Q4_0, Q4_1 and Q8_0 weights (formats q4_0x16, q4_1x16, q8_0x16
// of format.hpp) times Q8 activations on AMX int8 tiles (Intel SDM / ISA extensions reference,
// "Intel AMX": TDPBSSD, C[m][n] += sum_k A[m][k] * B[k/4][4n + k%4], signed int8 both sides).
//
// One 32-element block b of a 16-row group is one TDPBSSD:
//   A  16 activation rows x 32 quant bytes of block b, loaded in place (stride = LHS row bytes)
//   B  8 rows x 64 bytes: row r = K-elements 4r..4r+3 of the 16 weight rows. A q8_0x16 block's 8
//      packed registers are exactly this tile (loaded from the packed weights, stride 64); a Q4
//      block's 4 registers give rows r (low nibbles) and r + 4 (high nibbles), unpacked per batch
//      of groups into a scratch of int8 tiles (Q4_0: code - 8, Q4_1: code) that every A tile reuses
//   C  16 x 16 int32 dots, stored and scaled in zmm lanes:
//        acc[m] += float(C[m]) * (d_w[16] * d_x[m, b])   (Q4_1: + m_w[16] * s_x[m, b])
// The scales change per block, so every TDPBSSD's C goes through the vector unit (store, 16 x
// convert, multiply, fma): that scaling, not the tile unit, bounds the speed. Even and odd blocks
// use different tiles so consecutive blocks do not wait on each other's tiles.
// M tails (< 16 rows) are copied into a zero-padded 16-row scratch: tiles never read past the m
// rows of the caller's LHS. The result of an output depends only on its inputs.
#include "cpu/packed/lhs_avx512.hpp"  // first: it includes <immintrin.h> with g++'s false warnings silenced

#include <algorithm>
#include <cstring>

#include "cpu/packed/kernel.hpp"
#include "cpu/packed/quant_traits.hpp"

namespace tessel::cpu::packed {
namespace {

constexpr int kTileRows = 16;  ///< A and C rows: activation rows per tile
constexpr int kBlock = 32;     ///< K-elements per block (one TDPBSSD)
constexpr int kBRows = kBlock / 4;
constexpr int kBTileBytes = kBRows * 64;
/// Unpacked Q4 B tiles per batch of groups (bytes): well inside the L2 cache.
constexpr int64_t kBatchBytes = 256 * 1024;

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


/// Per-call scratch of a thread: activation scales, the unpacked Q4 B tiles and the M tail.
struct Scratch {
    UnitBuffer<float> d, s;    ///< d_x, s_x (Q8_1) per [16-row tile][block][row], padded rows 0
    UnitBuffer<uint8_t> b;     ///< B tiles of a batch of groups, kBTileBytes per block (Q4 only)
    UnitBuffer<uint8_t> tail;  ///< the last m % 16 LHS rows, padded with zero rows
};

template <class W>
void prepare(const GemmArgs& a, int64_t m_pad, Scratch& sc) {
    const int64_t nb = a.k / kBlock;
    sc.d.assign(static_cast<size_t>(m_pad * nb), 0.0f);
    if constexpr (W::kLhs == DType::Q8_1) sc.s.assign(static_cast<size_t>(m_pad * nb), 0.0f);
    for (int64_t i = 0; i < a.m; ++i)
        for (int64_t b = 0; b < nb; ++b) {
            const uint8_t* blk = a.lhs + i * a.lhs_stride + b * W::kLhsBlockBytes;
            const size_t at = static_cast<size_t>((i / kTileRows * nb + b) * kTileRows + i % kTileRows);
            sc.d[at] = half_at(blk);
            if constexpr (W::kLhs == DType::Q8_1) sc.s[at] = half_at(blk + 2);
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
/// dx, sx: the block's 16 row scales; gb: the group's block (its d_w, m_w).
template <class W, int kSet>
[[gnu::always_inline]] inline void block_step(const uint8_t* x, size_t x_stride, const uint8_t* bt, const uint8_t* gb,
                                              const float* dx, const float* sx, int32_t* cbuf, __m512 (&acc)[kTileRows]) {
    tile_dot<kSet>(x, x_stride, bt, cbuf);
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb)));
    [[maybe_unused]] __m512 mw;
    if constexpr (W::kWeight == DType::Q4_1) mw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb + 2 * kGroupRows)));
#pragma GCC unroll 16
    for (int r = 0; r < kTileRows; ++r) {
        const __m512 c = _mm512_cvtepi32_ps(_mm512_load_si512(cbuf + 16 * r));
        acc[r] = _mm512_fmadd_ps(c, _mm512_mul_ps(dw, _mm512_set1_ps(dx[r])), acc[r]);
        if constexpr (W::kWeight == DType::Q4_1) acc[r] = _mm512_fmadd_ps(mw, _mm512_set1_ps(sx[r]), acc[r]);
    }
}

/// 16 activation rows (quants of row 0 at x, stride x_stride; row scales dx / sx of their tile,
/// 16 per block) times one group (16 columns; its packed blocks at group, B tile of block 0 at
/// bt) over nb blocks; writes rows < m_rows, columns < n_cols of out (row stride out_stride).
template <class W>
void tile(const uint8_t* x, size_t x_stride, const float* dx, const float* sx, const uint8_t* group, const uint8_t* bt,
          int64_t nb, float* out, size_t out_stride, int m_rows, int n_cols) {
    constexpr int64_t kBtStep = W::kWeight == DType::Q8_0 ? W::kGroupBlockBytes : kBTileBytes;
    alignas(64) int32_t c[2][kTileRows * 16];
    __m512 acc[kTileRows];
#pragma GCC unroll 16
    for (int r = 0; r < kTileRows; ++r) acc[r] = _mm512_setzero_ps();
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        block_step<W, 0>(x + b * W::kLhsBlockBytes, x_stride, bt + b * kBtStep, group + b * W::kGroupBlockBytes,
                         dx + b * kTileRows, sx + b * kTileRows, c[0], acc);
        block_step<W, 1>(x + (b + 1) * W::kLhsBlockBytes, x_stride, bt + (b + 1) * kBtStep, group + (b + 1) * W::kGroupBlockBytes,
                         dx + (b + 1) * kTileRows, sx + (b + 1) * kTileRows, c[1], acc);
    }
    if (b < nb)
        block_step<W, 0>(x + b * W::kLhsBlockBytes, x_stride, bt + b * kBtStep, group + b * W::kGroupBlockBytes,
                         dx + b * kTileRows, sx + b * kTileRows, c[0], acc);
    const __mmask16 mask = n_cols >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n_cols) - 1);
#pragma GCC unroll 16
    for (int r = 0; r < kTileRows; ++r)
        if (r < m_rows) _mm512_mask_storeu_ps(reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(out) + r * out_stride), mask, acc[r]);
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
    // Groups run in batches: a batch's B tiles (Q4: unpacked into the scratch, at most
    // kBatchBytes) are reused by every A tile, and an A tile stays in L1 across the batch.
    const size_t group_bytes = static_cast<size_t>(nb * W::kGroupBlockBytes);
    const int64_t groups = (a.n + kGroupRows - 1) / kGroupRows;
    constexpr bool kInPlace = W::kWeight == DType::Q8_0;  // B tiles straight from the packed weights
    const int64_t batch = kInPlace ? groups : std::clamp<int64_t>(kBatchBytes / (nb * kBTileBytes), 1, groups);
    if constexpr (!kInPlace) sc.b.resize(static_cast<size_t>(batch * nb * kBTileBytes));
    for (int64_t g0 = 0; g0 < groups; g0 += batch) {
        const int64_t g1 = std::min(groups, g0 + batch);
        if constexpr (!kInPlace)
            for (int64_t g = g0; g < g1; ++g) unpack_group<W>(a.rhs + g * group_bytes, nb, sc.b.data() + (g - g0) * nb * kBTileBytes);
        for (int64_t i = 0; i < a.m; i += kTileRows) {
            const bool full = i + kTileRows <= a.m;
            const uint8_t* x = full ? a.lhs + i * a.lhs_stride + W::kLhsHead : sc.tail.data() + W::kLhsHead;
            const size_t x_stride = full ? a.lhs_stride : row_bytes;
            const float* dx = sc.d.data() + i * nb;
            const float* sx = W::kLhs == DType::Q8_1 ? sc.s.data() + i * nb : dx;  // sx unused without Q8_1
            for (int64_t g = g0; g < g1; ++g) {
                const uint8_t* group = a.rhs + g * group_bytes;
                const uint8_t* bt = kInPlace ? group + 2 * kGroupRows : sc.b.data() + (g - g0) * nb * kBTileBytes;
                const int64_t n0 = g * kGroupRows;
                float* out = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(a.dst) + i * a.dst_stride) + n0;
                tile<W>(x, x_stride, dx, sx, group, bt, nb, out, a.dst_stride, static_cast<int>(std::min<int64_t>(kTileRows, a.m - i)),
                        static_cast<int>(std::min<int64_t>(kGroupRows, a.n - n0)));
            }
        }
    }
}

void pack_q8_0(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k) { quantize_q8_rows<false, 0>(x, x_stride, dst, m, k); }
void pack_q8_1(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k) { quantize_q8_rows<true, 0>(x, x_stride, dst, m, k); }

// min_m: the chain uses AMX from this many activation rows on, the VNNI kernels below it. Measured
// with bench_kernels Packed/ (one thread, N = 1536, K = 576 and 1536): an AMX call costs as much
// for 1 row as for 16 (padded tiles), and the Q4 kernels also unpack every group once per call.
// Q8_0 overtakes VNNI between M = 4 and 8, Q4_1 by M = 16, Q4_0 (a tie at 16) by M = 32.
constexpr Kernel kQ4_0 = {"q4_0_q8_0_gemm_16x16_amx", "q4_0_q8_0_gemv_1x16_amx", CpuTier::Amx, true,
                      DType::Q4_0, DType::Q8_0, kTileRows, 16, 4, 2, kTileRows, 16, 32, pack_q8_0, gemm<Q4_0W>, gemm<Q4_0W>};
constexpr Kernel kQ4_1 = {"q4_1_q8_1_gemm_16x16_amx", "q4_1_q8_1_gemv_1x16_amx", CpuTier::Amx, true,
                      DType::Q4_1, DType::Q8_1, kTileRows, 16, 4, 2, kTileRows, 16, 16, pack_q8_1, gemm<Q4_1W>, gemm<Q4_1W>};
constexpr Kernel kQ8_0 = {"q8_0_q8_0_gemm_16x16_amx", "q8_0_q8_0_gemv_1x16_amx", CpuTier::Amx, true,
                      DType::Q8_0, DType::Q8_0, kTileRows, 16, 4, 1, kTileRows, 16, 8, pack_q8_0, gemm<Q8_0W>, gemm<Q8_0W>};

constinit Kernel table[] = {kQ4_0, kQ4_1, kQ8_0};

}  // namespace

constinit const std::span<Kernel> kAmxKernels{table};

}  // namespace tessel::cpu::packed

// FLASH_ATTN_EXT with F32 queries and F32 / F16 / Q8_0 / Q4_0 keys and values, AVX-512 (compiled
// with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx2 -mfma -mf16c; selected only when the
// usable CPU features include the avx512 tier). Semantics and accepted layouts as the AVX2 kernel
// (flash_attn_avx2.cpp) and the reference (cpu/ref/flash_attn.cpp); head dims up to 256.
//
// Tiled: a work item is a block of up to 16 query rows that share their K and V heads (the GQA
// heads of a group, head-fastest, then token) against the whole KV length, in tiles of 16 keys.
// The block's queries sit transposed in lanes (qt[d] = 16 rows' element d), so every step is
// vertical: per tile the K rows are converted to float once (vcvtph2ps, or d·q for Q8_0 / Q4_0,
// the reference's values) and S^T = K·Q^T is a register-blocked GEMM (16 keys × 16 rows in 16
// accumulators, K elements broadcast); scale, softcap, slope·mask; the online softmax keeps a
// running maximum m and sum l per row lane and rescales the accumulator O^T [Dv][16] by
// e^(m_old - m) when m grows; O^T += V^T·P^T broadcasts V elements against the probability
// lanes. Before the tiles, one pass over each distinct mask row of the block classifies every
// tile: -inf for every row (skipped before any conversion: a causal prompt's upper triangle),
// all zeros (no mask added), or mixed (its mask is transposed into lanes). The sink adds
// e^(sink - m) to l at the end; a row whose scores are all -inf gets zeros.
//
// Work items (batch, row block, head group; head groups fastest so successive items share mask
// rows) come from the pool's chunk counter, heaviest (last) blocks first; each output row is
// computed by one item, so the result does not depend on the thread count. A row's arithmetic
// does not depend on the other rows of its block either (a tile skipped for the block adds exact
// zeros to a row that would not skip it), and the kernel takes every shape, decode steps too
// (lanes left idle there), so logits do not depend on how tokens are split into ubatches.
// Arithmetic is float (the test-ops bound for this op is NMSE 5e-4).
#include "cpu/kernels/avx512_intrinsics.hpp"  // first: <immintrin.h> without g++ 12's false warnings

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "cpu/kernels/flash_attn_layout.hpp"
#include "cpu/kernels/kernel.hpp"
#include "cpu/ref/attention.hpp"
#include "quant/blocks.hpp"

namespace tessel::cpu {
namespace {

constexpr int kLanes = 16;         // query rows per block (one vector of row lanes)
constexpr int64_t kTile = 16;      // keys per tile (one GEMM step; 16 beat 32 on Zen 4: L1 footprint)
constexpr int64_t kMaxDim = 256;   // largest D and Dv (the GEMM's row stride is a template)
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

int64_t round16(int64_t n) { return (n + 15) / 16 * 16; }
__mmask16 first(int64_t n) { return n >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << n) - 1); }
float half_to_float(uint16_t h) { return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h))); }

const uint8_t* at(const Tensor& t, int64_t i1, int64_t i2, int64_t i3) {
    return static_cast<const uint8_t*>(t.data) + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
}

int64_t gcd(int64_t a, int64_t b) {
    while (b != 0) {
        const int64_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

// ---- vector math (as vec_math_avx2.hpp: exp by range reduction and a degree-7 polynomial) ----

/// e^x of 16 floats: 0 below -87.34 (and for -inf), +inf above 88.38; relative error ~1e-7.
__m512 exp16(__m512 x) {
    const __m512 hi = _mm512_set1_ps(88.3762626647949f), lo = _mm512_set1_ps(-87.33654022216797f);
    const __m512 xc = _mm512_max_ps(_mm512_min_ps(x, hi), lo);
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), xc);  // ln2 high part (exact product)
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);       // ln2 low part
    __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    __m512 y = _mm512_scalef_ps(p, n);  // p·2^n
    y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ), _mm512_setzero_ps());
    return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, hi, _CMP_GT_OQ), _mm512_set1_ps(__builtin_inff()));
}

/// tanh of 16 floats: 1 - 2/(e^(2x) + 1) (absolute error < 3e-7).
__m512 tanh16(__m512 x) {
    const __m512 one = _mm512_set1_ps(1.0f);
    return _mm512_sub_ps(one, _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(exp16(_mm512_add_ps(x, x)), one)));
}

/// dst[c·dst_stride + r] = src[r·src_stride + c] for a 16 × 16 block of floats.
void transpose16(const float* src, int64_t src_stride, float* dst, int64_t dst_stride) {
    __m512 t[16], u[16];
    for (int k = 0; k < 8; ++k) {
        const __m512 a = _mm512_loadu_ps(src + 2 * k * src_stride), b = _mm512_loadu_ps(src + (2 * k + 1) * src_stride);
        t[2 * k] = _mm512_unpacklo_ps(a, b);  // per 128-bit lane: a0 b0 a1 b1
        t[2 * k + 1] = _mm512_unpackhi_ps(a, b);
    }
    for (int k = 0; k < 4; ++k) {  // u[4k + c], 128-bit lane L: column c + 4L of rows 4k .. 4k+3
        const __m512d t0 = _mm512_castps_pd(t[4 * k]), t1 = _mm512_castps_pd(t[4 * k + 1]);
        const __m512d t2 = _mm512_castps_pd(t[4 * k + 2]), t3 = _mm512_castps_pd(t[4 * k + 3]);
        u[4 * k] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
        u[4 * k + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
        u[4 * k + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
        u[4 * k + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
    }
    for (int c = 0; c < 4; ++c) {  // a 4 × 4 transpose of 128-bit lanes
        const __m512 v0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x44), v1 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xee);
        const __m512 v2 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x44), v3 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xee);
        _mm512_storeu_ps(dst + c * dst_stride, _mm512_shuffle_f32x4(v0, v2, 0x88));
        _mm512_storeu_ps(dst + (c + 4) * dst_stride, _mm512_shuffle_f32x4(v0, v2, 0xdd));
        _mm512_storeu_ps(dst + (c + 8) * dst_stride, _mm512_shuffle_f32x4(v1, v3, 0x88));
        _mm512_storeu_ps(dst + (c + 12) * dst_stride, _mm512_shuffle_f32x4(v1, v3, 0xdd));
    }
}

// ---- support and scratch ------------------------------------------------------------------------

/// Query heads per group sharing both their K and their V head.
int64_t group_heads(const Tensor& q, const Tensor& k, const Tensor& v) {
    return gcd(q.ne[2] / k.ne[2], q.ne[2] / v.ne[2]);
}

bool fa_supports(const Tensor& dst) { return flash_attn_layout_ok(dst, kMaxDim); }

/// One thread's scratch (floats; D16, V16: D and Dv rounded up to 16): the block's transposed
/// queries qt [D16][16] and accumulators ot [V16][16], scores / probabilities st and mask mt
/// [kTile][16], a row-major staging area [16][max(D16, V16, kTile)] for the transposes, and the
/// K and V tiles [kTile][D16], [kTile][V16]; then one TileMask byte per tile of keys.
struct Scratch {
    float *qt, *ot, *st, *mt, *rows, *ktile, *vtile;
    uint8_t* tiles;

    static int64_t staging(int64_t D16, int64_t V16) { return std::max(std::max(D16, V16), kTile); }
    static size_t bytes(const Tensor& dst) {
        const int64_t D16 = round16(dst.src[0]->ne[0]), V16 = round16(dst.ne[0]);
        const int64_t floats = kLanes * (D16 + V16 + 2 * kTile + staging(D16, V16)) + kTile * (D16 + V16);
        const int64_t tiles = (dst.src[1]->ne[1] + kTile - 1) / kTile;
        return (static_cast<size_t>(floats) * sizeof(float) + static_cast<size_t>(tiles) + 63) / 64 * 64;
    }
    Scratch(void* base, int64_t D16, int64_t V16) {
        qt = static_cast<float*>(base);
        ot = qt + kLanes * D16;
        st = ot + kLanes * V16;
        mt = st + kLanes * kTile;
        rows = mt + kLanes * kTile;
        ktile = rows + kLanes * staging(D16, V16);
        vtile = ktile + kTile * D16;
        tiles = reinterpret_cast<uint8_t*>(vtile + kTile * V16);
    }
};

size_t fa_work_size(const Tensor& dst, int nth) { return static_cast<size_t>(nth) * Scratch::bytes(dst); }

/// Row `src` (t.ne[0] elements of t's type) as floats into out, zeros up to round16(ne[0]);
/// quantized blocks give the reference's values (d·q in float).
void convert_row(const Tensor& t, const uint8_t* src, float* out) {
    const int64_t n = t.ne[0];
    if (t.type == DType::F16) {
        for (int64_t i = 0; i < n; i += 16)
            _mm512_storeu_ps(out + i, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(first(n - i), src + 2 * i)));
    } else if (t.type == DType::F32) {
        for (int64_t i = 0; i < n; i += 16)
            _mm512_storeu_ps(out + i, _mm512_maskz_loadu_ps(first(n - i), reinterpret_cast<const float*>(src) + i));
    } else if (t.type == DType::Q8_0) {
        const auto* blocks = reinterpret_cast<const quant::block_q8_0*>(src);
        for (int64_t b = 0; b < n / quant::QK8_0; ++b) {
            const __m512 d = _mm512_set1_ps(half_to_float(blocks[b].d));
            for (int h = 0; h < 2; ++h) {
                const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blocks[b].qs + 16 * h));
                _mm512_storeu_ps(out + b * quant::QK8_0 + 16 * h, _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q))));
            }
        }
    } else {  // Q4_0: q - 8, low nibbles are elements 0..15 of a block
        const auto* blocks = reinterpret_cast<const quant::block_q4_0*>(src);
        const __m128i low4 = _mm_set1_epi8(0x0f), eight = _mm_set1_epi8(8);
        for (int64_t b = 0; b < n / quant::QK4_0; ++b) {
            const __m512 d = _mm512_set1_ps(half_to_float(blocks[b].d));
            const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blocks[b].qs));
            const __m128i lo = _mm_sub_epi8(_mm_and_si128(packed, low4), eight);
            const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(packed, 4), low4), eight);
            _mm512_storeu_ps(out + b * quant::QK4_0, _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(lo))));
            _mm512_storeu_ps(out + b * quant::QK4_0 + 16, _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(hi))));
        }
    }
}

/// Rows j0 .. j0+n of head (h, b) of t into tile (row stride round16(ne[0])); rows n ..
/// round16(n) are zeros.
void load_tile(const Tensor& t, int64_t h, int64_t b, int64_t j0, int64_t n, float* tile) {
    const int64_t stride = round16(t.ne[0]);
    for (int64_t j = 0; j < n; ++j) convert_row(t, at(t, j0 + j, h, b), tile + j * stride);
    std::fill(tile + n * stride, tile + round16(n) * stride, 0.0f);
}

// ---- the two products ---------------------------------------------------------------------------

/// st[u] = Σ_d kt[u·kStride + d]·qt[d] for the 16 keys u of a K tile step: 16 accumulators,
/// each K element broadcast against the 16 row lanes of qt[d].
template <int kStride>
void scores16(const float* qt, const float* kt, int64_t D, float* st) {
    __m512 acc[16];
#pragma GCC unroll 16
    for (int u = 0; u < 16; ++u) acc[u] = _mm512_setzero_ps();
    for (int64_t d = 0; d < D; ++d) {
        const __m512 q = _mm512_loadu_ps(qt + d * kLanes);
#pragma GCC unroll 16
        for (int u = 0; u < 16; ++u) acc[u] = _mm512_fmadd_ps(_mm512_set1_ps(kt[u * kStride + d]), q, acc[u]);
    }
#pragma GCC unroll 16
    for (int u = 0; u < 16; ++u) _mm512_storeu_ps(st + u * kLanes, acc[u]);
}

template <int... kSteps>
void scores16_by_stride(int64_t D16, const float* qt, const float* kt, int64_t D, float* st,
                        std::integer_sequence<int, kSteps...>) {
    using Fn = void (*)(const float*, const float*, int64_t, float*);
    static constexpr Fn kFns[] = {scores16<16 * (kSteps + 1)>...};
    kFns[D16 / 16 - 1](qt, kt, D, st);
}

/// ot[dv0 + u] = ot[dv0 + u]·alpha + Σ_j vt[j·stride + dv0 + u]·pt[j] for u < NB: the
/// accumulators of NB output columns, each V element broadcast against the probability lanes;
/// keys whose probability is zero in every lane are skipped.
template <int NB>
void accumulate(float* ot, const float* vt, int64_t stride, const float* pt, int64_t nk, __m512 alpha, int64_t dv0) {
    __m512 acc[NB];
    for (int u = 0; u < NB; ++u) acc[u] = _mm512_mul_ps(_mm512_loadu_ps(ot + (dv0 + u) * kLanes), alpha);
    for (int64_t j = 0; j < nk; ++j) {
        const __m512 p = _mm512_loadu_ps(pt + j * kLanes);
        if (_mm512_cmp_ps_mask(p, _mm512_setzero_ps(), _CMP_NEQ_UQ) == 0) continue;
        const float* v = vt + j * stride + dv0;
        for (int u = 0; u < NB; ++u) acc[u] = _mm512_fmadd_ps(_mm512_set1_ps(v[u]), p, acc[u]);
    }
    for (int u = 0; u < NB; ++u) _mm512_storeu_ps(ot + (dv0 + u) * kLanes, acc[u]);
}

// ---- the kernel ---------------------------------------------------------------------------------

/// What a tile's mask asks of a block: bits of whether some entry is not -inf (else the tile is
/// skipped) and whether some entry is not 0 (else the mask is left out).
enum TileMask : uint8_t { kSkip = 0, kLive = 1, kNonZero = 2 };

struct Attention {
    const Tensor &q, &k, &v, *mask, *sinks;
    Tensor& dst;
    float scale, max_bias, softcap;
    int64_t D, Dv, D16, V16, T, H, B, KV, G, blocks;

    explicit Attention(Tensor& d)
        : q(*d.src[0]), k(*d.src[1]), v(*d.src[2]), mask(d.src[3]), sinks(d.src[4]), dst(d),
          scale(d.op_param_f32(0)), max_bias(d.op_param_f32(1)), softcap(d.op_param_f32(2)), D(q.ne[0]), Dv(d.ne[0]),
          D16(round16(D)), V16(round16(Dv)), T(q.ne[1]), H(q.ne[2]), B(q.ne[3]), KV(k.ne[1]), G(group_heads(q, k, v)),
          blocks((G * T + kLanes - 1) / kLanes) {}

    int64_t items() const { return B * (H / G) * blocks; }

    /// The block's rows: lane i is row blk·16 + i of its head group (head-fastest, then token).
    /// Items run head group fastest, so successive items read the same mask rows.
    struct Block {
        int n;  // rows (lanes in use)
        int64_t b, t[kLanes], h[kLanes];
        const uint8_t* mask[kLanes];  // mask row of each lane (nullptr without a mask)
    };

    Block block(int64_t item) const {
        Block blk{};
        const int64_t hg = item % (H / G), r0 = item / (H / G) % blocks * kLanes;
        blk.b = item / (blocks * (H / G));
        blk.n = static_cast<int>(std::min<int64_t>(kLanes, G * T - r0));
        for (int i = 0; i < blk.n; ++i) {
            blk.t[i] = (r0 + i) / G;
            blk.h[i] = hg * G + (r0 + i) % G;
            blk.mask[i] = mask ? at(*mask, blk.t[i], blk.h[i] % mask->ne[2], blk.b % mask->ne[3]) : nullptr;
        }
        return blk;
    }

    /// Mask entries j0 .. j0+n (n ≤ 16) of row p as floats; lanes past n are 0.
    __m512 mask16(const uint8_t* p, int64_t j0, int64_t n) const {
        if (mask->type == DType::F32) return _mm512_maskz_loadu_ps(first(n), reinterpret_cast<const float*>(p) + j0);
        return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(first(n), p + 2 * j0));
    }

    /// w.tiles[c] for every tile c of keys: one pass over each distinct mask row of the block
    /// (GQA heads of one token share it).
    void classify_tiles(const Scratch& w, const Block& blk) const {
        const int64_t tiles = (KV + kTile - 1) / kTile;
        std::fill(w.tiles, w.tiles + tiles, mask ? uint8_t{kSkip} : uint8_t{kLive});
        if (!mask) return;
        const __m512 neg_inf = _mm512_set1_ps(kNegInf);
        for (int i = 0; i < blk.n; ++i) {
            if (i > 0 && blk.mask[i] == blk.mask[i - 1]) continue;
            for (int64_t j = 0; j < KV; j += 16) {
                const int64_t m = std::min<int64_t>(16, KV - j);
                const __m512 x = mask16(blk.mask[i], j, m);
                const __mmask16 valid = first(m);
                uint8_t c = 0;
                if ((_mm512_cmp_ps_mask(x, neg_inf, _CMP_EQ_OQ) & valid) != valid) c |= kLive;
                if ((_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_EQ_OQ) & valid) != valid) c |= kNonZero;
                w.tiles[j / kTile] |= c;
            }
        }
    }

    /// The mask of keys j0 .. j0+n transposed into mt [kTile][16] (-inf in unused lanes).
    void transpose_mask(const Scratch& w, const Block& blk, int64_t j0, int64_t n) const {
        for (int i = 0; i < kLanes; ++i) {
            float* row = w.rows + i * kTile;
            if (i >= blk.n) {
                std::fill(row, row + kTile, kNegInf);
            } else if (i > 0 && blk.mask[i] == blk.mask[i - 1]) {
                std::copy(row - kTile, row, row);
            } else {
                for (int64_t h = 0; h < kTile; h += 16)
                    _mm512_storeu_ps(row + h, mask16(blk.mask[i], j0 + h, std::max<int64_t>(0, std::min<int64_t>(16, n - h))));
            }
        }
        for (int64_t h = 0; h < kTile; h += 16) transpose16(w.rows + h, kTile, w.mt + h * kLanes, kLanes);
    }

    /// The output rows of one work item.
    void run_item(Scratch& w, int64_t item) const {
        const Block blk = block(item);
        const int64_t hk = blk.h[0] / (H / k.ne[2]), bk = blk.b / (B / k.ne[3]);
        const int64_t hv = blk.h[0] / (H / v.ne[2]), bv = blk.b / (B / v.ne[3]);
        alignas(64) float slope[kLanes], sink[kLanes];
        for (int i = 0; i < kLanes; ++i) {
            const bool used = i < blk.n;
            float* row = w.rows + i * D16;
            if (used) std::copy_n(reinterpret_cast<const float*>(at(q, blk.t[i], blk.h[i], blk.b)), D, row);
            std::fill(row + (used ? D : 0), row + D16, 0.0f);
            slope[i] = used ? static_cast<float>(ref::alibi_slope(blk.h[i], H, max_bias)) : 1.0f;
            sink[i] = used && sinks ? *reinterpret_cast<const float*>(static_cast<const uint8_t*>(sinks->data) + blk.h[i] * sinks->nb[0])
                                    : kNegInf;
        }
        for (int64_t c = 0; c < D16; c += 16) transpose16(w.rows + c, D16, w.qt + c * kLanes, kLanes);
        std::fill(w.ot, w.ot + V16 * kLanes, 0.0f);

        const __m512 neg_inf = _mm512_set1_ps(kNegInf), slope_v = _mm512_load_ps(slope), sink_v = _mm512_load_ps(sink);
        __m512 m = sink_v, l = _mm512_setzero_ps();
        classify_tiles(w, blk);
        for (int64_t j0 = 0; j0 < KV; j0 += kTile) {
            const int64_t nk = std::min(kTile, KV - j0);
            const uint8_t tm = w.tiles[j0 / kTile];
            if (!(tm & kLive)) continue;
            const bool apply_mask = tm & kNonZero;
            if (apply_mask) transpose_mask(w, blk, j0, nk);
            load_tile(k, hk, bk, j0, nk, w.ktile);
            for (int64_t s = 0; s < nk; s += 16)
                scores16_by_stride(D16, w.qt, w.ktile + s * D16, D, w.st + s * kLanes,
                                   std::make_integer_sequence<int, kMaxDim / 16>{});
            // scores, the tile's maximum, then probabilities under the new running maximum
            __m512 tmax = neg_inf;
            for (int64_t j = 0; j < nk; ++j) {
                __m512 s = _mm512_mul_ps(_mm512_loadu_ps(w.st + j * kLanes), _mm512_set1_ps(scale));
                if (softcap != 0.0f) {
                    const __m512 cap = _mm512_set1_ps(softcap);
                    s = _mm512_mul_ps(cap, tanh16(_mm512_div_ps(s, cap)));
                }
                if (apply_mask) {
                    const __m512 mj = _mm512_loadu_ps(w.mt + j * kLanes);
                    s = _mm512_mask_mov_ps(_mm512_fmadd_ps(slope_v, mj, s), _mm512_cmp_ps_mask(mj, neg_inf, _CMP_EQ_OQ), neg_inf);
                }
                _mm512_storeu_ps(w.st + j * kLanes, s);
                tmax = _mm512_max_ps(tmax, s);
            }
            const __m512 m_new = _mm512_max_ps(m, tmax);
            const __mmask16 none = _mm512_cmp_ps_mask(m_new, neg_inf, _CMP_EQ_OQ);  // no finite score yet
            const __m512 alpha = _mm512_mask_mov_ps(exp16(_mm512_sub_ps(m, m_new)), none, _mm512_set1_ps(1.0f));
            const __m512 base = _mm512_mask_mov_ps(m_new, none, _mm512_setzero_ps());
            __m512 sum = _mm512_setzero_ps();
            for (int64_t j = 0; j < nk; ++j) {
                const __m512 p = exp16(_mm512_sub_ps(_mm512_loadu_ps(w.st + j * kLanes), base));
                _mm512_storeu_ps(w.st + j * kLanes, p);
                sum = _mm512_add_ps(sum, p);
            }
            l = _mm512_fmadd_ps(l, alpha, sum);
            m = m_new;
            load_tile(v, hv, bv, j0, nk, w.vtile);
            int64_t dv = 0;
            for (; dv + 16 <= Dv; dv += 16) accumulate<16>(w.ot, w.vtile, V16, w.st, nk, alpha, dv);
            if (Dv - dv >= 8) accumulate<8>(w.ot, w.vtile, V16, w.st, nk, alpha, dv), dv += 8;
            if (Dv - dv >= 4) accumulate<4>(w.ot, w.vtile, V16, w.st, nk, alpha, dv), dv += 4;
            if (Dv - dv >= 2) accumulate<2>(w.ot, w.vtile, V16, w.st, nk, alpha, dv), dv += 2;
            if (Dv - dv >= 1) accumulate<1>(w.ot, w.vtile, V16, w.st, nk, alpha, dv);
        }
        finish(w, blk, m, l, sink_v);
    }

    /// out = O / (l + e^(sink - m)) per row lane (zeros for a row with no finite score).
    void finish(Scratch& w, const Block& blk, __m512 m, __m512 l, __m512 sink) const {
        const __mmask16 none = _mm512_cmp_ps_mask(m, _mm512_set1_ps(kNegInf), _CMP_EQ_OQ);
        l = _mm512_add_ps(l, _mm512_mask_mov_ps(exp16(_mm512_sub_ps(sink, m)), none, _mm512_setzero_ps()));
        const __mmask16 positive = _mm512_cmp_ps_mask(l, _mm512_setzero_ps(), _CMP_GT_OQ);
        const __m512 inv = _mm512_maskz_div_ps(positive, _mm512_set1_ps(1.0f), l);
        for (int64_t dv = 0; dv < V16; ++dv)
            _mm512_storeu_ps(w.ot + dv * kLanes, _mm512_mul_ps(_mm512_loadu_ps(w.ot + dv * kLanes), inv));
        for (int64_t c = 0; c < V16; c += 16) transpose16(w.ot + c * kLanes, kLanes, w.rows + c, V16);
        for (int i = 0; i < blk.n; ++i) {
            auto* out = reinterpret_cast<float*>(const_cast<uint8_t*>(at(dst, blk.h[i], blk.t[i], blk.b)));
            for (int64_t d = 0; d < Dv; d += 16) _mm512_mask_storeu_ps(out + d, first(Dv - d), _mm512_loadu_ps(w.rows + i * V16 + d));
        }
    }
};

void fa_run(Tensor& dst, ThreadContext& ctx, void* work) {
    const Attention a(dst);
    Scratch w(static_cast<uint8_t*>(work) + static_cast<size_t>(ctx.ith) * Scratch::bytes(dst), a.D16, a.V16);
    const int64_t n = a.items();
    ctx.for_chunks(n, 1, [&](int64_t begin, int64_t end) {
        for (int64_t c = begin; c < end; ++c) a.run_item(w, n - 1 - c);  // a group's later blocks see more keys
    });
}

constexpr FastKernel kFlashAttn = {"flash_attn_ext_f32_tiled_avx512", has_avx512_tier, fa_supports, fa_work_size, fa_run};

constexpr FastKernel kTable[] = {kFlashAttn};

}  // namespace

constinit const std::span<const FastKernel> kAvx512FlashAttnKernels{kTable};

}  // namespace tessel::cpu

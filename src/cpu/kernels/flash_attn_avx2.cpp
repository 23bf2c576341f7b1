// FLASH_ATTN_EXT with F32 queries and F32 / F16 / Q8_0 / Q4_0 keys and values, AVX2 (compiled with
// -mavx2 -mfma -mf16c; selected only when the usable CPU features include the avx2 tier). Where
// the avx512 tier is usable, the tiled kernel (flash_attn_avx512.cpp) takes the shapes with at
// least 16 query rows per GQA head group and this one runs the rest (decode steps).
// Semantics as the reference (cpu/ref/flash_attn.cpp): scale, logit softcap, F16/F32 mask
// broadcast over heads and batches, ALiBi slopes (cpu/ref's alibi_slope), sinks, grouped-query
// K/V heads; a query whose scores are all -inf gets a zero row.
//
// Query rows are numbered token-fastest (t, then head, then batch) and split into one contiguous
// range per thread. A thread walks its range in groups of up to kQueries consecutive rows that
// share their K and V heads (GQA heads and successive tokens), so each tile of kTile keys is
// converted to float once per group: K and V rows are dequantized into the thread's scratch
// (Q8_0, Q4_0: d·q, exactly the reference's values; F16 by F16C), zero-padded to a multiple of 8,
// or used in place when they are F32 rows of such a length. Per query and tile: scores of 8 keys
// at a time (8 dot products reduced together), scale, softcap (vec_math tanh), slope·mask; keys
// whose 8 mask entries are all -inf are skipped, tiles outside a query's visible range (the span
// of its mask row that is not -inf, found once per query) are not visited, and a tile no query of
// the group needs is never converted. Online softmax: the running maximum m and sum l are updated per tile, the F32
// accumulator of Σ e^(s - m)·v rescaled when m grows; at the end the sink adds e^(sink - m) to l
// (m starts at the sink) and the row is acc / l. Arithmetic is float (the reference's is double;
// the test-ops bound for this op is NMSE 5e-4).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/fp16.hpp"
#include "cpu/kernels/flash_attn_layout.hpp"
#include "cpu/kernels/kernel.hpp"
#include "cpu/kernels/vec_math_avx2.hpp"
#include "cpu/ref/attention.hpp"
#include "quant/blocks.hpp"

namespace tessel::cpu {
namespace {

constexpr int64_t kTile = 32;     // keys per tile (a multiple of 8)
constexpr int64_t kQueries = 16;  // query rows per group
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

int64_t round8(int64_t n) { return (n + 7) / 8 * 8; }

const uint8_t* at(const Tensor& t, int64_t i1, int64_t i2, int64_t i3) {
    return static_cast<const uint8_t*>(t.data) + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
}

bool fa_supports(const Tensor& dst) { return flash_attn_layout_ok(dst, INT64_MAX); }

/// One thread's scratch (floats): kQueries query rows (D8 each), accumulators (Dv8 each) and
/// score rows (kTile each), then a K tile (kTile × D8) and a V tile (kTile × Dv8).
struct Scratch {
    float *q, *acc, *s, *ktile, *vtile;

    static size_t floats(int64_t D8, int64_t Dv8) { return (kQueries + kTile) * (D8 + Dv8) + kQueries * kTile; }
    static size_t bytes(const Tensor& dst) {
        const size_t b = floats(round8(dst.src[0]->ne[0]), round8(dst.ne[0])) * sizeof(float);
        return (b + 63) / 64 * 64;
    }
    Scratch(void* base, int64_t D8, int64_t Dv8) {
        q = static_cast<float*>(base);
        acc = q + kQueries * D8;
        s = acc + kQueries * Dv8;
        ktile = s + kQueries * kTile;
        vtile = ktile + kTile * D8;
    }
};

size_t fa_work_size(const Tensor& dst, int nth) { return static_cast<size_t>(nth) * Scratch::bytes(dst); }

/// n (≤ 8) floats of row p of type t (F32 or F16) from element i into out.
void to_float(DType t, const uint8_t* p, int64_t i, int64_t n, float* out) {
    for (int64_t u = 0; u < n; ++u)
        out[u] = t == DType::F32 ? reinterpret_cast<const float*>(p)[i + u] : fp16_to_fp32(reinterpret_cast<const uint16_t*>(p)[i + u]);
}

/// 16 signed bytes as 16 floats times d, into out.
void store_scaled_i8x16(__m128i q, __m256 d, float* out) {
    _mm256_storeu_ps(out, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q))));
    _mm256_storeu_ps(out + 8, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(q, 8)))));
}

/// Row `src` (t.ne[0] elements of t's type) as `stride` floats (zeros past ne[0]); quantized
/// blocks give the reference's values (d·q in float).
void convert_row(const Tensor& t, const uint8_t* src, int64_t stride, float* out) {
    const int64_t n = t.ne[0];
    int64_t i = 0;
    if (t.type == DType::Q4_0) {  // q - 8, low nibbles are elements 0..15 of a block
        const auto* blocks = reinterpret_cast<const quant::block_q4_0*>(src);
        const __m128i low4 = _mm_set1_epi8(0x0f), eight = _mm_set1_epi8(8);
        for (int64_t b = 0; b < n / quant::QK4_0; ++b, i += quant::QK4_0) {
            const __m256 d = _mm256_set1_ps(fp16_to_fp32(blocks[b].d));
            const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blocks[b].qs));
            store_scaled_i8x16(_mm_sub_epi8(_mm_and_si128(packed, low4), eight), d, out + i);
            store_scaled_i8x16(_mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(packed, 4), low4), eight), d, out + i + 16);
        }
    } else if (t.type == DType::Q8_0) {
        const auto* blocks = reinterpret_cast<const quant::block_q8_0*>(src);
        for (int64_t b = 0; b < n / quant::QK8_0; ++b) {
            const __m256 d = _mm256_set1_ps(fp16_to_fp32(blocks[b].d));
            store_scaled_i8x16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blocks[b].qs)), d, out + i);
            store_scaled_i8x16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blocks[b].qs + 16)), d, out + i + 16);
            i += quant::QK8_0;
        }
    } else if (t.type == DType::F16) {
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i))));
    } else {
        for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, _mm256_loadu_ps(reinterpret_cast<const float*>(src) + i));
    }
    to_float(t.type, src, i, n - i, out + i);
    std::fill(out + n, out + stride, 0.0f);
}

/// Asks the cache for rows j0 .. j0+n of head (h, b) of t: a decode step's K and V rows are cold
/// (the weights streamed through the cache since the last step), and converting them row by row
/// would wait on each miss in turn.
void prefetch_rows(const Tensor& t, int64_t h, int64_t b, int64_t j0, int64_t n) {
    const int64_t row_bytes = static_cast<int64_t>(dtype_row_bytes(t.type, t.ne[0]));
    for (int64_t j = 0; j < n; ++j) {
        const auto* p = reinterpret_cast<const char*>(at(t, j0 + j, h, b));
        for (int64_t o = 0; o < row_bytes; o += 64) _mm_prefetch(p + o, _MM_HINT_T0);
    }
}

/// Rows j0 .. j0+n of head (h, b) of t as float rows of `stride` (a multiple of 8) floats:
/// rows[j] for j < round8(n), rows past n all zeros. F32 rows of exactly `stride` elements are
/// used in place; other rows are converted into `tile`.
void load_tile(const Tensor& t, int64_t h, int64_t b, int64_t j0, int64_t n, int64_t stride, float* tile,
               const float** rows) {
    const bool in_place = t.type == DType::F32 && t.ne[0] == stride;
    if (!in_place) prefetch_rows(t, h, b, j0, n);
    for (int64_t j = 0; j < n; ++j) {
        const uint8_t* src = at(t, j0 + j, h, b);
        if (in_place) {
            rows[j] = reinterpret_cast<const float*>(src);
        } else {
            convert_row(t, src, stride, tile + j * stride);
            rows[j] = tile + j * stride;
        }
    }
    for (int64_t j = n; j < round8(n); ++j) {
        std::fill(tile + j * stride, tile + (j + 1) * stride, 0.0f);
        rows[j] = tile + j * stride;
    }
}

/// The 8 sums of a[0..7] in one vector, in order.
__m256 reduce8(const __m256* a) {
    const __m256 u0 = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
    const __m256 u1 = _mm256_hadd_ps(_mm256_hadd_ps(a[4], a[5]), _mm256_hadd_ps(a[6], a[7]));
    return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
}

/// q · rows[u] for u = 0..7 (n8 floats each, a multiple of 8).
__m256 dot8(const float* q, const float* const* rows, int64_t n8) {
    __m256 a[8];
    for (__m256& x : a) x = _mm256_setzero_ps();
    for (int64_t d = 0; d < n8; d += 8) {
        const __m256 qv = _mm256_loadu_ps(q + d);
        for (int u = 0; u < 8; ++u) a[u] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(rows[u] + d), a[u]);
    }
    return reduce8(a);
}

/// acc[0 .. 8·NV) += Σ_j p[j]·rows[j][d0 ..] over the keys j < n8 whose group of 8 has a weight.
template <int NV>
void accumulate_block(float* acc, const float* p, const float* const* rows, int64_t n8, int64_t d0) {
    __m256 a[NV];
    for (int v = 0; v < NV; ++v) a[v] = _mm256_loadu_ps(acc + 8 * v);
    for (int64_t g = 0; g < n8; g += 8) {
        if (_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(p + g), _mm256_setzero_ps(), _CMP_NEQ_OQ)) == 0) continue;
        for (int64_t j = g; j < g + 8; ++j) {
            const __m256 w = _mm256_set1_ps(p[j]);
            for (int v = 0; v < NV; ++v) a[v] = _mm256_fmadd_ps(w, _mm256_loadu_ps(rows[j] + d0 + 8 * v), a[v]);
        }
    }
    for (int v = 0; v < NV; ++v) _mm256_storeu_ps(acc + 8 * v, a[v]);
}

/// acc[0 .. Dv8) += Σ_j p[j]·rows[j] in blocks of 64 floats: eight independent FMA chains
/// keep both FMA ports busy through the 4-cycle latency.
void accumulate(float* acc, const float* p, const float* const* rows, int64_t n8, int64_t Dv8) {
    int64_t d = 0;
    for (; d + 64 <= Dv8; d += 64) accumulate_block<8>(acc + d, p, rows, n8, d);
    switch ((Dv8 - d) / 8) {
        case 7: accumulate_block<7>(acc + d, p, rows, n8, d); break;
        case 6: accumulate_block<6>(acc + d, p, rows, n8, d); break;
        case 5: accumulate_block<5>(acc + d, p, rows, n8, d); break;
        case 4: accumulate_block<4>(acc + d, p, rows, n8, d); break;
        case 3: accumulate_block<3>(acc + d, p, rows, n8, d); break;
        case 2: accumulate_block<2>(acc + d, p, rows, n8, d); break;
        case 1: accumulate_block<1>(acc + d, p, rows, n8, d); break;
        default: break;
    }
}

/// One query row of a group: where it comes from and its online-softmax state.
/// Whether mask entry j of a row of type t is -inf (the key is hidden).
bool hidden(DType t, const uint8_t* row, int64_t j) {
    if (t == DType::F32) return reinterpret_cast<const float*>(row)[j] == kNegInf;
    return reinterpret_cast<const uint16_t*>(row)[j] == 0xfc00;  // F16 -inf
}

/// [lo, hi): the keys of a mask row outside which every entry is -inf (lo == hi: none visible).
/// Sixteen F16 entries per compare; a row of one sequence among many is mostly -inf on both sides.
void visible_range(DType t, const uint8_t* row, int64_t n, int64_t& lo, int64_t& hi) {
    lo = 0;
    if (t == DType::F16) {
        const __m256i neg_inf = _mm256_set1_epi16(static_cast<short>(0xfc00));
        const auto all_hidden = [&](int64_t j) {
            const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * j));
            return _mm256_movemask_epi8(_mm256_cmpeq_epi16(v, neg_inf)) == -1;
        };
        while (lo + 16 <= n && all_hidden(lo)) lo += 16;
        hi = n;
        while (hi - 16 >= lo && all_hidden(hi - 16)) hi -= 16;
    } else {
        hi = n;
    }
    while (lo < hi && hidden(t, row, lo)) ++lo;
    while (hi > lo && hidden(t, row, hi - 1)) --hi;
}

struct Query {
    int64_t t, h, b;
    const uint8_t* mask;  // mask row, or nullptr
    int64_t lo, hi;       // keys outside [lo, hi) are masked: their tiles are skipped
    float slope, sink;    // sink = -inf without sinks
    __m256 l;             // running sum, in 8 lanes
    float m;              // running maximum
    bool live;            // has weights in the current tile
};

struct Attention {
    const Tensor &q, &k, &v, *mask, *sinks;
    Tensor& dst;
    float scale, softcap;
    int64_t D8, Dv8, T, H, B, KV;

    explicit Attention(Tensor& d)
        : q(*d.src[0]), k(*d.src[1]), v(*d.src[2]), mask(d.src[3]), sinks(d.src[4]), dst(d),
          scale(d.op_param_f32(0)), softcap(d.op_param_f32(2)), D8(round8(q.ne[0])), Dv8(round8(d.ne[0])),
          T(q.ne[1]), H(q.ne[2]), B(q.ne[3]), KV(k.ne[1]) {}

    /// Mask entries of keys j .. j+7 (only `valid` exist: the rest -inf); zeros without a mask.
    __m256 mask8(const Query& qr, int64_t j, int64_t valid) const {
        if (valid == 8 && qr.mask) {
            if (mask->type == DType::F32) return _mm256_loadu_ps(reinterpret_cast<const float*>(qr.mask) + j);
            return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qr.mask + 2 * j)));
        }
        if (valid == 8) return _mm256_setzero_ps();
        alignas(32) float m[8];
        std::fill(m, m + 8, kNegInf);
        if (qr.mask)
            to_float(mask->type, qr.mask, j, valid, m);
        else
            std::fill(m, m + valid, 0.0f);
        return _mm256_load_ps(m);
    }

    /// Scores of query i for keys j0 .. j0+n into s (round8(n) entries, -inf where masked or
    /// past n); converts the K tile on first need. Returns the largest score.
    float scores(Scratch& w, Query& qr, int i, int64_t j0, int64_t n, const float** krows, bool& k_ready) const {
        const __m256 neg_inf = _mm256_set1_ps(kNegInf);
        float* s = w.s + i * kTile;
        __m256 vmax = neg_inf;
        for (int64_t g = 0; g < n; g += 8) {
            const __m256 m = mask8(qr, j0 + g, std::min<int64_t>(8, n - g));
            const __m256 masked = _mm256_cmp_ps(m, neg_inf, _CMP_EQ_OQ);
            if (_mm256_movemask_ps(masked) == 0xff) {
                _mm256_storeu_ps(s + g, neg_inf);
                continue;
            }
            if (!k_ready) {
                prefetch_rows(v, v_head(qr.h), v_batch(qr.b), j0, n);
                load_tile(k, k_head(qr.h), k_batch(qr.b), j0, n, D8, w.ktile, krows);
                k_ready = true;
            }
            __m256 sc = _mm256_mul_ps(dot8(w.q + i * D8, krows + g, D8), _mm256_set1_ps(scale));
            if (softcap != 0.0f) {
                const __m256 cap = _mm256_set1_ps(softcap);
                sc = _mm256_mul_ps(cap, avx2::tanh(_mm256_div_ps(sc, cap)));
            }
            sc = _mm256_blendv_ps(_mm256_fmadd_ps(_mm256_set1_ps(qr.slope), m, sc), neg_inf, masked);
            _mm256_storeu_ps(s + g, sc);
            vmax = _mm256_max_ps(vmax, sc);
        }
        return avx2::hmax(vmax);
    }

    int64_t k_head(int64_t h) const { return h / (H / k.ne[2]); }
    int64_t k_batch(int64_t b) const { return b / (B / k.ne[3]); }
    int64_t v_head(int64_t h) const { return h / (H / v.ne[2]); }
    int64_t v_batch(int64_t b) const { return b / (B / v.ne[3]); }

    Query start(Scratch& w, int i, int64_t r) const {
        Query qr{};
        qr.t = r % T;
        qr.h = r / T % H;
        qr.b = r / (T * H);
        qr.mask = mask ? at(*mask, qr.t, qr.h % mask->ne[2], qr.b % mask->ne[3]) : nullptr;
        qr.lo = 0, qr.hi = KV;
        if (qr.mask) visible_range(mask->type, qr.mask, KV, qr.lo, qr.hi);
        qr.slope = static_cast<float>(ref::alibi_slope(qr.h, H, dst.op_param_f32(1)));
        qr.sink = sinks ? *reinterpret_cast<const float*>(static_cast<const uint8_t*>(sinks->data) + qr.h * sinks->nb[0])
                        : kNegInf;
        qr.m = qr.sink;
        qr.l = _mm256_setzero_ps();
        const auto* src = reinterpret_cast<const float*>(at(q, qr.t, qr.h, qr.b));
        std::copy(src, src + q.ne[0], w.q + i * D8);
        std::fill(w.q + i * D8 + q.ne[0], w.q + (i + 1) * D8, 0.0f);
        std::fill(w.acc + i * Dv8, w.acc + (i + 1) * Dv8, 0.0f);
        return qr;
    }

    /// Computes the output rows of the n query rows r0 .. r0+n (sharing K and V heads).
    void group(Scratch& w, int64_t r0, int n) const {
        Query qs[kQueries];
        for (int i = 0; i < n; ++i) qs[i] = start(w, i, r0 + i);
        const float* krows[kTile];
        const float* vrows[kTile];
        // tiles outside every query's visible keys would only be skipped one by one below
        int64_t lo = KV, hi = 0;
        for (int i = 0; i < n; ++i) lo = std::min(lo, qs[i].lo), hi = std::max(hi, qs[i].hi);
        // the first two tiles of every query's keys, asked for at once (a decode query sees few)
        for (int i = 0; i < n; ++i)
            if (i == 0 || qs[i].lo != qs[i - 1].lo || qs[i].hi != qs[i - 1].hi) {
                prefetch_rows(k, k_head(qs[i].h), k_batch(qs[i].b), qs[i].lo, std::min<int64_t>(qs[i].hi - qs[i].lo, 2 * kTile));
                prefetch_rows(v, v_head(qs[i].h), v_batch(qs[i].b), qs[i].lo, std::min<int64_t>(qs[i].hi - qs[i].lo, 2 * kTile));
            }
        for (int64_t j0 = lo / kTile * kTile; j0 < hi; j0 += kTile) {
            const int64_t nk = std::min(kTile, KV - j0), n8 = round8(nk);
            bool k_ready = false, any_live = false;
            for (int i = 0; i < n; ++i) {
                Query& qr = qs[i];
                if (j0 >= qr.hi || j0 + nk <= qr.lo) {  // every key of the tile masked for this query
                    qr.live = false;
                    continue;
                }
                const float tile_max = scores(w, qr, i, j0, nk, krows, k_ready);
                qr.live = tile_max != kNegInf;
                if (!qr.live) continue;  // every key of the tile masked
                any_live = true;
                const float m_new = std::max(qr.m, tile_max);
                if (m_new > qr.m) {  // rescale what was accumulated under the old maximum
                    const float alpha = std::exp(qr.m - m_new);
                    qr.l = _mm256_mul_ps(qr.l, _mm256_set1_ps(alpha));
                    float* acc = w.acc + i * Dv8;
                    for (int64_t d = 0; d < Dv8; d += 8)
                        _mm256_storeu_ps(acc + d, _mm256_mul_ps(_mm256_loadu_ps(acc + d), _mm256_set1_ps(alpha)));
                    qr.m = m_new;
                }
                float* s = w.s + i * kTile;
                for (int64_t g = 0; g < n8; g += 8) {
                    const __m256 p = avx2::exp(_mm256_sub_ps(_mm256_loadu_ps(s + g), _mm256_set1_ps(qr.m)));
                    _mm256_storeu_ps(s + g, p);
                    qr.l = _mm256_add_ps(qr.l, p);
                }
            }
            if (!any_live) continue;
            load_tile(v, v_head(qs[0].h), v_batch(qs[0].b), j0, nk, Dv8, w.vtile, vrows);
            for (int i = 0; i < n; ++i)
                if (qs[i].live) accumulate(w.acc + i * Dv8, w.s + i * kTile, vrows, n8, Dv8);
        }
        for (int i = 0; i < n; ++i) finish(w, qs[i], i);
    }

    void finish(const Scratch& w, const Query& qr, int i) const {
        auto l = static_cast<float>(avx2::hsum_f64(qr.l));
        if (qr.m != kNegInf && sinks) l += std::exp(qr.sink - qr.m);
        const float inv = l > 0.0f ? 1.0f / l : 0.0f;  // all -inf: zeros
        auto* out = reinterpret_cast<float*>(const_cast<uint8_t*>(at(dst, qr.h, qr.t, qr.b)));
        const float* acc = w.acc + i * Dv8;
        const int64_t Dv = dst.ne[0];
        int64_t d = 0;
        for (; d + 8 <= Dv; d += 8) _mm256_storeu_ps(out + d, _mm256_mul_ps(_mm256_loadu_ps(acc + d), _mm256_set1_ps(inv)));
        for (; d < Dv; ++d) out[d] = acc[d] * inv;
    }

    /// Whether query rows r and r0 use the same K and V heads.
    bool same_kv(int64_t r, int64_t r0) const {
        const int64_t h = r / T % H, b = r / (T * H), h0 = r0 / T % H, b0 = r0 / (T * H);
        return k_head(h) == k_head(h0) && k_batch(b) == k_batch(b0) && v_head(h) == v_head(h0) &&
               v_batch(b) == v_batch(b0);
    }
};

void fa_run(Tensor& dst, ThreadContext& ctx, void* work) {
    const Attention a(dst);
    Scratch w(static_cast<uint8_t*>(work) + static_cast<size_t>(ctx.ith) * Scratch::bytes(dst), a.D8, a.Dv8);
    int64_t begin, end;
    thread_rows(a.T * a.H * a.B, ctx, begin, end);
    for (int64_t r0 = begin; r0 < end;) {
        int n = 1;
        while (n < kQueries && r0 + n < end && a.same_kv(r0 + n, r0)) ++n;
        a.group(w, r0, n);
        r0 += n;
    }
}

constexpr FastKernel kFlashAttn = {"flash_attn_ext_f32_avx2", has_avx2_tier, fa_supports, fa_work_size, fa_run};

constexpr FastKernel kTable[] = {kFlashAttn};

}  // namespace

constinit const std::span<const FastKernel> kAvx2FlashAttnKernels{kTable};

}  // namespace tessel::cpu

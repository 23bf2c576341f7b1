// Reference quantization of the K-quants: the scale search lives in kquant_fit.cpp, this file
// packs its results into the GGUF block layouts (element order as in kquant_dequant.cpp).
// Q8_K follows ggml's quantize_row_q8_K_ref arithmetic exactly.
#include <cmath>
#include <cstring>

#include "core/fp16.hpp"
#include "quant/blocks.hpp"
#include "quant/kquant.hpp"
#include "quant/kquant_fit.hpp"
#include "quant/kquant_layout.hpp"

namespace tessel::quant::kq {
namespace {

// Stage-1 candidate grids (offsets from the top quant level the largest value maps to).
constexpr FitGrid kGridQ2{-0.9f, 0.1f, 19};
constexpr FitGrid kGridQ3{-1.0f, 0.1f, 21};
constexpr FitGrid kGridQ4{-1.0f, 0.1f, 21};
constexpr FitGrid kGridQ5{-1.0f, 0.1f, 21};
constexpr FitGrid kGridQ6{-2.0f, 0.2f, 21};

/// Calls fn(values, block) for each of the n / QK_K blocks and copies each block to dst
/// (dst may be unaligned).
template <typename Block, typename Fn>
void for_each_block(const float* src, void* dst, int64_t n, Fn fn) {
    auto* bytes = static_cast<uint8_t*>(dst);
    for (int64_t i = 0; i < n / QK_K; ++i) {
        Block b{};
        fn(src + i * QK_K, b);
        std::memcpy(bytes + i * static_cast<int64_t>(sizeof(Block)), &b, sizeof(Block));
    }
}

/// Packs 256 2-bit values (0..3) into 64 bytes: element e goes to byte 32*(e/128) + e%32 at
/// bit 2*((e%128)/32).
void pack_2bit(const uint8_t* l, uint8_t* qs) {
    std::memset(qs, 0, QK_K / 4);
    for (int e = 0; e < QK_K; ++e) {
        qs[32 * (e / 128) + e % 32] |= static_cast<uint8_t>((l[e] & 3) << (2 * ((e % 128) / 32)));
    }
}

/// Packs 256 4-bit values (0..15) into 128 bytes: element e goes to byte 32*(e/64) + e%32,
/// low nibble when (e/32) is even.
void pack_4bit(const uint8_t* l, uint8_t* qs) {
    std::memset(qs, 0, QK_K / 2);
    for (int e = 0; e < QK_K; ++e) {
        qs[32 * (e / 64) + e % 32] |= static_cast<uint8_t>((l[e] & 0x0f) << (4 * ((e / 32) % 2)));
    }
}

/// Sets bit e/32 of bits[e%32] for each element whose value has bit `bit` set.
void pack_high_bits(const uint8_t* l, int bit, uint8_t* bits) {
    std::memset(bits, 0, QK_K / 8);
    for (int e = 0; e < QK_K; ++e) {
        bits[e % 32] |= static_cast<uint8_t>(((l[e] >> bit) & 1) << (e / 32));
    }
}

void quantize_block_q2_K(const float* x, block_q2_K& b) {
    AffineBlock a;
    quantize_affine_block(x, 16, 3, 15, kGridQ2, a);
    b.d = a.d;
    b.dmin = a.dmin;
    for (int j = 0; j < QK_K / 16; ++j) b.scales[j] = static_cast<uint8_t>(a.scale[j] | (a.min[j] << 4));
    pack_2bit(a.q, b.qs);
}

void quantize_block_q3_K(const float* x, block_q3_K& b) {
    SymmetricBlock s;
    quantize_symmetric_block(x, 4, -32, 31, kGridQ3, s);
    b.d = s.d;
    pack_scales_q3k(s.scale, b.scales);
    uint8_t l[QK_K];
    for (int e = 0; e < QK_K; ++e) l[e] = static_cast<uint8_t>(s.q[e] + 4);  // 0..7
    pack_2bit(l, b.qs);
    pack_high_bits(l, 2, b.hmask);
}

void quantize_block_q4_K(const float* x, block_q4_K& b) {
    AffineBlock a;
    quantize_affine_block(x, 32, 15, 63, kGridQ4, a);
    b.d = a.d;
    b.dmin = a.dmin;
    pack_scale_min_k4(a.scale, a.min, b.scales);
    pack_4bit(a.q, b.qs);
}

void quantize_block_q5_K(const float* x, block_q5_K& b) {
    AffineBlock a;
    quantize_affine_block(x, 32, 31, 63, kGridQ5, a);
    b.d = a.d;
    b.dmin = a.dmin;
    pack_scale_min_k4(a.scale, a.min, b.scales);
    pack_4bit(a.q, b.qs);
    pack_high_bits(a.q, 4, b.qh);
}

void quantize_block_q6_K(const float* x, block_q6_K& b) {
    SymmetricBlock s;
    quantize_symmetric_block(x, 32, -128, 127, kGridQ6, s);
    b.d = s.d;
    for (int j = 0; j < QK_K / 16; ++j) b.scales[j] = s.scale[j];
    std::memset(b.ql, 0, sizeof b.ql);
    std::memset(b.qh, 0, sizeof b.qh);
    for (int e = 0; e < QK_K; ++e) {
        const int l = s.q[e] + 32;  // 0..63
        const int half = e / 128, g = (e % 128) / 32, k = e % 32;
        b.ql[64 * half + 32 * (g % 2) + k] |= static_cast<uint8_t>((l & 0x0f) << (g < 2 ? 0 : 4));
        b.qh[32 * half + k] |= static_cast<uint8_t>((l >> 4) << (2 * g));
    }
}

/// ggml's Q8_K: the value of largest magnitude m maps to -127 (iscale = -127/m), quants are
/// rounded to nearest (ties to even) and capped at 127, d = 1/iscale, bsums are sums of 16.
/// An all-zero block gets d = 0, zero quants and zero bsums.
void quantize_block_q8_K(const float* x, block_q8_K& b) {
    float amax = 0.0f, max = 0.0f;
    for (int e = 0; e < QK_K; ++e) {
        const float ax = std::fabs(x[e]);
        if (ax > amax) {
            amax = ax;
            max = x[e];
        }
    }
    if (amax == 0.0f) {
        b = block_q8_K{};
        return;
    }
    const float iscale = -127.0f / max;
    for (int e = 0; e < QK_K; ++e) b.qs[e] = static_cast<int8_t>(std::min(127, std::max(-128, round_nearest(iscale * x[e]))));
    for (int j = 0; j < QK_K / 16; ++j) {
        int sum = 0;
        for (int k = 0; k < 16; ++k) sum += b.qs[16 * j + k];
        b.bsums[j] = static_cast<int16_t>(sum);
    }
    b.d = 1.0f / iscale;
}

}  // namespace

void quantize_q2_K(const float* src, void* dst, int64_t n) { for_each_block<block_q2_K>(src, dst, n, quantize_block_q2_K); }
void quantize_q3_K(const float* src, void* dst, int64_t n) { for_each_block<block_q3_K>(src, dst, n, quantize_block_q3_K); }
void quantize_q4_K(const float* src, void* dst, int64_t n) { for_each_block<block_q4_K>(src, dst, n, quantize_block_q4_K); }
void quantize_q5_K(const float* src, void* dst, int64_t n) { for_each_block<block_q5_K>(src, dst, n, quantize_block_q5_K); }
void quantize_q6_K(const float* src, void* dst, int64_t n) { for_each_block<block_q6_K>(src, dst, n, quantize_block_q6_K); }
void quantize_q8_K(const float* src, void* dst, int64_t n) { for_each_block<block_q8_K>(src, dst, n, quantize_block_q8_K); }

}  // namespace tessel::quant::kq

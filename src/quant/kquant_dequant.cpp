// Reference dequantization of the K-quants, bit-exact with ggml's dequantize_row_q*_K.
//
// Element order inside a super-block (facts of the format, ggml-quants.c):
//  - 2-bit quants (Q2_K, and Q3_K's low bits): element e sits in byte 32*(e/128) + e%32 of qs,
//    at bit 2*((e%128)/32).
//  - Q3_K high bit: bit e/32 of hmask[e%32]; when it is clear the quant is lowered by 4.
//  - 4-bit quants (Q4_K, Q5_K's low bits): byte 32*(e/64) + e%32 of qs, low nibble for
//    (e/32) even, high nibble for odd. Q5_K's 5th bit: bit e/32 of qh[e%32].
//  - Q6_K: low 4 bits in ql[64*(e/128) + 32*(g%2) + e%32] (low nibble for g < 2, high for
//    g >= 2, where g = (e%128)/32); top 2 bits at bit 2*g of qh[32*(e/128) + e%32]; minus 32.
// Sub-blocks are consecutive runs of 16 (Q2_K, Q3_K, Q6_K) or 32 (Q4_K, Q5_K) elements.
#include <cstring>

#include "core/fp16.hpp"
#include "quant/blocks.hpp"
#include "quant/kquant.hpp"
#include "quant/kquant_layout.hpp"

namespace tessel::quant::kq {
namespace {

/// Calls fn(block, out) for each of the n / QK_K blocks at src (copied out, so src may be
/// unaligned), with out = dst + QK_K * block index.
template <typename Block, typename Fn>
void for_each_block(const void* src, float* dst, int64_t n, Fn fn) {
    for (int64_t i = 0; i < n / QK_K; ++i) fn(load_block<Block>(src, i), dst + i * QK_K);
}

/// 2-bit quant of element e (0..255) in a 64-byte qs array.
inline int q2_at(const uint8_t* qs, int e) {
    return (qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
}

/// 4-bit quant of element e (0..255) in a 128-byte qs array.
inline int q4_at(const uint8_t* qs, int e) {
    return (qs[32 * (e / 64) + e % 32] >> (4 * ((e / 32) % 2))) & 0x0f;
}

/// Bit e/32 of byte e%32: the hmask of Q3_K and the qh of Q5_K.
inline int high_bit_at(const uint8_t* bits, int e) { return (bits[e % 32] >> (e / 32)) & 1; }

/// Q6_K quant of element e, -32..31.
inline int q6_at(const block_q6_K& b, int e) {
    const int half = e / 128, g = (e % 128) / 32, l = e % 32;
    const uint8_t low_byte = b.ql[64 * half + 32 * (g % 2) + l];
    const int low = g < 2 ? (low_byte & 0x0f) : (low_byte >> 4);
    const int high = (b.qh[32 * half + l] >> (2 * g)) & 3;
    return (low | (high << 4)) - 32;
}

void dequant_block_q2_K(const block_q2_K& b, float* y) {
    const float d = fp16_to_fp32(b.d);
    const float dmin = fp16_to_fp32(b.dmin);
    for (int sub = 0; sub < QK_K / 16; ++sub) {
        const float dl = d * static_cast<float>(b.scales[sub] & 0x0f);
        const float ml = dmin * static_cast<float>(b.scales[sub] >> 4);
        for (int e = 16 * sub; e < 16 * sub + 16; ++e) y[e] = dl * static_cast<float>(q2_at(b.qs, e)) - ml;
    }
}

void dequant_block_q3_K(const block_q3_K& b, float* y) {
    const float d = fp16_to_fp32(b.d);
    for (int sub = 0; sub < QK_K / 16; ++sub) {
        const float dl = d * static_cast<float>(unpack_scale_q3k(b.scales, sub));
        for (int e = 16 * sub; e < 16 * sub + 16; ++e) {
            const int q = q2_at(b.qs, e) - (high_bit_at(b.hmask, e) ? 0 : 4);
            y[e] = dl * static_cast<float>(q);
        }
    }
}

void dequant_block_q4_K(const block_q4_K& b, float* y) {
    const float d = fp16_to_fp32(b.d);
    const float dmin = fp16_to_fp32(b.dmin);
    for (int sub = 0; sub < QK_K / 32; ++sub) {
        uint8_t sc, m;
        unpack_scale_min_k4(b.scales, sub, sc, m);
        const float dl = d * static_cast<float>(sc);
        const float ml = dmin * static_cast<float>(m);
        for (int e = 32 * sub; e < 32 * sub + 32; ++e) y[e] = dl * static_cast<float>(q4_at(b.qs, e)) - ml;
    }
}

void dequant_block_q5_K(const block_q5_K& b, float* y) {
    const float d = fp16_to_fp32(b.d);
    const float dmin = fp16_to_fp32(b.dmin);
    for (int sub = 0; sub < QK_K / 32; ++sub) {
        uint8_t sc, m;
        unpack_scale_min_k4(b.scales, sub, sc, m);
        const float dl = d * static_cast<float>(sc);
        const float ml = dmin * static_cast<float>(m);
        for (int e = 32 * sub; e < 32 * sub + 32; ++e) {
            const int q = q4_at(b.qs, e) + 16 * high_bit_at(b.qh, e);
            y[e] = dl * static_cast<float>(q) - ml;
        }
    }
}

void dequant_block_q6_K(const block_q6_K& b, float* y) {
    const float d = fp16_to_fp32(b.d);
    for (int sub = 0; sub < QK_K / 16; ++sub) {
        const float dl = d * static_cast<float>(b.scales[sub]);
        for (int e = 16 * sub; e < 16 * sub + 16; ++e) y[e] = dl * static_cast<float>(q6_at(b, e));
    }
}

void dequant_block_q8_K(const block_q8_K& b, float* y) {
    for (int e = 0; e < QK_K; ++e) y[e] = b.d * static_cast<float>(b.qs[e]);
}

}  // namespace

void dequantize_q2_K(const void* src, float* dst, int64_t n) { for_each_block<block_q2_K>(src, dst, n, dequant_block_q2_K); }
void dequantize_q3_K(const void* src, float* dst, int64_t n) { for_each_block<block_q3_K>(src, dst, n, dequant_block_q3_K); }
void dequantize_q4_K(const void* src, float* dst, int64_t n) { for_each_block<block_q4_K>(src, dst, n, dequant_block_q4_K); }
void dequantize_q5_K(const void* src, float* dst, int64_t n) { for_each_block<block_q5_K>(src, dst, n, dequant_block_q5_K); }
void dequantize_q6_K(const void* src, float* dst, int64_t n) { for_each_block<block_q6_K>(src, dst, n, dequant_block_q6_K); }
void dequantize_q8_K(const void* src, float* dst, int64_t n) { for_each_block<block_q8_K>(src, dst, n, dequant_block_q8_K); }

}  // namespace tessel::quant::kq

// Reference quantize/dequantize: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1.
//
// Block layouts are ggml's (ggml-common.h, see blocks.hpp). The quantizers reproduce the
// arithmetic of ggml's reference quantizers (ggml-quants.c, quantize_row_<type>_ref, which is
// what ggml_quantize_chunk runs without an importance matrix), so their output is bit-exact
// with files written by llama.cpp:
//   - symmetric types (Q4_0, Q5_0) take the element of largest magnitude, with its sign, as
//     -nmax * d; the quant is trunc(x/d + nmax + 0.5) clamped to the top code;
//   - min/max types (Q4_1, Q5_1) take d = (max - min) / (2^bits - 1), m = min and
//     q = trunc((x - min)/d + 0.5);
//   - Q8_0/Q8_1 take d = amax / 127 and q = round-half-away(x/d); Q8_1 adds s = d * sum(q).
// The inverse scale is 1/d computed from the float d (not the fp16 one); fp16 fields are
// rounded to nearest even. Dequantization evaluates the format's formula in float as ggml
// does: x = q*d (+ m), a product then a separate sum.
//
// Rows are read and written block by block through memcpy, so `src`/`dst` need no alignment.
#include <cfloat>
#include <cmath>
#include <cstring>

#include "core/fp16.hpp"
#include "quant/blocks.hpp"
#include "quant/quant.hpp"

namespace tessel::quant {
namespace {

/// C's float-to-integer conversion (truncation toward zero). A NaN or out-of-range value
/// gives 0, which is what ggml's `(int8_t)` / `(uint8_t)` casts produce on x86; finite blocks
/// never reach that case.
int truncate_to_int(float v) {
    if (!(v > -2147483648.0f && v < 2147483648.0f)) return 0;
    return static_cast<int>(v);
}

/// Element j (0..31) of a 32-element block whose 4 low bits sit in nibbles: low nibbles of
/// qs[0..15] hold elements 0..15, high nibbles hold elements 16..31 (ggml's split-half order).
int low_nibble_of(const uint8_t* qs, int j) { return j < 16 ? (qs[j] & 0x0f) : (qs[j - 16] >> 4); }

/// Bit j (0..31) of a 4-byte little-endian bit field (the qh 5th-bit plane of Q5_0/Q5_1).
int bit_of(const uint8_t* qh, int j) { return (qh[j / 8] >> (j % 8)) & 1; }

/// Packs 32 codes (each < 16 after masking) into split-half nibbles.
void pack_nibbles(const uint8_t* codes, uint8_t* qs) {
    for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>((codes[j] & 0x0f) | ((codes[j + 16] & 0x0f) << 4));
}

/// Packs bit 4 of each of 32 codes into a 4-byte little-endian bit field.
void pack_high_bits(const uint8_t* codes, uint8_t* qh) {
    std::memset(qh, 0, 4);
    for (int j = 0; j < 32; ++j) qh[j / 8] |= static_cast<uint8_t>(((codes[j] >> 4) & 1) << (j % 8));
}

/// The element of largest magnitude, with its sign (the first such one; NaNs are skipped).
float signed_absmax(const float* x, int n) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; ++j) {
        if (amax < std::fabs(x[j])) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    }
    return max;
}

/// Largest magnitude, as ggml's Q8 quantizers fold it: amax = amax > |v| ? amax : |v|.
float q8_absmax(const float* x, int n) {
    float amax = 0.0f;
    for (int j = 0; j < n; ++j) {
        const float a = std::fabs(x[j]);
        amax = amax > a ? amax : a;
    }
    return amax;
}

struct MinMax { float min; float max; };

/// Smallest and largest element (NaNs skipped; FLT_MAX / -FLT_MAX when there is none).
MinMax min_max(const float* x, int n) {
    MinMax r{FLT_MAX, -FLT_MAX};
    for (int j = 0; j < n; ++j) {
        if (x[j] < r.min) r.min = x[j];
        if (x[j] > r.max) r.max = x[j];
    }
    return r;
}

float inverse_or_zero(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }

/// Codes of a symmetric block: q = min(top, trunc(x*id + offset + 0.5)), as 8-bit values.
void symmetric_codes(const float* x, float id, int offset, int top, uint8_t* codes) {
    const float bias = static_cast<float>(offset) + 0.5f;
    for (int j = 0; j < 32; ++j) {
        const int q = static_cast<int8_t>(truncate_to_int(x[j] * id + bias));
        codes[j] = static_cast<uint8_t>(q < top ? q : top);
    }
}

// ---------------------------------------------------------------- Q4_0 / Q5_0 (symmetric)

/// Q4_0 block: d = max / -8 (max = signed element of largest magnitude), q = clamp to 15 of
/// trunc(x/d + 8.5). Source: ggml-quants.c quantize_row_q4_0_ref.
block_q4_0 quantize_block_q4_0(const float* x) {
    const float d = signed_absmax(x, 32) / -8.0f;
    uint8_t codes[32];
    symmetric_codes(x, inverse_or_zero(d), 8, 15, codes);
    block_q4_0 b;
    b.d = fp32_to_fp16(d);
    pack_nibbles(codes, b.qs);
    return b;
}

/// Q5_0 block: d = max / -16, q = clamp to 31 of trunc(x/d + 16.5). Source: quantize_row_q5_0_ref.
block_q5_0 quantize_block_q5_0(const float* x) {
    const float d = signed_absmax(x, 32) / -16.0f;
    uint8_t codes[32];
    symmetric_codes(x, inverse_or_zero(d), 16, 31, codes);
    block_q5_0 b;
    b.d = fp32_to_fp16(d);
    pack_nibbles(codes, b.qs);
    pack_high_bits(codes, b.qh);
    return b;
}

// ---------------------------------------------------------------- Q4_1 / Q5_1 (min + scale)

/// Q4_1 block: d = (max - min) / 15, m = min, q = clamp to 15 of trunc((x - min)/d + 0.5).
/// Source: quantize_row_q4_1_ref.
block_q4_1 quantize_block_q4_1(const float* x) {
    const MinMax r = min_max(x, 32);
    const float d = (r.max - r.min) / 15.0f;
    const float id = inverse_or_zero(d);
    uint8_t codes[32];
    for (int j = 0; j < 32; ++j) {
        const int q = static_cast<int8_t>(truncate_to_int((x[j] - r.min) * id + 0.5f));
        codes[j] = static_cast<uint8_t>(q < 15 ? q : 15);
    }
    block_q4_1 b;
    b.d = fp32_to_fp16(d);
    b.m = fp32_to_fp16(r.min);
    pack_nibbles(codes, b.qs);
    return b;
}

/// Q5_1 block: d = (max - min) / 31, m = min, q = trunc((x - min)/d + 0.5) (no clamp: the
/// largest element gives 31). Source: quantize_row_q5_1_ref.
block_q5_1 quantize_block_q5_1(const float* x) {
    const MinMax r = min_max(x, 32);
    const float d = (r.max - r.min) / 31.0f;
    const float id = inverse_or_zero(d);
    uint8_t codes[32];
    for (int j = 0; j < 32; ++j) codes[j] = static_cast<uint8_t>(truncate_to_int((x[j] - r.min) * id + 0.5f));
    block_q5_1 b;
    b.d = fp32_to_fp16(d);
    b.m = fp32_to_fp16(r.min);
    pack_nibbles(codes, b.qs);
    pack_high_bits(codes, b.qh);
    return b;
}

// ---------------------------------------------------------------- Q8_0 / Q8_1

/// q = round-half-away-from-zero(x * id) as int8.
int8_t round_to_q8(float v) { return static_cast<int8_t>(truncate_to_int(std::round(v))); }

/// Q8_0 block: d = amax / 127, q = round(x/d). Source: quantize_row_q8_0_ref.
block_q8_0 quantize_block_q8_0(const float* x) {
    const float d = q8_absmax(x, 32) / 127.0f;
    const float id = inverse_or_zero(d);
    block_q8_0 b;
    b.d = fp32_to_fp16(d);
    for (int j = 0; j < 32; ++j) b.qs[j] = round_to_q8(x[j] * id);
    return b;
}

/// Q8_1 block: as Q8_0 plus s = fp16(float(sum of q) * d) with the float d.
/// Source: quantize_row_q8_1_ref.
block_q8_1 quantize_block_q8_1(const float* x) {
    const float d = q8_absmax(x, 32) / 127.0f;
    const float id = inverse_or_zero(d);
    block_q8_1 b;
    b.d = fp32_to_fp16(d);
    int sum = 0;
    for (int j = 0; j < 32; ++j) {
        b.qs[j] = round_to_q8(x[j] * id);
        sum += b.qs[j];
    }
    b.s = fp32_to_fp16(static_cast<float>(sum) * d);
    return b;
}

// ---------------------------------------------------------------- dequantization

/// Writes q*d (+ m) for 32 integer codes. The product and the sum are separate statements so
/// that no compiler fuses them into an FMA (tessel builds in ISO mode, where g++ does not
/// contract across statements and clang contracts only within one): ggml's reference rounds
/// the product, then the sum.
void scale_codes(const int* q, float d, float m, bool has_min, float* y) {
    for (int j = 0; j < 32; ++j) {
        const float product = static_cast<float>(q[j]) * d;
        y[j] = product;
        if (has_min) y[j] += m;
    }
}

void dequant_q4_0(const void* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n / 32; ++i) {
        const auto b = load_block<block_q4_0>(src, i);
        int q[32];
        for (int j = 0; j < 32; ++j) q[j] = low_nibble_of(b.qs, j) - 8;
        scale_codes(q, fp16_to_fp32(b.d), 0.0f, false, dst + i * 32);
    }
}

void dequant_q4_1(const void* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n / 32; ++i) {
        const auto b = load_block<block_q4_1>(src, i);
        int q[32];
        for (int j = 0; j < 32; ++j) q[j] = low_nibble_of(b.qs, j);
        scale_codes(q, fp16_to_fp32(b.d), fp16_to_fp32(b.m), true, dst + i * 32);
    }
}

void dequant_q5_0(const void* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n / 32; ++i) {
        const auto b = load_block<block_q5_0>(src, i);
        int q[32];
        for (int j = 0; j < 32; ++j) q[j] = (low_nibble_of(b.qs, j) | (bit_of(b.qh, j) << 4)) - 16;
        scale_codes(q, fp16_to_fp32(b.d), 0.0f, false, dst + i * 32);
    }
}

void dequant_q5_1(const void* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n / 32; ++i) {
        const auto b = load_block<block_q5_1>(src, i);
        int q[32];
        for (int j = 0; j < 32; ++j) q[j] = low_nibble_of(b.qs, j) | (bit_of(b.qh, j) << 4);
        scale_codes(q, fp16_to_fp32(b.d), fp16_to_fp32(b.m), true, dst + i * 32);
    }
}

template <typename B>
void dequant_q8(const void* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n / 32; ++i) {
        const auto b = load_block<B>(src, i);
        int q[32];
        for (int j = 0; j < 32; ++j) q[j] = b.qs[j];
        scale_codes(q, fp16_to_fp32(b.d), 0.0f, false, dst + i * 32);
    }
}

/// Row quantizer over blocks of 32 from a block quantizer.
template <typename B, B (*QuantizeBlock)(const float*)>
void quantize_rows(const float* src, void* dst, int64_t n) {
    for (int64_t i = 0; i < n / 32; ++i) store_block(dst, i, QuantizeBlock(src + i * 32));
}

}  // namespace

void register_legacy(Kernels& k) {
    k.set(DType::Q4_0, dequant_q4_0, quantize_rows<block_q4_0, quantize_block_q4_0>);
    k.set(DType::Q4_1, dequant_q4_1, quantize_rows<block_q4_1, quantize_block_q4_1>);
    k.set(DType::Q5_0, dequant_q5_0, quantize_rows<block_q5_0, quantize_block_q5_0>);
    k.set(DType::Q5_1, dequant_q5_1, quantize_rows<block_q5_1, quantize_block_q5_1>);
    k.set(DType::Q8_0, dequant_q8<block_q8_0>, quantize_rows<block_q8_0, quantize_block_q8_0>);
    k.set(DType::Q8_1, dequant_q8<block_q8_1>, quantize_rows<block_q8_1, quantize_block_q8_1>);
}

}  // namespace tessel::quant

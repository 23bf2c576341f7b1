// Reference quantize/dequantize: IQ4_NL, IQ4_XS, MXFP4.
//
// Dequantization is bit-exact with ggml (ggml-quants.c dequantize_row_iq4_nl / _iq4_xs /
// _mxfp4): IQ4_NL x = d * v[q]; IQ4_XS x = (d * (ls - 32)) * v[q] with the sub-block scale
// product rounded to float first; MXFP4 x = v2[q] * 2^(e-128), where v2 = kValuesMXFP4x2
// holds the E2M1 values times 2. MXFP4 quantization is bit-exact with ggml's
// quantize_row_mxfp4_ref; IQ4_NL / IQ4_XS quantization is tessel's own search
// (quant_nonlinear_iq4.cpp).
//
// Rows are read and written block by block through memcpy, so `src`/`dst` need no alignment.
#include <cmath>
#include <cstring>

#include "core/fp16.hpp"
#include "quant/blocks.hpp"
#include "quant/quant.hpp"
#include "quant/quant_nonlinear.hpp"

namespace tessel::quant {
namespace {

/// Writes table[q] * d for the 32 split-half nibbles qs (low nibbles are elements 0..15,
/// high nibbles 16..31).
void scale_nibbles(const uint8_t* qs, const int8_t* table, float d, float* y) {
    for (int j = 0; j < 16; ++j) {
        y[j] = static_cast<float>(table[qs[j] & 0x0f]) * d;
        y[j + 16] = static_cast<float>(table[qs[j] >> 4]) * d;
    }
}

void dequant_iq4_nl(const void* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n / QK4_NL; ++i) {
        const auto b = load_block<block_iq4_nl>(src, i);
        scale_nibbles(b.qs, kValuesIQ4NL, fp16_to_fp32(b.d), dst + i * QK4_NL);
    }
}

/// 6-bit biased scale (0..63) of sub-block ib of an IQ4_XS super-block.
int iq4_xs_biased_scale(const block_iq4_xs& b, int ib) {
    const int low = (b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0f;
    const int high = (b.scales_h >> (2 * ib)) & 0x03;
    return low | (high << 4);
}

void dequant_iq4_xs(const void* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const auto b = load_block<block_iq4_xs>(src, i);
        const float d = fp16_to_fp32(b.d);
        for (int ib = 0; ib < QK_K / 32; ++ib) {
            const float dl = d * static_cast<float>(iq4_xs_biased_scale(b, ib) - 32);
            scale_nibbles(b.qs + ib * 16, kValuesIQ4NL, dl, dst + i * QK_K + ib * 32);
        }
    }
}

void dequant_mxfp4(const void* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n / QK_MXFP4; ++i) {
        const auto b = load_block<block_mxfp4>(src, i);
        scale_nibbles(b.qs, kValuesMXFP4x2, e8m0_to_fp32_half(b.e), dst + i * QK_MXFP4);
    }
}

/// MXFP4 block, bit-exact with ggml's quantize_row_mxfp4_ref: e from the largest magnitude
/// (mxfp4_exponent), each element the nearest code under the halved scale 2^(e-128).
block_mxfp4 quantize_block_mxfp4(const float* x) {
    float amax = 0.0f;
    for (int j = 0; j < QK_MXFP4; ++j) {
        if (amax < std::fabs(x[j])) amax = std::fabs(x[j]);
    }
    block_mxfp4 b;
    b.e = mxfp4_exponent(amax);
    const float d = e8m0_to_fp32_half(b.e);
    for (int j = 0; j < QK_MXFP4 / 2; ++j) {
        const int lo = mxfp4_best_index(x[j], d);
        const int hi = mxfp4_best_index(x[j + QK_MXFP4 / 2], d);
        b.qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
    return b;
}

void quant_mxfp4(const float* src, void* dst, int64_t n) {
    for (int64_t i = 0; i < n / QK_MXFP4; ++i) store_block(dst, i, quantize_block_mxfp4(src + i * QK_MXFP4));
}

void quant_iq4_nl(const float* src, void* dst, int64_t n) {
    for (int64_t i = 0; i < n / QK4_NL; ++i) store_block(dst, i, quantize_block_iq4_nl(src + i * QK4_NL));
}

void quant_iq4_xs(const float* src, void* dst, int64_t n) {
    for (int64_t i = 0; i < n / QK_K; ++i) store_block(dst, i, quantize_block_iq4_xs(src + i * QK_K));
}

}  // namespace

uint8_t mxfp4_exponent(float amax) {
    if (!(amax > 0.0f)) return 0;
    // ggml evaluates floor(log2(amax)) - 2 + 127 in float and casts it to uint8_t.
    const float e = std::floor(std::log2(amax)) - 2.0f + 127.0f;
    if (!(e >= 0.0f)) return 0;
    if (!(e <= 254.0f)) return 254;
    return static_cast<uint8_t>(e);
}

int mxfp4_best_index(float x, float d) {
    int best = 0;
    float best_err = std::fabs(static_cast<float>(kValuesMXFP4x2[0]) * d - x);
    for (int i = 1; i < 16; ++i) {
        const float err = std::fabs(static_cast<float>(kValuesMXFP4x2[i]) * d - x);
        if (err < best_err) {
            best = i;
            best_err = err;
        }
    }
    return best;
}

void register_nonlinear(Kernels& k) {
    k.set(DType::IQ4_NL, dequant_iq4_nl, quant_iq4_nl);
    k.set(DType::IQ4_XS, dequant_iq4_xs, quant_iq4_xs);
    k.set(DType::MXFP4, dequant_mxfp4, quant_mxfp4);
}

}  // namespace tessel::quant

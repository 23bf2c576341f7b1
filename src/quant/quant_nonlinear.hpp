// Non-linear 4-bit block formats (IQ4_NL, IQ4_XS, MXFP4): scale conversions and block
// quantizers shared by the reference row functions (quant_nonlinear.cpp) and by fast kernels
// that need the same scalar definitions.
#pragma once

#include <cstdint>
#include <cstring>

#include "quant/blocks.hpp"

namespace tessel::quant {

/// MXFP4 scale for kValuesMXFP4x2: the E8M0 exponent e means 2^(e-127); the table holds
/// values times 2, so this returns 2^(e-128). e = 0 and 1 give the subnormals 2^-128 and
/// 2^-127; e = 255 (NaN in OCP MX) gives 2^127, as ggml does (ggml-impl.h
/// ggml_e8m0_to_fp32_half). Exact for every e.
inline float e8m0_to_fp32_half(uint8_t e) {
    const uint32_t bits = e < 2 ? (0x00200000u << e) : (static_cast<uint32_t>(e - 1) << 23);
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

/// E8M0 exponent ggml's MXFP4 quantizer picks for a block whose largest magnitude is amax:
/// floor(log2(amax)) - 2 + 127, so that amax / 2^(e-127) lies in [4, 8) (ggml-quants.c
/// quantize_row_mxfp4_ref). amax = 0 gives 0. Where ggml's cast is undefined — amax below
/// 2^-125 or infinite — tessel clamps to 0 or 254.
uint8_t mxfp4_exponent(float amax);

/// Index (0..15) of the MXFP4 code whose value kValuesMXFP4x2[i] * d is nearest to x; the
/// first one on ties (scan in code order, as ggml's best_index_mxfp4). A NaN x gives 0.
int mxfp4_best_index(float x, float d);

/// Index (0..15) of the kValuesIQ4NL entry nearest to t (the table is ascending). Any t,
/// including NaN, gives an index in range.
int iq4nl_nearest_index(float t);

/// Quantize 32 floats to one IQ4_NL block (x = d * kValuesIQ4NL[q], d fp16). tessel's own
/// search: candidate scales that map the block's extreme element onto or near either end of
/// the codebook, each refined by least squares and re-assignment, judged by the squared
/// error of the final fp16 scale. NaN/Inf elements are treated as 0. Never throws.
block_iq4_nl quantize_block_iq4_nl(const float* x);

/// Quantize 256 floats to one IQ4_XS super-block: 8 sub-blocks of 32, each with a 6-bit
/// signed scale l in [-32, 31] times the fp16 super-block scale d (x = d*l*kValuesIQ4NL[q]).
/// Sub-block scales come from the IQ4_NL search; d is chosen among candidates by the total
/// squared error after rounding every sub-block scale to 6 bits. NaN/Inf elements are treated
/// as 0. Never throws.
block_iq4_xs quantize_block_iq4_xs(const float* x);

}  // namespace tessel::quant

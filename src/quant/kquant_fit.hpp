// Scale search for tessel's K-quant quantizers (Q2_K..Q6_K).
//
// Two stages, both minimising the plain squared error sum((x - dequant(x))^2):
//  1. Sub-block fit: for a run of 16 or 32 values, try a grid of candidate scales, round the
//     values with each, solve the least-squares scale (and min) for those quants, then refine
//     by re-rounding with the fitted parameters until the error stops falling.
//  2. Super-block: the fp16 super-block scale(s) d (and d_min) are chosen so the largest
//     sub-block scale uses the top integer level; each sub-block's integer scale (and min) is
//     searched among the neighbours of its rounded ideal value, re-quantizing the elements
//     with the exact dequantized step each time. d (and d_min) are then refitted by least
//     squares for the chosen integers and rounded to fp16 again; the best pass wins. When the
//     ideal d is a tiny fp16 subnormal (under 64 steps of 2^-24, so only a few significant
//     bits), a few neighbouring subnormals are tried as starting points too.
// Measured on N(0,1) rows the RMSE is 2-12% below llama.cpp's reference quantizers
// (tests/unit/quant_kquants_test.cpp); speed is roughly 100-160 ns per value on one core.
// All arithmetic is deterministic (no data-dependent iteration order, no threads).
#pragma once

#include <cstdint>

#include "quant/blocks.hpp"

namespace tessel::quant::kq {

/// Candidate grid of stage 1: the largest value is mapped to quant level
/// top + first + k*step for k = 0..count-1, where top is the type's largest level.
struct FitGrid {
    float first;
    float step;
    int count;
};

/// Affine fit of one sub-block: x ~= scale * q - min, q in 0..nmax.
struct AffineFit {
    float scale = 0.0f;  ///< >= 0
    float min = 0.0f;    ///< >= 0 (the format stores it unsigned and subtracts it)
};

/// Stage 1 for affine types. x: n values (n <= 32); nmax: largest quant (3, 15 or 31).
/// A block whose values are all equal and <= 0 gets scale 0 and min = -value.
AffineFit fit_affine(const float* x, int n, int nmax, const FitGrid& grid);

/// Stage 1 for symmetric types: x ~= scale * q, q in -nneg..nneg-1 (nneg = 4 or 32).
/// Returns the signed least-squares scale; 0 when every |x| < 1e-15.
float fit_symmetric(const float* x, int n, int nneg, const FitGrid& grid);

/// Output of stage 2 for Q2_K (16 sub-blocks of 16, 4-bit scales/mins) and Q4_K / Q5_K
/// (8 sub-blocks of 32, 6-bit scales/mins). Dequant: fp16(d)*scale[j]*q - fp16(dmin)*min[j].
struct AffineBlock {
    uint16_t d = 0;           ///< fp16 bits
    uint16_t dmin = 0;        ///< fp16 bits
    uint8_t scale[16] = {};   ///< 0..lmax per sub-block
    uint8_t min[16] = {};     ///< 0..lmax per sub-block
    uint8_t q[QK_K] = {};     ///< 0..nmax per element
};

/// Quantize QK_K values x into an AffineBlock: sub-blocks of sub_len (16 or 32), element
/// quants 0..nmax, sub-block scales/mins 0..lmax (15 or 63).
void quantize_affine_block(const float* x, int sub_len, int nmax, int lmax, const FitGrid& grid,
                           AffineBlock& out);

/// Output of stage 2 for Q3_K and Q6_K (16 sub-blocks of 16, signed sub-block scales).
/// Dequant: fp16(d)*scale[j]*q.
struct SymmetricBlock {
    uint16_t d = 0;          ///< fp16 bits
    int8_t scale[16] = {};   ///< lmin..lmax per sub-block
    int8_t q[QK_K] = {};     ///< -nneg..nneg-1 per element
};

/// Quantize QK_K values x into a SymmetricBlock: element quants -nneg..nneg-1, sub-block
/// scales lmin..lmax (Q3_K: -32..31, Q6_K: -128..127).
void quantize_symmetric_block(const float* x, int nneg, int lmin, int lmax, const FitGrid& grid,
                              SymmetricBlock& out);

}  // namespace tessel::quant::kq

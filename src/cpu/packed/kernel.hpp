// The CPU matrix-product micro-kernels: descriptors, per-ISA tables and chains (DESIGN.md, "The
// packed cpu path"). Every MUL_MAT / MUL_MAT_ID kernel of the CPU backend is a Kernel here, run by
// one driver (mul_mat.cpp).
//
// A micro-kernel multiplies packed activation (LHS) rows by weight (RHS) rows:
// dst[m][n] = sum_k x[m][k] * w[n][k]. The weight is read in one of two layouts (rhs_layout):
//   Packed  a Format of format.hpp (CPU_PACKED buffers, or F16 packed at run time)
//   Rows    the GGUF rows as stored: weight row n at rhs + n * rhs_stride, any stride (views too);
//           format == nullptr. These are the tile kernels of src/cpu/kernels (mul_mat_driver.hpp
//           wraps their tiles) and, last in every chain, the tier-scalar reference kernels
//           (rows_ref.cpp: the numerics of src/cpu/ref/matmul.cpp, bit for bit)
// Its descriptor states its geometry and the functions around it, so the driver needs no
// per-kernel code:
//   mr x nr   register tile (activation rows x weight rows); nr = 16 (one group) for the Packed
//             kernels: mr rows reuse each weight register (e.g. 8 for the avx512vnni legacy-quant
//             kernels, 4 for the avx2 integer kernels, 6 for avx2 F16, 16 for AMX tiles)
//   kr, sr    Packed: K bytes per 32-bit lane of a packed register, and how many K-elements share
//             one byte (2 for 4-bit quants: low and high nibble, 16 apart in 32-element blocks,
//             32 apart in K-quant super-blocks; 1 otherwise); f16x16 kernels step one fp16
//             K-element (kr = 2 bytes) of each row at a time. Rows: 0
//   m_step    rows of LHS the GEMM consumes per call unit (= mr); the driver passes all M rows of a
//             batch in one call
//   n_step    weight rows (output columns) per work step (Packed: a multiple of the format's
//             16-row group): the driver's column chunks are whole n_steps (16 for every kernel
//             here), so a call starts at a step and may end inside one
// Names follow `<weight>_<activation>_{gemm,gemv}_<mr>x<nr>_<isa>` (the reference:
// `<weight>_f32_{gemm,gemv}_ref`). ISA code lives in per-ISA translation units (packed_<isa>.cpp,
// kernels/mul_mat_<isa>.cpp); the tables of the tiers this CPU cannot run are never entered.
//
// A chain is, per weight type, the usable kernels best first, ending with the reference kernel
// (tier scalar, every architecture). The driver plans from the part of the chain in the weight's
// layout (chain(t, f, layout)) and takes for an op with M activation rows the first whose
// min_m <= M (so a matrix unit serves prompts and a vector kernel single tokens), and, with a
// thread cap on the matrix unit (matrix_thread_cap(): TESSEL_CPU_MATRIX_THREADS, by default none
// on x86 and the SME units on aarch64), the next non-matrix kernel as the fallback slot for the
// remaining threads (co-execution).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/cpu_features.hpp"
#include "cpu/packed/format.hpp"

namespace tessel::cpu::packed {

/// One call of a micro-kernel: m LHS rows (any m >= 1; GEMV: m == 1) against n weight rows
/// (any n >= 1, starting at an n_step boundary; the last group may be partial and only n output
/// columns are written) over k elements.
struct GemmArgs {
    const uint8_t* lhs;  ///< packed LHS row 0; row i at lhs + i * lhs_stride
    size_t lhs_stride;   ///< bytes between packed LHS rows
    const uint8_t* rhs;  ///< Packed: the group holding weight row 0 of this call; Rows: weight row 0
    float* dst;          ///< output row 0, column 0 of this call
    size_t dst_stride;   ///< bytes between output rows
    int64_t m, n, k;
    size_t rhs_stride = 0;  ///< Rows layout only: bytes between weight rows (the tensor's nb[1])
};

/// How a kernel reads the weight (RHS).
enum class RhsLayout {
    Packed,  ///< the Format of the weight type (format_for(weight))
    Rows,    ///< the GGUF rows as stored, row n at rhs + n * GemmArgs::rhs_stride
};

/// How a kernel lays out one packed activation (LHS) row of k elements.
enum class LhsLayout {
    /// The lhs type's GGUF rows: Q8_0 / Q8_1 blocks (dtype_row_bytes(lhs, k) bytes), F32 values.
    Blocks,
    /// Scaled blocks: per 32 elements a 40-byte block (k / 32 * 40 bytes a row):
    ///   [0, 32)   the int8 quants (Q8_0 / Q8_1 quants: round(x / d))
    ///   [32, 36)  d as f32 (the reference block's fp16 d, widened)
    ///   [36, 40)  aux: Q8_1 -> s as f32 (the block's fp16 s, widened); Q8_0 -> int32 -c * sum q,
    ///             the start of the kernel's integer dot: c = 8 for Q4_0 weights (codes carry
    ///             +8), 16 for Q5_0 (+16), 128 for Q8_0 and IQ4_NL weights (the kernel adds 128
    ///             to make them the unsigned side)
    /// so a GEMM reads scales and corrections made once per op instead of once per call.
    Scaled,
};

struct Kernel {
    const char* name;       ///< GEMM name, e.g. "q4_0_q8_0_gemm_8x16_avx512vnni"
    const char* gemv_name;  ///< GEMV name, e.g. "q4_0_q8_0_gemv_1x16_avx512vnni"
    CpuTier tier;           ///< lowest tier that can run it
    bool matrix_unit;       ///< runs on a matrix unit (AMX, SME): matrix_thread_cap() caps it
    DType weight;           ///< weight type (Packed: its Format is the RHS layout)
    DType lhs;              ///< activation packing: Q8_0 / Q8_1 / Q8_K rows (GGUF blocks) or F32 rows
    int mr, nr, kr, sr, m_step, n_step;
    int64_t min_m;  ///< the chain uses this kernel for ops with at least min_m activation rows
    /// Packs m F32 rows (row i at x + i * x_stride bytes) of k elements into dst, one packed row
    /// every lhs_row_bytes(k) bytes in lhs_layout (Q8_0 / Q8_1 / Q8_K quants and scales as
    /// quant::quantize_row makes them, up to rounding of exact ties; F32: a copy).
    void (*pack_lhs)(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k);
    void (*gemm)(const GemmArgs& a);
    void (*gemv)(const GemmArgs& a);  ///< a.m == 1
    LhsLayout lhs_layout = LhsLayout::Blocks;
    const Format* format = nullptr;  ///< Packed: format_for(weight), set by all_kernels(); Rows: nullptr
    RhsLayout rhs_layout = RhsLayout::Packed;
};

/// Bytes of one packed LHS row of k elements for kernel kern (its lhs_layout's size).
size_t lhs_row_bytes(const Kernel& kern, int64_t k);
/// Bytes of m packed LHS rows.
size_t lhs_packed_bytes(const Kernel& kern, int64_t m, int64_t k);
/// Offset of packed LHS row m_idx.
size_t lhs_offset(const Kernel& kern, int64_t m_idx, int64_t k);
/// Packed RHS bytes of n rows of k elements (the format's size; Packed kernels only).
size_t rhs_packed_bytes(const Kernel& kern, int64_t n, int64_t k);
/// Offset of the group holding weight row n_idx (a multiple of n_step; Packed kernels only).
size_t rhs_offset(const Kernel& kern, int64_t n_idx, int64_t k);

/// Throws std::bad_alloc for a kernel unit's scratch of `bytes` that could not be allocated
/// (defined outside the per-ISA units: quant_traits.hpp's UnitBuffer).
[[noreturn]] void throw_scratch_alloc(size_t bytes);

/// pack_lhs of the kernels with F32 activations: a copy of each row.
void pack_f32_rows(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k);

/// Every compiled kernel, highest tier first (x86: amx, avx512vnni, avx512, avx2 tables; aarch64:
/// sme, sve, i8mm, dotprod, neon; each tier's Packed tables, then its Rows tables), the reference
/// kernels (tier scalar) last.
const std::vector<const Kernel*>& all_kernels();

/// Kernel tables of each ISA (per-ISA translation units, each compiled on its architecture only). They are constant-initialised
/// data (constinit), never code: a translation unit built for an ISA this CPU lacks may run nothing
/// before the chain checks the tier (its compiler may use that ISA anywhere, e.g. to build a
/// vector: a table-building function in the AMX unit faulted on an AVX2-only CPU). all_kernels()
/// completes them (each kernel's format; Format addresses are not constant expressions).
extern const std::span<Kernel> kAmxKernels;         ///< packed_amx.cpp
extern const std::span<Kernel> kAvx512VnniKernels;  ///< packed_avx512vnni.cpp
extern const std::span<Kernel> kAvx512Kernels;      ///< packed_avx512.cpp
extern const std::span<Kernel> kAvx2Kernels;        ///< packed_avx2.cpp
extern const std::span<Kernel> kQ5Avx512VnniKernels;  ///< packed_q5_avx512vnni.cpp
extern const std::span<Kernel> kQ5Avx2Kernels;        ///< packed_q5_avx2.cpp
extern const std::span<Kernel> kKquantAvx512VnniKernels;  ///< packed_kquant_avx512vnni.cpp
extern const std::span<Kernel> kKquantAvx2Kernels;        ///< packed_kquant_avx2.cpp
extern const std::span<Kernel> kIq4nlAvx512VnniKernels;  ///< packed_iq4nl_avx512vnni.cpp
extern const std::span<Kernel> kIq4nlAvx2Kernels;        ///< packed_iq4nl_avx2.cpp
/// Rows kernels (the same rules; their format stays nullptr, so the tables are const).
extern const std::span<const Kernel> kAvx512VnniRowsKernels;  ///< kernels/mul_mat_avx512vnni.cpp
extern const std::span<const Kernel> kAvx512FloatRowsKernels;  ///< kernels/mul_mat_float_avx512.cpp
extern const std::span<const Kernel> kAvx2RowsKernels;        ///< kernels/mul_mat_avx2.cpp
extern const std::span<const Kernel> kAvx2KquantRowsKernels;  ///< kernels/mul_mat_kquants_avx2.cpp
extern const std::span<const Kernel> kAvx2FloatRowsKernels;   ///< kernels/mul_mat_float_avx2.cpp
/// aarch64 (docs/arm.md): the matrix unit (SME, outer products into ZA), SVE (vector-length agnostic),
/// NEON with i8mm, NEON with dotprod, plain NEON.
extern const std::span<Kernel> kSmeKernels;               ///< packed_sme.cpp
extern const std::span<const Kernel> kSmeRowsKernels;     ///< packed_sme.cpp (F32 weights)
extern const std::span<Kernel> kSveKernels;               ///< packed_sve.cpp
extern const std::span<const Kernel> kSveRowsKernels;     ///< packed_sve.cpp (F32 weights)
extern const std::span<Kernel> kI8mmKernels;              ///< packed_i8mm.cpp
extern const std::span<Kernel> kDotprodKernels;           ///< packed_dotprod.cpp
extern const std::span<Kernel> kNeonKernels;              ///< packed_neon.cpp
extern const std::span<const Kernel> kNeonRowsKernels;    ///< packed_neon.cpp (F32 weights)
/// The reference kernels (rows_ref.cpp, every architecture): one Rows kernel, tier scalar, F32
/// activations, per weight type the reference dequantizes (quant::has_dequantize).
std::span<const Kernel> ref_kernels();
/// Whether kernel k can run under features f.
bool usable(const Kernel& k, const CpuFeatures& f);

/// The chain of weight type t under features f: usable kernels for t, best first, the reference
/// kernel last (empty: the reference does not read t).
std::vector<const Kernel*> chain(DType t, const CpuFeatures& f);
/// The part of the chain in one RHS layout (Packed: empty when t is not packed on this CPU).
std::vector<const Kernel*> chain(DType t, const CpuFeatures& f, RhsLayout layout);

/// The matrix-unit thread cap without TESSEL_CPU_MATRIX_THREADS, from detected features f: on
/// x86 0 = no cap (AMX is a per-core unit); on aarch64 with SME the streaming-mode compute units
/// (f.sme_units: cores share them, so more threads than units only queue), 1 when unknown; else 0.
int default_matrix_thread_cap(const CpuFeatures& f);

/// The matrix-unit thread cap: TESSEL_CPU_MATRIX_THREADS (read once; 0 = no cap), else
/// default_matrix_thread_cap(cpu_features()). Throws Error(Environment) naming the variable on a
/// value that is not a whole number 0..1024.
int matrix_thread_cap();

/// The kernel(s) one op runs: `main` for M activation rows, and, when main is a matrix-unit kernel
/// capped below the op's thread count, the fallback kernel for the other threads (else nullptr).
struct Plan {
    const Kernel* main = nullptr;
    const Kernel* fallback = nullptr;
    int main_threads = 0;  ///< threads running `main` (all of them without a fallback)
};
/// Plans an op with M activation rows on nth threads from chain c (non-empty) and cap (0 = none).
Plan plan(const std::vector<const Kernel*>& c, int64_t M, int nth, int cap);

}  // namespace tessel::cpu::packed

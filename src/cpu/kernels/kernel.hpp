// Fast CPU kernels of the ops that are not matrix products (rows, activations, rope, flash
// attention, data movement) and their selection.
//
// A fast kernel serves some nodes (its supports()) on CPUs with some features (its usable());
// the CPU backend runs the first fast kernel of the table that accepts a node under the usable
// features (TESSEL_CPU_ISA applies), else the reference kernel. Kernels are named `<op>_<isa>`.
// MUL_MAT and MUL_MAT_ID are not here: every matrix-product kernel is a src/cpu/packed/kernel.hpp
// Kernel (the tile kernels of this folder over plain GGUF rows too: mul_mat_driver.hpp), run by
// packed/mul_mat.cpp. ISA code lives in per-ISA translation units (file suffix _avx2, _avx512,
// ...), entered only after the feature check.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "core/cpu_features.hpp"
#include "cpu/threadpool.hpp"
#include "graph/tensor.hpp"

namespace tessel::cpu {

struct FastKernel {
    const char* name;
    bool (*usable)(const CpuFeatures& f);
    bool (*supports)(const Tensor& dst);
    /// Bytes of work buffer shared by all parts (e.g. per-part scratch), for nth parts.
    size_t (*work_size)(const Tensor& dst, int nth);
    /// Computes part ctx.ith of ctx.nth of dst (the CPU backend runs the parts on whichever threads
    /// claim them: ThreadContext::parts); `work` holds work_size() bytes, 64-byte aligned.
    void (*run)(Tensor& dst, ThreadContext& ctx, void* work);
};

// ---- helpers shared by the kernels (architecture-neutral) ------------------------------------
// Defined out of line in kernel.cpp (built without ISA flags): an inline function compiled inside
// an ISA translation unit could be the copy the linker keeps for every caller, and would then run
// ISA instructions on CPUs that lack them.

/// The avx2 tier's features (AVX2, FMA, F16C): what every *_avx2.cpp kernel requires.
bool has_avx2_tier(const CpuFeatures& f);
/// The avx512 tier's features (avx2 tier + AVX-512 F, BW, VL, DQ): what *_avx512.cpp requires.
bool has_avx512_tier(const CpuFeatures& f);
/// The avx512vnni tier's features (avx512 tier + AVX-512 VNNI): what *_avx512vnni.cpp requires.
bool has_avx512vnni_tier(const CpuFeatures& f);

/// work_size for kernels that need no shared work buffer.
size_t no_work(const Tensor&, int);

/// This part's contiguous share [begin, end) of n rows (equal ranges in part order), so a row is
/// computed the same way whichever part count runs it.
void thread_rows(int64_t n, const ThreadContext& ctx, int64_t& begin, int64_t& end);

/// MUL_MAT_ID routing (dst F32 [N, E_used, T], src0 [K, N, E], ids = src2 I32 [E_used, T]): a
/// counting sort of the (slot e, token t) pairs by expert. starts[0..E] (E + 1 values) gets each
/// expert's first pair index, pairs[2i], pairs[2i + 1] the i-th pair's (e, t); dst rows of pairs
/// whose id is outside [0, E) are set to zero and routed nowhere. Single-threaded.
void route_experts(Tensor& dst, int64_t* starts, int32_t* pairs);

/// F32 tensor whose rows are contiguous (element stride 4 bytes; other strides free).
bool f32_rows(const Tensor& t);

/// The fast kernel for node dst under features f, or nullptr (the reference kernel runs).
const FastKernel* select_kernel(const Tensor& dst, const CpuFeatures& f);

/// Kernel tables of each ISA, defined in the per-ISA translation units (x86 only) as constant-
/// initialised data, never code: a unit built for an ISA this CPU lacks may run nothing before a
/// kernel's `usable` check (its compiler may use that ISA anywhere; a table-building function of
/// the AVX-512 unit faulted on an AVX2-only CPU). The selection table lists higher tiers first, so
/// their kernels win where usable.
extern const std::span<const FastKernel> kAvx512FlashAttnKernels;  ///< flash_attn_avx512.cpp
extern const std::span<const FastKernel> kAvx2RowKernels;  ///< rows_avx2.cpp
extern const std::span<const FastKernel> kAvx2ActivationKernels;  ///< activations_avx2.cpp
extern const std::span<const FastKernel> kAvx2RopeKernels;  ///< rope_avx2.cpp
extern const std::span<const FastKernel> kAvx2FlashAttnKernels;  ///< flash_attn_avx2.cpp
extern const std::span<const FastKernel> kAvx2DataKernels;  ///< data_avx2.cpp

}  // namespace tessel::cpu

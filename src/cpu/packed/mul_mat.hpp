// The CPU backend's one matrix-product driver (MUL_MAT, MUL_MAT_ID), and GET_ROWS of packed weights.
//
// It runs every MUL_MAT / MUL_MAT_ID with F32 activation rows whose weight (src0) is either stored
// in CPU_PACKED (the Packed kernels of its type's chain, kernel.hpp) or read as its plain GGUF rows
// (nb[0] = the type's block bytes, any nb[1..3], views: the Rows kernels of the chain, the
// reference kernel last), and F16 weights it packs at run time. The only difference between the
// layouts is where a call's rhs points: the packed slot + matrix * matrix_bytes + the group's
// offset, or w.data + (i2 / r2) * nb[2] + (i3 / r3) * nb[3] + n0 * nb[1] with rhs_stride = nb[1].
// Other matrix products (F16/BF16 activations, activation rows with a stride between elements)
// run ref::compute.
//
// MUL_MAT  w [K, N, W2, W3], x F32 [K, M, B2, B3] (rows contiguous) -> dst F32 [N, M, B2, B3]
//   1. a phase whose chunks pack the M * B2 * B3 activation rows (the kernel's pack_lhs) into the
//      work buffer (twice in hybrid mode when the two kernels pack differently). With at most 4
//      rows (decode) there is no such phase: every thread packs all rows for itself on its first
//      chunk of step 2;
//   2. column chunks (n_step * TESSEL_CPU_CHUNK_MULT columns; by default about 4 chunks per thread)
//      of every batch are claimed from the pool's phase counter; each chunk runs the thread's
//      kernel (plan(): main, or in hybrid mode main on the first main_threads threads and the
//      fallback on the others) over all M rows. No static split: a slow core takes fewer chunks.
// All tensor data is read and written inside claimed chunks (threadpool.hpp's rule).
// MUL_MAT_ID experts [K, N, E], x F32 [K, U, T], ids I32 [E_used, T] -> dst F32 [N, E_used, T]:
//   four phases: x packed and the (slot, token) pairs routed by expert; their LHS rows gathered;
//   chunks of (expert, columns) as above into a scratch output; scattered to dst (no hybrid split).
// Run-time packing: MUL_MAT with an F16 src0 that is not stored packed (packs_at_run_time()) packs
//   src0 into the work buffer in step 1's phase (a chunk per 16-row group), then runs as above.
// GET_ROWS w [K, N, B2, B3] packed, ids I32 [R, B2, B3] -> dst F32 [K, R, B2, B3]: rows dequantized
//   from the packed layout (Format::unpack of the row's group up to it, into the work buffer), so
//   token embeddings can stay packed.
#pragma once

#include <cstddef>
#include <string>

#include "cpu/packed/kernel.hpp"
#include "cpu/threadpool.hpp"
#include "graph/tensor.hpp"

namespace tessel::cpu::packed {

/// True when node reads a packed weight as src0 (it must then run here: no other kernel reads the
/// packed layout).
bool reads_packed(const Tensor& node);
/// True when node is a MUL_MAT whose F16 src0 is not stored packed (e.g. attention's K or V
/// over the KV cache) and which the packed path runs by packing src0 into the work buffer first
/// (step 1's phase): at least 16 activation rows, an F16 chain on this CPU.
bool packs_at_run_time(const Tensor& node);
/// True when the driver can compute node (types, layouts, shapes): MUL_MAT / MUL_MAT_ID with src0
/// packed or plain rows, GET_ROWS with src0 packed.
bool supports_node(const Tensor& node);
/// True when node runs here: it reads a packed weight, packs src0 at run time, or is a MUL_MAT /
/// MUL_MAT_ID that supports_node() accepts.
bool serves(const Tensor& node);
/// The kernel a matrix product that serves() accepts runs for its activation rows (one thread,
/// no matrix-unit cap): its tier tells a fast kernel from the reference kernel (tier scalar).
const Kernel& main_kernel(const Tensor& node);

/// The packed path's settings from the environment, read when a CPU backend is created (never
/// while it computes).
struct Tuning {
    int matrix_cap = 0;      ///< matrix_thread_cap() (TESSEL_CPU_MATRIX_THREADS), 0 = no cap
    int64_t chunk_mult = 0;  ///< TESSEL_CPU_CHUNK_MULT, kernel n_steps (columns) per chunk; 0 = unset
};
/// Reads Tuning. Throws Error(Environment) naming a variable with a bad value
/// (TESSEL_CPU_CHUNK_MULT: outside 1..65536).
Tuning tuning_from_env();

/// What the packed path does for one node on nth threads, decided once per graph (the CPU
/// backend caches it): the kernels, the weight's slots, the column chunk and where each part
/// lives in the work buffer (byte offsets, 64-byte aligned).
struct NodePlan {
    Plan kernels;                          ///< MUL_MAT_ID: main only (no hybrid split)
    bool separate_lhs = false;             ///< hybrid: the fallback packs its own LHS
    bool private_lhs = false;              ///< <= 4 activation rows: each thread packs all of them itself
    bool runtime = false;                  ///< src0 is packed at run time into work
    bool rows = false;                     ///< src0's plain rows (Rows kernels): no slot
    const uint8_t* slot_main = nullptr;    ///< src0 in main's format (stored packed)
    const uint8_t* slot_fallback = nullptr;  ///< src0 in the fallback's format
    const Format* rows_format = nullptr;   ///< GET_ROWS: the slot rows are read from (work: a group per thread)
    int64_t cols = 0;                      ///< columns per chunk
    size_t work = 0;                       ///< work-buffer bytes
    /// MUL_MAT: per-thread scratch of run-time packing (a 16-row group of src0), the LHS (private:
    /// one area of lhs_per_thread bytes per thread), the fallback's separate LHS.
    struct { size_t rows = 0, lhs = 0, lhs_fallback = 0, lhs_per_thread = 0; } mm;
    /// MUL_MAT_ID: packed x rows, per expert the start of its routed (slot, token) pairs, the
    /// pairs, the routed rows' packed LHS gathered per expert, their F32 outputs.
    struct { size_t xq = 0, starts = 0, pairs = 0, gathered = 0, out = 0; } id;
};
/// Plans node (serves()) for runs of nth threads. Throws Error(Unsupported) naming the node when
/// the driver does not serve it, and
/// Error(InvalidArgument) naming the tensor when a packed header is damaged.
NodePlan plan_node(const Tensor& node, int nth, const Tuning& tuning);
/// Computes node: called on every thread of the run (ctx.nth = the plan's nth; ctx.ith picks
/// per-thread scratch) or alone(), claiming its work in chunks; `work` holds plan.work bytes.
/// Throws Error(InvalidArgument) naming the tensor on an out-of-range row id (GET_ROWS).
void run(Tensor& node, const NodePlan& plan, ThreadContext& ctx, void* work);
/// The kernel(s) of the plan, e.g. "q4_0_q8_0_gemv_1x16_avx512vnni" or
/// "q4_0_q8_0_gemm_16x16_amx+q4_0_q8_0_gemm_8x16_avx512vnni" (hybrid).
std::string kernel_name(const Tensor& node, const NodePlan& plan);

}  // namespace tessel::cpu::packed

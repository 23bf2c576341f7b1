// The packed path's ops: MUL_MAT, MUL_MAT_ID and GET_ROWS whose weight (src0) is stored in CPU_PACKED.
//
// MUL_MAT  w [K, N, W2, W3] packed, x F32 [K, M, B2, B3] (rows contiguous) -> dst F32 [N, M, B2, B3]
//   1. every thread packs a share of the M * B2 * B3 activation rows (the kernel's pack_lhs) into
//      the work buffer (twice in hybrid mode when the two kernels pack differently); barrier.
//      With at most 4 rows (decode) every thread packs all of them for itself instead: no barrier;
//   2. column chunks (n_step * TESSEL_CPU_CHUNK_MULT columns; by default about 4 chunks per thread)
//      of every batch are claimed from the pool's atomic counter; each chunk runs the thread's
//      kernel (plan(): main, or in hybrid mode main on the first main_threads threads and the
//      fallback on the others) over all M rows. No static split: a slow core takes fewer chunks.
// MUL_MAT_ID experts [K, N, E] packed, x F32 [K, U, T], ids I32 [E_used, T] -> dst F32 [N, E_used, T]:
//   x packed, routed (slot, token) pairs sorted by expert and their LHS rows gathered, then chunks
//   of (expert, columns) as above into a scratch output, scattered to dst (no hybrid split).
// Run-time packing: MUL_MAT with an F16 src0 that is not stored packed (packs_at_run_time()) packs
//   src0 (all threads, by 16-row groups) into the work buffer before step 1, then runs as above.
// GET_ROWS w [K, N, B2, B3] packed, ids I32 [R, B2, B3] -> dst F32 [K, R, B2, B3]: rows dequantized
//   straight from the packed layout (Format::row_to_float), so token embeddings can stay packed.
#pragma once

#include <cstddef>
#include <string>

#include "cpu/threadpool.hpp"
#include "graph/tensor.hpp"

namespace tessel::cpu::packed {

/// True when node reads a packed weight as src0 (it must then run here: no other kernel reads the
/// packed layout).
bool reads_packed(const Tensor& node);
/// True when node is a MUL_MAT whose F16 src0 is not stored packed (e.g. attention's K or V
/// over the KV cache) and which the packed path runs by packing src0 into the work buffer first
/// (all threads, before the barrier): at least 16 activation rows, an F16 chain on this CPU.
bool packs_at_run_time(const Tensor& node);
/// True when the packed path can compute node with src0 packed (types, layouts, shapes).
bool supports_node(const Tensor& node);
/// Work-buffer bytes for node on nth threads (64-byte aligned start).
size_t work_size(const Tensor& node, int nth);
/// Computes node on every thread of the run. Throws Error(InvalidArgument) naming the tensor on an
/// out-of-range row id (GET_ROWS) or a damaged packed header.
void run(Tensor& node, ThreadContext& ctx, void* work);
/// The kernel(s) node runs on nth threads, e.g. "q4_0_q8_0_gemv_1x16_avx512vnni" or
/// "q4_0_q8_0_gemm_16x16_amx+q4_0_q8_0_gemm_4x16_avx512vnni" (hybrid).
std::string kernel_name(const Tensor& node, int nth);

/// Columns per chunk for N columns on nth threads (a multiple of kGroupRows): TESSEL_CPU_CHUNK_MULT
/// groups when set (read once; Error(Environment) naming it on a value outside 1..65536), else
/// about a quarter of a thread's share.
int64_t chunk_columns(int64_t N, int nth);

}  // namespace tessel::cpu::packed

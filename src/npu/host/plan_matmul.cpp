// The matmul planner (plan_matmul.hpp) and its cost model.
#include "npu/host/plan_matmul.hpp"

#include <algorithm>
#include <cstdio>

#include "npu/host/plan.hpp"

namespace tessel::npu {
namespace {

// The cost model, in ns of device time on the virtual NPU (2 workers). Its constants come from the
// measurements in bench/results/ (file named after each):
// - the matrix unit is 1.19x the vector kernel once its tiles are reshaped: the mean of the Q4_0 and
//   Q8_0 ratios at M = 32 and 128 (npu-matrix-threshold-2026-12-01.md).
constexpr double kMatrixSpeedup = 1.19;
// - reshaping one tile for the matrix unit, per item and step: 2.3 us per 64 tiles (npu-amx-reshape-2026-12-01.md).
constexpr double kReshapeNsPerTile = 36.0;
// - one 32x32 weight tile against one activation column on the vector kernel: set so that the
//   matrix unit breaks even at 16 columns per item, where npu-matrix-threshold-2026-12-01.md saw it
//   stop losing: 36 / ((1 - 1 / 1.19) x 16) = 14.1 ns (the AVX2 kernel's 108 GFLOP/s at M = 512,
//   npu-matmul-avx2-kernel-2026-12-01.md, would be 19 ns: the same order).
constexpr double kMatrixBreakEvenColumns = 16.0;
constexpr double kTiledNsPerTileColumn = kReshapeNsPerTile / ((1.0 - 1.0 / kMatrixSpeedup) * kMatrixBreakEvenColumns);
// - quantizing 32 activations to Q8: 12 ns (npu-q8-quantizer-2026-12-01.md, AVX-512).
constexpr double kQuantizeNsPerBlock = 12.0;
// - reading a weight byte from memory, per pass: 0.05 ns (20 GB/s), what remains of the AVX2 kernel's
//   42 us at M = 1 on smollm2_ffn_down (553 KB of Q4_1) after 864 tile-columns of compute at 19 ns
//   (npu-matmul-avx2-kernel-2026-12-01.md).
constexpr double kWeightNsPerByte = 0.05;
// - streaming the tiles (DMA on) takes 0.89 of reading them in place: decode steps of 17.1 against
//   19.2 ms, the middles of the ranges in npu-dma-modes-2026-12-01.md.
constexpr double kDmaFactor = 0.89;
// - one step's fork and join of the worker pool: 4 us, about a futex wake-up per parallel op (the
//   2.2 ms spinning saved over a decode step's 575 ops, npu-pool-spin-2026-12-01.md).
constexpr double kStepNs = 4000.0;
// Items a worker claims at a time: about 4 claims per worker (the kernel's balance of claim cost
// against a late worker's share, unchanged from the device's former fixed rule).
constexpr int64_t kClaimsPerWorker = 4;

bool allowed(const DeviceBudget& b, uint32_t kernel) { return b.mm_kernels == 0 || (b.mm_kernels & (1u << kernel)); }

int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t row_tiles(const MatmulShape& s) { return div_up(s.n, 32); }

// Weight matrices read per pass: MUL_MAT all of the items'; MUL_MAT_ID at most one per routed column.
int64_t matrices_read(const MatmulShape& s) {
    return s.n_experts > 0 ? std::min(s.matrices, s.columns) : s.matrices;
}

uint64_t scratch_of(const MatmulShape& s, uint32_t kernel, uint32_t dma, int64_t act_rows, uint32_t threads) {
    return tsl_npu_matmul_scratch(kernel, dma, s.tile_bytes, s.k, act_rows, s.n_experts, threads);
}

// The cheapest candidate of one kernel, DMA mode and worker count: the largest step that fits.
MatmulPlan candidate(const MatmulShape& s, uint32_t kernel, uint32_t dma, uint32_t threads, uint64_t cap) {
    MatmulPlan p;
    const uint64_t fixed = scratch_of(s, kernel, dma, 0, threads);
    if (fixed > cap) return p;
    int64_t step = s.rows;
    if (kernel != TSL_NPU_MM_FLAT) {
        const uint64_t per_row = tsl_npu_q8_row_bytes(s.k);
        step = static_cast<int64_t>(std::min<uint64_t>((cap - fixed) / per_row, static_cast<uint64_t>(s.rows)));
        step = std::min<int64_t>(step, UINT32_MAX);
        if (step < 1 && s.rows > 0) return p;
    }
    p.kernel = kernel;
    p.dma = dma;
    p.act_rows = step;
    p.steps = step > 0 ? div_up(s.rows, step) : 0;
    p.threads = threads;
    const int64_t items = row_tiles(s) * s.matrices;
    p.chunk = std::max<int64_t>(1, items / (kClaimsPerWorker * threads));
    p.scratch = scratch_of(s, kernel, dma, step, threads);
    p.cost_ns = matmul_cost_ns(s, p);
    return p;
}

}  // namespace

double matmul_cost_ns(const MatmulShape& s, const MatmulPlan& p) {
    const int64_t n_kt = s.k / 32, items = row_tiles(s) * s.matrices;
    const double workers = static_cast<double>(std::clamp<int64_t>(items, 1, std::max<uint32_t>(p.threads, 1)));
    const double tile_columns = static_cast<double>(row_tiles(s)) * static_cast<double>(n_kt) * static_cast<double>(s.columns);
    const double steps = static_cast<double>(std::max<int64_t>(p.steps, 1));
    if (p.kernel == TSL_NPU_MM_FLAT) {
        const double weight = static_cast<double>(s.n * s.k * matrices_read(s)) * s.float_bytes;
        return tile_columns * kTiledNsPerTileColumn / workers + weight * kWeightNsPerByte + kStepNs;
    }
    const double items_read = static_cast<double>(row_tiles(s) * matrices_read(s));
    const double weight = items_read * static_cast<double>(n_kt) * s.tile_bytes;
    double cost = static_cast<double>(s.rows * n_kt) * kQuantizeNsPerBlock / static_cast<double>(std::max<uint32_t>(p.threads, 1));
    cost += steps * (weight * kWeightNsPerByte * (p.dma ? kDmaFactor : 1.0) + kStepNs);
    if (p.kernel == TSL_NPU_MM_MATRIX)
        return cost + tile_columns * kTiledNsPerTileColumn / kMatrixSpeedup / workers +
               steps * items_read * static_cast<double>(n_kt) * kReshapeNsPerTile / workers;
    return cost + tile_columns * kTiledNsPerTileColumn / workers;
}

MatmulPlan plan_matmul(const MatmulShape& s, const DeviceBudget& b) {
    const uint64_t cap = std::min<uint64_t>(b.vtcm_bytes, UINT32_MAX);
    uint32_t kernels[2] = {0, 0};
    if (s.tile_bytes > 0 && s.k % 32 == 0) {
        if (b.matrix_unit && allowed(b, TSL_NPU_MM_MATRIX)) kernels[0] = TSL_NPU_MM_MATRIX;
        if (allowed(b, TSL_NPU_MM_TILED)) kernels[1] = TSL_NPU_MM_TILED;
    } else if ((s.float_bytes == 2 || s.float_bytes == 4) && allowed(b, TSL_NPU_MM_FLAT)) {
        kernels[0] = TSL_NPU_MM_FLAT;
    }
    MatmulPlan best;
    for (const uint32_t kernel : kernels) {
        if (kernel == 0) continue;
        for (const uint32_t dma : {b.dma, 0u}) {
            if (kernel == TSL_NPU_MM_FLAT && dma != 0) continue;  // the flat kernel reads rows in place
            for (uint32_t threads = std::max<uint32_t>(b.n_threads, 1); threads >= 1; --threads) {
                const MatmulPlan p = candidate(s, kernel, dma, threads, cap);
                if (p.kernel != 0 && (best.kernel == 0 || p.cost_ns < best.cost_ns)) best = p;
            }
        }
    }
    return best;
}

tsl_npu_matmul_kparams matmul_kparams_of(const MatmulPlan& p) {
    auto u32 = [](int64_t v) { return static_cast<uint32_t>(std::clamp<int64_t>(v, 0, UINT32_MAX)); };
    return tsl_npu_matmul_kparams{p.kernel, p.dma, u32(p.act_rows), u32(p.chunk), p.threads, 0, 0};
}

std::string plan_text(const MatmulPlan& p) {
    static const char* const names[] = {"none", "flat", "tiled", "matrix"};
    char line[200];
    std::snprintf(line, sizeof line, "kernel=%s steps=%lldx%lld chunk=%lld dma=%u threads=%u scratch=%llu cost=%.1fus",
                  names[p.kernel <= TSL_NPU_MM_MATRIX ? p.kernel : 0], static_cast<long long>(p.steps),
                  static_cast<long long>(p.act_rows), static_cast<long long>(p.chunk), p.dma, p.threads,
                  static_cast<unsigned long long>(p.scratch), p.cost_ns / 1000.0);
    return line;
}

}  // namespace tessel::npu

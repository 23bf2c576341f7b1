// The NPU device's tiled matmul micro-kernel (src/npu/device/ops_matmul.h) called directly on one
// thread, named `NpuTile/<type>_<isa>/<shape>/M:<m>` for each vector-unit build this CPU runs
// (avx2, avx512vnni, avx512vbmi), on the shapes and M of packed_bench.cpp, so that
// `Packed/<type>_q8_0_.../<shape>/M:<m>` in the same run is the packed CPU path's figure.
//
// One iteration: the M activation rows are quantized to Q8 by the build's quantizer (as the
// device does per MUL_MAT; the bench's own translation unit would get the plain C form) and every 32-row row tile of the weight is run against them in passes
// of up to TSL_NPU_MM_COLS columns. At M = 1 and 4 (decode steps) it runs over `mats` copies of the tiled
// weight totalling over 1 GiB (as packed_bench.cpp), so the weights come from memory.
//
// Counters (per second of wall time): FLOPs = 2·M·N·K per matrix; weight_bytes = tile bytes read.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <exception>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "benchmarks.hpp"
#include "core/cpu_features.hpp"
#include "npu/host/tiled.hpp"
#include "quant/quant.hpp"

extern "C" {
#include "npu/device/ops_matmul.h"
#include "npu/proto/proto.h"
}

namespace tessel::bench {
namespace {

#if defined(__x86_64__) || defined(__i386__)
using Shape = KernelShape;

/// One build of the device's tiled kernel: its micro-kernel and its activation quantizer (the
/// op quantizes every activation row before the kernel runs, as the packed path packs its LHS).
struct TileBuild {
    void (*tile)(const tsl_npu_mm_tile_args*);
    tsl_npu_mm_quantize_fn quantize;
    bool operator==(const TileBuild&) const = default;
};
using TileFn = TileBuild;

class TileRun {
public:
    TileRun(DType type, const Shape& s, int64_t M, TileFn fn) : type_(type), shape_(&s), M_(M), fn_(fn) {
        std::mt19937 rng(1234);
        std::uniform_real_distribution<float> u(-1.0f, 1.0f);
        std::vector<float> f(static_cast<size_t>(s.K * s.N));
        for (float& v : f) v = u(rng);
        std::vector<uint8_t> rows(dtype_row_bytes(type, s.K) * static_cast<size_t>(s.N));
        quant::quantize_rows(type, f.data(), rows.data(), s.N, s.K);
        const npu::tiled::Shape ne{s.K, s.N, 1, 1};
        tiled_bytes_ = npu::tiled::tiled_size(type, ne);
        mats_ = M <= kKernelStreamedM ? std::max<int64_t>(1, static_cast<int64_t>((kKernelStreamBytes + tiled_bytes_ - 1) / tiled_bytes_)) : 1;
        weights_.resize(tiled_bytes_ * static_cast<size_t>(mats_));
        npu::tiled::repack(type, ne, rows.data(), weights_.data());
        for (int64_t i = 1; i < mats_; ++i)
            std::copy_n(weights_.begin(), tiled_bytes_, weights_.begin() + static_cast<std::ptrdiff_t>(i * tiled_bytes_));
        x_.resize(static_cast<size_t>(M * s.K));
        for (float& v : x_) v = u(rng);
        row_bytes_ = tsl_npu_q8_row_bytes(s.K);
        act_.resize(row_bytes_ * static_cast<size_t>(M));
        acc_.resize(TSL_NPU_MM_COLS * 32);
    }

    bool is(DType t, const Shape& s, int64_t M, TileFn fn) const { return type_ == t && shape_ == &s && M_ == M && fn_ == fn; }

    void run() {
        const int64_t K = shape_->K, n_kt = K / 32, n_rt = (shape_->N + 31) / 32;
        const uint64_t q_bytes = (static_cast<uint64_t>(K) + 63) / 64 * 64, s_bytes = (static_cast<uint64_t>(n_kt) * 4 + 63) / 64 * 64;
        std::vector<const uint8_t*> cols(static_cast<size_t>(M_));
        for (int64_t m = 0; m < M_; ++m) {
            uint8_t* row = act_.data() + static_cast<size_t>(m) * row_bytes_;
            fn_.quantize(&x_[static_cast<size_t>(m * K)], K, reinterpret_cast<int8_t*>(row),
                         reinterpret_cast<float*>(row + q_bytes), reinterpret_cast<int32_t*>(row + q_bytes + s_bytes));
            cols[static_cast<size_t>(m)] = row;
        }
        const uint32_t tile_bytes = tsl_npu_tile_bytes(static_cast<uint32_t>(type_));
        for (int64_t i = 0; i < mats_; ++i)
            for (int64_t rt = 0; rt < n_rt; ++rt)
                for (int64_t c0 = 0; c0 < M_; c0 += TSL_NPU_MM_COLS) {
                    const uint8_t* tiles = weights_.data() + static_cast<size_t>(i) * tiled_bytes_ + static_cast<size_t>(rt * n_kt) * tile_bytes;
                    const auto n_cols = static_cast<uint32_t>(std::min<int64_t>(TSL_NPU_MM_COLS, M_ - c0));
                    const tsl_npu_mm_tile_args a{static_cast<uint32_t>(type_), tile_bytes, n_kt, tiles, n_cols,
                                                 cols.data() + c0, q_bytes, s_bytes, acc_.data()};
                    fn_.tile(&a);
                }
        benchmark::DoNotOptimize(acc_.data());
    }
    int64_t mats() const { return mats_; }
    double flops() const { return 2.0 * static_cast<double>(M_ * shape_->N * shape_->K * mats_); }
    double weight_bytes() const { return static_cast<double>(tiled_bytes_) * static_cast<double>(mats_); }

private:
    DType type_;
    const Shape* shape_;
    int64_t M_;
    TileFn fn_;
    size_t tiled_bytes_ = 0;
    int64_t mats_ = 1;
    std::vector<uint8_t> weights_;
    std::vector<float> x_;
    uint64_t row_bytes_ = 0;
    std::vector<uint8_t> act_;
    std::vector<float> acc_;
};

TileRun& tile_run(DType t, const Shape& s, int64_t M, TileFn fn) {
    static std::unique_ptr<TileRun> run;
    if (!run || !run->is(t, s, M, fn)) {
        run.reset();
        run = std::make_unique<TileRun>(t, s, M, fn);
        run->run();  // warm-up
    }
    return *run;
}

void bench_tile(benchmark::State& state, DType t, const Shape& s, TileFn fn) {
    try {
        TileRun& run = tile_run(t, s, state.range(0), fn);
        for (auto _ : state) run.run();
        state.counters["FLOPs"] = benchmark::Counter(run.flops(), benchmark::Counter::kIsIterationInvariantRate);
        state.counters["weight_bytes"] = benchmark::Counter(run.weight_bytes(), benchmark::Counter::kIsIterationInvariantRate);
        state.counters["mats"] = static_cast<double>(run.mats());
    } catch (const std::exception& e) {
        state.SkipWithError(e.what());
    }
}
#endif

}  // namespace

void register_npu_tile_benchmarks() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    const bool vnni = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni");
    const bool vbmi = vnni && __builtin_cpu_supports("avx512vbmi");
    const CpuFeatures& f = cpu_features();
    const bool avx2 = f.avx2 && f.fma && f.f16c;
    const std::pair<const char*, TileFn> builds[] = {
        {"avx2", avx2 ? TileBuild{tsl_npu_mm_tile_cols_avx2, tsl_npu_mm_quantize_avx2} : TileBuild{}},
        {"avx512vnni", vnni ? TileBuild{tsl_npu_mm_tile_cols_avx512vnni, tsl_npu_mm_quantize_avx512vnni} : TileBuild{}},
        {"avx512vbmi", vbmi ? TileBuild{tsl_npu_mm_tile_cols_avx512vbmi, tsl_npu_mm_quantize_avx512vnni} : TileBuild{}}};
    for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q8_0})
        for (const auto& [isa, fn] : builds) {
            if (!fn.tile) continue;
            for (const Shape& s : kKernelShapes) {
                const std::string name = std::string("NpuTile/") + dtype_name(t) + "_" + isa + "/" + s.name;
                benchmark::internal::Benchmark* b = benchmark::RegisterBenchmark(
                    name.c_str(), [t, &s, fn = fn](benchmark::State& state) { bench_tile(state, t, s, fn); });
                b->ArgNames({"M"})->UseRealTime()->Unit(benchmark::kMillisecond);
                for (int64_t M : kKernelBatches) b->Args({M});
            }
        }
#endif
}

}  // namespace tessel::bench

// FLASH_ATTN_EXT benchmarks: each fast kernel of the attention tables (cpu/kernels/kernel.hpp)
// that the usable CPU features run (TESSEL_CPU_ISA applies) and that takes the shape, called
// directly on a thread pool, so the AVX2 and AVX-512 kernels are compared in one run. Named
// `FlashAttn/<kernel>/<shape>/threads:<t>`.
//
// Shapes are SmolLM2-135M's attention (D = 64, 9 query heads over 3 K/V heads, F16 K/V of 512
// cached tokens, scale 1/8): a 512-token prompt under its causal mask (pp512) and a decode step
// (one query, every key visible); and a decode step of a large GQA model (D = 128, 32 query heads
// over 2 K/V heads, 4096 cached tokens): 16 rows per head group, the fewest the tiled kernel takes.
//
// Counters (per second of wall time): FLOPs = 2·KV·(D + Dv) per query row and head, every key
// counted (as op_cost), though a causal kernel skips the masked half.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <exception>
#include <limits>
#include <memory>
#include <new>
#include <span>
#include <random>
#include <string>
#include <vector>

#include "benchmarks.hpp"
#include "core/cpu_features.hpp"
#include "core/fp16.hpp"
#include "cpu/graph_plan.hpp"
#include "cpu/kernels/kernel.hpp"
#include "graph/builder.hpp"
#include "graph/builder_attn.hpp"

namespace tessel::bench {
#if defined(__x86_64__)  // the kernel tables exist on x86 only
namespace {

struct Shape {
    const char* name;
    int64_t D, T, H, H_kv, KV;
};
constexpr Shape kShapes[] = {{"smollm2_pp512", 64, 512, 9, 3, 512},
                             {"smollm2_decode", 64, 1, 9, 3, 512},
                             {"gqa16_decode", 128, 1, 32, 2, 4096}};
constexpr int kThreads[] = {1, 2};

struct FreeDeleter {
    void operator()(void* p) const { std::free(p); }
};
using Memory = std::unique_ptr<void, FreeDeleter>;

Memory allocate(size_t bytes) {
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p) throw std::bad_alloc();
    return Memory(p);
}

/// One shape's graph: q F32 [D, T, H], k and v F16 [D, KV, H_kv], a causal F16 mask [KV, T]
/// (query t sees keys 0 .. KV - T + t) and the FLASH_ATTN_EXT node, in host memory.
class FlashAttnRun {
public:
    explicit FlashAttnRun(const Shape& s) {
        Tensor* q = g_.new_tensor(DType::F32, {s.D, s.T, s.H}, "q");
        Tensor* k = g_.new_tensor(DType::F16, {s.D, s.KV, s.H_kv}, "k");
        Tensor* v = g_.new_tensor(DType::F16, {s.D, s.KV, s.H_kv}, "v");
        Tensor* mask = g_.new_tensor(DType::F16, {s.KV, s.T}, "mask");
        dst_ = build::flash_attn_ext(g_, q, k, v, mask, 1.0f / 8.0f);
        std::mt19937 rng(7);
        std::uniform_real_distribution<float> u(-1.0f, 1.0f);
        for (Tensor* t : {q, k, v, mask, dst_}) {
            mem_.push_back(allocate(t->n_bytes()));
            t->data = mem_.back().get();
        }
        for (int64_t i = 0; i < q->n_elements(); ++i) static_cast<float*>(q->data)[i] = u(rng);
        for (Tensor* t : {k, v})
            for (int64_t i = 0; i < t->n_elements(); ++i) static_cast<uint16_t*>(t->data)[i] = fp32_to_fp16(u(rng));
        const uint16_t neg_inf = fp32_to_fp16(-std::numeric_limits<float>::infinity());
        for (int64_t t = 0; t < s.T; ++t)
            for (int64_t j = 0; j < s.KV; ++j)
                static_cast<uint16_t*>(mask->data)[t * s.KV + j] = j <= s.KV - s.T + t ? fp32_to_fp16(0.0f) : neg_inf;
    }

    Tensor& dst() { return *dst_; }
    double flops() const {
        const Tensor& q = *dst_->src[0];
        return 2.0 * static_cast<double>(q.ne[1] * q.ne[2] * dst_->src[1]->ne[1] * (q.ne[0] + dst_->ne[0]));
    }

private:
    Graph g_;
    Tensor* dst_ = nullptr;
    std::vector<Memory> mem_;
};

void bench_flash_attn(benchmark::State& state, const cpu::FastKernel& kern, const Shape& s) {
    try {
        FlashAttnRun run(s);
        const int threads = static_cast<int>(state.range(0));
        cpu::ThreadPool pool(threads);
        const int parts = threads * cpu::kPartsPerThread;  // as the CPU backend runs it
        Memory work = allocate(kern.work_size(run.dst(), parts) + 64);
        auto step = [&](cpu::ThreadContext& part) { kern.run(run.dst(), part, work.get()); };
        pool.run_parts(parts, step);  // warm-up
        for (auto _ : state) pool.run_parts(parts, step);
        state.counters["FLOPs"] = benchmark::Counter(run.flops(), benchmark::Counter::kIsIterationInvariantRate);
    } catch (const std::exception& e) {
        state.SkipWithError(e.what());
    }
}

}  // namespace
#endif

void register_flash_attn_benchmarks() {
#if defined(__x86_64__)
    const CpuFeatures& features = usable_cpu_features();
    for (std::span<const cpu::FastKernel> table : {cpu::kAvx512FlashAttnKernels, cpu::kAvx2FlashAttnKernels})
        for (const cpu::FastKernel& kern : table) {
            if (!kern.usable(features)) continue;
            for (const Shape& s : kShapes) {
                FlashAttnRun probe(s);
                if (!kern.supports(probe.dst())) continue;
                const std::string name = std::string("FlashAttn/") + kern.name + "/" + s.name;
                benchmark::internal::Benchmark* b = benchmark::RegisterBenchmark(
                    name.c_str(), [&kern, &s](benchmark::State& state) { bench_flash_attn(state, kern, s); });
                b->ArgName("threads")->UseRealTime()->Unit(benchmark::kMicrosecond);
                for (int t : kThreads) b->Arg(t);
            }
        }
#endif
}

}  // namespace tessel::bench

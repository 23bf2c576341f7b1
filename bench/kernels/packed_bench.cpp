// Packed micro-kernel benchmarks (src/cpu/packed): one kernel called directly on one thread, no
// graph and no driver, named `Packed/<kernel>/<shape>/M:<m>` for every packed kernel the usable
// CPU features run (TESSEL_CPU_ISA applies), on the shapes of MUL_MAT's benchmarks, so that
// `MulMat/<type>/<shape>/M:<m>/threads:1` in the same run is the unpacked fast kernel's figure.
//
// One iteration: the activations are packed (pack_lhs: quantized to Q8 blocks or copied) and
// multiplied by all N weight rows, as one MUL_MAT does. At M = 1 (the GEMV entry) and M = 4 (the
// GEMM entry on four streams' decode step) it runs over `mats` copies of the packed weights
// totalling over 1 GiB, far more than the last-level cache, as MulMat does at M <= 16; at M = 512
// one copy is reused. The GEMM also runs
// on the matrices of a 135M model's prompt (SmolLM2: K = 576, N = 576, 1536, 49152) at M = 512.
//
// Counters (per second of the thread's CPU time, so that a busy machine that time-slices the one
// thread does not lower them): FLOPs = 2·M·N·K per matrix (int8 ops for the quantized
// kernels); weight_bytes = packed bytes read (once per matrix); mats = matrices per iteration;
// peak_fraction (integer vector kernels) = FLOPs / the int8 peak of the kernel's tier measured in
// this run (int8_peak.hpp).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "benchmarks.hpp"
#include "int8_peak.hpp"
#include "cpu/packed/kernel.hpp"
#include "quant/quant.hpp"

namespace tessel::bench {
namespace {

using Shape = KernelShape;

struct FreeDeleter {
    void operator()(uint8_t* p) const { std::free(p); }
};

class PackedRun {
public:
    PackedRun(const cpu::packed::Kernel& kern, const Shape& s, int64_t M) : kern_(&kern), shape_(&s), M_(M) {
        const DType t = kern.format->weight;
        std::mt19937 rng(1234);
        std::uniform_real_distribution<float> u(-1.0f, 1.0f);
        std::vector<float> f(static_cast<size_t>(s.K * s.N));
        for (float& v : f) v = u(rng);
        std::vector<uint8_t> rows(dtype_row_bytes(t, s.K) * static_cast<size_t>(s.N));
        quant::quantize_rows(t, f.data(), rows.data(), s.N, s.K);
        packed_bytes_ = (cpu::packed::rhs_packed_bytes(kern, s.N, s.K) + 63) / 64 * 64;
        mats_ = M <= kKernelStreamedM ? std::max<int64_t>(1, static_cast<int64_t>((kKernelStreamBytes + packed_bytes_ - 1) / packed_bytes_)) : 1;
        const size_t total = packed_bytes_ * static_cast<size_t>(mats_);
        weights_.reset(static_cast<uint8_t*>(std::aligned_alloc(64, total)));
        if (!weights_) throw std::bad_alloc();
        kern.format->pack(rows.data(), weights_.get(), s.N, s.K);
        for (int64_t i = 1; i < mats_; ++i) std::memcpy(weights_.get() + static_cast<size_t>(i) * packed_bytes_, weights_.get(), packed_bytes_);
        x_.resize(static_cast<size_t>(M * s.K));
        for (float& v : x_) v = u(rng);
        lhs_.resize(cpu::packed::lhs_packed_bytes(kern, M, s.K));
        dst_.resize(static_cast<size_t>(M * s.N));
    }

    bool is(const cpu::packed::Kernel& kern, const Shape& s, int64_t M) const { return kern_ == &kern && shape_ == &s && M_ == M; }

    void run() {
        const Shape& s = *shape_;
        kern_->pack_lhs(x_.data(), static_cast<size_t>(s.K) * sizeof(float), lhs_.data(), M_, s.K);
        auto* fn = M_ == 1 ? kern_->gemv : kern_->gemm;
        for (int64_t i = 0; i < mats_; ++i) {
            const cpu::packed::GemmArgs a{lhs_.data(), cpu::packed::lhs_row_bytes(*kern_, s.K), weights_.get() + static_cast<size_t>(i) * packed_bytes_,
                                          dst_.data(), static_cast<size_t>(s.N) * sizeof(float), M_, s.N, s.K};
            fn(a);
        }
        benchmark::DoNotOptimize(dst_.data());
    }
    const char* path() const { return M_ == 1 ? kern_->gemv_name : kern_->name; }
    int64_t mats() const { return mats_; }
    double flops() const { return 2.0 * static_cast<double>(M_ * shape_->N * shape_->K * mats_); }
    double weight_bytes() const { return static_cast<double>(packed_bytes_) * static_cast<double>(mats_); }

private:
    const cpu::packed::Kernel* kern_;
    const Shape* shape_;
    int64_t M_;
    size_t packed_bytes_ = 0;
    int64_t mats_ = 1;
    std::unique_ptr<uint8_t, FreeDeleter> weights_;
    std::vector<float> x_;
    std::vector<uint8_t> lhs_;
    std::vector<float> dst_;
};

/// The run for (kernel, shape, M), kept across Google Benchmark's repeated calls; the previous
/// one is freed before a new one is made.
PackedRun& packed_run(const cpu::packed::Kernel& kern, const Shape& s, int64_t M) {
    static std::unique_ptr<PackedRun> run;
    if (!run || !run->is(kern, s, M)) {
        run.reset();
        run = std::make_unique<PackedRun>(kern, s, M);
        run->run();  // warm-up
    }
    return *run;
}

void bench_packed(benchmark::State& state, const cpu::packed::Kernel& kern, const Shape& s) {
    try {
        PackedRun& run = packed_run(kern, s, state.range(0));
        const double t0 = thread_seconds();
        for (auto _ : state) run.run();
        const double seconds = thread_seconds() - t0;
        state.SetLabel(run.path());
        state.counters["FLOPs"] = benchmark::Counter(run.flops(), benchmark::Counter::kIsIterationInvariantRate);
        state.counters["weight_bytes"] = benchmark::Counter(run.weight_bytes(), benchmark::Counter::kIsIterationInvariantRate);
        state.counters["mats"] = static_cast<double>(run.mats());
        const double peak = kern.lhs == DType::F32 || kern.matrix_unit ? 0.0 : int8_peak_ops(kern.tier);
        if (peak > 0 && seconds > 0)
            state.counters["peak_fraction"] = run.flops() * static_cast<double>(state.iterations()) / seconds / peak;
    } catch (const std::exception& e) {
        state.SkipWithError(e.what());
    }
}

/// A 135M model's prompt matrices (SmolLM2-135M: hidden 576, ffn 1536, vocabulary 49152), GEMM only.
constexpr Shape kPromptShapes[] = {{"smollm2_attn", 576, 576}, {"smollm2_ffn_up", 576, 1536}, {"smollm2_output", 576, 49152}};
constexpr int64_t kPromptM = 512;

}  // namespace

void register_packed_benchmarks() {
    for (const cpu::packed::Kernel* kern : cpu::packed::all_kernels()) {
        if (!cpu::packed::usable(*kern, usable_cpu_features()) || kern->rhs_layout != cpu::packed::RhsLayout::Packed) continue;
        for (const Shape& s : kKernelShapes) {
            const std::string name = std::string("Packed/") + kern->name + "/" + s.name;
            benchmark::internal::Benchmark* b = benchmark::RegisterBenchmark(
                name.c_str(), [kern, &s](benchmark::State& state) { bench_packed(state, *kern, s); });
            b->ArgNames({"M"})->Unit(benchmark::kMillisecond);
            for (int64_t M : kKernelBatches) b->Args({M});
        }
        for (const Shape& s : kPromptShapes) {
            const std::string name = std::string("Packed/") + kern->name + "/" + s.name;
            benchmark::RegisterBenchmark(name.c_str(), [kern, &s](benchmark::State& state) { bench_packed(state, *kern, s); })
                ->ArgNames({"M"})->Unit(benchmark::kMillisecond)->Args({kPromptM});
        }
    }
}

}  // namespace tessel::bench

// MUL_MAT benchmarks: y[N, M] = x[K, M] · w[K, N]ᵀ (GGUF ne order) for every weight type that has
// a fast CPU kernel, at batch M = 1 (GEMV, a decode step), 16 and 512 (prompt processing), on 1
// and 2 threads. Named `MulMat/<type>/<shape>/M:<m>/threads:<t>`.
//
// The run takes the path a model takes: weights placed by choose_weight_buffer_type and
// allocate_weights, the graph allocated and run by the Scheduler on a CPU backend, so the kernel
// is the one the weight type's chain gives under TESSEL_CPU_ISA (shown as the label, kernel_name).
//
// Weights stream from memory at M <= 16: one iteration runs `mats` MUL_MATs, each with its own
// copy of the weights (like the layers of a model), enough copies for kStreamBytes, far more than
// the last-level cache; so weight_bytes/s is a DRAM figure, comparable with the bandwidth probe.
// At M = 512 one matrix is reused (the product is compute bound).
//
// Counters (per second of wall time): FLOPs = 2·M·N·K per MUL_MAT; weight_bytes = bytes of
// weights read (GGUF size of w, once per MUL_MAT); mats = MUL_MATs per iteration.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <exception>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "backend/scheduler.hpp"
#include "model/weights.hpp"
#include "benchmarks.hpp"
#include "cpu/cpu_backend.hpp"
#include "graph/builder.hpp"
#include "graph/op_cost.hpp"
#include "quant/quant.hpp"

namespace tessel::bench {
namespace {

struct Shape {
    const char* name;
    int64_t K, N;
};

/// A large projection (K = N = 4096, a 7B-class model's attention), and the default model's
/// (SmolLM2-135M) ffn_down, w [1536, 576]: K a multiple of 256, so every K-quant applies.
constexpr Shape kShapes[] = {{"4096x4096", 4096, 4096}, {"smollm2_ffn_down", 1536, 576}};

/// The weight types with a fast MUL_MAT kernel (src/cpu/packed/kernel.hpp chains).
constexpr DType kTypes[] = {DType::F32,  DType::F16,  DType::BF16,   DType::Q4_0,  DType::Q4_1, DType::Q5_0,
                            DType::Q5_1, DType::Q8_0, DType::IQ4_NL, DType::MXFP4, DType::Q2_K, DType::Q3_K,
                            DType::Q4_K, DType::Q5_K, DType::Q6_K,   DType::IQ4_XS};
constexpr int64_t kBatches[] = {1, 16, 512};
constexpr int64_t kThreads[] = {1, 2};

/// Weight bytes one iteration reads at M <= kStreamMaxM (bytes). 1 GiB: over 3x the largest
/// last-level cache we run on (300 MiB reported on the development VM).
constexpr uint64_t kStreamBytes = uint64_t{1} << 30;
constexpr int64_t kStreamMaxM = 16;

/// GGUF bytes of a [K, N] matrix of `type` holding uniform values in [-1, 1) (fixed seed),
/// quantized by the reference quantizer. The last matrix made is kept: the benchmarks of one
/// type and shape run one after another.
const std::vector<uint8_t>& weight_data(DType type, const Shape& s) {
    struct Cached {
        DType type = DType::F32;
        const Shape* shape = nullptr;
        std::vector<uint8_t> bytes;
    };
    static Cached c;
    if (c.shape != &s || c.type != type) {
        c.bytes.clear();
        c.bytes.shrink_to_fit();
        std::mt19937 rng(1234);
        std::uniform_real_distribution<float> u(-1.0f, 1.0f);
        std::vector<float> f(static_cast<size_t>(s.K * s.N));
        for (float& v : f) v = u(rng);
        c.bytes.resize(dtype_row_bytes(type, s.K) * static_cast<size_t>(s.N));
        quant::quantize_rows(type, f.data(), c.bytes.data(), s.N, s.K);
        c.type = type;
        c.shape = &s;
    }
    return c.bytes;
}

/// One benchmark's graph: x F32 [K, M] and `mats` weights w_i [K, N], y_i = mul_mat(w_i, x),
/// placed as a model's weights and run by a Scheduler on a CPU backend of `threads` threads.
class MulMatRun {
public:
    MulMatRun(DType type, const Shape& s, int64_t M) : type_(type), shape_(&s), M_(M) {
        const std::vector<uint8_t>& bytes = weight_data(type, s);
        mats_ = M <= kStreamMaxM ? std::max<int64_t>(1, static_cast<int64_t>((kStreamBytes + bytes.size() - 1) / bytes.size())) : 1;
        x_ = g_.new_tensor(DType::F32, {s.K, M}, "x");
        x_->flags |= kFlagInput;
        std::vector<Tensor*> ws;
        for (int64_t i = 0; i < mats_; ++i) {
            std::string name = "w";  // appended, not "w" + ...: g++ 12 reports a false -Wrestrict
            name += std::to_string(i);
            Tensor* w = g_.new_tensor(type, {s.K, s.N}, std::move(name));
            Tensor* y = build::mul_mat(g_, w, x_);
            y->flags |= kFlagOutput;
            g_.expand(y);
            ws.push_back(w);
            outs_.push_back(y);
        }
        Device& dev = cpu::cpu_device();
        BufferType& bt = choose_weight_buffer_type({&dev}, *ws[0], {outs_[0]});
        weights_ = allocate_weights(bt, ws);
        for (Tensor* w : ws) w->buffer->set_tensor(*w, bytes.data(), 0, bytes.size());
    }
    ~MulMatRun() {
        if (sched_) sched_->release();
    }
    MulMatRun(const MulMatRun&) = delete;
    MulMatRun& operator=(const MulMatRun&) = delete;

    bool is(DType type, const Shape& s, int64_t M) const { return type_ == type && shape_ == &s && M_ == M; }

    /// Runs on `threads` threads from now on (a new backend and scheduler when it changes), with
    /// one warm-up run.
    void use_threads(int threads) {
        if (threads == threads_) return;
        if (sched_) sched_->release();
        sched_.reset();
        backend_ = cpu::cpu_device().init_backend({threads});
        sched_ = std::make_unique<Scheduler>(std::vector<Backend*>{backend_.get()});
        sched_->allocate(g_);
        std::mt19937 rng(99);
        std::uniform_real_distribution<float> u(-1.0f, 1.0f);
        std::vector<float> x(static_cast<size_t>(x_->n_elements()));
        for (float& v : x) v = u(rng);
        x_->buffer->set_tensor(*x_, x.data(), 0, x.size() * sizeof(float));
        threads_ = threads;
        compute();
    }

    void compute() { sched_->compute(); }
    std::string kernel() const { return backend_->kernel_name(*outs_[0]); }
    int64_t mats() const { return mats_; }
    double flops() const { return op_flops(*outs_[0]) * static_cast<double>(mats_); }
    double weight_bytes() const { return static_cast<double>(outs_[0]->src[0]->n_bytes()) * static_cast<double>(mats_); }

private:
    DType type_;
    const Shape* shape_;
    int64_t M_;
    int64_t mats_ = 1;
    int threads_ = 0;
    Graph g_;
    Tensor* x_ = nullptr;
    std::vector<Tensor*> outs_;
    std::vector<std::unique_ptr<Buffer>> weights_;
    std::unique_ptr<Backend> backend_;
    std::unique_ptr<Scheduler> sched_;
};

/// The run for (type, shape, M), kept across Google Benchmark's repeated calls of a benchmark
/// and across thread counts; the previous one is freed before a new one is made.
MulMatRun& mul_mat_run(DType type, const Shape& s, int64_t M, int threads) {
    static std::unique_ptr<MulMatRun> run;
    if (!run || !run->is(type, s, M)) {
        run.reset();
        run = std::make_unique<MulMatRun>(type, s, M);
    }
    run->use_threads(threads);
    return *run;
}

void bench_mul_mat(benchmark::State& state, DType type, const Shape& s) {
    try {
        MulMatRun& run = mul_mat_run(type, s, state.range(0), static_cast<int>(state.range(1)));
        for (auto _ : state) run.compute();
        state.SetLabel(run.kernel());
        state.counters["FLOPs"] = benchmark::Counter(run.flops(), benchmark::Counter::kIsIterationInvariantRate);
        state.counters["weight_bytes"] = benchmark::Counter(run.weight_bytes(), benchmark::Counter::kIsIterationInvariantRate);
        state.counters["mats"] = static_cast<double>(run.mats());
    } catch (const std::exception& e) {
        state.SkipWithError(e.what());
    }
}

}  // namespace

void register_mul_mat_benchmarks() {
    for (DType type : kTypes)
        for (const Shape& s : kShapes) {
            const std::string name = std::string("MulMat/") + dtype_name(type) + "/" + s.name;
            benchmark::internal::Benchmark* b = benchmark::RegisterBenchmark(
                name.c_str(), [type, &s](benchmark::State& state) { bench_mul_mat(state, type, s); });
            b->ArgNames({"M", "threads"})->UseRealTime()->Unit(benchmark::kMillisecond);
            for (int64_t M : kBatches)
                for (int64_t t : kThreads) b->Args({M, t});
        }
}

}  // namespace tessel::bench

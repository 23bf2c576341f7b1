// NPU all-reduce (src/npu/host/allreduce.hpp, docs/npu.md "All-reduce"):
// `NpuAllReduce/<link>/<mode>/ranks:N` sums a 576 x 512 F32 tensor (the hidden size of the
// default model times a 512-token prompt) over N sessions, each its own device runtime, and waits
// for every rank. Bytes processed are the tensor's bytes per call (the "algorithm bandwidth" of
// collective benchmarks); compare with `Copy/MiB:16/threads:2` of bandwidth_bench.cpp in the same
// run (a host copy on both threads) and across N and links.
// `NpuAllReduceAdd/<fused|unfused>/ranks:N`: the same sum followed on each rank by a graph whose
// one node adds a residual (out = x + res), once with AllReduceUse::NextAdd (one ALLREDUCE_ADD op
// per rank) and once as two ops; bytes processed as above.
#include <benchmark/benchmark.h>

#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "benchmarks.hpp"
#include "graph/builder.hpp"
#include "graph/graph.hpp"
#include "npu/host/allreduce.hpp"
#include "npu/host/device.hpp"

namespace tessel::bench {
namespace {

/// The ranks of a communicator: a device each, with a stream and one buffer.
struct Ranks {
    std::vector<std::unique_ptr<npu::NpuDevice>> devices;
    std::vector<std::unique_ptr<Backend>> streams;
    std::vector<std::unique_ptr<Buffer>> buffers;
    std::vector<Backend*> stream_ptrs;

    /// Opens rank size() on `kind` with a buffer of `bytes`; returns the buffer.
    Buffer& add(npu::LinkKind kind, size_t bytes) {
        devices.push_back(std::make_unique<npu::NpuDevice>("NPU" + std::to_string(devices.size()), npu_bench_config(kind)));
        streams.push_back(devices.back()->init_backend({}));
        buffers.push_back(devices.back()->buffer_type().alloc_buffer(bytes));
        stream_ptrs.push_back(streams.back().get());
        return *buffers.back();
    }
};

void bench_allreduce(benchmark::State& state, npu::LinkKind kind, npu::AllReduceMode mode) {
    try {
        const auto n = static_cast<size_t>(state.range(0));
        Ranks ranks;
        std::vector<Tensor> tensors(n);
        std::vector<Tensor*> tensor_ptrs;
        const std::vector<float> init(576 * 512, 0.5f);
        for (size_t r = 0; r < n; ++r) {
            tensors[r].set_shape(DType::F32, {576, 512});
            Buffer& buf = ranks.add(kind, tensors[r].n_bytes());
            buf.init_tensor(tensors[r], 0);
            buf.set_tensor(tensors[r], init.data(), 0, tensors[r].n_bytes());
            tensor_ptrs.push_back(&tensors[r]);
        }
        npu::Communicator comm(ranks.stream_ptrs);
        for (auto _ : state) {
            comm.allreduce(tensor_ptrs, mode);
            for (Backend* s : ranks.stream_ptrs) s->synchronize();
        }
        state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(tensors[0].n_bytes()));
    } catch (const std::exception& e) {
        state.SkipWithError(e.what());
    }
}

void bench_allreduce_add(benchmark::State& state, bool fused) {
    try {
        const auto n = static_cast<size_t>(state.range(0));
        Ranks ranks;
        std::vector<Graph> graphs(n);
        std::vector<Tensor*> x;
        const std::vector<float> init(576 * 512, 0.5f);
        for (size_t r = 0; r < n; ++r) {
            Graph& g = graphs[r];
            Tensor* xr = g.new_tensor(DType::F32, {576, 512});
            Tensor* res = g.new_tensor(DType::F32, {576, 512});
            Tensor* out = build::add(g, xr, res);
            out->flags |= kFlagOutput;
            g.expand(out);
            Buffer& buf = ranks.add(npu::LinkKind::InProcess, 3 * xr->n_bytes());
            for (size_t i = 0; i < 3; ++i) {
                Tensor& t = i == 0 ? *xr : i == 1 ? *res : *out;
                buf.init_tensor(t, i * xr->n_bytes());
                buf.set_tensor(t, init.data(), 0, t.n_bytes());
            }
            x.push_back(xr);
        }
        npu::Communicator comm(ranks.stream_ptrs);
        for (auto _ : state) {
            comm.allreduce(x, npu::AllReduceMode::Elements, fused ? npu::AllReduceUse::NextAdd : npu::AllReduceUse::Tensors);
            for (size_t r = 0; r < n; ++r) ranks.streams[r]->graph_compute(graphs[r].nodes(), 0);
            for (Backend* s : ranks.stream_ptrs) s->synchronize();
        }
        const std::string ran = "the ADD ran as " + ranks.streams[0]->kernel_name(*graphs[0].nodes().back());
        if (ran != std::string("the ADD ran as ") + (fused ? "npu_ALLREDUCE+ADD" : "npu_ADD")) state.SkipWithError(ran.c_str());
        state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(x[0]->n_bytes()));
    } catch (const std::exception& e) {
        state.SkipWithError(e.what());
    }
}

}  // namespace

void register_npu_allreduce_benchmarks() {
    for (const bool fused : {true, false})
        benchmark::RegisterBenchmark(fused ? "NpuAllReduceAdd/fused" : "NpuAllReduceAdd/unfused", bench_allreduce_add, fused)
            ->ArgName("ranks")
            ->DenseRange(2, 4)
            ->UseRealTime();
    for (const auto& [link, kind] : {std::pair{"inproc", npu::LinkKind::InProcess}, std::pair{"process", npu::LinkKind::Process}})
        for (const auto& [mode_name, mode] : {std::pair{"1d", npu::AllReduceMode::Elements}, std::pair{"2d", npu::AllReduceMode::Rows}})
            benchmark::RegisterBenchmark((std::string("NpuAllReduce/") + link + "/" + mode_name).c_str(), bench_allreduce, kind, mode)
                ->ArgName("ranks")
                ->DenseRange(2, 4)
                ->UseRealTime();
}

}  // namespace tessel::bench

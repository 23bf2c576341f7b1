// NPU all-reduce (src/npu/host/allreduce.hpp, docs/npu.md "All-reduce"):
// `NpuAllReduce/<link>/<mode>/ranks:N` sums a 576 x 512 F32 tensor (the hidden size of the
// default model times a 512-token prompt) over N sessions, each its own device runtime, and waits
// for every rank. Bytes processed are the tensor's bytes per call (the "algorithm bandwidth" of
// collective benchmarks); compare with `Copy/MiB:16/threads:2` of bandwidth_bench.cpp in the same
// run (a host copy on both threads) and across N and links.
#include <benchmark/benchmark.h>

#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "benchmarks.hpp"
#include "npu/host/allreduce.hpp"
#include "npu/host/device.hpp"

namespace tessel::bench {
namespace {

void bench_allreduce(benchmark::State& state, npu::LinkKind kind, npu::AllReduceMode mode) {
    try {
        const auto n = static_cast<size_t>(state.range(0));
        std::vector<std::unique_ptr<npu::NpuDevice>> devices;
        std::vector<std::unique_ptr<Backend>> streams;
        std::vector<std::unique_ptr<Buffer>> buffers;
        std::vector<Tensor> tensors(n);
        std::vector<Backend*> stream_ptrs;
        std::vector<Tensor*> tensor_ptrs;
        const std::vector<float> init(576 * 512, 0.5f);
        for (size_t r = 0; r < n; ++r) {
            devices.push_back(std::make_unique<npu::NpuDevice>("NPU" + std::to_string(r), npu_bench_config(kind)));
            streams.push_back(devices.back()->init_backend({}));
            tensors[r].set_shape(DType::F32, {576, 512});
            buffers.push_back(devices.back()->buffer_type().alloc_buffer(tensors[r].n_bytes()));
            buffers.back()->init_tensor(tensors[r], 0);
            buffers.back()->set_tensor(tensors[r], init.data(), 0, tensors[r].n_bytes());
            stream_ptrs.push_back(streams.back().get());
            tensor_ptrs.push_back(&tensors[r]);
        }
        npu::Communicator comm(stream_ptrs);
        for (auto _ : state) {
            comm.allreduce(tensor_ptrs, mode);
            for (Backend* s : stream_ptrs) s->synchronize();
        }
        state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(tensors[0].n_bytes()));
    } catch (const std::exception& e) {
        state.SkipWithError(e.what());
    }
}

}  // namespace

void register_npu_allreduce_benchmarks() {
    for (const auto& [link, kind] : {std::pair{"inproc", npu::LinkKind::InProcess}, std::pair{"process", npu::LinkKind::Process}})
        for (const auto& [mode_name, mode] : {std::pair{"1d", npu::AllReduceMode::Elements}, std::pair{"2d", npu::AllReduceMode::Rows}})
            benchmark::RegisterBenchmark((std::string("NpuAllReduce/") + link + "/" + mode_name).c_str(), bench_allreduce, kind, mode)
                ->ArgName("ranks")
                ->DenseRange(2, 4)
                ->UseRealTime();
}

}  // namespace tessel::bench

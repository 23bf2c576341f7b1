// NPU link round trip (src/npu/link, docs/npu.md "Links"): `NpuLink/<link>/ops:N` submits a batch of
// N NOP ops to an open session and waits for its answer, one batch at a time: the per-batch cost
// the host pays for handing work to the device (ring push, doorbell, device wake-up, validation,
// response). ops:1 is the latency of an almost empty batch; ops:256 adds the per-op validation and
// profile records. Compare the links within one run: `process` / `inproc` is the price of the
// device living in another process. The process link starts the tessel executable named by
// TESSEL_NPU_DEVICE_EXE, else the `tessel` next to bench_kernels; a failure to open is reported as
// the benchmark's error.
#include <benchmark/benchmark.h>

#include <exception>
#include <filesystem>
#include <memory>
#include <string>

#include "benchmarks.hpp"
#include "npu/host/config.hpp"
#include "npu/host/session.hpp"

namespace tessel::bench {

npu::Config npu_bench_config(npu::LinkKind kind) {
    npu::Config cfg = npu::config_from_env();
    cfg.link = kind;
    cfg.profile = false;
    if (cfg.device_exe.empty()) {
        const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe");
        cfg.device_exe = (self.parent_path() / "tessel").string();
    }
    return cfg;
}

namespace {

void bench_link(benchmark::State& state, npu::LinkKind kind) {
    try {
        npu::Session session("NPU0", npu_bench_config(kind));
        npu::OpBatch batch(session.limits());
        for (int64_t i = 0; i < state.range(0); ++i) batch.add(TSL_NPU_OP_NOP, "NOP", {}, {}, nullptr);
        for (auto _ : state) session.wait(session.submit(batch));
        state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
    } catch (const std::exception& e) {
        state.SkipWithError(e.what());
    }
}

}  // namespace

void register_npu_link_benchmarks() {
    for (const auto& [name, kind] : {std::pair{"inproc", npu::LinkKind::InProcess}, std::pair{"process", npu::LinkKind::Process}})
        benchmark::RegisterBenchmark((std::string("NpuLink/") + name).c_str(), bench_link, kind)
            ->ArgName("ops")
            ->Arg(1)
            ->Arg(256)
            ->UseRealTime();
}

}  // namespace tessel::bench

// NPU tiled-weight conversions (src/npu/host/tiled.hpp) over every tileable weight of the default
// model, on one thread: `NpuTiled/repack` (GGUF -> 32x32 tiles, what set_tensor does when the model
// loads into NPUn), `NpuTiled/unpack` (tiles -> GGUF, what get_tensor does when the CPU takes a node
// reading a tiled weight) and `NpuTiled/memcpy` (the same GGUF bytes copied plainly, the yardstick
// for both). bytes_per_second counts the GGUF bytes. The model must be in tessel's cache (run
// `tessel run -p hi` once); otherwise each benchmark reports an error.
#include <benchmark/benchmark.h>

#include <cstring>
#include <exception>
#include <memory>
#include <vector>

#include "benchmarks.hpp"
#include "gguf/reader.hpp"
#include "npu/host/tiled.hpp"
#include "common/model_fetch.hpp"

namespace tessel::bench {
namespace {

/// The default model's tileable weights with room for their tiles and a GGUF copy.
struct ModelWeights {
    gguf::File file;
    std::vector<const gguf::TensorInfo*> tensors;
    std::vector<std::vector<uint8_t>> tiles;
    std::vector<uint8_t> plain;  ///< destination of unpack and memcpy (largest tensor)
    size_t bytes = 0;            ///< GGUF bytes of all of them

    explicit ModelWeights(gguf::File f) : file(std::move(f)) {
        size_t largest = 0;
        for (const gguf::TensorInfo& info : file.tensors()) {
            if (!npu::tiled::is_tileable(info.type)) continue;
            tensors.push_back(&info);
            tiles.emplace_back(npu::tiled::tiled_size(info.type, shape(info)));
            npu::tiled::repack(info.type, shape(info), file.tensor_data(info), tiles.back().data());
            bytes += info.size;
            largest = std::max<size_t>(largest, info.size);
        }
        plain.resize(largest);
    }
    static npu::tiled::Shape shape(const gguf::TensorInfo& i) { return {i.ne[0], i.ne[1], i.ne[2], i.ne[3]}; }
};

ModelWeights& model_weights() {
    static std::unique_ptr<ModelWeights> w;
    if (!w) {
        const auto path = tools::model_cache_dir() / tools::default_model_source().file_name;
        w = std::make_unique<ModelWeights>(gguf::File::open(path.string()));
    }
    return *w;
}

enum class Kind { Repack, Unpack, Memcpy };

void bench_tiled(benchmark::State& state, Kind kind) {
    try {
        ModelWeights& w = model_weights();
        for (auto _ : state) {
            for (size_t i = 0; i < w.tensors.size(); ++i) {
                const gguf::TensorInfo& info = *w.tensors[i];
                const uint8_t* src = w.file.tensor_data(info);
                switch (kind) {
                case Kind::Repack: npu::tiled::repack(info.type, ModelWeights::shape(info), src, w.tiles[i].data()); break;
                case Kind::Unpack:
                    npu::tiled::unpack(info.type, ModelWeights::shape(info), w.tiles[i].data(), 0, info.size, w.plain.data());
                    break;
                case Kind::Memcpy: std::memcpy(w.plain.data(), src, info.size); break;
                }
            }
            benchmark::ClobberMemory();
        }
        state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(w.bytes));
        state.counters["tensors"] = static_cast<double>(w.tensors.size());
    } catch (const std::exception& e) {
        state.SkipWithError(e.what());
    }
}

}  // namespace

void register_npu_tiled_benchmarks() {
    benchmark::RegisterBenchmark("NpuTiled/repack", bench_tiled, Kind::Repack)->Unit(benchmark::kMillisecond)->UseRealTime();
    benchmark::RegisterBenchmark("NpuTiled/unpack", bench_tiled, Kind::Unpack)->Unit(benchmark::kMillisecond)->UseRealTime();
    benchmark::RegisterBenchmark("NpuTiled/memcpy", bench_tiled, Kind::Memcpy)->Unit(benchmark::kMillisecond)->UseRealTime();
}

}  // namespace tessel::bench

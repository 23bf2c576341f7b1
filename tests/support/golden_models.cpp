#include "support/golden_models.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "common/model_fetch.hpp"

namespace tessel::test {

namespace {

// The default model's bounds, reasoned in tests/smollm2/smollm2_test.cpp. gemma3-270m is a real
// model quantized like it (activations rounded to 8 bits before every product) and is held to the
// same. The random-weight models have logits of standard deviation ~8 (make_synthetic.py), so
// their near ties are as rare as a real model's; greedy and top-1 are compared only where
// llama.cpp's margin is above 0.5 (the rule for them).
constexpr LogitBounds kRealModel{.max_nmse = 8e-2, .flip_margin = 0.5f, .max_flip_rate = 0.06, .greedy_tie = 0.5f};
constexpr LogitBounds kSynthetic = kRealModel;

// Also pinned in scripts/models.sh (gemma_sha256).
constexpr const char* kGemma3Sha256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818";

constexpr GoldenModel kModels[] = {
    {"smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", false, kRealModel},
    {"gemma3-270m", "gemma-3-270m-q4_k_m.gguf", false, kRealModel},
    {"qwen3-0.6b-shape", "synthetic/qwen3-0.6b-shape.gguf", true, kSynthetic},
    {"qwen2-0.5b-shape", "synthetic/qwen2-0.5b-shape.gguf", true, kSynthetic},
    {"llama-3.2-1b-shape", "synthetic/llama-3.2-1b-shape.gguf", true, kSynthetic},
};

}  // namespace

std::span<const GoldenModel> golden_models() { return kModels; }

const GoldenModel& golden_model(const std::string& name) {
    for (const GoldenModel& m : kModels)
        if (name == m.name) return m;
    throw std::out_of_range("no golden model named " + name);
}

std::filesystem::path golden_model_path(const GoldenModel& m) { return tools::model_cache_dir() / m.file; }

std::filesystem::path golden_reference_path(const GoldenModel& m) { return data_dir() / m.name / "reference.gguf"; }

std::string golden_model_sha256(const GoldenModel& m) {
    const std::string name = m.name;
    if (name == "smollm2") return tools::default_model_source().sha256;
    if (name == "gemma3-270m") return kGemma3Sha256;
    const auto list = data_dir() / ".." / ".." / "scripts" / "models" / "synthetic.sha256";
    std::ifstream in(list);
    const std::string file = std::filesystem::path(m.file).filename().string();
    for (std::string line; std::getline(in, line);) {
        std::istringstream words(line);
        std::string digest, listed;
        if (line.empty() || line[0] == '#' || !(words >> digest >> listed)) continue;
        if (listed == file) return digest;
    }
    throw std::runtime_error(list.string() + " has no sha256 of " + file);
}

}  // namespace tessel::test

#include "support/golden_models.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "common/model_fetch.hpp"

namespace tessel::test {

namespace {

// The default model's bounds are reasoned in tests/smollm2/smollm2_test.cpp. For the others the
// top-1 rules are wider: llama.cpp's own flash-attention-on and -off logits pick different top-1
// tokens where its top-2 margin is up to 0.56 (gemma3-270m: 1 of 611 positions with a margin above
// 0.5, qwen3-0.6b-shape: 2 of 649; none above 0.75; the synthetic files' branches are 8 times the
// embedding, which carries attention's rounding into the logits). So where tessel's top-1 differs
// llama.cpp's must lead it by less than 1.0, and greedy tokens are compared only where llama.cpp's
// margin is above 0.75 (the issue: above 0.5 at least). Full vectors: the same NMSE bound; between
// llama.cpp's two modes they are 3e-4 .. 3e-3 apart.
constexpr LogitBounds kDefaultModel{.max_nmse = 8e-2, .flip_margin = 0.5f, .max_flip_rate = 0.06, .greedy_tie = 0.5f};
constexpr LogitBounds kOtherModels{.max_nmse = 8e-2, .flip_margin = 1.0f, .max_flip_rate = 0.06, .greedy_tie = 0.75f};

// Also pinned in scripts/models.sh (gemma_sha256).
constexpr const char* kGemma3Sha256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818";

constexpr GoldenModel kModels[] = {
    {"smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", kDefaultModel},
    {"gemma3-270m", "gemma-3-270m-q4_k_m.gguf", kOtherModels},
    {"qwen3-0.6b-shape", "synthetic/qwen3-0.6b-shape.gguf", kOtherModels},
    {"qwen2-0.5b-shape", "synthetic/qwen2-0.5b-shape.gguf", kOtherModels},
    {"llama-3.2-1b-shape", "synthetic/llama-3.2-1b-shape.gguf", kOtherModels},
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

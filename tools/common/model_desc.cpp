#include "common/model_desc.hpp"

#include <map>
#include <string_view>
#include <utility>

namespace tessel::tools {
namespace {

// llama.cpp's llama_ftype values (include/llama.h) and their names (llama_ftype_name).
constexpr std::pair<uint32_t, const char*> kFileTypes[] = {
    {0, "all F32"}, {1, "F16"}, {2, "Q4_0"}, {3, "Q4_1"}, {7, "Q8_0"}, {8, "Q5_0"}, {9, "Q5_1"},
    {10, "Q2_K - Medium"}, {11, "Q3_K - Small"}, {12, "Q3_K - Medium"}, {13, "Q3_K - Large"},
    {14, "Q4_K - Small"}, {15, "Q4_K - Medium"}, {16, "Q5_K - Small"}, {17, "Q5_K - Medium"}, {18, "Q6_K"},
    {19, "IQ2_XXS - 2.0625 bpw"}, {20, "IQ2_XS - 2.3125 bpw"}, {21, "Q2_K - Small"}, {22, "IQ3_XS - 3.3 bpw"},
    {23, "IQ3_XXS - 3.0625 bpw"}, {24, "IQ1_S - 1.5625 bpw"}, {25, "IQ4_NL - 4.5 bpw"}, {26, "IQ3_S - 3.4375 bpw"},
    {27, "IQ3_S mix - 3.66 bpw"}, {28, "IQ2_S - 2.5 bpw"}, {29, "IQ2_M - 2.7 bpw"}, {30, "IQ4_XS - 4.25 bpw"},
    {31, "IQ1_M - 1.75 bpw"}, {32, "BF16"}, {36, "TQ1_0 - 1.69 bpw ternary"}, {37, "TQ2_0 - 2.06 bpw ternary"},
    {38, "MXFP4 MoE"}, {39, "NVFP4"}, {40, "Q1_0"},
};

// The file type llama.cpp assumes when a file has no general.file_type, by its most common
// tensor type (llama_model_loader; GGUF type names); other types count as all F32.
constexpr std::pair<std::string_view, uint32_t> kGuessedFileTypes[] = {
    {"F32", 0}, {"F16", 1}, {"BF16", 32}, {"Q4_0", 2}, {"Q4_1", 3}, {"Q5_0", 8},
    {"Q5_1", 9}, {"Q8_0", 7}, {"Q2_K", 10}, {"Q3_K", 12}, {"Q4_K", 15}, {"Q5_K", 17},
    {"Q6_K", 18}, {"TQ1_0", 36}, {"TQ2_0", 37}, {"IQ2_XXS", 19}, {"IQ2_XS", 20},
    {"IQ2_S", 28}, {"IQ3_XXS", 23}, {"IQ1_S", 24}, {"IQ1_M", 31}, {"IQ4_NL", 25},
    {"IQ4_XS", 30}, {"IQ3_S", 26}, {"NVFP4", 39}, {"Q1_0", 40},
};

/// The most common tensor type of `file` (the first to reach the highest count, in file order).
std::string most_common_type(const GgufFile& file) {
    std::map<std::string, int64_t, std::less<>> count;
    std::string best = "F32";
    int64_t most = 0;
    for (const GgufTensorInfo& t : file.tensors())
        if (++count[t.type] > most) most = count[t.type], best = t.type;
    return best;
}

}  // namespace

std::string file_type_name(uint32_t file_type) {
    for (const auto& [value, name] : kFileTypes)
        if (value == file_type) return name;
    return "unknown, may not work";
}

// llama.cpp's size classes (each architecture's load_arch_hparams), by layer count and width.
std::string size_class(const ModelInfo& hp) {
    if (hp.arch == "gemma3") {
        switch (hp.n_layer) {
            case 18: return "270M";
            case 26: return "1B";
            case 32: return "8B";
            case 34: return "4B";
            case 48: return "12B";
            case 62: return "27B";
            default: return "?B";
        }
    }
    if (hp.arch == "qwen2") {
        switch (hp.n_layer) {
            case 24: return hp.n_embd == 1024 ? "0.5B" : "1B";
            case 28: return hp.n_embd == 1536 ? "1.5B" : "7B";
            case 32: return "7B";
            case 36: return "3B";
            case 40: return hp.n_head == 20 ? "4B" : "13B";
            case 48: return "14B";
            case 64: return "32B";
            case 80: return "70B";
            default: return "?B";
        }
    }
    if (hp.arch == "qwen3") {
        switch (hp.n_layer) {
            case 28: return hp.n_embd == 1024 ? "0.6B" : "1.7B";
            case 36: return hp.n_embd == 2560 ? "4B" : "8B";
            case 40: return "14B";
            case 64: return "32B";
            default: return "?B";
        }
    }
    if (hp.arch != "llama") return "?B";
    switch (hp.n_layer) {
        case 16: case 22: return "1B";
        case 26: case 28: return "3B";
        case 30: return "256M";
        case 32: return hp.n_vocab == 49152 ? "3B" : hp.n_vocab < 40000 ? "7B" : "8B";
        case 36: return "8B";
        case 40: return "13B";
        case 48: return "34B";
        case 60: return "30B";
        case 80: return hp.n_head == hp.n_head_kv ? "65B" : "70B";
        default: return "?B";
    }
}

std::string model_description(const GgufFile& file, const ModelInfo& info) {
    std::string type;
    if (const GgufValue* v = file.find("general.file_type")) {
        type = file_type_name(static_cast<uint32_t>(v->as_u64()));
    } else {
        const std::string t = most_common_type(file);
        uint32_t guessed = 0;
        for (const auto& [dtype, value] : kGuessedFileTypes)
            if (dtype == t) guessed = value;
        type = "(guessed) " + file_type_name(guessed);
    }
    return info.arch + " " + size_class(info) + " " + type;
}

}  // namespace tessel::tools

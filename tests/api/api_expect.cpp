// Writes what the C API test (c_api_test.c) and the Python tests (python/tests) compare against,
// as a text file, so that neither needs to read GGUF or link C++:
//   - llama.cpp's reference data for the "english" and "non_ascii" prompts of
//     tests/data/smollm2/reference.gguf (scripts/reference/make_reference.py smollm2): the prompt
//     tokens, llama.cpp's top-1 and its margin at the last prompt position, and the last full
//     logit vector of the teacher-forced sequence;
//   - the C++ API's own results on the same model (tessel/engine.hpp, tessel/sampling.hpp), for
//     identity checks: the logits at the last prompt position and 8 greedy tokens (one thread,
//     flash attention off, so the numbers repeat exactly).
//
//   api_expect OUT_FILE      (the model: tessel's cached default model, test::smollm2_path();
//                             exit 77 when it is missing outside CI, 1 under CI)
//
// Format: one item per line, "key value...": integers and floats (%.9g, exact for float) in
// decimal, strings as lowercase hex of their bytes (they hold newlines and UTF-8).
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "core/fp16.hpp"
#include "gguf/reader.hpp"
#include "support/smollm2.hpp"
#include "tessel/engine.hpp"
#include "tessel/sampling.hpp"

namespace {

using namespace tessel;

constexpr int kGreedy = 8;

std::string hex(std::string_view s) {
    std::string out;
    char b[3];
    for (unsigned char c : s) {
        std::snprintf(b, sizeof b, "%02x", c);
        out += b;
    }
    return out;
}

template <typename T>
void put_list(std::FILE* f, const char* key, const std::vector<T>& v) {
    std::fprintf(f, "%s %zu", key, v.size());
    for (const T& x : v) {
        if constexpr (std::is_floating_point_v<T>)
            std::fprintf(f, " %.9g", static_cast<double>(x));
        else
            std::fprintf(f, " %lld", static_cast<long long>(x));
    }
    std::fprintf(f, "\n");
}

void write(std::FILE* f) {
    const gguf::File ref = gguf::File::open((test::data_dir() / "smollm2" / "reference.gguf").string());
    auto str = [&](const std::string& key) { return ref.find("tessel.reference." + key)->as_string(); };
    auto u64 = [&](const std::string& key) { return ref.find("tessel.reference." + key)->as_u64(); };
    const size_t K = u64("top_k");
    const int64_t V = static_cast<int64_t>(u64("n_vocab"));
    const std::string model_path = test::smollm2_path().string();
    std::fprintf(f, "model %s\n", hex(model_path).c_str());
    std::fprintf(f, "n_vocab %lld\n", static_cast<long long>(V));

    // Tokenization of a prompt of many scripts (llama.cpp's ids).
    {
        const auto tokens = test::reference_tensor<int32_t>(ref, "non_ascii.tokens");
        const size_t n = u64("prompt.non_ascii.n_prompt_tokens");
        std::fprintf(f, "utf8_text %s\n", hex(str("prompt.non_ascii.text")).c_str());
        put_list(f, "utf8_tokens", std::vector<int32_t>(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(n)));
    }

    const std::string name = "english", mode = name + ".fa_off";
    const auto tokens = test::reference_tensor<int32_t>(ref, name + ".tokens");
    const size_t n_prompt = u64("prompt." + name + ".n_prompt_tokens");
    const std::vector<int32_t> prompt(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(n_prompt));
    std::fprintf(f, "prompt_text %s\n", hex(str("prompt." + name + ".text")).c_str());
    put_list(f, "prompt_tokens", prompt);
    const auto top_ids = test::reference_tensor<int32_t>(ref, mode + ".top_ids");
    const auto top_logits = test::reference_tensor<float>(ref, mode + ".top_logits");
    const size_t last = n_prompt - 1;
    std::fprintf(f, "ref_top1 %d\n", top_ids[last * K]);
    std::fprintf(f, "ref_top1_margin %.9g\n", static_cast<double>(top_logits[last * K] - top_logits[last * K + 1]));
    // The last position with a full logit vector (past the prompt, in llama.cpp's greedy tokens):
    // the teacher-forced tokens up to it and the vector.
    const auto full_pos = test::reference_tensor<int32_t>(ref, mode + ".full_pos");
    const auto full = test::reference_tensor<uint16_t>(ref, mode + ".full_logits");
    const size_t k = full_pos.size() - 1, p = static_cast<size_t>(full_pos[k]);
    put_list(f, "full_tokens", std::vector<int32_t>(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(p + 1)));
    std::vector<float> want(static_cast<size_t>(V));
    for (int64_t v = 0; v < V; ++v) want[static_cast<size_t>(v)] = fp16_to_fp32(full[k * static_cast<size_t>(V) + static_cast<size_t>(v)]);
    put_list(f, "full_logits", want);

    // The C++ API on the same prompt.
    const auto model = Model::load(model_path, ModelParams{});
    ContextParams cp;
    cp.n_ctx = 256;
    cp.n_threads = 1;
    cp.flash_attn = FlashAttn::Off;
    Context ctx(model, cp);
    std::vector<BatchToken> batch;
    for (size_t i = 0; i < prompt.size(); ++i) batch.push_back({prompt[i], static_cast<int32_t>(i), 0, i + 1 == prompt.size()});
    ctx.decode(batch);
    const auto logits = ctx.logits(0);
    put_list(f, "cpp_logits", std::vector<float>(logits.begin(), logits.end()));
    SamplerParams sp;
    sp.temp = 0.0f;
    Sampler sampler(sp, static_cast<int32_t>(model->info().n_vocab));
    std::vector<int32_t> greedy;
    for (int32_t pos = static_cast<int32_t>(prompt.size()); greedy.size() < kGreedy; ++pos) {
        const int32_t t = sampler.sample(ctx.logits(0));
        sampler.accept(t);
        greedy.push_back(t);
        const BatchToken next{t, pos, 0, true};
        ctx.decode({&next, 1});
    }
    put_list(f, "cpp_greedy", greedy);
    std::fprintf(f, "cpp_greedy_text %s\n", hex(model->detokenize(greedy)).c_str());
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: api_expect OUT_FILE\n");
        return 2;
    }
    if (!std::filesystem::exists(test::smollm2_path())) {  // as TESSEL_REQUIRE_SMOLLM2: a failure under CI, else not run
        std::fprintf(stderr, "api_expect: %s: the default model %s is not in the cache (run `tessel run -p hi` once)\n",
                     test::in_ci() ? "error" : "NOT RUN", test::smollm2_path().c_str());
        return test::in_ci() ? 1 : 77;
    }
    std::FILE* f = std::fopen(argv[1], "w");
    if (!f) {
        std::perror(argv[1]);
        return 1;
    }
    try {
        write(f);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "api_expect: %s\n", e.what());
        std::fclose(f);
        return 1;
    }
    return std::fclose(f) == 0 ? 0 : 1;
}

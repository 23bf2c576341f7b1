// Structure of every golden model's tests/data/<model>/reference.gguf, llama.cpp's tokens and
// logits (written by scripts/reference/make_reference.py; the layout is documented at the top of
// that script): the default model SmolLM2-135M-Instruct Q4_1, gemma3-270m and the synthetic
// qwen3 / qwen2 / llama-3.2 files (support/golden_models.hpp). Loaded with tessel's GGUF reader;
// each file names its model's pinned sha256, and every prompt must have its token ids and, per
// attention mode, top-k arrays, a low-margin mask consistent with the top-k logits, and full logit
// vectors consistent with the top-k. Comparing tessel's own logits with these comes with the
// models (tests/smollm2, tests/models).
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/fp16.hpp"
#include "gguf/reader.hpp"
#include "support/golden_models.hpp"
#include "support/test_paths.hpp"

namespace {

using tessel::DType;
namespace gguf = tessel::gguf;

const std::string kKey = "tessel.reference.";

const gguf::Value& meta(const gguf::File& f, const std::string& key) {
    const gguf::Value* v = f.find(key);
    if (!v) throw std::runtime_error("missing metadata key " + key);
    return *v;
}

std::vector<std::string> strings(const gguf::Value& v) {
    std::vector<std::string> out;
    for (size_t i = 0; i < v.array_size(); ++i) out.emplace_back(v.string_at(i));
    return out;
}

// Tensor `name` with the given type and dims (ne order), as a vector of T.
template <typename T>
std::vector<T> tensor(const gguf::File& f, const std::string& name, DType type, std::vector<int64_t> ne) {
    const gguf::TensorInfo* info = f.find_tensor(name);
    if (!info) throw std::runtime_error("missing tensor " + name);
    ne.resize(4, 1);
    if (info->type != type) throw std::runtime_error(name + ": wrong type");
    for (int i = 0; i < 4; ++i)
        if (info->ne[i] != ne[static_cast<size_t>(i)])
            throw std::runtime_error(name + ": ne[" + std::to_string(i) + "] is " + std::to_string(info->ne[i]) +
                                     ", expected " + std::to_string(ne[static_cast<size_t>(i)]));
    std::vector<T> out(info->size / sizeof(T));
    std::memcpy(out.data(), f.tensor_data(*info), info->size);
    return out;
}

// What each model's file must hold besides the common layout.
struct Expected {
    uint64_t n_vocab;
    std::vector<std::string> prompts;
};

Expected expected(const std::string& model) {
    const std::vector<std::string> three{"english", "chat", "long"};
    if (model == "smollm2") return {49152, {"english", "code", "digits", "non_ascii", "chat", "long"}};
    if (model == "gemma3-270m") return {262144, three};
    if (model == "llama-3.2-1b-shape") return {128256, three};
    return {151936, three};  // the qwen vocabulary of both qwen files
}

class ReferenceData : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        const auto& m = tessel::test::golden_model(GetParam());
        if (!file_ || name_ != GetParam()) {
            delete file_;
            file_ = nullptr;
            file_ = new gguf::File(gguf::File::open(tessel::test::golden_reference_path(m).string()));
            name_ = GetParam();
        }
    }
    static void TearDownTestSuite() {
        delete file_;
        file_ = nullptr;
    }
    static const gguf::File& f() { return *file_; }
    static uint64_t u(const std::string& key) { return meta(f(), kKey + key).as_u64(); }

    static gguf::File* file_;
    static std::string name_;
};
gguf::File* ReferenceData::file_ = nullptr;
std::string ReferenceData::name_;

TEST_P(ReferenceData, ProvenanceAndSettings) {
    const auto& m = tessel::test::golden_model(GetParam());
    EXPECT_EQ(u("version"), 1u);
    EXPECT_EQ(meta(f(), kKey + "model.sha256").as_string(), tessel::test::golden_model_sha256(m))
        << "made from another file than the pinned one";
    EXPECT_EQ(meta(f(), kKey + "model.file").as_string(), std::filesystem::path(m.file).filename().string());
    EXPECT_EQ(meta(f(), kKey + "llama_cpp_python").as_string(), "0.3.36");
    EXPECT_EQ(u("n_vocab"), expected(GetParam()).n_vocab);
    EXPECT_EQ(u("n_generated"), 32u);
    EXPECT_EQ(u("top_k"), 10u);
    EXPECT_FLOAT_EQ(meta(f(), kKey + "margin_threshold").as_f32(), 1e-3f);
    EXPECT_EQ(strings(meta(f(), kKey + "modes")), (std::vector<std::string>{"fa_off", "fa_on"}));
    EXPECT_EQ(strings(meta(f(), kKey + "prompts")), expected(GetParam()).prompts);
}

// "long" is the GPL-3 passage: > 600 tokens, past gemma3's 512-token sliding window.
TEST_P(ReferenceData, PromptsHaveTokens) {
    const uint64_t n_vocab = u("n_vocab"), n_gen = u("n_generated");
    for (const auto& name : strings(meta(f(), kKey + "prompts"))) {
        SCOPED_TRACE(name);
        const std::string pk = "prompt." + name + ".";
        EXPECT_FALSE(meta(f(), kKey + pk + "text").as_string().empty());
        EXPECT_EQ(meta(f(), kKey + pk + "special").as_bool(), name == "chat");
        const uint64_t n_prompt = u(pk + "n_prompt_tokens"), n = u(pk + "n_tokens");
        EXPECT_GE(n_prompt, name == "long" ? 600u : 8u);
        EXPECT_EQ(n, n_prompt + n_gen);
        const uint64_t eog = u(pk + "first_eog");
        EXPECT_GE(eog, n_prompt);
        EXPECT_LE(eog, n);
        EXPECT_FALSE(meta(f(), kKey + pk + "continuation").as_string().empty());
        for (int32_t id : tensor<int32_t>(f(), name + ".tokens", DType::I32, {static_cast<int64_t>(n)})) {
            EXPECT_GE(id, 0);
            EXPECT_LT(static_cast<uint64_t>(id), n_vocab);
        }
    }
}

TEST_P(ReferenceData, GreedyContinuations) {
    const int64_t n_gen = static_cast<int64_t>(u("n_generated"));
    for (const auto& name : strings(meta(f(), kKey + "prompts"))) {
        SCOPED_TRACE(name);
        const std::string pk = "prompt." + name + ".";
        const int64_t n = static_cast<int64_t>(u(pk + "n_tokens"));
        const auto tokens = tensor<int32_t>(f(), name + ".tokens", DType::I32, {n});
        const std::vector<int32_t> generated(tokens.end() - n_gen, tokens.end());
        // The sequence continues with the greedy tokens of the flash-attention-off run.
        EXPECT_EQ(tensor<int32_t>(f(), name + ".fa_off.greedy", DType::I32, {n_gen}), generated);
        for (int32_t id : tensor<int32_t>(f(), name + ".fa_on.greedy", DType::I32, {n_gen}))
            EXPECT_TRUE(id >= 0 && static_cast<uint64_t>(id) < u("n_vocab"));
    }
}

TEST_P(ReferenceData, TopKMarginsAndFullVectorsAgree) {
    const int64_t n_vocab = static_cast<int64_t>(u("n_vocab")), k = static_cast<int64_t>(u("top_k"));
    const float margin = meta(f(), kKey + "margin_threshold").as_f32();
    for (const auto& mode : strings(meta(f(), kKey + "modes"))) {
        int64_t full_vectors = 0;
        for (const auto& name : strings(meta(f(), kKey + "prompts"))) {
            SCOPED_TRACE(name + " " + mode);
            const std::string pk = "prompt." + name + ".";
            const int64_t n = static_cast<int64_t>(u(pk + "n_tokens"));
            const int64_t n_prompt = static_cast<int64_t>(u(pk + "n_prompt_tokens"));
            const std::string tn = name + "." + mode + ".";
            const auto tokens = tensor<int32_t>(f(), name + ".tokens", DType::I32, {n});
            const auto ids = tensor<int32_t>(f(), tn + "top_ids", DType::I32, {k, n});
            const auto logits = tensor<float>(f(), tn + "top_logits", DType::F32, {k, n});
            const auto low = tensor<int8_t>(f(), tn + "low_margin", DType::I8, {n});

            int64_t disagree = 0;
            for (int64_t t = 0; t < n; ++t) {
                const int32_t* id = &ids[static_cast<size_t>(t * k)];
                const float* l = &logits[static_cast<size_t>(t * k)];
                EXPECT_EQ(std::set<int32_t>(id, id + k).size(), static_cast<size_t>(k)) << "position " << t;
                for (int64_t j = 0; j < k; ++j) {
                    EXPECT_TRUE(std::isfinite(l[j]));
                    EXPECT_TRUE(id[j] >= 0 && id[j] < n_vocab);
                    if (j > 0) {
                        EXPECT_LE(l[j], l[j - 1]) << "position " << t;
                    }
                }
                EXPECT_EQ(low[static_cast<size_t>(t)], l[0] - l[1] < margin ? 1 : 0) << "position " << t;
                if (t >= n_prompt - 1 && t + 1 < n && id[0] != tokens[static_cast<size_t>(t + 1)]) ++disagree;
            }
            EXPECT_EQ(disagree, static_cast<int64_t>(u(pk + mode + ".greedy_disagree")));

            const tessel::gguf::TensorInfo* pos_info = f().find_tensor(tn + "full_pos");
            ASSERT_NE(pos_info, nullptr);
            const int64_t n_full = pos_info->ne[0];
            const auto pos = tensor<int32_t>(f(), tn + "full_pos", DType::I32, {n_full});
            const auto full = tensor<uint16_t>(f(), tn + "full_logits", DType::F16, {n_vocab, n_full});
            full_vectors += n_full;
            for (int64_t i = 0; i < n_full; ++i) {
                const int32_t t = pos[static_cast<size_t>(i)];
                ASSERT_TRUE(t >= 0 && t < n);
                if (i > 0) {
                    EXPECT_GT(t, pos[static_cast<size_t>(i - 1)]);
                }
                const uint16_t* row = &full[static_cast<size_t>(i * n_vocab)];
                const int32_t* id = &ids[static_cast<size_t>(t * k)];
                const float* l = &logits[static_cast<size_t>(t * k)];
                // fp16 rounding is monotonic: the top-k entries round to the stored F32 logits and
                // no other entry rounds above the k-th one.
                for (int64_t j = 0; j < k; ++j)
                    EXPECT_EQ(row[id[j]], tessel::fp32_to_fp16(l[j])) << "position " << t << " rank " << j;
                const std::set<int32_t> top(id, id + k);
                const float kth = tessel::fp16_to_fp32(tessel::fp32_to_fp16(l[k - 1]));
                for (int64_t v = 0; v < n_vocab; ++v) {
                    if (!top.count(static_cast<int32_t>(v))) {
                        ASSERT_LE(tessel::fp16_to_fp32(row[v]), kth) << v;
                    }
                }
            }
        }
        EXPECT_GE(full_vectors, static_cast<int64_t>(strings(meta(f(), kKey + "prompts")).size())) << mode;
    }
}

std::vector<std::string> golden_names() {
    std::vector<std::string> out;
    for (const auto& m : tessel::test::golden_models()) out.emplace_back(m.name);
    return out;
}

INSTANTIATE_TEST_SUITE_P(Models, ReferenceData, ::testing::ValuesIn(golden_names()), [](const auto& info) {
    std::string name = info.param;
    for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    return name;
});

}  // namespace

// Model files whose hyper-parameters or weight types are wrong: each is refused at load with one
// error that names the file and the key or tensor (never a run that prints garbage, never a
// message about an unnamed tensor). The files are a tiny random llama rewritten with one change.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "cpu/cpu_backend.hpp"
#include "gguf/reader.hpp"
#include "gguf/writer.hpp"
#include "model/model.hpp"
#include "support/test_paths.hpp"
#include "support/tiny_llama.hpp"
#include "tessel/engine.hpp"
#include "tessel/errors.hpp"

namespace tessel {
namespace {

struct Change {
    Change(std::map<std::string, gguf::Value> k = {}, std::string t = "", DType ty = DType::F32)
        : keys(std::move(k)), tensor(std::move(t)), type(ty) {}
    std::map<std::string, gguf::Value> keys;  ///< metadata set or replaced
    std::string tensor;                       ///< a tensor given `type` (zero data), "" = none
    DType type;
};

/// The tiny llama with `c` applied, written as `name` in the test's folder.
std::string rewritten(const std::string& name, const Change& c) {
    const auto dir = test::temp_dir();
    const gguf::File src = gguf::File::open(test::write_tiny_llama(dir / "base.gguf").string());
    gguf::Writer w;
    for (const auto& kv : src.metadata())
        if (kv.key != "general.alignment" && !c.keys.count(kv.key)) w.set(kv.key, kv.value);
    for (const auto& [k, v] : c.keys) w.set(k, v);
    for (const auto& t : src.tensors()) {
        std::vector<int64_t> ne(t.ne, t.ne + t.n_dims);
        if (t.name != c.tensor) {
            w.add_tensor(t.name, t.type, ne, src.tensor_data(t), t.size);
            continue;
        }
        const DTypeInfo& info = dtype_info(c.type);
        int64_t n = 1;
        for (int64_t d : ne) n *= d;
        const std::vector<uint8_t> zeros(static_cast<size_t>(n / info.block_size * info.block_bytes));
        w.add_tensor(t.name, c.type, ne, zeros.data(), zeros.size());
    }
    const std::string path = (dir / name).string();
    w.write_file(path);
    return path;
}

struct Case {
    const char* name;
    Change change;
    ErrorCode code;
    const char* message;  ///< regex the whole message must match
};

std::vector<Case> cases() {
    using gguf::Value;
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    return {
        {"eps_inf", {{{"llama.attention.layer_norm_rms_epsilon", Value::f32(inf)}}}, ErrorCode::BadModel,
         "eps_inf.gguf: key llama.attention.layer_norm_rms_epsilon = inf is out of range \\(a finite number from 1e-30 to 1\\)"},
        {"eps_nan", {{{"llama.attention.layer_norm_rms_epsilon", Value::f32(nan)}}}, ErrorCode::BadModel,
         "eps_nan.gguf: key llama.attention.layer_norm_rms_epsilon = nan is out of range.*"},
        {"eps_zero", {{{"llama.attention.layer_norm_rms_epsilon", Value::f32(0)}}}, ErrorCode::BadModel,
         "eps_zero.gguf: key llama.attention.layer_norm_rms_epsilon = 0 is out of range.*"},
        {"rope_base_inf", {{{"llama.rope.freq_base", Value::f32(inf)}}}, ErrorCode::BadModel,
         "rope_base_inf.gguf: key llama.rope.freq_base = inf is out of range \\(a finite number from 1 to 1e\\+12\\)"},
        {"rope_factor_tiny",
         {{{"llama.rope.scaling.type", Value::string("linear")}, {"llama.rope.scaling.factor", Value::f32(1e-38f)}}},
         ErrorCode::BadModel, "rope_factor_tiny.gguf: key llama.rope.scaling.factor = .* is out of range.*"},
        {"heads_huge", {{{"llama.attention.head_count", Value::u32(1u << 31)}}}, ErrorCode::BadModel,
         "heads_huge.gguf: key llama.attention.head_count = 2147483648 is out of range \\(1 to 4096\\)"},
        {"key_length_huge", {{{"llama.attention.key_length", Value::u64(uint64_t{1} << 40)}}}, ErrorCode::BadModel,
         "key_length_huge.gguf: key llama.attention.key_length = 1099511627776 is out of range \\(1 to 16384\\)"},
        {"head_product",
         {{{"llama.attention.head_count", Value::u32(4096)}, {"llama.attention.head_count_kv", Value::u32(4096)},
           {"llama.embedding_length", Value::u32(4096)},
           {"llama.attention.key_length", Value::u32(16384)}}},
         ErrorCode::BadModel,
         "head_product.gguf: keys llama.attention.head_count x llama.attention.key_length = 67108864 is out of range.*"},
        {"kv_heads_not_dividing", {{{"llama.attention.head_count_kv", Value::u32(3)}}}, ErrorCode::BadModel,
         "kv_heads_not_dividing.gguf: key llama.attention.head_count_kv = 3 does not divide llama.attention.head_count = 4"},
        {"context_zero", {{{"llama.context_length", Value::u32(0)}}}, ErrorCode::BadModel,
         "context_zero.gguf: key llama.context_length = 0 is out of range \\(1 to 16777216\\)"},
        // FLOAT64 values beyond float's range (their conversion is undefined) and below it.
        {"rope_base_f64_huge", {{{"llama.rope.freq_base", Value::f64(1e300)}}}, ErrorCode::BadModel,
         "rope_base_f64_huge.gguf: key llama.rope.freq_base = 1e\\+300 is out of range.*"},
        {"rope_base_f64_tiny", {{{"llama.rope.freq_base", Value::f64(1e-300)}}}, ErrorCode::BadModel,
         "rope_base_f64_tiny.gguf: key llama.rope.freq_base = 1e-300 is out of range.*"},
        {"rope_factor_denormal",
         {{{"llama.rope.scaling.type", Value::string("linear")}, {"llama.rope.scaling.factor", Value::f32(1e-45f)}}},
         ErrorCode::BadModel, "rope_factor_denormal.gguf: key llama.rope.scaling.factor = .* is out of range.*"},
        {"rope_factor_inf", {{{"llama.rope.scaling.factor", Value::f32(inf)}}}, ErrorCode::BadModel,
         "rope_factor_inf.gguf: key llama.rope.scaling.factor = inf is out of range.*"},
        // Positions and rope's n_ctx_orig are int32: a longer context was truncated when the graph was built.
        {"context_beyond_int32", {{{"llama.context_length", Value::u64(uint64_t{1} << 32)}}}, ErrorCode::BadModel,
         "context_beyond_int32.gguf: key llama.context_length = 4294967296 is out of range \\(1 to 16777216\\)"},
        // A row length the weights' type (Q8_0, blocks of 32) cannot hold.
        {"embedding_not_whole_blocks", {{{"llama.embedding_length", Value::u32(48)}}}, ErrorCode::BadModel,
         "embedding_not_whole_blocks.gguf: tensor 'token_embd.weight' has shape \\[128, 160, 1, 1\\], the "
         "hyper-parameters expect \\[48, 160, 1, 1\\]"},
        {"eps_string", {{{"llama.attention.layer_norm_rms_epsilon", Value::string("small")}}}, ErrorCode::BadModel,
         "eps_string.gguf: key llama.attention.layer_norm_rms_epsilon must be a float, found .*"},
        // An embedding length that divides by the heads but does not fit the tensors: the tensor is named.
        {"embedding_mismatch",
         {{{"llama.embedding_length", Value::u32(640)}, {"llama.attention.head_count", Value::u32(5)},
           {"llama.attention.head_count_kv", Value::u32(5)}}},
         ErrorCode::BadModel,
         "embedding_mismatch.gguf: tensor 'token_embd.weight' has shape \\[128, 160, 1, 1\\], the hyper-parameters "
         "expect \\[640, 160, 1, 1\\]"},
        {"int_weight", {{}, "blk.0.attn_q.weight", DType::I32}, ErrorCode::BadModel,
         "int_weight.gguf: tensor 'blk.0.attn_q.weight' has the integer type I32, expected a float or quantized weight type"},
        {"int_embedding", {{}, "token_embd.weight", DType::I8}, ErrorCode::BadModel,
         "int_embedding.gguf: tensor 'token_embd.weight' has the integer type I8, expected .*"},
        {"unsupported_type", {{}, "blk.1.ffn_down.weight", DType::IQ2_XXS}, ErrorCode::Unsupported,
         "unsupported_type.gguf: tensor 'blk.1.ffn_down.weight': type IQ2_XXS is not supported"},
    };
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class LoadErrors : public ::testing::TestWithParam<Case> {};

TEST_P(LoadErrors, NamesTheFileAndTheKeyOrTensor) {
    const Case& c = GetParam();
    const std::string path = rewritten(std::string(c.name) + ".gguf", c.change);
    try {
        model::Model::load(path, {&cpu::cpu_device()});
        FAIL() << c.name << ": loaded";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), c.code) << e.what();
        const std::string msg = e.what();
        EXPECT_TRUE(msg.starts_with(test::temp_dir().string() + "/")) << msg;
        const std::string rest = msg.substr(test::temp_dir().string().size() + 1);
        EXPECT_TRUE(std::regex_match(rest, std::regex(c.message))) << rest << "\n  expected: " << c.message;
    }
}

INSTANTIATE_TEST_SUITE_P(Files, LoadErrors, ::testing::ValuesIn(cases()), [](const auto& info) { return std::string(info.param.name); });

TEST(LoadErrors, TheUnchangedFileLoads) {
    EXPECT_NO_THROW(model::Model::load(rewritten("unchanged.gguf", {}), {&cpu::cpu_device()}));
}

// The ends of each float range load.
TEST(LoadErrors, FloatsAtTheEndsOfTheirRangesLoad) {
    using gguf::Value;
    for (const auto& keys : std::vector<std::map<std::string, Value>>{
             {{"llama.attention.layer_norm_rms_epsilon", Value::f32(1e-30f)}, {"llama.rope.freq_base", Value::f64(1e12)},
              {"llama.rope.scaling.type", Value::string("linear")}, {"llama.rope.scaling.factor", Value::f32(1024)}},
             {{"llama.attention.layer_norm_rms_epsilon", Value::f32(1)}, {"llama.rope.freq_base", Value::f32(1)},
              {"llama.rope.scaling.type", Value::string("linear")}, {"llama.rope.scaling.factor", Value::f32(1.0f / 1024)}}})
        EXPECT_NO_THROW(model::Model::load(rewritten("float-ends.gguf", Change(keys)), {&cpu::cpu_device()}));
}

// Every 2-D weight an integer type (the tiny llama fills them with seeded bytes).
TEST(LoadErrors, IntegerMatrixWeightsAreRefused) {
    test::TinyLlamaOptions opt;
    opt.matrix_type = DType::I32;
    const std::string path = test::write_tiny_llama(test::temp_dir() / "tiny-i32.gguf", opt).string();
    try {
        model::Model::load(path, {&cpu::cpu_device()});
        FAIL() << "loaded";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::BadModel);
        EXPECT_EQ(std::string(e.what()), path + ": tensor 'token_embd.weight' has the integer type I32, expected a float or quantized weight type");
    }
}

// A file truncated after its tensor table was read (the reader's test hook cuts it in half right
// after parsing): reading the weights ends in an error naming the tensor, not a SIGBUS.
class TruncatedWhileLoading : public ::testing::TestWithParam<std::string> {
protected:
    void TearDown() override { gguf::detail::set_after_parse_hook(nullptr); }
};

TEST_P(TruncatedWhileLoading, IsAnErrorNamingTheTensor) {
    test::TinyLlamaOptions opt;
    opt.vocab = true;  // the public API loads the tokenizer too
    const std::string path = test::write_tiny_llama(test::temp_dir() / "truncated.gguf", opt).string();
    const auto full = std::filesystem::file_size(path);
    gguf::detail::set_after_parse_hook([](const std::string& p) {
        std::filesystem::resize_file(p, std::filesystem::file_size(p) / 2);
    });
    try {
        Model::load(path, GetParam());
        FAIL() << "loaded a file truncated to half";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::Io) << e.what();
        const std::string expected = path + ": tensor '.*': the file ends at byte " + std::to_string(full / 2) +
                                     ", the tensor needs bytes [0-9]+\\.\\.[0-9]+ \\(the file was truncated or replaced after it was opened\\)";
        EXPECT_TRUE(std::regex_match(std::string(e.what()), std::regex(expected))) << e.what();
    }
    gguf::detail::set_after_parse_hook(nullptr);
    std::filesystem::resize_file(path, full / 2);
    EXPECT_THROW(Model::load(path, GetParam()), Error) << "a file that is truncated before it is opened";
}

INSTANTIATE_TEST_SUITE_P(Devices, TruncatedWhileLoading, ::testing::Values("cpu", "npu"));

}  // namespace
}  // namespace tessel

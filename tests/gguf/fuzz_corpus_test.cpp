// The seed corpus of the fuzz_gguf target (tests/fuzz/corpus/*.bin): small valid GGUF files made
// by the writer. This test checks that the committed seeds equal what the generator below makes
// and that each parses. To regenerate them after a format change, run:
//   TESSEL_REGEN_FUZZ_CORPUS=1 <build>/tests/test_gguf --gtest_filter='GgufFuzzCorpus.*'
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "gguf_test_util.hpp"
#include "support/test_paths.hpp"

using namespace tessel;
using namespace tessel::gguf;
using namespace tessel::gguf::testing;

namespace {

struct Seed {
    const char* file;
    Bytes bytes;
};

std::vector<uint8_t> ramp(size_t n) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 7 + 3);
    return v;
}

std::vector<Seed> make_seeds() {
    std::vector<Seed> seeds;
    seeds.push_back({"minimal.bin", Writer().to_bytes()});
    {
        Writer w;
        w.set("general.architecture", Value::string("llama"));
        w.set("general.name", Value::string("seed \xF0\x9F\xA6\x99"));
        w.set("a.u8", Value::u8(200));
        w.set("a.i8", Value::i8(-7));
        w.set("a.u16", Value::u16(60000));
        w.set("a.i16", Value::i16(-1234));
        w.set("a.u32", Value::u32(123456));
        w.set("a.i32", Value::i32(-654321));
        w.set("a.u64", Value::u64(1ull << 40));
        w.set("a.i64", Value::i64(-(1ll << 41)));
        w.set("a.f32", Value::f32(0.125f));
        w.set("a.f64", Value::f64(-2.5));
        w.set("a.bool", Value::boolean(true));
        w.set("a.empty", Value::string(""));
        w.set("a.arr_empty", Value::array(ValueType::INT64, {}));
        w.set("a.nested", Value::array(ValueType::ARRAY, {Value::i32s({1, 2}), Value::strings({"q"})}));
        seeds.push_back({"metadata.bin", w.to_bytes()});
    }
    {
        Writer w;
        w.set("general.architecture", Value::string("test"));
        w.set("general.file_type", Value::u32(7));
        auto f32 = ramp(4 * 8 * 2), f16 = ramp(2 * 16), q8 = ramp(34 * 2), q4k = ramp(144), iq2 = ramp(66);
        w.add_tensor("token_embd.weight", DType::F32, {8, 2}, f32.data(), f32.size());
        w.add_tensor("output_norm.weight", DType::F16, {16}, f16.data(), f16.size());
        w.add_tensor("blk.0.ffn_up.weight", DType::Q8_0, {32, 1, 2}, q8.data(), q8.size());
        w.add_tensor("blk.0.ffn_down.weight", DType::Q4_K, {256}, q4k.data(), q4k.size());
        w.add_tensor("blk.0.ffn_gate.weight", DType::IQ2_XXS, {256, 1, 1, 1}, iq2.data(), iq2.size());
        seeds.push_back({"tensors.bin", w.to_bytes()});
    }
    {
        Writer w;
        w.set_alignment(64);
        w.set("general.architecture", Value::string("qwen3"));
        auto x = ramp(2 * 24);
        w.add_tensor("x", DType::BF16, {24}, x.data(), x.size());
        w.add_tensor("y", DType::I8, {5}, x.data(), 5);
        seeds.push_back({"aligned64_v2.bin", w.to_bytes(2)});
    }
    {
        Writer w;
        w.set("general.architecture", Value::string("llama"));
        w.set("tokenizer.ggml.model", Value::string("gpt2"));
        w.set("tokenizer.ggml.tokens", Value::strings({"<s>", "</s>", "a", "b", "ab", "\xC4\xA0the"}));
        w.set("tokenizer.ggml.scores", Value::f32s({0, 0, -1, -2, -3, -4}));
        w.set("tokenizer.ggml.token_type", Value::i32s({3, 3, 1, 1, 1, 1}));
        w.set("tokenizer.ggml.merges", Value::strings({"a b", "\xC4\xA0 the"}));
        w.set("tokenizer.ggml.bos_token_id", Value::u32(0));
        w.set("tokenizer.ggml.eos_token_id", Value::u32(1));
        w.set("tokenizer.chat_template", Value::string("{% for m in messages %}{{ m.content }}{% endfor %}"));
        seeds.push_back({"vocab.bin", w.to_bytes()});
    }
    return seeds;
}

std::filesystem::path corpus_dir() {
    return tessel::test::data_dir().parent_path() / "fuzz" / "corpus";
}

Bytes read_all(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

TEST(GgufFuzzCorpus, SeedsAreCurrentAndValid) {
    const auto seeds = make_seeds();
    const char* regen = std::getenv("TESSEL_REGEN_FUZZ_CORPUS");
    if (regen && *regen) {
        std::filesystem::create_directories(corpus_dir());
        for (const Seed& s : seeds) {
            std::ofstream out(corpus_dir() / s.file, std::ios::binary | std::ios::trunc);
            out.write(reinterpret_cast<const char*>(s.bytes.data()), static_cast<std::streamsize>(s.bytes.size()));
            ASSERT_TRUE(out.good()) << "cannot write " << (corpus_dir() / s.file);
        }
    }
    size_t total = 0;
    for (const Seed& s : seeds) {
        const auto path = corpus_dir() / s.file;
        ASSERT_TRUE(std::filesystem::exists(path)) << path << " missing; regenerate with TESSEL_REGEN_FUZZ_CORPUS=1";
        Bytes on_disk = read_all(path);
        EXPECT_EQ(on_disk, s.bytes) << path << " is stale; regenerate with TESSEL_REGEN_FUZZ_CORPUS=1";
        File f = File::from_memory(on_disk.data(), on_disk.size(), path.string());
        EXPECT_GE(f.version(), 2u);
        total += on_disk.size();
    }
    EXPECT_LT(total, 8u * 1024) << "keep the seed corpus small";
}

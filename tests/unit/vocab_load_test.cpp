// Vocab::load: tokenizer.ggml.* keys read from GGUF metadata, and a clear error naming the key
// for every missing, mistyped or inconsistent one.
#include <gtest/gtest.h>

#include "tessel/errors.hpp"
#include "vocab/pretokenize.hpp"
#include "vocab_test_util.hpp"

namespace tessel::vocab {
namespace {

using gguf::Value;
using test::TinyVocab;

/// Loading `w` fails with `code` and a message naming `key` (and containing `also`).
void expect_error(const gguf::Writer& w, ErrorCode code, const std::string& key, const std::string& also = "") {
    try {
        test::load(w);
        ADD_FAILURE() << "no error, expected one about " << key;
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), code) << e.what();
        const std::string msg = e.what();
        EXPECT_NE(msg.find("tiny.gguf: " + key), std::string::npos) << msg;
        EXPECT_NE(msg.find(also), std::string::npos) << msg;
    }
}

TEST(VocabLoad, ReadsTokensTypesMergesAndSpecialIds) {
    TinyVocab tv;
    const TokenId he = tv.add("he");
    const TokenId end = tv.add("<|end|>", TokenType::Control);
    tv.merges = {"h e"};
    gguf::Writer w = tv.writer("llama-bpe");
    w.set("tokenizer.ggml.bos_token_id", Value::u32(static_cast<uint32_t>(end)));
    w.set("tokenizer.ggml.eos_token_id", Value::u32(static_cast<uint32_t>(end)));
    w.set("tokenizer.ggml.eot_token_id", Value::i32(he));
    w.set("tokenizer.ggml.padding_token_id", Value::u32(0));
    w.set("tokenizer.ggml.add_eos_token", Value::boolean(true));
    const Vocab v = test::load(w);  // no tensors: a vocab-only file

    EXPECT_EQ(v.model(), VocabModel::Bpe);
    EXPECT_EQ(v.pre(), "llama-bpe");
    EXPECT_TRUE(v.pre_tokenizer().ignore_merges);
    EXPECT_EQ(v.size(), 258);
    EXPECT_EQ(v.text(he), "he");
    EXPECT_EQ(v.type(end), TokenType::Control);
    EXPECT_EQ(v.find("<|end|>"), end);
    EXPECT_EQ(v.find("nope"), kNoToken);
    ASSERT_EQ(v.merges().size(), 1u);
    EXPECT_EQ(v.merges()[0], std::make_pair(std::string("h"), std::string("e")));
    EXPECT_EQ(v.bos(), end);
    EXPECT_EQ(v.eos(), end);
    EXPECT_EQ(v.pad(), 0);
    EXPECT_EQ(v.eot(), he);
    EXPECT_EQ(v.unk(), kNoToken);
    EXPECT_TRUE(v.add_bos());  // llama3's default when the key is absent
    EXPECT_TRUE(v.add_eos());
}

TEST(VocabLoad, DefaultsWhenOptionalKeysAreAbsent) {
    TinyVocab tv;
    gguf::Writer w;
    w.set("tokenizer.ggml.model", Value::string("gpt2"));
    w.set("tokenizer.ggml.tokens", Value::strings(tv.tokens));
    w.set("tokenizer.ggml.merges", Value::strings({}));
    const Vocab v = test::load(w);
    EXPECT_EQ(v.pre(), "default");
    EXPECT_EQ(v.type(5), TokenType::Normal);
    EXPECT_FALSE(v.add_bos());
    EXPECT_FALSE(v.add_eos());
    EXPECT_EQ(v.bos(), kNoToken);
}

TEST(VocabLoad, UnsupportedModelsAndPreTokenizersNameTheValue) {
    TinyVocab tv;
    gguf::Writer w = tv.writer();
    w.set("tokenizer.ggml.model", Value::string("t5"));
    expect_error(w, ErrorCode::Unsupported, "tokenizer.ggml.model", "'t5' (supported: gpt2, llama, gemma4)");
    w.set("tokenizer.ggml.model", Value::string("bert"));
    expect_error(w, ErrorCode::Unsupported, "tokenizer.ggml.model", "'bert'");
    w = tv.writer("no-such-pre");
    expect_error(w, ErrorCode::Unsupported, "tokenizer.ggml.pre", "'no-such-pre'");
    try {
        test::load(w);
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(supported_pre_tokenizers()), std::string::npos) << e.what();
    }
}

TEST(VocabLoad, MissingAndMistypedKeys) {
    TinyVocab tv;
    gguf::Writer w;
    w.set("general.architecture", Value::string("llama"));
    expect_error(w, ErrorCode::InvalidArgument, "tokenizer.ggml.model", "missing");
    w = tv.writer();
    w.set("tokenizer.ggml.tokens", Value::strings({}));
    expect_error(w, ErrorCode::InvalidArgument, "tokenizer.ggml.tokens", "empty");
    // Keys the GGUF reader does not type-check itself.
    w = tv.writer();
    w.set("tokenizer.ggml.add_bos_token", Value::u8(1));
    expect_error(w, ErrorCode::GgufWrongValueType, "tokenizer.ggml.add_bos_token", "expected BOOL, got UINT8");
    w = tv.writer();
    w.set("tokenizer.ggml.eot_token_id", Value::string("1"));
    expect_error(w, ErrorCode::GgufWrongValueType, "tokenizer.ggml.eot_token_id", "expected an integer, got STRING");
    w = tv.writer();
    w.set("tokenizer.ggml.padding_token_id", Value::f32(1.0f));
    expect_error(w, ErrorCode::GgufWrongValueType, "tokenizer.ggml.padding_token_id");
    gguf::Writer no_merges;
    no_merges.set("tokenizer.ggml.model", Value::string("gpt2"));
    no_merges.set("tokenizer.ggml.tokens", Value::strings(tv.tokens));
    expect_error(no_merges, ErrorCode::InvalidArgument, "tokenizer.ggml.merges", "missing");
}

TEST(VocabLoad, InconsistentContent) {
    TinyVocab tv;
    gguf::Writer w = tv.writer();
    w.set("tokenizer.ggml.token_type", Value::i32s({1, 1}));
    expect_error(w, ErrorCode::InvalidArgument, "tokenizer.ggml.token_type", "2 entries for 256 tokens");
    std::vector<int32_t> types(256, 1);
    types[7] = 9;
    w.set("tokenizer.ggml.token_type", Value::i32s(types));
    expect_error(w, ErrorCode::InvalidArgument, "tokenizer.ggml.token_type", "token 7 has unknown type 9");
    w = tv.writer();
    w.set("tokenizer.ggml.merges", Value::strings({"a b", "ab"}));
    expect_error(w, ErrorCode::InvalidArgument, "tokenizer.ggml.merges", "entry 1");
    w = tv.writer();
    w.set("tokenizer.ggml.eos_token_id", Value::u32(256));
    expect_error(w, ErrorCode::InvalidArgument, "tokenizer.ggml.eos_token_id", "token id 256 is outside");
    w = tv.writer();
    w.set("tokenizer.ggml.eot_token_id", Value::i32(-1));
    expect_error(w, ErrorCode::InvalidArgument, "tokenizer.ggml.eot_token_id", "token id -1");
    w = tv.writer();
    w.set("tokenizer.ggml.add_bos_token", Value::boolean(true));
    expect_error(w, ErrorCode::InvalidArgument, "tokenizer.ggml.add_bos_token", "bos_token_id is missing");
    w = tv.writer();
    w.set("tokenizer.ggml.add_eos_token", Value::boolean(true));
    expect_error(w, ErrorCode::InvalidArgument, "tokenizer.ggml.add_eos_token", "eos_token_id is missing");
}

// A UINT64 id beyond int64 (found by fuzz_model_load; the reader fixes the type of the BOS and EOS
// ids only): Value::as_i64 threw an error that named neither the file nor the key ("GGUF UINT64
// value ... does not fit in int64").
TEST(VocabLoad, Uint64IdBeyondInt64NamesTheKey) {
    TinyVocab tv;
    for (const char* key : {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.padding_token_id", "tokenizer.ggml.unknown_token_id"}) {
        gguf::Writer w = tv.writer();
        w.set(key, Value::u64(~uint64_t{0}));
        expect_error(w, ErrorCode::InvalidArgument, key, "token id 18446744073709551615 is outside");
    }
}

TEST(VocabLoad, MergeSplitsAtTheFirstSpaceAfterTheFirstByte) {
    TinyVocab tv;
    tv.merges = {"  x"};  // left " " (a raw space, as non-byte-level vocabs may have), right "x"
    const Vocab v = test::load(tv.writer());
    EXPECT_EQ(v.merges()[0], std::make_pair(std::string(" "), std::string("x")));
}

}  // namespace
}  // namespace tessel::vocab

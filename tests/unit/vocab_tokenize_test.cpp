// Tokenizer on small in-memory vocabularies: merge order, merges through texts that are not
// tokens, the byte fallback, special-token splitting, BOS/EOS and invalid UTF-8 input.
#include <gtest/gtest.h>

#include "vocab/tokenizer.hpp"
#include "vocab_test_util.hpp"

namespace tessel::vocab {
namespace {

using gguf::Value;
using test::TinyVocab;

const TokenizeOptions kPlain{false, false, false};

TEST(VocabTokenize, MergesApplyByRankThenLeftmost) {
    TinyVocab tv;
    const TokenId bc = tv.add("bc");
    const TokenId ab = tv.add("ab");
    const TokenId aa = tv.add("aa");
    tv.merges = {"b c", "a b", "a a"};
    const Tokenizer tok(test::load(tv.writer()));
    // "b c" (rank 0) wins over "a b" (rank 1) although "a b" is further left.
    EXPECT_EQ(tok.tokenize("abc", kPlain), (std::vector<TokenId>{TinyVocab::byte('a'), bc}));
    EXPECT_EQ(tok.tokenize("abd", kPlain), (std::vector<TokenId>{ab, TinyVocab::byte('d')}));
    // Equal ranks: the leftmost pair merges first.
    EXPECT_EQ(tok.tokenize("aaa", kPlain), (std::vector<TokenId>{aa, TinyVocab::byte('a')}));
}

TEST(VocabTokenize, MergeChainsThroughTextsThatAreNotTokens) {
    TinyVocab tv;
    const TokenId xyz = tv.add("xyz");
    tv.merges = {"x y", "xy z"};  // "xy" itself is not a token
    const Tokenizer tok(test::load(tv.writer()));
    EXPECT_EQ(tok.tokenize("xyz", kPlain), (std::vector<TokenId>{xyz}));
    // A final symbol that is not a token falls back to its single-byte tokens.
    EXPECT_EQ(tok.tokenize("xy", kPlain), (std::vector<TokenId>{TinyVocab::byte('x'), TinyVocab::byte('y')}));
}

TEST(VocabTokenize, WordsAreEncodedSeparately) {
    TinyVocab tv;
    const std::string space(byte_to_symbol(' '));
    const TokenId a_space = tv.add(std::string("a") + space);
    const TokenId space_b = tv.add(space + "b");
    tv.merges = {std::string("a ") + space, space + " b"};
    const Tokenizer tok(test::load(tv.writer()));
    // gpt-2 words: "a", " b" -- the "a " merge cannot apply across the word boundary.
    EXPECT_EQ(tok.tokenize("a b", kPlain), (std::vector<TokenId>{TinyVocab::byte('a'), space_b}));
    EXPECT_NE(a_space, space_b);
}

TEST(VocabTokenize, IgnoreMergesTakesWholeWordTokens) {
    TinyVocab tv;
    const TokenId abc = tv.add("abc");  // reachable by no merge
    const std::vector<TokenId> bytes{TinyVocab::byte('a'), TinyVocab::byte('b'), TinyVocab::byte('c')};
    EXPECT_EQ(Tokenizer(test::load(tv.writer("gpt-2"))).tokenize("abc", kPlain), bytes);
    const Vocab llama3 = test::load(tv.writer("llama-bpe"));
    EXPECT_FALSE(llama3.add_bos());  // llama3's default needs a BOS id
    EXPECT_EQ(Tokenizer(llama3).tokenize("abc", kPlain), std::vector<TokenId>{abc});
}

TEST(VocabTokenize, SpecialTokensAreSplitOutFirst) {
    TinyVocab tv;
    const TokenId end = tv.add("<|end|>", TokenType::Control);
    const TokenId endx = tv.add("<|end|>x", TokenType::Control);
    const TokenId tool = tv.add("<tool>", TokenType::UserDefined);
    const Tokenizer tok(test::load(tv.writer()));
    const std::vector<TokenId> with = tok.tokenize("a<|end|>b<tool>", {false, false, true});
    EXPECT_EQ(with, (std::vector<TokenId>{TinyVocab::byte('a'), end, TinyVocab::byte('b'), tool}));
    // The longest special text wins.
    EXPECT_EQ(tok.tokenize("<|end|>x<|end|>", {false, false, true}), (std::vector<TokenId>{endx, end}));
    // Without parse_special Control texts are plain text; UserDefined ones are still split out.
    const std::vector<TokenId> without = tok.tokenize("<|end|><tool>", kPlain);
    ASSERT_EQ(without.size(), 8u);
    EXPECT_EQ(without.front(), TinyVocab::byte('<'));
    EXPECT_EQ(without.back(), tool);
}

TEST(VocabTokenize, BosAndEosFollowTheVocabularyAndOptions) {
    TinyVocab tv;
    const TokenId bos = tv.add("<s>", TokenType::Control);
    const TokenId eos = tv.add("</s>", TokenType::Control);
    gguf::Writer w = tv.writer();
    w.set("tokenizer.ggml.bos_token_id", Value::u32(static_cast<uint32_t>(bos)));
    w.set("tokenizer.ggml.eos_token_id", Value::u32(static_cast<uint32_t>(eos)));
    w.set("tokenizer.ggml.add_bos_token", Value::boolean(true));
    w.set("tokenizer.ggml.add_eos_token", Value::boolean(true));
    const Tokenizer tok(test::load(w));
    const TokenId a = TinyVocab::byte('a');
    EXPECT_EQ(tok.tokenize("a"), (std::vector<TokenId>{bos, a, eos}));
    EXPECT_EQ(tok.tokenize("a", {false, true, false}), (std::vector<TokenId>{a, eos}));
    EXPECT_EQ(tok.tokenize("", {true, false, false}), (std::vector<TokenId>{bos}));
    w.set("tokenizer.ggml.add_bos_token", Value::boolean(false));
    w.set("tokenizer.ggml.add_eos_token", Value::boolean(false));
    EXPECT_EQ(Tokenizer(test::load(w)).tokenize("a"), (std::vector<TokenId>{a}));
}

TEST(VocabTokenize, InvalidUtf8BecomesReplacementCharacters) {
    TinyVocab tv;
    const Tokenizer tok(test::load(tv.writer()));
    const std::vector<TokenId> fffd{0xEF, 0xBF, 0xBD};
    EXPECT_EQ(tok.tokenize("\xFF", kPlain), fffd);
    std::vector<TokenId> two = fffd;
    two.insert(two.end(), fffd.begin(), fffd.end());
    EXPECT_EQ(tok.tokenize("\xC3\x28", kPlain).size(), 4u);  // a truncated sequence, then "("
    EXPECT_EQ(tok.tokenize("\x80\x80", kPlain), two);
}

}  // namespace
}  // namespace tessel::vocab

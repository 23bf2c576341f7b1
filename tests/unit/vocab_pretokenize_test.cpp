// Pre-tokenizer regexes: how each supported spec cuts text into words.
#include <gtest/gtest.h>

#include "vocab/pretokenize.hpp"

namespace tessel::vocab {
namespace {

std::vector<std::string> words(const std::string& pre, std::string_view text) {
    const PreTokenizerSpec* spec = find_pre_tokenizer(pre);
    if (!spec) throw std::runtime_error("no pre-tokenizer " + pre);
    std::vector<std::string> out;
    size_t covered = 0;
    for (const TextSpan& s : PreTokenizer(*spec).split(text)) {
        EXPECT_EQ(s.offset, covered) << "spans must tile the text";
        covered = s.offset + s.length;
        out.emplace_back(text.substr(s.offset, s.length));
    }
    EXPECT_EQ(covered, text.size());
    return out;
}

using Words = std::vector<std::string>;

TEST(VocabPretokenize, Gpt2Words) {
    EXPECT_EQ(words("gpt-2", "Hello  world's 123\n"), (Words{"Hello", " ", " world", "'s", " 123", "\n"}));
    EXPECT_EQ(words("gpt-2", "caf\xC3\xA9 \xE2\x82\xAC" "5!?"), (Words{"caf\xC3\xA9", " \xE2\x82\xAC", "5", "!?"}));
    EXPECT_TRUE(words("gpt-2", "").empty());
}

TEST(VocabPretokenize, DefaultSplitsPunctuationFirstAndLookaheadStaysInThePiece) {
    // The punctuation run is cut out first, so the spaces before it end their piece and
    // \s+(?!\S) takes both of them.
    EXPECT_EQ(words("default", "a  ,b"), (Words{"a", "  ", ",", "b"}));
    EXPECT_EQ(words("gpt-2", "a  ,b"), (Words{"a", " ", " ,", "b"}));
    EXPECT_EQ(words("default", "12345"), (Words{"123", "45"}));
}

TEST(VocabPretokenize, SmollmSplitsEveryDigit) {
    EXPECT_EQ(words("smollm", "a123 b"), (Words{"a", "1", "2", "3", " b"}));
    EXPECT_EQ(words("starcoder", "x42"), (Words{"x", "4", "2"}));
}

TEST(VocabPretokenize, Llama3AndQwen2) {
    EXPECT_EQ(words("llama-bpe", "12345 I'M ok!\n\n  x"), (Words{"123", "45", " I", "'M", " ok", "!\n\n", " ", " x"}));
    EXPECT_EQ(words("llama3", "(abc"), (Words{"(abc"}));
    EXPECT_EQ(words("qwen2", "12345"), (Words{"1", "2", "3", "4", "5"}));
    EXPECT_EQ(words("qwen2", "a\n\n b"), (Words{"a", "\n\n", " b"}));
}

TEST(VocabPretokenize, KnownNames) {
    for (const char* pre : {"default", "gpt-2", "smollm", "llama3", "llama-bpe", "qwen2"})
        EXPECT_NE(find_pre_tokenizer(pre), nullptr) << pre;
    EXPECT_EQ(find_pre_tokenizer("no-such"), nullptr);
    EXPECT_NE(supported_pre_tokenizers().find("smollm"), std::string::npos);
}

}  // namespace
}  // namespace tessel::vocab

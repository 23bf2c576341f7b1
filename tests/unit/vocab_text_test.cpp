// UTF-8 helpers, the byte-level alphabet, token pieces and the streaming decoder.
#include <gtest/gtest.h>

#include "tessel/errors.hpp"
#include "vocab/detokenize.hpp"
#include "vocab/utf8.hpp"
#include "vocab_test_util.hpp"

namespace tessel::vocab {
namespace {

using test::TinyVocab;

TEST(VocabText, Utf8ValidLengthFollowsRfc3629) {
    EXPECT_EQ(utf8_valid_length("a"), 1u);
    EXPECT_EQ(utf8_valid_length("\xC3\xA9"), 2u);
    EXPECT_EQ(utf8_valid_length("\xE2\x82\xAC"), 3u);
    EXPECT_EQ(utf8_valid_length("\xF0\x9F\xA6\x99"), 4u);
    EXPECT_EQ(utf8_valid_length(""), 0u);
    EXPECT_EQ(utf8_valid_length("\x80"), 0u);              // continuation byte
    EXPECT_EQ(utf8_valid_length("\xC0\xAF"), 0u);          // overlong
    EXPECT_EQ(utf8_valid_length("\xE0\x80\xAF"), 0u);      // overlong
    EXPECT_EQ(utf8_valid_length("\xED\xA0\x80"), 0u);      // surrogate
    EXPECT_EQ(utf8_valid_length("\xF4\x90\x80\x80"), 0u);  // above U+10FFFF
    EXPECT_EQ(utf8_valid_length("\xE2\x82"), 0u);          // truncated
}

TEST(VocabText, Utf8RepairReplacesEachBadByte) {
    EXPECT_EQ(utf8_repair("ok \xC3\xA9"), "ok \xC3\xA9");
    EXPECT_EQ(utf8_repair("a\xFF" "b"), "a\xEF\xBF\xBD" "b");
    EXPECT_EQ(utf8_repair("\xE2\x82"), "\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(VocabText, Utf8CompletePrefixHoldsBackOnlyCompletableTails) {
    EXPECT_EQ(utf8_complete_prefix("ab"), 2u);
    EXPECT_EQ(utf8_complete_prefix("a\xF0\x9F\xA6"), 1u);
    EXPECT_EQ(utf8_complete_prefix("a\xF0\x9F\xA6\x99"), 5u);
    EXPECT_EQ(utf8_complete_prefix("a\xC3"), 1u);
    EXPECT_EQ(utf8_complete_prefix("a\xFF"), 2u);      // never valid: released
    EXPECT_EQ(utf8_complete_prefix("a\xE0\x80"), 3u);  // overlong prefix: released
    EXPECT_EQ(utf8_complete_prefix("\x80\x80\x80"), 3u);
}

TEST(VocabText, ByteLevelAlphabetRoundTripsEveryByte) {
    EXPECT_EQ(byte_to_symbol(' '), "\xC4\xA0");   // U+0120
    EXPECT_EQ(byte_to_symbol('\n'), "\xC4\x8A");  // U+010A
    EXPECT_EQ(byte_to_symbol('A'), "A");
    EXPECT_EQ(byte_to_symbol(0xAD), "\xC5\x83");  // U+0143: 0xAD is the 68th shifted byte
    std::string all;
    for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
    EXPECT_EQ(symbols_to_bytes(bytes_to_symbols(all)), all);
    EXPECT_EQ(symbols_to_bytes("\xE4\xB8\x80"), "\xE4\xB8\x80");  // outside the alphabet: copied
}

TEST(VocabText, TokenPiecesByType) {
    TinyVocab tv;
    const TokenId e_acute = tv.add(bytes_to_symbols("\xC3\xA9"));
    const TokenId ctrl = tv.add("<|end|>", TokenType::Control);
    const TokenId user = tv.add("<tool>", TokenType::UserDefined);
    const TokenId unused = tv.add("<unused>", TokenType::Unused);
    const Vocab v = test::load(tv.writer());
    EXPECT_EQ(token_to_piece(v, TinyVocab::byte(' '), false), " ");
    EXPECT_EQ(token_to_piece(v, e_acute, false), "\xC3\xA9");
    EXPECT_EQ(token_to_piece(v, ctrl, false), "");
    EXPECT_EQ(token_to_piece(v, ctrl, true), "<|end|>");
    EXPECT_EQ(token_to_piece(v, user, false), "<tool>");
    EXPECT_EQ(token_to_piece(v, unused, true), "");
    EXPECT_THROW(token_to_piece(v, v.size(), true), Error);
    EXPECT_THROW(token_to_piece(v, -1, true), Error);
    const std::vector<TokenId> ids{TinyVocab::byte('h'), TinyVocab::byte('i'), ctrl, e_acute};
    EXPECT_EQ(detokenize(v, ids, false), "hi\xC3\xA9");
    EXPECT_EQ(detokenize(v, ids, true), "hi<|end|>\xC3\xA9");
}

TEST(VocabText, StreamHoldsBackSplitCharacters) {
    Utf8Stream s;
    EXPECT_EQ(s.push("a\xF0\x9F"), "a");
    EXPECT_EQ(s.push("\xA6"), "");
    EXPECT_EQ(s.push("\x99!"), "\xF0\x9F\xA6\x99!");
    EXPECT_EQ(s.push("\xC3"), "");
    EXPECT_EQ(s.flush(), "\xC3");
    EXPECT_EQ(s.flush(), "");
    EXPECT_EQ(s.push("\xFF"), "\xFF");
}

}  // namespace
}  // namespace tessel::vocab

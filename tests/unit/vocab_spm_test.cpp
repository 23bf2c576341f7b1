// SentencePiece (tokenizer.ggml.model = "llama") on small in-memory vocabularies: merges by score,
// the space prefix and U+2581, byte fallback, special tokens, BOS/EOS and detokenize. Expected
// ids follow llama.cpp's SPM tokenizer (the conformance test checks real vocabularies).
#include <gtest/gtest.h>

#include <limits>

#include "tessel/errors.hpp"
#include "vocab/byte_token.hpp"
#include "vocab/detokenize.hpp"
#include "vocab/tokenizer.hpp"
#include "vocab_test_util.hpp"

namespace tessel::vocab {
namespace {

using gguf::Value;
using test::TinySpmVocab;
using Ids = std::vector<TokenId>;

const TokenizeOptions kPlain{false, false, false};

TEST(VocabSpm, ByteTokenTexts) {
    EXPECT_EQ(parse_byte_token("<0x00>"), 0);
    EXPECT_EQ(parse_byte_token("<0x0A>"), 10);
    EXPECT_EQ(parse_byte_token("<0xff>"), 255);
    EXPECT_EQ(parse_byte_token("<0xFf>"), 255);
    for (const char* bad : {"<0x-1>", "<0xZZ>", "<0x>", "<0x100>", "<0x1>", "0x41", "<0X41>", "<0x41", "<0x 1>", "", "a"})
        EXPECT_EQ(parse_byte_token(bad), -1) << bad;
    EXPECT_EQ(byte_token_text(0x0A), "<0x0A>");
    EXPECT_EQ(byte_token_text(0xAB), "<0xAB>");
    for (int b = 0; b < 256; ++b) EXPECT_EQ(parse_byte_token(byte_token_text(static_cast<uint8_t>(b))), b);
}

TEST(VocabSpm, HigherScoreMergesFirstThenLeftmost) {
    TinySpmVocab tv;
    const TokenId ab = tv.add("ab", -2.0f);
    const TokenId bc = tv.add("bc", -1.0f);
    const TokenId aa = tv.add("aa", -3.0f);
    const TokenId sp_a = tv.add(" a", -4.0f);
    gguf::Writer w = tv.writer();
    w.set("tokenizer.ggml.add_space_prefix", Value::boolean(false));
    const Tokenizer tok(test::load(w));
    // "bc" (score -1) beats "ab" (-2) although "ab" is further left.
    EXPECT_EQ(tok.tokenize("abc", kPlain), (Ids{TinySpmVocab::byte('a'), bc}));
    EXPECT_EQ(tok.tokenize("abd", kPlain), (Ids{ab, TinySpmVocab::byte('d')}));
    // Equal scores: the leftmost pair merges first.
    EXPECT_EQ(tok.tokenize("aaa", kPlain), (Ids{aa, TinySpmVocab::byte('a')}));
    // Spaces are U+2581 inside the vocabulary.
    EXPECT_EQ(tok.tokenize("b a", kPlain), (Ids{TinySpmVocab::byte('b'), sp_a}));
}

TEST(VocabSpm, MergesNeedEveryStepToBeAToken) {
    TinySpmVocab tv;
    const TokenId he = tv.add("he", -1.0f);
    const TokenId hello = tv.add("hello", -0.5f);
    const TokenId ll = tv.add("ll", -2.0f);
    const TokenId hell = tv.add("hell", -3.0f);
    const TokenId wor = tv.add("wor", -1.0f);
    gguf::Writer w = tv.writer();
    w.set("tokenizer.ggml.add_space_prefix", Value::boolean(false));
    const Tokenizer tok(test::load(w));
    // he (-1), then ll (-2), then hell (-3), then hello: each step's text is a token.
    EXPECT_EQ(tok.tokenize("hello", kPlain), (Ids{hello}));
    EXPECT_EQ(tok.tokenize("hell", kPlain), (Ids{hell}));
    EXPECT_EQ(tok.tokenize("wor", kPlain), (Ids{TinySpmVocab::byte('w'), TinySpmVocab::byte('o'), TinySpmVocab::byte('r')}));
    // "wo" and "or" are no tokens, so "wor" is never reached.
    EXPECT_NE(he, ll);
    EXPECT_NE(wor, hello);
}

TEST(VocabSpm, SpacePrefixAtTheStartAndAfterSpecialTokens) {
    TinySpmVocab tv;
    const TokenId sp_hi = tv.add(" hi", -1.0f);
    const TokenId hi = tv.add("hi", -2.0f);
    const TokenId turn = tv.add("<start_of_turn>", 0.0f, TokenType::Control);
    const TokenId tool = tv.add("<tool>", 0.0f, TokenType::UserDefined);
    const Tokenizer tok(test::load(tv.writer()));
    EXPECT_TRUE(tok.vocab().add_space_prefix());  // the SPM default
    EXPECT_EQ(tok.tokenize("hi", kPlain), (Ids{sp_hi}));
    EXPECT_EQ(tok.tokenize("", kPlain), Ids{});  // no text, no prefix
    // After a special token the next text gets the prefix again (llama.cpp); UserDefined tokens
    // are split out even without parse_special.
    EXPECT_EQ(tok.tokenize("hi<tool>hi", kPlain), (Ids{sp_hi, tool, sp_hi}));
    EXPECT_EQ(tok.tokenize("<start_of_turn>hi", {false, false, true}), (Ids{turn, sp_hi}));
    // Without parse_special a Control text is plain text: one fragment, one prefix.
    const Ids plain = tok.tokenize("<start_of_turn>hi", kPlain);
    EXPECT_EQ(plain.front(), TinySpmVocab::byte('\xE2'));  // "▁" is no token here: its first byte
    EXPECT_EQ(plain.back(), hi);

    gguf::Writer w = tv.writer();
    w.set("tokenizer.ggml.add_space_prefix", Value::boolean(false));  // gemma3
    const Tokenizer no_prefix(test::load(w));
    EXPECT_EQ(no_prefix.tokenize("hi", kPlain), (Ids{hi}));
    EXPECT_EQ(no_prefix.tokenize("<start_of_turn>hi", {false, false, true}), (Ids{turn, hi}));
}

// llama.cpp gives the special tokens of models named Phi-3 the rstrip attribute (no GGUF key).
TEST(VocabSpm, Phi3SpecialTokensStripTheWhitespaceAfterThem) {
    TinySpmVocab tv;
    const TokenId sp_hi = tv.add(" hi", -1.0f);
    const TokenId sp = tv.add(" ", -2.0f);
    const TokenId hi = tv.add("hi", -3.0f);
    const TokenId nl = TinySpmVocab::byte('\n');
    const TokenId user = tv.add("<|user|>", 0.0f, TokenType::Control);
    const TokenId eot = tv.add("<|endoftext|>", 0.0f, TokenType::Control);
    const TokenId tool = tv.add("<tool>", 0.0f, TokenType::UserDefined);
    const TokenizeOptions special{false, false, true};
    gguf::Writer w = tv.writer();
    const Tokenizer plain(test::load(w));
    EXPECT_EQ(plain.tokenize("<|user|>\nhi", special), (Ids{user, sp, nl, hi}));
    w.set("general.name", Value::string("Phi3"));
    const Tokenizer phi3(test::load(w));
    EXPECT_TRUE(phi3.vocab().rstrip(user));
    EXPECT_TRUE(phi3.vocab().rstrip(2));   // </s>
    EXPECT_FALSE(phi3.vocab().rstrip(1));  // <s>
    EXPECT_FALSE(phi3.vocab().rstrip(eot));
    EXPECT_FALSE(phi3.vocab().rstrip(sp_hi));
    EXPECT_EQ(phi3.tokenize("<|user|>\n \thi", special), (Ids{user, sp_hi}));
    EXPECT_EQ(phi3.tokenize("<tool> hi<tool>  ", kPlain), (Ids{tool, sp_hi, tool}));
    EXPECT_EQ(phi3.tokenize("<|endoftext|>\nhi", special)[1], sp);
    w.set("general.name", Value::string("microsoft/Phi-3-mini"));
    EXPECT_TRUE(test::load(w).rstrip(user));
}

TEST(VocabSpm, ByteFallbackForCharactersThatAreNotTokens) {
    TinySpmVocab tv;
    const TokenId e_acute = tv.add("\xC3\xA9", -1.0f);
    gguf::Writer w = tv.writer();
    w.set("tokenizer.ggml.add_space_prefix", Value::boolean(false));
    const Tokenizer tok(test::load(w));
    EXPECT_EQ(tok.tokenize("\xC3\xA9", kPlain), (Ids{e_acute}));
    // U+4E2D is no token: its three bytes.
    EXPECT_EQ(tok.tokenize("\xE4\xB8\xAD", kPlain),
              (Ids{TinySpmVocab::byte('\xE4'), TinySpmVocab::byte('\xB8'), TinySpmVocab::byte('\xAD')}));
    // Invalid UTF-8 is not repaired: the bytes come back as they are.
    const std::string bad = "\xFF" "a\xC3";
    const Ids ids = tok.tokenize(bad, kPlain);
    EXPECT_EQ(ids, (Ids{TinySpmVocab::byte('\xFF'), TinySpmVocab::byte('a'), TinySpmVocab::byte('\xC3')}));
    EXPECT_EQ(detokenize(tok.vocab(), ids, false), bad);
}

TEST(VocabSpm, BytesWithoutAByteTokenBecomeTheUnknownToken) {
    TinySpmVocab tv;
    tv.tokens.resize(3);  // <unk>, <s>, </s> only
    tv.scores.resize(3);
    tv.types.resize(3);
    const TokenId x = tv.add("x", -1.0f);
    const TokenId sp = tv.add(" ", -1.0f);
    const Tokenizer tok(test::load(tv.writer()));
    EXPECT_EQ(tok.vocab().byte_token('x'), x);  // no <0x78>: the one-byte token
    EXPECT_EQ(tok.tokenize("xy", kPlain), (Ids{sp, x, 0}));  // llama.cpp would throw here
    gguf::Writer w = tv.writer();
    w.set("tokenizer.ggml.unknown_token_id", Value::u32(1));
    EXPECT_EQ(Tokenizer(test::load(w)).tokenize("xy", kPlain), (Ids{sp, x, 1}));
}

TEST(VocabSpm, BosAndEosDefaults) {
    TinySpmVocab tv;
    const TokenId sp_a = tv.add(" a", -1.0f);
    gguf::Writer w = tv.writer();
    const Tokenizer tok(test::load(w));
    EXPECT_EQ(tok.vocab().bos(), 1);
    EXPECT_EQ(tok.vocab().eos(), 2);
    EXPECT_EQ(tok.vocab().unk(), 0);
    EXPECT_TRUE(tok.vocab().add_bos());
    EXPECT_FALSE(tok.vocab().add_eos());
    EXPECT_EQ(tok.tokenize("a"), (Ids{1, sp_a}));
    EXPECT_EQ(tok.tokenize(""), (Ids{1}));
    w.set("tokenizer.ggml.add_eos_token", Value::boolean(true));
    w.set("tokenizer.ggml.bos_token_id", Value::u32(2));
    w.set("tokenizer.ggml.eos_token_id", Value::u32(1));
    EXPECT_EQ(Tokenizer(test::load(w)).tokenize("a"), (Ids{2, sp_a, 1}));
}

TEST(VocabSpm, DetokenizeUnescapesSpacesDecodesBytesAndDropsTheAddedSpace) {
    TinySpmVocab tv;
    const TokenId sp_hello = tv.add(" Hello", -1.0f);
    const TokenId sp_world = tv.add(" world", -1.0f);
    const TokenId user = tv.add("<tool>", 0.0f, TokenType::UserDefined);
    tv.add(" ", -10.0f);  // "▁", as real vocabularies have
    const Vocab v = test::load(tv.writer());
    EXPECT_EQ(token_to_piece(v, sp_hello, false), " Hello");
    EXPECT_EQ(token_to_piece(v, TinySpmVocab::byte('\n'), false), "\n");
    EXPECT_EQ(token_to_piece(v, 1, false), "");
    EXPECT_EQ(token_to_piece(v, 1, true), "<s>");
    EXPECT_EQ(token_to_piece(v, 0, true), "<unk>");
    EXPECT_EQ(token_to_piece(v, user, false), "<tool>");
    EXPECT_EQ(detokenize(v, Ids{sp_hello, sp_world}, false), "Hello world");
    // The first token's space is the one tokenize added; a BOS in front keeps it (llama.cpp).
    EXPECT_EQ(detokenize(v, Ids{1, sp_hello}, false), " Hello");
    EXPECT_EQ(detokenize(v, Ids{1, sp_hello}, true), "<s> Hello");
    EXPECT_EQ(detokenize(v, Ids{TinySpmVocab::byte(' '), sp_hello}, false), " Hello");
    const Tokenizer tok(test::load(tv.writer()));
    for (const char* text : {"Hello world", " Hello", "  x\n y", "\xE4\xB8\xAD\xF0\x9F\xA6\x99", ""})
        EXPECT_EQ(detokenize(v, tok.tokenize(text, kPlain), false), text) << text;
}

TEST(VocabSpm, LoadReadsScoresAndSpacePrefix) {
    TinySpmVocab tv;
    const TokenId a = tv.add("a", -7.5f);
    const Vocab v = test::load(tv.writer());
    EXPECT_EQ(v.model(), VocabModel::Spm);
    EXPECT_EQ(v.score(a), -7.5f);
    EXPECT_EQ(v.byte_value(TinySpmVocab::byte('\x41')), 0x41);
    EXPECT_EQ(v.byte_value(a), -1);
    EXPECT_EQ(v.byte_token('\x41'), TinySpmVocab::byte('\x41'));
    EXPECT_TRUE(v.merges().empty());

    EXPECT_EQ(test::load(tv.writer(false)).score(a), 0.0f);
    gguf::Writer w = tv.writer();
    w.set("tokenizer.ggml.pre", Value::string("no-such-pre"));  // SPM has no pre-tokenizer
    w.set("tokenizer.ggml.add_space_prefix", Value::boolean(false));
    EXPECT_FALSE(test::load(w).add_space_prefix());
}

// tokenizer.ggml.model = "gemma4": BPE merges by rank on raw UTF-8 characters, spaces as U+2581
// (no space prefix), <0xXX> byte fallback, BOS always added (llama.cpp's gemma4 rules).
TEST(VocabSpm, Gemma4MergesRawUtf8WithEscapedSpaces) {
    TinySpmVocab tv;
    const TokenId sp = tv.add(" ", 0.0f);
    const TokenId h = tv.add("h", 0.0f);
    const TokenId i = tv.add("i", 0.0f);
    const TokenId sp_h = tv.add(" h", 0.0f);
    const TokenId sp_hi = tv.add(" hi", 0.0f);
    const TokenId nl = tv.add("\n", 0.0f);
    const TokenId nl2 = tv.add("\n\n", 0.0f);
    const TokenId e_acute = tv.add("\xC3\xA9", 0.0f);
    gguf::Writer w = tv.writer();
    w.set("tokenizer.ggml.model", Value::string("gemma4"));
    w.set("tokenizer.ggml.pre", Value::string("gpt-2"));  // ignored: gemma4 has its own
    const std::string sp_text(kSpmSpace);
    w.set("tokenizer.ggml.merges", Value::strings({sp_text + " h", sp_text + "h i"}));
    w.set("tokenizer.ggml.add_space_prefix", Value::boolean(false));
    w.set("tokenizer.ggml.bos_token_id", Value::u32(1));
    w.set("tokenizer.ggml.add_bos_token", Value::boolean(false));  // llama.cpp adds BOS anyway
    const Tokenizer tok(test::load(w));
    EXPECT_EQ(tok.vocab().model(), VocabModel::Bpe);
    EXPECT_EQ(tok.vocab().pre(), "gemma4");
    EXPECT_TRUE(tok.vocab().add_bos());
    EXPECT_EQ(tok.vocab().bos(), 1);
    EXPECT_EQ(tok.tokenize("hi", kPlain), (Ids{h, i}));  // no "h i" merge, no space prefix
    EXPECT_EQ(tok.tokenize(" hi h", kPlain), (Ids{sp_hi, sp_h}));
    EXPECT_EQ(tok.tokenize("\xC3\xA9 ", kPlain), (Ids{e_acute, sp}));
    // A run of newlines that is a token is taken whole; one that is not goes character by character.
    EXPECT_EQ(tok.tokenize("h\n\n", kPlain), (Ids{h, nl2}));
    EXPECT_EQ(tok.tokenize("\n\n\n", kPlain), (Ids{nl, nl, nl}));
    // A character that is no token: its <0xXX> tokens.
    EXPECT_EQ(tok.tokenize("\xE4\xB8\xAD", kPlain),
              (Ids{TinySpmVocab::byte('\xE4'), TinySpmVocab::byte('\xB8'), TinySpmVocab::byte('\xAD')}));
    EXPECT_EQ(tok.tokenize("hi"), (Ids{tok.vocab().bos(), h, i}));
    for (const char* text : {" hi h", "\n\n\n \xE4\xB8\xAD\xC3\xA9", "  h  "})
        EXPECT_EQ(detokenize(tok.vocab(), tok.tokenize(text, kPlain), false), text) << text;
}

/// Loading `w` fails with `code` and a message containing every one of `parts`.
void expect_load_error(const gguf::Writer& w, ErrorCode code, std::initializer_list<std::string> parts) {
    try {
        test::load(w);
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), code) << e.what();
        for (const std::string& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
    }
}

TEST(VocabSpm, BadByteTokenTextsAreRefusedNamingTheToken) {
    for (const char* bad : {"<0x-1>", "<0xZZ>", "<0x>", "<0x100>", "A"}) {
        TinySpmVocab tv;
        const TokenId id = tv.add(bad, 0.0f, TokenType::Byte);
        expect_load_error(tv.writer(), ErrorCode::InvalidArgument,
                          {"tiny.gguf: tokenizer.ggml.token_type", "token " + std::to_string(id) + " has type BYTE",
                           std::string("'") + bad + "'", "<0xXX>"});
    }
    TinySpmVocab tv;
    tv.add("\x01\xFF", 0.0f, TokenType::Byte);
    expect_load_error(tv.writer(), ErrorCode::InvalidArgument, {"'\\x01\\xff'"});
    // The same text as a Normal token is a plain piece.
    TinySpmVocab plain;
    const TokenId zz = plain.add("<0xZZ>", 0.0f);
    const Vocab v = test::load(plain.writer());
    EXPECT_EQ(v.byte_value(zz), -1);
    EXPECT_EQ(token_to_piece(v, zz, false), "<0xZZ>");
}

TEST(VocabSpm, BadScoresAreRefused) {
    TinySpmVocab tv;
    gguf::Writer w = tv.writer();
    w.set("tokenizer.ggml.scores", Value::f32s({1.0f}));
    expect_load_error(w, ErrorCode::InvalidArgument, {"tokenizer.ggml.scores", "1 entries for 259 tokens"});
    std::vector<float> nan(tv.scores.size(), 0.0f);
    nan[5] = std::numeric_limits<float>::quiet_NaN();
    w.set("tokenizer.ggml.scores", Value::f32s(nan));
    expect_load_error(w, ErrorCode::InvalidArgument, {"tokenizer.ggml.scores", "token 5 has score NaN"});
}

}  // namespace
}  // namespace tessel::vocab

// libFuzzer target for the tokenizer: arbitrary bytes through UTF-8 repair, every pre-tokenizer
// tessel knows (tokenizer.ggml.pre), byte-level BPE and SentencePiece encode and the detokenizer.
//
// Input: byte 0 picks the closed vocabulary (low bits) or an input vocabulary (bit 7; bit 6 makes
// it SentencePiece), byte 1 holds options, the rest is the text (for an input vocabulary, first
// the vocabulary itself).
//
// - The closed vocabularies (built once): one BPE vocabulary per pre-tokenizer (the 256 byte
//   symbols, or for gemma4 the 256 <0xXX> byte tokens, "▁" and raw UTF-8 texts with spaces as "▁";
//   merges whose every result is a token; a few special tokens) and one
//   SentencePiece vocabulary (the 256 byte tokens, "▁", pieces whose every merge step is a token,
//   the same special tokens). Here these must hold for any input:
//   * utf8_repair's output is valid UTF-8 and leaves valid input unchanged;
//   * the pre-tokenizer's pieces are non-empty, in order, cover the repaired text exactly and
//     start and end on character boundaries;
//   * bytes -> byte-level symbols -> bytes is the identity;
//   * every token id is in the vocabulary; BPE: detokenize(tokenize(x)) is x (gemma4: with
//     U+2581 as a space) when x is valid UTF-8 (special tokens rendered; every BPE symbol is a
//     token or falls back to byte tokens, so nothing is dropped), and
//     valid UTF-8 otherwise; SPM: detokenize(tokenize(x)) is x with U+2581 as a space when x is
//     valid UTF-8 and no special token was split out (those add a space prefix after them);
//     streamed through Utf8Stream the pieces join to the same text (less the space detokenize
//     drops), each chunk valid UTF-8 when the whole is.
// - A vocabulary made from the input (tokens, types, scores, merges, special ids): only that it
//   loads or is rejected with tessel::Error, and that tokenize gives ids in the vocabulary.
// tessel::Error is the only allowed failure (e.g. an input vocabulary Vocab::load rejects);
// anything else, a sanitizer report or a broken invariant aborts.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_input.hpp"
#include "gguf/reader.hpp"
#include "gguf/writer.hpp"
#include "tessel/errors.hpp"
#include "vocab/byte_level.hpp"
#include "vocab/byte_token.hpp"
#include "vocab/detokenize.hpp"
#include "vocab/pretokenize.hpp"
#include "vocab/spm.hpp"
#include "vocab/tokenizer.hpp"
#include "vocab/utf8.hpp"

namespace {

using namespace tessel;
using namespace tessel::vocab;

[[noreturn]] void broken(const char* what, std::string_view text) {
    std::fprintf(stderr, "fuzz_tokenizer: invariant broken: %s (text of %zu bytes)\n", what, text.size());
    std::abort();
}

bool valid_utf8(std::string_view s) {
    for (size_t i = 0; i < s.size();) {
        const size_t n = utf8_valid_length(s.substr(i));
        if (n == 0) return false;
        i += n;
    }
    return true;
}

/// One name per pre-tokenizer spec (the first listed), parsed from supported_pre_tokenizers().
std::vector<std::string> spec_names() {
    std::vector<std::string> names;
    std::vector<const PreTokenizerSpec*> seen;
    const std::string all = supported_pre_tokenizers();
    for (size_t at = 0; at <= all.size();) {
        size_t end = all.find(", ", at);
        if (end == std::string::npos) end = all.size();
        const std::string name = all.substr(at, end - at);
        const PreTokenizerSpec* spec = find_pre_tokenizer(name);
        if (!spec) broken("a listed pre-tokenizer is not found by its name", name);
        if (std::find(seen.begin(), seen.end(), spec) == seen.end()) seen.push_back(spec), names.push_back(name);
        at = end + 2;
    }
    return names;
}

/// Words whose byte-level BPE merges make the closed vocabulary: ASCII words with and without
/// a leading space, digits, contractions, whitespace runs and multi-byte characters (2, 3, 4 bytes).
constexpr const char* kWords[] = {
    "the", " the", " and", "ing", "er", " a", "hello", " world", "Hello", "'s", "'re", "n't", "123", "2024", "  ", "\n\n",
    "\r\n", "\t", " (", ");", "caf\xC3\xA9", "\xC3\xA9t\xC3\xA9", " \xD0\xBF\xD1\x80\xD0\xB8", "\xE4\xB8\xAD\xE6\x96\x87",
    "\xE6\x97\xA5\xE6\x9C\xAC", "\xF0\x9F\xA6\x99", "\xE2\x80\x94", " \xCE\xB1\xCE\xB2",
};

/// The characters of valid UTF-8 `text`.
std::vector<std::string> utf8_chars(std::string_view text) {
    std::vector<std::string> chars;
    for (size_t at = 0; at < text.size();) {
        const size_t n = std::max<size_t>(1, utf8_valid_length(text.substr(at)));
        chars.emplace_back(text.substr(at, n));
        at += n;
    }
    return chars;
}

/// The byte-level symbols of `text`, one per byte.
std::vector<std::string> byte_symbols(std::string_view text) {
    std::vector<std::string> syms;
    for (const char c : text) syms.emplace_back(byte_to_symbol(static_cast<uint8_t>(c)));
    return syms;
}

struct ClosedVocab {
    std::vector<std::string> tokens;
    std::vector<int32_t> types;
    std::vector<float> scores;
    std::vector<std::string> merges;

    int32_t add(const std::string& text, TokenType type) {
        for (size_t i = 0; i < tokens.size(); ++i)
            if (tokens[i] == text) return static_cast<int32_t>(i);
        tokens.push_back(text);
        types.push_back(static_cast<int32_t>(type));
        scores.push_back(-static_cast<float>(tokens.size() % 7));  // a few levels, so scores tie and compete
        return static_cast<int32_t>(tokens.size() - 1);
    }
    /// The special tokens both kinds of closed vocabulary have; returns the BOS and EOS ids.
    std::pair<int32_t, int32_t> add_specials() {
        const int32_t bos = add("<s>", TokenType::Control);
        const int32_t eos = add("<|endoftext|>", TokenType::Control);
        add("<unk>", TokenType::Unknown);
        add("[USER]", TokenType::UserDefined);
        add("<|im_start|>", TokenType::Control);
        add("\xE2\x96\x81\xE2\x96\x81", TokenType::UserDefined);  // "▁▁": not a byte-level symbol text
        return {bos, eos};
    }
    /// A merge of two token texts whose result becomes a token.
    void merge(const std::string& left, const std::string& right) {
        merges.push_back(left + " " + right);  // symbol texts hold no raw space
        add(left + right, TokenType::Normal);
    }
};

/// The closed vocabulary's tokenizer keys with pre-tokenizer `pre`, loaded.
Vocab closed_vocab(const std::string& pre) {
    // gemma4-style (spm_style) specs merge raw UTF-8 characters with spaces as "▁" and fall back
    // to <0xXX> byte tokens; the others merge byte-level symbols.
    const bool raw = find_pre_tokenizer(pre)->spm_style;
    ClosedVocab v;
    for (int b = 0; b < 256; ++b)
        if (raw)
            v.add(byte_token_text(static_cast<uint8_t>(b)), TokenType::Byte);
        else
            v.add(std::string(byte_to_symbol(static_cast<uint8_t>(b))), TokenType::Normal);
    if (raw) v.add(std::string(kSpmSpace), TokenType::Normal);  // so every "▁" decodes to a space, as in real vocabularies
    for (const char* word : kWords) {
        const std::vector<std::string> syms = raw ? utf8_chars(spm_escape_spaces(word)) : byte_symbols(word);
        // Left to right (the, th+e), then neighbouring pairs, so merges overlap and compete.
        std::string acc = syms[0];
        for (size_t i = 1; i < syms.size(); ++i) v.merge(acc, syms[i]), acc += syms[i];
        for (size_t i = 1; i < syms.size(); ++i) v.merge(syms[i - 1], syms[i]);
    }
    v.merges.push_back(v.merges.front());  // a repeated merge keeps its first rank
    const auto [bos, eos] = v.add_specials();

    gguf::Writer w;
    w.set("tokenizer.ggml.model", gguf::Value::string("gpt2"));
    w.set("tokenizer.ggml.pre", gguf::Value::string(pre));
    w.set("tokenizer.ggml.tokens", gguf::Value::strings(v.tokens));
    w.set("tokenizer.ggml.token_type", gguf::Value::i32s(v.types));
    w.set("tokenizer.ggml.merges", gguf::Value::strings(v.merges));
    w.set("tokenizer.ggml.bos_token_id", gguf::Value::u32(static_cast<uint32_t>(bos)));
    w.set("tokenizer.ggml.eos_token_id", gguf::Value::u32(static_cast<uint32_t>(eos)));
    const std::vector<uint8_t> bytes = w.to_bytes();
    return Vocab::load(gguf::File::from_memory(bytes.data(), bytes.size(), "closed-vocab.gguf"));
}

/// The closed SentencePiece vocabulary: <unk>, the 256 byte tokens, "▁", for each word (spaces
/// as "▁") its left-to-right prefixes and neighbouring character pairs, so every merge step is a
/// token, and the special tokens. `space_prefix` sets tokenizer.ggml.add_space_prefix.
Vocab closed_spm_vocab(bool space_prefix) {
    ClosedVocab v;
    v.add("<unk>", TokenType::Unknown);
    for (int b = 0; b < 256; ++b) v.add(byte_token_text(static_cast<uint8_t>(b)), TokenType::Byte);
    v.add(std::string(kSpmSpace), TokenType::Normal);
    for (const char* word : kWords) {
        const std::vector<std::string> chars = utf8_chars(spm_escape_spaces(word));
        std::string acc = chars[0];
        for (size_t i = 1; i < chars.size(); ++i) acc += chars[i], v.add(acc, TokenType::Normal);
        for (size_t i = 1; i < chars.size(); ++i) v.add(chars[i - 1] + chars[i], TokenType::Normal);
    }
    const auto [bos, eos] = v.add_specials();
    gguf::Writer w;
    w.set("tokenizer.ggml.model", gguf::Value::string("llama"));
    w.set("tokenizer.ggml.tokens", gguf::Value::strings(v.tokens));
    w.set("tokenizer.ggml.token_type", gguf::Value::i32s(v.types));
    w.set("tokenizer.ggml.scores", gguf::Value::f32s(v.scores));
    w.set("tokenizer.ggml.bos_token_id", gguf::Value::u32(static_cast<uint32_t>(bos)));
    w.set("tokenizer.ggml.eos_token_id", gguf::Value::u32(static_cast<uint32_t>(eos)));
    w.set("tokenizer.ggml.add_space_prefix", gguf::Value::boolean(space_prefix));
    const std::vector<uint8_t> bytes = w.to_bytes();
    return Vocab::load(gguf::File::from_memory(bytes.data(), bytes.size(), "closed-spm-vocab.gguf"));
}

struct Closed {
    PreTokenizer pre;  // BPE vocabularies: their pre-tokenizer, checked on its own
    Tokenizer tok;
};

/// One closed vocabulary per pre-tokenizer, then the SentencePiece one with and without the
/// space prefix.
const std::vector<std::unique_ptr<Closed>>& closed() {
    static const std::vector<std::unique_ptr<Closed>> all = [] {
        std::vector<std::unique_ptr<Closed>> out;
        for (const std::string& name : spec_names()) {
            Vocab v = closed_vocab(name);
            PreTokenizer pre(v.pre_tokenizer());
            out.push_back(std::make_unique<Closed>(Closed{std::move(pre), Tokenizer(std::move(v))}));
        }
        for (const bool prefix : {true, false}) {
            Vocab v = closed_spm_vocab(prefix);
            PreTokenizer pre(v.pre_tokenizer());
            out.push_back(std::make_unique<Closed>(Closed{std::move(pre), Tokenizer(std::move(v))}));
        }
        return out;
    }();
    return all;
}

void check_pre_tokenizer(const PreTokenizer& pre, std::string_view text) {
    size_t at = 0;
    for (const TextSpan& s : pre.split(text)) {
        if (s.offset != at || s.length == 0 || s.length > text.size() - at) broken("pieces do not tile the text", text);
        if (!valid_utf8(text.substr(s.offset, s.length))) broken("a piece cuts a character", text);
        at += s.length;
    }
    if (at != text.size()) broken("pieces do not cover the text", text);
}

void check_closed(const Closed& c, std::string_view text, uint8_t options) {
    const std::string repaired = utf8_repair(text);
    const bool valid = valid_utf8(text);
    if (!valid_utf8(repaired)) broken("utf8_repair gave invalid UTF-8", text);
    if (valid && repaired != text) broken("utf8_repair changed valid UTF-8", text);
    if (symbols_to_bytes(bytes_to_symbols(text)) != text) broken("byte-level symbols do not round-trip", text);
    check_pre_tokenizer(c.pre, repaired);

    const Vocab& v = c.tok.vocab();
    TokenizeOptions o;
    o.add_bos = (options & 1) != 0;
    o.add_eos = (options & 2) != 0;
    o.parse_special = (options & 4) != 0;
    std::vector<TokenId> ids = c.tok.tokenize(text, o);
    for (const TokenId id : ids)
        if (!v.valid(id)) broken("a token id outside the vocabulary", text);
    if (o.add_bos && v.add_bos()) {
        if (ids.empty() || ids.front() != v.bos()) broken("BOS missing", text);
        ids.erase(ids.begin());
    }
    if (o.add_eos && v.add_eos()) {
        if (ids.empty() || ids.back() != v.eos()) broken("EOS missing", text);
        ids.pop_back();
    }
    const std::string out = detokenize(v, ids, true);
    if (v.model() == VocabModel::Spm) {
        // "▁" is a token, so every U+2581 of valid text comes back as a space; a special token
        // split out puts a space prefix on the text after it, which detokenize keeps.
        const bool split = std::any_of(ids.begin(), ids.end(), [&](TokenId id) { return v.type(id) != TokenType::Normal && v.type(id) != TokenType::Byte; });
        if (valid && !split && out != spm_unescape_spaces(text)) broken("SPM: detokenize(tokenize(x)) != x with spaces", text);
    } else {
        // BPE: gemma4-style vocabularies give U+2581 back as a space, like SPM.
        const std::string want = v.pre_tokenizer().spm_style ? spm_unescape_spaces(text) : std::string(text);
        if (valid ? out != want : !valid_utf8(out))
            broken(valid ? "detokenize(tokenize(x)) != x" : "detokenized text is not UTF-8", text);
    }
    if (valid && !valid_utf8(out)) broken("detokenized valid text is not UTF-8", text);

    Utf8Stream stream;
    std::string joined;
    for (const TokenId id : ids) {
        const std::string chunk = stream.push(token_to_piece(v, id, true));
        if (!valid_utf8(chunk) && (valid || v.model() == VocabModel::Bpe)) broken("Utf8Stream released part of a character", text);
        joined += chunk;
    }
    joined += stream.flush();
    // detokenize drops the first piece's leading space when the vocabulary adds a space prefix.
    if (v.add_space_prefix() && !ids.empty() && token_to_piece(v, ids[0], true).starts_with(' ')) joined.erase(0, 1);
    if (joined != out) broken("streamed pieces differ from detokenize", text);
}

/// A vocabulary read from the input: up to 48 tokens (arbitrary bytes), their types, merges of
/// two tokens' texts (BPE) or scores (SentencePiece, `spm`), special ids and flags, a
/// pre-tokenizer; then the text is tokenized.
void run_input_vocab(fuzz::Input& in, const std::vector<std::string>& names, uint8_t selector, bool spm) {
    constexpr float kScores[] = {0.0f, -1.0f, -2.5f, 1.0f, -1e30f, 3.0e38f, -0.0f, std::numeric_limits<float>::quiet_NaN()};
    std::vector<std::string> tokens;
    std::vector<int32_t> types;
    std::vector<float> scores;
    const size_t n_tokens = 1 + in.below(48);
    for (size_t i = 0; i < n_tokens; ++i) {
        // Half of the tokens are byte symbols (SPM: byte-token texts), so merges and the byte
        // fallback find something.
        const uint8_t kind = in.u8();
        if (kind & 1)
            tokens.push_back(spm ? byte_token_text(in.u8()) : std::string(byte_to_symbol(in.u8())));
        else
            tokens.push_back(in.bytes(12));
        // Types 0..6, Normal the most common; 0xFF an unknown type (the vocabulary is rejected).
        const int t = (kind >> 1) % 10;
        types.push_back(kind == 0xFF ? 9 : t < 7 ? t : 1);
        // NaN (the last score) is rejected.
        if (spm) scores.push_back(in.pick(kScores));
    }
    std::vector<std::string> merges;
    const size_t n_merges = spm ? 0 : in.below(32);
    for (size_t i = 0; i < n_merges; ++i) {
        const std::string& l = tokens[in.below(tokens.size())];
        const std::string& r = tokens[in.below(tokens.size())];
        merges.push_back(in.flag() ? l + " " + r : in.bytes(8));
    }
    gguf::Writer w;
    w.set("tokenizer.ggml.model", gguf::Value::string(spm ? "llama" : "gpt2"));
    w.set("tokenizer.ggml.pre", gguf::Value::string(names[selector % names.size()]));
    w.set("tokenizer.ggml.tokens", gguf::Value::strings(tokens));
    w.set("tokenizer.ggml.token_type", gguf::Value::i32s(types));
    if (spm)
        w.set("tokenizer.ggml.scores", gguf::Value::f32s(scores));
    else
        w.set("tokenizer.ggml.merges", gguf::Value::strings(merges));
    const uint8_t specials = in.u8();
    // Ids up to n_tokens: the one past the end is rejected.
    if (specials & 1) w.set("tokenizer.ggml.bos_token_id", gguf::Value::u32(static_cast<uint32_t>(in.below(n_tokens + 1))));
    if (specials & 2) w.set("tokenizer.ggml.eos_token_id", gguf::Value::u32(static_cast<uint32_t>(in.below(n_tokens + 1))));
    if (specials & 4) w.set("tokenizer.ggml.add_bos_token", gguf::Value::boolean(specials & 8));
    if (specials & 16) w.set("tokenizer.ggml.add_eos_token", gguf::Value::boolean(specials & 32));
    if (spm && (specials & 32)) w.set("tokenizer.ggml.add_space_prefix", gguf::Value::boolean(specials & 64));
    const std::vector<uint8_t> bytes = w.to_bytes();
    const Tokenizer tok(Vocab::load(gguf::File::from_memory(bytes.data(), bytes.size(), "input-vocab.gguf")));

    TokenizeOptions o;
    o.add_bos = o.add_eos = (specials & 64) != 0;
    o.parse_special = (specials & 128) != 0;
    const std::string_view text = in.rest();
    const std::vector<TokenId> ids = tok.tokenize(text, o);
    for (const TokenId id : ids)
        if (!tok.vocab().valid(id)) broken("a token id outside the input vocabulary", text);
    (void)detokenize(tok.vocab(), ids, o.parse_special);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::vector<std::string> names = spec_names();
    const auto& specs = closed();
    fuzz::Input in(data, size);
    const uint8_t selector = in.u8();
    try {
        if (selector & 0x80) {
            run_input_vocab(in, names, selector, (selector & 0x40) != 0);
        } else {
            const uint8_t options = in.u8();
            check_closed(*specs[selector % specs.size()], in.rest(), options);
        }
    } catch (const tessel::Error&) {
        // Rejected input (an input vocabulary Vocab::load refuses, PCRE2 giving up): expected.
    }
    return 0;
}

// Small byte-level BPE and SentencePiece vocabularies built in memory for the vocab tests.
#pragma once

#include <string>
#include <vector>

#include "gguf/reader.hpp"
#include "gguf/writer.hpp"
#include "vocab/byte_level.hpp"
#include "vocab/byte_token.hpp"
#include "vocab/spm.hpp"
#include "vocab/vocab.hpp"

namespace tessel::vocab::test {

/// Token ids 0..255 are the byte symbols in byte order; add() appends more tokens.
struct TinyVocab {
    std::vector<std::string> tokens;
    std::vector<int32_t> types;
    std::vector<std::string> merges;  ///< "left right" in rank order

    TinyVocab() {
        for (int b = 0; b < 256; ++b) add(std::string(byte_to_symbol(static_cast<uint8_t>(b))));
    }
    /// Appends a token (text as stored, i.e. in byte-level symbols for Normal tokens); returns its id.
    TokenId add(const std::string& text, TokenType type = TokenType::Normal) {
        tokens.push_back(text);
        types.push_back(static_cast<int32_t>(type));
        return static_cast<TokenId>(tokens.size() - 1);
    }
    /// The id of a single byte's token.
    static TokenId byte(char c) { return static_cast<unsigned char>(c); }

    /// A writer holding the tokenizer keys (model gpt2, the given pre-tokenizer).
    gguf::Writer writer(const std::string& pre = "gpt-2") const {
        gguf::Writer w;
        w.set("general.architecture", gguf::Value::string("llama"));
        w.set("tokenizer.ggml.model", gguf::Value::string("gpt2"));
        w.set("tokenizer.ggml.pre", gguf::Value::string(pre));
        w.set("tokenizer.ggml.tokens", gguf::Value::strings(tokens));
        w.set("tokenizer.ggml.token_type", gguf::Value::i32s(types));
        w.set("tokenizer.ggml.merges", gguf::Value::strings(merges));
        return w;
    }
};

/// A SentencePiece vocabulary as llama.cpp's convert script writes one: 0 <unk> (Unknown), 1 <s>
/// and 2 </s> (Control), 3..258 the byte tokens <0x00>..<0xFF>; add() appends pieces.
struct TinySpmVocab {
    std::vector<std::string> tokens;
    std::vector<float> scores;
    std::vector<int32_t> types;

    TinySpmVocab() {
        add("<unk>", 0.0f, TokenType::Unknown);
        add("<s>", 0.0f, TokenType::Control);
        add("</s>", 0.0f, TokenType::Control);
        for (int b = 0; b < 256; ++b) add(byte_token_text(static_cast<uint8_t>(b)), 0.0f, TokenType::Byte);
    }
    /// Appends a piece; spaces in `text` are written as U+2581 for Normal pieces. Returns its id.
    TokenId add(const std::string& text, float score, TokenType type = TokenType::Normal) {
        tokens.push_back(type == TokenType::Normal ? spm_escape_spaces(text) : text);
        scores.push_back(score);
        types.push_back(static_cast<int32_t>(type));
        return static_cast<TokenId>(tokens.size() - 1);
    }
    /// The id of byte `b`'s byte token.
    static TokenId byte(char b) { return 3 + static_cast<unsigned char>(b); }

    /// A writer holding the tokenizer keys (model llama, no pre, no add_* flags: the defaults),
    /// the scores only `with_scores`.
    gguf::Writer writer(bool with_scores = true) const {
        gguf::Writer w;
        w.set("general.architecture", gguf::Value::string("llama"));
        w.set("tokenizer.ggml.model", gguf::Value::string("llama"));
        w.set("tokenizer.ggml.tokens", gguf::Value::strings(tokens));
        if (with_scores) w.set("tokenizer.ggml.scores", gguf::Value::f32s(scores));
        w.set("tokenizer.ggml.token_type", gguf::Value::i32s(types));
        return w;
    }
};

/// Loads the vocabulary of a writer's file (the bytes only live during the call; Vocab copies).
inline Vocab load(const gguf::Writer& w) {
    const std::vector<uint8_t> bytes = w.to_bytes();
    const gguf::File f = gguf::File::from_memory(bytes.data(), bytes.size(), "tiny.gguf");
    return Vocab::load(f);
}

}  // namespace tessel::vocab::test

// Small byte-level BPE vocabularies built in memory for the vocab tests.
#pragma once

#include <string>
#include <vector>

#include "gguf/reader.hpp"
#include "gguf/writer.hpp"
#include "vocab/byte_level.hpp"
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

/// Loads the vocabulary of a writer's file (the bytes only live during the call; Vocab copies).
inline Vocab load(const gguf::Writer& w) {
    const std::vector<uint8_t> bytes = w.to_bytes();
    const gguf::File f = gguf::File::from_memory(bytes.data(), bytes.size(), "tiny.gguf");
    return Vocab::load(f);
}

}  // namespace tessel::vocab::test

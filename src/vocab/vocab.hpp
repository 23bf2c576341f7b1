// A tokenizer vocabulary read from GGUF metadata (keys tokenizer.ggml.*): token texts, types and
// scores, BPE merges, byte-fallback tokens, special token ids and the add-BOS/EOS/space-prefix
// flags. Works on vocab-only GGUF files.
//
// Format source: GGUF specification, "Tokenizer" keys (ggml docs/gguf.md); token type values
// are those of gguf-py's TokenType. Supported models: byte-level BPE (tokenizer.ggml.model =
// "gpt2"), SentencePiece BPE ("llama") and gemma4's SentencePiece-style merges BPE ("gemma4");
// defaults of absent keys follow llama.cpp's loader.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gguf/reader.hpp"
#include "vocab/pretokenize.hpp"

namespace tessel::vocab {

/// A token id: an index into the vocabulary.
using TokenId = int32_t;
/// "No such token" (an absent special id, a text that is not a token).
inline constexpr TokenId kNoToken = -1;

/// tokenizer.ggml.token_type values.
enum class TokenType : int32_t {
    Undefined = 0,
    Normal = 1,
    Unknown = 2,
    Control = 3,       ///< e.g. <|endoftext|>: matched in text only when special tokens are parsed
    UserDefined = 4,   ///< added tokens: always matched in text before pre-tokenization
    Unused = 5,
    Byte = 6,
};

/// The tokenizer algorithm named by tokenizer.ggml.model.
enum class VocabModel {
    Bpe,  ///< "gpt2", "gemma4": BPE with merges and a regex pre-tokenizer (PreTokenizerSpec)
    Spm,  ///< "llama": SentencePiece BPE by token score, spaces written as U+2581, byte fallback
};

class Vocab {
public:
    /// Reads the tokenizer keys of `file`:
    /// - tokenizer.ggml.model (string, required): "gpt2" (Bpe), "llama" (Spm) or "gemma4" (Bpe with
    ///   the gemma4 pre-tokenizer whatever tokenizer.ggml.pre says, BOS always added when there
    ///   is one); any other
    ///   value throws Error(Unsupported) naming it.
    /// - tokenizer.ggml.tokens (string array, required, 1..2^31-1 entries).
    /// - tokenizer.ggml.token_type (integer array, optional: all Normal when absent; same length
    ///   as tokens, values 0..6). A Byte token's text must be `<0xXX>` (byte_token.hpp), else
    ///   Error(InvalidArgument) naming the token id and its text.
    /// - tokenizer.ggml.scores (FLOAT32 array, optional: all 0 when absent; same length as
    ///   tokens, no NaN): the SentencePiece merge priority, higher first.
    /// - tokenizer.ggml.merges (string array, required for BPE, ignored for SPM): "left right",
    ///   split at the first space after the first byte.
    /// - tokenizer.ggml.{bos,eos,eot,padding,unknown}_token_id (integer, optional, < n_tokens).
    ///   SPM defaults when absent (as llama.cpp): BOS 1, EOS 2, unknown 0, each only if in range
    ///   (so an SPM vocabulary always has an unknown token).
    /// - tokenizer.ggml.add_bos_token / add_eos_token (bool, optional; defaults: BOS when there is
    ///   a BOS id and, for BPE, the pre-tokenizer asks for it (SPM always does); no EOS). A key
    ///   that asks for a BOS/EOS without an id is an error.
    /// - tokenizer.ggml.add_space_prefix (bool, optional; default true for SPM, false for BPE).
    /// - general.name (string, optional): when it contains "phi-3" or "phi3" (any case), the
    ///   special tokens strip whitespace after them (see rstrip()), as llama.cpp sets for Phi-3.
    /// - tokenizer.ggml.pre (string, optional, "default" when absent): for BPE an unknown value
    ///   throws Error(Unsupported) listing the supported ones; SPM does not use it.
    /// A key with the wrong type throws Error(GgufWrongValueType) (the GGUF reader already rejects
    /// mistyped well-known keys such as tokens); a missing required key or bad content throws
    /// Error(InvalidArgument). Messages start with the file name and name the key.
    static Vocab load(const gguf::File& file);

    VocabModel model() const { return model_; }
    /// The tokenizer.ggml.pre value ("default" when the key is absent).
    const std::string& pre() const { return pre_; }
    /// The pre-tokenizer selected by pre() (BPE; SPM vocabularies get "default", unused).
    const PreTokenizerSpec& pre_tokenizer() const { return *pre_spec_; }

    /// Number of tokens; ids are 0..size()-1.
    int32_t size() const { return static_cast<int32_t>(texts_.size()); }
    /// Text of token `id` as stored (byte-level symbols for BPE tokens, U+2581 for spaces in SPM
    /// tokens). `id` must be valid.
    const std::string& text(TokenId id) const { return texts_[static_cast<size_t>(id)]; }
    /// Type of token `id`. `id` must be valid.
    TokenType type(TokenId id) const { return types_[static_cast<size_t>(id)]; }
    /// SentencePiece score of token `id` (0 when the file has none). `id` must be valid.
    float score(TokenId id) const { return scores_.empty() ? 0.0f : scores_[static_cast<size_t>(id)]; }
    /// The byte a Byte token stands for (0..255), or -1 when `id` is not a Byte token.
    int byte_value(TokenId id) const;
    /// The token that encodes byte `b` in SPM byte fallback, as llama.cpp looks it up: the token
    /// whose text is byte_token_text(b) ("<0x0A>"), else the one whose text is that single
    /// byte, else kNoToken.
    TokenId byte_token(uint8_t b) const { return byte_tokens_[b]; }
    /// True when tokenize() drops the whitespace that follows a match of special token `id` (a
    /// per-model rule of llama.cpp, no GGUF key: Phi-3's special tokens but <unk>, <s> and
    /// <|endoftext|>). `id` must be valid.
    bool rstrip(TokenId id) const { return !rstrip_.empty() && rstrip_[static_cast<size_t>(id)]; }
    /// True when 0 <= id < size().
    bool valid(TokenId id) const { return id >= 0 && id < size(); }
    /// The token whose text is exactly `text` (the last one when texts repeat), or kNoToken.
    TokenId find(std::string_view text) const;

    /// BPE merges in rank order (rank = index): the pair of token texts merged.
    const std::vector<std::pair<std::string, std::string>>& merges() const { return merges_; }

    TokenId bos() const { return bos_; }  ///< kNoToken when absent
    TokenId eos() const { return eos_; }
    TokenId eot() const { return eot_; }
    TokenId pad() const { return pad_; }
    TokenId unk() const { return unk_; }
    /// Whether tokenize() prepends BOS / appends EOS by default.
    bool add_bos() const { return add_bos_; }
    bool add_eos() const { return add_eos_; }
    /// SPM: a space is put before text at the start and after each special token; detokenize
    /// drops the first token's leading space.
    bool add_space_prefix() const { return add_space_prefix_; }

private:
    struct StringHash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };

    VocabModel model_ = VocabModel::Bpe;
    std::string pre_;
    const PreTokenizerSpec* pre_spec_ = nullptr;
    std::vector<std::string> texts_;
    std::vector<TokenType> types_;
    std::vector<float> scores_;  ///< empty when the file has no scores
    std::array<TokenId, 256> byte_tokens_{};
    std::vector<bool> rstrip_;  ///< empty when no token strips
    std::unordered_map<std::string, TokenId, StringHash, std::equal_to<>> ids_;
    std::vector<std::pair<std::string, std::string>> merges_;
    TokenId bos_ = kNoToken, eos_ = kNoToken, eot_ = kNoToken, pad_ = kNoToken, unk_ = kNoToken;
    bool add_bos_ = false, add_eos_ = false, add_space_prefix_ = false;
};

}  // namespace tessel::vocab

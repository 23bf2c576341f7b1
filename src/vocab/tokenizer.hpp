// Text -> token ids for a loaded vocabulary: special tokens are cut out of the text first, then
// each remaining fragment is encoded by the vocabulary's model: BPE (repaired to valid UTF-8,
// pre-tokenized by regex, encoded word by word; byte-level, or for gemma4 raw UTF-8 with spaces as
// U+2581) or SentencePiece (spm.hpp).
#pragma once

#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "vocab/bpe.hpp"
#include "vocab/pretokenize.hpp"
#include "vocab/spm.hpp"
#include "vocab/vocab.hpp"

namespace tessel::vocab {

/// What tokenize() adds and recognizes besides plain text.
struct TokenizeOptions {
    bool add_bos = true;         ///< prepend BOS when the vocabulary asks for it (Vocab::add_bos)
    bool add_eos = true;         ///< append EOS when the vocabulary asks for it (Vocab::add_eos)
    bool parse_special = false;  ///< the text of a Control or Unknown token becomes that token
};

class Tokenizer {
public:
    /// Takes the vocabulary and builds its model: for BPE the merge table and the pre-tokenizer
    /// regexes; SPM needs nothing beyond the vocabulary.
    explicit Tokenizer(Vocab vocab);

    const Vocab& vocab() const { return *vocab_; }

    /// Token ids of `text` (any bytes). In order:
    /// 1. Special tokens are cut out, longest text first (ties: lower id first): UserDefined
    ///    tokens always, Control and Unknown ones only with parse_special. Matching is by exact
    ///    bytes; the remaining fragments are plain text. After a token with Vocab::rstrip the
    ///    whitespace that follows it is dropped.
    /// 2. BPE: in each fragment (spaces written as U+2581 first for a spm_style pre-tokenizer,
    ///    gemma4), bytes that do not start a valid UTF-8 sequence become U+FFFD; the
    ///    pre-tokenizer cuts it into words and BPE encodes each word.
    ///    SPM: a fragment at the start of the text or right after a special token gets a space
    ///    before it when Vocab::add_space_prefix (as llama.cpp); SpmModel encodes it as is.
    /// BOS/EOS are added per `opts`. Thread-safe.
    std::vector<TokenId> tokenize(std::string_view text, const TokenizeOptions& opts = {}) const;

private:
    void encode_bpe(std::string_view text, std::vector<TokenId>& out) const;

    std::unique_ptr<const Vocab> vocab_;  // on the heap: the models keep its address across moves
    std::optional<PreTokenizer> pre_;     // BPE only
    std::optional<BpeModel> bpe_;
    std::optional<SpmModel> spm_;
    std::vector<TokenId> specials_;  // Control, UserDefined and Unknown tokens, longest first
};

}  // namespace tessel::vocab

// Text -> token ids for a loaded vocabulary: special tokens are cut out of the text first, the
// rest is repaired to valid UTF-8, pre-tokenized by regex and encoded word by word with BPE.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "vocab/bpe.hpp"
#include "vocab/pretokenize.hpp"
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
    /// Takes the vocabulary and builds the BPE merge table and the pre-tokenizer regexes.
    explicit Tokenizer(Vocab vocab);

    const Vocab& vocab() const { return *vocab_; }

    /// Token ids of `text` (any bytes). In order:
    /// 1. Special tokens are cut out, longest text first (ties: lower id first): UserDefined
    ///    tokens always, Control and Unknown ones only with parse_special. Matching is by exact
    ///    bytes; the remaining fragments are plain text.
    /// 2. In each fragment, bytes that do not start a valid UTF-8 sequence become U+FFFD.
    /// 3. The pre-tokenizer cuts each fragment into words; BPE encodes each word.
    /// BOS/EOS are added per `opts`. Thread-safe.
    std::vector<TokenId> tokenize(std::string_view text, const TokenizeOptions& opts = {}) const;

private:
    void encode_text(std::string_view text, std::vector<TokenId>& out) const;

    std::unique_ptr<const Vocab> vocab_;  // on the heap: bpe_ keeps its address across moves
    PreTokenizer pre_;
    BpeModel bpe_;
    std::vector<TokenId> specials_;  // Control, UserDefined and Unknown tokens, longest first
};

}  // namespace tessel::vocab

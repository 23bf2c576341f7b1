// SentencePiece BPE as llama.cpp runs it for tokenizer.ggml.model = "llama": spaces are written
// as U+2581 "▁", the text starts as one symbol per UTF-8 character, and the adjacent pair whose
// joined text is the vocabulary token of highest score is merged first (ties: the leftmost),
// until no joined pair is a token. A final symbol that is not a token falls back to byte tokens.
//
// Format source: SentencePiece's BPE model (google/sentencepiece bpe_model.cc: merge by piece
// score, byte_fallback), with the symbol split and fallback order of llama.cpp's SPM tokenizer.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "vocab/vocab.hpp"

namespace tessel::vocab {

/// U+2581 LOWER ONE EIGHTH BLOCK, the SentencePiece stand-in for a space.
inline constexpr std::string_view kSpmSpace = "\xE2\x96\x81";

/// `text` with every ' ' (0x20 only) replaced by kSpmSpace.
std::string spm_escape_spaces(std::string_view text);

/// `text` with every kSpmSpace replaced by ' '.
std::string spm_unescape_spaces(std::string_view text);

class SpmModel {
public:
    /// Uses the texts, scores and byte tokens of `vocab` (which must outlive the model and stay
    /// at its address). Nothing is precomputed: candidate pairs are looked up in the
    /// vocabulary's hash map, so construction is O(1) whatever the vocabulary size.
    explicit SpmModel(const Vocab& vocab) : vocab_(&vocab) {}

    /// Appends the tokens of `text` (raw bytes, not escaped) to `out`. With `space_prefix` a space
    /// is put before the text first. Symbols are cut by the lead byte's UTF-8 length (so
    /// invalid bytes form odd symbols, as in llama.cpp); a final symbol that is not a token is
    /// written byte by byte with Vocab::byte_token, a byte without one as the unknown token (an
    /// SPM vocabulary always has one; llama.cpp would throw). Thread-safe.
    void encode(std::string_view text, bool space_prefix, std::vector<TokenId>& out) const;

private:
    void emit(std::string_view piece, std::vector<TokenId>& out) const;

    const Vocab* vocab_;
};

}  // namespace tessel::vocab

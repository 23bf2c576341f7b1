// BPE: turns one pre-tokenized word into token ids by applying the vocabulary's merges by rank
// (lowest first; among equal ranks the leftmost pair first).
//
// Byte-level (GPT-2 style): a word starts as one symbol per byte (its byte-level symbol text).
// Raw UTF-8 (gemma4, PreTokenizerSpec::spm_style): one symbol per UTF-8 character of the word as
// it is (cut as llama.cpp does, utf8_lead_length). Symbols are identified by ids: vocabulary
// tokens keep their token id; texts that occur only inside merges get ids from size() up, so a
// merge chain through a text that is not a token still applies. A final symbol that is not a
// token is emitted byte by byte: byte-level, each byte of its symbol text that is itself a token
// (in practice printable ASCII); raw UTF-8, each byte's <0xXX> token; bytes without one are
// dropped (as llama.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "vocab/vocab.hpp"

namespace tessel::vocab {

class BpeModel {
public:
    /// Builds the merge table of `vocab` (which must outlive the model and stay at its address).
    /// `ignore_merges`: a word whose whole symbol text is a token becomes that token directly.
    /// `raw_utf8`: merges run on raw UTF-8 characters, and a word of newlines that is a token
    /// becomes that token directly (gemma4).
    BpeModel(const Vocab& vocab, bool ignore_merges, bool raw_utf8);

    /// Appends the tokens of `word` (raw bytes of one pre-tokenized word) to `out`.
    void encode(std::string_view word, std::vector<TokenId>& out) const;

private:
    struct Merge {
        int32_t rank;
        int32_t result;  ///< symbol id of left + right
    };
    static uint64_t pair_key(int32_t left, int32_t right) {
        return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
    }
    /// Symbol id of `text`: its token id, else an id >= vocab size (added when `add`), else -1.
    int32_t symbol_id(const std::string& text, bool add);
    /// Symbol id of `text` without adding one.
    int32_t find_symbol(std::string_view text) const;
    const Merge* find_merge(int32_t left, int32_t right) const;
    void emit(std::string_view bytes, int32_t id, std::vector<TokenId>& out) const;

    const Vocab* vocab_;
    bool ignore_merges_;
    bool raw_utf8_;
    std::unordered_map<std::string, int32_t> extra_ids_;  ///< merge texts that are not tokens
    std::unordered_map<uint64_t, Merge> merges_;          ///< by (left id, right id)
    int32_t byte_ids_[256];                               ///< symbol id of each single byte
};

}  // namespace tessel::vocab

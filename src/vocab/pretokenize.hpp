// Pre-tokenizers of byte-level BPE vocabularies: the regular expressions that cut text into
// words before BPE merges run, selected by the GGUF key tokenizer.ggml.pre.
//
// Format source: the regex lists are the published pre-tokenizer patterns of each model family
// (HF tokenizer.json "pre_tokenizer" Split patterns, as named by llama.cpp's convert scripts in
// tokenizer.ggml.pre). Case-insensitive contractions `(?i:'s|...)` are written with explicit
// ASCII classes so no Unicode case folding applies. Matching uses PCRE2 in UTF mode with Unicode
// properties (\p{L}, \p{N}, \s, ...).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tessel::vocab {

/// One pre-tokenizer: the regexes applied in order and the BPE options that come with it.
struct PreTokenizerSpec {
    std::vector<std::string> names;    ///< tokenizer.ggml.pre values that select it
    std::vector<std::string> regexes;  ///< applied in order, each to the pieces of the previous one
    bool ignore_merges = false;        ///< a word that is itself a token is not merged (Llama 3)
    bool add_bos = false;              ///< default of tokenizer.ggml.add_bos_token when absent
    /// SentencePiece-style BPE (gemma4): spaces are written as U+2581 before splitting, merges
    /// run on raw UTF-8 characters (no byte-level alphabet), bytes fall back to <0xXX> tokens, a
    /// word of newlines that is a token is taken whole, and BOS is always added.
    bool spm_style = false;
};

/// The spec selected by a tokenizer.ggml.pre value, or nullptr when tessel does not know it.
/// An absent key is looked up as "default".
const PreTokenizerSpec* find_pre_tokenizer(std::string_view pre);

/// Every supported tokenizer.ggml.pre value, comma separated (for error messages).
std::string supported_pre_tokenizers();

/// A piece of text: byte offset and length.
struct TextSpan {
    size_t offset;
    size_t length;
};

/// The compiled regexes of one spec. Thread-safe: split() may run concurrently.
class PreTokenizer {
public:
    /// Compiles the spec's regexes. Throws tessel::Error(InvalidArgument) naming the pattern
    /// when one does not compile (a bug in the table, not in input).
    explicit PreTokenizer(const PreTokenizerSpec& spec);
    ~PreTokenizer();
    PreTokenizer(PreTokenizer&&) noexcept;
    PreTokenizer& operator=(PreTokenizer&&) noexcept;

    /// Cuts valid UTF-8 `text` into words: each regex splits every current piece into its
    /// matches and the text between them (both kept, in order); a match never crosses a piece,
    /// and lookarounds see only the piece. The spans cover `text` exactly.
    /// Throws tessel::Error(InvalidArgument) when PCRE2 gives up (e.g. its memory limit).
    std::vector<TextSpan> split(std::string_view text) const;

private:
    struct Compiled;
    std::vector<std::unique_ptr<Compiled>> regexes_;
};

}  // namespace tessel::vocab

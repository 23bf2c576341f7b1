// Token ids -> text: the bytes each token stands for, and a streaming decoder that never cuts a
// UTF-8 character in two when tokens are printed one at a time.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "vocab/vocab.hpp"

namespace tessel::vocab {

/// The bytes token `id` stands for (llama.cpp's token_to_piece with no strip):
/// - Normal: BPE: its byte-level symbols decoded to bytes (may be part of a UTF-8 character);
///   SPM and spm_style BPE (gemma4): its text with U+2581 written as a space;
/// - Byte: the one byte of its <0xXX> text;
/// - UserDefined: its text as stored;
/// - Control and Unknown: its text when `special`, else nothing;
/// - Unused and Undefined: nothing.
/// Throws tessel::Error(InvalidArgument) when `id` is not in the vocabulary.
std::string token_to_piece(const Vocab& vocab, TokenId id, bool special);

/// The concatenated pieces of `ids` (see token_to_piece), as llama.cpp's detokenize (nothing
/// removed, `special` rendering Control/Unknown texts): when the vocabulary adds a space prefix
/// (Vocab::add_space_prefix, SPM), one leading space of the first token's piece is dropped, so
/// that detokenize(tokenize(x)) is x; a first token with no piece (BOS unrendered) drops
/// nothing. Streaming with token_to_piece and Utf8Stream drops no space.
std::string detokenize(const Vocab& vocab, std::span<const TokenId> ids, bool special);

/// Joins pieces as they are produced and releases text only up to the last complete UTF-8
/// character: a character split across tokens is held back until its last byte arrives.
/// Bytes that can never become valid UTF-8 are released as they are.
class Utf8Stream {
public:
    /// Appends `piece` and returns what can be shown now (possibly empty).
    std::string push(std::string_view piece);
    /// Returns everything still held back (an incomplete character at the end of the stream).
    std::string flush();

private:
    std::string pending_;
};

}  // namespace tessel::vocab

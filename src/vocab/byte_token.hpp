// Byte-fallback tokens of SentencePiece vocabularies: a token of type Byte whose text is
// `<0xXX>` (two hex digits) stands for that one raw byte, so any text can be encoded even when
// its characters are not in the vocabulary.
//
// Format source: SentencePiece's byte_fallback option (model.proto, "byte pieces" named
// <0x00>..<0xFF>), as written into tokenizer.ggml.tokens by llama.cpp's convert scripts.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tessel::vocab {

/// The byte value (0..255) of a byte-token text: exactly "<0x", two hex digits (either case),
/// ">". Returns -1 for any other text ("<0x-1>", "<0xZZ>", "<0x>", "<0x100>", ...).
int parse_byte_token(std::string_view text);

/// The canonical text of the byte token for `b`: "<0x" + two uppercase hex digits + ">".
std::string byte_token_text(uint8_t b);

}  // namespace tessel::vocab

// The byte-level alphabet of GPT-2 style BPE: each of the 256 byte values is written as one
// printable Unicode code point, so token texts never contain raw spaces or control bytes.
//
// Format source: OpenAI GPT-2 encoder.py `bytes_to_unicode` (a published table, also used by
// HF tokenizers' ByteLevel pre-tokenizer): bytes '!'..'~', U+00A1..U+00AC and U+00AE..U+00FF map
// to the same code point; the other 68 bytes map, in increasing order, to U+0100, U+0101, ...
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tessel::vocab {

/// UTF-8 text (1 or 2 bytes) of the code point that stands for byte `b`.
std::string_view byte_to_symbol(uint8_t b);

/// `bytes` written in the byte-level alphabet (each byte becomes its symbol).
std::string bytes_to_symbols(std::string_view bytes);

/// Inverse of bytes_to_symbols for a token text: each code point of the alphabet becomes its
/// byte. Code points outside the alphabet, and invalid UTF-8, are copied through unchanged.
std::string symbols_to_bytes(std::string_view text);

}  // namespace tessel::vocab

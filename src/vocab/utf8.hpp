// UTF-8 helpers for the tokenizer: validation by RFC 3629 rules, repair of invalid input and the
// boundary of the last complete sequence (used when streaming decoded text).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/utf8_encode.hpp"

namespace tessel::vocab {

/// Length in bytes (1..4) of the valid UTF-8 sequence at the start of `s`, or 0 when `s` is empty
/// or does not start with one. Valid means RFC 3629: shortest form, no surrogates (U+D800..DFFF),
/// nothing above U+10FFFF.
size_t utf8_valid_length(std::string_view s);

/// `s` with every byte that does not start a valid sequence replaced by U+FFFD (EF BF BD), one
/// replacement per bad byte. Valid input is returned unchanged.
std::string utf8_repair(std::string_view s);

/// Length of the longest prefix of `s` that does not end inside an incomplete but still
/// completable sequence: at most 3 trailing bytes that a later byte could complete are excluded.
/// Invalid bytes are never held back.
size_t utf8_complete_prefix(std::string_view s);

/// Bytes (1..4) of the character that starts with `lead`, judged by its high bits alone, as
/// llama.cpp cuts text into BPE/SPM symbols: 0x00..0xBF 1 (continuation bytes too), 0xC0..0xDF 2,
/// 0xE0..0xEF 3, 0xF0..0xFF 4. Callers clip it to the bytes left.
size_t utf8_lead_length(unsigned char lead);

using tessel::utf8_append;  // core/utf8_encode.hpp

}  // namespace tessel::vocab

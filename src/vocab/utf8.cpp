#include "vocab/utf8.hpp"

namespace tessel::vocab {
namespace {

bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

/// Expected length of a sequence starting with `lead`, or 0 for bytes that never start one
/// (continuation bytes, C0/C1 overlong leads, F5..FF).
size_t sequence_length(unsigned char lead) {
    if (lead < 0x80) return 1;
    if (lead < 0xC2) return 0;
    if (lead < 0xE0) return 2;
    if (lead < 0xF0) return 3;
    if (lead < 0xF5) return 4;
    return 0;
}

/// Allowed range of the second byte after `lead` (RFC 3629 table); later bytes are 80..BF.
bool second_byte_ok(unsigned char lead, unsigned char c) {
    switch (lead) {
        case 0xE0: return c >= 0xA0 && c <= 0xBF;  // no overlong 3-byte forms
        case 0xED: return c >= 0x80 && c <= 0x9F;  // no surrogates
        case 0xF0: return c >= 0x90 && c <= 0xBF;  // no overlong 4-byte forms
        case 0xF4: return c >= 0x80 && c <= 0x8F;  // nothing above U+10FFFF
        default: return is_continuation(c);
    }
}

/// Number of bytes at the start of `s` (at most the sequence length) that are consistent with
/// a valid sequence.
size_t valid_prefix(std::string_view s, size_t need) {
    const auto lead = static_cast<unsigned char>(s[0]);
    size_t i = 1;
    for (; i < need && i < s.size(); ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (!(i == 1 ? second_byte_ok(lead, c) : is_continuation(c))) break;
    }
    return i;
}

}  // namespace

size_t utf8_valid_length(std::string_view s) {
    if (s.empty()) return 0;
    const size_t need = sequence_length(static_cast<unsigned char>(s[0]));
    if (need == 0) return 0;
    return valid_prefix(s, need) == need ? need : 0;
}

std::string utf8_repair(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    size_t i = 0;
    while (i < s.size()) {
        const size_t n = utf8_valid_length(s.substr(i));
        if (n == 0) {
            out += "\xEF\xBF\xBD";
            ++i;
        } else {
            out.append(s, i, n);
            i += n;
        }
    }
    return out;
}

size_t utf8_complete_prefix(std::string_view s) {
    // The last sequence starts at most 3 bytes before the end.
    const size_t first = s.size() > 3 ? s.size() - 3 : 0;
    for (size_t start = s.size(); start-- > first;) {
        const auto c = static_cast<unsigned char>(s[start]);
        if (is_continuation(c)) continue;
        const size_t need = sequence_length(c);
        const size_t have = s.size() - start;
        // Hold back only a proper prefix of a sequence that is valid so far.
        if (need > have && valid_prefix(s.substr(start), need) == have) return start;
        return s.size();
    }
    return s.size();
}

size_t utf8_lead_length(unsigned char lead) {
    if (lead < 0xC0) return 1;
    if (lead < 0xE0) return 2;
    if (lead < 0xF0) return 3;
    return 4;
}

}  // namespace tessel::vocab

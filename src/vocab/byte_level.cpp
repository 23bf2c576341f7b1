#include "vocab/byte_level.hpp"

#include <array>

#include "vocab/utf8.hpp"

namespace tessel::vocab {
namespace {

/// Bytes that keep their own code point in the alphabet.
bool maps_to_itself(int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); }

constexpr int kFirstShifted = 256;      // code point of the first byte that does not map to itself
constexpr int kAlphabetEnd = 256 + 68;  // one past the last code point used

struct Alphabet {
    std::array<uint32_t, 256> code_point{};
    std::array<std::string, 256> text;
    std::array<int16_t, kAlphabetEnd> byte_of{};  // -1: code point not in the alphabet

    Alphabet() {
        byte_of.fill(-1);
        int next = kFirstShifted;
        for (int b = 0; b < 256; ++b) {
            code_point[b] = static_cast<uint32_t>(maps_to_itself(b) ? b : next++);
            utf8_append(text[b], code_point[b]);
            byte_of[code_point[b]] = static_cast<int16_t>(b);
        }
    }
};

const Alphabet& alphabet() {
    static const Alphabet table;
    return table;
}

/// Code point of the valid 1..2-byte sequence at the start of `s` (length n), else -1.
int32_t small_code_point(std::string_view s, size_t n) {
    if (n == 1) return static_cast<unsigned char>(s[0]);
    if (n == 2) return ((static_cast<unsigned char>(s[0]) & 0x1F) << 6) | (static_cast<unsigned char>(s[1]) & 0x3F);
    return -1;  // 3- and 4-byte sequences are above U+07FF, outside the alphabet
}

}  // namespace

std::string_view byte_to_symbol(uint8_t b) { return alphabet().text[b]; }

std::string bytes_to_symbols(std::string_view bytes) {
    const Alphabet& a = alphabet();
    std::string out;
    out.reserve(bytes.size() * 2);
    for (char c : bytes) out += a.text[static_cast<unsigned char>(c)];
    return out;
}

std::string symbols_to_bytes(std::string_view text) {
    const Alphabet& a = alphabet();
    std::string out;
    out.reserve(text.size());
    size_t i = 0;
    while (i < text.size()) {
        const std::string_view rest = text.substr(i);
        const size_t n = utf8_valid_length(rest);
        const int32_t cp = small_code_point(rest, n);
        if (cp >= 0 && cp < kAlphabetEnd && a.byte_of[cp] >= 0) {
            out += static_cast<char>(a.byte_of[cp]);
        } else {
            out.append(rest.substr(0, n == 0 ? 1 : n));  // not a symbol: copy as is
        }
        i += n == 0 ? 1 : n;
    }
    return out;
}

}  // namespace tessel::vocab

#include "vocab/byte_token.hpp"

namespace tessel::vocab {
namespace {

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

}  // namespace

int parse_byte_token(std::string_view text) {
    if (text.size() != 6 || !text.starts_with("<0x") || text[5] != '>') return -1;
    const int hi = hex_digit(text[3]);
    const int lo = hex_digit(text[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

std::string byte_token_text(uint8_t b) {
    constexpr char kHex[] = "0123456789ABCDEF";
    return std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">";
}

}  // namespace tessel::vocab

#include "common/escapes.hpp"

namespace tessel::tools {
namespace {

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

char simple_escape(char c) {
    switch (c) {
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case 'a': return '\a';
        case 'b': return '\b';
        case 'f': return '\f';
        case 'v': return '\v';
        case '0': return '\0';
        case '\'': case '"': case '?': case '\\': return c;
        default: return 1;  // not a simple escape (0x01 never is one)
    }
}

}  // namespace

std::string process_escapes(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '\\' || i + 1 == text.size()) {
            out += text[i];
            continue;
        }
        const char next = text[i + 1];
        if (const char c = simple_escape(next); c != 1) {
            out += c;
            ++i;
        } else if (next == 'x' && i + 2 < text.size() && hex_value(text[i + 2]) >= 0) {
            int v = hex_value(text[i + 2]);
            size_t used = 3;
            if (i + 3 < text.size() && hex_value(text[i + 3]) >= 0) {
                v = v * 16 + hex_value(text[i + 3]);
                used = 4;
            }
            out += static_cast<char>(v);
            i += used - 1;
        } else {
            out += '\\';  // unknown escape: kept as written
        }
    }
    return out;
}

}  // namespace tessel::tools

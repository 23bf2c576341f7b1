// Text shown by the CLI for things read from GGUF files.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>

namespace tessel::cli {

/// `s` with control characters (< 0x20, 0x7f) written as \xNN, so text read from a file cannot
/// drive the terminal or break a table.
inline std::string printable(const std::string& s) {
    std::string out;
    out.reserve(s.size());
    for (unsigned char c : s) {
        if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

/// A tensor's shape in ne order (innermost first), e.g. "[576, 49152]".
inline std::string shape_text(std::span<const int64_t> ne) {
    std::string s = "[";
    for (size_t d = 0; d < ne.size(); ++d) s += (d ? ", " : "") + std::to_string(ne[d]);
    return s + "]";
}

}  // namespace tessel::cli

// Text shown by the CLI for things read from GGUF files.
#pragma once

#include <cstdio>
#include <string>

#include "gguf/reader.hpp"

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

/// A tensor's shape in ne order, e.g. "[576, 49152]" (n_dims entries).
inline std::string shape_text(const gguf::TensorInfo& t) {
    std::string s = "[";
    for (uint32_t d = 0; d < t.n_dims; ++d) s += (d ? ", " : "") + std::to_string(t.ne[d]);
    return s + "]";
}

}  // namespace tessel::cli

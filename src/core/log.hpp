// Logging for every layer: one line per message, to the callback the program installed
// (tessel::set_log_callback, include/tessel/log.hpp) or else to stderr.
#pragma once

#include <string_view>

#include "tessel/log.hpp"

namespace tessel {

/// Delivers `text` (one line, no trailing newline) at `level`.
void log(LogLevel level, std::string_view text);

/// printf-style log(): formats, then delivers the line.
[[gnu::format(printf, 2, 3)]] void logf(LogLevel level, const char* format, ...);

}  // namespace tessel

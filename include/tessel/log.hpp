// Where tessel's diagnostic messages go.
//
// tessel writes few messages: the NPU host runtime's traces (TESSEL_NPU_VERBOSE, Debug), its
// per-op profile (TESSEL_NPU_PROFILE, Info) and notes about settings (Warn). By default each goes
// to stderr as one line. A program that wants them elsewhere (a GUI, a logger, a test) installs
// a callback. Errors are never logged: they are thrown (tessel::Error) and the caller decides.
#pragma once

#include <functional>
#include <string_view>

#include "tessel/export.h"

namespace tessel {

enum class LogLevel { Debug, Info, Warn, Error };

/// Receives one message: a single line of text without its trailing newline. Called on the
/// thread that logs (tessel's worker threads included), one call at a time (calls are
/// serialized by tessel); it must not throw.
using LogCallback = std::function<void(LogLevel level, std::string_view text)>;

/// Sends every later message to `callback`; an empty callback restores the default (stderr,
/// one line per message). Thread-safe.
TESSEL_API void set_log_callback(LogCallback callback);

/// "debug", "info", "warn" or "error".
TESSEL_API const char* log_level_name(LogLevel level);

}  // namespace tessel

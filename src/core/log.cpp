#include "core/log.hpp"

#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <string>
#include <utility>

namespace tessel {
namespace {

struct Sink {
    std::mutex mu;  // serializes deliveries and guards `callback`
    LogCallback callback;
};

Sink& sink() {
    static Sink s;
    return s;
}

}  // namespace

void set_log_callback(LogCallback callback) {
    Sink& s = sink();
    std::lock_guard lock(s.mu);
    s.callback = std::move(callback);
}

const char* log_level_name(LogLevel level) {
    switch (level) {
        case LogLevel::Debug: return "debug";
        case LogLevel::Info: return "info";
        case LogLevel::Warn: return "warn";
        case LogLevel::Error: return "error";
    }
    return "unknown";
}

void log(LogLevel level, std::string_view text) {
    Sink& s = sink();
    std::lock_guard lock(s.mu);
    if (s.callback) {
        s.callback(level, text);
        return;
    }
    std::fprintf(stderr, "%.*s\n", static_cast<int>(text.size()), text.data());
}

void logf(LogLevel level, const char* format, ...) {
    va_list args;
    va_start(args, format);
    va_list again;
    va_copy(again, args);
    const int n = std::vsnprintf(nullptr, 0, format, args);
    va_end(args);
    std::string text(n > 0 ? static_cast<size_t>(n) : 0, '\0');
    if (n > 0) std::vsnprintf(text.data(), text.size() + 1, format, again);
    va_end(again);
    log(level, text);
}

}  // namespace tessel

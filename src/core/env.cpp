#include "core/env.hpp"

#include <charconv>
#include <cstdlib>

#include "tessel/errors.hpp"

namespace tessel::env {

std::optional<std::string> get(const char* name) {
    const char* v = std::getenv(name);
    if (!v) return std::nullopt;
    if (!*v) throw Error(ErrorCode::Environment, std::string(name) + " is set but empty: unset it for the default");
    return std::string(v);
}

void invalid(const char* name, std::string_view value, std::string_view expected) {
    throw Error(ErrorCode::Environment, std::string(name) + "='" + std::string(value) + "': expected " + std::string(expected));
}

uint64_t whole_number(const char* name, uint64_t lo, uint64_t hi, uint64_t fallback) {
    const auto v = get(name);
    if (!v) return fallback;
    uint64_t x = 0;
    const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), x);
    if (ec != std::errc() || end != v->data() + v->size() || x < lo || x > hi)
        invalid(name, *v, "a whole number from " + std::to_string(lo) + " to " + std::to_string(hi));
    return x;
}

bool flag(const char* name, bool fallback) {
    const auto v = get(name);
    if (!v) return fallback;
    if (*v == "0") return false;
    if (*v == "1") return true;
    invalid(name, *v, "0 or 1");
}

}  // namespace tessel::env

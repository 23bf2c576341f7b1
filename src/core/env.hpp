// Reading TESSEL_* environment variables (docs/config.md): the one way every layer does it, so an
// empty or invalid value is always an error (ErrorCode::Environment, exit code 2 in the CLI) that
// names the variable, the value and what was expected.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tessel::env {

/// The value of variable `name`; nullopt when unset. Throws Error(Environment) when it is set
/// but empty (an empty value never silently means the default).
std::optional<std::string> get(const char* name);

/// Throws Error(Environment): "NAME='value': expected <expected>".
[[noreturn]] void invalid(const char* name, std::string_view value, std::string_view expected);

/// A whole number in [lo, hi] (decimal digits only), or `fallback` when unset. Throws
/// Error(Environment) for anything else.
uint64_t whole_number(const char* name, uint64_t lo, uint64_t hi, uint64_t fallback);

/// `0` -> false, `1` -> true, unset -> `fallback`; anything else throws Error(Environment).
bool flag(const char* name, bool fallback);

}  // namespace tessel::env

// Errors of the Jinja interpreter: every one is a tessel::Error whose message names the position
// in the template ("template:LINE:COLUMN: what"), 1-based, columns in bytes.
#pragma once

#include <string>

#include "tessel/errors.hpp"

namespace tessel::jinja {

/// A position in the template source.
struct Pos {
    int line = 1;
    int col = 1;
};

/// A construct tessel's interpreter does not implement (tag, filter, test, method, operator):
/// ErrorCode::Unsupported. Callers may fall back to a built-in chat format on this type.
class UnsupportedError : public Error {
public:
    explicit UnsupportedError(const std::string& message) : Error(ErrorCode::Unsupported, message) {}
};

/// The template called raise_exception(message): ErrorCode::InvalidArgument with the template's
/// own message, unprefixed.
class RaisedError : public Error {
public:
    explicit RaisedError(const std::string& message) : Error(ErrorCode::InvalidArgument, message) {}
};

/// "template:L:C: what".
std::string at(const Pos& pos, const std::string& what);

/// Throws UnsupportedError "template:L:C: unsupported <what>".
[[noreturn]] void fail_unsupported(const Pos& pos, const std::string& what);
/// Throws Error(InvalidArgument) "template:L:C: <what>" for a malformed template or an error
/// while rendering (undefined attribute, wrong operand types, limits).
[[noreturn]] void fail(const Pos& pos, const std::string& what);

}  // namespace tessel::jinja

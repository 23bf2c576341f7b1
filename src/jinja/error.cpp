#include "jinja/error.hpp"

namespace tessel::jinja {

std::string at(const Pos& pos, const std::string& what) {
    return "template:" + std::to_string(pos.line) + ":" + std::to_string(pos.col) + ": " + what;
}

void fail_unsupported(const Pos& pos, const std::string& what) { throw UnsupportedError(at(pos, "unsupported " + what)); }

void fail(const Pos& pos, const std::string& what) { throw Error(ErrorCode::InvalidArgument, at(pos, what)); }

}  // namespace tessel::jinja

// Backslash escapes in prompt text given on the command line, as llama.cpp's `-e/--escape`
// (on by default there and here): a shell makes "\n" hard to type, so the tools decode it.
#pragma once

#include <string>
#include <string_view>

namespace tessel::tools {

/// `text` with these escapes decoded: \n \r \t \a \b \f \v \0 \' \" \? \\ and \xHH (one or two
/// hex digits). Any other backslash (an unknown escape, a lone trailing one, \x without a hex
/// digit) is kept as written, so text without escapes passes through unchanged.
std::string process_escapes(std::string_view text);

}  // namespace tessel::tools

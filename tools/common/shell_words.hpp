// Splitting a command line into words as a POSIX shell would, without running one: for
// `--remote NAME=COMMAND`, whose COMMAND becomes a transport's argv. Pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dshpty/result.hpp"

namespace dshpty::tool {

// Blanks (space, tab, newline) separate words. 'single quotes' keep everything up to the
// next quote; "double quotes" keep everything but a backslash before \ " $ ` or a newline
// (which it escapes; a backslash-newline is removed); outside quotes a backslash keeps the
// next character (a backslash-newline is removed). Quotes join the word they touch, and ''
// is an empty word. Nothing else is special: no expansions ($HOME, ~, *), no operators
// (a ; or | is an ordinary character). INVALID_ARGUMENT for an unterminated quote or a
// trailing backslash.
Result<std::vector<std::string>> split_shell_words(std::string_view text);

}  // namespace dshpty::tool

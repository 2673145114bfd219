// dshpty-mcp's command line: the session options every tool face shares (--shell, --cwd,
// --rows, --cols, --idle-ms, --timeout-ms, --max-result-bytes, --remote...), --help, --version.
// Pure: parsed into values, checked, never printed here.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dshpty/result.hpp"
#include "session_options.hpp"

namespace dshpty::mcp {

struct Options : tool::SessionOptions {
  bool help = false;
  bool version = false;
};

// `args` without the program name. INVALID_ARGUMENT naming the option on failure.
Result<Options> parse_options(const std::vector<std::string_view>& args);

std::string usage_text();
std::string version_text();

}  // namespace dshpty::mcp

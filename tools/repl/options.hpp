// dshpty-repl's command line: the session options every tool face shares, plus its own.
// Pure: parsed into values, checked, never printed here.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dshpty/result.hpp"
#include "session_options.hpp"

namespace dshpty::repl {

struct Options : tool::SessionOptions {
  bool help = false;
  bool version = false;
  bool json = false;
  bool open_main = false;
  bool print_fields = false;  // hidden: the field tables as JSON (field_dump.hpp)
};

// `args` without the program name. Accepts "--opt VALUE" and "--opt=VALUE".
// INVALID_ARGUMENT naming the option on failure.
Result<Options> parse_options(const std::vector<std::string_view>& args);


// --help: complete enough to serve as the manual.
std::string usage_text();
std::string version_text();

}  // namespace dshpty::repl

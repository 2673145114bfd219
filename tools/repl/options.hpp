// dshpty-repl's command line. Pure: parsed into values, checked, never printed here.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dshpty/result.hpp"
#include "render/output_cap.hpp"

namespace dshpty::repl {

struct Options {
  bool help = false;
  bool version = false;
  bool json = false;
  bool open_main = false;
  std::optional<std::string> shell;
  std::optional<std::string> cwd;
  std::optional<unsigned> rows;
  std::optional<unsigned> cols;
  std::optional<std::chrono::milliseconds> idle;
  std::optional<std::chrono::milliseconds> timeout;
  std::size_t max_result_bytes = render::kDefaultMaxResultBytes;
};

// `args` without the program name. Accepts "--opt VALUE" and "--opt=VALUE".
// INVALID_ARGUMENT naming the option on failure.
Result<Options> parse_options(const std::vector<std::string_view>& args);

// The shell command line for --shell PATH: bash gets the default flags (--noprofile --norc
// -i), any other shell just -i.
std::vector<std::string> shell_argv(const std::string& path);

// --help: complete enough to serve as the manual.
std::string usage_text();
std::string version_text();

}  // namespace dshpty::repl

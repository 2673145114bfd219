// The per-spawn options the shell and remote backends share ("rows", "cols", "terminal"),
// read from SpawnRequest::options, and what both make of them. Each error is
// INVALID_ARGUMENT naming the option.
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>

#include "dshpty/result.hpp"
#include "dshpty/shell.hpp"

namespace dshpty::shell {

struct StartParams;
struct ShellChoice;

// INVALID_ARGUMENT for a name outside `known`, listing them ("unknown shell option ...").
Status check_option_names(const std::map<std::string, std::string>& options,
                          std::span<const std::string_view> known, std::string_view backend_words);

// "rows" or "cols": decimal, 1..4096; `fallback` when absent.
Result<unsigned> parse_dimension(const std::map<std::string, std::string>& options,
                                 const char* name, unsigned fallback);

// "terminal": dumb or xterm; `fallback` when absent.
Result<ShellConfig::Terminal> parse_terminal(const std::map<std::string, std::string>& options,
                                             ShellConfig::Terminal fallback);

// The shell's TERM for a terminal kind: "xterm-256color" or "dumb".
const char* term_name(ShellConfig::Terminal terminal) noexcept;

// A start with the shell integration (dialect/dialect.hpp): a fresh mark nonce, the words a
// failed start adds after the shell's name, and fish's abandoned-line marks.
void plan_integration(StartParams& p, const ShellChoice& choice);

}  // namespace dshpty::shell

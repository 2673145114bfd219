// Shell dialects: how to start bash, zsh or fish with dshpty's shell integration (the marks
// of text/sanitizer.hpp) without touching the user's dotfiles, and the per-spawn options
// that choose one ("shell", "rc", "history"; docs/shell-backend.md, "Dialects").
//
// The integration scripts travel inside the supervisor helper (dialect/integration/), which
// writes them where only it and the shell read them (supervisor/integration.hpp) and puts
// their path where kInitPlaceholder stands in the shell's argv or environment. The shell
// gets the rest through variables that its integration reads and unsets at once:
// DSHPTY_RC, DSHPTY_HISTORY (and for zsh the helper's DSHPTY_USER_ZDOTDIR and
// DSHPTY_ZSH_DIR). DSHPTY_NONCE goes to the helper only, which hands it to the shell
// through a pipe (DSHPTY_NONCE_FROM), never in the shell's environment.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "dshpty/result.hpp"
#include "dshpty/shell.hpp"

namespace dshpty::shell {

enum class Dialect { bash, zsh, fish };

std::string_view dialect_name(Dialect dialect) noexcept;

// What a spawn runs: the dialect, the shell's path, and the startup-file and history
// policies.
struct ShellChoice {
  Dialect dialect = Dialect::bash;
  std::string path;  // absolute, or a bare name execve resolves in PATH
  ShellConfig::StartupFiles rc = ShellConfig::StartupFiles::none;
  std::string history = "private";  // "private", "off" or an absolute file path
};

// The helper's placeholder for the integration file (bash, fish) or directory (zsh).
inline constexpr std::string_view kInitPlaceholder = "@DSHPTY_INIT@";

// "shell" (bash | zsh | fish | an absolute path whose name is one of them), "rc" (none |
// user), "history" (private | off | an absolute path) from the spawn options, each
// defaulting to the config's. INVALID_ARGUMENT naming the option and the valid choices.
Result<ShellChoice> parse_shell_choice(const std::map<std::string, std::string>& options,
                                       const ShellConfig& config);

// The shell's argv, with kInitPlaceholder where the helper puts the integration's path.
std::vector<std::string> dialect_argv(const ShellChoice& choice);

// The variables the helper and the integration read (and unset): "NAME=value" entries.
std::vector<std::string> dialect_env(const ShellChoice& choice, std::string_view nonce);

// A fresh random nonce for a session's marks (16 hex digits).
std::string make_mark_nonce();

}  // namespace dshpty::shell

// The one bash every subject of the bench runs, as the reference figures of the targets
// table (verdicts.cpp) were taken: `--noprofile --norc -i`, 80x24, only PATH, HOME,
// TERM=dumb, HISTFILE=, PS1 and the prompt-marker PROMPT_COMMAND. A prompt is "marker
// ESC]133;D;<status>BEL, then exactly PS1".
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "local/environment.hpp"  // the shell backend's prompt: the bench's bash shows the same one

namespace bench {

inline constexpr unsigned kRows = 24;
inline constexpr unsigned kCols = 80;
inline constexpr std::string_view kPs1 = dshpty::shell::kPrompt;
inline constexpr std::string_view kMarker = "\x1b]133;D;";

std::vector<std::string> bash_argv();
// PROMPT_COMMAND's value; `extra` (a shell command) runs after the marker is printed.
std::string prompt_command(std::string_view extra = {});
// "NAME=value" strings: PATH and HOME from this process, the rest fixed.
std::vector<std::string> bash_env(std::string_view prompt_extra = {});

// True when `tail` (the newest bytes of a stream) ends with a marker and then exactly PS1.
bool ends_at_prompt(std::string_view tail);

// The bare loop's bash with dshpty's own shell integration as its rcfile (the marks with a
// nonce, the prompt hook, PS0): what the shell itself costs a host that wants exact prompts.
// The rcfile lives in a temporary directory for the object's lifetime.
class MarkedBash {
 public:
  MarkedBash();
  ~MarkedBash();
  MarkedBash(const MarkedBash&) = delete;
  MarkedBash& operator=(const MarkedBash&) = delete;

  std::vector<std::string> argv() const;
  std::vector<std::string> env() const;
  // The prompt's end mark (B) came, and only a line editor's blanks after it.
  static bool at_prompt(std::string_view tail);

 private:
  std::string dir_;
};

// The throughput generator: a child that writes `bytes` of text lines to its terminal.
std::string flood_command(unsigned long long bytes);

}  // namespace bench

// The shell's environment: the host's, scrubbed of secrets, plus the controlled variables.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dshpty::shell {

// The marker PROMPT_COMMAND prints before every prompt: ESC ] 133 ; D ; <status> BEL.
inline constexpr std::string_view kPromptCommand = R"(printf '\033]133;D;%s\007' "$?")";
inline constexpr std::string_view kPrompt = "dsh> ";

// True for a name the shell must not inherit: one containing KEY, PASSWORD, SECRET or
// TOKEN (any case), or any DSH_* variable.
bool is_scrubbed_name(std::string_view name);

// "NAME=value" entries: `host` (an environ-style array) minus scrubbed names and COLORTERM
// (a program must not assume more than `term` says), then TERM=`term`, PAGER, GIT_PAGER,
// PS1, PROMPT_COMMAND and DSH_PTY_SESSION_ID, then `overrides` (a value sets, nullopt
// unsets). Sorted by name.
std::vector<std::string> build_environment(
    char** host, std::string_view session_id, std::string_view term,
    const std::map<std::string, std::optional<std::string>>& overrides);

}  // namespace dshpty::shell

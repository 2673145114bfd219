// The shell's environment: the host's, scrubbed of secrets, plus the controlled variables.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dshpty::shell {

// The prompt of a session without the user's startup files (rc none), in every dialect.
// The shell integration sets it (dialect/integration/): it is not exported.
inline constexpr std::string_view kPrompt = "dsh> ";

// True for a name the shell must not inherit: one containing KEY, PASSWORD, SECRET or
// TOKEN (any case), or any DSH_* or DSHPTY_* variable (the host's own controls: the shell
// integration's are set afresh for each session).
bool is_scrubbed_name(std::string_view name);

// "NAME=value" entries: `host` (an environ-style array) minus scrubbed names and COLORTERM
// (a program must not assume more than `term` says), then TERM=`term`, PAGER, GIT_PAGER
// and DSH_PTY_SESSION_ID, then `overrides` (a value sets, nullopt unsets). Sorted by name.
// PS1 and PROMPT_COMMAND are the shell integration's, never exported to the shell's
// children: an inherited one is dropped.
std::vector<std::string> build_environment(
    char** host, std::string_view session_id, std::string_view term,
    const std::map<std::string, std::optional<std::string>>& overrides);

}  // namespace dshpty::shell

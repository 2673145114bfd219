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

// True for a name the shell must not inherit (any case): one containing KEY, PASS, SECRET,
// TOKEN, CREDENTIAL, JWT, COOKIE, DSN or WEBHOOK, one with AUTH or PAT as a word between
// underscores (DOCKER_AUTH_CONFIG, GH_PAT; not GIT_AUTHOR_NAME nor PATH) but SSH_AUTH_SOCK, one
// ending in PWD but PWD and OLDPWD (MYSQL_PWD), or any DSH_* or DSHPTY_* variable (the host's
// own controls: the shell integration's are set afresh for each session).
bool is_scrubbed_name(std::string_view name);

// True for a value that is a URL carrying a password (scheme://user:password@host...):
// DATABASE_URL, HTTPS_PROXY and friends with credentials in them.
bool is_url_with_password(std::string_view value);

// What a session inherits of the host's environment.
struct Inherit {
  // false: everything but the scrubbed names and values (above); true: the allow-list only
  // (a confined session): PATH, HOME, USER, LOGNAME, LANG, LC_*, TERM, TZ, TMPDIR, SHELL.
  bool allow_list_only = false;
  // Passed whatever the rules above say (ShellConfig::env_pass: the operator's choice).
  std::vector<std::string> pass;
};

// "NAME=value" entries: `host` (an environ-style array) filtered by `inherit`, without
// COLORTERM (a program must not assume more than `term` says), then TERM=`term`, PAGER,
// GIT_PAGER and DSH_PTY_SESSION_ID, then `overrides` (a value sets, nullopt unsets). Sorted
// by name. PS1 and PROMPT_COMMAND are the shell integration's, never exported to the
// shell's children: an inherited one is dropped.
std::vector<std::string> build_environment(
    char** host, std::string_view session_id, std::string_view term,
    const std::map<std::string, std::optional<std::string>>& overrides, const Inherit& inherit = {});

}  // namespace dshpty::shell

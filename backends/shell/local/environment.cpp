#include "local/environment.hpp"

#include <algorithm>
#include <cctype>

namespace dshpty::shell {

namespace {
bool contains_upper(std::string_view haystack, std::string_view needle) {
  auto it = std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end(),
                        [](char a, char b) {
                          return std::toupper(static_cast<unsigned char>(a)) == b;
                        });
  return it != haystack.end();
}

// `word` as one of the name's underscore-separated parts (any case).
bool has_part(std::string_view name, std::string_view word) {
  while (!name.empty()) {
    const auto end = name.find('_');
    const std::string_view part = name.substr(0, end);
    if (part.size() == word.size() && contains_upper(part, word)) return true;
    if (end == std::string_view::npos) break;
    name.remove_prefix(end + 1);
  }
  return false;
}

bool ends_with_upper(std::string_view name, std::string_view suffix) {
  return name.size() >= suffix.size() && contains_upper(name.substr(name.size() - suffix.size()), suffix);
}

// The confined sessions' allow-list: what a shell and its tools need to run as this user.
bool allowed_in_confinement(std::string_view name) {
  for (std::string_view allowed : {"PATH", "HOME", "USER", "LOGNAME", "LANG", "TERM", "TZ", "TMPDIR", "SHELL"}) {
    if (name == allowed) return true;
  }
  return name.substr(0, 3) == "LC_";
}
}  // namespace

bool is_scrubbed_name(std::string_view name) {
  if (name.substr(0, 4) == "DSH_" || name.substr(0, 7) == "DSHPTY_") return true;
  for (std::string_view word : {"KEY", "PASS", "SECRET", "TOKEN", "CREDENTIAL", "JWT", "COOKIE", "DSN", "WEBHOOK",
                                 "AUTHORIZATION", "OAUTH", "BEARER", "PRIVATE", "SALT", "SIGNATURE"}) {
    if (contains_upper(name, word)) return true;
  }
  if (has_part(name, "PW")) return true;  // HADV_DB_PW
  // SSH_AUTH_SOCK names the agent's socket, which ssh and git need; what it unlocks stays
  // with the agent (and a confined session has neither the variable nor the socket).
  if (has_part(name, "AUTH") && name != "SSH_AUTH_SOCK") return true;
  if (has_part(name, "PAT")) return true;
  return ends_with_upper(name, "PWD") && name != "PWD" && name != "OLDPWD";
}

bool is_url_with_password(std::string_view value) {
  const auto scheme_end = value.find("://");
  if (scheme_end == std::string_view::npos || scheme_end == 0) return false;
  std::string_view rest = value.substr(scheme_end + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));  // the authority
  const auto at = rest.rfind('@');
  return at != std::string_view::npos && rest.substr(0, at).find(':') != std::string_view::npos;
}

std::vector<std::string> build_environment(
    char** host, std::string_view session_id, std::string_view term,
    const std::map<std::string, std::optional<std::string>>& overrides, const Inherit& inherit) {
  std::map<std::string, std::string> env;
  for (char** entry = host; entry && *entry; ++entry) {
    std::string_view kv(*entry);
    auto eq = kv.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    std::string_view name = kv.substr(0, eq);
    std::string_view value = kv.substr(eq + 1);
    const bool passed = std::find(inherit.pass.begin(), inherit.pass.end(), name) != inherit.pass.end();
    // The allow-list's LC_* is a pattern: what it lets through is still filtered.
    const bool kept = (!inherit.allow_list_only || allowed_in_confinement(name)) && !is_scrubbed_name(name) &&
                      !is_url_with_password(value);
    if (!passed && !kept) continue;
    if (name == "COLORTERM" || name == "PS1" || name == "PROMPT_COMMAND") continue;
    env[std::string(name)] = std::string(value);
  }
  env["TERM"] = std::string(term);
  env["PAGER"] = "cat";
  env["GIT_PAGER"] = "cat";
  env["DSH_PTY_SESSION_ID"] = std::string(session_id);
  for (const auto& [name, value] : overrides) {
    if (value) {
      env[name] = *value;
    } else {
      env.erase(name);
    }
  }
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [name, value] : env) out.push_back(name + "=" + value);
  return out;
}

}  // namespace dshpty::shell

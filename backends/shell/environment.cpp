#include "environment.hpp"

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
}  // namespace

bool is_scrubbed_name(std::string_view name) {
  if (name.substr(0, 4) == "DSH_" || name.substr(0, 7) == "DSHPTY_") return true;
  for (std::string_view word : {"KEY", "PASSWORD", "SECRET", "TOKEN"}) {
    if (contains_upper(name, word)) return true;
  }
  return false;
}

std::vector<std::string> build_environment(
    char** host, std::string_view session_id, std::string_view term,
    const std::map<std::string, std::optional<std::string>>& overrides) {
  std::map<std::string, std::string> env;
  for (char** entry = host; entry && *entry; ++entry) {
    std::string_view kv(*entry);
    auto eq = kv.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    std::string_view name = kv.substr(0, eq);
    if (is_scrubbed_name(name) || name == "COLORTERM" || name == "PS1" || name == "PROMPT_COMMAND") continue;
    env[std::string(name)] = std::string(kv.substr(eq + 1));
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

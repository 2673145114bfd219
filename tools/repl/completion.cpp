#include "completion.hpp"

#include <algorithm>

#include "session_lookup.hpp"
#include "text_command.hpp"

namespace dshpty::repl {

namespace {
void add_matching(std::vector<std::string>& out, std::string_view word, const std::string& candidate) {
  if (candidate.compare(0, word.size(), word) == 0 &&
      std::find(out.begin(), out.end(), candidate) == out.end())
    out.push_back(candidate);
}

void add_sessions(std::vector<std::string>& out, std::string_view word,
                  const std::vector<SessionSnapshot>& sessions) {
  for (const auto& session : sessions) add_matching(out, word, session.id);
  for (const auto& session : sessions)
    if (session.name) add_matching(out, word, *session.name);
}

void add_signals(std::vector<std::string>& out, std::string_view word) {
  for (const char* name : {"SIGINT", "SIGTERM", "SIGKILL", "SIGTSTP", "SIGHUP"}) add_matching(out, word, name);
}
}  // namespace

std::vector<std::string> completion_candidates(std::string_view line_before_word, std::string_view word,
                                               const std::vector<SessionSnapshot>& sessions,
                                               const std::vector<std::string>& backend_types) {
  std::vector<std::string> out;
  auto words = split_words(line_before_word);
  const std::vector<std::string> before = words ? std::move(words.value()) : std::vector<std::string>{};
  if (before.empty()) {
    for (const auto& name : command_names()) add_matching(out, word, name);
    return out;
  }
  const std::string& verb = before.front();
  const std::size_t position = before.size();  // 1: the first argument
  const bool first_is_session = position >= 2 && engine::resolve_session(before[1], sessions).has_value();
  if (verb == "open") {
    if (position == 1)
      for (const auto& type : backend_types) add_matching(out, word, type);
  } else if (verb == "signal") {
    if (position == 1) add_sessions(out, word, sessions);
    if (position == 1 || (position == 2 && first_is_session)) add_signals(out, word);
  } else if (verb == "send" || verb == "read" || verb == "close" || verb == "use") {
    if (position == 1) add_sessions(out, word, sessions);
  }
  return out;
}

}  // namespace dshpty::repl

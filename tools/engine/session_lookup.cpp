#include "session_lookup.hpp"

namespace dshpty::engine {

std::optional<std::string> resolve_session(std::string_view word, const std::vector<SessionSnapshot>& sessions) {
  for (const auto& session : sessions)
    if (session.id == word) return session.id;
  for (const auto& session : sessions)
    if (session.name && *session.name == word) return session.id;
  return std::nullopt;
}

}  // namespace dshpty::engine

// Naming sessions in text mode: the user may write a session's id or, for the REPL's own
// owner, its name; `use` keeps a current session. Pure functions over list() snapshots.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dshpty/session.hpp"

namespace dshpty::repl {

// The id of the session `word` names: an exact id first, then a name. nullopt when it
// names none of `sessions`.
std::optional<std::string> resolve_session(std::string_view word,
                                           const std::vector<SessionSnapshot>& sessions);

// "pty-1 (main)" or "pty-1".
std::string session_label(const SessionSnapshot& session);

// Tab completion: the words that may complete `word` (the partial word under the cursor),
// given the text of the line before it. Commands at the start of the line; then session
// ids and names, signal names, or backend types, by what the command takes there.
std::vector<std::string> completion_candidates(std::string_view line_before_word, std::string_view word,
                                               const std::vector<SessionSnapshot>& sessions,
                                               const std::vector<std::string>& backend_types);

}  // namespace dshpty::repl

// Naming a session the way a person or a model does: by its id or by the name it was opened
// with. Pure, over list() snapshots.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dshpty/session.hpp"

namespace dshpty::engine {

// The id of the session `word` names: an exact id first, then a name. nullopt when it
// names none of `sessions`.
std::optional<std::string> resolve_session(std::string_view word, const std::vector<SessionSnapshot>& sessions);

}  // namespace dshpty::engine

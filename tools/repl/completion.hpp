// Tab completion in text mode: the words that may complete the one under the cursor. Pure
// over list() snapshots and the backend types.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dshpty/session.hpp"

namespace dshpty::repl {

// `word` is the partial word under the cursor, `line_before_word` the text before it.
// Commands at the start of the line; then session ids and names, signal names, or backend
// types, by what the command takes there.
std::vector<std::string> completion_candidates(std::string_view line_before_word, std::string_view word,
                                               const std::vector<SessionSnapshot>& sessions,
                                               const std::vector<std::string>& backend_types);

}  // namespace dshpty::repl

// The texts of lingering sessions (docs/outlive.md) for the text faces (the REPL's `attach`,
// MCP's terminal_attach and terminal_list): whole lines, each ending in '\n'.
#pragma once

#include <string>
#include <vector>

#include "engine.hpp"

namespace dshpty::render {

// One line per outcome: "attached terminal session pty-3 (keep) [shell] running pid=9:
// replayed 1234 bytes, none lost", then "[send ended: ...]" when a send was live; a
// tombstone as "terminal session (short) ended with no host: exited code=null signal=SIGKILL
// (killed after linger)"; "(no lingering sessions)" for none.
std::string format_attach(const std::vector<engine::AttachOutcome>& outcomes);
// "lingering (keep) [shell] pid=9, 97 s left: terminal_attach takes it over", one a session;
// "" for none.
std::string format_lingering(const std::vector<engine::LingeringSession>& sessions, const std::string& how);

}  // namespace dshpty::render

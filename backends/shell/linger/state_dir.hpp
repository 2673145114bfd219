// The per-user state directory where lingering sessions can be reached (docs/outlive.md):
// $XDG_RUNTIME_DIR/dshpty, else /tmp/dshpty-UID, or the directory the host configured
// (ShellConfig::state_dir, the tools' --state-dir). Created 0700 when missing; then checked
// as tmux checks its socket directory: a directory (not a symlink), owned by this uid, with
// no permission for group or others. Anything else is refused, never repaired: another
// user could have made it to catch our sockets.
#pragma once

#include <optional>
#include <string>

#include "dshpty/result.hpp"

namespace dshpty::linger {

// The directory to use: `configured` when not empty, else the default above.
std::string default_state_dir();

// Creates `dir` (mode 0700, its parent must exist) when missing, then checks it.
// BACKEND_FAILED naming the directory and the cause ("owned by uid 0", "mode 0755 lets
// others in", "is not a directory").
Result<std::string> prepare_state_dir(const std::string& configured);

// The same checks without creating it: nullopt when it does not exist (a listing has
// nothing to list then, and leaves no directory behind).
Result<std::optional<std::string>> existing_state_dir(const std::string& configured);

}  // namespace dshpty::linger

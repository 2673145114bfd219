// The paths a confined session's mounts are made of, resolved on the host before bwrap's
// argv is built (docs/security.md). bwrap follows symbolic links in a mount's destination,
// and anything inside a writable root may have been rearranged by an earlier session: a
// link planted there would carry the next session's mount onto the host. So every
// destination is resolved here, component by component, and a link found inside a writable
// root is refused, never followed.
#pragma once

#include <string>
#include <vector>

#include "dshpty/result.hpp"

namespace dshpty::shell {

// True when `path` lies strictly below `dir` (both canonical).
bool strictly_inside(const std::string& path, const std::string& dir);
bool inside_or_at(const std::string& path, const std::string& dir);

// `path` (absolute) made canonical. A symbolic link among its components that lies strictly
// inside one of `writable` (canonical) is BACKEND_FAILED naming it; links elsewhere (the
// host's own, /var/run -> /run) are followed. A missing component: BACKEND_FAILED with
// ENOENT.
Result<std::string> resolve_unplanted(const std::string& path, const std::vector<std::string>& writable);

// The read-only binds that protect `entries` inside the writable `roots` (canonical). A
// relative entry is taken inside each root, an absolute one where it lies inside a root;
// one that does not exist is skipped. A `.git` file (a worktree's or a submodule's) adds the
// directory its `gitdir:` names and that directory's `commondir`, where they lie inside a
// root. A protected path that is itself a symbolic link is refused.
Result<std::vector<std::string>> protected_mounts(const std::vector<std::string>& roots,
                                                  const std::vector<std::string>& entries);

// The host's bound unix sockets with a path (its /proc/net/unix), canonical and existing,
// that a sandbox would see: those under `hidden` (masked or private directories) unless
// under `shown_again` (a root bound back over them), and those in `except`, are left out.
std::vector<std::string> visible_host_sockets(const std::vector<std::string>& hidden,
                                              const std::vector<std::string>& shown_again,
                                              const std::vector<std::string>& except);

}  // namespace dshpty::shell

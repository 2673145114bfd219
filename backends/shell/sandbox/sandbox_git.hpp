// A writable root's git repository in a confined session (docs/security.md, "Protected
// paths"). git runs, later and on the host, what its directory and config name: hooks, the
// directory `core.hooksPath` names, programs in config (core.fsmonitor, core.pager, aliases)
// and the files config includes. In workspace-write the session may commit (objects, refs,
// logs, the index, HEAD and the lock files git renames over them are writable), while those
// stay read-only: the git directory is bound writable onto itself (a mount point: it cannot
// be renamed or replaced) and its config, hooks, info/ and worktrees/ go read-only over it,
// with the include files and the hooks directory wherever they lie in a writable root.
//
// What cannot be protected this way is a name git reads that does not exist yet in a
// directory that must stay writable: hooks/, info/, a missing include file or hooks
// directory are therefore made (empty) on the host before the session starts; `commondir`
// cannot be (docs/security.md, "Limits").
#pragma once

#include <string>
#include <vector>

#include "sandbox/sandbox_paths.hpp"
#include "dshpty/result.hpp"

namespace dshpty::shell {

// What git config files name that matters later: the files read (each start, then what they
// include: include.path and includeIf.*.path whatever the condition, to git's depth of 10),
// absolute, listed whether or not they exist (git skips a missing one, so a session must not
// make it); core.hooksPath values as written; extensions.worktreeConfig.
struct GitConfigRefs {
  std::vector<std::string> includes;
  std::vector<std::string> hooks_paths;
  bool worktree_config = false;
};
GitConfigRefs read_git_config(const std::vector<std::string>& files);

// The host's own config files, in git's order (system, then global; GIT_CONFIG_SYSTEM,
// GIT_CONFIG_NOSYSTEM and GIT_CONFIG_GLOBAL honoured), whether or not they exist.
std::vector<std::string> host_git_config_files();

enum class GitProtection {
  commits_allowed,  // git may commit; config, hooks, info/, includes, hooksPath read-only
  whole_read_only,  // `.git` named in protected_paths: nothing of the repository writable
};

// The mounts protecting `dot_git` (a `.git` directory or file; absent: nothing) and the git
// directory a `.git` file names, where they lie in `roots` (canonical). A linked worktree's
// git directory and its common directory are read-only whole. Makes the missing parts named
// above. BACKEND_FAILED for a symbolic link planted on the way or a part that cannot be made.
Status protect_git(const std::string& dot_git, GitProtection how,
                   const std::vector<std::string>& roots, MountPlan& plan);

// A root below a repository's top (a session opened in a subdirectory of it): the parts of
// that repository's config that lie in the roots (core.hooksPath taken in its top, include
// files), protected as above. The repository's git directory lies outside the root: read-only
// already.
Status protect_enclosing_repo(const std::string& root, const std::vector<std::string>& roots, MountPlan& plan);

}  // namespace dshpty::shell

// The paths a confined session's mounts are made of, resolved on the host before bwrap's
// argv is built (docs/security.md). bwrap follows symbolic links in a mount's destination,
// and anything inside a writable root may have been rearranged by an earlier session: a
// link planted there would carry the next session's mount onto the host. So every
// destination is resolved here, component by component, and a link found inside a writable
// root is refused, never followed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dshpty/result.hpp"

namespace dshpty::shell {

// A mount over a writable root: read-only, or a directory bound writable onto itself (so
// that it is a mount point: it cannot be renamed or replaced, and read-only mounts go over
// its parts: `.git` with its config and hooks).
enum class MountAccess { read_only, writable };

struct ProtectedMount {
  std::string path;  // canonical; the bind's source and target
  MountAccess access = MountAccess::read_only;
  bool operator==(const ProtectedMount&) const = default;
};

// The protected mounts as they are gathered, in bwrap's order when done: outer paths
// first (a mount inside another goes over it), read-only winning over writable for the same
// path, and no writable mount inside a read-only one.
class MountPlan {
 public:
  void add(const std::string& path, MountAccess access);
  // Every directory between a root and a mount, bound writable onto itself: one that is no
  // mount point could be renamed away, and the protected path made anew under its name.
  void pin_ancestors(const std::vector<std::string>& roots);
  const std::vector<ProtectedMount>& mounts() const { return mounts_; }
  std::vector<ProtectedMount> ordered() const;

 private:
  std::vector<ProtectedMount> mounts_;
};

// True when `path` lies strictly below `dir` (both canonical).
bool strictly_inside(const std::string& path, const std::string& dir);
bool inside_or_at(const std::string& path, const std::string& dir);
bool inside_a_root(const std::string& path, const std::vector<std::string>& roots);

// "/a/b" -> "/a"; "/a" -> "/".
std::string parent_dir(const std::string& path);

// `path` (absolute) made canonical. A symbolic link among its components that lies strictly
// inside one of `writable` (canonical) is BACKEND_FAILED naming it; links elsewhere (the
// host's own, /var/run -> /run) are followed. A missing component: BACKEND_FAILED with
// ENOENT.
Result<std::string> resolve_unplanted(const std::string& path, const std::vector<std::string>& writable);

// A path to protect: std::nullopt when it does not exist; BACKEND_FAILED when it is itself
// a symbolic link (a bind would follow it onto the host) or a link is planted on the way;
// else canonical (the caller binds it when it lies in a root).
Result<std::optional<std::string>> protected_target(const std::string& path,
                                                    const std::vector<std::string>& roots);

// The mounts that protect `entries` inside the writable `roots` (canonical), read-only. A
// relative entry is taken inside each root, an absolute one where it lies inside a root;
// one that does not exist is skipped. A protected path that is itself a symbolic link is
// refused. `.git` in each root is handled apart, always (sandbox/sandbox_git.hpp): git may
// commit, its config and hooks stay read-only; `.git` among `entries` makes the whole of it
// read-only, and a `.git` file's git directory and common directory with it.
Result<std::vector<ProtectedMount>> protected_mounts(const std::vector<std::string>& roots,
                                                     const std::vector<std::string>& entries);

// What the read-only mounts hold must not be reachable from a writable place: a symbolic
// link in them that leads into a root (a hook linked to scripts/pre-commit) has its target
// protected too; one whose way holds a link planted in a root, or whose target is missing,
// refuses the spawn, as does a file with more than one hard link (another name for it may
// lie in a root, writable). BACKEND_FAILED naming the path.
Status protect_link_targets(MountPlan& plan, const std::vector<std::string>& roots);

// The host's bound unix sockets with a path (its /proc/net/unix), canonical and existing,
// that a sandbox would see: those under `hidden` (masked or private directories) unless
// under `shown_again` (a root bound back over them), and those in `except`, are left out.
std::vector<std::string> visible_host_sockets(const std::vector<std::string>& hidden,
                                              const std::vector<std::string>& shown_again,
                                              const std::vector<std::string>& except);

}  // namespace dshpty::shell

// Where a session's cgroups go (host side): below the host's own cgroup in each hierarchy
// that carries a requested limit, read from /proc/self/cgroup and /proc/self/mountinfo.
// The host makes the (empty) directories and removes them once the tree is proven gone;
// the helper writes the limits and moves the shell in (limits/session_cgroup.hpp). Only
// the session's own directories are ever written.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dshpty/result.hpp"
#include "dshpty/session.hpp"
#include "proc/unique_fd.hpp"

namespace dshpty::shell::limits {

// A session's cgroup directories: removed (when empty) by remove(), or at the latest when
// this goes.
class SessionDirs {
 public:
  SessionDirs() = default;
  ~SessionDirs() { (void)remove(); }
  SessionDirs(const SessionDirs&) = delete;
  SessionDirs& operator=(const SessionDirs&) = delete;

  // `kind`: the hierarchy, as --cgroup-dir says it (pids, memory, cpu, v2): which of its
  // counters counts() reads.
  void add(std::string path, std::string kind) {
    paths_.push_back(std::move(path));
    kinds_.push_back(std::move(kind));
  }
  const std::vector<std::string>& paths() const { return paths_; }
  // rmdir of each (one gone already counts as removed). BACKEND_FAILED naming the first
  // that stays: EBUSY says a process is still inside.
  Status remove();
  // The helper died without proving the tree gone: ends what is still inside. Each process
  // listed in a cgroup.procs is pinned by a pidfd, then SIGKILLed if the list still holds
  // its pid (a pid that ended and was reused by a process elsewhere is never signalled).
  // How many processes were listed, 0 once every directory is empty; -1 when a list
  // cannot be read (errno). Called again until 0: a process forking meanwhile is met at
  // the next call.
  long end_members();
  // What the kernel counted so far: forks refused at pids.max, OOM kills. Read on demand
  // (the kernel notifies neither of a v1 pids refusal), zeros once removed.
  struct Counts {
    std::uint64_t pids_refused = 0;
    std::uint64_t oom_kills = 0;
  };
  Counts counts() const;

 private:
  std::vector<std::string> paths_;
  std::vector<std::string> kinds_;
};

// What one session needs: the directories made, the helper's command-line flags
// (limits/cgroup_wire.hpp) and the directory fds they name, in order (they become fds
// kCgroupFdBase...). The fds are directories opened O_RDONLY, CLOEXEC and flocked (the helper
// inherits the lock: limits/leftover_sweep.hpp); the caller keeps them until the helper
// is spawned.
struct Placement {
  std::string name;                      // the session cgroup's name
  std::unique_ptr<SessionDirs> made;     // null: no limits
  std::vector<std::string> helper_args;
  std::vector<proc::UniqueFd> dirs;
};

// Finds the host's cgroup for each limit set in `limits` and makes the session's cgroup
// below it (no limit written yet: the helper does that). BACKEND_FAILED
// naming the cause ("limits: ..."): a controller in no hierarchy or not delegated, a
// directory that is not a cgroup file system, a v1 memory parent with use_hierarchy 0.
Result<Placement> place_session_cgroups(const Limits& limits);

// The host's own cgroup directory for `controller` (v1 first, then v2), for tests and
// words; nullopt when there is none.
std::optional<std::string> own_cgroup_dir(std::string_view controller);

// Test hook: every controller's parent is `dir` (taken as a v1 hierarchy), or discovery
// again when nullopt. Lets a test point the module at a directory it cannot use.
void set_parent_override_for_tests(std::optional<std::string> dir);

// The prefix of every session cgroup name this process makes ("dshpty-PID-"): a test's
// cleanup removes what a failed test left.
std::string session_name_prefix();

// Parsers, exposed for unit tests.
// The path of this process's cgroup in the v1 hierarchy carrying `controller`, or in the
// unified one when `controller` is empty ("0::/path"); nullopt when absent.
std::optional<std::string> cgroup_path_in(std::string_view proc_self_cgroup, std::string_view controller);
struct CgroupMount {
  std::string root;         // the hierarchy's directory shown at the mount point
  std::string mount_point;
  bool v2 = false;
  std::vector<std::string> controllers;  // v1: from the super options
};
std::vector<CgroupMount> cgroup_mounts(std::string_view mountinfo);

}  // namespace dshpty::shell::limits

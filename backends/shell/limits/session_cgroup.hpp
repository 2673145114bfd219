// A session's cgroups as its helper sees them (supervisor/main.cpp): one directory per
// hierarchy, made by the host below its own cgroup (fds from the host:
// limits/cgroup_wire.hpp); the helper writes the limits, moves the shell in before it
// execs and watches the limit events the kernel signals. System calls only (the helper's
// local face has no C++ runtime in its path); every fd CLOEXEC; each failure returns the
// errno and the step. The host removes the directories once the tree is proven gone; when
// the host is gone first (killed), the helper removes them itself (remove_dirs()).
#pragma once

#include <cstdint>

#include "limits/cgroup_wire.hpp"

namespace dshpty::shell::limits {

// Which step failed, for the host's words (sent as start_failed's stage offset).
enum class CgroupStep : std::int32_t {
  create = 1,    // mkdir NAME in a parent
  pids_max,      // pids.max
  memory_max,    // memory.limit_in_bytes (v1) / memory.max (v2)
  memsw_max,     // memory.memsw.limit_in_bytes (v1, where swap is accounted)
  cpu_max,       // cpu.cfs_quota_us (v1) / cpu.max (v2)
  watch,         // the event watches (inotify, v1 OOM eventfd)
  join,          // cgroup.procs
  // inotify_init1 found the user's instances used up (fs.inotify.max_user_instances),
  // not this process's fd table full
  watch_instances,
};

// Limit events seen by check(): bits.
inline constexpr unsigned kHitPids = 1;
inline constexpr unsigned kHitMemory = 2;

class SessionCgroup {
 public:
  // Reads one flag of limits/cgroup_wire.hpp at argv[i] (moving i past its value): false
  // when argv[i] is not one of them, or malformed (then *bad is set).
  bool take_flag(int argc, char** argv, int& i, bool* bad);
  // Whether the host asked for cgroups at all.
  bool wanted() const { return ndirs_ > 0; }

  // Writes the limits; opens cgroup.procs and the event watches.
  // 0, or an errno with *step set. What was made stays for remove().
  int create(CgroupStep* step);
  // In the shell's vfork child, before exec: moves the calling process in. 0 or an errno.
  int join_self() const;
  // The fds to poll for limit events (-1 where none), readable when one may have happened.
  int inotify_fd() const { return inotify_; }
  int oom_event_fd() const { return oom_eventfd_; }
  // Drains the watches and reads the counters: kHit* bits for limits reached since the
  // last call.
  unsigned check();
  // Closes every fd of the cgroups (the tree is gone; the host removes them). 0.
  int release();
  // With no host left to do it (it died): removes each session directory (empty now: the
  // tree is reaped) through its own fd, by its parent ("..") and its name, and only while
  // that name still holds the same directory. Then release(). Best effort: the first
  // errno, 0 when every directory went.
  int remove_dirs();

 private:
  enum class Kind : std::int8_t { pids, memory, cpu, v2 };
  // The directory fd carrying `k` (its v1 hierarchy, else v2), or -1.
  int dir_for(Kind k, bool* v2) const;
  int write_file(int dir, const char* file, long long value, bool max_word = false) const;
  long long read_counter(int fd, const char* key) const;

  const char* name_ = ".";  // paths are relative to the session cgroups' own fds
  Kind kinds_[kMaxCgroupDirs] = {};
  bool made_[kMaxCgroupDirs] = {};
  int procs_[kMaxCgroupDirs] = {-1, -1, -1, -1};
  int ndirs_ = 0;
  long long pids_ = -1, memory_ = -1, cpu_us_ = -1;
  int inotify_ = -1;
  int oom_eventfd_ = -1;
  int pids_events_ = -1;    // pids.events, read for its "max" counter
  int memory_events_ = -1;  // v1 memory.oom_control / v2 memory.events: "oom_kill"
  long long pids_seen_ = 0, oom_seen_ = 0;
};

}  // namespace dshpty::shell::limits

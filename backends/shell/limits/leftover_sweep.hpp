// Session cgroups a killed host left behind (docs/security.md, "Resource limits"). A host
// makes a session's cgroup, then spawns the helper that writes its limits and, should the
// host die, removes it; a host killed between the two left it empty for good (4 of 19 kills
// 6-14 ms into a limited open). So every live session's cgroup is flocked from the moment it
// is made, by the host and then by its helper (the lock is the open directory's, which the
// helper inherits), and a host's limited open in a parent cgroup (at most once a minute)
// removes the `dshpty-*` directories there that nobody locks, and those a nested host made
// in them: the kernel refuses to remove one that holds a process or a child cgroup. What a
// pid cannot tell across pid namespaces (is its maker alive?) the lock does.
#pragma once

#include <chrono>
#include <string>

namespace dshpty::shell::limits {

// Takes the lock on a session cgroup directory just made (`fd`, opened O_RDONLY): false when
// another holds it (a sweep that found it empty and unlocked, and is removing it).
bool lock_session_dir(int fd);

// How often one process sweeps one parent.
inline constexpr std::chrono::seconds kSweepEvery{60};

// At most once every kSweepEvery per parent and process: removes the unlocked `dshpty-*`
// directories below `parent` (an fd of it), and those nested in them, best effort. `where`
// names the parent for that rule.
void sweep_leftovers(int parent, const std::string& where);

}  // namespace dshpty::shell::limits

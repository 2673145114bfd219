// How the host tells the helper which cgroups to make (supervisor/main.cpp, local face).
// Flags on the helper's command line, before `--`:
//   --cgroup-dir KIND          once per directory, in order: the Nth is fd kCgroupFdBase+N,
//                              an fd of the session's cgroup in one hierarchy, which the
//                              host made below its own and flocked (held while the
//                              helper lives: limits/leftover_sweep.hpp). KIND: pids,
//                              memory, cpu (that v1 hierarchy) or v2 (the unified one,
//                              for every limit no v1 hierarchy carries)
//   --limit-pids N  --limit-memory BYTES  --limit-cpu-us QUOTA (per 100 ms period)
// The helper writes only files of those directories (openat relative to the fds): never a
// file of the host's cgroup, an ancestor or a root. The fds reach a confined helper too
// (bwrap keeps what it inherits), where /sys/fs/cgroup is read-only: each fd was opened on
// the host's own mount.
#pragma once

namespace dshpty::shell::limits {

inline constexpr int kCgroupFdBase = 5;  // after the control socket (3) and seccomp (4)
inline constexpr int kMaxCgroupDirs = 4;
inline constexpr long long kCpuPeriodUs = 100'000;

}  // namespace dshpty::shell::limits

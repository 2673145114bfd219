// The marks every session's tree carries, read by the peer check (peer_check.hpp) of any
// dshpty build, wherever its helper lives and whatever its file is called
// (docs/outlive.md, "Who may attach"):
//
// - the helper's name (comm) is kHelperComm, set by the helper itself: a copied or renamed
//   helper names itself the same, and nobody but the helper can change its name (the kernel
//   lets only a thread of the same process write /proc/PID/comm; the helper is
//   non-dumpable, so no ptrace or /proc/PID/mem either). /proc/PID/stat shows it to anyone.
// - its hard RLIMIT_RTTIME is at most kTreeRttimeMark, inherited by every process the tree
//   starts, through fork, exec, setsid and the helper's own death: only CAP_SYS_RESOURCE
//   raises a hard limit again. 1000 days of real-time CPU without a blocking call: no
//   program reaches it. /proc/PID/limits shows it to anyone.
//
// The helper calls mark_session_tree() first thing, before anything of the session runs.
#pragma once

#include <sys/prctl.h>
#include <sys/resource.h>

namespace dshpty::linger {

inline constexpr char kHelperComm[] = "dshpty-supervis";  // 15 bytes: the kernel's limit
inline constexpr rlim_t kTreeRttimeMark = 86'400'000'000'000;  // µs: 1000 days

// System calls only (the helper's local face has no C++ runtime in its path). A hard limit
// already lower stays (it is a mark too); nothing here can fail but the name on a kernel
// without prctl's PR_SET_NAME, which has none.
inline void mark_session_tree() {
  ::prctl(PR_SET_NAME, kHelperComm, 0, 0, 0);
  rlimit r{};
  if (::getrlimit(RLIMIT_RTTIME, &r) == 0) {
    if (r.rlim_max == RLIM_INFINITY || r.rlim_max > kTreeRttimeMark) r.rlim_max = kTreeRttimeMark;
    if (r.rlim_cur == RLIM_INFINITY || r.rlim_cur > r.rlim_max) r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_RTTIME, &r);
  }
}

}  // namespace dshpty::linger

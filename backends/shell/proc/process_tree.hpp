// Walking a process tree through /proc/<pid>/task/<tid>/children (Linux with
// CONFIG_PROC_CHILDREN): O(processes in the tree), where scanning every /proc/<pid>/stat
// is O(processes on the host) — ~2,000 opens per walk once a host runs 1,000 sessions.
//
// Why a tree is enough for a session: every process of the shell's session descends from
// its supervisor helper, which is a subreaper, so an orphan reparents to it and stays in
// the tree. A child hangs off the *thread* that forked it, hence one children file per
// task. The walk is not atomic: a process forked after its parent's children file was read
// is not seen (callers must treat "not seen" as "no evidence", never as a proof).
//
// Header-only and free of the probe. The children files are read by procfs.hpp, which the
// supervisor's own walk (it also pins and signals, backends/shell/supervisor/) shares.
// No allocation beyond the queue, no fds kept, no stdio.
#pragma once

#include <sys/types.h>

#if defined(__linux__)
#include <unistd.h>

#include <cstddef>
#include <vector>

#include "proc/procfs.hpp"

namespace dshpty::proc {

// Whether this kernel has the children files (asked once: it is a kernel build option).
inline bool children_files_supported() noexcept {
  static const bool supported = ::access("/proc/thread-self/children", R_OK) == 0;
  return supported;
}

// Appends the children of every task of pid. `threads` == 1 (from the caller's read of
// /proc/<pid>/stat) reads the main thread's file without listing the task directory.
inline void read_children(pid_t pid, long threads, std::vector<pid_t>& out) {
  procfs::for_each_child(pid, threads, [&](pid_t child) { out.push_back(child); });
}

// What a visit tells the walk.
struct TreeStep {
  bool stop = false;     // end the walk here
  bool descend = true;   // read this process's children
  long threads = 0;      // its thread count when known (1 saves listing its tasks), else 0
};

// Calls visit(pid) -> TreeStep for root and then each of its descendants, breadth first
// (a parent before its children), at most `limit` processes. Returns false, having
// visited nothing, when this kernel has no children files: the caller falls back to a
// scan of /proc.
template <class Visit>
bool walk_process_tree(pid_t root, Visit&& visit, std::size_t limit = 1 << 16) {
  if (!children_files_supported()) return false;
  if (root <= 0) return true;
  std::vector<pid_t> queue{root};
  for (std::size_t next = 0; next < queue.size() && next < limit; ++next) {
    pid_t pid = queue[next];
    TreeStep step = visit(pid);
    if (step.stop) break;
    if (step.descend) read_children(pid, step.threads, queue);
  }
  return true;
}

}  // namespace dshpty::proc
#endif

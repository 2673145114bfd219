// The processes of one process group (processes_in_group, proc/stdin_probe.hpp): a walk of
// the session's tree where one is given, else a scan of /proc.
#include "proc/stdin_probe.hpp"

#include "proc/procfs.hpp"
#include "proc/process_tree.hpp"

namespace dshpty::proc {

#if defined(__linux__) && (defined(__x86_64__) || defined(__aarch64__))  // as stdin_probe.cpp

std::vector<pid_t> processes_in_group(pid_t pgid, pid_t tree_root) {
  std::vector<pid_t> pids;
  if (pgid <= 0) return pids;
  if (tree_root > 0 && walk_process_tree(tree_root, [&](pid_t pid) {
        TreeStep step;
        procfs::Stat stat;
        if (!procfs::read_stat(pid, stat)) {
          step.descend = false;
          return step;
        }
        step.threads = stat.threads;
        if (stat.pgrp == pgid) pids.push_back(pid);
        return step;
      }))
    return pids;
  if (procfs::Stat stat; procfs::read_stat(pgid, stat) && stat.pgrp == pgid) pids.push_back(pgid);
  procfs::for_each_numeric_entry("/proc", [&](pid_t pid) {
    if (pid == pgid) return false;
    if (procfs::Stat stat; procfs::read_stat(pid, stat) && stat.pgrp == pgid) pids.push_back(pid);
    return false;
  });
  return pids;
}

#endif

}  // namespace dshpty::proc

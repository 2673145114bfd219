// The processes of one process group (processes_in_group, proc/stdin_probe.hpp): a walk of
// the session's tree where one is given, else a scan of /proc.
#include "proc/stdin_probe.hpp"

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>

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

SignalFate signal_fate(pid_t pgid, int signo) {
  procfs::Stat leader;
  if (pgid <= 0) return SignalFate::reached;
  if (!procfs::read_stat(pgid, leader)) {
    return ::kill(-pgid, 0) < 0 && errno == ESRCH ? SignalFate::missed : SignalFate::reached;
  }
  if (leader.state != 'Z' && leader.state != 'X' && !leader.exiting()) {
    // Running: the signal waits for it (pending), or its handler took it, or it ignores it.
    // Else it is dying of it, or it dropped it: a process inside exit_group() drops every
    // signal before /proc says it is exiting, and one preempted there (a loaded machine)
    // stays 'R' for milliseconds. Only the way it ends tells these apart: unsettled until
    // then (seen in CI: a zsh list ran to its end after a cancel taken for "reached" at the
    // second look, its touch still 'R').
    if (signo < 1 || signo > 64) return SignalFate::reached;
    const unsigned long long bit = 1ULL << (signo - 1);
    const procfs::SignalMasks masks = procfs::signal_masks(pgid);
    if (((masks.pending | masks.caught | masks.ignored) & bit) != 0) return SignalFate::reached;
    return SignalFate::unsettled;
  }
  int status = 0;
  if (procfs::exit_status(pgid, status) && WIFSIGNALED(status) && WTERMSIG(status) == signo) return SignalFate::reached;
  // The leader ended (or is ending) on its own; a pipeline's later commands, its group's
  // other members, are its siblings (the shell forked them all).
  procfs::Stat parent;
  if (!procfs::read_stat(leader.ppid, parent)) return SignalFate::reached;
  bool live = false;
  const auto read = procfs::for_each_child(leader.ppid, parent.threads, [&](pid_t child) {
    procfs::Stat member;
    if (child != pgid && procfs::read_stat(child, member) && member.pgrp == pgid && member.state != 'Z' &&
        member.state != 'X' && !member.exiting())
      live = true;
  });
  return read == procfs::ChildrenRead::ok && !live ? SignalFate::missed : SignalFate::reached;
}

}  // namespace dshpty::proc

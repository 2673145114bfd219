// Finding and signalling every descendant of the supervisor. The tree is walked from the
// helper down through /proc/<pid>/task/<tid>/children: O(tree), not O(processes on the
// host). A kernel without those files gets a scan of every /proc/<pid>/stat instead.
//
// Why the walk sees everything: the helper is a subreaper, so an orphan anywhere below
// reparents to it and shows up in its own children list. A process forked while a round
// runs may be missed by that round; the caller repeats rounds (driven by SIGCHLD) until
// waitpid() says ECHILD, which is the only proof that nothing is left.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <initializer_list>

#include "grow_array.hpp"

namespace dshpty::supervisor {

struct SignalRound {
  std::size_t signalled = 0;   // live descendants that were sent the signals
  std::size_t zombies = 0;     // descendants already dead, waiting to be reaped
  std::size_t unverified = 0;  // seen but not provably ours (yet): left to the next round
};

enum class ChildSource {
  automatic,       // the children files when this kernel has them, else the scan
  children_files,  // /proc/<pid>/task/<tid>/children (CONFIG_PROC_CHILDREN)
  full_scan,       // every /proc/<pid>/stat (tests use it to cover the fallback)
};

class ProcessTree {
 public:
  // `root` is the calling process (the subreaper): only it is known to be alive and ours.
  explicit ProcessTree(pid_t root, ChildSource source = ChildSource::automatic);

  // `automatic` until the first walk settles it.
  ChildSource source() const { return source_; }

  // Sends each of `signals`, in order, to every live descendant of the root, in one walk
  // (parents before their children). Each target is pinned with a pidfd and is signalled
  // only once proven a descendant: its parent is the root, or is a pinned descendant that
  // was still unreaped after the target's parent was read, so its pid cannot have been
  // recycled. Never fails: what vanished meanwhile is skipped.
  SignalRound signal_all(std::initializer_list<int> signals);

 private:
  struct Frame {
    pid_t pid;
    int pidfd;          // -1 for the root, which needs no pin
    std::size_t begin;  // its children are kids_[begin, end of kids_)
    std::size_t next;   // index into kids_ of the next child to visit
  };
  struct Edge {
    pid_t ppid;
    pid_t pid;
  };

  void settle_source();
  void append_children(pid_t pid, long threads);
  void load_process_table();

  pid_t root_;
  ChildSource source_;
  GrowArray<pid_t> kids_;    // the children of every frame on the path, frame after frame
  GrowArray<Frame> frames_;  // the path from the root to the process being visited
  GrowArray<Edge> table_;    // full_scan only: every (ppid, pid) on the host, by ppid
};

}  // namespace dshpty::supervisor

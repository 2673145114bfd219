#include "descendants.hpp"

#include <errno.h>
#include <unistd.h>

#include <algorithm>

#include "proc/pidfd.hpp"
#include "proc/procfs.hpp"

namespace dshpty::supervisor {

namespace {

// Appends the children of `pid` (see procfs::for_each_child). A pid that does not fit
// (memory ran out) is dropped: the next round finds it.
procfs::ChildrenRead read_children(pid_t pid, long threads, GrowArray<pid_t>& out) {
  return procfs::for_each_child(pid, threads, [&](pid_t child) { out.push(child); });
}

// --- The walk ---

// Whether the pinned process still holds its pid: alive or a zombie, not yet reaped.
bool holds_pid(int pidfd) { return pidfd < 0 || sys::pidfd_send_signal(pidfd, 0) == 0; }

}  // namespace

ProcessTree::ProcessTree(pid_t root, ChildSource source) : root_(root), source_(source) {}

// Decided at the first walk, not at construction: the helper builds its tree before it
// forks the shell, and a session's start should not wait on a /proc read it may never need.
void ProcessTree::settle_source() {
  if (source_ != ChildSource::automatic) return;
  // The root exists, so a missing children file means the kernel has none.
  GrowArray<pid_t> probe;
  source_ = read_children(root_, 1, probe) == procfs::ChildrenRead::unsupported
                ? ChildSource::full_scan
                : ChildSource::children_files;
}

void ProcessTree::append_children(pid_t pid, long threads) {
  if (source_ == ChildSource::children_files) {
    read_children(pid, threads, kids_);
    return;
  }
  auto by_ppid = [](const Edge& a, const Edge& b) { return a.ppid < b.ppid; };
  for (Edge* e = std::lower_bound(table_.begin(), table_.end(), Edge{pid, 0}, by_ppid);
       e != table_.end() && e->ppid == pid; ++e) {
    kids_.push(e->pid);
  }
}

void ProcessTree::load_process_table() {
  table_.truncate(0);
  procfs::for_each_numeric_entry("/proc", [this](pid_t pid) {
    procfs::Stat st;
    if (procfs::read_stat(pid, st)) table_.push(Edge{st.ppid, pid});
    return false;
  });
  std::sort(table_.begin(), table_.end(),
            [](const Edge& a, const Edge& b) { return a.ppid < b.ppid; });
}

SignalRound ProcessTree::signal_all(std::initializer_list<int> signals) {
  SignalRound round;
  settle_source();
  if (source_ == ChildSource::full_scan) load_process_table();
  kids_.truncate(0);
  frames_.truncate(0);
  frames_.push(Frame{root_, -1, 0, 0});
  append_children(root_, 0);
  // Depth first with the whole path pinned: a child is checked against a parent whose
  // pidfd we hold, and the open fds stay at the depth of the tree, not its size.
  while (!frames_.empty()) {
    Frame& parent = frames_.back();
    if (parent.next >= kids_.size()) {
      if (parent.pidfd >= 0) ::close(parent.pidfd);
      kids_.truncate(parent.begin);
      frames_.pop();
      continue;
    }
    pid_t pid = kids_[parent.next++];
    int pidfd = sys::pidfd_open(pid, 0);
    if (pidfd < 0) {
      if (errno != ESRCH) ++round.unverified;  // EMFILE, ENOMEM: the next round retries
      continue;
    }
    // The stat read names the process that holds `pid` now. Its parent is the root, or
    // the pinned parent if that one still holds its pid after the read (so nothing else
    // can have had that pid). If the process read is not the one pinned, the pinned one
    // was reaped and every signal through the pidfd fails with ESRCH.
    procfs::Stat st;
    bool ours = procfs::read_stat(pid, st) &&
                (st.ppid == root_ || (st.ppid == parent.pid && holds_pid(parent.pidfd)));
    if (!ours) {
      // Gone, or reparented to the root after its parent died: the next round finds it
      // under the root.
      ::close(pidfd);
      ++round.unverified;
      continue;
    }
    if (st.state == 'Z' || st.state == 'X') {
      ::close(pidfd);
      ++round.zombies;
      continue;
    }
    // Its children are read before it is signalled: a SIGKILLed parent hands its children
    // to the root as it dies, and they would only be found by the next round.
    std::size_t first_kid = kids_.size();
    append_children(pid, st.threads);
    for (int signo : signals) sys::pidfd_send_signal(pidfd, signo);
    ++round.signalled;
    // `parent` may dangle after this push (the frames can move).
    if (kids_.size() == first_kid || !frames_.push(Frame{pid, pidfd, first_kid, first_kid})) {
      ::close(pidfd);
      kids_.truncate(first_kid);
    }
  }
  return round;
}

}  // namespace dshpty::supervisor

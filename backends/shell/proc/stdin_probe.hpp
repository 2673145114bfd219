// The Linux stdin probe: is the terminal's foreground process group provably blocked
// waiting for terminal input right now? It catches what the prompt marker cannot (bash's
// `read`, `cat`, `python3 -c 'input()'`, a pager): the shell backend calls check() on a
// short timer while a send is live. It reads only /proc files (and asks the kernel's
// sock_diag whose a UNIX socket's peer is: relayed_input.hpp), never blocks on I/O a
// process can control, keeps no fds open, and signals nothing.
//
// The rule (sound: it prefers "not proven" to a false stdin_read):
// A group is blocked reading when some thread of one of its processes is
//   - asleep (State S) in one of these system calls, from /proc/<pid>/task/<tid>/syscall
//     (the syscall number, then its arguments in hex; a running thread shows "running"):
//       read, readv              on fd a0
//       poll, ppoll              on the pollfd array at a0 (a1 entries): entries with
//                                POLLIN or POLLRDNORM
//       select, pselect6         on the read set at a1 (a0 fds)
//       epoll_wait, epoll_pwait, on the epoll fd a0: its registrations with EPOLLIN, from
//       epoll_pwait2             /proc/<pid>/fdinfo/<a0>
//     The poll array and the select set live in the process's memory; they are read from
//     /proc/<pid>/mem, which needs the same permission as the syscall file (ptrace
//     read access, which the host has over its own descendants) but no ptrace attach and
//     no stop. While the thread sleeps the kernel has them copied already; what we read is
//     what the process passed unless another of its threads rewrote it since (ignored).
//   - waiting on an fd that is this terminal: /proc/<pid>/fd/<n> is a character device
//     with the slave's st_rdev, or is /dev/tty (5,0) and the process's controlling
//     terminal (tty_nr in /proc/<pid>/stat) is the slave. For epoll the registration's
//     ino/sdev must also match that fd, since epoll keeps a file, not an fd number.
//   - in a 64-bit process (its /proc/<pid>/exe is ELFCLASS64): a 32-bit process reports
//     compat syscall numbers, which mean something else here.
//   - and it has run since baseline() (its context-switch count in /proc/<pid>/task/<tid>
//     /status changed), or did not exist then. Call baseline() just before the send's
//     write: the shell sitting in read(0) at its prompt *before* it has seen the new input
//     must not count. baseline() records the count of every thread of the group (not only
//     of those reading then): one that was not asleep in a read then can only be asleep in
//     one now after a switch, so the answer is the same, and the baseline costs one status
//     read per thread instead of a full proof.
// A relay is not a reader (verdict relaying; it never proves one): a thread asleep on the
// terminal in poll/select/epoll whose wait
//   - also reads another input the process relays (relayed_input.hpp: ssh's socket, the
//     PTY master of script, apt, sudo's use_pty; a self-pipe does not
//     count), or holds more inputs than kMaxInputs, or
//   - has a short timeout (at most a second: it wakes by itself and may act, print, and
//     sleep again; a `select([stdin], [], [], 0.5)` loop that prints a tick on each wake),
//     unless it waits on the terminal alone and was seen so twice, more than its timeout
//     apart, its process having written nothing in between (its /proc/<pid>/io count): it
//     woke, had nothing to do, and waits for a key again (ipython polling every 0.5 s, an
//     idle select loop). Then it is a reader. Or
//   - belongs to a process another thread of which waits on such an input (a relay that
//     reads the terminal in a plain read() on one thread: docker's and kubectl's Go clients).
// Such a wait wakes for the far side as readily as for the user; whether the far side then
// waits for the user (a remote `read x`, a password prompt) cannot be told from here. A
// plain reader elsewhere in the group still proves the group reading. The extra work (the
// other fds' stats, a listing of the process's fds for a pipe, a netlink query for a UNIX
// socket, the sibling threads' syscall files) is done only once a wait on the terminal was
// found in poll/select/epoll beside other fds, or in a multi-threaded process.
// Re-reading the syscall file after the status file confirms the thread did not move
// between the two reads. What remains unprovable, and is accepted: a thread woken for an
// unrelated reason in the microseconds between baseline() and the write's bytes reaching
// the line discipline.
//
// Which processes are in the group: with a tree root (the session's supervisor helper,
// a subreaper every process of the session descends from), the root's tree is walked
// through the /proc children files (process_tree.hpp) and each process's pgrp compared:
// O(session tree). A lone shell costs ~8 small /proc reads (helper and shell stat and
// children files, then the reader's syscall, fd, status). Without a root, or on a kernel
// without children files, /proc is scanned (every /proc/<pid>/stat) after the group
// leader (pid == pgid) is tried first: one small read per process on the machine
// (~7.5 µs each; ~2,000 reads once a host runs 1,000 sessions), the reason for the root.
// A process with one thread (num_threads in its stat) is looked at through its main
// thread only, without listing its task directory. Neither enumeration is atomic: a
// process forked (or a thread started) after its parent was looked at is not seen. In
// check() that is only not_proven; in baseline() it matters only if the newcomer is
// already asleep reading the terminal in the microseconds before the write: the same
// class as the residual race above.
//
// Elsewhere (not Linux, or not x86_64/aarch64) supported() is false and check() says
// unsupported: the session then relies on the prompt marker and silence.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "dshpty/result.hpp"

namespace dshpty::proc {

enum class ProbeVerdict {
  blocked_reading,  // proven: the group is waiting for terminal input
  relaying,         // it waits on the terminal as a relay does (below): no proof of a reader
  not_proven,       // no proof (nothing reads, it is busy, or /proc was not readable)
  unsupported,      // this platform cannot tell
};

// What proved it (for tests and debug logs).
struct ProbeEvidence {
  pid_t pid = 0;
  pid_t tid = 0;
  long syscall = -1;  // the native syscall number
  int fd = -1;        // the terminal fd waited on
  // The wait has a short timeout (poll/select/epoll, at most a second): the reader will
  // wake by itself and may still act and draw (vim waiting out its escape timeout, a loop
  // that checks for a key between steps). A plain read never has one. A relay's, or a
  // quiet waiter's (the rule above: then it proves a reader).
  bool timed = false;
  // Another input the process waits on beside the terminal and relays (a socket, a PTY
  // master, a pipe; relayed_input.hpp), in this wait or another thread's; -1 when none.
  int relayed_fd = -1;
};

class StdinProbe {
 public:
  // `terminal`: the session PTY slave's device number (st_rdev; see terminal_device).
  // `tree_root`: a process every member of the session descends from (the supervisor
  // helper); 0 scans /proc instead.
  explicit StdinProbe(dev_t terminal, pid_t tree_root = 0) noexcept
      : terminal_(terminal), tree_root_(tree_root) {}

  // What the caller knows of the root. `outside_session`: it is a single-threaded process
  // outside the terminal's session (the supervisor helper, a session leader of its own),
  // so it is never a member of the terminal's foreground group and forks from its main
  // thread only; then baseline() reads only its children file, not its status.
  enum class Root { may_be_member, outside_session };
  void set_tree_root(pid_t root, Root kind = Root::may_be_member) noexcept {
    tree_root_ = root;
    root_kind_ = kind;
  }
  pid_t tree_root() const noexcept { return tree_root_; }

  static bool supported() noexcept;

  // Records the threads of group `pgid` that are blocked reading the terminal now; they
  // prove nothing later unless they have run since. Replaces any earlier baseline.
  void baseline(pid_t pgid);
  // The same for one process that is its group's only member (the shell at its idle
  // prompt): its thread count and CPU time alone, instead of a walk of the tree (the walk
  // when it has several threads). Replaces any earlier baseline.
  void baseline_process(pid_t pid);
  void clear_baseline() noexcept {
    baseline_.clear();
    quiet_waits_.clear();
  }
  // Is group `pgid` provably blocked reading the terminal? Never fails; evidence, when
  // given and the answer is blocked_reading, says which thread proved it.
  ProbeVerdict check(pid_t pgid, ProbeEvidence* evidence = nullptr) const;

 private:
  dev_t terminal_;
  pid_t tree_root_;
  Root root_kind_ = Root::may_be_member;
  std::vector<std::pair<pid_t, std::uint64_t>> baseline_;  // tid, CPU time (ns) or switches
  // Threads seen in a short wait on the terminal alone since the baseline: when first seen
  // so (its process's bytes written then, its activity), for quiet_waiter. A record of
  // sightings, kept across check()s as a cache is.
  struct QuietWait {
    pid_t tid;
    std::uint64_t written;
    std::uint64_t activity;
    std::int64_t since_ms;  // CLOCK_MONOTONIC
  };
  bool quiet_waiter(pid_t pid, pid_t tid, std::uint64_t activity, std::int64_t timeout_ms) const;
  mutable std::vector<QuietWait> quiet_waits_;
};

// The processes whose process group is `pgid` (empty where unsupported): with a
// tree_root, those in its tree (breadth first, a parent before its children), else from
// a scan of /proc, the leader first when it exists. See the cost above.
std::vector<pid_t> processes_in_group(pid_t pgid, pid_t tree_root = 0);

// What became of signal `signo`, just sent to group `pgid`. missed: it reached no process
// that was running: the group's leader had ended on its own, or was ending (a zombie, or
// exiting, whose status is not that signal's; or gone) and no other member of the group
// lives. A shell between two commands of a list holds the first one's group in front for
// a moment after it exited: a SIGINT then does nothing, and the list runs on. unsettled:
// the leader runs, the signal is not pending and the leader has no handler for it nor
// ignores it: it is dying of it, or it had begun to exit and dropped it; how it ends tells.
// reached when it cannot be told.
enum class SignalFate { reached, missed, unsettled };
SignalFate signal_fate(pid_t pgid, int signo);

// The device number of a terminal fd (e.g. the PTY slave, right after opening it).
// INVALID_ARGUMENT when fd is not a character device; BACKEND_FAILED if fstat fails.
Result<dev_t> terminal_device(int fd);

}  // namespace dshpty::proc

#include "proc/stdin_probe.hpp"

#include <sys/stat.h>

#include <cerrno>

#include "dshpty/errors.hpp"

#if defined(__linux__) && (defined(__x86_64__) || defined(__aarch64__))
#define DSHPTY_STDIN_PROBE 1
#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>

#include "proc/procfs.hpp"
#include "proc/process_tree.hpp"
#include "proc/relayed_input.hpp"
#endif

namespace dshpty::proc {

Result<dev_t> terminal_device(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return make_system_error(Code::BACKEND_FAILED, "fstat terminal", errno);
  if (!S_ISCHR(st.st_mode)) return make_error(Code::INVALID_ARGUMENT, "not a terminal device");
  return st.st_rdev;
}

#ifndef DSHPTY_STDIN_PROBE

bool StdinProbe::supported() noexcept { return false; }
void StdinProbe::baseline(pid_t) { baseline_.clear(); }
ProbeVerdict StdinProbe::check(pid_t, ProbeEvidence*) const { return ProbeVerdict::unsupported; }
std::vector<pid_t> processes_in_group(pid_t, pid_t) { return {}; }

#else

namespace {

enum class Wait { read, poll, select, epoll };
struct WaitingCall {
  long number;
  Wait how;
};

// The native numbers of the calls that wait for input (aarch64 has no poll, select or
// epoll_wait: glibc uses ppoll, pselect6 and epoll_pwait there).
constexpr WaitingCall kWaitingCalls[] = {
    {__NR_read, Wait::read},
    {__NR_readv, Wait::read},
#ifdef __NR_poll
    {__NR_poll, Wait::poll},
#endif
    {__NR_ppoll, Wait::poll},
#ifdef __NR_select
    {__NR_select, Wait::select},
#endif
    {__NR_pselect6, Wait::select},
#ifdef __NR_epoll_wait
    {__NR_epoll_wait, Wait::epoll},
#endif
    {__NR_epoll_pwait, Wait::epoll},
#ifdef __NR_epoll_pwait2
    {__NR_epoll_pwait2, Wait::epoll},
#else
    {441, Wait::epoll},  // epoll_pwait2, the same number on both architectures
#endif
};

std::optional<Wait> waiting_call(long number) {
  for (const WaitingCall& call : kWaitingCalls)
    if (call.number == number) return call.how;
  return std::nullopt;
}

// Bounds on the work one thread can cost us.
constexpr std::size_t kMaxPollEntries = 1024;
constexpr std::size_t kMaxSelectBytes = 128;  // FD_SETSIZE bits
constexpr std::size_t kMaxInputs = 16;  // fds of one wait looked at (one stat each)
constexpr int kMaxSiblings = 64;        // threads of a relay candidate looked at

using procfs::read_small;
using ProcStat = procfs::Stat;

bool read_memory(pid_t pid, std::uint64_t address, void* buf, std::size_t len) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/mem", pid);
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = ::pread(fd, buf, len, static_cast<off_t>(address));
  ::close(fd);
  return n == static_cast<ssize_t>(len);
}

std::optional<ProcStat> read_stat(pid_t pid) {
  ProcStat stat;
  if (!procfs::read_stat(pid, stat)) return std::nullopt;
  return stat;
}

// tty_nr packs major in bits 8-15 and minor in bits 0-7 and 20-31.
dev_t decode_tty_nr(unsigned tty) {
  return makedev((tty >> 8) & 0xFFF, (tty & 0xFF) | ((tty >> 12) & 0xFFF00));
}

struct Syscall {
  long number = -1;
  std::uint64_t args[6] = {};
  friend bool operator==(const Syscall&, const Syscall&) = default;
};

// /proc/<pid>/task/<tid>/syscall: "<nr> <a0> ... <a5> <sp> <pc>" while the thread sleeps
// in a call, "-1 <sp> <pc>" outside one, "running" while it runs.
std::optional<Syscall> read_syscall(pid_t pid, pid_t tid) {
  char path[80], buf[256];
  std::snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", pid, tid);
  if (read_small(path, buf, sizeof buf) <= 0) return std::nullopt;
  Syscall call;
  char* p = buf;
  char* next = nullptr;
  errno = 0;
  call.number = std::strtol(p, &next, 10);
  if (next == p || errno != 0 || call.number < 0) return std::nullopt;
  for (std::uint64_t& arg : call.args) {
    p = next;
    arg = std::strtoull(p, &next, 16);
    if (next == p) return std::nullopt;
  }
  return call;
}

// Whether a thread has run: the baseline records a number per thread, and the check counts a
// blocked reader only if its number changed since. The number is the thread's CPU time in
// nanoseconds (schedstat's first field), which every run moves, including the run of a
// thread that was on a CPU at the baseline and has blocked since (context-switch counts
// say the same; the count of switches in would not). schedstat is a third of the status
// file's cost to read, and the baseline is on every send's path. Without schedstat
// (a kernel built without CONFIG_SCHED_INFO), the status file's context switches, for
// every reading alike.
bool have_schedstat() {
  static const bool have = ::access("/proc/self/schedstat", R_OK) == 0;
  return have;
}

std::optional<std::uint64_t> switches_from_status(const char* buf) {
  const char* voluntary = std::strstr(buf, "\nvoluntary_ctxt_switches:");
  const char* involuntary = std::strstr(buf, "\nnonvoluntary_ctxt_switches:");
  if (!voluntary || !involuntary) return std::nullopt;
  unsigned long long v = 0, n = 0;
  if (std::sscanf(voluntary, "\nvoluntary_ctxt_switches: %llu", &v) != 1) return std::nullopt;
  if (std::sscanf(involuntary, "\nnonvoluntary_ctxt_switches: %llu", &n) != 1) return std::nullopt;
  return v + n;
}

std::optional<std::uint64_t> activity(pid_t pid, pid_t tid) {
  char path[80], buf[4096];
  std::snprintf(path, sizeof path, "/proc/%d/task/%d/%s", pid, tid, have_schedstat() ? "schedstat" : "status");
  if (read_small(path, buf, sizeof buf) <= 0) return std::nullopt;
  if (!have_schedstat()) return switches_from_status(buf);
  char* end = nullptr;
  errno = 0;
  const unsigned long long ns = std::strtoull(buf, &end, 10);
  if (end == buf || errno != 0) return std::nullopt;
  return ns;
}

// A thread's state letter from its status file ('S': sleeping), or nullopt when gone.
std::optional<char> thread_state(pid_t pid, pid_t tid) {
  char path[80], buf[4096];
  std::snprintf(path, sizeof path, "/proc/%d/task/%d/status", pid, tid);
  if (read_small(path, buf, sizeof buf) <= 0) return std::nullopt;
  const char* state = std::strstr(buf, "\nState:");
  char c = 0;
  if (!state || std::sscanf(state, "\nState: %c", &c) != 1) return std::nullopt;
  return c;
}

// The number of threads of a process without reading any file: its task directory links
// two entries plus one per thread. nullopt when the process is gone.
std::optional<long> thread_count(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/task", pid);
  struct stat st {};
  if (::stat(path, &st) != 0 || st.st_nlink < 3) return std::nullopt;
  return static_cast<long>(st.st_nlink) - 2;
}

bool is_64_bit_process(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/exe", pid);
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  unsigned char ident[5] = {};
  ssize_t n = ::pread(fd, ident, sizeof ident, 0);
  ::close(fd);
  return n == 5 && std::memcmp(ident, "\x7f" "ELF", 4) == 0 && ident[4] == 2;  // ELFCLASS64
}

// What the tree walk needs of a process, from its status file: its group (the first NSpgid
// value, numbered in this /proc's pid namespace as stat's pgrp is) and its thread count.
// nullopt when the process is gone or the kernel has no NSpgid line (before Linux 4.1).
struct ProcessStatus {
  pid_t pgrp = 0;
  long threads = 0;
};

std::optional<ProcessStatus> read_process_status(pid_t pid) {
  char buf[4096];
  if (read_small(procfs::Path(pid).text("/status").c_str(), buf, sizeof buf) <= 0) return std::nullopt;
  const char* threads = std::strstr(buf, "\nThreads:");
  const char* pgid = std::strstr(buf, "\nNSpgid:");
  if (!threads || !pgid) return std::nullopt;
  ProcessStatus status;
  long t = 0, g = 0;
  if (std::sscanf(threads, "\nThreads: %ld", &t) != 1 || std::sscanf(pgid, "\nNSpgid: %ld", &g) != 1) {
    return std::nullopt;
  }
  status.threads = t;
  status.pgrp = static_cast<pid_t>(g);
  return status;
}

using procfs::for_each_numeric_entry;

struct Found {
  pid_t pid;
  pid_t tid;
  long syscall;
  int fd;
  std::uint64_t activity;
  std::int64_t timeout_ms;  // the wait's timeout when short (kShortWaitMs), else -1
  int relayed_fd;           // another input of the wait it relays, or -1

  bool timed() const { return timeout_ms >= 0; }

  // Not evidence that anyone waits for the user: it wakes by itself soon, or it waits as
  // much for the far side of something it relays.
  bool relays() const { return timed() || relayed_fd >= 0; }
};

// A wait that wakes by itself soon: its timeout is at most this. A short timeout is a
// program waiting out a key sequence (vim after Escape, a line editor's escape delay) and
// about to act; a long one (vim's 4 s CursorHold, top's refresh) is a program at rest.
constexpr std::int64_t kShortWaitMs = 1000;

// A wait's timeout in milliseconds when it is short, from its arguments: poll's and
// epoll_wait's int milliseconds (-1: none), the timespec or timeval behind ppoll's,
// pselect6's, select's and epoll_pwait2's pointer (NULL: none), read from the process's
// memory. -1 when it has none, or a long one.
std::int64_t short_wait_timeout(pid_t pid, Wait how, const Syscall& call) {
  const auto short_ms = [](std::int64_t ms) { return ms >= 0 && ms <= kShortWaitMs ? ms : -1; };
  const auto int_ms = [&](std::uint64_t arg) { return short_ms(static_cast<std::int32_t>(arg & 0xFFFFFFFFu)); };
  // Both struct timespec and struct timeval are two longs: seconds, then nano or micro.
  const auto pointed = [&](std::uint64_t address, bool micro) -> std::int64_t {
    if (address == 0) return -1;
    long pair[2] = {};
    if (!read_memory(pid, address, pair, sizeof pair)) return -1;
    return short_ms(pair[0] * 1000 + (micro ? pair[1] / 1000 : pair[1] / 1000000));
  };
  switch (how) {
    case Wait::read: return -1;
    case Wait::poll:
#ifdef __NR_poll
      if (call.number == __NR_poll) return int_ms(call.args[2]);
#endif
      return pointed(call.args[2], false);
    case Wait::select:
#ifdef __NR_select
      if (call.number == __NR_select) return pointed(call.args[4], true);
#endif
      return pointed(call.args[4], false);
    case Wait::epoll: return call.number == 441 ? pointed(call.args[3], false) : int_ms(call.args[3]);
  }
  return -1;
}

// The bytes a process has written so far (any fd: the terminal, a pipe, a file), from
// /proc/<pid>/io; nullopt when unreadable.
std::optional<std::uint64_t> bytes_written(pid_t pid) {
  char path[64], buf[512];
  std::snprintf(path, sizeof path, "/proc/%d/io", pid);
  if (read_small(path, buf, sizeof buf) <= 0) return std::nullopt;
  const char* field = std::strstr(buf, "wchar:");
  unsigned long long bytes = 0;
  if (!field || std::sscanf(field, "wchar: %llu", &bytes) != 1) return std::nullopt;
  return bytes;
}

std::int64_t monotonic_ms() {
  struct timespec now {};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
}

// One pass over a group, calling visit(found) for each thread blocked reading the
// terminal until visit returns true.
class GroupScan {
 public:
  GroupScan(dev_t terminal, pid_t pgid, pid_t tree_root)
      : terminal_(terminal), pgid_(pgid), tree_root_(tree_root) {}

  // Calls visit(found) for each thread blocked reading the terminal until it returns true;
  // a process's threads together, so that a thread relaying beside a plain read of the
  // terminal marks that read a relay's.
  template <class F>
  void run(F&& visit) {
    for_each_member([&](pid_t pid, const ProcStat& stat) {
      std::optional<bool> wide;  // 64-bit, asked only when a thread looks like it waits
      RelayedInputs relays(pid, terminal_);
      std::vector<Found> found;
      for_each_task(pid, stat, [&](pid_t tid) {
        if (std::optional<Found> f = thread(pid, tid, stat, wide, relays)) found.push_back(*f);
        return false;
      });
      if (found.empty()) return false;
      if (stat.threads > 1 && std::any_of(found.begin(), found.end(), [](const Found& f) { return !f.relays(); })) {
        if (int fd = sibling_relayed_fd(pid, found, relays); fd >= 0)
          for (Found& f : found)
            if (f.relayed_fd < 0) f.relayed_fd = fd;
      }
      for (const Found& f : found)
        if (visit(f)) return true;
      return false;
    });
  }

  // Calls visit(pid, tid) for every thread of the group until it returns true.
  template <class F>
  void for_each_thread(F&& visit) {
    for_each_member([&](pid_t pid, const ProcStat& stat) {
      return for_each_task(pid, stat, [&](pid_t tid) { return visit(pid, tid); });
    });
  }

 private:
  // Calls member(pid, stat) for each process of the group until it returns true.
  template <class F>
  void for_each_member(F&& member) {
    if (pgid_ <= 0) return;
    if (tree_root_ > 0 && walk_process_tree(tree_root_, [&](pid_t pid) {
          TreeStep step;
          std::optional<ProcStat> stat = read_stat(pid);
          if (!stat) {
            step.descend = false;  // gone (its children reparent to the root)
            return step;
          }
          step.threads = stat->threads;
          step.stop = stat->pgrp == pgid_ && member(pid, *stat);
          return step;
        }))
      return;
    // The leader first: usually the only process, and it spares the /proc scan when it
    // already settles the case.
    if (auto stat = read_stat(pgid_); stat && stat->pgrp == pgid_ && member(pgid_, *stat)) return;
    for_each_numeric_entry("/proc", [&](pid_t pid) {
      if (pid == pgid_) return false;
      auto stat = read_stat(pid);
      return stat && stat->pgrp == pgid_ && member(pid, *stat);
    });
  }

  // Calls visit(tid) for each thread of pid until it returns true; a single-threaded
  // process without listing its task directory.
  template <class F>
  static bool for_each_task(pid_t pid, const ProcStat& stat, F&& visit) {
    if (stat.threads == 1) return visit(pid);
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/task", pid);
    bool stop = false;
    for_each_numeric_entry(path, [&](pid_t tid) {
      stop = visit(tid);
      return stop;
    });
    return stop;
  }

  std::optional<Found> thread(pid_t pid, pid_t tid, const ProcStat& stat, std::optional<bool>& wide,
                             RelayedInputs& relays) {
    std::optional<Syscall> call = read_syscall(pid, tid);
    if (!call) return std::nullopt;
    std::optional<Wait> how = waiting_call(call->number);
    if (!how) return std::nullopt;
    if (!wide) wide = is_64_bit_process(pid);
    if (!*wide) return std::nullopt;
    Inputs inputs;
    if (!waited_inputs(pid, *how, *call, inputs)) return std::nullopt;
    int fd = -1;
    std::vector<Input> others;
    for (const Input& input : inputs.fds) {
      if (fd < 0 && is_terminal(stat, input.st)) {
        fd = input.fd;
      } else {
        others.push_back(input);
      }
    }
    if (fd < 0) return std::nullopt;
    if (thread_state(pid, tid) != 'S') return std::nullopt;
    const std::optional<std::uint64_t> ran = activity(pid, tid);
    if (!ran) return std::nullopt;
    // Still in the very same call after the state and activity reads: they describe one
    // sleep.
    if (read_syscall(pid, tid) != call) return std::nullopt;
    Found found{pid, tid, call->number, fd, *ran, short_wait_timeout(pid, *how, *call), -1};
    // A set too big to look through whole is not one a plain reader waits on.
    if (inputs.more) found.relayed_fd = others.empty() ? fd : others.front().fd;
    for (const Input& other : others) {
      if (found.relayed_fd >= 0) break;
      if (relays.relayed(other.fd, other.st)) found.relayed_fd = other.fd;
    }
    return found;
  }

  // Does another thread of pid (than those in `found`) wait on an input the process relays?
  // A relay may read the terminal on one thread in a plain read() and wait for the far
  // side on another (a Go client: docker, kubectl). At most kMaxSiblings threads.
  int sibling_relayed_fd(pid_t pid, const std::vector<Found>& found, RelayedInputs& relays) const {
    int result = -1;
    int looked = 0;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/task", pid);
    for_each_numeric_entry(path, [&](pid_t tid) {
      if (++looked > kMaxSiblings) return true;
      if (std::any_of(found.begin(), found.end(), [&](const Found& f) { return f.tid == tid; })) return false;
      std::optional<Syscall> call = read_syscall(pid, tid);
      if (!call) return false;
      std::optional<Wait> how = waiting_call(call->number);
      if (!how) return false;
      Inputs inputs;
      if (!waited_inputs(pid, *how, *call, inputs)) return false;
      for (const Input& input : inputs.fds) {
        if (input.st.st_rdev == terminal_ && S_ISCHR(input.st.st_mode)) continue;
        if (relays.relayed(input.fd, input.st)) {
          result = input.fd;
          return true;
        }
      }
      return false;
    });
    return result;
  }

  // The fds a wait reads from, each stat'ed through /proc/<pid>/fd (epoll's checked against
  // the file its registration keeps); `more` when the set held more than kMaxInputs.
  struct Input {
    int fd;
    struct stat st;
  };
  struct Inputs {
    std::vector<Input> fds;
    bool more = false;
  };

  bool add_input(pid_t pid, long n, Inputs& inputs) const {
    if (n < 0 || n > 0x7FFFFFFF) return true;
    if (inputs.fds.size() == kMaxInputs) {
      inputs.more = true;
      return false;
    }
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/fd/%ld", pid, n);
    Input input{static_cast<int>(n), {}};
    if (::stat(path, &input.st) == 0) inputs.fds.push_back(input);
    return true;
  }

  bool waited_inputs(pid_t pid, Wait how, const Syscall& call, Inputs& inputs) const {
    switch (how) {
      case Wait::read: add_input(pid, static_cast<int>(call.args[0]), inputs); return true;
      case Wait::poll: return poll_inputs(pid, call, inputs);
      case Wait::select: return select_inputs(pid, call, inputs);
      case Wait::epoll: return epoll_inputs(pid, call, inputs);
    }
    return false;
  }

  // Is the fd stat'ed as st this terminal?
  bool is_terminal(const ProcStat& stat, const struct stat& st) const {
    if (!S_ISCHR(st.st_mode)) return false;
    if (st.st_rdev == terminal_) return true;
    return st.st_rdev == makedev(5, 0) && decode_tty_nr(stat.tty_nr) == terminal_;  // /dev/tty
  }

  bool poll_inputs(pid_t pid, const Syscall& call, Inputs& inputs) const {
    std::size_t count = std::min<std::uint64_t>(call.args[1], kMaxPollEntries);
    if (call.args[0] == 0 || count == 0) return false;
    std::vector<struct pollfd> fds(count);
    if (!read_memory(pid, call.args[0], fds.data(), count * sizeof(struct pollfd))) return false;
    for (const struct pollfd& entry : fds) {
      if (entry.fd < 0 || !(entry.events & (POLLIN | POLLRDNORM))) continue;
      if (!add_input(pid, entry.fd, inputs)) break;
    }
    return true;
  }

  bool select_inputs(pid_t pid, const Syscall& call, Inputs& inputs) const {
    std::uint64_t nfds = static_cast<std::uint32_t>(call.args[0]);
    if (call.args[1] == 0 || nfds == 0) return false;
    std::size_t bytes = std::min<std::uint64_t>((nfds + 7) / 8, kMaxSelectBytes);
    std::array<unsigned char, kMaxSelectBytes> set{};
    if (!read_memory(pid, call.args[1], set.data(), bytes)) return false;
    // fd_set is an array of longs, bit n%64 of long n/64: on these little-endian targets
    // that is bit n%8 of byte n/8.
    for (std::size_t n = 0; n < std::min<std::uint64_t>(nfds, bytes * 8); ++n) {
      if (!(set[n / 8] & (1u << (n % 8)))) continue;
      if (!add_input(pid, static_cast<long>(n), inputs)) break;
    }
    return true;
  }

  bool epoll_inputs(pid_t pid, const Syscall& call, Inputs& inputs) const {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/fdinfo/%d", pid, static_cast<int>(call.args[0]));
    std::array<char, 16384> buf;  // a big epoll set is read in part
    const long length = read_small(path, buf.data(), buf.size());
    if (length <= 0) return false;
    if (static_cast<std::size_t>(length) + 1 >= buf.size()) inputs.more = true;
    // "tfd: %8d events: %8x data: %16llx  pos:%lli ino:%lx sdev:%x"
    for (const char* line = std::strstr(buf.data(), "tfd:"); line; line = std::strstr(line + 4, "tfd:")) {
      int tfd = -1;
      unsigned events = 0;
      unsigned long long data = 0, ino = 0;
      long long pos = 0;
      unsigned sdev = 0;
      if (std::sscanf(line, "tfd: %d events: %x data: %llx pos:%lli ino:%llx sdev:%x", &tfd, &events,
                      &data, &pos, &ino, &sdev) != 6)
        continue;
      if (!(events & (POLLIN | POLLRDNORM))) continue;
      const std::size_t before = inputs.fds.size();
      if (!add_input(pid, tfd, inputs)) break;
      if (inputs.fds.size() == before) continue;
      // epoll keeps a file, not an fd number: the fd must still be that file (sdev is the
      // kernel's internal dev_t: major in the top 12 bits, minor in the low 20).
      const struct stat& st = inputs.fds.back().st;
      if (st.st_ino != ino || st.st_dev != makedev(sdev >> 20, sdev & 0xFFFFF)) inputs.fds.pop_back();
    }
    return true;
  }

  dev_t terminal_;
  pid_t pgid_;
  pid_t tree_root_;
};

}  // namespace

bool StdinProbe::supported() noexcept { return true; }

// Every thread of the group, not only those that look blocked reading now: a thread that
// was not asleep in a read at baseline can be asleep in one later only after it ran, which
// moves its activity (CPU time), so recording it too changes no verdict, and it spares the
// syscall, exe, memory and fd reads that proving "reading" takes.
//
// It runs before a send's write when a job holds the terminal (the shell alone at its
// prompt takes baseline_process): with a tree root, one status file per process of the
// tree (group and threads) and its children file, plus the activity of each thread in the
// group; for a root outside the session only its children file.
void StdinProbe::baseline(pid_t pgid) {
  baseline_.clear();
  quiet_waits_.clear();
  if (pgid <= 0) return;
  if (tree_root_ > 0) {
    bool complete = true;
    bool walked = walk_process_tree(tree_root_, [&](pid_t pid) {
      TreeStep step;
      if (pid == tree_root_ && root_kind_ == Root::outside_session) {
        step.threads = 1;
        return step;
      }
      std::optional<ProcessStatus> status = read_process_status(pid);
      if (!status) {
        // Gone (its children reparent to the root), or no NSpgid: then the walk below.
        complete = complete && ::access(procfs::Path(pid).text("/status").c_str(), F_OK) != 0;
        step.descend = false;
        step.stop = !complete;
        return step;
      }
      step.threads = status->threads;
      if (status->pgrp != pgid) return step;
      if (status->threads == 1) {
        if (std::optional<std::uint64_t> ran = activity(pid, pid)) baseline_.emplace_back(pid, *ran);
        return step;
      }
      char path[64];
      std::snprintf(path, sizeof path, "/proc/%d/task", pid);
      for_each_numeric_entry(path, [&](pid_t tid) {
        if (std::optional<std::uint64_t> ran = activity(pid, tid)) baseline_.emplace_back(tid, *ran);
        return false;
      });
      return step;
    });
    if (walked && complete) return;
    baseline_.clear();
  }
  GroupScan(terminal_, pgid, tree_root_).for_each_thread([&](pid_t pid, pid_t tid) {
    if (std::optional<std::uint64_t> ran = activity(pid, tid)) baseline_.emplace_back(tid, *ran);
    return false;
  });
}

// A thread in a short wait on the terminal alone (a loop that checks for a key between
// steps, ipython's prompt_toolkit polling every 0.5 s) is a reader once it was seen in such
// a wait, and again after more than its timeout, its process having written nothing between
// the two sightings (its /proc io count unchanged) and the thread having run: it woke at
// least once, found nothing to do, and sleeps waiting for a key again. A loop that prints or
// draws on each wake (a clock, a progress display) moves the count and stays a relay.
bool StdinProbe::quiet_waiter(pid_t pid, pid_t tid, std::uint64_t activity, std::int64_t timeout_ms) const {
  const std::optional<std::uint64_t> written = bytes_written(pid);
  if (!written) return false;
  const std::int64_t now = monotonic_ms();
  auto seen = std::find_if(quiet_waits_.begin(), quiet_waits_.end(), [&](const QuietWait& w) { return w.tid == tid; });
  if (seen == quiet_waits_.end()) {
    quiet_waits_.push_back(QuietWait{tid, *written, activity, now});
    return false;
  }
  if (seen->written != *written) {
    *seen = QuietWait{tid, *written, activity, now};
    return false;
  }
  return seen->activity != activity && now - seen->since_ms > timeout_ms;
}

// The shell at its idle prompt, on every send's path: a stat of its task directory (one
// thread?) and its schedstat, ~3 us here, where its status file took ~7.
void StdinProbe::baseline_process(pid_t pid) {
  baseline_.clear();
  quiet_waits_.clear();
  if (thread_count(pid) == 1) {
    if (std::optional<std::uint64_t> ran = activity(pid, pid)) {
      baseline_.emplace_back(pid, *ran);
      return;
    }
  }
  baseline(pid);  // gone or threaded: the whole walk says what there is
}

ProbeVerdict StdinProbe::check(pid_t pgid, ProbeEvidence* evidence) const {
  bool blocked = false;
  std::optional<ProbeEvidence> relay;
  const auto describe = [](const Found& found) {
    return ProbeEvidence{found.pid, found.tid, found.syscall, found.fd, found.timed(), found.relayed_fd};
  };
  GroupScan(terminal_, pgid, tree_root_).run([&](const Found& found) {
    // A relay proves nothing, run since the baseline or not; a plain reader elsewhere in
    // the group still does. A short wait on the terminal alone that woke and wrote nothing
    // is a reader (quiet_waiter).
    if (found.relays() && !(found.relayed_fd < 0 && quiet_waiter(found.pid, found.tid, found.activity,
                                                                 found.timeout_ms))) {
      if (!relay) relay = describe(found);
      return false;
    }
    auto same = std::find_if(baseline_.begin(), baseline_.end(),
                             [&](const auto& mark) { return mark.first == found.tid; });
    if (same != baseline_.end() && same->second == found.activity) return false;  // not run since
    blocked = true;
    if (evidence) *evidence = describe(found);
    return true;
  });
  if (blocked) return ProbeVerdict::blocked_reading;
  if (!relay) {
    quiet_waits_.clear();
    return ProbeVerdict::not_proven;
  }
  if (evidence) *evidence = *relay;
  return ProbeVerdict::relaying;
}

#endif

}  // namespace dshpty::proc

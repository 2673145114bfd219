#include "descendants.hpp"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "../pidfd.hpp"

namespace dshpty::supervisor {

namespace {

// --- The few /proc files the walk reads, parsed without stdio (see grow_array.hpp) ---

struct ProcStat {
  pid_t ppid = 0;
  char state = '?';  // 'Z' (zombie) and 'X' (dead) have no children and need no signal
  long threads = 0;  // num_threads: children hang off the thread that forked them
};

enum class ChildrenRead { ok, gone, unsupported };

// Builds "/proc/<pid>/<rest>" or "/proc/<pid>/task/<tid>/<rest>" without snprintf.
class ProcPath {
 public:
  explicit ProcPath(pid_t pid) { number(pid); }
  ProcPath& text(const char* s) {
    while (*s) *end_++ = *s++;
    *end_ = '\0';
    return *this;
  }
  ProcPath& number(pid_t value) {
    char digits[16];
    int n = 0;
    auto v = static_cast<unsigned>(value);
    do {
      digits[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v);
    while (n) *end_++ = digits[--n];
    *end_ = '\0';
    return *this;
  }
  const char* c_str() const { return buf_; }

 private:
  char buf_[96] = "/proc/";
  char* end_ = buf_ + 6;
};

// A decimal at p (no sign); advances p past it. -1 when there is none.
long parse_decimal(const char*& p) {
  if (*p < '0' || *p > '9') return -1;
  long value = 0;
  while (*p >= '0' && *p <= '9') value = value * 10 + (*p++ - '0');
  return value;
}

void skip_fields(const char*& p, int count) {
  for (int i = 0; i < count && *p; ++i) {
    while (*p == ' ') ++p;
    while (*p && *p != ' ') ++p;
  }
  while (*p == ' ') ++p;
}

int open_retrying(const char* path, int flags) {
  int fd;
  while ((fd = ::open(path, flags | O_CLOEXEC)) < 0 && errno == EINTR) {
  }
  return fd;
}

// /proc/<pid>/stat's state, ppid and num_threads. False when the process is gone.
bool read_stat(pid_t pid, ProcStat& out) {
  int fd = open_retrying(ProcPath(pid).text("/stat").c_str(), O_RDONLY);
  if (fd < 0) return false;
  char buf[1024];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf - 1)) < 0 && errno == EINTR) {
  }
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  // "pid (comm) S ppid ...": comm may hold spaces and parentheses, so the fields start
  // after the last ')'.
  const char* p = std::strrchr(buf, ')');
  if (!p || p[1] != ' ') return false;
  p += 2;
  out.state = *p;
  skip_fields(p, 1);
  out.ppid = static_cast<pid_t>(parse_decimal(p));
  if (out.ppid < 0) return false;
  // Fields 5 (pgrp) to 19 (nice) lie between ppid (4) and num_threads (20).
  skip_fields(p, 15);
  out.threads = parse_decimal(p);
  return true;
}

// Appends every pid listed in the children file at `path`, parsing across reads (a busy
// parent's list spans many). 0, or the errno of the open. A pid that does not fit (memory
// ran out) is dropped: the next round finds it.
int append_children_file(const char* path, GrowArray<pid_t>& out) {
  int fd = open_retrying(path, O_RDONLY);
  if (fd < 0) return errno;
  char buf[4096];
  long pid = -1;  // the number being parsed; it may continue in the next read
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      char c = buf[i];
      if (c >= '0' && c <= '9') {
        pid = (pid < 0 ? 0 : pid * 10) + (c - '0');
      } else if (pid >= 0) {
        if (pid > 0) out.push(static_cast<pid_t>(pid));
        pid = -1;
      }
    }
  }
  if (pid > 0) out.push(static_cast<pid_t>(pid));
  ::close(fd);
  return 0;
}

// Calls on_pid(pid) for every numeric entry of the directory `path`, through getdents64
// on a stack buffer (opendir() would malloc 32 KiB). False when it cannot be opened.
template <class F>
bool for_each_numeric_entry(const char* path, F&& on_pid) {
  int fd = open_retrying(path, O_RDONLY | O_DIRECTORY);
  if (fd < 0) return false;
  alignas(8) char buf[4096];
  for (;;) {
    ssize_t n = ::getdents64(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t off = 0; off < n;) {
      auto* entry = reinterpret_cast<dirent64*>(buf + off);
      off += entry->d_reclen;
      const char* name = entry->d_name;
      long pid = parse_decimal(name);
      if (pid > 0 && *name == '\0') on_pid(static_cast<pid_t>(pid));
    }
  }
  ::close(fd);
  return true;
}

// Appends the children of `pid` from /proc/<pid>/task/<tid>/children: the one task's
// file when `threads` is 1, else every task's. `unsupported` only when the file is
// missing for a task that exists: a kernel without CONFIG_PROC_CHILDREN.
ChildrenRead read_children(pid_t pid, long threads, GrowArray<pid_t>& out) {
  if (threads == 1) {
    int err = append_children_file(
        ProcPath(pid).text("/task/").number(pid).text("/children").c_str(), out);
    if (err == 0) return ChildrenRead::ok;
    bool exists = ::access(ProcPath(pid).text("/task").c_str(), F_OK) == 0;
    return err == ENOENT && exists ? ChildrenRead::unsupported : ChildrenRead::gone;
  }
  bool any = false;
  bool listed = for_each_numeric_entry(ProcPath(pid).text("/task").c_str(), [&](pid_t tid) {
    // A thread that exited meanwhile has no file any more, and no children either.
    ProcPath file(pid);
    file.text("/task/").number(tid).text("/children");
    if (append_children_file(file.c_str(), out) == 0) any = true;
  });
  return listed && any ? ChildrenRead::ok : ChildrenRead::gone;
}

// --- The walk ---

// Whether the pinned process still holds its pid: alive or a zombie, not yet reaped.
bool holds_pid(int pidfd) { return pidfd < 0 || sys::pidfd_send_signal(pidfd, 0) == 0; }

}  // namespace

ProcessTree::ProcessTree(pid_t root, ChildSource source) : root_(root), source_(source) {
  if (source_ != ChildSource::automatic) return;
  // The root exists, so a missing children file means the kernel has none.
  GrowArray<pid_t> probe;
  source_ = read_children(root_, 1, probe) == ChildrenRead::unsupported
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
  for_each_numeric_entry("/proc", [this](pid_t pid) {
    ProcStat st;
    if (read_stat(pid, st)) table_.push(Edge{st.ppid, pid});
  });
  std::sort(table_.begin(), table_.end(),
            [](const Edge& a, const Edge& b) { return a.ppid < b.ppid; });
}

SignalRound ProcessTree::signal_all(std::initializer_list<int> signals) {
  SignalRound round;
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
    ProcStat st;
    bool ours = read_stat(pid, st) &&
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

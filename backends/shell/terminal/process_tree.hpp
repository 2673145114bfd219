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
// Header-only and free of the probe, so the supervisor could share it later (it has its
// own walk today, in backends/shell/supervisor/). No allocation beyond the queue, no fds
// kept, no stdio.
#pragma once

#include <sys/types.h>

#if defined(__linux__)
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <vector>

namespace dshpty::terminal {

// Whether this kernel has the children files (asked once: it is a kernel build option).
inline bool children_files_supported() noexcept {
  static const bool supported = ::access("/proc/thread-self/children", R_OK) == 0;
  return supported;
}

// Appends the pids listed in one children file ("12 34 56 "). A missing file (the task
// is gone) lists nothing.
inline void read_children_file(const char* path, std::vector<pid_t>& out) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return;
  char buf[4096];
  long value = 0;
  bool digits = false;
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      char c = buf[i];
      if (c >= '0' && c <= '9') {
        if (value < 0x7FFFFFFF / 10) value = value * 10 + (c - '0');
        digits = true;
      } else if (digits) {
        out.push_back(static_cast<pid_t>(value));
        value = 0;
        digits = false;
      }
    }
    // A seq_file read stops short of the buffer only at its end, or when the next pid
    // (at most 11 bytes with its space) would not fit: a clearly short read is the end,
    // which spares the second read that would return 0.
    if (static_cast<std::size_t>(n) + 16 < sizeof buf) break;
  }
  if (digits) out.push_back(static_cast<pid_t>(value));
  ::close(fd);
}

// Appends the children of every task of pid. `threads` == 1 (from the caller's read of
// /proc/<pid>/stat) reads the main thread's file without listing the task directory.
inline void read_children(pid_t pid, long threads, std::vector<pid_t>& out) {
  char path[80];
  if (threads == 1) {
    std::snprintf(path, sizeof path, "/proc/%d/task/%d/children", static_cast<int>(pid), static_cast<int>(pid));
    read_children_file(path, out);
    return;
  }
  std::snprintf(path, sizeof path, "/proc/%d/task", static_cast<int>(pid));
  DIR* dir = ::opendir(path);  // glibc opens it O_CLOEXEC
  if (!dir) return;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] < '1' || entry->d_name[0] > '9') continue;
    std::snprintf(path, sizeof path, "/proc/%d/task/%.16s/children", static_cast<int>(pid), entry->d_name);
    read_children_file(path, out);
  }
  ::closedir(dir);
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

}  // namespace dshpty::terminal
#endif

#include "descendants.hpp"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../pidfd.hpp"

namespace dshpty::supervisor {

namespace {

struct ProcStat {
  pid_t ppid = 0;
  char state = '?';
};

// Reads a small /proc file into buf (NUL-terminated); its length, or -1.
ssize_t read_small(const char* path, char* buf, std::size_t size) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = ::read(fd, buf, size - 1);
  ::close(fd);
  if (n < 0) return -1;
  buf[n] = '\0';
  return n;
}

// Parses "pid (comm) S ppid ..."; comm may hold spaces and parentheses, so the fields
// start after the last ')'.
bool read_stat(pid_t pid, ProcStat& out) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  char buf[512];
  if (read_small(path, buf, sizeof buf) <= 0) return false;
  char* close_paren = std::strrchr(buf, ')');
  if (!close_paren || close_paren[1] != ' ') return false;
  char* p = close_paren + 2;
  out.state = *p;
  char* end = nullptr;
  out.ppid = static_cast<pid_t>(std::strtol(p + 1, &end, 10));
  return end != p + 1;
}

void parse_pids(const char* text, std::vector<pid_t>& out) {
  for (const char* p = text; *p;) {
    char* end = nullptr;
    long pid = std::strtol(p, &end, 10);
    if (end == p) break;
    if (pid > 0) out.push_back(static_cast<pid_t>(pid));
    p = end;
  }
}

// The children of `pid` from /proc/<pid>/task/<tid>/children for each of its threads
// (a child hangs off the thread that forked it). False when this kernel has no such file.
bool children_of(pid_t pid, std::vector<pid_t>& out) {
  char path[320];
  std::snprintf(path, sizeof path, "/proc/%d/task", static_cast<int>(pid));
  DIR* dir = ::opendir(path);
  if (!dir) return true;  // gone: no children to report
  bool supported = true;
  // A children file of a busy parent can be long; most are tiny.
  std::string buf(4096, '\0');
  while (dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    std::snprintf(path, sizeof path, "/proc/%d/task/%s/children", static_cast<int>(pid),
                  entry->d_name);
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT && ::access("/proc/self/task", F_OK) == 0) supported = false;
      continue;
    }
    std::size_t used = 0;
    for (;;) {
      if (used + 1 >= buf.size()) buf.resize(buf.size() * 2);
      ssize_t n = ::read(fd, buf.data() + used, buf.size() - used - 1);
      if (n <= 0) break;
      used += static_cast<std::size_t>(n);
    }
    ::close(fd);
    buf[used] = '\0';
    parse_pids(buf.c_str(), out);
  }
  ::closedir(dir);
  return supported;
}

// (pid, parent) of every descendant of root, walking the children files: O(tree).
bool walk_tree(pid_t root, std::vector<std::pair<pid_t, pid_t>>& out) {
  std::vector<pid_t> queue{root};
  std::vector<pid_t> kids;
  while (!queue.empty()) {
    pid_t parent = queue.back();
    queue.pop_back();
    kids.clear();
    if (!children_of(parent, kids)) return false;
    for (pid_t kid : kids) {
      out.emplace_back(kid, parent);
      queue.push_back(kid);
    }
  }
  return true;
}

// The same from every /proc/<pid>/stat: O(processes on the host), for kernels without
// CONFIG_PROC_CHILDREN.
void scan_tree(pid_t root, std::vector<std::pair<pid_t, pid_t>>& out) {
  std::unordered_map<pid_t, std::vector<pid_t>> children;
  DIR* dir = ::opendir("/proc");
  if (!dir) return;
  while (dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    ProcStat st;
    if (read_stat(static_cast<pid_t>(pid), st)) children[st.ppid].push_back(static_cast<pid_t>(pid));
  }
  ::closedir(dir);
  std::vector<pid_t> queue{root};
  while (!queue.empty()) {
    pid_t parent = queue.back();
    queue.pop_back();
    auto it = children.find(parent);
    if (it == children.end()) continue;
    for (pid_t pid : it->second) {
      out.emplace_back(pid, parent);
      queue.push_back(pid);
    }
  }
}

}  // namespace

SignalRound signal_descendants(pid_t root, std::initializer_list<int> signals) {
  static bool walk_supported = true;
  std::vector<std::pair<pid_t, pid_t>> tree;
  if (walk_supported && !walk_tree(root, tree)) {
    walk_supported = false;
    tree.clear();
  }
  if (!walk_supported) scan_tree(root, tree);

  SignalRound round;
  for (auto [pid, parent] : tree) {
    int pidfd = sys::pidfd_open(pid, 0);
    if (pidfd < 0) continue;  // gone already
    ProcStat now;
    // Still the child of the parent we found it under: the pidfd holds that process, not
    // a recycled pid.
    if (read_stat(pid, now) && now.ppid == parent) {
      if (now.state == 'Z' || now.state == 'X') {
        ++round.zombies;
      } else {
        for (int signo : signals) sys::pidfd_send_signal(pidfd, signo);
        ++round.signalled;
      }
    }
    ::close(pidfd);
  }
  return round;
}

}  // namespace dshpty::supervisor

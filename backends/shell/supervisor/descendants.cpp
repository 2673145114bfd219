#include "descendants.hpp"

#include <dirent.h>
#include <fcntl.h>
#include "../pidfd.hpp"
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>
#include <vector>

namespace dshpty::supervisor {

namespace {

struct ProcStat {
  pid_t ppid = 0;
  char state = '?';
};

// Parses "pid (comm) S ppid ..."; comm may hold spaces and parentheses, so the fields
// start after the last ')'.
bool read_stat(pid_t pid, ProcStat& out) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[512];
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  char* close_paren = std::strrchr(buf, ')');
  if (!close_paren || close_paren[1] != ' ') return false;
  char* p = close_paren + 2;
  out.state = *p;
  char* end = nullptr;
  out.ppid = static_cast<pid_t>(std::strtol(p + 1, &end, 10));
  return end != p + 1;
}

// pid -> stat of every process in the table.
std::unordered_map<pid_t, ProcStat> scan_processes() {
  std::unordered_map<pid_t, ProcStat> table;
  DIR* dir = ::opendir("/proc");
  if (!dir) return table;
  while (dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    ProcStat st;
    if (read_stat(static_cast<pid_t>(pid), st)) table.emplace(static_cast<pid_t>(pid), st);
  }
  ::closedir(dir);
  return table;
}

}  // namespace

SignalRound signal_descendants(pid_t root, std::initializer_list<int> signals) {
  auto table = scan_processes();
  std::unordered_map<pid_t, std::vector<pid_t>> children;
  for (const auto& [pid, st] : table) children[st.ppid].push_back(pid);

  SignalRound round;
  std::vector<pid_t> queue{root};
  while (!queue.empty()) {
    pid_t parent = queue.back();
    queue.pop_back();
    auto it = children.find(parent);
    if (it == children.end()) continue;
    for (pid_t pid : it->second) {
      queue.push_back(pid);
      const ProcStat& seen = table[pid];
      if (seen.state == 'Z' || seen.state == 'X') {
        ++round.zombies;
        continue;
      }
      int pidfd = sys::pidfd_open(pid, 0);
      if (pidfd < 0) continue;  // gone already
      ProcStat now;
      // Same parent as scanned: the pidfd holds that process, not a recycled pid.
      if (read_stat(pid, now) && now.ppid == seen.ppid) {
        for (int signo : signals) sys::pidfd_send_signal(pidfd, signo);
        ++round.signalled;
      }
      ::close(pidfd);
    }
  }
  return round;
}

}  // namespace dshpty::supervisor

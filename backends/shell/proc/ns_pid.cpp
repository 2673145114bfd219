#include "proc/ns_pid.hpp"

#include <cstring>

#include "proc/process_tree.hpp"
#include "proc/procfs.hpp"

namespace dshpty::proc {

bool innermost_pid(pid_t pid, pid_t& innermost, int& levels) {
  char buf[4096];
  if (procfs::read_small(procfs::Path(pid).text("/status").c_str(), buf, sizeof buf) <= 0) {
    return false;
  }
  const char* p = std::strstr(buf, "\nNSpid:");
  if (!p) return false;
  p += 7;
  levels = 0;
  for (;;) {
    while (*p == ' ' || *p == '\t') ++p;
    long value = 0;
    if (!procfs::parse_decimal(p, value)) break;
    innermost = static_cast<pid_t>(value);
    ++levels;
  }
  return levels > 0;
}

pid_t host_pid_of_nested(pid_t root, pid_t ns_pid) {
  pid_t found = -1;
  auto matches = [&](pid_t pid) {
    pid_t inner = 0;
    int levels = 0;
    return innermost_pid(pid, inner, levels) && levels > 1 && inner == ns_pid;
  };
  bool walked = walk_process_tree(root, [&](pid_t pid) {
    TreeStep step;
    if (pid != root && matches(pid)) {
      found = pid;
      step.stop = true;
    }
    return step;
  });
  if (walked) return found;
  // No children files on this kernel: every process on the machine, then, keeping only
  // root's descendants (other sandboxes number their processes the same way).
  auto descends_from_root = [&](pid_t pid) {
    for (int depth = 0; depth < 64 && pid > 1; ++depth) {
      procfs::Stat st;
      if (!procfs::read_stat(pid, st)) return false;
      if (st.ppid == root) return true;
      pid = st.ppid;
    }
    return false;
  };
  procfs::for_each_numeric_entry("/proc", [&](pid_t pid) {
    if (!matches(pid) || !descends_from_root(pid)) return false;
    found = pid;
    return true;
  });
  return found;
}

}  // namespace dshpty::proc

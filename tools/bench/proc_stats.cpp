#include "proc_stats.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <sstream>
#include <string>

namespace bench {

namespace {

std::string proc_path(pid_t pid, const char* leaf) {
  return pid == 0 ? std::string("/proc/self/") + leaf
                  : "/proc/" + std::to_string(pid) + "/" + leaf;
}

}  // namespace

// With read(2), not an ifstream: a process that exits while its file is read makes the
// read fail with ESRCH, and libstdc++'s filebuf throws on a failed read.
std::string proc_file(pid_t pid, const char* leaf) {
  std::string out;
  const int fd = ::open(proc_path(pid, leaf).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return out;
}

namespace {

long status_field(pid_t pid, const std::string& name) {
  std::istringstream in(proc_file(pid, "status"));
  for (std::string line; std::getline(in, line);)
    if (line.rfind(name + ":", 0) == 0) return std::strtol(line.c_str() + name.size() + 1, nullptr, 10);
  return 0;
}

// The fields of /proc/PID/stat after the command name (which may hold spaces), 1-based as
// in proc(5) minus 2: index 0 is field 3 (state).
std::vector<std::string> stat_fields(pid_t pid) {
  const std::string all = proc_file(pid, "stat");
  auto close = all.rfind(')');
  std::vector<std::string> out;
  if (close == std::string::npos) return out;
  std::istringstream rest(all.substr(close + 2));
  for (std::string f; rest >> f;) out.push_back(f);
  return out;
}

}  // namespace

long rss_kib(pid_t pid) { return status_field(pid, "VmRSS"); }

static long rollup_field(pid_t pid, const std::string& name) {
  std::istringstream in(proc_file(pid, "smaps_rollup"));
  for (std::string line; std::getline(in, line);)
    if (line.rfind(name + ":", 0) == 0) return std::strtol(line.c_str() + name.size() + 1, nullptr, 10);
  return 0;
}

long pss_kib(pid_t pid) { return rollup_field(pid, "Pss"); }

long private_kib(pid_t pid) {
  return rollup_field(pid, "Private_Clean") + rollup_field(pid, "Private_Dirty");
}

double cpu_seconds(pid_t pid) {
  auto f = stat_fields(pid);
  if (f.size() < 13) return 0;
  double ticks = std::strtod(f[11].c_str(), nullptr) + std::strtod(f[12].c_str(), nullptr);
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double cpu_ns(pid_t pid) {
  return std::strtod(proc_file(pid, "schedstat").c_str(), nullptr);
}

long context_switches(pid_t pid) {
  return status_field(pid, "voluntary_ctxt_switches") +
         status_field(pid, "nonvoluntary_ctxt_switches");
}

pid_t parent_of(pid_t pid) {
  auto f = stat_fields(pid);
  return f.size() > 1 ? static_cast<pid_t>(std::strtol(f[1].c_str(), nullptr, 10)) : 0;
}

std::map<pid_t, pid_t> process_table() {
  std::map<pid_t, pid_t> table;
  DIR* d = opendir("/proc");
  if (!d) return table;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end) continue;
    pid_t ppid = parent_of(static_cast<pid_t>(pid));
    if (ppid || pid == 1) table[static_cast<pid_t>(pid)] = ppid;
  }
  closedir(d);
  return table;
}

std::set<pid_t> descendants(const std::map<pid_t, pid_t>& table, pid_t root) {
  std::set<pid_t> out;
  for (auto [pid, ppid] : table) {
    // Walk up; trees here are shallow.
    for (pid_t p = ppid; p > 1; p = table.count(p) ? table.at(p) : 0) {
      if (p == root) {
        out.insert(pid);
        break;
      }
    }
  }
  return out;
}

bool alive(pid_t pid) { return kill(pid, 0) == 0 || errno == EPERM; }

}  // namespace bench

#include "wake_mode.hpp"

#include <sched.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace bench {

const char* wake_mode_name(WakeMode mode) {
  switch (mode) {
    case WakeMode::one_cpu: return "one CPU";
    case WakeMode::two_cpus: return "two CPUs";
    case WakeMode::unknown: break;
  }
  return "unknown";
}

// Field 39 of /proc/<pid>/stat: the CPU the task last ran on. The fields start after the
// last ')' (comm may hold anything).
static int last_cpu(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line)) return -1;
  auto close = line.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream fields(line.substr(close + 2));
  std::string f;
  for (int field = 3; fields >> f; ++field)
    if (field == 39) return std::stoi(f);
  return -1;
}

WakeMode wake_mode_of(pid_t shell) {
  int theirs = shell > 0 ? last_cpu(shell) : -1;
  int mine = sched_getcpu();
  if (theirs < 0 || mine < 0) return WakeMode::unknown;
  return theirs == mine ? WakeMode::one_cpu : WakeMode::two_cpus;
}

CpuTimes CpuTimes::now() {
  CpuTimes t;
  std::ifstream in("/proc/stat");
  std::string cpu;
  unsigned long long v[10] = {};
  if (!(in >> cpu) || cpu != "cpu") return t;
  for (auto& x : v) in >> x;
  // user nice system idle iowait irq softirq steal guest guest_nice (guest is in user)
  t.idle = v[3] + v[4];
  t.steal = v[7];
  for (int i = 0; i < 8; ++i) t.total += v[i];
  return t;
}

std::string describe_cpu_share(const CpuTimes& before, const CpuTimes& after) {
  double total = static_cast<double>(after.total - before.total);
  if (total <= 0) return "CPU share unknown";
  char buf[96];
  std::snprintf(buf, sizeof buf, "CPUs idle %.0f%%, steal %.0f%%",
                100.0 * static_cast<double>(after.idle - before.idle) / total,
                100.0 * static_cast<double>(after.steal - before.steal) / total);
  return buf;
}

}  // namespace bench

// A process's command name as the kernel keeps it (/proc/<pid>/comm, at most 15 bytes), or
// empty when it cannot be read: what a job's report and a listening port name.
#pragma once

#include <sys/types.h>

#include <string>

#include "proc/procfs.hpp"

namespace dshpty::proc {

inline std::string read_comm(pid_t pid) {
  char buf[64];
  long n = procfs::read_small(procfs::Path(pid).text("/comm").c_str(), buf, sizeof buf);
  if (n <= 0) return {};
  std::string comm(buf, static_cast<std::size_t>(n));
  if (!comm.empty() && comm.back() == '\n') comm.pop_back();
  return comm;
}

}  // namespace dshpty::proc

#include "linger/peer_check.hpp"

#include <errno.h>
#include <limits.h>
#include <sys/socket.h>
#include <unistd.h>


#include "proc/procfs.hpp"

namespace dshpty::linger {

namespace {

std::string exe_of(pid_t pid) {
  char path[PATH_MAX];
  const std::string link = "/proc/" + std::to_string(pid) + "/exe";
  ssize_t n = ::readlink(link.c_str(), path, sizeof path);
  if (n <= 0 || static_cast<std::size_t>(n) >= sizeof path) return {};
  std::string out(path, static_cast<std::size_t>(n));
  // A replaced binary reads "PATH (deleted)": still the same program for this check.
  constexpr std::string_view kDeleted = " (deleted)";
  if (out.size() > kDeleted.size() && out.compare(out.size() - kDeleted.size(), kDeleted.size(), kDeleted) == 0) {
    out.resize(out.size() - kDeleted.size());
  }
  return out;
}

pid_t parent_of(pid_t pid) {
  procfs::Stat st;
  return procfs::read_stat(pid, st) ? st.ppid : -1;
}

}  // namespace

Status check_peer(int fd, const std::string& supervisor_exe) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
    return make_system_error(Code::BACKEND_FAILED, "SO_PEERCRED", errno);
  }
  if (cred.uid != ::getuid()) {
    return make_error(Code::BACKEND_FAILED,
                      "refused: peer uid " + std::to_string(cred.uid) + " is not " + std::to_string(::getuid()));
  }
  if (cred.pid <= 0) return make_error(Code::BACKEND_FAILED, "refused: the peer's pid is unknown");
  // Bounded: a chain longer than this is not a process tree we can trust either.
  pid_t pid = cred.pid;
  for (int depth = 0; depth < 4096 && pid > 1; ++depth) {
    const std::string exe = exe_of(pid);
    // The peer itself may be this program: the relay a reconnecting remote host reaches
    // over its transport (supervisor/attach_relay.hpp). Its ancestors still count: one
    // started from inside a session has that session's subreaper above it.
    if (depth > 0 && !supervisor_exe.empty() && exe == supervisor_exe) {
      return make_error(Code::BACKEND_FAILED,
                        "refused: peer pid " + std::to_string(cred.pid) + " runs inside a dshpty session");
    }
    pid_t parent = parent_of(pid);
    if (parent < 0) {
      // The peer (or an ancestor) is gone, or /proc hides it: nothing proves it is outside.
      return make_error(Code::BACKEND_FAILED,
                        "refused: cannot see the ancestry of peer pid " + std::to_string(cred.pid));
    }
    pid = parent;
  }
  return {};
}

}  // namespace dshpty::linger

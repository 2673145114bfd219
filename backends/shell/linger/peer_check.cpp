#include "linger/peer_check.hpp"

#include <errno.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "linger/session_mark.hpp"
#include "proc/procfs.hpp"
#include "proc/unique_fd.hpp"

namespace dshpty::linger {

namespace {

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77  // Linux 6.5
#endif

struct StatLine {
  pid_t ppid = -1;
  bool helper_named = false;
};

// One read of /proc/PID/stat gives the name and the parent together. comm may hold ')' and
// spaces: it runs from the first '(' to the last ')'.
bool read_stat_line(pid_t pid, StatLine& out) {
  char buf[1024];
  if (procfs::read_small(procfs::Path(pid).text("/stat").c_str(), buf, sizeof buf) <= 0) return false;
  const char* open = std::strchr(buf, '(');
  const char* close = std::strrchr(buf, ')');
  if (!open || !close || close < open || close[1] != ' ' || close[2] == '\0' || close[3] != ' ') return false;
  out.helper_named = std::string_view(open + 1, static_cast<std::size_t>(close - open - 1)) == kHelperComm;
  char* end = nullptr;
  const long ppid = std::strtol(close + 4, &end, 10);
  if (end == close + 4 || ppid < 0) return false;
  out.ppid = static_cast<pid_t>(ppid);
  return true;
}

enum class Mark { absent, present, unknown };

// The hard RLIMIT_RTTIME from /proc/PID/limits ("Max realtime timeout  SOFT  HARD  us").
Mark rttime_mark(pid_t pid) {
  char buf[4096];
  if (procfs::read_small(procfs::Path(pid).text("/limits").c_str(), buf, sizeof buf) <= 0) return Mark::unknown;
  constexpr std::string_view kLabel = "\nMax realtime timeout";
  const char* line = std::strstr(buf, kLabel.data());
  if (!line) return Mark::unknown;
  const char* p = line + kLabel.size();
  for (int field = 0; field < 2; ++field) {  // skip the soft limit, stop at the hard one
    while (*p == ' ') ++p;
    if (field == 0) {
      while (*p && *p != ' ' && *p != '\n') ++p;
    }
  }
  if (std::strncmp(p, "unlimited", 9) == 0) return Mark::absent;
  char* end = nullptr;
  const unsigned long long hard = std::strtoull(p, &end, 10);
  if (end == p) return Mark::unknown;
  return hard <= kTreeRttimeMark ? Mark::present : Mark::absent;
}

bool same_file(pid_t pid, const FileId& file) {
  struct stat st {};
  // Needs ptrace access to the process: a helper of this build is non-dumpable and answers
  // nothing here (its name marks it); an older one, dumpable, answers.
  return file.known && ::stat(procfs::Path(pid).text("/exe").c_str(), &st) == 0 && st.st_dev == file.dev &&
         st.st_ino == file.ino;
}

Error inside(pid_t peer, const std::string& why) {
  return make_error(Code::BACKEND_FAILED,
                    "refused: peer pid " + std::to_string(peer) + " runs inside a dshpty session (" + why + ")");
}

}  // namespace

FileId own_executable() {
  struct stat st {};
  if (::stat("/proc/self/exe", &st) < 0) return {};
  return FileId{st.st_dev, st.st_ino, true};
}

Status check_peer(int fd, const FileId& helper_file) {
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
  const std::string cannot_see = "refused: cannot see the ancestry of peer pid " + std::to_string(cred.pid);
  // The peer as it connected, pinned (pidfds are close-on-exec from birth): if it is still
  // alive once everything below was read, its pid named it all along, not a process that
  // took the number over. Kernels before 6.5 have no SO_PEERPIDFD: the window stays open.
  proc::UniqueFd pinned;
  {
    int pidfd = -1;
    socklen_t n = sizeof pidfd;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &n) == 0) {
      pinned.reset(pidfd);
    } else if (errno == ESRCH) {
      return make_error(Code::BACKEND_FAILED, cannot_see + ": it is gone");
    }
  }
  // The peer's own limits: the mark survives fork, exec, setsid and the helper's death.
  switch (rttime_mark(cred.pid)) {
    case Mark::present:
      return inside(cred.pid, "its RLIMIT_RTTIME carries a session's mark");
    case Mark::unknown:
      return make_error(Code::BACKEND_FAILED, cannot_see);
    case Mark::absent:
      break;
  }
  // Its ancestry, up to the namespace's init: a helper above it (by name, or by file).
  pid_t pid = cred.pid;
  for (int depth = 0; depth < 4096 && pid >= 1; ++depth) {
    StatLine line;
    if (!read_stat_line(pid, line)) {
      // The peer (or an ancestor) is gone, or /proc hides it: nothing proves it is outside.
      return make_error(Code::BACKEND_FAILED, cannot_see);
    }
    // The peer itself may be named like a helper: the relay a reconnecting remote host
    // reaches over its transport (supervisor/attach_relay.hpp) is its --stdio face.
    if (depth > 0 && line.helper_named) {
      return inside(cred.pid, "pid " + std::to_string(pid) + " above it is a session helper");
    }
    if (depth > 0 && same_file(pid, helper_file)) {
      return inside(cred.pid, "pid " + std::to_string(pid) + " above it runs the helper's executable");
    }
    pid = line.ppid;
  }
  if (pid >= 1) return make_error(Code::BACKEND_FAILED, cannot_see + ": deeper than 4096");
  if (pinned.valid() && ::syscall(SYS_pidfd_send_signal, pinned.get(), 0, nullptr, 0) < 0) {
    return make_error(Code::BACKEND_FAILED, cannot_see + ": it exited during the check");
  }
  return {};
}

}  // namespace dshpty::linger

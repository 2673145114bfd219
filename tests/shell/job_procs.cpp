#include "job_procs.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "proc/listening_ports.hpp"

namespace dshpty::test {

ScriptTree::ScriptTree(const std::string& script) {
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  int fds[2], ins[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return;
  if (::pipe2(ins, O_CLOEXEC) != 0) return;
  pid_ = ::fork();
  if (pid_ == 0) {
    ::setpgid(0, 0);
    ::dup2(fds[1], 1);
    ::dup2(ins[0], 0);
    ::execlp("bash", "bash", "-c", script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[1]);
  ::close(ins[0]);
  out_ = fds[0];
  in_ = ins[1];
}

ScriptTree::ScriptTree(Interactive) {
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0 || ::grantpt(master) != 0 || ::unlockpt(master) != 0) return;
  std::string slave = ::ptsname(master);
  pid_ = ::fork();
  if (pid_ == 0) {
    ::setsid();
    int fd = ::open(slave.c_str(), O_RDWR);
    ::ioctl(fd, TIOCSCTTY, 0);
    ::dup2(fd, 0);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::setenv("PS1", "$ ", 1);
    ::setenv("TERM", "dumb", 1);
    ::execlp("bash", "bash", "--norc", "--noprofile", "-i", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  out_ = master;
  in_ = ::dup(master);
  terminal_ = true;
}

void ScriptTree::write(const std::string& text) {
  if (::write(in_, text.data(), text.size()) != static_cast<ssize_t>(text.size())) return;
}

std::vector<pid_t> ScriptTree::everything_below() {
  std::vector<pid_t> pids = proc::tree_pids(::getpid());
  pids.erase(std::remove(pids.begin(), pids.end(), ::getpid()), pids.end());
  return pids;
}

ScriptTree::~ScriptTree() {
  // Until nothing is left below: kill, then reap what is ours (orphans reparent to us).
  for (int round = 0; round < 100; ++round) {
    std::vector<pid_t> below = everything_below();
    if (below.empty()) break;
    for (pid_t p : below) ::kill(p, SIGKILL);
    for (pid_t p : below) ::waitpid(p, nullptr, 0);
  }
  if (out_ >= 0) ::close(out_);
  if (in_ >= 0) ::close(in_);
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
}

std::optional<std::string> ScriptTree::read_line(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto nl = pending_.find('\n');
    if (nl != std::string::npos) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      if (terminal_) {
        // Escape sequences (bracketed paste on and off) and CRs: the text as read.
        std::string clean;
        for (std::size_t i = 0; i < line.size(); ++i) {
          if (line[i] == '\x1b' && i + 1 < line.size() && line[i + 1] == '[') {
            i += 2;
            while (i < line.size() && !(line[i] >= 0x40 && line[i] <= 0x7E)) ++i;
          } else if (line[i] != '\r') {
            clean.push_back(line[i]);
          }
        }
        line = clean;
      }
      return line;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd p{out_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[4096];
    ssize_t n = ::read(out_, buf, sizeof buf);
    if (n <= 0) return std::nullopt;
    pending_.append(buf, static_cast<std::size_t>(n));
  }
}

}  // namespace dshpty::test

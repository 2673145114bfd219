#include "child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <exception>

namespace dshpty::test {

ChildProcess fork_child(const std::function<int(int)>& body) {
  ChildProcess child;
  int p[2];
  if (::pipe2(p, O_CLOEXEC) < 0) return child;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(p[0]);
    int rc = 99;
    try {
      rc = body(p[1]);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: exception: %s\n", e.what());
    }
    ::_exit(rc);
  }
  ::close(p[1]);
  child.pid = pid;
  child.from_child = p[0];
  child.pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  return child;
}

int wait_child(ChildProcess& child, std::chrono::milliseconds timeout) {
  if (child.pid <= 0) return -1;
  pollfd pfd{child.pidfd, POLLIN, 0};
  int ready = ::poll(&pfd, 1, static_cast<int>(timeout.count()));
  if (ready <= 0) ::kill(child.pid, SIGKILL);
  int status = 0;
  ::waitpid(child.pid, &status, 0);
  child.pid = -1;
  if (ready <= 0 || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

bool read_byte(const ChildProcess& child, std::chrono::milliseconds timeout, char& out) {
  pollfd pfd{child.from_child, POLLIN, 0};
  if (::poll(&pfd, 1, static_cast<int>(timeout.count())) <= 0) return false;
  return ::read(child.from_child, &out, 1) == 1;
}

void close_child(ChildProcess& child) {
  if (child.pid > 0) {
    ::kill(child.pid, SIGKILL);
    ::waitpid(child.pid, nullptr, 0);
    child.pid = -1;
  }
  if (child.pidfd >= 0) ::close(child.pidfd);
  if (child.from_child >= 0) ::close(child.from_child);
  child.pidfd = child.from_child = -1;
}

}  // namespace dshpty::test

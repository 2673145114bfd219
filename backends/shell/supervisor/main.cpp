// dshpty-supervisor: one per shell session. A subreaper that forks the shell on the PTY
// slave, reaps every descendant, and on request (or when the host goes away) kills the
// whole tree and reports quiescence. Protocol and fd layout: ../protocol.hpp.
//
// Single-threaded; it may block (it is its own process), but it polls so that a kill
// request is never held up by a busy tree.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "../protocol.hpp"
#include "descendants.hpp"

namespace {

namespace proto = dshpty::shell_protocol;
using dshpty::supervisor::signal_descendants;

// How often a kill re-scans for descendants that were forked after the previous scan.
constexpr std::int64_t kKillRoundMs = 5;

std::int64_t now_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

void send_message(proto::Type type, std::int32_t a = 0, std::int32_t b = 0) {
  proto::ControlMessage msg{type, a, b};
  // The host may be gone (EPIPE): then nobody is listening and the kill goes on anyway.
  while (::send(proto::kSocketFd, &msg, sizeof msg, MSG_NOSIGNAL) < 0 && errno == EINTR) {
  }
}

[[noreturn]] void child_fail(int pipe_fd, proto::StartStage stage) {
  std::int32_t report[2] = {static_cast<std::int32_t>(stage), errno};
  ssize_t ignored = ::write(pipe_fd, report, sizeof report);
  (void)ignored;
  _exit(127);
}

// In the forked child: becomes the session leader with the slave as its controlling
// terminal, drops every inherited fd but 0/1/2 and execs the shell.
[[noreturn]] void exec_shell(int pipe_fd, const char* cwd, char** argv) {
  ::setsid();
  if (::ioctl(0, TIOCSCTTY, 0) < 0) child_fail(pipe_fd, proto::StartStage::exec);
  // The helper dies only by SIGKILL; then at least the shell goes with it.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (cwd && ::chdir(cwd) < 0) child_fail(pipe_fd, proto::StartStage::chdir);
  // Everything above 2 (the control socket, the error pipe) closes at execve.
  ::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
  ::execve(argv[0], argv, environ);
  child_fail(pipe_fd, proto::StartStage::exec);
}

struct Supervisor {
  pid_t self = ::getpid();
  pid_t shell_pid = -1;
  bool killing = false;
  std::int64_t kill_at_ms = 0;    // when SIGKILL rounds start
  std::int64_t next_round_ms = 0;
  bool have_children = true;

  // Forks the shell and reports started / start_failed.
  void start(const char* cwd, char** argv) {
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) < 0) {
      send_message(proto::Type::start_failed, static_cast<int>(proto::StartStage::fork), errno);
      return;
    }
    pid_t pid = ::fork();
    if (pid < 0) {
      send_message(proto::Type::start_failed, static_cast<int>(proto::StartStage::fork), errno);
      ::close(pipe_fds[0]);
      ::close(pipe_fds[1]);
      return;
    }
    if (pid == 0) {
      ::close(pipe_fds[0]);
      exec_shell(pipe_fds[1], cwd, argv);
    }
    ::close(pipe_fds[1]);
    shell_pid = pid;
    std::int32_t report[2];
    ssize_t n;
    while ((n = ::read(pipe_fds[0], report, sizeof report)) < 0 && errno == EINTR) {
    }
    ::close(pipe_fds[0]);
    // The helper must not hold the slave, or the master would never see EIO.
    int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    for (int fd = 0; fd <= 2; ++fd) ::dup3(devnull, fd, 0);
    if (devnull > 2) ::close(devnull);
    if (n == static_cast<ssize_t>(sizeof report)) {
      send_message(proto::Type::start_failed, report[0], report[1]);
    } else {
      send_message(proto::Type::started, pid);
    }
  }

  void reap_all() {
    for (;;) {
      int status = 0;
      pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid > 0) {
        if (pid == shell_pid) send_message(proto::Type::exited, status);
        continue;
      }
      if (pid < 0 && errno == EINTR) continue;
      have_children = !(pid < 0 && errno == ECHILD);
      return;
    }
  }

  void begin_kill(std::int64_t grace_ms) {
    std::int64_t at = now_ms() + (grace_ms < 0 ? 0 : grace_ms);
    if (killing) {
      if (at < kill_at_ms) kill_at_ms = next_round_ms = at;
      return;
    }
    killing = true;
    kill_at_ms = next_round_ms = at;
    // SIGCONT last: a stopped job wakes with HUP and TERM already pending.
    signal_descendants(self, {SIGHUP, SIGTERM, SIGCONT});
  }

  void kill_round() {
    signal_descendants(self, {SIGKILL});
    next_round_ms = now_ms() + kKillRoundMs;
  }

  // Reads pending commands; EOF or a broken socket means the host is gone.
  void read_commands() {
    for (;;) {
      proto::ControlMessage msg{};
      ssize_t n = ::recv(proto::kSocketFd, &msg, sizeof msg, MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n <= 0) {
        begin_kill(0);
        socket_open = false;
        return;
      }
      if (n == static_cast<ssize_t>(sizeof msg) && msg.type == proto::Type::kill) begin_kill(msg.a);
    }
  }

  bool socket_open = true;

  [[noreturn]] void run(int sigfd) {
    for (;;) {
      reap_all();
      if (killing && !have_children) {
        send_message(proto::Type::quiescent);
        _exit(0);
      }
      int timeout = -1;
      if (killing) {
        std::int64_t now = now_ms();
        if (now >= next_round_ms) kill_round();
        timeout = static_cast<int>(next_round_ms - now_ms());
        if (timeout < 0) timeout = 0;
      }
      pollfd fds[2] = {{sigfd, POLLIN, 0}, {proto::kSocketFd, POLLIN, 0}};
      int nfds = socket_open ? 2 : 1;
      if (::poll(fds, static_cast<nfds_t>(nfds), timeout) < 0 && errno != EINTR) {
        begin_kill(0);  // cannot wait for commands any more: finish the job instead
      }
      if (fds[0].revents) {
        signalfd_siginfo info[16];
        while (::read(sigfd, info, sizeof info) > 0) {
        }
      }
      if (nfds == 2 && fds[1].revents) read_commands();
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  const char* cwd = nullptr;
  int i = 1;
  for (; i < argc; ++i) {
    if (std::strcmp(argv[i], "--cwd") == 0 && i + 1 < argc) {
      cwd = argv[++i];
    } else if (std::strcmp(argv[i], "--") == 0) {
      ++i;
      break;
    } else {
      std::fprintf(stderr, "usage: dshpty-supervisor [--cwd DIR] -- SHELL [ARGS...]\n");
      return 2;
    }
  }
  if (i >= argc || ::fcntl(proto::kSocketFd, F_GETFD) < 0) {
    std::fprintf(stderr, "dshpty-supervisor: started by dshpty only (needs fd %d and a shell)\n",
                 proto::kSocketFd);
    return 2;
  }
  ::fcntl(proto::kSocketFd, F_SETFD, FD_CLOEXEC);

  // Orphans anywhere below reparent to us, so nothing escapes the reaping and the kill.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  for (int sig : {SIGHUP, SIGINT, SIGTERM, SIGQUIT, SIGPIPE}) ::signal(sig, SIG_IGN);
  ::signal(SIGCHLD, SIG_DFL);
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &chld, nullptr);
  int sigfd = ::signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sigfd < 0) {
    send_message(proto::Type::start_failed, static_cast<int>(proto::StartStage::fork), errno);
    return 1;
  }

  Supervisor sup;
  sup.start(cwd, argv + i);
  sup.run(sigfd);
}

#include "remote/transport.hpp"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/pidfd.hpp"
#include "local/spawn_attrs.hpp"

extern char** environ;

namespace dshpty::shell {

namespace {

Status set_nonblocking(int fd, const char* what) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return make_system_error(Code::BACKEND_FAILED, what, errno);
  }
  return {};
}

}  // namespace

Result<Transport> spawn_transport(const std::vector<std::string>& argv_words, int pass_fd) {
  if (argv_words.empty() || argv_words.front().empty()) {
    return make_error(Code::INVALID_ARGUMENT, "the transport's argv is empty");
  }
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
    return make_system_error(Code::BACKEND_FAILED, "transport socketpair", errno);
  }
  UniqueFd ours(sv[0]);
  UniqueFd theirs(sv[1]);
  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) < 0) {
    return make_system_error(Code::BACKEND_FAILED, "transport stderr pipe", errno);
  }
  UniqueFd err_read(err_pipe[0]);
  UniqueFd err_write(err_pipe[1]);
  // The child ends above 3, so the dup2s below cannot overwrite one with another.
  for (UniqueFd* fd : {&theirs, &err_write}) {
    if (fd->get() <= 3) {
      int moved = ::fcntl(fd->get(), F_DUPFD_CLOEXEC, 4);
      if (moved < 0) return make_system_error(Code::BACKEND_FAILED, "transport fds", errno);
      fd->reset(moved);
    }
  }
  if (Status st = set_nonblocking(ours.get(), "transport socket O_NONBLOCK"); !st) return st.error();
  if (Status st = set_nonblocking(err_read.get(), "transport stderr O_NONBLOCK"); !st) return st.error();

  std::vector<char*> argv;
  for (const auto& a : argv_words) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  SpawnAttrs s;
  s.fresh_signals_and_session();
  posix_spawn_file_actions_adddup2(&s.actions, theirs.get(), 0);
  posix_spawn_file_actions_adddup2(&s.actions, theirs.get(), 1);
  posix_spawn_file_actions_adddup2(&s.actions, err_write.get(), 2);
  UniqueFd passed;
  if (pass_fd >= 0) {
    passed.reset(::fcntl(pass_fd, F_DUPFD_CLOEXEC, 4));
    if (passed.get() < 0) return make_system_error(Code::BACKEND_FAILED, "transport fds", errno);
    posix_spawn_file_actions_adddup2(&s.actions, passed.get(), 3);
  }
  posix_spawn_file_actions_addclosefrom_np(&s.actions, pass_fd >= 0 ? 4 : 3);
  pid_t pid = -1;
  // The host's environment: ssh needs HOME, SSH_AUTH_SOCK and the like.
  int rc = ::posix_spawnp(&pid, argv_words.front().c_str(), &s.actions, &s.attr, argv.data(), environ);
  if (rc != 0) {
    return make_system_error(Code::BACKEND_FAILED, "cannot start transport " + argv_words.front(), rc);
  }
  Transport t;
  t.pid = pid;
  t.pidfd.reset(sys::pidfd_open(pid, 0));
  if (!t.pidfd.valid()) {
    int err = errno;
    ::kill(pid, SIGKILL);
    siginfo_t info{};
    ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG);
    return make_system_error(Code::BACKEND_FAILED, "pidfd of transport " + argv_words.front(), err);
  }
  t.link = std::move(ours);
  t.error_text = std::move(err_read);
  return t;
}

bool StderrTail::read_from(int fd) {
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      text_.append(buf, static_cast<std::size_t>(n));
      if (text_.size() > limit_) text_.erase(0, text_.size() - limit_);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0;  // EAGAIN: more may come; 0 or another error: the end
  }
}

std::string StderrTail::last_line() const {
  std::size_t end = text_.size();
  while (end > 0) {
    while (end > 0 && (text_[end - 1] == '\n' || text_[end - 1] == '\r' || text_[end - 1] == ' ')) --end;
    std::size_t start = text_.rfind('\n', end == 0 ? 0 : end - 1);
    start = start == std::string::npos ? 0 : start + 1;
    if (end > start) return text_.substr(start, end - start);
    end = start;
  }
  return {};
}

}  // namespace dshpty::shell

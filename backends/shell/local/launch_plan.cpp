#include "local/launch_plan.hpp"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "proc/pidfd.hpp"
#include "proc/procfs.hpp"
#include "link/protocol.hpp"
#include "local/spawn_attrs.hpp"
#include "proc/write_all.hpp"

#ifndef DSHPTY_SUPERVISOR_DEFAULT
#error "DSHPTY_SUPERVISOR_DEFAULT (the installed helper path) must be defined by the build"
#endif

namespace dshpty::shell {

namespace {

// The ppid field of /proc/<pid>/stat, or -1.
pid_t parent_of(pid_t pid) {
  procfs::Stat st;
  return procfs::read_stat(pid, st) ? st.ppid : -1;
}

// A sealed, CLOEXEC memfd holding `program` at offset 0: bwrap reads it to its end.
Result<int> seccomp_program_fd(const std::string& program) {
  int fd = ::memfd_create("dshpty-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return make_system_error(Code::BACKEND_FAILED, "seccomp program memfd", errno);
  if (int err = proc::write_all(fd, program); err != 0) {
    ::close(fd);
    return make_system_error(Code::BACKEND_FAILED, "seccomp program memfd write", err);
  }
  // Sealed, so nothing that shares it could change the program between here and bwrap.
  if (::fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) < 0 ||
      ::lseek(fd, 0, SEEK_SET) != 0) {
    int err = errno;
    ::close(fd);
    return make_system_error(Code::BACKEND_FAILED, "seccomp program memfd seal", err);
  }
  return fd;
}

}  // namespace

std::string resolve_supervisor_path(const std::string& configured) {
  if (!configured.empty()) return configured;
  if (const char* env = std::getenv("DSHPTY_SUPERVISOR"); env && *env) return env;
  return DSHPTY_SUPERVISOR_DEFAULT;
}

LaunchPlan direct_launch(const std::string& supervisor_path,
                         const std::vector<std::string>& shell_argv,
                         const std::optional<std::string>& cwd, std::vector<std::string> env) {
  LaunchPlan plan;
  plan.program = supervisor_path;
  plan.helper_path = supervisor_path;
  plan.argv.push_back("dshpty-supervisor");
  if (cwd) {
    plan.argv.push_back("--cwd");
    plan.argv.push_back(*cwd);
  }
  plan.argv.push_back("--");
  plan.argv.insert(plan.argv.end(), shell_argv.begin(), shell_argv.end());
  plan.env = std::move(env);
  return plan;
}

Result<LaunchedHelper> spawn_helper(const LaunchPlan& plan, int slave_fd, int socket_fd,
                                    int stderr_fd) {
  std::vector<char*> argv;
  for (const auto& a : plan.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : plan.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  SpawnAttrs s;
  s.fresh_signals_and_session();
  // The socket first: if it sits at 0..2 the slave's dup2 would overwrite it.
  int sock = socket_fd;
  if (sock <= 2) {
    sock = ::fcntl(socket_fd, F_DUPFD_CLOEXEC, 3);
    if (sock < 0) return make_system_error(Code::BACKEND_FAILED, "dup control socket", errno);
  }
  UniqueFd sock_copy(sock != socket_fd ? sock : -1);
  int slave = slave_fd;
  UniqueFd slave_copy;
  if (slave == shell_protocol::kSocketFd) {
    slave = ::fcntl(slave_fd, F_DUPFD_CLOEXEC, 4);
    if (slave < 0) return make_system_error(Code::BACKEND_FAILED, "dup PTY slave", errno);
    slave_copy.reset(slave);
  }
  // Likewise the wrapper's stderr must survive the dup2s and opens of 0..3.
  UniqueFd err_copy;
  if (stderr_fd >= 0 && stderr_fd <= shell_protocol::kSocketFd) {
    err_copy.reset(::fcntl(stderr_fd, F_DUPFD_CLOEXEC, shell_protocol::kSocketFd + 1));
    if (!err_copy.valid()) return make_system_error(Code::BACKEND_FAILED, "dup stderr pipe", errno);
    stderr_fd = err_copy.get();
  }
  // The filter's program, in a memfd of this spawn's own (bwrap reads it from its offset
  // to the end, so each spawn needs a fresh one), kept clear of 0..kSeccompFd like the rest.
  static_assert(kSeccompFd == shell_protocol::kSocketFd + 1, "fds 0..4 are laid out in order");
  UniqueFd program;
  if (plan.seccomp_program) {
    auto fd = seccomp_program_fd(*plan.seccomp_program);
    if (!fd) return fd.error();
    program.reset(*fd);
    if (program.get() <= kSeccompFd) {
      UniqueFd low = std::move(program);
      program.reset(::fcntl(low.get(), F_DUPFD_CLOEXEC, kSeccompFd + 1));
      if (!program.valid()) return make_system_error(Code::BACKEND_FAILED, "dup seccomp program", errno);
    }
  }
  posix_spawn_file_actions_adddup2(&s.actions, sock, shell_protocol::kSocketFd);
  if (plan.tty_by_message) {
    // The wrapper must not hold the slave (sandbox/sandbox.hpp); its stderr is the pipe
    // that names a failed sandbox.
    posix_spawn_file_actions_addopen(&s.actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&s.actions, 1, "/dev/null", O_WRONLY, 0);
    if (stderr_fd >= 0) {
      posix_spawn_file_actions_adddup2(&s.actions, stderr_fd, 2);
    } else {
      posix_spawn_file_actions_addopen(&s.actions, 2, "/dev/null", O_WRONLY, 0);
    }
  } else {
    for (int fd = 0; fd <= 2; ++fd) posix_spawn_file_actions_adddup2(&s.actions, slave, fd);
  }
  if (program.valid()) posix_spawn_file_actions_adddup2(&s.actions, program.get(), kSeccompFd);
  // Passed fds go to kPassedFdBase... from copies above every target, so no dup2 above
  // overwrites one before it is placed.
  const int passed_top = kPassedFdBase + static_cast<int>(plan.passed_fds.size());
  std::vector<UniqueFd> passed;
  for (int fd : plan.passed_fds) {
    passed.emplace_back(::fcntl(fd, F_DUPFD_CLOEXEC, passed_top));
    if (!passed.back().valid()) return make_system_error(Code::BACKEND_FAILED, "dup a passed fd", errno);
  }
  for (std::size_t k = 0; k < passed.size(); ++k) {
    posix_spawn_file_actions_adddup2(&s.actions, passed[k].get(), kPassedFdBase + static_cast<int>(k));
  }
  // The seccomp slot between, when unused, must not carry an fd of the host's.
  if (!passed.empty() && !program.valid()) {
    posix_spawn_file_actions_addopen(&s.actions, kSeccompFd, "/dev/null", O_RDONLY, 0);
  }
  // Inheritable fds the host left open must not reach the helper either.
  posix_spawn_file_actions_addclosefrom_np(&s.actions, !passed.empty() ? passed_top
                                                       : program.valid() ? kSeccompFd + 1
                                                                         : shell_protocol::kSocketFd + 1);

  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, plan.program.c_str(), &s.actions, &s.attr, argv.data(), envp.data());
  if (rc != 0) {
    return make_system_error(Code::BACKEND_FAILED, "cannot start PTY supervisor " + plan.program, rc);
  }
  LaunchedHelper out;
  out.pid = pid;
  out.pidfd.reset(sys::pidfd_open(pid, 0));
  // A host that reaps every child (SIGCHLD handler, SIG_IGN) may have taken the helper
  // already; a pidfd is only ours if the process behind it is still our child.
  if (!out.pidfd.valid() || parent_of(pid) != ::getpid()) {
    int err = out.pidfd.valid() ? ESRCH : errno;
    if (out.pidfd.valid()) {
      out.pidfd.reset();
    }
    return make_system_error(Code::BACKEND_FAILED,
                             "PTY supervisor " + plan.program + " exited at once", err);
  }
  return out;
}

}  // namespace dshpty::shell

// dshpty-supervisor: one per shell session. A subreaper that forks the shell on the PTY
// slave, reaps every descendant, and on request (or when the host goes away) kills the
// whole tree and reports quiescence. Protocol and fd layout: link/protocol.hpp.
//
// Single-threaded; it may block (it is its own process). It sleeps in poll() on a
// signalfd for SIGCHLD and the control socket: nothing wakes it while the session idles.
// A kill is driven by SIGCHLD too: each batch of reaped processes triggers the next SIGKILL
// round, with a backed-off timer only as the fallback for a round that reaped nothing.
//
// This face keeps to system calls and malloc (no stdio, no iostream, no C++ runtime in its
// path): there is one per session, and it is linked statically where the toolchain allows
// (meson.build). The same binary's --stdio face (stdio_bridge.cpp), the far side of a
// remote session, is a libev program; nothing of it runs here.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "link/protocol.hpp"
#include "descendants.hpp"
#include "integration.hpp"
#include "landlock_scope.hpp"
#include "limits/session_cgroup.hpp"
#include "linger/session_mark.hpp"
#include "proc/fd_passing.hpp"
#include "proc/procfs.hpp"
#include "proc/write_all.hpp"
#include "prompt_hold.hpp"
#include "stdio_bridge.hpp"
#include "trim_pages.hpp"

namespace {

namespace proto = dshpty::shell_protocol;
using dshpty::supervisor::ProcessTree;
using dshpty::shell::limits::CgroupStep;
using dshpty::shell::limits::SessionCgroup;

// While killing, a SIGKILL round follows every batch of reaped processes (a process forked
// during a round has a parent that was killed in it, and that parent's death comes back to
// us as SIGCHLD, directly or as a reparented zombie). When nothing is reaped, rounds still
// run, at a backed-off interval: a process stuck in an uninterruptible sleep, or a
// children file that changed while it was read, must not stall the kill.
constexpr std::int64_t kFirstFallbackMs = 5;
constexpr std::int64_t kMaxFallbackMs = 100;

std::int64_t now_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

// Best effort: a message to a stderr that is gone has nowhere else to go.
void write_stderr(const char* text) { (void)dshpty::proc::write_all(2, text); }

// False when the host is gone (EPIPE, ECONNRESET): then nobody is listening and the kill
// goes on anyway.
bool send_message(proto::Type type, std::int32_t a = 0, std::int32_t b = 0) {
  proto::ControlMessage msg{type, a, b};
  ssize_t n;
  while ((n = ::send(proto::kSocketFd, &msg, sizeof msg, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
  }
  return n >= 0 || (errno != EPIPE && errno != ECONNRESET && errno != ENOTCONN);
}

[[noreturn]] void child_fail(int pipe_fd, std::int32_t stage) {
  std::int32_t report[2] = {stage, errno};
  ssize_t ignored = ::write(pipe_fd, report, sizeof report);
  (void)ignored;
  _exit(127);
}

// In the vfork child: becomes the session leader with the slave as its controlling
// terminal, drops every inherited fd but 0/1/2 and execs the shell. It runs in the helper's
// memory while the helper waits, so it only makes system calls (glibc's execvpe searches
// PATH in stack buffers) and never returns: it execs or _exits. Its signal dispositions,
// fd table, cwd and session are its own (vfork shares none of them).
[[noreturn]] void exec_shell(int pipe_fd, const char* cwd, char** argv, const SessionCgroup& cgroup) {
  ::setsid();
  if (::ioctl(0, TIOCSCTTY, 0) < 0) child_fail(pipe_fd, static_cast<std::int32_t>(proto::StartStage::exec));
  // Into the session's cgroups before anything of the session runs; the helper stays out,
  // so it can remove them once the tree is gone, and its own processes count for nothing.
  if (int err = cgroup.join_self()) {
    errno = err;
    child_fail(pipe_fd, proto::kCgroupStageBase + static_cast<std::int32_t>(CgroupStep::join));
  }
  // The helper dies only by SIGKILL; then at least the shell goes with it.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (cwd && ::chdir(cwd) < 0) child_fail(pipe_fd, static_cast<std::int32_t>(proto::StartStage::chdir));
  // Everything above 2 (the control socket, the error pipe) closes at execve.
  ::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
  // A bare name ("zsh") is looked up in the shell's PATH.
  ::execvpe(argv[0], argv, environ);
  child_fail(pipe_fd, static_cast<std::int32_t>(proto::StartStage::exec));
}

struct Supervisor {
  enum class Phase { running, grace, killing };

  pid_t self = ::getpid();
  ProcessTree tree{self};
  pid_t shell_pid = -1;
  Phase phase = Phase::running;
  bool have_children = true;
  bool socket_open = true;
  std::int64_t kill_at_ms = 0;         // grace: when the SIGKILL rounds start
  std::int64_t earliest_round_ms = 0;  // killing: no round before this (see kill_round)
  std::int64_t fallback_round_ms = 0;  // killing: a round then even if nothing was reaped
  std::int64_t fallback_ms = kFirstFallbackMs;
  bool reaped_since_round = false;
  // Watches the shell's read of its integration script (watch_integration_read), or -1.
  int script_watch = -1;
  // The session's cgroups, when the host asked for limits (limits/session_cgroup.hpp).
  SessionCgroup cgroup;

  // Starts the shell and reports started / start_failed. vfork, not fork: the helper
  // waits for the exec anyway (the pipe below), and fork would first copy its page tables,
  // then fault its touched pages back in copy-on-write, all on the way to the shell's
  // first prompt (a static program with 2 MiB touched, here: fork to the child's exec
  // 105 us, vfork 18 us).
  void start(const char* cwd, char** argv) {
    if (cgroup.wanted()) {
      CgroupStep step{};
      if (int err = cgroup.create(&step)) {
        // No shell: the host fails the spawn and kills the (empty) tree, and the cgroups
        // made so far go with the quiescence like any session's.
        send_message(proto::Type::start_failed, proto::kCgroupStageBase + static_cast<std::int32_t>(step), err);
        return;
      }
    }
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) < 0) {
      send_message(proto::Type::start_failed, static_cast<int>(proto::StartStage::fork), errno);
      return;
    }
    pid_t pid = ::vfork();
    if (pid < 0) {
      send_message(proto::Type::start_failed, static_cast<int>(proto::StartStage::fork), errno);
      ::close(pipe_fds[0]);
      ::close(pipe_fds[1]);
      return;
    }
    if (pid == 0) {
      ::close(pipe_fds[0]);
      exec_shell(pipe_fds[1], cwd, argv, cgroup);
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
        reaped_since_round = true;
        continue;
      }
      if (pid < 0 && errno == EINTR) continue;
      // ECHILD: no child at all. Every orphan reparents to us, so no descendant either.
      have_children = !(pid < 0 && errno == ECHILD);
      return;
    }
  }

  void begin_kill(std::int64_t grace_ms) {
    std::int64_t at = now_ms() + (grace_ms < 0 ? 0 : grace_ms);
    if (phase != Phase::running) {
      if (phase == Phase::grace && at < kill_at_ms) kill_at_ms = at;
      return;
    }
    phase = Phase::grace;
    kill_at_ms = at;
    seal();  // a shell that never read its script (it failed to start) waits for nothing
    // SIGCONT last: a stopped job wakes with HUP and TERM already pending.
    tree.signal_all({SIGHUP, SIGTERM, SIGCONT});
  }

  // One SIGKILL walk. The next one waits at least as long as this one took, so a tree that
  // dies slowly costs the helper at most half its time in walks, however often it reaps.
  void kill_round() {
    std::int64_t started = now_ms();
    reaped_since_round = false;
    tree.signal_all({SIGKILL});
    std::int64_t now = now_ms();
    earliest_round_ms = now + (now - started);
    fallback_round_ms = earliest_round_ms + fallback_ms;
    if (fallback_ms < kMaxFallbackMs) fallback_ms *= 2;
  }

  // Killing: when the next SIGKILL round is due.
  std::int64_t next_round_ms() const {
    return reaped_since_round ? earliest_round_ms : fallback_round_ms;
  }

  // The poll timeout: -1 while nothing is pending.
  int next_timeout(std::int64_t now) const {
    if (phase == Phase::running) return -1;
    std::int64_t due = phase == Phase::grace ? kill_at_ms : next_round_ms();
    return due <= now ? 0 : static_cast<int>(due - now);
  }

  // The shell read its nonce (or the watch broke, or a kill began): from
  // here on nothing of the session may ptrace this helper or take its fds (see main).
  void seal() {
    ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    if (script_watch >= 0) ::close(script_watch);
    script_watch = -1;
    dshpty::supervisor::close_integration_fds();
  }

  // A limit reached: the host hears which (it keeps the newest for the session's life).
  void report_limits() {
    const unsigned hits = cgroup.check();
    if (hits & dshpty::shell::limits::kHitPids) {
      send_message(proto::Type::limit_hit, static_cast<std::int32_t>(proto::LimitKind::pids));
    }
    if (hits & dshpty::shell::limits::kHitMemory) {
      send_message(proto::Type::limit_hit, static_cast<std::int32_t>(proto::LimitKind::memory));
    }
  }

  // Reads pending commands; EOF or a broken socket means the host is gone.
  void read_commands() {
    for (;;) {
      proto::ControlMessage msg{};
      ssize_t n = ::recv(proto::kSocketFd, &msg, sizeof msg, MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n <= 0) {
        socket_open = false;
        begin_kill(0);
        return;
      }
      if (n == static_cast<ssize_t>(sizeof msg) && msg.type == proto::Type::kill) begin_kill(msg.a);
    }
  }

  [[noreturn]] void run(int sigfd) {
    for (;;) {
      reap_all();
      if (phase != Phase::running && !have_children) {
        dshpty::supervisor::remove_integration();
        // The tree is reaped: the host removes the (empty) cgroups, a second proof of it;
        // a host that died (its socket closed, or the quiescence has nobody to hear it)
        // removes nothing, so this helper does, or they would stay for good.
        if (!send_message(proto::Type::quiescent) || !socket_open) {
          cgroup.remove_dirs();
        } else {
          cgroup.release();
        }
        _exit(0);
      }
      std::int64_t now = now_ms();
      if (phase == Phase::grace && now >= kill_at_ms) {
        phase = Phase::killing;
        kill_round();
        continue;
      }
      if (phase == Phase::killing && now >= next_round_ms()) {
        if (reaped_since_round) fallback_ms = kFirstFallbackMs;
        kill_round();
        continue;
      }
      // A negative fd is skipped by poll: the cgroup watches exist only with limits.
      pollfd fds[5] = {{sigfd, POLLIN, 0}, {script_watch, POLLIN, 0}, {cgroup.inotify_fd(), POLLIN, 0},
                       {cgroup.oom_event_fd(), POLLIN, 0}, {proto::kSocketFd, POLLIN, 0}};
      int nfds = socket_open ? 5 : 4;
      if (::poll(fds, static_cast<nfds_t>(nfds), next_timeout(now)) < 0 && errno != EINTR) {
        begin_kill(0);  // cannot wait for commands any more: finish the job instead
      }
      if (fds[0].revents) {
        signalfd_siginfo info[16];
        while (::read(sigfd, info, sizeof info) > 0) {
        }
      }
      if (fds[1].revents) seal();
      if (fds[2].revents || fds[3].revents) report_limits();
      if (nfds == 5 && fds[4].revents) read_commands();
    }
  }
};

}  // namespace

// --tty-from-socket: the PTY slave arrives as the first message (SCM_RIGHTS) and becomes
// 0, 1 and 2, as if it had been inherited. Blocking is fine here: nothing else can happen
// before the shell exists. False when the host went away or sent something else.
bool receive_tty() {
  proto::ControlMessage msg{};
  const int tty = dshpty::proc::receive_with_fd(proto::kSocketFd, &msg, sizeof msg);
  if (tty < 0) return false;
  if (msg.type != proto::Type::tty) {
    ::close(tty);
    return false;
  }
  for (int fd = 0; fd <= 2; ++fd) ::dup2(tty, fd);
  if (tty > 2) ::close(tty);
  return true;
}

void usage() {
  write_stderr("usage: dshpty-supervisor [--tty-from-socket] [--scope-abstract-sockets] [--cwd DIR] "
               "[--cgroup NAME --cgroup-dir KIND... --limit-pids N --limit-memory B --limit-cpu-us Q] "
               "-- SHELL [ARGS...]\n"
               "       dshpty-supervisor --stdio [--state-dir DIR] [--hold-ms MS]   (the far side of a "
               "remote session)\n");
}

// --stdio [--state-dir DIR] [--hold-ms MS]: MS, 0 to 60000, bounds how long a send's
// answer waits for its prompt (supervisor/prompt_hold.hpp); 0 sends every piece at once.
int stdio_main(int argc, char** argv) {
  const char* state_dir = nullptr;
  double hold_ms = dshpty::supervisor::PromptHold::kDefaultHoldMs;
  RecordHandoff record;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--state-dir") == 0 && i + 1 < argc) {
      state_dir = argv[++i];
    } else if (std::strcmp(argv[i], "--hold-ms") == 0 && i + 1 < argc) {
      char* end = nullptr;
      const char* text = argv[++i];
      hold_ms = std::strtod(text, &end);
      if (*text == '\0' || *end != '\0' || !(hold_ms >= 0 && hold_ms <= 60000)) {
        write_stderr("dshpty-supervisor: --hold-ms needs a number of milliseconds from 0 to 60000\n");
        return 2;
      }
    } else if (std::strcmp(argv[i], "--record-fd") == 0 && i + 3 < argc &&
               std::strcmp(argv[i + 2], "--record-start") == 0) {
      // A local lingering session's recording (its host passed the descriptor): never
      // inherited by the shell.
      record.fd = std::atoi(argv[i + 1]);
      record.start = std::strtod(argv[i + 3], nullptr);
      i += 3;
      if (i + 2 < argc && std::strcmp(argv[i + 1], "--record-max") == 0) {
        record.max_bytes = std::strtoull(argv[i + 2], nullptr, 10);
        i += 2;
      }
      if (record.fd < 3 || ::fcntl(record.fd, F_SETFD, FD_CLOEXEC) < 0 || record.max_bytes == 0) {
        write_stderr("dshpty-supervisor: --record-fd needs an open descriptor, --record-start and --record-max\n");
        return 2;
      }
    } else {
      usage();
      return 2;
    }
  }
  return stdio_bridge_main(state_dir, hold_ms, record);
}

int main(int argc, char** argv) {
  // Non-dumpable, before anything else: a process of the session runs as the same user, and
  // could otherwise ptrace this one or take its fds (pidfd_getfd on the control socket: a
  // forged "exited", a swallowed "kill"). The kernel then asks for CAP_SYS_PTRACE in the
  // helper's user namespace, which the sandbox drops. exec gives the shell its own flag.
  // (The local face lifts it while the shell reads its integration script: see below.)
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  // The far side of a remote session: a face of its own (supervisor/stdio_bridge.cpp).
  if (argc >= 2 && std::strcmp(argv[1], "--stdio") == 0) return stdio_main(argc, argv);
  const char* cwd = nullptr;
  bool tty_from_socket = false;
  bool scope_abstract = false;
  Supervisor sup;
  bool bad_flag = false;
  int i = 1;
  for (; i < argc; ++i) {
    if (sup.cgroup.take_flag(argc, argv, i, &bad_flag)) {
      if (bad_flag) {
        usage();
        return 2;
      }
    } else if (std::strcmp(argv[i], "--tty-from-socket") == 0) {
      tty_from_socket = true;
    } else if (std::strcmp(argv[i], "--scope-abstract-sockets") == 0) {
      scope_abstract = true;
    } else if (std::strcmp(argv[i], "--cwd") == 0 && i + 1 < argc) {
      cwd = argv[++i];
    } else if (std::strcmp(argv[i], "--") == 0) {
      ++i;
      break;
    } else {
      usage();
      return 2;
    }
  }
  if (i >= argc || ::fcntl(proto::kSocketFd, F_GETFD) < 0) {
    static_assert(proto::kSocketFd == 3, "the message below names the fd");
    write_stderr("dshpty-supervisor: started by dshpty only (needs fd 3 and a shell)\n");
    return 2;
  }
  ::fcntl(proto::kSocketFd, F_SETFD, FD_CLOEXEC);
  for (int fd = dshpty::shell::limits::kCgroupFdBase; fd < dshpty::shell::limits::kCgroupFdBase + dshpty::shell::limits::kMaxCgroupDirs; ++fd) {
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);  // the host's cgroup directories never reach the shell
  }
  // The session's tree is recognisable from outside whatever this file is called: the
  // lingering sessions' peer check reads it (linger/session_mark.hpp).
  dshpty::linger::mark_session_tree();
  // Before the terminal arrives: fd 2 is still the sandbox's diagnostics pipe, which the
  // host reads when a start fails.
  if (scope_abstract && dshpty::supervisor::scope_abstract_unix_sockets() == dshpty::supervisor::ScopeResult::failed) {
    write_stderr("dshpty-supervisor: Landlock refused to scope abstract unix sockets: ");
    write_stderr(std::strerror(errno));
    write_stderr("\n");
    return 1;
  }
  if (tty_from_socket && !receive_tty()) return 1;

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

  // The shell integration first (dialect/dialect.hpp); like a failed fork, a failure is
  // reported and the helper then waits for the kill like any session.
  if (dshpty::supervisor::install_integration(argv + i)) {
    // The integration reads its script (bash, fish) and then the nonce's pipe (every
    // dialect) through /proc/<this helper>/fd/N, whose open needs ptrace access to this
    // helper: it stays dumpable until the shell has read the nonce and closed the pipe
    // (inotify says so), the integration's first act, before any command of the session
    // can run. Without the watch: sealed now.
    bool instances_used_up = false;
    if (const int nonce = dshpty::supervisor::integration_nonce_fd(); nonce >= 0) {
      sup.script_watch = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
      // Sealed, the shell could never read its integration and the spawn would end at the
      // prompt's timeout naming nothing: the user's inotify instances used up (EMFILE with
      // a free fd; a full fd table is the other EMFILE) fail it now, naming the setting.
      if (sup.script_watch < 0 && errno == EMFILE) {
        if (const int spare = ::fcntl(0, F_DUPFD_CLOEXEC, 0); spare >= 0) {
          ::close(spare);
          instances_used_up = true;
        }
      }
      dshpty::procfs::Path path(::getpid());
      path.text("/fd/").number(nonce);
      if (sup.script_watch >= 0 && ::inotify_add_watch(sup.script_watch, path.c_str(), IN_CLOSE_NOWRITE) >= 0) {
        ::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
      } else {
        sup.seal();
      }
    }
    if (instances_used_up) {
      send_message(proto::Type::start_failed, static_cast<int>(proto::StartStage::watch_instances), EMFILE);
    } else {
      sup.start(cwd, argv + i);
    }
  } else {
    send_message(proto::Type::start_failed, static_cast<int>(proto::StartStage::integration), errno);
  }
  dshpty::supervisor::trim_executable_pages();
  sup.run(sigfd);
}

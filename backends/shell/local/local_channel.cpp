#include "local/local_channel.hpp"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "local/pty.hpp"
#include "proc/fd_passing.hpp"
#include "limits/session_cgroup.hpp"
#include "proc/ns_pid.hpp"
#include "proc/procfs.hpp"

namespace dshpty::shell {

namespace proto = shell_protocol;

namespace {

// Words that name the setting to raise (docs/scale.md): EMFILE alone names none. The bound
// is this user namespace's (the init one's is fs.inotify.max_user_instances).
std::string instances_used_up_words() {
  std::string words = "the user's inotify instances are used up "
                      "(fs.inotify.max_user_instances; user.max_inotify_instances in a user namespace";
  if (FILE* f = std::fopen("/proc/sys/user/max_inotify_instances", "re")) {
    long n = 0;
    if (std::fscanf(f, "%ld", &n) == 1) words += ": " + std::to_string(n) + " here";
    std::fclose(f);
  }
  return words + "; sysctl -w fs.inotify.max_user_instances=N raises it)";
}

// A session cgroup's failed step (limits/session_cgroup.hpp), in words.
std::string cgroup_step_words(std::int32_t step) {
  using limits::CgroupStep;
  switch (static_cast<CgroupStep>(step)) {
    case CgroupStep::create: return "limits: cannot create the session cgroup";
    case CgroupStep::pids_max: return "limits: cannot set the session cgroup's pids.max";
    case CgroupStep::memory_max: return "limits: cannot set the session cgroup's memory limit";
    case CgroupStep::memsw_max: return "limits: cannot set the session cgroup's memory+swap limit";
    case CgroupStep::cpu_max: return "limits: cannot set the session cgroup's cpu quota";
    case CgroupStep::watch: return "limits: cannot watch the session cgroup's events";
    case CgroupStep::join: return "limits: cannot move the shell into the session cgroup";
    case CgroupStep::watch_instances:
      return "limits: cannot watch the session cgroup's events: " + instances_used_up_words();
  }
  return "limits: the session cgroup failed";
}

constexpr std::size_t kReadChunk = 64 * 1024;
// Reads per call: bounded so a runaway producer cannot starve the host's loop.
constexpr int kReadsPerEvent = 8;
// How often a lost session's cgroups are looked at while their members are killed.
constexpr std::chrono::milliseconds kEmptyingTick{5};

SessionStatus status_from_wait(int wait_status) {
  if (WIFSIGNALED(wait_status)) return SessionStatus::exited_by_signal(WTERMSIG(wait_status));
  return SessionStatus::exited_with_code(WEXITSTATUS(wait_status));
}

}  // namespace

LocalChannel::LocalChannel(struct ev_loop* loop, ChannelEvents& events, LocalLaunch launch)
    : loop_(loop), events_(events), launch_(std::move(launch)) {
  ev_io_init(&master_read_, &LocalChannel::on_master_readable, -1, EV_READ);
  ev_io_init(&master_write_, &LocalChannel::on_master_writable, -1, EV_WRITE);
  ev_io_init(&control_io_, &LocalChannel::on_control_readable, -1, EV_READ);
  ev_io_init(&pidfd_io_, &LocalChannel::on_pidfd_readable, -1, EV_READ);
  ev_io_init(&init_io_, &LocalChannel::on_init_readable, -1, EV_READ);
  master_read_.data = master_write_.data = control_io_.data = pidfd_io_.data = init_io_.data = this;
  emptying_timer_.bind<&LocalChannel::empty_cgroups>(loop, this);
}

LocalChannel::~LocalChannel() { release(); }

Result<std::unique_ptr<LocalChannel>> LocalChannel::launch(struct ev_loop* loop,
                                                           ChannelEvents& events,
                                                           LocalLaunch launch) {
  std::unique_ptr<LocalChannel> channel(new LocalChannel(loop, events, std::move(launch)));
  if (Status st = channel->start(); !st) return st.error();
  return channel;
}

Status LocalChannel::start() {
  auto pty = open_pty(launch_.rows, launch_.cols);
  if (!pty) return pty.error();
  if (proc::StdinProbe::supported()) {
    if (auto dev = proc::terminal_device(pty->slave.get())) probe_.emplace(*dev);
  }
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
    return make_system_error(Code::BACKEND_FAILED, "control socketpair", errno);
  }
  UniqueFd host_end(sv[0]);
  UniqueFd helper_end(sv[1]);
  int flags = ::fcntl(host_end.get(), F_GETFL);
  if (flags < 0 || ::fcntl(host_end.get(), F_SETFL, flags | O_NONBLOCK) < 0) {
    return make_system_error(Code::BACKEND_FAILED, "control socket O_NONBLOCK", errno);
  }
  UniqueFd diag_write;
  if (launch_.plan.tty_path_arg >= 0) {
    char name[128];
    if (::ptsname_r(pty->master.get(), name, sizeof name) != 0) {
      return make_system_error(Code::BACKEND_FAILED, "name of the PTY slave", errno);
    }
    launch_.plan.argv.at(static_cast<std::size_t>(launch_.plan.tty_path_arg)) = name;
  }
  if (launch_.plan.tty_by_message) {
    // Queued before the helper exists, so a failure here leaves nothing running; the fd in
    // flight is the helper's once it reads, and dies with the socket if it never does.
    if (Status st = send_tty(host_end.get(), pty->slave.get()); !st) return st;
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) < 0) {
      return make_system_error(Code::BACKEND_FAILED, "sandbox diagnostics pipe", errno);
    }
    diag_.reset(pipe_fds[0]);
    diag_write.reset(pipe_fds[1]);
  }
  auto helper = spawn_with_late_mounts(pty->slave.get(), helper_end.get(), diag_write.get());
  if (!helper) return helper.error();
  diag_write.reset();
  // Only the helper's copies of the slave and its socket end may stay open, or the master
  // would never reach EIO and the helper would never see EOF.
  pty->slave.reset();
  helper_end.reset();
  master_ = std::move(pty->master);
  control_ = std::move(host_end);
  pidfd_ = std::move(helper->pidfd);
  helper_pid_ = helper->pid;
  // Every process of the session descends from the helper (a subreaper): the probe walks
  // that tree, not all of /proc. The helper (or the wrapper around it) is single-threaded
  // and leads a session of its own, so it is never in the terminal's foreground group.
  if (probe_) probe_->set_tree_root(helper_pid_, proc::StdinProbe::Root::outside_session);

  ev_io_set(&master_read_, master_.get(), EV_READ);
  ev_io_set(&master_write_, master_.get(), EV_WRITE);
  ev_io_set(&control_io_, control_.get(), EV_READ);
  ev_io_set(&pidfd_io_, pidfd_.get(), EV_READ);
  ev_io_start(loop_, &master_read_);
  ev_io_start(loop_, &control_io_);
  ev_io_start(loop_, &pidfd_io_);
  return {};
}

Status LocalChannel::send_tty(int socket_fd, int slave_fd) {
  const proto::ControlMessage msg{proto::Type::tty, 0, 0};
  if (int err = proc::send_with_fd(socket_fd, &msg, sizeof msg, slave_fd); err != 0) {
    return make_system_error(Code::BACKEND_FAILED, "pass the PTY slave to the sandbox", err);
  }
  return {};
}

std::string LocalChannel::wrapper_said() const {
  std::string text;
  if (!diag_.valid()) return text;
  char buf[1024];
  ssize_t n;
  while (text.size() < 2048 && ((n = ::read(diag_.get(), buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))) {
    if (n > 0) text.append(buf, static_cast<std::size_t>(n));
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.pop_back();
  }
  for (char& c : text) {
    if (c == '\n') c = ';';
  }
  return text;
}

void LocalChannel::release() {
  ev_io_stop(loop_, &master_read_);
  ev_io_stop(loop_, &master_write_);
  ev_io_stop(loop_, &control_io_);
  ev_io_stop(loop_, &pidfd_io_);
  ev_io_stop(loop_, &init_io_);
  emptying_timer_.stop();
  init_pidfd_.reset();
  if (pidfd_.valid() && !helper_gone_) {
    // Best effort, never blocks: a helper still killing the tree becomes the host's zombie.
    siginfo_t info{};
    ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_.get()), &info,
             WEXITED | WNOHANG);
  }
  master_.reset();
  control_.reset();
  pidfd_.reset();
  diag_.reset();
}

// ---- output -------------------------------------------------------------------------------

void LocalChannel::on_master_readable(struct ev_loop*, ev_io* w, int) {
  static_cast<LocalChannel*>(w->data)->read_ready();
}

void LocalChannel::pause_output(bool paused) {
  output_paused_ = paused;
  if (paused || output_ended_ || !master_.valid()) {
    ev_io_stop(loop_, &master_read_);
  } else {
    ev_io_start(loop_, &master_read_);
  }
}

bool LocalChannel::read_available() { return read_master(/*until_empty=*/true); }

// The readable event: the watcher is level-triggered, so a read shorter than the buffer ends
// the turn and whatever arrives later wakes the loop again. The read that would only say
// EAGAIN is not made: it is one system call on every wake-up of every send, and on an empty
// terminal it also waits for the kernel's pending flush of the line discipline
// (n_tty_read), which may sit behind the shell on the other CPU. Callers that need the
// terminal drained (read_available) still read until it says EAGAIN.
void LocalChannel::read_ready() { read_master(/*until_empty=*/false); }

bool LocalChannel::read_master(bool until_empty) {
  if (output_paused_) return false;
  char buf[kReadChunk];
  for (int i = 0; i < kReadsPerEvent && master_.valid() && !output_ended_; ++i) {
    ssize_t n = ::read(master_.get(), buf, sizeof buf);
    if (n > 0) {
      events_.on_output(std::string_view(buf, static_cast<std::size_t>(n)));
      if (!until_empty && static_cast<std::size_t>(n) < sizeof buf) return false;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    // EIO (Linux) or 0: every holder of the slave has closed it; the output is complete.
    // Before the helper spoke, the slave went with a wrapper that failed to start (it was in
    // flight on the control socket): the wrapper's exit decides whether this PTY is the
    // session's (a start failure) or another replaces it (start_again).
    if (!helper_spoke_ && launch_.plan.tty_by_message && !quiescent_reported_) {
      ev_io_stop(loop_, &master_read_);
      return false;
    }
    output_ended_ = true;
    ev_io_stop(loop_, &master_read_);
    events_.on_output_ended();
    return false;
  }
  return master_.valid() && !output_ended_;
}

// ---- input --------------------------------------------------------------------------------

void LocalChannel::write(std::string_view bytes) {
  pending_writes_.append(bytes);
  bytes_queued_ += bytes.size();
  flush_writes();
}

void LocalChannel::on_master_writable(struct ev_loop*, ev_io* w, int) {
  static_cast<LocalChannel*>(w->data)->flush_writes();
}

void LocalChannel::flush_writes() {
  while (!pending_writes_.empty() && master_.valid()) {
    ssize_t n = ::write(master_.get(), pending_writes_.data(), pending_writes_.size());
    if (n > 0) {
      written_tail_.append(pending_writes_, 0, static_cast<std::size_t>(n));
      if (written_tail_.size() > 2 * kWrittenTail) written_tail_.erase(0, written_tail_.size() - kWrittenTail);
      pending_writes_.erase(0, static_cast<std::size_t>(n));
      bytes_written_ += static_cast<std::uint64_t>(n);
      events_.on_write_progress();
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      ev_io_start(loop_, &master_write_);
      return;
    }
    // EIO: nobody reads the terminal any more; what was not written never will be.
    bytes_written_ += pending_writes_.size();
    pending_writes_.clear();
    events_.on_write_progress();
  }
  ev_io_stop(loop_, &master_write_);
}

std::optional<std::size_t> LocalChannel::read_input_unread() const {
  if (!master_.valid() || output_ended_) return std::nullopt;
  // The unread input sits in the slave's line discipline, and only the helper holds the
  // slave: open a transient peer through the master (no path lookup, CLOEXEC), ask, close.
  // Holding it for the instant of one ioctl cannot delay EIO on the master.
  UniqueFd peer(::ioctl(master_.get(), TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!peer.valid()) return std::nullopt;
  // The master's bytes reach the line discipline from a kernel worker, a moment after the
  // write: a poll that finds nothing readable waits for that worker, so from an empty queue
  // the count holds every byte written so far, and a signal character (ISIG) has been sent
  // by then. Behind input already readable the poll answers at once (the count may lag;
  // the queue is not empty either way).
  pollfd p{peer.get(), POLLIN, 0};
  while (::poll(&p, 1, 0) < 0 && errno == EINTR) {
  }
  int unread = 0;
  if (::ioctl(peer.get(), FIONREAD, &unread) < 0) return std::nullopt;
  return static_cast<std::size_t>(unread);
}

std::optional<std::size_t> LocalChannel::take_back_input(std::size_t own) {
  if (!master_.valid() || output_ended_) return std::nullopt;
  // Not written yet: dropped, and counted as written (the send's landing is reached).
  const std::size_t unwritten = std::min(own, pending_writes_.size());
  pending_writes_.erase(pending_writes_.size() - unwritten);
  bytes_written_ += unwritten;
  if (pending_writes_.empty()) ev_io_stop(loop_, &master_write_);
  const std::size_t written = own - unwritten;
  if (written == 0) return unwritten;
  auto flushed = flush_unread_input(master_.get());
  if (!flushed) return std::nullopt;
  if (*flushed > written) {
    // The flush took bytes queued before the send's (an earlier line typed ahead): they
    // were not this send's to take back. Queued again, first, in their order.
    const std::size_t earlier = std::min(*flushed - written, written_tail_.size() > written ? written_tail_.size() - written : 0);
    std::string again = written_tail_.substr(written_tail_.size() - written - earlier, earlier);
    written_tail_.erase(written_tail_.size() - written - earlier);
    pending_writes_.insert(0, again);
    bytes_queued_ += again.size();
    flush_writes();
  } else {
    written_tail_.erase(written_tail_.size() - std::min(written_tail_.size(), *flushed));
  }
  return unwritten + std::min(*flushed, written);
}

std::optional<std::string> LocalChannel::command_line(pid_t pid) const {
  char line[512];
  const long n = procfs::read_small(procfs::Path(pid).text("/cmdline").c_str(), line, sizeof line);
  if (n <= 0) return std::nullopt;
  std::string out(line, static_cast<std::size_t>(n));
  while (!out.empty() && out.back() == '\0') out.pop_back();
  for (char& c : out) {
    if (c == '\0') c = ' ';
  }
  return out;
}

Status LocalChannel::resize(unsigned rows, unsigned cols) {
  return set_window_size(master_.get(), rows, cols);
}

// ---- the terminal's facts -----------------------------------------------------------------

TerminalFacts LocalChannel::terminal_facts(FactSet wanted) const {
  TerminalFacts f;
  if (wanted & (kFactForeground | kFactIgnoredSignals | kFactLeaderIsShell)) f.foreground = read_foreground();
  // On a PTY master the termios calls act on the slave's line discipline (Linux
  // tty_mode_ioctl follows the link), which is what the reader set.
  termios t{};
  if ((wanted & kFactModes) && master_.valid() && ::tcgetattr(master_.get(), &t) == 0) {
    f.flags |= frames::kStateModesKnown;
    if (t.c_lflag & ECHO) f.flags |= frames::kStateEcho;
    if (t.c_lflag & ICANON) f.flags |= frames::kStateCanonical;
  }
  if (wanted & kFactInputUnread) {
    if (auto unread = read_input_unread()) f.input_unread = static_cast<std::int32_t>(*unread);
  }
  if ((wanted & kFactShellCwd) && shell_pid_ > 0) f.cwd = working_directory(shell_pid_).value_or("");
  if ((wanted & kFactIgnoredSignals) && f.foreground > 0) f.ignored_signals = read_ignored_signals(f.foreground);
  if ((wanted & kFactLeaderIsShell) && f.foreground > 0 && shell_pid_ > 0 &&
      leader_is_shell_copy(f.foreground, shell_pid_)) {
    f.flags |= frames::kStateLeaderIsShell;
  }
  return f;
}

pid_t LocalChannel::read_foreground() const {
  if (!master_.valid()) return -1;
  pid_t pgid = ::tcgetpgrp(master_.get());
  return pgid > 0 ? pgid : -1;
}

std::optional<std::string> LocalChannel::working_directory(pid_t pid) const {
  char path[PATH_MAX];
  ssize_t n = ::readlink(procfs::Path(pid).text("/cwd").c_str(), path, sizeof path);
  if (n <= 0 || static_cast<std::size_t>(n) >= sizeof path) return std::nullopt;
  return std::string(path, static_cast<std::size_t>(n));
}

Status LocalChannel::signal_group(pid_t pgid, int signo) {
  if (::kill(-pgid, signo) < 0) {
    return make_system_error(Code::BACKEND_FAILED,
                             "signal process group " + std::to_string(pgid), errno);
  }
  return {};
}

std::uint64_t LocalChannel::read_ignored_signals(pid_t pid) const {
  return procfs::ignored_signals(pid);
}

bool LocalChannel::leader_is_shell_copy(pid_t leader, pid_t shell) const {
  char leader_line[512], shell_line[512];
  // The shell itself (what the far bridge asks with most of its probe answers, the shell at
  // its prompt): one read says whether it still has a command line, as two would.
  if (leader == shell) {
    return procfs::read_small(procfs::Path(leader).text("/cmdline").c_str(), leader_line, sizeof leader_line) > 0;
  }
  const long a = procfs::read_small(procfs::Path(leader).text("/cmdline").c_str(), leader_line, sizeof leader_line);
  const long b = procfs::read_small(procfs::Path(shell).text("/cmdline").c_str(), shell_line, sizeof shell_line);
  return a > 0 && a == b && std::memcmp(leader_line, shell_line, static_cast<std::size_t>(a)) == 0;
}

// ---- readers ------------------------------------------------------------------------------

void LocalChannel::mark_readers() {
  if (!probe_) return;
  // Whoever sits in read() on the terminal *now* has not seen the coming input, and must
  // not count until it ran again.
  if (pid_t pgid = read_foreground(); pgid > 0) {
    probe_->baseline(pgid);
  } else {
    probe_->clear_baseline();
  }
}

void LocalChannel::mark_shell_reader(pid_t shell) {
  if (probe_) probe_->baseline_process(shell);
}

void LocalChannel::forget_readers() {
  if (probe_) probe_->clear_baseline();
}

bool LocalChannel::foreground_reading() {
  relaying_ = relaying_input_ = false;
  if (!probe_) return false;
  pid_t pgid = read_foreground();
  if (pgid <= 0) return false;
  proc::ProbeEvidence evidence;
  const proc::ProbeVerdict verdict = probe_->check(pgid, &evidence);
  relaying_ = verdict == proc::ProbeVerdict::relaying;
  relaying_input_ = relaying_ && evidence.relayed_fd >= 0;
  return verdict == proc::ProbeVerdict::blocked_reading;
}

// ---- the helper ---------------------------------------------------------------------------

void LocalChannel::on_control_readable(struct ev_loop*, ev_io* w, int) {
  static_cast<LocalChannel*>(w->data)->read_control();
}

void LocalChannel::read_control() {
  while (control_.valid() && ev_is_active(&control_io_)) {
    proto::ControlMessage msg{};
    ssize_t n = ::recv(control_.get(), &msg, sizeof msg, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {
      // The helper closed its end (it exited): the pidfd says the rest.
      ev_io_stop(loop_, &control_io_);
      return;
    }
    if (n == static_cast<ssize_t>(sizeof msg)) handle_message(msg);
  }
}

void LocalChannel::handle_message(const proto::ControlMessage& msg) {
  // The helper runs: the wrapper's mounts are all made.
  if (!helper_spoke_) wrapper_mounts_done();
  helper_spoke_ = true;
  switch (msg.type) {
    case proto::Type::started: {
      pid_t shell = msg.a;
      if (launch_.plan.pid_namespace) {
        // The helper numbers the shell in its own pid namespace; the host signals, probes
        // and reports the host's number for it (proc/ns_pid.hpp says how it is found).
        shell = proc::host_pid_of_nested(helper_pid_, msg.a);
        if (shell <= 0) {
          events_.on_start_failed(make_error(
              Code::BACKEND_FAILED, launch_.plan.wrapper_label + ": the shell (pid " +
                                        std::to_string(msg.a) +
                                        " in the sandbox) exited before the host found it"));
          break;
        }
      }
      shell_pid_ = shell;
      events_.on_started(shell);
      break;
    }
    case proto::Type::start_failed: {
      std::string what;
      switch (static_cast<proto::StartStage>(msg.a)) {
        case proto::StartStage::chdir:
          what = "cannot enter working directory " + launch_.cwd.value_or("?");
          break;
        case proto::StartStage::exec:
          what = "cannot execute shell " + launch_.shell_path;
          break;
        case proto::StartStage::integration:
          what = "cannot write the shell integration for " + launch_.shell_path;
          break;
        case proto::StartStage::fork:
          what = "PTY supervisor could not start the shell";
          break;
        case proto::StartStage::watch_instances:
          what = "cannot watch the shell read its integration: " + instances_used_up_words();
          break;
        default:
          what = msg.a > proto::kCgroupStageBase
                     ? cgroup_step_words(msg.a - proto::kCgroupStageBase) + cgroup_words()
                     : "PTY supervisor could not start the shell";
      }
      events_.on_start_failed(make_system_error(Code::BACKEND_FAILED, what, msg.b));
      break;
    }
    case proto::Type::exited:
      events_.on_exited(status_from_wait(msg.a));
      break;
    case proto::Type::quiescent:
      quiescent_reported_ = true;
      if (helper_gone_) report_quiescent();
      break;
    case proto::Type::limit_hit:
      absorb_limit_counts();  // what came before this report stays older than it
      if (msg.a == static_cast<std::int32_t>(proto::LimitKind::pids)) limit_hit_ = LimitHit{LimitKind::pids};
      if (msg.a == static_cast<std::int32_t>(proto::LimitKind::memory)) limit_hit_ = LimitHit{LimitKind::memory};
      events_.on_limit_hit();
      break;

    default:
      break;
  }
}

void LocalChannel::on_pidfd_readable(struct ev_loop*, ev_io* w, int) {
  auto* c = static_cast<LocalChannel*>(w->data);
  // Messages the helper sent before exiting (`quiescent`) come first.
  c->read_control();
  c->reap_helper();
}

void LocalChannel::reap_helper() {
  siginfo_t info{};
  int rc = ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_.get()), &info,
                    WEXITED | WNOHANG);
  // ECHILD: the host reaped it behind our back (SIGCHLD handler, SIG_IGN, libev's default
  // loop); the pidfd being readable is proof enough that it exited.
  if (rc == 0 && info.si_pid == 0) return;  // spurious wake-up: not exited yet
  helper_gone_ = true;
  ev_io_stop(loop_, &pidfd_io_);
  if (forced_ == Forced::waiting) {
    check_forced_end();
  } else if (quiescent_reported_) {
    report_quiescent();
  } else if (!helper_spoke_ && launch_.plan.tty_by_message) {
    // The wrapper (bwrap) failed before the helper said anything: it could not build the
    // sandbox (no namespaces, a mount refused). It is a start failure, not a lost tree:
    // bwrap exits only after reaping its child, the namespace's init (the helper, with
    // --as-pid-1), whose death kills everything in the namespace, so its exit is the proof
    // that nothing is left. Its stderr names the cause.
    std::string said = wrapper_said();
    // A socket listed for a mask and gone before bwrap's mount (its server exited): bwrap
    // could not make the mount point. Not the spawn's failure: bwrap runs again with the
    // sockets as they are now, a few times at most.
    const bool socket_gone = launch_.plan.late_mounts && launch_.plan.late_mounts->gone_since(said);
    if (launch_.plan.late_mounts) launch_.plan.late_mounts->settle();
    if (socket_gone && starts_again_ < kMaxStartsAgain) {
      if (Status st = start_again(); !st) {
        helper_gone_ = quiescent_reported_ = true;  // nothing runs: start() leaves nothing
        events_.on_start_failed(st.error());
      }
      return;
    }
    kept_fds_.clear();
    if (!output_ended_ && !output_paused_) ev_io_start(loop_, &master_read_);  // the end held back
    std::string status;
    if (rc == 0 && info.si_code == CLD_EXITED) {
      status = " (exit status " + std::to_string(info.si_status) + ")";
    }
    quiescent_reported_ = true;
    events_.on_start_failed(make_error(Code::BACKEND_FAILED,
                                       launch_.plan.wrapper_label + " could not start the session" +
                                           status + (said.empty() ? "" : ": " + said)));
    // No on_quiescent: quiescent() already holds, which the teardown this starts reads.
  } else {
    // A close already asked to end the tree: what a session cgroup holds is ended now.
    if (kill_grace_) begin_emptying(*kill_grace_);
    events_.on_lost(make_error(Code::BACKEND_FAILED,
                               "PTY supervisor exited without reporting quiescence: the "
                               "session's processes may still be running"));
  }
}

void LocalChannel::kill_tree(std::chrono::milliseconds grace) {
  starts_again_ = kMaxStartsAgain;  // the session is ending: a failed start stays failed
  if (!kill_grace_ || grace < *kill_grace_) kill_grace_ = grace;
  if (helper_gone_ && !quiescent_reported_) begin_emptying(grace);
  if (helper_gone_ || quiescent_reported_ || !control_.valid()) return;
  proto::ControlMessage msg{proto::Type::kill, static_cast<std::int32_t>(grace.count()), 0};
  // EPIPE: the helper is gone; its pidfd reports that.
  while (::send(control_.get(), &msg, sizeof msg, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 &&
         errno == EINTR) {
  }
}

}  // namespace dshpty::shell

namespace dshpty::shell {

// The helper of a sandbox is its pid namespace's init (bwrap --as-pid-1), the outer bwrap's
// only child. A helper that does not answer (stopped, or its control socket taken from
// inside) is not needed to end the tree: the kernel kills every process of a namespace whose
// init dies (SIGKILL reaches a stopped init from outside), and the init's exit completes
// only after they are gone. The proof: the init's pidfd and the outer bwrap's exit.
std::optional<std::string> LocalChannel::force_end() {
  starts_again_ = kMaxStartsAgain;
  if (!launch_.plan.pid_namespace || helper_gone_ || quiescent_reported_ || forced_ != Forced::no) {
    return std::nullopt;
  }
  // The outer bwrap is ours and unreaped, so its child keeps its pid while bwrap lives: the
  // init is found, pinned, then checked to be that child still.
  const pid_t init = proc::host_pid_of_nested(helper_pid_, 1);
  if (init <= 0) return std::nullopt;
  init_pidfd_.reset(static_cast<int>(::syscall(SYS_pidfd_open, init, 0)));
  procfs::Stat st;
  if (!init_pidfd_.valid() || !procfs::read_stat(init, st) || st.ppid != helper_pid_) {
    init_pidfd_.reset();
    return std::nullopt;
  }
  // The init alone: the outer bwrap reaps it and exits, as at every end. Killing bwrap too
  // would hand the init's zombie to whoever reaps orphans here (the host, if it is a
  // subreaper). bwrap is out of the session's reach (another pid namespace).
  ::syscall(SYS_pidfd_send_signal, init_pidfd_.get(), SIGKILL, nullptr, 0);
  forced_ = Forced::waiting;
  ev_io_set(&init_io_, init_pidfd_.get(), EV_READ);
  ev_io_start(loop_, &init_io_);
  return "the sandbox's namespace init (the helper, pid " + std::to_string(init) +
         ") was killed through its pidfd, and its bwrap (pid " + std::to_string(helper_pid_) + ") ended with it";
}

void LocalChannel::on_init_readable(struct ev_loop*, ev_io* w, int) {
  auto* c = static_cast<LocalChannel*>(w->data);
  // A pidfd turns readable once its process exited (a zombie included): for the init of a
  // namespace, after every other process in it.
  ev_io_stop(c->loop_, &c->init_io_);
  c->check_forced_end();
}

std::string LocalChannel::cgroup_words() const {
  std::string words;
  if (!launch_.cgroups) return words;
  for (const auto& path : launch_.cgroups->paths()) words += (words.empty() ? " " : ", ") + path;
  return words;
}

void LocalChannel::report_quiescent() {
  if (launch_.cgroups) {
    absorb_limit_counts();  // the last look before the counters go
    if (Status st = launch_.cgroups->remove(); !st) {
      events_.on_lost(st.error());
      return;
    }
  }
  events_.on_quiescent();
}

// The helper died without proving the tree gone (killed, OOM): nothing of the session is
// found through it any more, but a limited session's whole tree was born inside its
// cgroups (the shell joined them before its exec), so what is still listed there is what
// is left. Ended from the loop, never inside kill_tree: on_quiescent once they are empty
// and removed (a second proof, as at every close of a limited session).
void LocalChannel::begin_emptying(std::chrono::milliseconds grace) {
  if (emptying_ != Emptying::no || !launch_.cgroups || launch_.cgroups->paths().empty()) return;
  emptying_ = Emptying::running;
  emptying_deadline_ = ev_now(loop_) + seconds(grace);
  emptying_timer_.start(std::chrono::milliseconds(0), kEmptyingTick);
}

void LocalChannel::empty_cgroups() {
  const long listed = launch_.cgroups->end_members();
  if (listed == 0) {
    emptying_timer_.stop();
    quiescent_reported_ = true;
    absorb_limit_counts();  // the last look before the counters go
    if (Status st = launch_.cgroups->remove(); !st) {
      emptying_ = Emptying::failed;
      events_.on_lost(st.error());
      return;
    }
    emptying_ = Emptying::proven;
    events_.on_quiescent();
    return;
  }
  const int err = errno;
  if (listed > 0 && ev_now(loop_) < emptying_deadline_) return;  // killed: looked at again next tick
  emptying_timer_.stop();
  emptying_ = Emptying::failed;
  events_.on_lost(make_error(Code::BACKEND_FAILED,
                             "PTY supervisor exited without reporting quiescence, and the session cgroup" +
                                 cgroup_words() +
                                 (listed < 0 ? std::string(" could not be read: ") + std::strerror(err)
                                             : " still held " + std::to_string(listed) +
                                                   " processes after SIGKILL to each for the close's grace")));
}

std::optional<LimitHit> LocalChannel::limit_hit() const {
  absorb_limit_counts();
  return limit_hit_;
}

void LocalChannel::absorb_limit_counts() const {
  if (!launch_.cgroups || launch_.cgroups->paths().empty()) return;
  const auto now = launch_.cgroups->counts();
  if (now.pids_refused > limit_counts_.pids_refused) limit_hit_ = LimitHit{LimitKind::pids};
  if (now.oom_kills > limit_counts_.oom_kills) limit_hit_ = LimitHit{LimitKind::memory};
  limit_counts_ = now;
}

void LocalChannel::check_forced_end() {
  if (forced_ != Forced::waiting || !helper_gone_ || ev_is_active(&init_io_)) return;
  forced_ = Forced::proven;
  quiescent_reported_ = true;
  report_quiescent();
}

LossWords LocalChannel::word_loss(const Error& cause) const {
  // The helper died without proving the tree gone: a close says so in its words, and so
  // does the status (list said `running` while a send said SESSION_EXITED: adversary round 6
  // F7). An exit it reported before it died was read first and stays the status.
  return LossWords{cause,
                   make_error(Code::BACKEND_FAILED, "PTY supervisor " + launch_.plan.helper_path + " exited during start-up"),
                   "the PTY supervisor exited without reporting quiescence: the session's processes may still "
                   "be running"};
}

ChannelFactory local_channel_factory(LocalLaunch launch) {
  // A factory is a std::function (copyable) and the launch owns the session's cgroups: it
  // is shared, and moved out by the one call a session makes.
  auto shared = std::make_shared<LocalLaunch>(std::move(launch));
  return [shared](struct ev_loop* loop, ChannelEvents& events) -> Result<OpenedChannel> {
    auto channel = LocalChannel::launch(loop, events, std::move(*shared));
    if (!channel) return channel.error();
    const pid_t helper = (*channel)->helper_pid();
    return OpenedChannel{std::move(*channel), helper};
  };
}

}  // namespace dshpty::shell

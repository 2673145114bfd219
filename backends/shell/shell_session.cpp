#include "shell_session.hpp"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>



#include <cstring>

#include "environment.hpp"
#include "channel/pty.hpp"
#include "channel/supervisor_launch.hpp"

namespace dshpty::shell {

namespace proto = shell_protocol;

namespace {

constexpr std::size_t kReadChunk = 64 * 1024;
// Reads per readable event: bounded so a runaway producer cannot starve the host's loop.
constexpr int kReadsPerEvent = 8;
// The motd is start-up output; a shell that prints megabytes before its prompt keeps
// only the head.
constexpr std::size_t kMotdMax = 64 * 1024;

double seconds(std::chrono::milliseconds ms) { return static_cast<double>(ms.count()) / 1000.0; }

SessionStatus status_from_wait(int wait_status) {
  if (WIFSIGNALED(wait_status)) return SessionStatus::exited_by_signal(WTERMSIG(wait_status));
  return SessionStatus::exited_with_code(WEXITSTATUS(wait_status));
}

std::string describe_status(const SessionStatus& st) {
  if (st.signal) return "killed by " + signal_number_name(*st.signal);
  return "exit code " + std::to_string(st.exit_code.value_or(-1));
}

}  // namespace

ShellSession::ShellSession(struct ev_loop* loop, const ShellConfig& config, StartParams params)
    : loop_(loop),
      config_(config),
      params_(std::move(params)),
      deferred_(loop),
      scrollback_(text::ScrollbackLimits{config.scrollback_lines, config.scrollback_bytes,
                                             config.page_bytes}),
      prompt_watch_(std::string(kPrompt)) {
  session_id_ = params_.session_id;
  ev_io_init(&master_read_, &ShellSession::on_master_readable, -1, EV_READ);
  ev_io_init(&master_write_, &ShellSession::on_master_writable, -1, EV_WRITE);
  ev_io_init(&control_io_, &ShellSession::on_control_readable, -1, EV_READ);
  ev_io_init(&pidfd_io_, &ShellSession::on_pidfd_readable, -1, EV_READ);
  ev_timer_init(&startup_timer_, &ShellSession::on_startup_timeout, 0., 0.);
  ev_timer_init(&exit_publish_timer_, &ShellSession::on_exit_publish_timeout, 0., 0.);
  ev_timer_init(&quiesce_timer_, &ShellSession::on_quiesce_timeout, 0., 0.);
  ev_timer_init(&drain_timer_, &ShellSession::on_drain_timeout, 0., 0.);
  ev_timer_init(&send_timeout_timer_, &ShellSession::on_send_timeout, 0., 0.);
  ev_timer_init(&send_idle_timer_, &ShellSession::on_send_idle, 0., 0.);
  ev_timer_init(&probe_timer_, &ShellSession::on_probe_tick, 0., 0.);
  for (ev_watcher* w : {reinterpret_cast<ev_watcher*>(&master_read_),
                        reinterpret_cast<ev_watcher*>(&master_write_),
                        reinterpret_cast<ev_watcher*>(&control_io_),
                        reinterpret_cast<ev_watcher*>(&pidfd_io_),
                        reinterpret_cast<ev_watcher*>(&startup_timer_),
                        reinterpret_cast<ev_watcher*>(&exit_publish_timer_),
                        reinterpret_cast<ev_watcher*>(&quiesce_timer_),
                        reinterpret_cast<ev_watcher*>(&drain_timer_),
                        reinterpret_cast<ev_watcher*>(&send_timeout_timer_),
                        reinterpret_cast<ev_watcher*>(&send_idle_timer_),
                        reinterpret_cast<ev_watcher*>(&probe_timer_)}) {
    w->data = this;
  }
}

ShellSession::~ShellSession() {
  drop_send();  // its operation may outlive us; it must not call back
  // Without waiting: closing our end of the socket tells the helper to kill the tree.
  release_fds();
}

void ShellSession::release_fds() {
  ev_io_stop(loop_, &master_read_);
  ev_io_stop(loop_, &master_write_);
  ev_io_stop(loop_, &control_io_);
  ev_io_stop(loop_, &pidfd_io_);
  ev_timer_stop(loop_, &startup_timer_);
  ev_timer_stop(loop_, &exit_publish_timer_);
  ev_timer_stop(loop_, &quiesce_timer_);
  ev_timer_stop(loop_, &drain_timer_);
  ev_timer_stop(loop_, &send_timeout_timer_);
  ev_timer_stop(loop_, &send_idle_timer_);
  ev_timer_stop(loop_, &probe_timer_);
  if (pidfd_.valid() && !helper_gone_) {
    // Best effort, never blocks: a helper still killing the tree becomes the host's zombie.
    siginfo_t info{};
    ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_.get()), &info,
             WEXITED | WNOHANG);
  }
  master_.reset();
  control_.reset();
  pidfd_.reset();
}

void ShellSession::start(struct ev_loop* loop, const ShellConfig& config, StartParams params,
                         SpawnCallback done) {
  std::unique_ptr<ShellSession> session(new ShellSession(loop, config, std::move(params)));
  ShellSession& s = *session;
  s.spawn_done_ = std::move(done);
  s.self_ = std::move(session);
  if (Status st = s.launch(); !st) {
    // Nothing was started (or launch() already undid it): fail from the loop.
    s.deferred_.post([&s, error = st.error()] {
      auto self = std::move(s.self_);
      auto done = std::move(s.spawn_done_);
      self.reset();
      done(error);
    });
    return;
  }
  if (s.params_.signal.aborted()) {
    s.fail_start(s.params_.signal.reason());
    return;
  }
  s.abort_sub_ = s.params_.signal.subscribe([&s](const Error& reason) {
    // Completions go through the loop; remember the reason so a prompt seen in the
    // meantime cannot win over the abort.
    if (!s.abort_reason_) s.abort_reason_ = reason;
    s.deferred_.post([&s] { s.fail_start(s.abort_reason_); });
  });
  ev_timer_set(&s.startup_timer_, seconds(config.startup_timeout), 0.);
  ev_timer_start(loop, &s.startup_timer_);
}

Status ShellSession::launch() {
  auto pty = open_pty(params_.rows, params_.cols);
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
  auto helper = launch_supervisor(params_.supervisor_path, params_.argv, params_.cwd, params_.env,
                                  pty->slave.get(), helper_end.get());
  if (!helper) return helper.error();
  // Only the helper's copies of the slave and its socket end may stay open, or the master
  // would never reach EIO and the helper would never see EOF.
  pty->slave.reset();
  helper_end.reset();
  master_ = std::move(pty->master);
  control_ = std::move(host_end);
  pidfd_ = std::move(helper->pidfd);
  helper_pid_ = helper->pid;

  ev_io_set(&master_read_, master_.get(), EV_READ);
  ev_io_set(&master_write_, master_.get(), EV_WRITE);
  ev_io_set(&control_io_, control_.get(), EV_READ);
  ev_io_set(&pidfd_io_, pidfd_.get(), EV_READ);
  ev_io_start(loop_, &master_read_);
  ev_io_start(loop_, &control_io_);
  ev_io_start(loop_, &pidfd_io_);
  return {};
}

// ---- fd events -------------------------------------------------------------------------

void ShellSession::on_master_readable(struct ev_loop*, ev_io* w, int) {
  static_cast<ShellSession*>(w->data)->read_master();
}

bool ShellSession::read_master() {
  char buf[kReadChunk];
  for (int i = 0; i < kReadsPerEvent && master_.valid() && !output_ended_; ++i) {
    ssize_t n = ::read(master_.get(), buf, sizeof buf);
    if (n > 0) {
      on_output(std::string_view(buf, static_cast<std::size_t>(n)));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    // EIO (Linux) or 0: every holder of the slave has closed it; the output is complete.
    on_output_ended();
    return false;
  }
  return master_.valid() && !output_ended_;
}

void ShellSession::on_master_writable(struct ev_loop*, ev_io* w, int) {
  static_cast<ShellSession*>(w->data)->flush_writes();
}

void ShellSession::flush_writes() {
  while (!pending_writes_.empty() && master_.valid()) {
    ssize_t n = ::write(master_.get(), pending_writes_.data(), pending_writes_.size());
    if (n > 0) {
      pending_writes_.erase(0, static_cast<std::size_t>(n));
      bytes_written_ += static_cast<std::uint64_t>(n);
      on_write_progress();
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
    on_write_progress();
  }
  ev_io_stop(loop_, &master_write_);
}

void ShellSession::on_control_readable(struct ev_loop*, ev_io* w, int) {
  static_cast<ShellSession*>(w->data)->read_control();
}

void ShellSession::read_control() {
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

void ShellSession::handle_message(const proto::ControlMessage& msg) {
  switch (msg.type) {
    case proto::Type::started:
      shell_pid_ = msg.a;
      try_finish_start();
      break;
    case proto::Type::start_failed: {
      std::string what;
      switch (static_cast<proto::StartStage>(msg.a)) {
        case proto::StartStage::chdir:
          what = "cannot enter working directory " + params_.cwd.value_or("?");
          break;
        case proto::StartStage::exec:
          what = "cannot execute shell " + params_.argv.front();
          break;
        default:
          what = "PTY supervisor could not start the shell";
      }
      fail_start(make_system_error(Code::BACKEND_FAILED, what, msg.b));
      break;
    }
    case proto::Type::exited:
      on_shell_exited(msg.a);
      break;
    case proto::Type::quiescent:
      quiescent_reported_ = true;
      check_teardown();
      break;
    default:
      break;
  }
}

void ShellSession::on_pidfd_readable(struct ev_loop*, ev_io* w, int) {
  auto* s = static_cast<ShellSession*>(w->data);
  // Messages the helper sent before exiting (`quiescent`) come first.
  s->read_control();
  s->reap_helper();
}

void ShellSession::reap_helper() {
  siginfo_t info{};
  int rc = ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_.get()), &info,
                    WEXITED | WNOHANG);
  // ECHILD: the host reaped it behind our back (SIGCHLD handler, SIG_IGN, libev's default
  // loop); the pidfd being readable is proof enough that it exited.
  if (rc == 0 && info.si_pid == 0) return;  // spurious wake-up: not exited yet
  helper_gone_ = true;
  ev_io_stop(loop_, &pidfd_io_);
  if (phase_ == Phase::starting) {
    fail_start(make_error(Code::BACKEND_FAILED,
                          "PTY supervisor " + params_.supervisor_path + " exited during start-up"));
    return;
  }
  check_teardown();
}

// ---- output and exit --------------------------------------------------------------------

void ShellSession::on_output(std::string_view bytes) {
  if (config_.on_raw_output) config_.on_raw_output(session_id_, bytes);
  chunk_.clear();
  sanitizer_.feed(bytes, chunk_);
  scrollback_.append(chunk_.text);
  if (!motd_done_) {
    const auto* first = chunk_.markers.empty() ? nullptr : &chunk_.markers.front();
    std::string_view before = first ? std::string_view(chunk_.text).substr(0, first->position)
                                    : std::string_view(chunk_.text);
    motd_.append(before.substr(0, kMotdMax - std::min(kMotdMax, motd_.size())));
    motd_done_ = first != nullptr;
  }
  if (!prompt_seen_) {
    prompt_watch_.observe(chunk_);
    if (prompt_watch_.at_prompt()) {
      prompt_seen_ = true;
      try_finish_start();
    }
    return;
  }
  if (send_) on_send_output(chunk_);
}

void ShellSession::on_output_ended() {
  output_ended_ = true;
  ev_io_stop(loop_, &master_read_);
  chunk_.clear();
  sanitizer_.finish(chunk_);
  if (!chunk_.text.empty()) {
    scrollback_.append(chunk_.text);
    if (send_) on_send_output(chunk_);
  }
  if (shell_status_ && !exit_published_) publish_exit();
  check_teardown();
}

void ShellSession::on_shell_exited(int wait_status) {
  if (shell_status_) return;
  shell_status_ = status_from_wait(wait_status);
  if (phase_ == Phase::starting) {
    fail_start(make_error(Code::BACKEND_FAILED,
                          "shell " + params_.argv.front() + " exited during start-up (" +
                              describe_status(*shell_status_) + ")"));
    return;
  }
  if (output_ended_) {
    publish_exit();
  } else {
    // A background job may keep the slave open for ever: publish after a bound anyway.
    ev_timer_set(&exit_publish_timer_, seconds(config_.drain_timeout), 0.);
    ev_timer_start(loop_, &exit_publish_timer_);
  }
}

void ShellSession::on_exit_publish_timeout(struct ev_loop*, ev_timer* w, int) {
  auto* s = static_cast<ShellSession*>(w->data);
  s->read_master();  // whatever is readable now still comes before the exit
  if (!s->exit_published_) s->publish_exit();
}

void ShellSession::publish_exit() {
  ev_timer_stop(loop_, &exit_publish_timer_);
  exit_published_ = true;
  if (send_) settle_send(WaitReason::session_exit);
}

// ---- start-up ---------------------------------------------------------------------------

void ShellSession::on_startup_timeout(struct ev_loop*, ev_timer* w, int) {
  auto* s = static_cast<ShellSession*>(w->data);
  s->fail_start(make_error(Code::BACKEND_FAILED,
                           "shell " + s->params_.argv.front() + " showed no prompt within " +
                               std::to_string(s->config_.startup_timeout.count()) + " ms"));
}

void ShellSession::try_finish_start() {
  if (phase_ != Phase::starting || !prompt_seen_ || !shell_pid_) return;
  if (abort_reason_) {
    fail_start(abort_reason_);
    return;
  }
  phase_ = Phase::running;
  ev_timer_stop(loop_, &startup_timer_);
  abort_sub_.reset();
  deferred_.post([this] {
    auto self = std::move(self_);
    auto done = std::move(spawn_done_);
    done(std::unique_ptr<BackendSession>(std::move(self)));
  });
}

void ShellSession::fail_start(Error error) {
  if (phase_ != Phase::starting) return;
  start_error_ = std::move(error);
  ev_timer_stop(loop_, &startup_timer_);
  begin_teardown();
}

void ShellSession::complete_start() {
  // Runs from the loop after a failed start-up's teardown settled.
  deferred_.post([this] {
    auto self = std::move(self_);
    auto done = std::move(spawn_done_);
    Error error = start_error_;
    self.reset();  // destroys this session: nothing below may touch it
    done(error);
  });
}

// ---- teardown ---------------------------------------------------------------------------

void ShellSession::begin_teardown() {
  phase_ = Phase::tearing_down;
  if (!helper_gone_ && !quiescent_reported_ && control_.valid()) {
    proto::ControlMessage msg{proto::Type::kill,
                              static_cast<std::int32_t>(config_.close_grace.count()), 0};
    // EPIPE: the helper is gone; its pidfd reports that.
    while (::send(control_.get(), &msg, sizeof msg, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 &&
           errno == EINTR) {
    }
    kill_sent_ = true;
  }
  if (!quiescent()) {
    ev_timer_set(&quiesce_timer_, seconds(config_.close_grace + kQuiesceSlack), 0.);
    ev_timer_start(loop_, &quiesce_timer_);
  }
  check_teardown();
}

void ShellSession::check_teardown() {
  if (phase_ != Phase::tearing_down) return;
  if (helper_gone_ && !quiescent_reported_) {
    finish_teardown(make_error(Code::BACKEND_FAILED,
                               "PTY supervisor exited without reporting quiescence: the "
                               "session's processes may still be running"));
    return;
  }
  if (!quiescent()) return;
  ev_timer_stop(loop_, &quiesce_timer_);
  if (!output_ended_) {
    if (!ev_is_active(&drain_timer_)) {
      ev_timer_set(&drain_timer_, seconds(config_.drain_timeout), 0.);
      ev_timer_start(loop_, &drain_timer_);
    }
    return;
  }
  finish_teardown(nullptr);
}

void ShellSession::on_quiesce_timeout(struct ev_loop*, ev_timer* w, int) {
  auto* s = static_cast<ShellSession*>(w->data);
  s->finish_teardown(make_error(
      Code::BACKEND_FAILED,
      "PTY supervisor did not report quiescence within " +
          std::to_string((s->config_.close_grace + kQuiesceSlack).count()) + " ms"));
}

void ShellSession::on_drain_timeout(struct ev_loop*, ev_timer* w, int) {
  auto* s = static_cast<ShellSession*>(w->data);
  s->read_master();
  if (s->output_ended_) return;  // read_master() finished the teardown
  s->finish_teardown(make_error(
      Code::BACKEND_FAILED,
      "PTY output did not end within " + std::to_string(s->config_.drain_timeout.count()) +
          " ms after the process tree was gone: a process outside the session holds its "
          "terminal"));
}

void ShellSession::finish_teardown(Error error) {
  ev_timer_stop(loop_, &quiesce_timer_);
  ev_timer_stop(loop_, &drain_timer_);
  bool starting = static_cast<bool>(self_);
  if (!error) {
    if (shell_status_ && !exit_published_) publish_exit();
    phase_ = Phase::closed;
    release_fds();
  } else {
    // The fence clears: a later close() retries from where this one stopped.
    phase_ = Phase::running;
  }
  if (starting) {
    if (error) start_error_ = make_backend_cleanup_error(start_error_, error);
    phase_ = Phase::tearing_down;  // a failed start never runs; only its destruction remains
    complete_start();
    return;
  }
  auto waiters = std::move(close_waiters_);
  close_waiters_.clear();
  deferred_.post([waiters = std::move(waiters), error]() {
    for (const auto& done : waiters) {
      if (error) {
        done(error);
      } else {
        done(Status{});
      }
    }
  });
}

// ---- the BackendSession interface -------------------------------------------------------

std::optional<int> ShellSession::pid() const {
  if (!shell_pid_) return std::nullopt;
  return static_cast<int>(*shell_pid_);
}

SessionStatus ShellSession::status() const {
  if (exit_published_ && shell_status_) return *shell_status_;
  return {};
}

Status ShellSession::signal(Signal sig, Callback<SignalResult> done) {
  if (phase_ != Phase::running) return make_error(Code::SESSION_CLOSING);
  if (exit_published_) return make_error(Code::SESSION_EXITED);
  pid_t pgid = ::tcgetpgrp(master_.get());
  if (pgid <= 0) {
    return make_error(Code::BACKEND_FAILED,
                      "the PTY has no foreground process group to signal");
  }
  int signo = signal_number(sig);
  if (signo == SIGKILL && shell_pid_ && pgid == *shell_pid_) {
    return make_error(Code::INVALID_ARGUMENT,
                      "refusing SIGKILL to the shell's own process group: close the session "
                      "instead");
  }
  if (::kill(-pgid, signo) < 0) {
    return make_system_error(Code::BACKEND_FAILED,
                             "signal process group " + std::to_string(pgid), errno);
  }
  deferred_.post([done = std::move(done), sig, pgid] {
    done(SignalResult{sig, static_cast<int>(pgid)});
  });
  return {};
}

void ShellSession::close(std::string reason, Callback<void> done) {
  if (phase_ == Phase::closed) {
    deferred_.post([done = std::move(done)] { done(Status{}); });
    return;
  }
  close_waiters_.push_back(std::move(done));
  if (phase_ == Phase::tearing_down) return;  // joins the close in flight
  if (send_) fail_send(make_error(Code::SESSION_CLOSING, "PTY session closed before the send completed"));
  close_reason_ = std::move(reason);
  begin_teardown();
}

Status ShellSession::resize(unsigned rows, unsigned cols) {
  if (rows < 1 || rows > 4096 || cols < 1 || cols > 4096) {
    return make_error(Code::INVALID_ARGUMENT, "rows and cols must be 1..4096");
  }
  if (phase_ != Phase::running) return make_error(Code::SESSION_CLOSING);
  return set_window_size(master_.get(), rows, cols);
}

Status ShellSession::write(std::string_view bytes) {
  if (phase_ != Phase::running) return make_error(Code::SESSION_CLOSING);
  if (output_ended_) return make_error(Code::SESSION_EXITED);
  pending_writes_.append(bytes);
  bytes_queued_ += bytes.size();
  flush_writes();
  return {};
}

}  // namespace dshpty::shell

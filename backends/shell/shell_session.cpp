#include "shell_session.hpp"

#include <signal.h>

#include "local/local_channel.hpp"
#include "local/environment.hpp"

namespace dshpty::shell {

namespace {

double seconds(std::chrono::milliseconds ms) { return static_cast<double>(ms.count()) / 1000.0; }

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
      pipeline_(text::SanitizerConfig{4096, params_.mark_nonce}),
      scrollback_(text::ScrollbackLimits{config.scrollback_lines, config.scrollback_bytes,
                                         config.page_bytes}),
      emulator_(params_.rows, params_.cols,
                [this](std::string_view reply) {
                  // A flood of queries (cat of a file of them) is not a program waiting for
                  // its answers: what is held stays bounded.
                  if (replies_.size() + reply.size() <= kMaxHeldAnswers) replies_.append(reply);
                }),
      unseen_(config.viewport_bytes) {
  session_id_ = params_.session_id;
  if (params_.abandoned_lines) pipeline_.filter_abandoned_lines();
  emulator_.set_mark_nonce(params_.mark_nonce);
  pipeline_.set_columns(params_.cols);
  // A session taken over has long shown its prompt: what it shows now arrives as replay.
  prompt_seen_ = params_.attach;
  pipeline_.add(scrollback_);
  pipeline_.add(motd_);
  pipeline_.add(emulator_);
  pipeline_.add(*this);
  ev_timer_init(&startup_timer_, &ShellSession::on_startup_timeout, 0., 0.);
  ev_timer_init(&exit_publish_timer_, &ShellSession::on_exit_publish_timeout, 0., 0.);
  ev_timer_init(&quiesce_timer_, &ShellSession::on_quiesce_timeout, 0., 0.);
  ev_timer_init(&drain_timer_, &ShellSession::on_drain_timeout, 0., 0.);
  ev_timer_init(&send_timeout_timer_, &ShellSession::on_send_timeout, 0., 0.);
  ev_timer_init(&send_idle_timer_, &ShellSession::on_send_idle, 0., 0.);
  ev_timer_init(&probe_timer_, &ShellSession::on_probe_tick, 0., 0.);
  ev_timer_init(&signal_hold_timer_, &ShellSession::on_signal_hold_tick, 0., 0.);
  ev_timer_init(&prompt_recheck_timer_, &ShellSession::on_prompt_recheck, 0., 0.);
  ev_timer_init(&answer_timer_, &ShellSession::on_answer_tick, 0., 0.);
  for (ev_timer* t : {&startup_timer_, &exit_publish_timer_, &quiesce_timer_, &drain_timer_,
                      &send_timeout_timer_, &send_idle_timer_, &probe_timer_, &signal_hold_timer_,
                      &prompt_recheck_timer_, &answer_timer_}) {
    t->data = this;
  }
}

ShellSession::~ShellSession() {
  release_send();  // its operation may outlive us; it must not call back
  stop_timers();
  // Without waiting: closing the channel tells the helper to kill the tree.
  channel_.reset();
}

void ShellSession::stop_timers() {
  for (ev_timer* t : {&startup_timer_, &exit_publish_timer_, &quiesce_timer_, &drain_timer_,
                      &send_timeout_timer_, &send_idle_timer_, &probe_timer_, &signal_hold_timer_,
                      &prompt_recheck_timer_, &answer_timer_}) {
    ev_timer_stop(loop_, t);
  }
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
  if (s.params_.mark_nonce.empty() && s.channel_->proves_readers()) {
    // No integration, so no marks: the shell is ready once it is seen reading.
    ev_set_cb(&s.probe_timer_, &ShellSession::on_startup_probe);
    ev_timer_set(&s.probe_timer_, seconds(kProbeInterval), seconds(kProbeInterval));
    ev_timer_start(loop, &s.probe_timer_);
  }
}

void ShellSession::on_startup_probe(struct ev_loop*, ev_timer* w, int) {
  auto* s = static_cast<ShellSession*>(w->data);
  if (!s->shell_pid_ || !s->channel_->foreground_reading()) return;
  s->prompt_seen_ = true;
  s->try_finish_start();
}

void ShellSession::end_startup_probe() {
  // The probe timer goes back to its job for sends.
  ev_timer_stop(loop_, &probe_timer_);
  ev_set_cb(&probe_timer_, &ShellSession::on_probe_tick);
}

Status ShellSession::launch() {
  if (params_.open_channel) {
    auto channel = params_.open_channel(loop_, *this);
    if (!channel) return channel.error();
    channel_ = std::move(*channel);
    return {};
  }
  LaunchPlan plan = direct_launch(params_.supervisor_path, params_.argv, params_.cwd, params_.env);
  // Limits: the helper makes the cgroups from these flags and fds (limits/cgroup_wire.hpp).
  auto& cgroup = params_.cgroup;
  plan.argv.insert(plan.argv.begin() + 1, cgroup.helper_args.begin(), cgroup.helper_args.end());
  if (params_.sandbox.confined()) plan = wrap_in_bwrap(plan, params_.sandbox, params_.cwd);
  for (const auto& dir : cgroup.dirs) plan.passed_fds.push_back(dir.get());
  LocalLaunch launch{std::move(plan), params_.rows, params_.cols, params_.argv.front(),
                     params_.cwd, std::move(cgroup.made)};
  auto channel = LocalChannel::launch(loop_, *this, std::move(launch));
  cgroup.dirs.clear();
  if (!channel) return channel.error();
  helper_pid_ = (*channel)->helper_pid();
  channel_ = std::move(*channel);
  return {};
}

// ---- the channel's events ---------------------------------------------------------------

void ShellSession::on_started(pid_t shell_pid) {
  shell_pid_ = shell_pid;
  try_finish_start();
}

void ShellSession::on_start_failed(Error cause) { fail_start(std::move(cause)); }

void ShellSession::on_output(std::string_view bytes) {
  if (params_.attach && !replay_checked_) {
    // A take-over: the replay fills the scrollback and the screen, and the text the next
    // result shows starts where the previous host's results had shown up to.
    replay_checked_ = true;
    replay_shown_ = channel_->shown_replay_bytes();
    text_start_replayed_ = replay_shown_.has_value();
  }
  if (replay_shown_ && *replay_shown_ <= fed_ + bytes.size()) {
    const auto split = static_cast<std::size_t>(*replay_shown_ - fed_);
    replay_shown_.reset();
    pipeline_.feed(bytes.substr(0, split));
    fed_ += split;
    bytes.remove_prefix(split);
    emulator_.start_text(emulator_.text_cursor(), config_.viewport_bytes);
  }
  fed_ += bytes.size();
  if (!bytes.empty()) pipeline_.feed(bytes);
  note_answers();
}

void ShellSession::on_output_ended() {
  pipeline_.finish();
  if (shell_status_ && !exit_published_) publish_exit();
  check_teardown();
}

void ShellSession::on_exited(SessionStatus status) {
  if (shell_status_) return;
  shell_status_ = status;
  if (phase_ == Phase::starting) {
    fail_start(make_error(Code::BACKEND_FAILED,
                          "shell " + params_.argv.front() + params_.startup_words +
                              " exited during start-up (" + describe_status(*shell_status_) + ")"));
    return;
  }
  if (channel_->output_ended()) {
    publish_exit();
  } else {
    // A background job may keep the terminal open for ever: publish after a bound anyway.
    ev_timer_set(&exit_publish_timer_, seconds(config_.drain_timeout), 0.);
    ev_timer_start(loop_, &exit_publish_timer_);
  }
}

void ShellSession::on_quiescent() { check_teardown(); }

void ShellSession::on_lost(Error cause) {
  if (params_.open_channel) {
    // A remote link ended: the far helper kills the tree when it sees that, but nothing
    // proves it did. The status says lost, in the transport's words; a close says it
    // cannot confirm the end.
    lost_reason_ = cause->message;
    lost_ = make_error(Code::BACKEND_FAILED,
                       cause->message + ": the end of the session's processes on the far side is unconfirmed");
  } else {
    lost_ = std::move(cause);
  }
  if (phase_ == Phase::starting) {
    fail_start(params_.open_channel ? make_error(Code::BACKEND_FAILED, lost_reason_)
                                    : make_error(Code::BACKEND_FAILED, "PTY supervisor " + params_.supervisor_path +
                                                                           " exited during start-up"));
    return;
  }
  if (send_) settle_send(WaitReason::session_exit);
  check_teardown();
}

// ---- output -----------------------------------------------------------------------------

void ShellSession::on_bytes(std::string_view raw) {
  if (config_.on_raw_output) config_.on_raw_output(session_id_, raw);
}

void ShellSession::on_sanitized(const text::SanitizedText& chunk) {
  // Every mark, whenever it comes: what counts for a send is what came since its write
  // landed (the watch is reset then).
  prompt_watch_.observe(chunk);
  if (!chunk.markers.empty()) {
    shell_place_ = chunk.markers.back().kind == 'C' ? ShellPlace::command : ShellPlace::prompt;
  }
}

void ShellSession::on_text(const text::SanitizedText& chunk) {
  ++text_chunks_;
  if (!prompt_seen_) return;
  if (send_ && send_->write_started) {
    on_send_output(chunk);
    return;
  }
  unseen_.append(chunk.text);
  if (send_) on_send_output(chunk);
}

void ShellSession::on_chunk_end() {
  // The prompt evidence saw the whole read (on_sanitized) before the line editor handed
  // its pieces over: decide only now that every piece reached the send's output.
  if (!prompt_seen_) {
    if (prompt_watch_.at_prompt()) {
      prompt_seen_ = true;
      unseen_.clear(pipeline_.current_line_bytes());  // the first prompt is the open's
      if (!text_start_replayed_) {
        emulator_.start_text(emulator_.text_cursor(), config_.viewport_bytes);
        channel_->note_shown();
      }
      // A new shell at its first prompt: the first send is a line typed at the idle prompt
      // (a taken-over session may be anywhere: its first send is typed ahead).
      idle_at_prompt_ = !params_.attach;
      try_finish_start();
    }
    return;
  }
  if (send_) on_send_chunk_end();
}

void ShellSession::on_line_rewrite(std::string_view line, std::size_t changed_from) {
  if (!prompt_seen_) return;
  if (send_ && send_->write_started) {
    on_send_rewrite(line, changed_from);
    return;
  }
  unseen_.rewrite_line(line, changed_from);
}

void ShellSession::on_exit_publish_timeout(struct ev_loop*, ev_timer* w, int) {
  auto* s = static_cast<ShellSession*>(w->data);
  s->channel_->read_available();  // whatever is readable now still comes before the exit
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
  if (s->params_.attach) {
    s->fail_start(make_error(Code::BACKEND_FAILED, "the lingering session's replay did not complete within " +
                                                       std::to_string(s->config_.startup_timeout.count()) + " ms"));
    return;
  }
  s->fail_start(make_error(Code::BACKEND_FAILED,
                           "shell " + s->params_.argv.front() + s->params_.startup_words +
                               " showed no prompt within " +
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
  end_startup_probe();
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
  end_startup_probe();
  if (params_.attach && channel_) {
    // A take-over that failed (aborted, too slow) lets go of the session instead of
    // killing it: it lingers on for the next attach.
    phase_ = Phase::tearing_down;
    stop_timers();
    channel_->detach();
    complete_start();
    return;
  }
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
  fail_held_signals();
  channel_->kill_tree(config_.close_grace);
  if (!channel_->quiescent()) {
    ev_timer_set(&quiesce_timer_, seconds(config_.close_grace + kQuiesceSlack), 0.);
    ev_timer_start(loop_, &quiesce_timer_);
  }
  check_teardown();
}

void ShellSession::check_teardown() {
  if (phase_ != Phase::tearing_down) return;
  if (lost_) {
    finish_teardown(lost_);
    return;
  }
  if (!channel_->quiescent()) return;
  ev_timer_stop(loop_, &quiesce_timer_);
  if (!channel_->output_ended()) {
    if (!ev_is_active(&drain_timer_)) {
      ev_timer_set(&drain_timer_, seconds(config_.drain_timeout), 0.);
      ev_timer_start(loop_, &drain_timer_);
    }
    return;
  }
  if (forced_end_) {
    Error report = make_error(Code::BACKEND_FAILED, *forced_end_ + "; every process of the session is gone");
    forced_end_.reset();
    finish_teardown(report);
    return;
  }
  finish_teardown(nullptr);
}

void ShellSession::on_quiesce_timeout(struct ev_loop*, ev_timer* w, int) {
  auto* s = static_cast<ShellSession*>(w->data);
  const std::string missed = "PTY supervisor did not report quiescence within " +
                             std::to_string((s->config_.close_grace + kQuiesceSlack).count()) + " ms";
  if (!s->forced_end_) {
    // The channel may end the tree without the helper (a sandbox's namespace): the close
    // then waits for that proof, as long again at most, and reports what was done.
    if (auto how = s->channel_->force_end()) {
      s->forced_end_ = missed + ": " + *how;
      ev_timer_set(&s->quiesce_timer_, seconds(kQuiesceSlack), 0.);
      ev_timer_start(s->loop_, &s->quiesce_timer_);
      return;
    }
  }
  s->finish_teardown(make_error(Code::BACKEND_FAILED, missed));
}

void ShellSession::on_drain_timeout(struct ev_loop*, ev_timer* w, int) {
  auto* s = static_cast<ShellSession*>(w->data);
  s->channel_->read_available();
  if (s->channel_->output_ended()) return;  // the end of output finished the teardown
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
    stop_timers();
    channel_->release();
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
  if (!lost_reason_.empty()) return SessionStatus::lost(lost_reason_);
  if (auto why = channel_ ? channel_->reconnecting() : std::nullopt) return SessionStatus::reconnecting(*why);
  return {};
}

Status ShellSession::signal(Signal sig, Callback<SignalResult> done) {
  if (phase_ != Phase::running) return make_error(Code::SESSION_CLOSING);
  if (exit_published_ || !lost_reason_.empty()) return make_error(Code::SESSION_EXITED);
  int signo = signal_number(sig);
  if (shell_starting_command()) {
    hold_signal(HeldSignal{signo, sig, std::move(done), nullptr, 0, false});
    return {};
  }
  pid_t pgid = channel_->foreground_group();
  if (Status st = deliver_signal(pgid, signo); !st) return st;
  deferred_.post([done = std::move(done), sig, pgid] {
    done(SignalResult{sig, static_cast<int>(pgid)});
  });
  return {};
}

void ShellSession::close(std::string /*reason*/, Callback<void> done) {
  if (phase_ == Phase::closed) {
    deferred_.post([done = std::move(done)] { done(Status{}); });
    return;
  }
  if (phase_ == Phase::running && params_.host_leaving && *params_.host_leaving && channel_->lingers()) {
    // The host leaves and the session outlives it: let go of the channel without a kill.
    if (send_) fail_send(make_error(Code::SESSION_CLOSING, "the host detached the session before the send completed"));
    fail_held_signals();
    phase_ = Phase::closed;
    stop_timers();
    channel_->detach();
    deferred_.post([done = std::move(done)] { done(Status{}); });
    return;
  }
  close_waiters_.push_back(std::move(done));
  if (phase_ == Phase::tearing_down) return;  // joins the close in flight
  if (send_) fail_send(make_error(Code::SESSION_CLOSING, "PTY session closed before the send completed"));
  begin_teardown();
}

Result<ScreenSnapshot> ShellSession::screen() {
  if (channel_ && !channel_->output_ended()) channel_->read_available();
  return emulator_.snapshot();
}

Status ShellSession::resize(unsigned rows, unsigned cols) {
  if (rows < 1 || rows > 4096 || cols < 1 || cols > 4096) {
    return make_error(Code::INVALID_ARGUMENT, "rows and cols must be 1..4096");
  }
  if (phase_ != Phase::running) return make_error(Code::SESSION_CLOSING);
  if (channel_->output_ended()) return make_error(Code::SESSION_EXITED);
  // What was drawn for the old size is rendered first; what comes after is drawn for the
  // new one.
  channel_->read_available();
  if (Status st = channel_->resize(rows, cols); !st) return st;
  emulator_.resize(rows, cols);
  pipeline_.set_columns(cols);
  return {};
}

Status ShellSession::write(std::string_view bytes) {
  if (phase_ != Phase::running) return make_error(Code::SESSION_CLOSING);
  if (channel_->output_ended()) return make_error(Code::SESSION_EXITED);
  if (Status st = check_pending_input(bytes.size()); !st) return st;
  idle_at_prompt_ = false;
  channel_->write(bytes);
  return {};
}

Status ShellSession::check_pending_input(std::size_t adding) const {
  // Queued minus written: on a remote channel this counts what the link and the far
  // helper still hold too, since the far side reports only what reached its terminal.
  const std::uint64_t unwritten = channel_->bytes_queued() - channel_->bytes_written();
  if (unwritten + adding <= kMaxPendingInputBytes) return {};
  return make_error(Code::INVALID_ARGUMENT,
                    "input not taken: " + std::to_string(unwritten) + " bytes sent earlier are still unwritten (the " +
                        "program in the terminal is not reading them) and " + std::to_string(adding) +
                        " more would pass the bound of " + std::to_string(kMaxPendingInputBytes) +
                        " bytes of pending input; interrupt the program (signal SIGINT) or wait until it reads");
}

}  // namespace dshpty::shell

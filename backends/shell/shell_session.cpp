#include "shell_session.hpp"

#include <signal.h>

#include <algorithm>

#include "local/environment.hpp"

namespace dshpty::shell {

namespace {

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
      unseen_(config.viewport_bytes),
      recorder_(std::move(params_.recorder)) {
  session_id_ = params_.session_id;
  if (recorder_) add_observer(*recorder_);
  if (params_.abandoned_lines) pipeline_.filter_abandoned_lines();
  emulator_.set_mark_nonce(params_.mark_nonce);
  pipeline_.set_columns(params_.cols);
  // A session taken over has long shown its prompt: what it shows now arrives as replay.
  prompt_seen_ = params_.attach;
  pipeline_.add(scrollback_);
  pipeline_.add(motd_);
  pipeline_.add(emulator_);
  pipeline_.add(*this);
  startup_timer_.bind<&ShellSession::on_startup_timeout>(loop, this);
  startup_probe_timer_.bind<&ShellSession::on_startup_probe>(loop, this);
  exit_publish_timer_.bind<&ShellSession::on_exit_publish_timeout>(loop, this);
  quiesce_timer_.bind<&ShellSession::on_quiesce_timeout>(loop, this);
  drain_timer_.bind<&ShellSession::on_drain_timeout>(loop, this);
  send_timeout_timer_.bind<&ShellSession::on_send_timeout>(loop, this);
  send_idle_timer_.bind<&ShellSession::on_send_idle>(loop, this);
  port_timer_.bind<&ShellSession::on_port_tick>(loop, this);
  stop_settle_timer_.bind<&ShellSession::on_stop_settle_timeout>(loop, this);
  probe_timer_.bind<&ShellSession::on_probe_tick>(loop, this);
  signal_hold_timer_.bind<&ShellSession::release_held_signals>(loop, this);
  prompt_recheck_timer_.bind<&ShellSession::on_prompt_recheck>(loop, this);
  answer_timer_.bind<&ShellSession::on_answer_tick>(loop, this);
}

ShellSession::~ShellSession() {
  release_send();  // its operation may outlive us; it must not call back
  stop_timers();
  end_observers();
  // Without waiting: closing the channel tells the helper to kill the tree.
  channel_.reset();
}

void ShellSession::stop_timers() {
  for (Timer* t : {&startup_timer_, &startup_probe_timer_, &exit_publish_timer_, &quiesce_timer_, &drain_timer_,
                   &send_timeout_timer_, &send_idle_timer_, &port_timer_, &probe_timer_, &signal_hold_timer_,
                   &prompt_recheck_timer_, &answer_timer_, &stop_settle_timer_}) {
    t->stop();
  }
}

void ShellSession::start(struct ev_loop* loop, const ShellConfig& config, StartParams params,
                         SpawnCallback done) {
  std::unique_ptr<ShellSession> session(new ShellSession(loop, config, std::move(params)));
  ShellSession& s = *session;
  s.spawn_done_ = std::move(done);
  s.self_ = std::move(session);
  if (Status st = s.launch(); !st) {
    // Nothing was started (or launch() already undid it).
    s.complete_spawn(st.error());
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
  s.startup_timer_.start(config.startup_timeout);
  if (s.params_.mark_nonce.empty() && s.channel_->proves_readers()) {
    // No integration, so no marks: the shell is ready once it is seen reading.
    s.startup_probe_timer_.start(kProbeInterval, kProbeInterval);
  }
}

void ShellSession::on_startup_probe() {
  if (!shell_pid_ || !channel_->foreground_reading()) return;
  prompt_seen_ = true;
  try_finish_start();
}

void ShellSession::end_startup_probe() { startup_probe_timer_.stop(); }

Status ShellSession::launch() {
  auto opened = params_.open_channel(loop_, *this);
  if (!opened) return opened.error();
  helper_pid_ = opened->local_helper_pid;
  channel_ = std::move(opened->channel);
  params_.cgroup.dirs.clear();  // the helper has its copies (limits/cgroup_wire.hpp)
  return {};
}

// ---- the channel's events ---------------------------------------------------------------

void ShellSession::on_started(pid_t shell_pid) {
  shell_pid_ = shell_pid;
  try_finish_start();
}

void ShellSession::on_start_failed(Error cause) { fail_start(std::move(cause)); }

void ShellSession::on_output(std::string_view bytes) {
  if (params_.attach && text_start_ == TextStart::unknown) {
    // A take-over: the replay fills the scrollback and the screen, and the text the next
    // result shows starts where the previous host's results had shown up to.
    replay_shown_ = linger() ? linger()->shown_replay_bytes() : std::nullopt;
    text_start_ = replay_shown_ ? TextStart::replay : TextStart::first_prompt;
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
  if (shell_exit_ == ShellExit::exited) publish_exit();
  check_teardown();
}

void ShellSession::on_exited(SessionStatus status) {
  if (shell_exit_ != ShellExit::running) return;
  shell_exit_ = ShellExit::exited;
  shell_status_ = status;
  if (phase_ == Phase::starting) {
    fail_start(make_error(Code::BACKEND_FAILED,
                          "shell " + params_.argv.front() + params_.startup_words +
                              " exited during start-up (" + describe_status(shell_status_) + ")"));
    return;
  }
  if (channel_->output_ended()) {
    publish_exit();
  } else {
    // A background job may keep the terminal open for ever: publish after a bound anyway.
    exit_publish_timer_.start(config_.drain_timeout);
  }
}

void ShellSession::on_quiescent() { check_teardown(); }

void ShellSession::on_lost(Error cause) {
  // Nothing proves the tree gone: the channel says what that means for a close, a start-up
  // and the status.
  LossWords words = channel_->word_loss(cause);
  lost_reason_ = std::move(words.status);
  lost_ = std::move(words.close_error);
  if (phase_ == Phase::starting) {
    fail_start(std::move(words.start_error));
    return;
  }
  if (send_) settle_send(WaitReason::session_exit);
  check_teardown();
}

// ---- output -----------------------------------------------------------------------------

void ShellSession::on_bytes(std::string_view raw) {
  if (config_.on_raw_output) config_.on_raw_output(session_id_, raw);
  if (!observers_.empty()) tell_observers([raw](SessionObserver& o) { o.on_output(raw); });
}

void ShellSession::on_sanitized(const text::SanitizedText& chunk) {
  // Every mark, whenever it comes: what counts for a send is what came since its write
  // landed (the watch is reset then).
  prompt_watch_.observe(chunk);
  // A stop waits for the line's start to stop what it starts (ShellSession::stop_send).
  if (send_ && send_->stop_line_on_start && !send_->settled && prompt_watch_.command_started()) {
    send_->stop_line_on_start = false;
    stop_line_processes(send_);
  }
  if (!chunk.markers.empty()) {
    const ShellPlace place = chunk.markers.back().kind == 'C' ? ShellPlace::command : ShellPlace::prompt;
    if (place == ShellPlace::command && shell_place_ != ShellPlace::command) command_since_ = ev_now(loop_);
    shell_place_ = place;
    // Back at the prompt (any mark but C): a settled send's line that still ran is over.
    if (!open_line_.expired() && std::any_of(chunk.markers.begin(), chunk.markers.end(),
                                             [](const text::PromptMarker& m) { return m.kind != 'C'; }))
      close_open_line();
  }
}

void ShellSession::on_text(const text::SanitizedText& chunk) {
  ++text_chunks_;
  if (!prompt_seen_) return;
  if (send_ && send_->write_started()) {
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
      if (text_start_ != TextStart::replay) {
        emulator_.start_text(emulator_.text_cursor(), config_.viewport_bytes);
        if (auto* l = linger()) l->note_shown();
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
  if (send_ && send_->write_started()) {
    on_send_rewrite(line, changed_from);
    return;
  }
  unseen_.rewrite_line(line, changed_from);
}

void ShellSession::on_exit_publish_timeout() {
  channel_->read_available();  // whatever is readable now still comes before the exit
  if (shell_exit_ != ShellExit::published) publish_exit();
}

void ShellSession::publish_exit() {
  exit_publish_timer_.stop();
  shell_exit_ = ShellExit::published;
  if (send_) settle_send(WaitReason::session_exit);
}

// ---- start-up ---------------------------------------------------------------------------

void ShellSession::on_startup_timeout() {
  if (params_.attach) {
    fail_start(make_error(Code::BACKEND_FAILED, "the lingering session's replay did not complete within " +
                                                    std::to_string(config_.startup_timeout.count()) + " ms"));
    return;
  }
  fail_start(make_error(Code::BACKEND_FAILED,
                        "shell " + params_.argv.front() + params_.startup_words + " showed no prompt within " +
                            std::to_string(config_.startup_timeout.count()) + " ms"));
}

void ShellSession::try_finish_start() {
  if (phase_ != Phase::starting || !prompt_seen_ || !shell_pid_) return;
  if (abort_reason_) {
    fail_start(abort_reason_);
    return;
  }
  phase_ = Phase::running;
  startup_timer_.stop();
  end_startup_probe();
  abort_sub_.reset();
  complete_spawn(nullptr);
}

void ShellSession::fail_start(Error error) {
  if (phase_ != Phase::starting) return;
  start_error_ = std::move(error);
  startup_timer_.stop();
  end_startup_probe();
  if (params_.attach && linger()) {
    // A take-over that failed (aborted, too slow) lets go of the session instead of
    // killing it: it lingers on for the next attach.
    phase_ = Phase::tearing_down;
    stop_timers();
    linger()->detach();
    complete_spawn(start_error_);
    return;
  }
  begin_teardown();
}

void ShellSession::complete_spawn(Error error) {
  deferred_.post([this, error = std::move(error)] {
    auto self = std::move(self_);
    auto done = std::move(spawn_done_);
    if (!error) {
      if (recorder_) recorder_->keep();  // the session runs: its recording stays
      done(std::unique_ptr<BackendSession>(std::move(self)));
      return;
    }
    self.reset();  // destroys this session: nothing below may touch it
    done(error);
  });
}

// ---- teardown ---------------------------------------------------------------------------

void ShellSession::begin_teardown() {
  phase_ = Phase::tearing_down;
  fail_held_signals();
  channel_->kill_tree(config_.close_grace);
  if (!channel_->quiescent()) quiesce_timer_.start(config_.close_grace + kQuiesceSlack);
  check_teardown();
}

void ShellSession::check_teardown() {
  if (phase_ != Phase::tearing_down) return;
  // Lost (the helper died): the channel may still end what is left by other means, and
  // prove it (on_quiescent: the close succeeds after all) or not (on_lost again).
  if (lost_) {
    const auto lost_tree = channel_->lost_tree();
    if (lost_tree == ProcessChannel::LostTree::ending) return;
    if (lost_tree != ProcessChannel::LostTree::ended) {
      finish_teardown(lost_);
      return;
    }
  }
  if (!channel_->quiescent()) return;
  quiesce_timer_.stop();
  if (!channel_->output_ended()) {
    drain_timer_.start_if_idle(config_.drain_timeout);
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

void ShellSession::on_quiesce_timeout() {
  const std::string missed = "PTY supervisor did not report quiescence within " +
                             std::to_string((config_.close_grace + kQuiesceSlack).count()) + " ms";
  if (!forced_end_) {
    // The channel may end the tree without the helper (a sandbox's namespace): the close
    // then waits for that proof, as long again at most, and reports what was done.
    if (auto how = channel_->force_end()) {
      forced_end_ = missed + ": " + *how;
      quiesce_timer_.start(kQuiesceSlack);
      return;
    }
  }
  finish_teardown(make_error(Code::BACKEND_FAILED, missed));
}

void ShellSession::on_drain_timeout() {
  channel_->read_available();
  if (channel_->output_ended()) return;  // the end of output finished the teardown
  finish_teardown(make_error(
      Code::BACKEND_FAILED,
      "PTY output did not end within " + std::to_string(config_.drain_timeout.count()) +
          " ms after the process tree was gone: a process outside the session holds its "
          "terminal"));
}

void ShellSession::finish_teardown(Error error) {
  quiesce_timer_.stop();
  drain_timer_.stop();
  bool starting = static_cast<bool>(self_);
  if (!error) {
    if (shell_exit_ == ShellExit::exited) publish_exit();
    phase_ = Phase::closed;
    stop_timers();
    channel_->release();
    end_observers();  // a recording is complete before the close answers
  } else {
    // The fence clears: a later close() retries from where this one stopped.
    phase_ = Phase::running;
  }
  if (starting) {
    if (error) start_error_ = make_backend_cleanup_error(start_error_, error);
    phase_ = Phase::tearing_down;  // a failed start never runs; only its destruction remains
    complete_spawn(start_error_);
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
  if (shell_exit_ == ShellExit::published) return shell_status_;
  if (!lost_reason_.empty()) return SessionStatus::lost(lost_reason_);
  if (auto why = linger() ? linger()->reconnecting() : std::nullopt) return SessionStatus::reconnecting(*why);
  return {};
}

Status ShellSession::signal(Signal sig, Callback<SignalResult> done) {
  if (phase_ != Phase::running) return make_error(Code::SESSION_CLOSING);
  if (shell_exit_ == ShellExit::published || !lost_reason_.empty()) return make_error(Code::SESSION_EXITED);
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
  if (phase_ == Phase::running && params_.host_leaving && *params_.host_leaving && linger()) {
    // The host leaves and the session outlives it: let go of the channel without a kill.
    if (send_) fail_send(make_error(Code::SESSION_CLOSING, "the host detached the session before the send completed"));
    fail_held_signals();
    phase_ = Phase::closed;
    stop_timers();
    // The recording is complete before the link goes: from the link's end on, the helper
    // appends to the same file (record/detached_writer.hpp).
    end_observers();
    linger()->detach();
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
  note_shown();
  return emulator_.snapshot();
}

Result<Observation> ShellSession::observe() const {
  if (!config_.watchable) {
    return make_error(Code::INVALID_ARGUMENT, "this host allows no observers (watchable is false)");
  }
  Observation view;
  // No read_available() here, unlike screen(): an observer must not change when output is
  // read (a send's settling follows the loop's own reads), so it sees what the loop read.
  view.screen = emulator_.snapshot();
  if (phase_ != Phase::running || !channel_ || channel_->output_ended() || !shell_pid_) return view;
  if (channel_->facts_are_questions()) {
    // A far terminal's facts cost a question on the link: the marks alone say prompt or busy.
    if (shell_place_ != ShellPlace::unknown)
      view.activity = shell_place_ == ShellPlace::prompt ? ObservedActivity::prompt : ObservedActivity::busy;
    return view;
  }
  const pid_t foreground = channel_->foreground_group();
  if (foreground > 0 && foreground != *shell_pid_) {
    view.activity = ObservedActivity::busy;
    view.command = channel_->command_line(foreground);
  } else if (foreground == *shell_pid_ && shell_place_ != ShellPlace::unknown) {
    // The shell's own group: at its prompt, or running a builtin of the line it read.
    view.activity = shell_place_ == ShellPlace::prompt ? ObservedActivity::prompt : ObservedActivity::busy;
  }
  return view;
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
  if (!observers_.empty()) tell_observers([rows, cols](SessionObserver& o) { o.on_resize(rows, cols); });
  return {};
}

Status ShellSession::write(std::string_view bytes) {
  if (phase_ != Phase::running) return make_error(Code::SESSION_CLOSING);
  if (channel_->output_ended()) return make_error(Code::SESSION_EXITED);
  if (Status st = check_pending_input(bytes.size()); !st) return st;
  idle_at_prompt_ = false;
  if (!observers_.empty()) note_input(bytes);
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

// A send as a job (docs/shell-backend.md, "Jobs"): its output read by offset by any number
// of readers (text::JobLog; no reader moves the send's consuming cursor), readers that wait
// for more woken as it comes and when the send settles, and a stop with proof: the channel
// ends the job's processes (proc::JobStop), and the stop answers once the send settled too
// (the shell back at its prompt), or says which processes remain. A job whose command has not
// started is taken back instead; one typed through a relay gets ^C typed through it; an
// ended one still has what it left running (a daemon, a stopped job) stopped.
//
// Wake-ups run from the loop through ev_once, not the session's queue: a reader, a stop
// or a condition's waiter may outlive the session that fed them (the service buries a
// session's operations after it).
#include <ev.h>

#include <algorithm>
#include <memory>
#include <utility>

#include "shell_session.hpp"

namespace dshpty::shell {

void post_to_loop(struct ev_loop* loop, std::function<void()> fn) {
  auto* held = new std::function<void()>(std::move(fn));
  ev_once(loop, -1, 0, 0., [](int, void* arg) {
    std::unique_ptr<std::function<void()>> run(static_cast<std::function<void()>*>(arg));
    (*run)();
  }, held);
}

namespace {

StopResult to_result(const proc::StopReport& report) {
  StopResult out;
  out.stopped = report.stopped;
  out.signals = report.signals;
  for (const auto& r : report.remaining) out.remaining.push_back({.pid = r.pid, .command = r.command, .why = r.why});
  return out;
}

// Every waiter of the send's stop gets `result`, from the loop.
void answer_stop(SendState& send, StopResult result) {  // a copy: it may be send.stop_report
  auto waiters = std::move(send.stop_waiters);
  send.stop_waiters.clear();
  send.stop_report.reset();
  send.stop_procs = false;  // answered: a line's processes still being stopped add nothing
  for (auto& done : waiters) post_to_loop(send.loop, [done = std::move(done), result] { done(result); });
}

void wake(struct ev_loop* loop, std::weak_ptr<const std::function<void()>> ready) {
  post_to_loop(loop, [ready = std::move(ready)] {
    if (auto fn = ready.lock()) (*fn)();
  });
}

}  // namespace

OutputDelta ShellSendOperation::read_output() {
  // A live send's output shown to its caller is in the recording first (a settled one's
  // was, when its result was answered).
  if (state_->session) state_->session->note_shown();
  return state_->tail.take_delta();
}

Result<JobOutput> ShellSendOperation::output(std::uint64_t offset, std::size_t max_bytes) {
  auto read = state_->log.read(offset, max_bytes);
  if (!read) return read.error();
  if (state_->session) state_->session->note_shown();
  return JobOutput{.text = std::move(read->text), .next_offset = read->next_offset,
                   .dropped_bytes = read->dropped_bytes, .done = state_->settled};
}

void ShellSendOperation::when_output(std::uint64_t offset, std::weak_ptr<const std::function<void()>> ready) {
  SendState& s = *state_;
  if (s.settled || offset < s.log.end()) return wake(s.loop, std::move(ready));
  // Waiters that gave up are dropped here, so a reader polling a quiet job costs nothing.
  std::erase_if(s.output_waiters, [](const auto& w) { return w.second.expired(); });
  s.output_waiters.emplace_back(offset, std::move(ready));
}

void ShellSendOperation::when_condition(std::function<void(ConditionOutcome)> done) {
  SendState& s = *state_;
  if (s.condition) return post_to_loop(s.loop, [done = std::move(done), outcome = *s.condition] { done(outcome); });
  if (s.settled) return;  // settled first: its own completion says how
  s.on_condition = std::move(done);
}

Status ShellSendOperation::stop(Callback<StopResult> done) {
  SendState& s = *state_;
  if (!s.stop_waiters.empty()) {
    s.stop_waiters.push_back(std::move(done));  // joins the stop under way
    return {};
  }
  if (s.settled || !s.session) {
    // Ended: what it left running is still its, while its session lives to look.
    if (auto session = s.ended_in.lock()) return (*session)->stop_ended(state_, std::move(done));
    post_to_loop(s.loop, [done = std::move(done)] { done(StopResult{.stopped = true, .signals = {}, .remaining = {}}); });
    return {};
  }
  return s.session->stop_send(state_, std::move(done));
}

void ShellSession::note_send_output() {
  SendState& s = *send_;
  const std::uint64_t end = s.log.end();
  std::erase_if(s.output_waiters, [&](auto& w) {
    if (w.first >= end) return w.second.expired();
    wake(s.loop, std::move(w.second));
    return true;
  });
}

void ShellSession::send_settled(const std::shared_ptr<SendState>& settled) {
  SendState& send = *settled;
  for (auto& w : send.output_waiters) wake(send.loop, std::move(w.second));
  send.output_waiters.clear();
  send.on_condition = nullptr;  // never called once the send settled
  stop_settle_timer_.stop();
  send.ended_in = self_token_;
  if (line_still_runs(send)) {
    // Settled, but its line runs on (`sleep 1; sleep 332` past its timeout): what the line
    // starts from here on is still the job's, until the shell is back at its prompt.
    close_open_line();  // an earlier one's ended before this line started
    send.line_open = true;
    open_line_ = settled;
  } else {
    send.ended_ticks = channel_ ? channel_->clock_ticks() : 0;
    send.ended_last_pid = channel_ ? channel_->newest_pid() : 0;
    send.ended_input = channel_ ? channel_->bytes_queued() : 0;
    // A stop still under way: what starts from here on is a later command's.
    if (send.stopping) send.stopping->job_ended(send.ended_ticks, send.ended_last_pid);
  }
  // A stop whose processes part is done answers now: the send settled.
  if (send.stop_report && !send.stop_procs) {
    // A cancel that took the text back, or found nothing written, sent no signal; nor did
    // one whose line never started a command (its SIGINT waited for that start).
    const bool never_started = send.typed_behind && !prompt_watch_.command_started();
    if (send.taken_back > 0 || !send.write_started() || never_started) send.stop_report->signals.clear();
    // The line ran and is over: what it left running is looked for once more, its whole
    // window (a stop's look at its C came before its `&` forked); the answer waits for it.
    if (send.stop_line_at_end && send.taken_back == 0 && !never_started && send.ended_ticks != 0 &&
        prompt_watch_.command_started() && phase_ == Phase::running && channel_ && !shell_exited() &&
        !channel_->output_ended()) {
      send.stop_line_at_end = false;
      stop_line_processes(settled, /*at_end=*/true);
      if (send.stop_procs) return;
    }
    send.stop_report->taken_back_bytes = send.taken_back;
    answer_stop(send, *send.stop_report);
  }
}

// Whether the send's line still runs as it settles: the shell's latest mark started a
// command and no prompt came since (a command of this line: not one it was typed behind);
// without marks, a group other than the shell's holds the terminal. A channel that cannot
// stop jobs has no window to keep open.
bool ShellSession::line_still_runs(const SendState& send) const {
  if (!send.write_started() || send.taken_back > 0 || !channel_ || !shell_pid_ || shell_exited() ||
      channel_->output_ended() || channel_->clock_ticks() == 0)
    return false;
  if (!params_.mark_nonce.empty() && shell_place_ != ShellPlace::unknown) {
    // A line typed behind a command still running that never started one of its own: the
    // command in front is not its (it runs as what it is, an earlier line's).
    if (send.typed_behind && !prompt_watch_.command_started()) return false;
    return shell_place_ == ShellPlace::command;
  }
  const pid_t front = channel_->foreground_group();
  return front > 0 && front != *shell_pid_;
}

// The open line's job ends here: the shell came back to its prompt after it (or, without
// marks, a later send starts). A stop still under way counts what starts from now on as a
// later command's.
void ShellSession::close_open_line() {
  auto send = open_line_.lock();
  open_line_.reset();
  if (!send || !send->line_open) return;
  send->line_open = false;
  send->ended_ticks = channel_ ? channel_->clock_ticks() : 0;
  send->ended_last_pid = channel_ ? channel_->newest_pid() : 0;
  send->ended_input = channel_ ? channel_->bytes_queued() : 0;
  if (send->stopping) send->stopping->job_ended(send->ended_ticks, send->ended_last_pid);
  // The live send typed its line ahead behind this one's command: its own starts only now.
  // What this line started before its end (a `sleep 1; b &` whose `&` came after that write)
  // is this line's, never the typed-ahead job's (adversary round 6 F1).
  if (send_ && send_ != send && send_->typed_behind && send->ended_ticks >= send_->started_ticks) {
    send_->started_ticks = send->ended_ticks;
    send_->started_last_pid = send->ended_last_pid;
  }
}

// A stopped job that is over as a job (its text taken back, or ^C typed through a relay):
// its send settles as a plain send does, by the prompt or by quiet, so the session's one
// live send is free again; nothing of it is waited for as a job's.
void ShellSession::end_as_job(SendState& send) {
  send.background = false;
  send.until_output.reset();
  send.until_port.reset();
  port_timer_.stop();
  send_idle_timer_.again();
}

Status ShellSession::stop_send(const std::shared_ptr<SendState>& send, Callback<StopResult> done) {
  // Whether the job's own command started: its C mark since the write (the output so far
  // read first: the mark may be in it). Without marks nothing says, and the job counts as
  // the command in front.
  bool not_started = false;
  if (send->write_started() && !params_.mark_nonce.empty()) {
    // The output so far first, whoever is in front: a C mark in it says the line started.
    channel_->read_available();
    if (send->settled) return stop_ended(send, std::move(done));
  }
  if (send->write_started() && !shell_owns_terminal() && !params_.mark_nonce.empty()) {
    if (!send->landed() || !prompt_watch_.command_started()) {
      const bool reading = channel_->foreground_reading();
      // A relay in front (ssh, script: waiting on another input beside the terminal, not
      // vim waiting out its escape timeout) took the line for its far side: not this
      // session's processes to signal (ssh exits on SIGINT, the far login gone).
      if (!reading && channel_->foreground_relays() && channel_->foreground_relays_input()) {
        stop_through_relay(send, std::move(done));
        return {};
      }
      // Typed ahead behind a command still running: that command is not the job's.
      not_started = send->typed_behind.has_value();
    }
  }
  if (!send->write_started() || shell_owns_terminal() || not_started) {
    // Its command has not started (the write is still to come, the shell reads the line,
    // or the line waits behind the command in front), or it runs inside the shell (a
    // builtin loop), which a stop never signals: a cancel ends it (nothing typed, the text
    // taken back, or a SIGINT as the line's own command starts or to the shell), and the
    // stop answers once the send settled. Set first: a cancel may settle it at once.
    send->stop_report = StopResult{.stopped = true, .signals = {"SIGINT"}, .remaining = {}};
    send->stop_waiters.push_back(std::move(done));
    stop_settle_timer_.start(kStopSettle);
    // The line's command started and the shell runs it itself (`a & wait`, a loop between
    // its commands): what the line started (its `&`) is stopped too, the cancel's SIGINT
    // ending the shell's part.
    // Not started yet as far as the output told (its C still on its way, or the line still
    // being read): from its C on. Skipped before, the cancel alone answered stopped while the
    // line's own `&` ran on (`sleep N & wait $!`, 2 of 150 under load, zsh).
    if (send->write_started() && shell_owns_terminal() && !not_started && !params_.mark_nonce.empty()) {
      if (send->landed() && prompt_watch_.command_started()) stop_line_processes(send);
      else send->stop_line_on_start = true;
      send->stop_line_at_end = true;
    }
    cancel_send(*send);
    if (!send->settled && send->taken_back > 0 && shell_owns_terminal()) {
      // Taken back whole at the prompt it was typed at, nothing in front: the send settles
      // there as a check-in does (now, or at its recheck), and that answers the stop, so a
      // reader told "stopped" finds the job done and the session free for the next send.
      end_as_job(*send);
      check_prompt_readiness();
    } else if (!send->settled && send->taken_back > 0) {
      // Taken back whole: nothing of it will run, and the command in front runs on; said
      // now (that command may run for hours), the send settling as a check-in does.
      stop_settle_timer_.stop();
      answer_stop(*send, StopResult{.stopped = true, .signals = {}, .remaining = {}, .taken_back_bytes = send->taken_back});
      end_as_job(*send);
    } else if (!send->settled && !send->write_started()) {
      end_as_job(*send);  // nothing typed: its check-in need not wait for a command in front to end
    }
    return {};
  }
  std::weak_ptr<SendState> weak = send;
  auto job = channel_->stop_job(send->running_times(), [weak](proc::StopReport report) {
    // Called from the loop; the JobStop stays until the next stop or the send's end (this
    // closure is its member).
    auto s = weak.lock();
    if (!s) return;
    StopResult result = to_result(report);
    if (!result.stopped || s->settled || !s->session) return answer_stop(*s, result);
    // The processes are gone: the answer waits for the shell's prompt to settle the send.
    s->stop_report = std::move(result);
    s->session->stop_settle_timer_.start(kStopSettle);
  });
  if (!job) return job.error();
  send->stopping = std::move(*job);
  send->stop_waiters.push_back(std::move(done));
  return {};
}

// The processes of a line the shell runs itself, stopped beside the stop's cancel: their
// report joins the cancel's answer, which waits for both (the send's settle, and this).
void ShellSession::stop_line_processes(const std::shared_ptr<SendState>& send, bool at_end) {
  std::weak_ptr<SendState> weak = send;
  proc::JobTimes times = send->running_times();
  // At its end, its window ends there; a far side is told nothing of ends (its pids are not
  // numbered here), but at the moment of the end nothing was typed since: it looks as while
  // the line ran (ShellSession::stop_ended).
  if (at_end && channel_->newest_pid() != 0) {
    times.ended_ticks = send->ended_ticks;
    times.ended_last_pid = send->ended_last_pid;
  }
  auto job = channel_->stop_job(times, [weak](proc::StopReport report) {
    auto s = weak.lock();
    if (!s || !s->stop_procs) return;
    s->stop_procs = false;
    if (!s->stop_report) return;  // answered already (the shell did not come back)
    StopResult result = to_result(report);
    for (const auto& signal : result.signals)
      if (std::find(s->stop_report->signals.begin(), s->stop_report->signals.end(), signal) == s->stop_report->signals.end())
        s->stop_report->signals.push_back(signal);
    if (!result.stopped) {
      s->stop_report->stopped = false;
      s->stop_report->remaining = std::move(result.remaining);
    }
    if (!result.stopped || s->settled) answer_stop(*s, *s->stop_report);
  });
  if (!job) {
    // The cancel goes on alone, but the answer cannot say the line's processes are gone
    // (seen: a far link cut as the stop came, the far foreground known only as the shell's
    // from before the cut; the cancel's SIGINT ended the line's command after the reconnect
    // and the stop answered stopped: true while the line's own `&` ran on).
    if (send->stop_report) {
      send->stop_report->stopped = false;
      send->stop_report->remaining.push_back(
          {.pid = 0, .command = {}, .why = "what the line started could not be looked for: " + job.error()->message});
    }
    return;
  }
  send->stopping = std::move(*job);
  send->stop_procs = true;
}

// The job's line went through a relay to its far side, whose processes this session cannot
// see or signal: ^C is typed through the relay (the job is the send's own; the far terminal
// turns it into its SIGINT), no signal goes to the relay, and the answer says what is known.
// The far terminal's interrupt byte cannot be read from here: ^C is every terminal's default.
void ShellSession::stop_through_relay(const std::shared_ptr<SendState>& send, Callback<StopResult> done) {
  const pid_t relay = channel_->foreground_group();
  const std::string command = channel_->command_line(relay).value_or(std::string());
  send->stop_report = StopResult{
      .stopped = false, .signals = {},
      .remaining = {{.pid = static_cast<int>(relay), .command = command,
                     .why = "a relay: the job runs on its far side, which this session cannot see; ^C was typed "
                            "through it (no signal: the relay would exit on one); the job's output shows "
                            "whether the far command ended"}},
      .taken_back_bytes = 0};
  send->stop_waiters.push_back(std::move(done));
  stop_settle_timer_.start(kStopSettle);
  channel_->write("\x03");
  end_as_job(*send);
}

// A stop of a job whose send has settled: what the job started that outlived it (a server
// that daemonized, a job the shell holds stopped) is found and stopped as a running job's
// processes are; nothing found answers at once, no signal sent.
Status ShellSession::stop_ended(const std::shared_ptr<SendState>& send, Callback<StopResult> done) {
  // Without marks nothing said when an open line ended: the shell in front again says it
  // has, the window ending now.
  if (send->line_open && (params_.mark_nonce.empty() || shell_place_ == ShellPlace::unknown) && shell_owns_terminal())
    close_open_line();
  // Settled, but its line still runs: stopped as a running job (its foreground, what its
  // line started), answered once its processes are gone (the send has settled already).
  const bool alive = phase_ == Phase::running && channel_ && !shell_exited() && !channel_->output_ended();
  const bool line_runs = send->line_open && alive;
  // A far job (its pids are not numbered here, so its end cannot bound a window there) with
  // nothing typed to the session since it ended: no later command can have started
  // anything, so what started since its line began is its, as while it ran, and the far side
  // looks so (adversary round 6 F2: a job's own `&` ran on after a stop during a link cut
  // had ended its foreground, and the stop after the reconnect answered without looking).
  const bool far_untouched_since = !line_runs && alive && send->ended_ticks != 0 && channel_->newest_pid() == 0 &&
                                   channel_->bytes_queued() == send->ended_input;
  if (!line_runs && !far_untouched_since &&
      (!alive || send->ended_ticks == 0 || channel_->clock_ticks() == 0 || channel_->newest_pid() == 0)) {
    // Nothing can be looked for (a far channel after a later command): answered as an ended
    // job with nothing stopped, as docs/remote.md says.
    post_to_loop(send->loop, [done = std::move(done)] { done(StopResult{.stopped = true, .signals = {}, .remaining = {}}); });
    return {};
  }
  proc::JobTimes times = send->running_times();
  if (!line_runs && !far_untouched_since) {  // its window ends at its end
    times.ended_ticks = send->ended_ticks;
    times.ended_last_pid = send->ended_last_pid;
  }
  std::weak_ptr<SendState> weak = send;
  auto job = channel_->stop_job(times, [weak](proc::StopReport report) {
    if (auto s = weak.lock()) answer_stop(*s, to_result(report));
  });
  if (!job) return job.error();
  send->stopping = std::move(*job);
  send->stop_waiters.push_back(std::move(done));
  return {};
}

void ShellSession::on_stop_settle_timeout() {
  if (!send_ || !send_->stop_report) return;
  StopResult result = std::move(*send_->stop_report);
  result.stopped = false;
  if (result.remaining.empty())  // a relay's line says its own why
    result.remaining.push_back({.pid = shell_pid_.value_or(0), .command = "",
                                .why = "the job's processes are gone, but the shell did not come back to its prompt"});
  answer_stop(*send_, result);
}

std::optional<Activity> ShellSession::activity() const {
  if (phase_ != Phase::running || shell_exited() || !channel_ || channel_->output_ended()) return std::nullopt;
  Activity a;
  a.state = shell_place_ == ShellPlace::prompt    ? Activity::State::prompt
            : shell_place_ == ShellPlace::command ? Activity::State::busy
                                                  : Activity::State::unknown;
  if (a.state == Activity::State::busy) {
    // The line as typed when a send typed it; else what the foreground runs.
    if (send_ && send_->writes == SendState::Writes::text) {
      a.command = send_->bytes.substr(0, send_->bytes.find_first_of("\r\n"));
    } else if (const pid_t fg = channel_->foreground_group(); fg > 0) {
      a.command = channel_->command_line(fg);
    }
    a.elapsed_ms = static_cast<std::int64_t>((ev_now(loop_) - command_since_) * 1000.);
  }
  if (auto look = channel_->look_at_tree()) {
    if (a.state == Activity::State::busy) a.processes = look->processes;
    a.listening = std::move(look->listening);
  }
  return a;
}

}  // namespace dshpty::shell

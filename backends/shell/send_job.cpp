// A send as a job (docs/shell-backend.md, "Jobs"): its output read by offset by any number
// of readers (text::JobLog; no reader moves the send's consuming cursor), readers that wait
// for more woken as it comes and when the send settles, and a stop with proof: the channel
// ends the job's processes (proc::JobStop), and the stop answers once the send settled too
// (the shell back at its prompt), or says which processes remain.
//
// Wake-ups run from the loop through ev_once, not the session's queue: a reader, a stop
// or a condition's waiter may outlive the session that fed them (the service buries a
// session's operations after it).
#include <ev.h>

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
  for (auto& done : waiters) post_to_loop(send.loop, [done = std::move(done), result] { done(result); });
}

void wake(struct ev_loop* loop, std::weak_ptr<const std::function<void()>> ready) {
  post_to_loop(loop, [ready = std::move(ready)] {
    if (auto fn = ready.lock()) (*fn)();
  });
}

}  // namespace

Result<JobOutput> ShellSendOperation::output(std::uint64_t offset, std::size_t max_bytes) {
  auto read = state_->log.read(offset, max_bytes);
  if (!read) return read.error();
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
    // Nothing of the job's is left to this send: its processes ended with it.
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

void ShellSession::send_settled(SendState& send) {
  for (auto& w : send.output_waiters) wake(send.loop, std::move(w.second));
  send.output_waiters.clear();
  send.on_condition = nullptr;  // never called once the send settled
  stop_settle_timer_.stop();
  // A stop whose processes part is done answers now: the send settled.
  if (send.stop_report) {
    // A cancel that took the text back, or found nothing written, sent no signal.
    if (send.taken_back > 0 || !send.write_started()) send.stop_report->signals.clear();
    answer_stop(send, *send.stop_report);
  }
}

Status ShellSession::stop_send(const std::shared_ptr<SendState>& send, Callback<StopResult> done) {
  if (!send->write_started() || (shell_pid_ && channel_->foreground_group() == *shell_pid_)) {
    // Its command has not started (the write is still to come, or the shell reads the line),
    // or it runs inside the shell (a builtin loop), which a stop never signals: a cancel
    // ends it (nothing typed, the text taken back, or a SIGINT as the command starts or to
    // the shell), and the stop answers once the send settled. Set first: a cancel may settle
    // it at once.
    send->stop_report = StopResult{.stopped = true, .signals = {"SIGINT"}, .remaining = {}};
    send->stop_waiters.push_back(std::move(done));
    stop_settle_timer_.start(kStopSettle);
    cancel_send(*send);
    return {};
  }
  std::weak_ptr<SendState> weak = send;
  auto job = channel_->stop_job(send->started_ticks, [weak](proc::StopReport report) {
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

void ShellSession::on_stop_settle_timeout() {
  if (!send_ || !send_->stop_report) return;
  StopResult result = std::move(*send_->stop_report);
  result.stopped = false;
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

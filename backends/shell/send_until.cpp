// A send's condition (SendRequest::until; docs/shell-backend.md, "Conditions"): its
// output regex is fed the output of the send's own commands where the shell's marks tell
// them apart (from each command start, C, to the next mark: never the command in front, the
// prompt or the echo, however the line editor drew it), else the sanitized stream from the
// write on (text::OutputCondition skips the echo of the typed text). Its port is polled on a
// timer that runs only while such a send is live, so an idle session still costs no
// wake-up, and only a listener of a process the send's command started counts. What holds
// first settles the send as matched; a command that ends first settles it as it would
// without a condition (the prompt's marks or the stdin probe come first).
#include <string>

#include "proc/port_poll.hpp"
#include "shell_session.hpp"

namespace dshpty::shell {

Status ShellSession::arm_until(SendState& send, const SendUntil& until) {
  if (until.port) {
    if (*until.port < 1 || *until.port > 65535) {
      return make_error(Code::INVALID_ARGUMENT,
                        "until.port: " + std::to_string(*until.port) + " is outside 1..65535");
    }
    // One look now: a channel that cannot see ports says so before anything is typed.
    if (auto seen = channel_->port_listener(static_cast<std::uint16_t>(*until.port), 0); !seen) {
      return seen.error();
    }
    send.until_port = static_cast<std::uint16_t>(*until.port);
  }
  if (until.output_regex) {
    auto condition = text::OutputCondition::make(*until.output_regex, send.bytes);
    if (!condition) return condition.error();
    send.until_output.emplace(std::move(*condition));
    send.until_pattern = *until.output_regex;
  }
  return {};
}

void ShellSession::read_commands_only(SendState& send) {
  send.until_reads = SendState::UntilReads::before_command;
  if (!send.until_output) return;
  // Nothing before the command's start is fed, so there is no echo to skip.
  if (auto fresh = text::OutputCondition::make(send.until_pattern, "")) send.until_output.emplace(std::move(*fresh));
}

void ShellSession::refill_until(SendState& send) {
  if (!send.until_output) return;
  const double now = ev_now(loop_);
  if (send.until_refilled > 0) send.until_output->refill(now - send.until_refilled);
  send.until_refilled = now;
}

void ShellSession::feed_until(const text::SanitizedText& chunk) {
  SendState& send = *send_;
  using Reads = SendState::UntilReads;
  auto feed = [&](std::string_view text) {
    if (text.empty() || !send.until_output || send.match) return;
    refill_until(send);
    send.until_last_fed = text.back();
    if (auto line = send.until_output->feed(text)) send.match = SendMatch{.output = std::move(*line)};
  };
  if (send.until_reads == Reads::stream) return feed(chunk.text);
  std::size_t from = 0;
  for (const text::PromptMarker& mark : chunk.markers) {
    if (send.until_reads == Reads::command) feed(std::string_view(chunk.text).substr(from, mark.position - from));
    from = mark.position;
    if (mark.kind == 'C') {
      send.until_reads = Reads::command;
    } else if (send.until_reads == Reads::command) {
      // The command ended (or a prompt began): its unended last line is a line now.
      if (send.until_last_fed != '\n') feed("\n");
      send.until_reads = Reads::between_commands;
    }
  }
  if (send.until_reads == Reads::command) feed(std::string_view(chunk.text).substr(from));
}

bool ShellSession::try_quiet_match() {
  if (!send_ || send_->match || !send_->until_output || !send_->write_started()) return send_ && send_->match;
  if (auto line = send_->until_output->on_quiet()) send_->match = SendMatch{.output = std::move(*line)};
  return send_->match.has_value();
}

void ShellSession::on_port_tick() {
  if (!send_ || !send_->until_port || send_->match) return;
  // Before the send's own command started, a listener is the command in front's.
  if (send_->until_reads == SendState::UntilReads::before_command) return next_port_tick();
  auto seen = channel_->port_listener(*send_->until_port, send_->started_ticks);
  // A scan that could not read a process now may next time: only a listener settles.
  if (!seen || !*seen) return next_port_tick();
  send_->match = std::move(**seen);
  condition_held();
}

void ShellSession::next_port_tick() {
  // Polled fast while the wait is young, then backing off (proc/port_poll.hpp); a channel
  // that says when the port opens is only asked again to keep its watch.
  const auto waited = std::chrono::duration<double>(ev_now(loop_) - send_->port_since);
  port_timer_.start(channel_->tells_ports() ? std::chrono::milliseconds(kPortPoll) : proc::port_poll_interval(waited));
}

void ShellSession::condition_held() {
  if (!send_->background) return settle_send(WaitReason::matched);
  answer_condition(WaitReason::matched);
}

void ShellSession::answer_condition(WaitReason reason) {
  SendState& send = *send_;
  // The job runs on as a background send without a condition: no more matching, no port
  // poll, no deadline (the timeout bounded only this wait).
  send.condition = ConditionOutcome{.reason = reason, .match = std::move(send.match)};
  send.match.reset();
  send.until_output.reset();
  send.until_port.reset();
  port_timer_.stop();
  send_timeout_timer_.stop();
  if (send.on_condition) {
    post_to_loop(send.loop, [done = std::move(send.on_condition), outcome = *send.condition] { done(outcome); });
  }
  send.on_condition = nullptr;
}

}  // namespace dshpty::shell

// A send's cancel (docs/shell-backend.md, "Cancel"): a cancel takes back only its own
// input. Text the shell has not read is taken back from the terminal's input queue; a line
// it has read is interrupted only when it is this send's own command. A relay in front
// (ssh, script) owns what was typed to it: nothing is taken back from it or signalled.
#include <signal.h>

#include "shell_session.hpp"

namespace dshpty::shell {

bool ShellSession::cancel_send(SendState& send) {
  if (send_.get() != &send) return false;
  if (!send.write_started()) {
    // Nothing typed yet (the write was still to come from the loop, or held behind a
    // signal's aftermath), and now nothing will be: the send becomes a look at what happened
    // since, answered as a check-in is (at once at the shell's prompt). Measured before:
    // such a send waited out its whole idle time, every time.
    send.cancel = SendState::Cancel::on_landing;
    if (send.gated()) {
      send.stage = SendState::Stage::queued;
      probe_timer_.stop();
    }
    // From the loop: the check-in may settle at once, and cancel() must not call back.
    deferred_.post([this, weak = std::weak_ptr<SendState>(send_)] {
      auto s = weak.lock();
      if (!s || s != send_ || s->settled || s->write_started()) return;
      s->writes = SendState::Writes::nothing;
      begin_check_in(s);
    });
    return true;
  }
  // A relay in front has the text, or takes it the moment it looks: it is the relay's now.
  // Taking it back from under a relay that had polled the terminal readable left the relay
  // asleep in its read (script, python's pty.spawn) while the far command stalled on a full
  // terminal, until the next keystroke; a SIGINT would end it (ssh). So nothing is done:
  // false, and the result says where the line went (note_relayed_cancel).
  if (relay_holds_line(send)) {
    send.cancel = SendState::Cancel::relayed;
    return false;
  }
  if (!send.checks_in() && take_back(send)) return true;
  if (!send.landed()) {
    // Written in part, and the channel cannot take it back: SIGINT once the rest landed.
    send.cancel = SendState::Cancel::on_landing;
    return true;
  }
  interrupt_foreground(/*own_command_only=*/send_typed_line());
  return true;
}

// A cancel takes back its own input first (docs/shell-backend.md, "Cancel"): what the
// shell has not read leaves the terminal's input queue, so a line typed ahead of a running
// command never runs, and no signal goes to that command. True when all of it came back:
// the send is then a check-in (it settles at the prompt, or idle, as one does). False when
// the shell read some of it (or the channel cannot tell): then the cancel interrupts, but
// only the send's own command (interrupt_foreground).
bool ShellSession::take_back(SendState& send) {
  const std::size_t own = send.bytes.size();
  if (own == 0 || !channel_ || channel_->output_ended()) return false;
  const auto taken = channel_->take_back_input(own);
  if (!taken) return false;
  if (!send.landed()) {
    // What was not written yet was dropped and counts as written: the send has landed,
    // with nothing more to come.
    send.cancel = SendState::Cancel::none;
    on_write_landed();
    if (send_.get() != &send) return true;
  }
  if (*taken < own) {
    // The shell read the head of the text and no command started: that head (its Enter
    // among the bytes taken back) sits in the line editor, the cursor at its end. Erased
    // there with C-u (readline's unix-line-discard, zle's kill-whole-line, fish's
    // backward-kill-line), not a SIGINT: bash, interrupted while readline takes typed-ahead
    // input, was seen left reading without a new prompt. Nothing of the line ran.
    if (*taken > 0 && !prompt_watch_.command_started() && shell_owns_terminal()) {
      channel_->mark_readers();  // the shell must read the erase before it counts as reading
      channel_->write("\x15");
      note_taken_back(send);
      return true;
    }
    return false;
  }
  note_taken_back(send);
  return true;
}

bool ShellSession::shell_owns_terminal() const {
  return shell_pid_ && channel_ && channel_->foreground_group() == *shell_pid_;
}

// A cancel held for its line's own command, while the shell reads at its own prompt with no
// command started: the shell holds (part of) the line, its own input. The SIGINT goes to
// the shell now, before the send could settle on that line. True when it went.
bool ShellSession::clear_held_line() {
  if (prompt_watch_.command_started() || !shell_owns_terminal()) return false;
  auto held = std::find_if(held_signals_.begin(), held_signals_.end(), [&](const HeldSignal& h) {
    return !h.signal && h.own_command_only && h.send == send_;
  });
  if (held == held_signals_.end()) return false;
  // The shell seen asleep at its prompt may not have the line yet: the kernel hands the
  // master's bytes over from a worker. A SIGINT then hit an empty prompt and the line ran
  // to its end after it (3 of 28 cancels 0.5-4 ms after a send). So the queue is looked at
  // once the worker is done (input_unread), and the shell seen still reading after that.
  if (input_waiting() || !channel_->foreground_reading()) return false;
  if (channel_->read_available() && (!send_ || prompt_watch_.command_started())) return false;
  held = std::find_if(held_signals_.begin(), held_signals_.end(), [&](const HeldSignal& h) {
    return !h.signal && h.own_command_only && h.send == send_;
  });
  if (held == held_signals_.end()) return false;
  held_signals_.erase(held);
  if (held_signals_.empty()) signal_hold_timer_.stop();
  (void)deliver_signal(*shell_pid_, SIGINT);
  return true;
}

// All of the send's text came back unread: it is a check-in from here on.
void ShellSession::note_taken_back(SendState& send) {
  // Nothing of it reached the shell: the prompt it was typed at (if no mark came since) is
  // still the one the check-in may settle at.
  if (send.landed() && !prompt_watch_.marker_seen()) prompt_watch_ = before_write_;
  send.taken_back = send.bytes.size();
  send.writes = SendState::Writes::nothing;
  send.cancel = SendState::Cancel::none;
  send.echo_pending = false;
  send.echo.clear();
  send.echo_line.clear();
  send.single_line_at_prompt = false;
}

// A far side's answer to a take-back: when it took all of the live send's text, the
// cancel's held SIGINT (waiting for the line's own command) is dropped.
void ShellSession::on_taken_back(std::size_t own, std::size_t taken) {
  if (!send_ || send_->settled || send_->checks_in() || send_->bytes.size() != own || taken < own) return;
  if (send_->cancel == SendState::Cancel::none &&
      std::none_of(held_signals_.begin(), held_signals_.end(),
                   [&](const HeldSignal& h) { return !h.signal && h.send == send_; })) {
    return;  // not a cancel of this send
  }
  std::erase_if(held_signals_, [&](const HeldSignal& h) { return !h.signal && h.send == send_; });
  if (held_signals_.empty()) signal_hold_timer_.stop();
  note_taken_back(*send_);
  check_prompt_readiness();
}

void ShellSession::interrupt_foreground(bool own_command_only) {
  // A relay in the foreground (ssh, script, docker -t) took the line for its far side: no
  // mark says whether the far side started it or holds it typed ahead behind a command
  // still running there. A ^C through the relay would interrupt that command, not the
  // line's own (measured: `sleep 2.5; echo FIRST-0`, then a send cancelled 50 ms later:
  // FIRST-0 never printed); a signal would end the relay (ssh exits on one). So nothing is
  // sent: the line was delivered, and the result says so (note_relayed_cancel).
  // Keys ["C-c"] interrupt the far foreground when the caller means it.
  if (own_command_only && !shell_owns_terminal() && channel_->foreground_relays()) {
    if (send_) send_->cancel = SendState::Cancel::relayed;
    return;
  }
  // A real signal, not a typed ^C: it works with ISIG off (raw mode) too. Held while a far
  // link is being restored (release_held_signals delivers it once it is back).
  LingerFacet* linger = channel_->linger();
  if (own_command_only || shell_starting_command() || (linger && linger->reconnecting())) {
    hold_signal(HeldSignal{SIGINT, std::nullopt, nullptr, send_, 0, own_command_only});
    return;
  }
  (void)deliver_signal(channel_->foreground_group(), SIGINT);
}

// A cancel left a relayed line alone (cancel_send, interrupt_foreground): the result says
// the line went to the relay, not taken back; whether its far side ran it is not seen here.
void ShellSession::note_relayed_cancel(const SendState& send, SendResult& result) {
  if (send.cancel != SendState::Cancel::relayed || send.checks_in() || result.line_state || !channel_) return;
  result.line_state = LineState::relayed;
  if (send.relayed_to) {
    result.queued_behind = send.relayed_to;
    return;
  }
  const pid_t relay = channel_->foreground_group();
  if (relay > 0 && (!shell_pid_ || relay != *shell_pid_)) {
    result.queued_behind = QueuedBehind{static_cast<int>(relay), channel_->command_line(relay).value_or(std::string())};
  }
}

// After a look of the stdin probe (foreground_reading): a group in front that relays the
// terminal's input to a far side is remembered as a relay for as long as it stays in front
// (a later look may find it busy copying output, not waiting). A line the live send typed
// behind another command and the shell has not started (no C since the write) went to it.
void ShellSession::note_relay() {
  const bool relays = channel_->foreground_relays_input();
  if (!relays && relay_group_ == 0) return;  // the common case: no relay, none before
  const pid_t front = channel_->foreground_group();
  if (front != relay_group_) relay_group_ = 0;  // the relay left the front
  if (!relays || front <= 0 || (shell_pid_ && front == *shell_pid_)) return;
  relay_group_ = front;
  if (send_ && send_->landed() && send_->typed_behind && !send_->relayed_to && !prompt_watch_.command_started())
    send_->relayed_to = QueuedBehind{static_cast<int>(front), channel_->command_line(front).value_or(std::string())};
}

// Whether a relay holds the terminal, so what the send typed is the relay's: the line went
// to one and the shell started nothing since, or the group in front is one (seen so before,
// or by a look now). The shell at its own prompt is none.
bool ShellSession::relay_holds_line(SendState& send) {
  if (!channel_ || channel_->output_ended() || shell_owns_terminal()) return false;
  if (send.relayed_to && !prompt_watch_.command_started()) return true;
  const pid_t front = channel_->foreground_group();
  if (front <= 0) return false;
  if (front != relay_group_) {
    (void)channel_->foreground_reading();
    note_relay();
  }
  return front == relay_group_;
}

}  // namespace dshpty::shell
